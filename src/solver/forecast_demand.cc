#include "gpuscaler/solver/forecast_demand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "gpuscaler/model/compatibility.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/solver/cost_model.h"
#include "type_index.h"

namespace gpuscaler {
namespace {

bool Listed(const std::vector<std::string>& names, const std::string& name) {
  return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

// The pool may buy `o` of `type` for `unit`: type, capacity type, region,
// zone, and the unit's own pins.
bool PoolMayBuy(const NodePoolPolicy& pool, const Offering& o, const InstanceType& type, const GpuModel* gpu,
                const DemandUnit& unit) {
  if (!pool.AllowsType(type, gpu)) return false;
  if (std::find(pool.capacity_types.begin(), pool.capacity_types.end(), o.capacity_type) ==
      pool.capacity_types.end())
    return false;
  if (!Listed(pool.regions, o.region) || !Listed(pool.zones, o.zone)) return false;
  if (!unit.pool.empty() && unit.pool != pool.name) return false;
  return true;
}

std::string Num(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// P(peak demand > x): the share of the forecast's quantile levels above x,
// read as 1 - the highest quantile whose level is at most x.
double ExceedanceAt(const DemandForecast& f, double x) {
  double below = 0;
  for (const ForecastLevel& l : f.levels) {
    if (l.gpus <= x + 1e-9) below = std::max(below, l.quantile);
  }
  return 1.0 - below;
}

}  // namespace

bool IsForecastUnit(const DemandUnit& unit) { return unit.id.rfind(kForecastUnitPrefix, 0) == 0; }

std::optional<SuitableOffering> CheapestSuitableOffering(const Snapshot& snapshot, const Policy& policy,
                                                         const WorkloadClassPolicy& cls,
                                                         const DemandUnit& unit) {
  std::optional<SuitableOffering> best;
  const solver_detail::TypesByName types = solver_detail::IndexTypes(snapshot);
  for (const Offering& o : snapshot.offerings) {
    if (!o.available) continue;
    if (o.capacity_type == CapacityType::kSpot && !unit.interruptible) continue;
    if (unit.capacity_type && *unit.capacity_type != o.capacity_type) continue;
    if (!Listed(unit.zones, o.zone) || !Listed(unit.instance_types, o.instance_type)) continue;
    const InstanceType* type = solver_detail::FindType(types, o.instance_type);
    if (type == nullptr) continue;
    const GpuModel* gpu = solver_detail::FindGpu(snapshot, type->gpu_model);
    if (!UnitFitsType(unit, *type, gpu)) continue;
    bool allowed = policy.pools.empty();
    for (const NodePoolPolicy& pool : policy.pools) {
      if (!cls.pools.empty() && std::find(cls.pools.begin(), cls.pools.end(), pool.name) == cls.pools.end())
        continue;
      allowed = allowed || PoolMayBuy(pool, o, *type, gpu, unit);
    }
    if (!allowed) continue;
    const double per_unit = o.usd_per_hour * ShareOfNode(GpuShare(unit), std::max<int64_t>(0, unit.cpu_milli), *type);
    // Ties go to the offering listed first: the snapshot's order is fixed.
    if (!best || per_unit < best->usd_per_hour_per_unit - 1e-12) best = SuitableOffering{&o, type, per_unit};
  }
  return best;
}

Seconds LeadTimeOf(const Snapshot& snapshot, const Offering& offering, const InstanceType& type) {
  return Seconds(static_cast<int64_t>(std::lround(ReplacementWaitHours(snapshot, offering, type) * 3600.0)));
}

DemandUnit RepresentativeUnit(const Snapshot& snapshot, const WorkloadClassPolicy& cls) {
  // Shapes by the GPUs they hold now, pending work first, then running work
  // in node order; the first shape seen wins a tie.
  struct Seen {
    const DemandUnit* unit;
    double gpus;
  };
  std::vector<Seen> shapes;
  const auto same_shape = [](const DemandUnit& a, const DemandUnit& b) {
    return a.gpus == b.gpus && a.gpu_milli == b.gpu_milli && a.mig_profile == b.mig_profile &&
           a.gpu_models == b.gpu_models && a.min_gpu_memory_mib == b.min_gpu_memory_mib &&
           a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib && a.interruptible == b.interruptible &&
           a.zones == b.zones && a.instance_types == b.instance_types && a.capacity_type == b.capacity_type &&
           a.pool == b.pool;
  };
  const auto add = [&](const DemandUnit& u) {
    if (u.workload_class != cls.name || IsForecastUnit(u)) return;
    for (Seen& s : shapes) {
      if (same_shape(*s.unit, u)) {
        s.gpus += GpuShare(u);
        return;
      }
    }
    shapes.push_back({&u, GpuShare(u)});
  };
  for (const DemandUnit& u : snapshot.pending) add(u);
  for (const Node& n : snapshot.nodes) {
    for (const DemandUnit& u : n.running) add(u);
  }
  const Seen* best = nullptr;
  for (const Seen& s : shapes) {
    if (best == nullptr || s.gpus > best->gpus) best = &s;
  }
  if (best == nullptr) return cls.Unit();
  DemandUnit u = *best->unit;
  u.id.clear();
  return u;
}

double ForecastGpusAt(const DemandForecast& f, double quantile) {
  if (f.levels.empty()) return f.demand_gpus;
  if (quantile <= f.levels.front().quantile) return f.levels.front().gpus;
  for (size_t i = 1; i < f.levels.size(); ++i) {
    const ForecastLevel& a = f.levels[i - 1];
    const ForecastLevel& b = f.levels[i];
    if (quantile <= b.quantile) {
      const double span = b.quantile - a.quantile;
      return span <= 0 ? b.gpus : a.gpus + (b.gpus - a.gpus) * (quantile - a.quantile) / span;
    }
  }
  return f.levels.back().gpus;
}

ForecastUnits MakeForecastUnits(const Snapshot& snapshot, const Policy& policy) {
  ForecastUnits out;
  for (const DemandForecast& f : snapshot.forecasts) {
    const WorkloadClassPolicy* cls = policy.FindClass(f.workload_class);
    if (cls == nullptr || !cls->forecast) continue;
    const std::string head = "class " + f.workload_class + ": forecast ";
    if (f.levels.empty()) {
      out.notes.push_back(head + "off (" + (f.fallback.empty() ? "no forecast" : f.fallback) +
                          "): planned reactively");
      continue;
    }
    const ForecastPolicy& fp = *cls->forecast;
    const double target = ForecastGpusAt(f, fp.quantile);
    std::string note = head + "q" + Num(fp.quantile, 2) + " of peak demand within " +
                       FormatDuration(f.horizon) + " " + Num(target, 1) + " GPUs (now " +
                       Num(f.demand_gpus, 1) + ")";
    DemandUnit shape = RepresentativeUnit(snapshot, *cls);
    const double g = GpuShare(shape);
    if (target <= f.demand_gpus + 1e-9) {
      out.notes.push_back(note + ": nothing to launch ahead");
      continue;
    }
    if (g <= 0) {
      out.notes.push_back(note + ": the class's work needs no GPU, nothing launched ahead");
      continue;
    }
    const std::optional<SuitableOffering> cheapest = CheapestSuitableOffering(snapshot, policy, *cls, shape);
    if (!cheapest) {
      out.notes.push_back(note + ": no suitable offering, nothing launched ahead");
      continue;
    }
    const double price = cheapest->usd_per_hour_per_unit;
    const double wait = cls->wait_cost_usd_per_hour
                            ? *cls->wait_cost_usd_per_hour
                            : OnDemandValueUsdPerHour(shape, *cheapest->offering, *cheapest->type);
    const double lead_h = static_cast<double>(std::max<int64_t>(0, f.lead_time.count())) / 3600.0;
    const double horizon_h = static_cast<double>(std::max<int64_t>(0, f.horizon.count())) / 3600.0;
    const double cap = fp.max_idle_usd_per_hour.value_or(std::numeric_limits<double>::infinity());
    int added = 0;
    double idle_usd = 0;
    std::string stop;
    for (int k = 1;; ++k) {
      const double covers = f.demand_gpus + (k - 1) * g;
      if (covers >= target - 1e-9) break;
      const double p = ExceedanceAt(f, covers);
      const double wait_usd = p * wait * lead_h;
      const double idle_cost = (1.0 - p) * price * horizon_h;
      if (wait_usd < idle_cost || wait_usd <= 0) {
        stop = "; the next unit's expected wait " + FormatUsd(wait_usd, MoneyStyle::kFourDecimals) + " (P " +
               Num(p, 2) + ") is below its expected idle " + FormatUsd(idle_cost, MoneyStyle::kFourDecimals);
        break;
      }
      if (idle_usd + price > cap + 1e-9) {
        stop = "; capped by max_idle_usd_per_hour " + FormatUsd(cap, MoneyStyle::kCents);
        break;
      }
      DemandUnit u = shape;
      u.id = std::string(kForecastUnitPrefix) + f.workload_class + "/" + std::to_string(k);
      u.team.clear();
      u.labels.clear();
      // Last in every fill and first cut by a budget: real work is placed first.
      u.priority = std::numeric_limits<int>::min();
      out.units.push_back(std::move(u));
      idle_usd += price;
      ++added;
    }
    note += ": " + std::to_string(added) + (added == 1 ? " unit" : " units") + " of " + Num(g, 2) +
            " GPUs launched ahead at most (" + FormatUsd(idle_usd, MoneyStyle::kCentsPerHour) + " as " +
            cheapest->offering->instance_type + " " +
            std::string(ToString(cheapest->offering->capacity_type)) + ", lead time " +
            FormatDuration(f.lead_time) + ", wait " + FormatUsd(wait, MoneyStyle::kCentsPerHour) + " per unit)" + stop;
    out.notes.push_back(std::move(note));
  }
  return out;
}

}  // namespace gpuscaler
