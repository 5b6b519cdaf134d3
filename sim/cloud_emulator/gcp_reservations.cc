// Compute Engine reservations in the emulator: which reservation a new
// instance consumes, the Reservation resource (get, list, aggregatedList),
// and the groups' instance templates (instanceTemplates.get), whose
// reservationAffinity decides what the groups' members consume.
//
// The errors are Compute Engine's for instance creation against a specific
// reservation: code CONDITION_NOT_MET with the messages Google's MIG
// clients (Cluster Autoscaler's GCE provider) match on.
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace gcp {

std::optional<EmulatorResponse> ParseReservationAffinity(const json& j, const std::string& field,
                                                         GcpReservationAffinity* out) {
  if (!j.is_object()) return Invalid(field, j.dump(), "Must be an object.");
  GcpReservationAffinity a;
  a.consume_type = j.value("consumeReservationType", "ANY_RESERVATION");
  a.key = j.value("key", "");
  for (const json& v : j.value("values", json::array())) {
    if (!v.is_string()) return Invalid(field + ".values", v.dump(), "Must be a string.");
    a.values.push_back(v.get<std::string>());
  }
  if (a.consume_type != "ANY_RESERVATION" && a.consume_type != "SPECIFIC_RESERVATION" &&
      a.consume_type != "NO_RESERVATION") {
    return Invalid(field + ".consumeReservationType", a.consume_type,
                   "Must be ANY_RESERVATION, SPECIFIC_RESERVATION or NO_RESERVATION.");
  }
  if (a.consume_type == "SPECIFIC_RESERVATION") {
    // The API documents the key as "compute.googleapis.com/reservation-name"
    // and also takes the older "googleapis.com/reservation-name".
    if (a.key != kReservationNameKey && a.key != "googleapis.com/reservation-name") {
      return Invalid(
          field + ".key", a.key,
          std::string("A specific reservation is named with the key ") + kReservationNameKey + ".");
    }
    if (a.values.size() != 1) {
      return Invalid(field + ".values", j.value("values", json::array()).dump(),
                     "Exactly one reservation name is required.");
    }
  } else if (!a.values.empty()) {
    return Invalid(field + ".values", j["values"].dump(), "Only SPECIFIC_RESERVATION takes values.");
  }
  *out = std::move(a);
  return std::nullopt;
}

std::optional<EmulatorResponse> BulkInsertAffinity(const json& props, const std::string& zone,
                                                   const GcpScenario& scenario, GcpReservationAffinity* out) {
  *out = GcpReservationAffinity{};
  if (!props.contains("reservationAffinity")) return std::nullopt;
  const json& given = props["reservationAffinity"];
  if (auto bad = ParseReservationAffinity(given, "resource.instanceProperties.reservationAffinity", out))
    return bad;
  if (out->consume_type != "SPECIFIC_RESERVATION") return std::nullopt;
  for (const GcpReservation& res : scenario.reservations) {
    if (res.zone == zone && res.name == LastSegment(out->values.front()) &&
        !res.specific_reservation_required) {
      return Invalid("resource.instanceProperties.reservationAffinity", given.dump(),
                     "Specified reservations [projects/" + scenario.project + "/reservations/" + res.name +
                         "] can not be targeted as specificReservationRequired is not set");
    }
  }
  return std::nullopt;
}

json ReservationAffinityJson(const GcpReservationAffinity& affinity) {
  json out = {{"consumeReservationType", affinity.consume_type}};
  if (!affinity.key.empty()) out["key"] = affinity.key;
  if (!affinity.values.empty()) out["values"] = affinity.values;
  return out;
}

}  // namespace gcp

bool GcpEmulator::ReservationExists(size_t r, WallTime now) const {
  const GcpReservation& res = scenario_.reservations[r];
  return !res.delete_at || now < start_ + *res.delete_at;
}

int GcpEmulator::ReservationInUse(size_t r, WallTime now) const {
  int used = scenario_.reservations[r].in_use_elsewhere;
  for (const Instance& i : instances_) {
    if (i.reservation == r && Live(i, now)) ++used;
  }
  return used;
}

std::optional<size_t> GcpEmulator::PickReservation(const std::string& zone, const std::string& machine_type,
                                                   const std::string& model,
                                                   const GcpReservationAffinity& affinity, WallTime now,
                                                   std::optional<OpError>* error) const {
  error->reset();
  if (affinity.consume_type == "NO_RESERVATION") return std::nullopt;
  if (affinity.consume_type == "ANY_RESERVATION") {
    // Spot VMs never consume reservations; others take a free slot of the
    // first matching reservation that does not require targeting.
    if (model == "SPOT") return std::nullopt;
    for (size_t r = 0; r < scenario_.reservations.size(); ++r) {
      const GcpReservation& res = scenario_.reservations[r];
      if (res.zone != zone || res.machine_type != machine_type || res.specific_reservation_required ||
          res.status != "READY" || !ReservationExists(r, now))
        continue;
      if (ReservationInUse(r, now) < res.count) return r;
    }
    return std::nullopt;
  }
  const std::string wanted = affinity.values.empty() ? "" : gcp::LastSegment(affinity.values.front());
  auto fail = [&](const std::string& message) -> std::optional<size_t> {
    *error = OpError{"CONDITION_NOT_MET", message, ""};
    return std::nullopt;
  };
  for (size_t r = 0; r < scenario_.reservations.size(); ++r) {
    const GcpReservation& res = scenario_.reservations[r];
    if (res.zone != zone || res.name != wanted || !ReservationExists(r, now)) continue;
    if (model == "SPOT") return fail("Spot VMs and preemptible instances cannot consume reservations.");
    if (!res.specific_reservation_required) {
      return fail("Specified reservations [projects/" + scenario_.project + "/zones/" + zone +
                  "/reservations/" + wanted +
                  "] can not be targeted as specificReservationRequired is not set");
    }
    if (res.status != "READY") {
      return fail("Cannot insert instance to a reservation with status: " + res.status +
                  ", as it requires reservation to be in READY state.");
    }
    if (res.machine_type != machine_type)
      return fail("No available resources in specified reservations '" + wanted + "'");
    if (ReservationInUse(r, now) >= res.count) {
      return fail("Specified reservation '" + wanted +
                  "' does not have available resources for the request.");
    }
    return r;
  }
  return fail("Specified reservation '" + wanted + "' does not exist.");
}

std::string GcpEmulator::ReservationJson(size_t r, WallTime now) const {
  const GcpReservation& res = scenario_.reservations[r];
  const std::string zone_path = "zones/" + res.zone;
  json props = {{"machineType", res.machine_type}};
  if (!res.accelerators.empty()) {
    props["guestAccelerators"] = json::array();
    for (const auto& [type, count] : res.accelerators)
      props["guestAccelerators"].push_back({{"acceleratorType", type}, {"acceleratorCount", count}});
  }
  const int in_use = std::min(res.count, ReservationInUse(r, now));
  // count, inUseCount and assuredCount are int64 fields: JSON strings.
  json j = {{"kind", "compute#reservation"},
            {"id", std::to_string(reservation_ids_[r])},
            {"creationTimestamp", gcp::Timestamp(start_)},
            {"selfLink", Url(zone_path + "/reservations/" + res.name)},
            {"zone", Url(zone_path)},
            {"name", res.name},
            {"specificReservationRequired", res.specific_reservation_required},
            {"status", res.status},
            {"specificReservation",
             {{"instanceProperties", props},
              {"count", std::to_string(res.count)},
              {"inUseCount", std::to_string(in_use)},
              {"assuredCount", std::to_string(res.count)}}},
            {"shareSettings", {{"shareType", "LOCAL"}}},
            {"satisfiesPzs", false}};
  if (res.delete_at) j["deleteAtTime"] = gcp::Timestamp(start_ + *res.delete_at);
  return j.dump();
}

EmulatorResponse GcpEmulator::ZoneReservations(const EmulatorRequest& request, const Path& p,
                                               const std::string& query, WallTime now) {
  if (request.method != "GET" || !p.verb.empty())
    return gcp::ErrorResponse(405, "badRequest", "Method not allowed");
  if (!p.name.empty()) {
    for (size_t r = 0; r < scenario_.reservations.size(); ++r) {
      const GcpReservation& res = scenario_.reservations[r];
      if (res.zone == p.zone && res.name == p.name && ReservationExists(r, now))
        return gcp::Json(ReservationJson(r, now));
    }
    return gcp::NotFound(p.resource());
  }
  gcp::ListQuery list;
  if (auto bad = gcp::ParseListQuery(gcp::ParseQuery(query), &list)) return *bad;
  std::vector<json> matched;
  for (size_t r = 0; r < scenario_.reservations.size(); ++r) {
    const GcpReservation& res = scenario_.reservations[r];
    if (res.zone != p.zone || !ReservationExists(r, now)) continue;
    if (list.filter && !list.filter->Matches([&](const std::string& field) -> std::optional<std::string> {
          if (field == "name") return res.name;
          if (field == "status") return res.status;
          if (field == "specificReservationRequired")
            return res.specific_reservation_required ? "true" : "false";
          return std::nullopt;
        })) {
      continue;
    }
    matched.push_back(json::parse(ReservationJson(r, now)));
  }
  json out = {{"kind", "compute#reservationList"},
              {"id", "projects/" + scenario_.project + "/zones/" + p.zone + "/reservations"},
              {"selfLink", Url("zones/" + p.zone + "/reservations")}};
  const size_t end = list.PageEnd(matched.size());
  if (list.offset < end)
    out["items"] = json(std::vector<json>(matched.begin() + list.offset, matched.begin() + end));
  if (end < matched.size()) out["nextPageToken"] = gcp::PageToken(end);
  return gcp::Json(out.dump());
}

EmulatorResponse GcpEmulator::AggregatedReservations(const std::string& query, WallTime now) {
  gcp::ListQuery list;
  if (auto bad = gcp::ParseListQuery(gcp::ParseQuery(query), &list)) return *bad;
  std::vector<size_t> matched;
  for (const std::string& zone : scenario_.zones) {
    for (size_t r = 0; r < scenario_.reservations.size(); ++r) {
      const GcpReservation& res = scenario_.reservations[r];
      if (res.zone != zone || !ReservationExists(r, now)) continue;
      if (list.filter && !list.filter->Matches([&](const std::string& field) -> std::optional<std::string> {
            if (field == "name") return res.name;
            if (field == "status") return res.status;
            if (field == "zone") return res.zone;
            return std::nullopt;
          })) {
        continue;
      }
      matched.push_back(r);
    }
  }
  json items = json::object();
  const size_t end = list.PageEnd(matched.size());
  for (size_t k = list.offset; k < end; ++k) {
    const size_t r = matched[k];
    items["zones/" + scenario_.reservations[r].zone]["reservations"].push_back(
        json::parse(ReservationJson(r, now)));
  }
  return AggregatedPage("reservation", std::move(items), end, matched.size());
}

EmulatorResponse GcpEmulator::InstanceTemplateGet(const std::string& name) const {
  for (const Group& g : groups_) {
    if (g.spec.instance_template != name) continue;
    const GcpManagedGroup& s = g.spec;
    json scheduling = {{"provisioningModel", s.provisioning_model},
                       {"preemptible", s.provisioning_model == "SPOT"},
                       {"automaticRestart", s.provisioning_model != "SPOT"},
                       {"onHostMaintenance", "TERMINATE"}};
    if (!s.termination_action.empty()) scheduling["instanceTerminationAction"] = s.termination_action;
    // A global template names its machine type by its short name.
    json j = {{"kind", "compute#instanceTemplate"},
              {"id", std::to_string(g.id + 1)},
              {"creationTimestamp", gcp::Timestamp(g.created)},
              {"name", name},
              {"selfLink", Url("global/instanceTemplates/" + name)},
              {"properties",
               {{"machineType", s.machine_type},
                {"labels", s.labels},
                {"scheduling", scheduling},
                {"reservationAffinity", gcp::ReservationAffinityJson(s.reservation_affinity)}}}};
    return gcp::Json(j.dump());
  }
  return gcp::NotFound("projects/" + scenario_.project + "/global/instanceTemplates/" + name);
}

}  // namespace gpuscaler::sim
