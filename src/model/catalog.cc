#include "gpuscaler/model/catalog.h"

#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler {

const InstanceType* Catalog::FindInstanceType(const std::string& name) const {
  return FindByName(instance_types, name);
}

const GpuModel* Catalog::FindGpuModel(const std::string& name_or_short_name) const {
  for (const auto& g : gpu_models) {
    if (g.name == name_or_short_name || g.short_name == name_or_short_name) return &g;
  }
  return nullptr;
}

std::vector<Offering> Catalog::Offerings(const std::vector<std::string>& wanted_regions) const {
  std::vector<Offering> out;
  for (const RegionPrices& r : regions) {
    if (!wanted_regions.empty()) {
      bool wanted = false;
      for (const auto& w : wanted_regions) wanted = wanted || w == r.region;
      if (!wanted) continue;
    }
    for (const auto& [type_name, od_price] : r.on_demand_usd_per_hour) {
      const InstanceType* type = FindInstanceType(type_name);
      if (type == nullptr) continue;  // the loader rejects this; be safe anyway
      auto latency_it = launch_latency.find(type->family);
      const Seconds latency = latency_it == launch_latency.end() ? default_launch_latency : latency_it->second;
      auto wake_it = wake_latency.find(type->family);
      const Seconds wake = wake_it == wake_latency.end() ? default_wake_latency : wake_it->second;
      auto spot_it = r.spot_usd_per_hour.find(type_name);
      const double spot_price = spot_it != r.spot_usd_per_hour.end()
                                    ? spot_it->second
                                    : od_price * (1.0 - default_spot_discount);
      auto rate_it = r.spot_interruptions_per_hour.find(type_name);
      const double spot_rate = rate_it != r.spot_interruptions_per_hour.end()
                                   ? rate_it->second
                                   : default_spot_interruptions_per_hour;
      for (const std::string& zone : r.zones) {
        Offering od;
        od.instance_type = type_name;
        od.region = r.region;
        od.zone = zone;
        od.capacity_type = CapacityType::kOnDemand;
        od.usd_per_hour = od_price;
        od.on_demand_usd_per_hour = od_price;
        od.launch_latency = latency;
        od.wake_latency = wake;
        out.push_back(od);
        Offering spot = od;
        spot.capacity_type = CapacityType::kSpot;
        spot.usd_per_hour = spot_price;
        spot.interruptions_per_hour = spot_rate;
        out.push_back(spot);
      }
    }
  }
  return out;
}

}  // namespace gpuscaler
