#include "gpuscaler/solver/cost_model.h"
#include "planner_impl.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/model/money.h"
#include "gpuscaler/policy/schedule.h"

namespace gpuscaler::solver_detail {

Shape ShapeOf(const DemandUnit& u) {
  Shape s;
  s.gpus = std::max(0, u.gpus);
  s.milli = s.gpus > 0 ? 0 : std::clamp(u.gpu_milli, 0, 1000);
  s.mig = s.gpus == 0 && s.milli == 0 && !u.mig_profile.empty();
  s.cpu = std::max<int64_t>(0, u.cpu_milli);
  s.mem = std::max<int64_t>(0, u.memory_mib);
  return s;
}

void Planner::BuildIndex() {
  for (const auto& m : snap_.gpu_models) {
    gpu_by_name_.emplace(m.name, &m);
    if (!m.short_name.empty()) gpu_by_name_.emplace(m.short_name, &m);
  }
  for (size_t i = 0; i < snap_.instance_types.size(); ++i) type_by_name_.emplace(snap_.instance_types[i].name, int(i));
  gpu_by_type_.reserve(snap_.instance_types.size());
  for (const InstanceType& t : snap_.instance_types) gpu_by_type_.push_back(GpuOf(t));
  std::unordered_map<std::string, int> family_index;
  family_of_type_.reserve(snap_.instance_types.size());
  for (const InstanceType& t : snap_.instance_types) {
    auto [it, fresh] = family_index.emplace(t.FamilyOrName(), int(family_index.size()));
    family_of_type_.push_back(it->second);
  }
  family_count_ = int(family_index.size());
  learned_wait_h_by_type_.reserve(snap_.instance_types.size());
  for (const InstanceType& t : snap_.instance_types) {
    auto it = snap_.warmup_seconds_by_family.find(t.FamilyOrName());
    learned_wait_h_by_type_.push_back(it == snap_.warmup_seconds_by_family.end() ? -1.0 : std::max(0, it->second) / 3600.0);
  }
  for (const auto& o : snap_.offerings) zone_index_.emplace(o.zone, 0);
  for (const auto& n : snap_.nodes) zone_index_.emplace(n.offering.zone, 0);
  for (auto& [name, idx] : zone_index_) {
    idx = int(zone_names_.size());
    zone_names_.push_back(name);
  }
}

void Planner::BuildPools() {
  if (policy_.pools.empty()) {
    PoolInfo p;
    p.pol.name = "default";
    p.pol.max_nodes = kNoLimit;
    pools_.push_back(p);
  } else {
    const std::vector<ScheduleInForce> in_force = SchedulesInForce(policy_.scaling.schedules, snap_.time);
    for (const auto& pp : policy_.pools) {
      PoolInfo p;
      p.pol = pp;
      const PoolLimits limits = PoolLimitsAt(pp, in_force);
      if (!limits.schedules.empty()) {
        p.pol.min_nodes = limits.min_nodes;
        p.pol.max_nodes = limits.max_nodes;
        std::string names;
        for (const std::string& n : limits.schedules) names += (names.empty() ? "" : ", ") + n;
        notes_.push_back("pool " + pp.name + ": schedule " + names + " in force, min_nodes " +
                         std::to_string(limits.min_nodes) + ", max_nodes " + std::to_string(limits.max_nodes));
      }
      pools_.push_back(p);
    }
  }
  global_budget_ = HourlyAllowanceUsd(policy_.budget.global, snap_.month_to_date_usd, snap_.hours_left_in_month);
  global_budget_hard_ = policy_.budget.global.hard;
  any_hard_budget_ = global_budget_hard_ && global_budget_ < kInf;
  for (auto& p : pools_) {
    auto it = policy_.budget.per_pool.find(p.pol.name);
    if (it != policy_.budget.per_pool.end()) {
      p.budget = HourlyAllowanceUsd(it->second, ValueOr(snap_.month_to_date_usd_by_pool, p.pol.name, 0.0),
                                    snap_.hours_left_in_month);
      p.budget_hard = it->second.hard;
    }
    if (p.budget_hard && p.budget < kInf) any_hard_budget_ = true;
    p.disrupt_allow =
        policy_.disruption.max_disrupted_per_interval - ValueOr(snap_.recently_disrupted, p.pol.name, 0);
  }
  for (const auto& n : snap_.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    const double price = MarginalUsdPerHour(n.offering);
    base_cost_ += price;
    for (auto& p : pools_) {
      if (p.pol.name == n.pool) {
        p.count++;
        p.cost += price;
      }
    }
  }
}

bool Planner::PoolAllowsOffering(const NodePoolPolicy& p, const Offering& o, const InstanceType& t) const {
  if (!p.AllowsType(t, GpuOf(t))) return false;
  if (!p.AllowsLocation(o)) return false;
  // Reserved slots belong to the pools that select their reservation,
  // whatever capacity types the pool buys beyond them.
  if (o.capacity_type == CapacityType::kReserved) {
    const int r = ReservationOf(o);
    return r >= 0 && p.SelectsReservation(snap_.reservations[size_t(r)]);
  }
  if (std::find(p.capacity_types.begin(), p.capacity_types.end(), o.capacity_type) == p.capacity_types.end()) return false;
  return true;
}

void Planner::BuildOptions() {
  const double frac = policy_.spot.max_price_fraction_of_on_demand;
  for (size_t p = 0; p < pools_.size(); ++p) {
    for (size_t i = 0; i < snap_.offerings.size(); ++i) {
      const Offering& o = snap_.offerings[i];
      auto t = type_by_name_.find(o.instance_type);
      if (t == type_by_name_.end()) continue;
      if (!PoolAllowsOffering(pools_[p].pol, o, snap_.instance_types[t->second])) continue;
      Option op;
      op.offering = int(i);
      op.pool = int(p);
      op.type = t->second;
      SetPrices(o, op);
      // A reservation that is not open (before its start, or a Capacity
      // Block in its last half hour) takes no launch.
      if (o.capacity_type == CapacityType::kReserved) {
        op.reservation = ReservationOf(o);
        if (!snap_.reservations[size_t(op.reservation)].OpenAt(snap_.time)) continue;
      }
      // A pool in its reclaim cooldown counts as without capacity for new
      // nodes (the snapshot's list, so a replay of it plans the same).
      op.reclaimed = op.spot && o.available && !snap_.reclaimed_spot_pools.empty() &&
                     Contains(snap_.reclaimed_spot_pools, o.Key());
      op.unavailable = !o.available || op.reclaimed;
      op.over_ceiling = SpotOverCeiling(o, frac, policy_.spot.max_interruptions_per_hour);
      op.usable = !op.unavailable && !op.over_ceiling;
      options_.push_back(op);
    }
  }
  options_by_price_.resize(options_.size());
  for (size_t i = 0; i < options_.size(); ++i) options_by_price_[i] = int(i);
  std::stable_sort(options_by_price_.begin(), options_by_price_.end(),
                   [&](int a, int b) { return options_[a].price < options_[b].price; });
  pool_options_by_price_.assign(pools_.size(), {});
  for (int o : options_by_price_) pool_options_by_price_[options_[o].pool].push_back(o);
}

void Planner::BuildClasses() {
  auto add = [&](const std::string& name) {
    auto [it, inserted] = class_index_.emplace(name, int(classes_.size()));
    if (inserted) {
      ClassInfo c;
      c.name = name;
      c.pol = policy_.FindClass(name);
      classes_.push_back(c);
    }
    return it->second;
  };
  for (const Group& g : groups_) add(g.rep->workload_class);
  for (const auto& n : snap_.nodes)
    for (const auto& u : n.running) add(u.workload_class);
  for (const auto& b : snap_.scale_down_blocked_classes) classes_[add(b)].blocked = true;
  for (const auto& c : snap_.spot_paused_classes) {
    ClassInfo& ci = classes_[add(c)];
    ci.spot_paused = ci.capacity_paused = true;
  }
  for (const auto& c : snap_.spot_budget_spent_classes) {
    ClassInfo& ci = classes_[add(c)];
    ci.spot_paused = ci.lost_work_budget_spent = true;
  }
  for (const auto& [c, gpus] : snap_.spot_floor_credit_gpus) classes_[add(c)].floor_credit = gpus;
  const size_t nc = classes_.size();
  class_total_gpu_.assign(nc, 0);
  class_spot_gpu_.assign(nc, 0);
  existing_zone_gpu_.assign(nc, std::vector<double>(zone_names_.size(), 0));
  const bool pool_capped = policy_.spot.max_pool_share < 1.0 - kEps;
  existing_pool_gpu_.assign(pool_capped ? nc : 0, std::vector<double>(size_t(SpotPoolCount()), 0));
  for (const auto& n : snap_.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    const int z = zone_index_.at(n.offering.zone);
    NodeOffer where;
    where.spot = n.offering.capacity_type == CapacityType::kSpot;
    where.zone = z;
    if (auto t = type_by_name_.find(n.offering.instance_type); t != type_by_name_.end()) where.type = t->second;
    const int spot_pool = pool_capped ? SpotPoolOf(where) : -1;
    for (const auto& u : n.running) {
      const int c = class_index_.at(u.workload_class);
      const double w = GpuShare(u);
      class_total_gpu_[c] += w;
      if (where.spot) class_spot_gpu_[c] += w;
      existing_zone_gpu_[c][z] += w;
      if (spot_pool >= 0) existing_pool_gpu_[c][spot_pool] += w;
      classes_[c].largest_unit = std::max(classes_[c].largest_unit, w);
    }
  }
  max_unit_.assign(nc, 0);
  for (const Group& g : groups_) {
    const int c = class_index_.at(g.rep->workload_class);
    class_total_gpu_[c] += GpuShare(*g.rep) * double(g.units.size());
    max_unit_[c] = std::max(max_unit_[c], GpuShare(*g.rep));
    classes_[c].largest_unit = std::max(classes_[c].largest_unit, GpuShare(*g.rep));
  }
  SetAllowances(class_total_gpu_);
}

void Planner::SetAllowances(const std::vector<double>& totals) {
  constexpr double kCreditEps = 1e-6;  // GPUs: a credit within this is none
  for (size_t c = 0; c < classes_.size(); ++c) {
    ClassInfo& ci = classes_[c];
    const double spot_share = ci.pol ? std::clamp(ci.pol->max_spot_share, 0.0, 1.0) : 1.0;
    const bool floored = spot_share > 0 && spot_share < 1.0 - kEps;
    // Error diffusion: a whole unit either way by the credit's sign, so the
    // share of a class of one replica averages to the floor too (a shift by
    // the credit itself puts a lone replica of a 0.7 class on spot only once
    // the credit reaches 0.3 GPUs, and holds such a class far above it).
    if (floored && ci.floor_credit > kCreditEps) ci.floor_shift = ci.largest_unit;
    else if (floored && ci.floor_credit < -kCreditEps) ci.floor_shift = -ci.largest_unit;
    else ci.floor_shift = 0;
    ci.spot_allow = spot_share < 1.0 - kEps ? spot_share * totals[c] - class_spot_gpu_[c] + ci.floor_shift : kInf;
    double zone_share = ci.pol ? std::clamp(ci.pol->max_zone_share, 0.0, 1.0) : 1.0;
    const int min_zones = ci.pol ? ci.pol->min_zones : 1;
    if (min_zones > 1) zone_share = std::min(zone_share, 1.0 / min_zones);
    ci.zone_limited = zone_share < 1.0 - kEps;
    ci.zone_allow.clear();
    if (ci.zone_limited) {
      const double cap = std::max(zone_share * totals[c], max_unit_[c]);
      ci.zone_allow.resize(zone_names_.size());
      for (size_t z = 0; z < zone_names_.size(); ++z) ci.zone_allow[z] = cap - existing_zone_gpu_[c][z];
    }
    // A pool already over the cap (work placed before it, or before the
    // class grew) keeps its nodes: its allowance is negative, so only new
    // placement there is refused.
    ci.pool_limited = !existing_pool_gpu_.empty();
    ci.pool_allow.clear();
    if (ci.pool_limited) {
      const double cap = std::max(policy_.spot.max_pool_share * totals[c], max_unit_[c]);
      ci.pool_allow.resize(existing_pool_gpu_[c].size());
      for (size_t p = 0; p < ci.pool_allow.size(); ++p) ci.pool_allow[p] = cap - existing_pool_gpu_[c][p];
    }
  }
}

std::string Planner::SpotPauseWhy(int cls) const {
  const ClassInfo& c = classes_[cls];
  if (c.capacity_paused && c.lost_work_budget_spent) return " after a capacity error, lost-work budget spent";
  if (c.lost_work_budget_spent) return ", lost-work budget spent";
  return " after a capacity error";
}

bool Planner::InterruptibleByPolicy(const DemandUnit& u, int cls) const {
  const WorkloadClassPolicy* pol = classes_[cls].pol;
  return u.interruptible && (pol == nullptr || pol->interruptible);
}

const GpuModel* Planner::GpuOf(const InstanceType& t) const {
  // The snapshot's own types (every caller's, once the index is built) by
  // position: this runs in the inner loops of placement and consolidation.
  const std::vector<InstanceType>& types = snap_.instance_types;
  if (gpu_by_type_.size() == types.size() && !types.empty() &&
      std::less_equal<const InstanceType*>()(types.data(), &t) &&
      std::less<const InstanceType*>()(&t, types.data() + types.size())) {
    return gpu_by_type_[static_cast<size_t>(&t - types.data())];
  }
  auto it = gpu_by_name_.find(t.gpu_model);
  return it == gpu_by_name_.end() ? nullptr : it->second;
}

int Planner::MigIndex(const DemandUnit& u, const InstanceType& t) const {
  const GpuModel* m = GpuOf(t);
  if (m == nullptr) return -1;
  const auto& profiles = m->mig_profiles;
  for (size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].name == u.mig_profile) return int(i);
  return -1;
}

bool Planner::UnitAllowed(const DemandUnit& u, int cls, int pool, const Offering& off, int type, int zone,
                          int* mig_idx) const {
  (void)zone;
  if (type < 0) return false;
  if (pool >= 0) {
    const ClassInfo& c = classes_[cls];
    if (c.pol && !c.pol->pools.empty() && !Contains(c.pol->pools, pools_[pool].pol.name)) return false;
    if (!u.pool.empty() && u.pool != pools_[pool].pol.name) return false;
  } else {
    const ClassInfo& c = classes_[cls];
    if (c.pol && !c.pol->pools.empty()) return false;
    if (!u.pool.empty()) return false;
  }
  if (!u.zones.empty() && !Contains(u.zones, off.zone)) return false;
  if (!u.instance_types.empty() && !Contains(u.instance_types, off.instance_type)) return false;
  if (u.capacity_type && *u.capacity_type != off.capacity_type) return false;
  if (off.capacity_type == CapacityType::kSpot && !MaySpot(u, cls)) return false;
  if (!FitsBeforeRetirement(u, off)) return false;
  return UnitFitsType(u, snap_.instance_types[type], gpu_by_type_[type], mig_idx);
}

void Planner::SetPrices(const Offering& o, NodeOffer& n) const {
  n.zone = zone_index_.at(o.zone);
  n.spot = o.capacity_type == CapacityType::kSpot;
  n.price = MarginalUsdPerHour(o);
  n.od = o.on_demand_usd_per_hour > 0 ? o.on_demand_usd_per_hour : o.usd_per_hour;
  n.ih = n.spot ? std::max(0.0, o.interruptions_per_hour) : 0;
  n.co_reclaim = std::clamp(o.co_reclaim_share, 0.0, 1.0);
  // ReplacementWaitHours, without its per-call lookups: this runs for every
  // existing node on each fill.
  n.wait_h = 0;
  if (n.spot) {
    const double learned = n.type >= 0 ? learned_wait_h_by_type_[n.type] : -1;
    n.wait_h = learned >= 0 ? learned : double(std::max<int64_t>(0, o.launch_latency.count())) / 3600.0;
  }
}

void Planner::SetCapacity(int type, Bin& b) const {
  const InstanceType& t = snap_.instance_types[type];
  b.gpu = gpu_by_type_[type];
  b.free_cpu = int64_t(t.vcpus) * 1000;
  b.free_mem = t.memory_mib;
  b.free_whole = t.gpu_count;
}

void Planner::InitBin(Bin& b, int option) const {
  const Option& o = options_[option];
  static_cast<NodeOffer&>(b) = o;
  b.option = option;
  b.node = -1;
  SetCapacity(o.type, b);
  b.mult = 1;
  b.accepts = true;
  b.removed = false;
  b.receiver = false;
  b.parts.clear();
  b.content.clear();
  b.moved.clear();
  b.risk = 0;
}

int Planner::FitOnEmpty(const Group& g, int type) const {
  if (type < 0) return 0;
  const InstanceType& t = snap_.instance_types[type];
  int mig = -1;
  if (!UnitFitsType(*g.rep, t, GpuOf(t), &mig)) return 0;
  Bin b;
  SetCapacity(type, b);
  const bool any_resource = g.shape.gpus || g.shape.milli || g.shape.mig || g.shape.cpu || g.shape.mem;
  // A unit asking for nothing still takes a slot: cap it so bins stay finite.
  return Take(b, g.shape, mig, any_resource ? 1 << 20 : 110);
}

double Planner::Risk(const Group& g, const NodeOffer& b) const {
  if (!b.spot || b.ih <= 0 || b.type < 0) return 0;
  return b.ih * (g.loss_h + b.wait_h) * b.od * ShareOfNode(g.gpu_w, g.shape.cpu, snap_.instance_types[b.type]) *
         GangInterruptionReach(g.reach, b.co_reclaim);
}

void Planner::GroupUnits() {
  const auto& pend = snap_.pending;
  unit_group_.assign(pend.size(), -1);
  // Group ids follow first appearance, so the hash map never decides order.
  std::unordered_map<size_t, std::vector<int>> by_hash;
  for (size_t i = 0; i < pend.size(); ++i) {
    auto& bucket = by_hash[DemandKeyHash(pend[i])];
    int found = -1;
    for (int g : bucket)
      if (SameDemand(*groups_[g].rep, pend[i])) found = g;
    if (found < 0) {
      found = int(groups_.size());
      Group g;
      g.rep = &pend[i];
      groups_.push_back(std::move(g));
      bucket.push_back(found);
    }
    groups_[found].units.push_back(int(i));
    unit_group_[i] = found;
  }
}

void Planner::BuildGroups() {
  const size_t nt = snap_.instance_types.size();
  opt_groups_.assign(options_.size(), {});
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    const DemandUnit& u = *g.rep;
    g.index = int(gi);
    g.cls = class_index_.at(u.workload_class);
    g.shape = ShapeOf(u);
    g.gpu_w = GpuShare(u);
    g.loss_h = LostHoursPerInterruption(u);
    g.reach = InterruptionReach(u);
    const ClassInfo& c = classes_[g.cls];
    g.interruptible = MaySpot(u, g.cls);
    g.spot_paused = c.spot_paused && InterruptibleByPolicy(u, g.cls) && !PinnedToSpot(u);
    g.priority = u.priority;
    g.fit_by_type.assign(nt, 0);
    g.mig_by_type.assign(nt, -1);
    g.type_pin_ok.assign(nt, 1);
    for (size_t t = 0; t < nt; ++t) {
      g.fit_by_type[t] = FitOnEmpty(g, int(t));
      if (g.shape.mig) g.mig_by_type[t] = MigIndex(u, snap_.instance_types[t]);
      if (!u.instance_types.empty()) g.type_pin_ok[t] = Contains(u.instance_types, snap_.instance_types[t].name);
    }
    g.pool_ok.assign(pools_.size(), 1);
    for (size_t p = 0; p < pools_.size(); ++p) {
      if (c.pol && !c.pol->pools.empty() && !Contains(c.pol->pools, pools_[p].pol.name)) g.pool_ok[p] = 0;
      if (!u.pool.empty() && u.pool != pools_[p].pol.name) g.pool_ok[p] = 0;
    }
    g.zone_ok.assign(zone_names_.size(), 1);
    if (!u.zones.empty())
      for (size_t z = 0; z < zone_names_.size(); ++z) g.zone_ok[z] = Contains(u.zones, zone_names_[z]);
    g.cand_mask.assign(options_.size(), 0);
    g.lb = kInf;
    // Deadline work held for spot (solver/deadline_hold.h) is ahead of its
    // line: a reclaim costs it one interruption's loss, which its slack holds.
    const bool rides_out_reclaims = u.deadline && u.capacity_type == CapacityType::kSpot;
    for (size_t oi = 0; oi < options_.size(); ++oi) {
      const Option& o = options_[oi];
      const bool open = o.usable || (rides_out_reclaims && o.reclaimed && !o.over_ceiling);
      if (!open || !g.pool_ok[o.pool] || !g.zone_ok[o.zone] || !g.type_pin_ok[o.type]) continue;
      if (o.spot && !g.interruptible) continue;
      if (u.capacity_type && (*u.capacity_type == CapacityType::kSpot) != o.spot) continue;
      if (o.reservation >= 0 && !FitsBeforeRetirement(u, snap_.offerings[size_t(o.offering)])) continue;
      const int k = g.fit_by_type[o.type];
      if (k <= 0) continue;
      g.cands.push_back(int(oi));
      g.cand_mask[oi] = 1;
      opt_groups_[oi].push_back(int(gi));
      g.lb = std::min(g.lb, o.price / k + Risk(g, o));
    }
  }
}

void Planner::BuildStaticReasons() {
  for (Group& g : groups_) {
    if (!g.cands.empty()) continue;
    const DemandUnit& u = *g.rep;
    g.has_static_reason = true;
    bool any_pool = false;
    for (char ok : g.pool_ok) any_pool = any_pool || ok;
    if (!any_pool) {
      g.static_reason = UnplacedReason::kNoPool;
      g.detail = "no node pool admits class " + u.workload_class + (u.pool.empty() ? "" : " in pool " + u.pool);
      continue;
    }
    bool fits = false, unavailable_only = false, ceiling = false, paused = false;
    for (const Option& o : options_) {
      if (!g.pool_ok[o.pool] || !g.zone_ok[o.zone] || !g.type_pin_ok[o.type]) continue;
      if (u.capacity_type && (*u.capacity_type == CapacityType::kSpot) != o.spot) continue;
      if (g.fit_by_type[o.type] <= 0) continue;
      if (o.spot && !g.interruptible) {
        paused = paused || g.spot_paused;
        continue;
      }
      fits = true;
      if (o.unavailable && !o.over_ceiling) unavailable_only = true;
      if (o.over_ceiling) ceiling = true;
    }
    if (!fits && paused) {
      g.static_reason = UnplacedReason::kCapacityUnavailable;
      g.detail = "spot paused" + SpotPauseWhy(g.cls) + " for class " + u.workload_class +
                 ", and no on-demand offering fits";
    } else if (!fits) {
      g.static_reason = UnplacedReason::kNoOfferingFits;
      g.detail = "no allowed instance type holds " + std::to_string(u.gpus) + " GPU(s), " +
                 Fixed(u.cpu_milli / 1000.0, 1) + " vCPU, " + std::to_string(u.memory_mib) + " MiB" +
                 (u.mig_profile.empty() ? "" : ", MIG " + u.mig_profile) +
                 (u.gpu_milli > 0 ? ", " + std::to_string(u.gpu_milli) + " milli-GPU" : "");
    } else if (ceiling && !unavailable_only) {
      g.static_reason = UnplacedReason::kSpotPriceCeiling;
      g.detail = "only spot fits and every spot offer is above the price or interruption ceiling";
    } else {
      g.static_reason = UnplacedReason::kCapacityUnavailable;
      g.detail = "every offering that fits is marked unavailable";
    }
  }
}

void Planner::BuildTeams() {
  for (const auto& [name, cap] : policy_.budget.per_team) {
    TeamInfo t;
    t.name = name;
    t.allowance_usd = HourlyAllowanceUsd(cap, ValueOr(snap_.month_to_date_usd_by_team, name, 0.0), snap_.hours_left_in_month);
    t.hard = cap.hard;
    team_index_.emplace(name, int(teams_.size()));
    teams_.push_back(std::move(t));
    if (cap.hard && teams_.back().allowance_usd < kInf) any_hard_budget_ = true;
  }
  if (teams_.empty()) return;
  for (Group& g : groups_) {
    auto it = team_index_.find(TeamOf(*g.rep, policy_));
    if (it != team_index_.end()) g.team = it->second;
  }
  // What the running work costs each team now: its share of each node's
  // price by the money rule, which an oversubscribed node splits in
  // proportion to the GPUs held.
  std::vector<GpuHolding> holdings;
  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    const Node& n = snap_.nodes[i];
    if (n.state == NodeState::kTerminating) continue;
    holdings.clear();
    for (const DemandUnit& u : n.running) holdings.push_back({u.workload_class, TeamOf(u, policy_), GpuShare(u)});
    const Bin& b = existing_[i];
    const int gpus = b.type < 0 ? 0 : snap_.instance_types[b.type].gpu_count;
    const NodePriceSplit split = SplitNodePrice(b.price, gpus, holdings);
    for (size_t k = 0; k < holdings.size(); ++k) {
      auto it = team_index_.find(TeamOf(n.running[k], policy_));
      if (it != team_index_.end()) teams_[it->second].running_usd += split.usd[k];
    }
  }
}

void Planner::InitExisting(int node, Bin& b) const {
  const Node& n = snap_.nodes[node];
  b = Bin{};
  b.node = node;
  auto t = type_by_name_.find(n.offering.instance_type);
  b.type = t == type_by_name_.end() ? -1 : t->second;
  b.pool = -1;
  for (size_t p = 0; p < pools_.size(); ++p)
    if (pools_[p].pol.name == n.pool) b.pool = int(p);
  SetPrices(n.offering, b);
  b.accepts = n.AcceptsWork() && b.type >= 0;
  // The rest of a reclaimed pool is likely to follow: no new work there.
  if (b.spot && !snap_.reclaimed_spot_pools.empty() && Contains(snap_.reclaimed_spot_pools, n.offering.Key()))
    b.accepts = false;
  if (b.type < 0) return;
  const InstanceType& it = snap_.instance_types[b.type];
  SetCapacity(b.type, b);
  // Running work takes its resources first; MIG and whole GPUs before fractions.
  std::vector<int> order(n.running.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = int(k);
  auto rank = [&](const DemandUnit& u) { return u.gpus > 0 ? 0 : !u.mig_profile.empty() ? 1 : u.gpu_milli > 0 ? 2 : 3; };
  if (order.size() > 1)  // stable_sort allocates a buffer even for one
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int c) { return rank(n.running[a]) < rank(n.running[c]); });
  for (int k : order) {
    const DemandUnit& u = n.running[k];
    const Shape s = ShapeOf(u);
    int mig = s.mig ? MigIndex(u, it) : -1;
    if (Take(b, s, mig, 1) == 1) continue;
    // Over-committed input: take what is asked regardless, so nothing else lands here.
    b.free_cpu -= s.cpu;
    b.free_mem -= s.mem;
    if (s.gpus > 0) b.free_whole -= s.gpus;
    else if (s.milli > 0 || s.mig) b.free_whole -= 1;
    if (b.free_whole < 0) b.free_whole = 0;
  }
}

void Planner::BuildExisting() {
  if (existing_built_) {
    RestoreFilled({});
    return;
  }
  existing_.assign(snap_.nodes.size(), Bin{});
  existing_order_.clear();
  for (size_t i = 0; i < snap_.nodes.size(); ++i) InitExisting(int(i), existing_[i]);
  for (size_t i = 0; i < existing_.size(); ++i)
    if (existing_[i].accepts) existing_order_.push_back(int(i));
  // On-demand first (no interruption risk for what lands there), then the
  // fullest nodes, so emptier ones stay free for consolidation.
  std::stable_sort(existing_order_.begin(), existing_order_.end(), [&](int a, int c) {
    const Bin& x = existing_[a];
    const Bin& y = existing_[c];
    if (x.spot != y.spot) return !x.spot;
    if (x.free_whole != y.free_whole) return x.free_whole < y.free_whole;
    return a < c;
  });
  existing_initial_ = existing_;
  running_class_.assign(snap_.nodes.size(), {});
  for (size_t i = 0; i < snap_.nodes.size(); ++i)
    for (const DemandUnit& u : snap_.nodes[i].running) running_class_[i].push_back(class_index_.at(u.workload_class));
  existing_built_ = true;
  IndexExistingRoom();
}

}  // namespace gpuscaler::solver_detail
