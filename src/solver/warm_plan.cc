#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/compatibility.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/solver/cost_model.h"
#include "gpuscaler/solver/forecast_demand.h"
#include "gpuscaler/solver/warm_pool.h"
#include "planner_impl.h"
#include "type_index.h"

namespace gpuscaler {
namespace {

bool WarmServesPool(const WorkloadClassPolicy& cls, const NodePoolPolicy& pool) {
  return cls.pools.empty() || std::find(cls.pools.begin(), cls.pools.end(), pool.name) != cls.pools.end();
}

// The unit a warm node of `pool` is chosen for: the shape that holds the
// most of `cls`'s GPUs now (RepresentativeUnit), on on-demand in that pool.
DemandUnit WarmUnitShape(const Snapshot& snapshot, const WorkloadClassPolicy& cls, const NodePoolPolicy& pool) {
  DemandUnit unit = RepresentativeUnit(snapshot, cls);
  unit.workload_class = cls.name;
  unit.capacity_type = CapacityType::kOnDemand;
  unit.pool = pool.name;
  unit.zones.clear();
  unit.instance_types.clear();
  return unit;
}


double WarmHours(Seconds s) { return double(std::max<int64_t>(0, s.count())) / 3600.0; }

// The pool's warm offerings: one instance type, and its offerings in every
// zone the pool buys it on-demand, and on spot (within spot's price and
// interruption limits), in snapshot order. The type is the one its warm
// nodes already have while it still holds the representative unit (the
// shape holding the most GPUs) of every class the pool serves, of those with
// a forecast when any has one (a type that changed with every tick's work
// would leave the stopped nodes useless and refill them over and over),
// else the cheapest on-demand type for that unit of the first such class.
// Work larger than the warm type is launched cold. Empty type: none fits.
struct WarmOfferingSet {
  std::string type;
  std::vector<const Offering*> on_demand;
  std::vector<const Offering*> spot;
  const std::vector<const Offering*>& Of(CapacityType c) const { return c == CapacityType::kSpot ? spot : on_demand; }
};

// The classes whose work sizes the pool's warm capacity: those with a
// forecast, else every class the pool serves.
std::vector<const WorkloadClassPolicy*> WarmSizingClasses(const Policy& policy, const NodePoolPolicy& pool) {
  const bool any_forecast = std::any_of(policy.classes.begin(), policy.classes.end(), [&](const WorkloadClassPolicy& c) {
    return WarmServesPool(c, pool) && c.forecast.has_value();
  });
  std::vector<const WorkloadClassPolicy*> out;
  for (const WorkloadClassPolicy& cls : policy.classes)
    if (WarmServesPool(cls, pool) && (!any_forecast || cls.forecast)) out.push_back(&cls);
  return out;
}

WarmOfferingSet WarmOfferings(const Snapshot& snapshot, const Policy& policy, const NodePoolPolicy& pool) {
  const solver_detail::TypesByName types = solver_detail::IndexTypes(snapshot);
  std::vector<DemandUnit> shapes;
  for (const WorkloadClassPolicy* cls : WarmSizingClasses(policy, pool)) shapes.push_back(WarmUnitShape(snapshot, *cls, pool));
  std::string type_name;
  std::map<std::string, int> kept;
  for (const WarmNode& w : snapshot.warm_nodes)
    if (w.pool == pool.name) ++kept[w.offering.instance_type];
  for (const auto& [name, n] : kept) {
    const InstanceType* t = solver_detail::FindType(types, name);
    if (t == nullptr || (!type_name.empty() && n <= kept[type_name])) continue;
    const bool holds = std::all_of(shapes.begin(), shapes.end(), [&](const DemandUnit& u) {
      return UnitFitsType(u, *t, solver_detail::FindGpu(snapshot, t->gpu_model));
    });
    if (holds) type_name = name;
  }
  for (size_t i = 0; type_name.empty() && i < shapes.size(); ++i) {
    const WorkloadClassPolicy* cls = policy.FindClass(shapes[i].workload_class);
    if (cls == nullptr) continue;
    if (const std::optional<SuitableOffering> best = CheapestSuitableOffering(snapshot, policy, *cls, shapes[i]))
      type_name = best->offering->instance_type;
  }
  WarmOfferingSet out;
  out.type = type_name;
  if (type_name.empty()) return out;
  const bool buys_spot =
      std::find(pool.capacity_types.begin(), pool.capacity_types.end(), CapacityType::kSpot) != pool.capacity_types.end();
  for (const Offering& o : snapshot.offerings) {
    if (o.instance_type != type_name || !o.available || !o.reservation_id.empty() || !pool.AllowsLocation(o)) continue;
    if (o.capacity_type == CapacityType::kOnDemand) {
      out.on_demand.push_back(&o);
    } else if (o.capacity_type == CapacityType::kSpot && buys_spot &&
               !SpotOverCeiling(o, policy.spot.max_price_fraction_of_on_demand,
                                policy.spot.max_interruptions_per_hour)) {
      out.spot.push_back(&o);
    }
  }
  return out;
}

// Launch indices change when a launch is emptied by wakes: renumbers the
// placements that point at launches after `removed`.
void EraseWarmLaunch(Plan& plan, int removed) {
  plan.launches.erase(plan.launches.begin() + removed);
  for (Placement& p : plan.placements) {
    if (p.launch_index > removed) --p.launch_index;
  }
}

struct WakeChoice {
  int launch = 0;
  int ordinal = 0;
  const WarmNode* warm = nullptr;
  std::vector<std::string> units;
  std::string why;
};

// WarmTargetOf with the pool's warm offerings (WarmOfferings) given.
WarmTarget WarmTargetFor(const Snapshot& snapshot, const Policy& policy, const NodePoolPolicy& pool,
                         const WarmOfferingSet& offerings) {
  WarmTarget out;
  if (!pool.warm) return out;
  const solver_detail::TypesByName types = solver_detail::IndexTypes(snapshot);
  const InstanceType* type = offerings.type.empty() ? nullptr : solver_detail::FindType(types, offerings.type);
  if (type == nullptr || type->gpu_count <= 0 || (offerings.on_demand.empty() && offerings.spot.empty())) {
    out.note = "pool " + pool.name + ": warm capacity 0 (no GPU offering holds its classes' work)";
    return out;
  }
  std::string how;
  if (pool.warm->size) {
    out.size = *pool.warm->size;
    how = "size " + std::to_string(out.size);
  } else {
    double rise = 0;
    int forecasts = 0;
    for (const WorkloadClassPolicy& cls : policy.classes) {
      if (!WarmServesPool(cls, pool) || !cls.forecast) continue;
      for (const DemandForecast& f : snapshot.forecasts) {
        if (f.workload_class != cls.name || f.levels.empty()) continue;
        rise += std::max(0.0, ForecastGpusAt(f, cls.forecast->quantile) - f.demand_gpus);
        ++forecasts;
      }
    }
    out.size = int(std::ceil(rise / type->gpu_count - 1e-9));
    how = forecasts == 0 ? "auto, no forecast yet: 0"
                         : "auto: a rise of " + std::to_string(int(std::ceil(rise - 1e-9))) + " GPUs forecast";
  }
  const double each = WarmWaitingUsdPerHour(snapshot, pool, *type);
  if (each > 0) {
    const int cap = int(std::floor(pool.warm->max_usd_per_hour / each + 1e-9));
    if (out.size > cap) {
      out.size = cap;
      how += ", capped at " + std::to_string(cap) + " by max_usd_per_hour";
    }
  }
  // The spot part: all of it, none, or (auto) the share of it the classes
  // it serves may hold on spot, the smallest of theirs, so that woken spot
  // nodes stand in only for the spot part of their work.
  switch (pool.warm->capacity_type) {
    case WarmCapacityType::kOnDemand: out.spot = 0; break;
    case WarmCapacityType::kSpot: out.spot = out.size; break;
    case WarmCapacityType::kAuto: {
      double share = 1.0;
      for (const WorkloadClassPolicy* cls : WarmSizingClasses(policy, pool)) share = std::min(share, cls->max_spot_share);
      out.spot = std::clamp(int(std::floor(out.size * share + 0.5)), 0, out.size);
      break;
    }
  }
  if (offerings.spot.empty() && out.spot > 0) {
    how += ", no spot offering within spot's limits: " + std::to_string(out.spot) + " spot not kept";
    out.size -= out.spot;
    out.spot = 0;
  }
  if (offerings.on_demand.empty() && out.size > out.spot) {
    how += ", no on-demand offering: " + std::to_string(out.size - out.spot) + " on-demand not kept";
    out.size = out.spot;
  }
  if (out.spot > 0) how += ", " + std::to_string(out.spot) + " of them spot";
  out.note = "pool " + pool.name + ": warm capacity " + std::to_string(out.size) + " x " + type->name + " (" + how +
             ", " + FormatUsd(each, MoneyStyle::kCents) + "/h each stopped)";
  return out;
}

class WarmPass {
 public:
  WarmPass(const Snapshot& snapshot, const Policy& policy, Plan& plan)
      : snap_(snapshot), policy_(policy), plan_(plan), types_(solver_detail::IndexTypes(snapshot)) {
    for (const DemandUnit& u : snapshot.pending) pending_.emplace(u.id, &u);
  }

  void Run() {
    for (const NodePoolPolicy& pool : policy_.pools) {
      if (!pool.warm) continue;
      const std::vector<WakeChoice> wakes = ChooseWakes(pool);
      ApplyWakes(wakes);
      std::set<std::string> woken;
      for (const WakeChoice& w : wakes) woken.insert(w.warm->instance_id);
      Resize(pool, woken);
    }
  }

 private:
  double WaitCostUsdPerHour(const DemandUnit& u, const Offering& o, const InstanceType& t) const {
    const WorkloadClassPolicy* cls = policy_.FindClass(u.workload_class);
    if (cls != nullptr && cls->wait_cost_usd_per_hour) return *cls->wait_cost_usd_per_hour;
    return OnDemandValueUsdPerHour(u, o, t);
  }

  // Whether every unit of the node planned on `planned` may run on `warm`
  // (its zone and capacity type). A spot warm node stands in only for a
  // planned spot node: the plan's spot shares hold as packed.
  bool UnitsAllow(const std::vector<const DemandUnit*>& units, const WarmNode& warm, const Offering& planned) const {
    const CapacityType woken_as = warm.offering.capacity_type;
    if (woken_as == CapacityType::kSpot && planned.capacity_type != CapacityType::kSpot) return false;
    for (const DemandUnit* u : units) {
      if (u->capacity_type && *u->capacity_type != woken_as) return false;
      if (!u->zones.empty() && std::find(u->zones.begin(), u->zones.end(), warm.offering.zone) == u->zones.end())
        return false;
    }
    return true;
  }

  // Whether `units` fit together on one node of `warm`'s type.
  bool UnitsFit(const std::vector<const DemandUnit*>& units, const WarmNode& warm) const {
    const InstanceType* t = solver_detail::FindType(types_, warm.offering.instance_type);
    if (t == nullptr) return false;
    const GpuModel* gpu = solver_detail::FindGpu(snap_, t->gpu_model);
    double gpus = 0;
    int64_t cpu = 0, mem = 0;
    for (const DemandUnit* u : units) {
      if (!UnitFitsType(*u, *t, gpu)) return false;
      gpus += GpuShare(*u);
      cpu += std::max<int64_t>(0, u->cpu_milli);
      mem += std::max<int64_t>(0, u->memory_mib);
    }
    return gpus <= t->gpu_count + 1e-9 && cpu <= int64_t(t->vcpus) * 1000 && mem <= t->memory_mib;
  }

  std::vector<WakeChoice> ChooseWakes(const NodePoolPolicy& pool) {
    std::vector<const WarmNode*> free;
    for (const WarmNode& w : snap_.warm_nodes) {
      // A spot node whose offering the cloud said was short would not
      // start: its work is launched as planned.
      if (w.offering.capacity_type == CapacityType::kSpot && !w.offering.available) continue;
      if (w.pool == pool.name && w.stopped) free.push_back(&w);
    }
    // The cheapest that fits is woken first.
    std::stable_sort(free.begin(), free.end(), [](const WarmNode* a, const WarmNode* b) {
      return a->offering.usd_per_hour < b->offering.usd_per_hour;
    });
    std::vector<WakeChoice> out;
    for (size_t li = 0; li < plan_.launches.size() && !free.empty(); ++li) {
      const LaunchAction& l = plan_.launches[li];
      if (l.pool != pool.name || l.into_warm || l.all_or_nothing || !l.wake_instance_ids.empty() ||
          l.offering.capacity_type == CapacityType::kReserved)
        continue;
      const InstanceType* type = solver_detail::FindType(types_, l.offering.instance_type);
      if (type == nullptr) continue;
      std::vector<std::vector<const DemandUnit*>> by_ordinal(size_t(l.count));
      for (const Placement& p : plan_.placements) {
        if (p.launch_index != int(li) || p.launch_ordinal < 0 || p.launch_ordinal >= l.count) continue;
        if (auto it = pending_.find(p.unit_id); it != pending_.end()) by_ordinal[size_t(p.launch_ordinal)].push_back(it->second);
      }
      const double cold_h = ReplacementWaitHours(snap_, l.offering, *type);
      for (int k = 0; k < l.count && !free.empty(); ++k) {
        const auto& units = by_ordinal[size_t(k)];
        if (units.empty()) continue;  // capacity launched ahead: nobody waits for it
        for (size_t f = 0; f < free.size(); ++f) {
          const WarmNode& w = *free[f];
          if (!UnitsAllow(units, w, l.offering) || !UnitsFit(units, w)) continue;
          const InstanceType* warm_type = solver_detail::FindType(types_, w.offering.instance_type);
          if (warm_type == nullptr) continue;
          const double saved_h = std::max(0.0, cold_h - WarmHours(w.offering.wake_latency));
          const double warm_wait_h = ReplacementWaitHours(snap_, w.offering, *warm_type);
          double value = 0, runtime_h = 0, warm_risk = 0, planned_risk = 0;
          for (const DemandUnit* u : units) {
            value += WaitCostUsdPerHour(*u, l.offering, *type) * saved_h;
            runtime_h = std::max(runtime_h, WarmHours(u->expected_runtime));
            // A spot node's expected interruptions (work lost, then waiting
            // for a replacement), on either side: a spot wake is priced at
            // the spot price and its risk.
            warm_risk += ExpectedInterruptionUsdPerHour(*u, w.offering, *warm_type, warm_wait_h);
            planned_risk += ExpectedInterruptionUsdPerHour(*u, l.offering, *type, cold_h);
          }
          // The warm node costs more than the planned one until its work
          // ends or consolidation can replace it (from min_node_age on, the
          // replacement a cold lead time later), whichever is first.
          const double dearer_h = std::min(runtime_h, WarmHours(policy_.disruption.min_node_age) + cold_h);
          const double extra =
              std::max(0.0, (w.offering.usd_per_hour + warm_risk) - (l.offering.usd_per_hour + planned_risk)) * dearer_h;
          if (saved_h <= 0 || value + 1e-12 < extra) continue;
          WakeChoice c;
          c.launch = int(li);
          c.ordinal = k;
          c.warm = &w;
          for (const DemandUnit* u : units) c.units.push_back(u->id);
          c.why = "woken from warm capacity: " + std::to_string(units.size()) + " unit(s) wait about " +
                  solver_detail::Fixed(saved_h * 3600, 0) + "s" + " less than for a cold launch (worth " +
                  FormatUsd(value, MoneyStyle::kCents) + ", price above the launch's " +
                  FormatUsd(extra, MoneyStyle::kCents) + ")";
          out.push_back(std::move(c));
          free.erase(free.begin() + long(f));
          break;
        }
      }
    }
    return out;
  }

  // Moves each chosen node out of its cold launch into a wake (one wake
  // action per warm offering), renumbering ordinals and dropping emptied
  // launches.
  void ApplyWakes(const std::vector<WakeChoice>& wakes) {
    if (wakes.empty()) return;
    std::map<std::string, int> wake_of;  // warm offering key -> launch index
    std::map<int, std::set<int>> taken;  // launch -> ordinals woken instead
    for (const WakeChoice& c : wakes) {
      const LaunchAction cold = plan_.launches[size_t(c.launch)];
      const std::string key = c.warm->offering.Key();
      auto [it, fresh] = wake_of.emplace(key, int(plan_.launches.size()));
      if (fresh) {
        LaunchAction wake;
        wake.pool = cold.pool;
        wake.offering = c.warm->offering;
        wake.fallbacks.push_back(cold.offering);
        wake.fallbacks.insert(wake.fallbacks.end(), cold.fallbacks.begin(), cold.fallbacks.end());
        wake.node_labels = cold.node_labels;
        wake.reason = c.why;
        plan_.launches.push_back(std::move(wake));
      }
      LaunchAction& wake = plan_.launches[size_t(it->second)];
      const int ordinal = wake.count++;
      wake.wake_instance_ids.push_back(c.warm->instance_id);
      wake.usd_per_hour += c.warm->offering.usd_per_hour;
      for (const std::string& id : c.units) wake.unit_ids.push_back(id);
      for (Placement& p : plan_.placements) {
        if (p.launch_index == c.launch && p.launch_ordinal == c.ordinal) {
          p.launch_index = it->second;
          p.launch_ordinal = ordinal;
        }
      }
      taken[c.launch].insert(c.ordinal);
    }
    // Renumber what stays of each cold launch, from the last launch down so
    // erasing one keeps the others' indices.
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
      const int li = it->first;
      LaunchAction& l = plan_.launches[size_t(li)];
      const int before = l.count;
      std::vector<int> new_ordinal(size_t(before), -1);
      int next = 0;
      for (int k = 0; k < before; ++k)
        if (!it->second.count(k)) new_ordinal[size_t(k)] = next++;
      std::set<std::string> moved;
      for (Placement& p : plan_.placements) {
        if (p.launch_index != li || p.launch_ordinal < 0 || p.launch_ordinal >= before) continue;
        p.launch_ordinal = new_ordinal[size_t(p.launch_ordinal)];
      }
      for (const WakeChoice& c : wakes)
        if (c.launch == li) moved.insert(c.units.begin(), c.units.end());
      std::erase_if(l.unit_ids, [&](const std::string& id) { return moved.count(id) > 0; });
      const double per_node = before > 0 ? 1.0 / before : 0;
      l.usd_per_hour *= next * per_node;
      l.expected_interruption_usd_per_hour *= next * per_node;
      l.count = next;
      if (next == 0) EraseWarmLaunch(plan_, li);
    }
  }

  void Resize(const NodePoolPolicy& pool, const std::set<std::string>& woken) {
    const WarmOfferingSet offerings = WarmOfferings(snap_, policy_, pool);
    const WarmTarget target = WarmTargetFor(snap_, policy_, pool, offerings);
    if (!target.note.empty()) plan_.notes.push_back(target.note);
    plan_.warm_targets[pool.name] = target.size;
    // An Auto Scaling group fills and drains its own warm pool (the
    // actuator sets its size).
    if (pool.actuation == Actuation::kAsg) return;
    // Each capacity type's part is kept to its own size: a spot node does
    // not stand in for on-demand work, nor the other way round.
    for (const CapacityType capacity : {CapacityType::kOnDemand, CapacityType::kSpot}) {
      const int wanted = capacity == CapacityType::kSpot ? target.spot : target.size - target.spot;
      std::vector<const WarmNode*> kept;
      for (const WarmNode& w : snap_.warm_nodes)
        if (w.pool == pool.name && w.offering.capacity_type == capacity && !woken.count(w.instance_id))
          kept.push_back(&w);
      const int have = int(kept.size());
      if (have < wanted) {
        const int parked = Park(pool, capacity, wanted - have, offerings.type);
        if (have + parked < wanted) Refill(pool, capacity, wanted - have - parked, kept, offerings.Of(capacity));
        continue;
      }
      Retire(kept, wanted);
    }
  }

  // A surplus node is kept until its volumes have cost what refilling it
  // would (its price over a cold lead time): retiring it sooner would pay
  // for the refill again when demand comes back (the rent-or-buy rule,
  // within twice the best choice made knowing the future).
  void Retire(const std::vector<const WarmNode*>& kept, int wanted) {
    const int have = int(kept.size());
    std::vector<const WarmNode*> old;
    for (const WarmNode* w : kept) {
      if (!w->stopped) continue;
      const InstanceType* t = solver_detail::FindType(types_, w->offering.instance_type);
      const double refill_usd = t != nullptr ? w->offering.usd_per_hour * ReplacementWaitHours(snap_, w->offering, *t) : 0;
      const double keep_h = w->waiting_usd_per_hour > 0 ? refill_usd / w->waiting_usd_per_hour : 0;
      const Seconds keep(int64_t(std::ceil(keep_h * 3600)));
      if (snap_.time - w->since >= std::max(keep, policy_.scaling.scale_down_stabilization)) old.push_back(w);
    }
    std::stable_sort(old.begin(), old.end(), [](const WarmNode* a, const WarmNode* b) { return a->since < b->since; });
    const int surplus = std::min(have - wanted, int(old.size()));
    for (int i = 0; i < surplus; ++i) {
      const WarmNode& w = *old[size_t(i)];
      TerminationAction t;
      t.node_id = w.instance_id;
      t.instance_id = w.instance_id;
      t.pool = w.pool;
      t.offering = w.offering;
      t.kind = TerminationKind::kEmpty;
      t.warm = true;
      t.saves_usd_per_hour = w.waiting_usd_per_hour;
      t.reason = "warm " + std::string(ToString(w.offering.capacity_type)) + " capacity above its size (" +
                 std::to_string(have) + " > " + std::to_string(wanted) + "): stopped since " + FormatRfc3339(w.since);
      plan_.terminations.push_back(std::move(t));
    }
  }

  // Whether the snapshot's node `id` can be stopped: on-demand, or spot
  // launched to stop on interruption (kWarmInterruptionTag; a one-time
  // spot node cannot be stopped).
  bool Stoppable(const std::string& id, const Offering& offering) const {
    if (offering.capacity_type == CapacityType::kOnDemand) return true;
    if (offering.capacity_type != CapacityType::kSpot) return false;
    for (const Node& n : snap_.nodes) {
      if (n.id != id && n.instance_id != id) continue;
      auto it = n.labels.find(kWarmInterruptionTag);
      return it != n.labels.end() && it->second == "stop";
    }
    return false;
  }

  // Empty nodes of the warm type and `capacity` that the plan terminates
  // (and that can be stopped) are stopped into the warm capacity instead, up
  // to `missing`: their image and driver are in place already, so no refill
  // pays a cold boot for them. Returns how many.
  int Park(const NodePoolPolicy& pool, CapacityType capacity, int missing, const std::string& type) {
    if (type.empty()) return 0;
    int parked = 0;
    for (TerminationAction& t : plan_.terminations) {
      if (parked >= missing) break;
      if (t.pool != pool.name || t.kind != TerminationKind::kEmpty || t.warm || t.park ||
          t.offering.capacity_type != capacity || t.offering.instance_type != type || !t.offering.reservation_id.empty() ||
          !Stoppable(t.node_id, t.offering))
        continue;
      t.park = true;
      t.reason += "; stopped into warm capacity instead of terminated";
      ++parked;
    }
    return parked;
  }

  void Refill(const NodePoolPolicy& pool, CapacityType capacity, int missing, const std::vector<const WarmNode*>& kept,
              const std::vector<const Offering*>& zones) {
    const std::string kind(ToString(capacity));
    if (zones.empty()) {
      plan_.notes.push_back("pool " + pool.name + ": no " + kind + " offering for its warm capacity");
      return;
    }
    std::map<std::string, int> in_zone;
    for (const WarmNode* w : kept) ++in_zone[w->offering.zone];
    std::map<std::string, int> add;  // offering key -> nodes
    for (int i = 0; i < missing; ++i) {
      const Offering* best = zones.front();
      for (const Offering* o : zones)
        if (in_zone[o->zone] < in_zone[best->zone]) best = o;
      ++in_zone[best->zone];
      ++add[best->Key()];
    }
    const double waiting = WarmWaitingUsdPerHour(snap_, pool, zones.front()->instance_type);
    for (const Offering* o : zones) {
      auto it = add.find(o->Key());
      if (it == add.end()) continue;
      LaunchAction l;
      l.pool = pool.name;
      l.offering = *o;
      l.count = it->second;
      l.into_warm = true;
      l.usd_per_hour = waiting * it->second;
      l.reason = "refill warm " + kind + " capacity (" + std::to_string(int(kept.size())) + " of " +
                 std::to_string(int(kept.size()) + missing) + "): launched, registered, then stopped" +
                 (capacity == CapacityType::kSpot ? " (a spot node the cloud stops, not ends, on interruption)" : "") +
                 "; " + FormatUsd(waiting, MoneyStyle::kCents) + "/h each while stopped";
      plan_.launches.push_back(std::move(l));
      add.erase(it);
    }
  }

  const Snapshot& snap_;
  const Policy& policy_;
  Plan& plan_;
  solver_detail::TypesByName types_;
  std::map<std::string, const DemandUnit*> pending_;
};

}  // namespace

double WarmWaitingUsdPerHour(const Snapshot& snapshot, const NodePoolPolicy& pool, const InstanceType& type) {
  double gib = 0;
  if (pool.node_template)
    for (const BlockDevice& d : pool.node_template->block_devices) gib += d.volume_size_gib;
  if (gib <= 0) gib = snapshot.default_volume_gib;
  if (pool.warm && pool.warm->state == WarmState::kHibernated) gib += double(type.memory_mib) / 1024.0;
  return gib * snapshot.volume_usd_per_gib_hour;
}

double WarmWaitingUsdPerHour(const Snapshot& snapshot, const NodePoolPolicy& pool, const std::string& instance_type) {
  for (const InstanceType& t : snapshot.instance_types)
    if (t.name == instance_type) return WarmWaitingUsdPerHour(snapshot, pool, t);
  return 0;
}

WarmTarget WarmTargetOf(const Snapshot& snapshot, const Policy& policy, const NodePoolPolicy& pool) {
  if (!pool.warm) return {};
  return WarmTargetFor(snapshot, policy, pool, WarmOfferings(snapshot, policy, pool));
}

Plan AddWarmCapacity(const Snapshot& snapshot, const Policy& policy, Plan plan) {
  const bool any = std::any_of(policy.pools.begin(), policy.pools.end(),
                               [](const NodePoolPolicy& p) { return p.warm.has_value(); });
  if (!any && snapshot.warm_nodes.empty()) return plan;
  double waiting_before = 0;
  for (const WarmNode& w : snapshot.warm_nodes) waiting_before += w.waiting_usd_per_hour;
  const double launches_before = [&] {
    double s = 0;
    for (const LaunchAction& l : plan.launches) s += l.usd_per_hour;
    return s;
  }();
  const size_t terms_before = plan.terminations.size();
  WarmPass(snapshot, policy, plan).Run();
  double launches_after = 0;
  for (const LaunchAction& l : plan.launches) launches_after += l.usd_per_hour;
  double retired = 0;
  for (size_t i = terms_before; i < plan.terminations.size(); ++i) retired += plan.terminations[i].saves_usd_per_hour;
  // A parked node still costs its volumes.
  for (const TerminationAction& t : plan.terminations) {
    const NodePoolPolicy* pool = t.park ? policy.FindPool(t.pool) : nullptr;
    if (pool != nullptr) retired -= WarmWaitingUsdPerHour(snapshot, *pool, t.offering.instance_type);
  }
  double woken_waiting = 0;
  for (const LaunchAction& l : plan.launches)
    for (const std::string& id : l.wake_instance_ids)
      for (const WarmNode& w : snapshot.warm_nodes)
        if (w.instance_id == id) woken_waiting += w.waiting_usd_per_hour;
  plan.cost_before_usd_per_hour += waiting_before;
  plan.cost_after_usd_per_hour =
      std::max(0.0, plan.cost_after_usd_per_hour + waiting_before + (launches_after - launches_before) - retired -
                        woken_waiting);
  plan.summary = SummarizePlan(plan, snapshot.pending.size());
  return plan;
}

}  // namespace gpuscaler
