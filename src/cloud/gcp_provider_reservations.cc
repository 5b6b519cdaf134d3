// GcpProvider: Compute Engine specific reservations (listing them, the
// affinity that targets one, and the groups that launch into one).
#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "gcp_provider_impl.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::cloud {

using nlohmann::json;

namespace {

// An int64 field, which Google's JSON carries as a string ("4"); numbers
// are taken too. nullopt when absent or not an integer.
std::optional<int64_t> Int64Field(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (!it->is_string()) return std::nullopt;
  const std::string& s = it->get_ref<const std::string&>();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0) return std::nullopt;
  return v;
}

}  // namespace

json GcpReservationAffinity(const std::string& reservation) {
  return {{"consumeReservationType", "SPECIFIC_RESERVATION"},
          {"key", kGcpReservationNameKey},
          {"values", json::array({reservation})}};
}

std::string SpecificReservationOf(const json& resource) {
  const json& affinity = ObjectAt(resource, "reservationAffinity");
  if (StringAt(affinity, "consumeReservationType") != "SPECIFIC_RESERVATION") return "";
  const json& values = ArrayAt(affinity, "values");
  if (values.size() != 1 || !values[0].is_string()) return "";
  // A shared reservation is named "projects/P/reservations/NAME".
  return LastSegment(values[0].get<std::string>());
}

Result<std::optional<Reservation>> GcpProvider::ParseReservation(const json& r) {
  const std::string name = StringAt(r, "name");
  const std::string zone = LastSegment(StringAt(r, "zone"));
  if (name.empty() || zone.empty()) return Error::InvalidInput("a reservation without name or zone");
  const std::string where = "reservation " + zone + "/" + name;
  // Only a READY reservation takes instances; one that may only be consumed
  // automatically (specificReservationRequired false) cannot be targeted by
  // name, so gpuscaler cannot count what it launches into it.
  if (StringAt(r, "status") != "READY") return std::optional<Reservation>();
  const auto required = r.find("specificReservationRequired");
  if (required == r.end() || !required->is_boolean() || !required->get<bool>())
    return std::optional<Reservation>();
  const json& specific = ObjectAt(r, "specificReservation");
  if (specific.empty()) return std::optional<Reservation>();  // an aggregate reservation: no machine type
  const std::optional<int64_t> count = Int64Field(specific, "count");
  const std::optional<int64_t> in_use = Int64Field(specific, "inUseCount");
  const std::string machine_type =
      LastSegment(StringAt(ObjectAt(specific, "instanceProperties"), "machineType"));
  if (!count || *count < 0 || machine_type.empty())
    return Error::InvalidInput(where +
                               ": specificReservation without count or instanceProperties.machineType");
  Reservation out;
  out.id = name;
  out.instance_type = machine_type;
  out.zone = zone;
  out.region = RegionOfZone(zone);
  out.kind = ReservationKind::kDefault;
  out.total_count = static_cast<int>(*count);
  out.available_count = static_cast<int>(std::max<int64_t>(0, *count - in_use.value_or(0)));
  if (!ParseRfc3339(StringAt(r, "creationTimestamp"), &out.start)) out.start = WallTime{};
  // Compute Engine deletes a reservation at deleteAtTime, or
  // deleteAfterDuration after its creation; its consumers keep running but
  // no launch can use it after that.
  WallTime end;
  if (ParseRfc3339(StringAt(r, "deleteAtTime"), &end)) {
    out.end = end;
  } else if (std::optional<int64_t> after = Int64Field(ObjectAt(r, "deleteAfterDuration"), "seconds");
             after && out.start != WallTime{}) {
    out.end = out.start + Seconds(*after);
  }
  return std::optional<Reservation>(std::move(out));
}

Result<std::vector<Reservation>> GcpProvider::ListReservations() {
  std::vector<Reservation> out;
  std::string page;
  do {
    std::string path = "projects/" + options_.project + "/aggregated/reservations?returnPartialSuccess=true";
    if (!page.empty()) path += "&pageToken=" + net::PercentEncode(page);
    Result<json> got = client_.Call("GET", path);
    if (!got) return got.error().WithContext("listing reservations");
    const json& items = ObjectAt(*got, "items");
    for (auto scope = items.begin(); scope != items.end(); ++scope) {
      for (const json& r : ArrayAt(scope.value(), "reservations")) {
        Result<std::optional<Reservation>> parsed = ParseReservation(r);
        if (!parsed) return parsed.error().WithContext("listing reservations");
        if (!*parsed) continue;
        const Reservation& res = **parsed;
        const bool ours = options_.zones.empty() ? options_.region.empty() || res.region == options_.region
                                                 : std::find(options_.zones.begin(), options_.zones.end(),
                                                             res.zone) != options_.zones.end();
        if (ours) out.push_back(std::move(**parsed));
      }
    }
    page = StringAt(*got, "nextPageToken");
  } while (!page.empty());
  std::sort(out.begin(), out.end(), [](const Reservation& a, const Reservation& b) { return a.id < b.id; });
  return out;
}

std::string GcpProvider::GroupFor(const GcpPoolTarget& target, const std::string& pool,
                                  const Offering& offering) const {
  if (offering.capacity_type != CapacityType::kReserved) return MigFor(target, pool, offering.zone);
  auto it = target.reservation_migs.find(offering.reservation_id);
  return it == target.reservation_migs.end() ? "" : it->second;
}

Status GcpProvider::CheckReservationGroup(const std::string& pool, const std::string& zone,
                                          const std::string& mig, const std::string& reservation) {
  const std::string key = zone + "/" + mig;
  if (auto it = reservation_groups_.find(key); it != reservation_groups_.end() && it->second == reservation)
    return Status::Ok();
  const std::string where = "pool '" + pool + "': group " + mig + " of reservation " + reservation;
  Result<json> group = client_.Call("GET", ZonePath(zone) + "/instanceGroupManagers/" + mig);
  if (!group) return group.error().WithContext(where);
  // The template URL: "https://…/compute/v1/projects/P/global/instanceTemplates/T"
  // (or a regional template); the client takes the path from "projects/".
  const std::string url = StringAt(*group, "instanceTemplate");
  const size_t at = url.find("projects/");
  if (at == std::string::npos) return Error::Config(where + ": the group names no instance template");
  Result<json> tmpl = client_.Call("GET", url.substr(at));
  if (!tmpl) return tmpl.error().WithContext(where + ": its instance template");
  if (SpecificReservationOf(ObjectAt(*tmpl, "properties")) != reservation) {
    return Error::Config(where + ": its instance template " + LastSegment(url) +
                         " does not consume the reservation (properties.reservationAffinity must be "
                         "SPECIFIC_RESERVATION with " +
                         kGcpReservationNameKey + " = " + reservation +
                         "; a GKE node pool made with --reservation-affinity=specific --reservation=" +
                         reservation + " has one)");
  }
  reservation_groups_[key] = reservation;
  return Status::Ok();
}

}  // namespace gpuscaler::cloud
