// Checks across a policy's fields and against the instance catalog: names
// that must exist or be unique, and whether each class has a pool that can
// serve it.
#include <algorithm>
#include <cctype>
#include <set>

#include "gpuscaler/model/compatibility.h"
#include "policy_reader.h"

namespace gpuscaler::policy_detail {

void PolicyReader::CheckKnown(const std::string& list_path, const std::vector<std::string>& values,
                              const std::string& what, const std::vector<std::string_view>& known,
                              bool (*found)(const Catalog&, const std::string&)) {
  if (catalog_ == nullptr) return;
  for (size_t i = 0; i < values.size(); ++i) {
    if (found(*catalog_, values[i])) continue;
    unresolved_.insert(list_path.substr(0, list_path.find('.')));
    r_.ReportAt(IndexPath(list_path, i),
                WithSuggestion("unknown " + what + " '" + values[i] + "' (not in the catalog)",
                               values[i], known));
  }
}

std::vector<std::string_view> PolicyReader::CatalogTypeNames() const {
  std::vector<std::string_view> out;
  for (const InstanceType& t : catalog_->instance_types) out.push_back(t.name);
  return out;
}

std::vector<std::string_view> PolicyReader::CatalogFamilies() const {
  std::vector<std::string_view> out;
  for (const InstanceType& t : catalog_->instance_types) out.push_back(t.family);
  return out;
}

std::vector<std::string_view> PolicyReader::CatalogGpuNames() const {
  std::vector<std::string_view> out;
  for (const GpuModel& g : catalog_->gpu_models) {
    out.push_back(g.name);
    if (!g.short_name.empty()) out.push_back(g.short_name);
  }
  return out;
}

std::vector<std::string_view> PolicyReader::PoolNames() const {
  std::vector<std::string_view> out;
  for (const NodePoolPolicy& pool : p_.pools) out.push_back(pool.name);
  return out;
}

void PolicyReader::CheckServedRegions(const NodePoolPolicy& pool, const MapReader& m) {
  if (served_regions_.empty()) return;
  auto served = [&](const std::string& name, bool is_zone) {
    return std::any_of(served_regions_.begin(), served_regions_.end(), [&](const std::string& region) {
      return is_zone ? name.rfind(region, 0) == 0 : name == region;
    });
  };
  // A pool that names regions has its zones checked against them already.
  const bool by_zone = pool.regions.empty();
  std::vector<std::string> outside;
  for (const std::string& name : by_zone ? pool.zones : pool.regions) {
    if (!served(name, by_zone)) outside.push_back(name);
  }
  if (outside.empty()) return;
  r_.ReportAt(m.PathOf(by_zone ? "zones" : "regions"),
              std::string(by_zone ? "zone" : "region") + (outside.size() == 1 ? " " : "s ") +
                  Quoted(outside) + " outside the regions this installation serves (" +
                  Quoted(served_regions_) + "): every launch there would fail");
}

void PolicyReader::CheckNames() {
  std::set<std::string> seen;
  for (size_t i = 0; i < p_.pools.size(); ++i) {
    const std::string& name = p_.pools[i].name;
    if (!name.empty() && !seen.insert(name).second) {
      r_.ReportAt(IndexPath("pools", i) + ".name", "duplicate pool name '" + name + "'");
    }
  }
  seen.clear();
  for (size_t i = 0; i < p_.classes.size(); ++i) {
    const std::string& name = p_.classes[i].name;
    if (!name.empty() && !seen.insert(name).second) {
      r_.ReportAt(IndexPath("classes", i) + ".name", "duplicate class name '" + name + "'");
    }
  }
  for (const auto& [pool, cap] : p_.budget.per_pool) {
    if (p_.FindPool(pool) == nullptr) {
      r_.ReportAt("budget.pools." + pool,
                  WithSuggestion("unknown pool '" + pool + "'", pool, PoolNames()));
    }
  }
  seen.clear();
  for (size_t i = 0; i < p_.scaling.schedules.size(); ++i) {
    const ScalingSchedule& schedule = p_.scaling.schedules[i];
    const std::string path = IndexPath("scaling.schedules", i);
    if (!schedule.name.empty() && !seen.insert(schedule.name).second) {
      r_.ReportAt(path + ".name", "duplicate schedule name '" + schedule.name + "'");
    }
    for (size_t k = 0; k < schedule.pools.size(); ++k) {
      const std::string& pool = schedule.pools[k];
      if (p_.FindPool(pool) == nullptr) {
        r_.ReportAt(IndexPath(path + ".pools", k), WithSuggestion("unknown pool '" + pool + "'", pool, PoolNames()));
      }
    }
  }
  std::vector<std::string_view> teams;
  for (const WorkloadClassPolicy& c : p_.classes) {
    if (!c.team.empty()) teams.push_back(c.team);
  }
  for (const auto& [team, cap] : p_.budget.per_team) {
    if (std::find(teams.begin(), teams.end(), team) == teams.end()) {
      r_.ReportAt("budget.teams." + team,
                  WithSuggestion("no class names team '" + team + "' (classes[].team)", team, teams));
    }
  }
}

std::string PolicyReader::CanonicalGpu(const std::string& name) const {
  if (catalog_ != nullptr) {
    if (const GpuModel* g = catalog_->FindGpuModel(name)) return g->name;
  }
  std::string out = name;
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

bool PolicyReader::PoolAllowsType(const NodePoolPolicy& pool, const InstanceType& t) const {
  if (!pool.AllowsType(t, catalog_->FindGpuModel(t.gpu_model))) return false;
  for (const RegionPrices& r : catalog_->regions) {
    if (!pool.regions.empty() &&
        std::find(pool.regions.begin(), pool.regions.end(), r.region) == pool.regions.end()) {
      continue;
    }
    if (r.on_demand_usd_per_hour.count(t.name) == 0) continue;
    if (pool.zones.empty()) return true;
    for (const std::string& z : r.zones) {
      if (std::find(pool.zones.begin(), pool.zones.end(), z) != pool.zones.end()) return true;
    }
  }
  return false;
}

std::string PolicyReader::PoolPath(const NodePoolPolicy& pool) const {
  return IndexPath("pools", static_cast<size_t>(&pool - p_.pools.data()));
}

std::string PolicyReader::WhyPoolCannotServe(const NodePoolPolicy& pool, const WorkloadClassPolicy& c) const {
  const bool needs_on_demand = !c.interruptible || c.max_spot_share == 0;
  const bool has_on_demand = std::find(pool.capacity_types.begin(), pool.capacity_types.end(),
                                       CapacityType::kOnDemand) != pool.capacity_types.end();
  if (needs_on_demand && !has_on_demand) {
    return "pool '" + pool.name + "' offers only spot capacity and the class " +
           (c.interruptible ? "allows no spot (max_spot_share 0)" : "is not interruptible");
  }
  if (!c.gpu_models.empty() && !pool.gpu_models.empty()) {
    bool overlap = false;
    for (const std::string& a : c.gpu_models) {
      for (const std::string& b : pool.gpu_models) {
        overlap = overlap || CanonicalGpu(a) == CanonicalGpu(b);
      }
    }
    if (!overlap) {
      return "pool '" + pool.name + "' allows GPU models " + Quoted(pool.gpu_models) +
             ", the class needs one of " + Quoted(c.gpu_models);
    }
  }
  if (catalog_ != nullptr && !unresolved_.count(PoolPath(pool))) {
    bool any_type = false;
    const DemandUnit unit = c.Unit();
    for (const InstanceType& t : catalog_->instance_types) {
      if (!PoolAllowsType(pool, t)) continue;
      any_type = true;
      if (UnitFitsType(unit, t, catalog_->FindGpuModel(t.gpu_model))) return "";
    }
    if (!any_type) return "pool '" + pool.name + "' allows no priced GPU instance type";
    return "no instance type of pool '" + pool.name +
           "' fits the class's shape (GPU model, GPU count or memory, MIG profile, CPU, memory)";
  }
  return "";
}

void PolicyReader::CheckClassesHavePools() {
  if (catalog_ != nullptr) {
    for (size_t i = 0; i < p_.pools.size(); ++i) {
      const NodePoolPolicy& pool = p_.pools[i];
      const bool any = std::any_of(
          catalog_->instance_types.begin(), catalog_->instance_types.end(),
          [&](const InstanceType& t) { return PoolAllowsType(pool, t); });
      if (!any && !unresolved_.count(IndexPath("pools", i))) {
        r_.ReportAt(IndexPath("pools", i) + ".name",
                    "no priced GPU instance type in the catalog matches pool '" + pool.name + "'");
        unresolved_.insert(IndexPath("pools", i));
      }
    }
  }
  for (size_t i = 0; i < p_.classes.size(); ++i) {
    const WorkloadClassPolicy& c = p_.classes[i];
    const std::string path = IndexPath("classes", i);
    std::vector<const NodePoolPolicy*> candidates;
    for (size_t j = 0; j < c.pools.size(); ++j) {
      const NodePoolPolicy* pool = p_.FindPool(c.pools[j]);
      if (pool == nullptr) {
        r_.ReportAt(IndexPath(path + ".pools", j),
                    WithSuggestion("unknown pool '" + c.pools[j] + "'", c.pools[j], PoolNames()));
      } else {
        candidates.push_back(pool);
      }
    }
    if (!c.pools.empty() && candidates.empty()) continue;  // already reported
    if (c.pools.empty()) {
      for (const NodePoolPolicy& pool : p_.pools) candidates.push_back(&pool);
    }
    if (candidates.empty() || unresolved_.count(path)) continue;
    std::string reasons;
    for (const NodePoolPolicy* pool : candidates) {
      const std::string why = WhyPoolCannotServe(*pool, c);
      if (why.empty()) {
        reasons.clear();
        break;
      }
      reasons += (reasons.empty() ? "" : "; ") + why;
    }
    if (!reasons.empty()) {
      r_.ReportAt(path + ".name", "no pool can serve class '" + c.name + "': " + reasons);
    }
  }
}

}  // namespace gpuscaler::policy_detail
