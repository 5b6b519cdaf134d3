#include "sim/reservations_file.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler::sim {
namespace {

// The region of `zone` in the catalog and its on-demand price of `type`;
// nothing when the catalog does not sell the type there.
std::optional<std::pair<std::string, double>> OnDemandPrice(const Catalog& catalog, const std::string& type,
                                                             const std::string& zone) {
  for (const RegionPrices& region : catalog.regions) {
    if (std::find(region.zones.begin(), region.zones.end(), zone) == region.zones.end()) continue;
    auto price = region.on_demand_usd_per_hour.find(type);
    if (price == region.on_demand_usd_per_hour.end() || catalog.FindInstanceType(type) == nullptr) return std::nullopt;
    return std::make_pair(region.region, price->second);
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<Reservation>> ReadReservationsFile(const std::string& file, WallTime start, const Catalog& catalog) {
  Result<std::string> text = ReadConfigFile(file);
  if (!text) return Error::NotFound("cannot read the reservations file " + file + ": " + text.error().message());
  DocReader r(file);
  DocNode root;
  std::vector<Reservation> out;
  if (r.Parse(*text, &root)) {
    MapReader top(r, root, "", {"reservations"});
    top.Require({"reservations"});
    std::set<std::string> ids;
    top.ForEachItem("reservations", [&](const DocNode& n, const std::string& path) {
      MapReader m(r, n, path,
                  {"id", "instance_type", "zone", "count", "start", "end", "kind", "usd_per_hour", "upfront_usd", "tags"});
      if (!m.Require({"id", "instance_type", "zone", "count"})) return;
      Reservation res;
      m.ReadString("id", &res.id);
      if (res.id.empty()) r.ReportAt(m.PathOf("id"), "must not be empty");
      if (!ids.insert(res.id).second) r.ReportAt(m.PathOf("id"), "duplicate reservation id '" + res.id + "'");
      m.ReadString("instance_type", &res.instance_type);
      m.ReadString("zone", &res.zone);
      if (m.ReadInt("count", &res.total_count) && res.total_count <= 0) r.ReportAt(m.PathOf("count"), "must be >= 1");
      res.available_count = res.total_count;
      Seconds from{0};
      if (m.ReadDuration("start", &from) && from < Seconds(0)) r.ReportAt(m.PathOf("start"), "must not be negative");
      res.start = start + from;
      Seconds until{0};
      if (m.ReadDuration("end", &until)) {
        if (until <= from) r.ReportAt(m.PathOf("end"), "must be after start");
        res.end = start + until;
      }
      if (std::string kind; m.ReadString("kind", &kind)) {
        if (auto k = ParseReservationKind(kind)) {
          res.kind = *k;
        } else {
          r.ReportAt(m.PathOf("kind"), "unknown kind '" + kind + "' (use default or capacity-block)");
        }
      }
      m.ReadStringMap("tags", &res.tags);
      const auto od = OnDemandPrice(catalog, res.instance_type, res.zone);
      if (!od) {
        r.ReportAt(m.PathOf("instance_type"),
                   "the catalog has no on-demand " + res.instance_type + " in zone " + res.zone);
      } else {
        res.region = od->first;
        res.usd_per_hour = od->second;
      }
      const bool priced = m.ReadNumber("usd_per_hour", &res.usd_per_hour);
      if (priced && res.usd_per_hour < 0) r.ReportAt(m.PathOf("usd_per_hour"), "must be >= 0");
      if (m.ReadNumber("upfront_usd", &res.upfront_usd)) {
        if (res.upfront_usd < 0) r.ReportAt(m.PathOf("upfront_usd"), "must be >= 0");
        if (res.kind != ReservationKind::kCapacityBlock) {
          r.ReportAt(m.PathOf("upfront_usd"), "only a capacity-block is paid up front");
        } else if (priced) {
          r.ReportAt(m.PathOf("usd_per_hour"), "give usd_per_hour or upfront_usd, not both");
        } else if (!res.end) {
          r.ReportAt(m.PathOf("upfront_usd"), "a capacity-block needs an end to spread its fee over");
        } else if (res.total_count > 0) {
          const double hours = static_cast<double>((*res.end - res.start).count()) / 3600.0;
          res.usd_per_hour = res.upfront_usd / (res.total_count * hours);
        }
      }
      if (res.kind == ReservationKind::kCapacityBlock && !res.end) {
        r.ReportAt(path, "a capacity-block has an end");
      }
      out.push_back(std::move(res));
    });
  }
  if (!r.ok()) return Error::Config(JoinProblems(r.SortedProblems()));
  return out;
}

}  // namespace gpuscaler::sim
