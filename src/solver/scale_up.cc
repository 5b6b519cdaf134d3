#include "packing.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

namespace {

// A pool's node slots are scarce once a plan takes it past this share of
// its max_nodes: the nodes bought from there on decide how much work the
// pool holds when it reaches the cap, so they must be the ones that hold
// the most. Pricing slots only at the cap itself comes too late (the small
// nodes that fill it are already up, running work); pricing them from far
// below it buys larger nodes for fleets that never get near their cap.
constexpr double kScarceSlotShare = 0.7;
}  // namespace

int Take(Bin& b, const Shape& s, int mig_idx, int max) {
  if (max <= 0) return 0;
  int64_t lim = max;
  if (s.cpu > 0) lim = std::min<int64_t>(lim, std::max<int64_t>(0, b.free_cpu) / s.cpu);
  if (s.mem > 0) lim = std::min<int64_t>(lim, std::max<int64_t>(0, b.free_mem) / s.mem);
  if (lim <= 0) return 0;
  int64_t placed = 0;
  if (s.gpus > 0) {
    lim = std::min<int64_t>(lim, std::max(0, b.free_whole) / s.gpus);
    b.free_whole -= static_cast<int>(lim) * s.gpus;
    placed = lim;
  } else if (s.milli > 0) {
    for (auto& p : b.parts) {
      if (placed >= lim) break;
      if (p.mig) continue;
      const int64_t t = std::min<int64_t>((1000 - p.used_milli) / s.milli, lim - placed);
      p.used_milli += static_cast<int>(t) * s.milli;
      placed += t;
    }
    const int per = 1000 / s.milli;
    while (placed < lim && b.free_whole > 0) {
      GpuPart p;
      const int64_t t = std::min<int64_t>(per, lim - placed);
      p.used_milli = static_cast<int>(t) * s.milli;
      b.parts.push_back(std::move(p));
      --b.free_whole;
      placed += t;
    }
  } else if (s.mig) {
    if (mig_idx < 0 || b.gpu == nullptr) return 0;
    for (auto& p : b.parts) {
      if (placed >= lim) break;
      if (!p.mig) continue;
      while (placed < lim && p.layout.TryAdd(*b.gpu, mig_idx)) ++placed;
    }
    while (placed < lim && b.free_whole > 0) {
      GpuPart p;
      p.mig = true;
      int64_t t = 0;
      while (placed + t < lim && p.layout.TryAdd(*b.gpu, mig_idx)) ++t;
      if (t == 0) break;
      placed += t;
      --b.free_whole;
      b.parts.push_back(std::move(p));
    }
  } else {
    placed = lim;
  }
  b.free_cpu -= placed * s.cpu;
  b.free_mem -= placed * s.mem;
  return static_cast<int>(placed);
}

int Planner::Limit(const Group& g, const NodeOffer& b, const Allowances& a) const {
  if (b.spot && a.KeptOffSpot(g.index)) return 0;
  if (g.gpu_w <= 0) return kNoLimit;
  double allow = kInf;
  if (b.spot) allow = a.spot[g.cls];
  const ClassInfo& c = classes_[g.cls];
  if (c.zone_limited && b.zone >= 0) allow = std::min(allow, a.zone[g.cls][b.zone]);
  if (c.pool_limited) {
    if (const int p = SpotPoolOf(b); p >= 0) allow = std::min(allow, a.spot_pool[g.cls][p]);
  }
  int limit = kNoLimit;
  if (allow < kInf) limit = allow < g.gpu_w - kEps ? 0 : int(std::min(1e9, std::floor((allow + 1e-7) / g.gpu_w)));
  if (g.team >= 0 && a.team_usd[g.team] < kInf) {
    const double charge = g.gpu_w * PricePerGpu(b);
    if (charge > 0) limit = std::min<double>(limit, std::max(0.0, std::floor((a.team_usd[g.team] + 1e-9) / charge)));
  }
  return limit;
}

void Planner::Consume(const Group& g, const NodeOffer& b, double count, Allowances& a) const {
  if (g.gpu_w <= 0) return;
  if (b.spot && a.spot[g.cls] < kInf) a.spot[g.cls] -= count * g.gpu_w;
  if (classes_[g.cls].zone_limited && b.zone >= 0) a.zone[g.cls][b.zone] -= count * g.gpu_w;
  if (classes_[g.cls].pool_limited) {
    if (const int p = SpotPoolOf(b); p >= 0) a.spot_pool[g.cls][p] -= count * g.gpu_w;
  }
  if (g.team >= 0 && a.team_usd[g.team] < kInf) a.team_usd[g.team] -= count * g.gpu_w * PricePerGpu(b);
}

bool Planner::Within(const Group& g, const NodeOffer& b, const Allowances& a, double slack) const {
  if (b.spot && a.KeptOffSpot(g.index)) return false;
  if (g.gpu_w <= 0) return true;
  if (b.spot && a.spot[g.cls] < -slack) return false;
  if (classes_[g.cls].zone_limited && b.zone >= 0 && a.zone[g.cls][b.zone] < -slack) return false;
  if (classes_[g.cls].pool_limited) {
    if (const int p = SpotPoolOf(b); p >= 0 && a.spot_pool[g.cls][p] < -slack) return false;
  }
  return g.team < 0 || a.team_usd[g.team] >= -slack;
}

int Planner::MaxOpen(const Option& o, const State& st) const {
  int64_t m = kNoLimit;
  const PoolInfo& p = pools_[o.pool];
  m = std::min<int64_t>(m, int64_t(p.pol.max_nodes) - st.pool_count[o.pool]);
  m = std::min<int64_t>(m, int64_t(policy_.scaling.max_nodes_added_per_tick) - st.added);
  m = std::min<int64_t>(m, ReservedRoom(o, st));
  if (o.price > 0) {
    if (global_budget_hard_ && global_budget_ < kInf)
      m = std::min<int64_t>(m, int64_t(std::floor((global_budget_ - st.cost) / o.price + 1e-9)));
    if (p.budget_hard && p.budget < kInf)
      m = std::min<int64_t>(m, int64_t(std::floor((p.budget - st.pool_cost[o.pool]) / o.price + 1e-9)));
  }
  return int(std::max<int64_t>(0, m));
}

int Planner::BlockOf(const Group& g, int option, const State& st) const {
  const Option& o = options_[option];
  const PoolInfo& p = pools_[o.pool];
  if (o.price > 0 && ((global_budget_hard_ && st.cost + o.price > global_budget_ + kEps) ||
                      (p.budget_hard && st.pool_cost[o.pool] + o.price > p.budget + kEps)))
    return kBlockBudget;
  if (g.team >= 0 && o.price > 0 && st.allow.team_usd[g.team] < g.gpu_w * PricePerGpu(o) - kEps) return kBlockTeamBudget;
  if (st.added >= policy_.scaling.max_nodes_added_per_tick) return kBlockTick;
  if (st.pool_count[o.pool] >= p.pol.max_nodes) return kBlockPoolMax;
  if (ReservedRoom(o, st) < 1) return kBlockReservationFull;
  if (g.gpu_w > 0 && o.spot && st.allow.spot[g.cls] < g.gpu_w - kEps) return kBlockSpot;
  if (g.gpu_w > 0 && classes_[g.cls].pool_limited) {
    if (const int sp = SpotPoolOf(o); sp >= 0 && st.allow.spot_pool[g.cls][sp] < g.gpu_w - kEps) return kBlockSpot;
  }
  // Limit's zone term alone (the spot share and the team's cap are checked
  // above): it allows no unit exactly when the zone has less than one left.
  if (g.gpu_w > 0 && classes_[g.cls].zone_limited && o.zone >= 0 &&
      st.allow.zone[g.cls][o.zone] < g.gpu_w - kEps)
    return kBlockZone;
  return kBlockNone;
}

std::vector<int> Planner::ExistingFillOrder(const std::vector<double>& unit_value, bool cpu_per_vcpu) const {
  std::vector<int> order(groups_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  // Free room goes first to the work that would cost the most elsewhere per
  // GPU it takes (per unit for CPU-only work, which comes after all GPU work
  // and whose binding resource may be vCPU or memory): units with dear
  // alternatives (pins, scarce models) before units that a cheap new node
  // holds as well; on a tie, the units with fewer offerings that hold them.
  // A group that no new node can hold has an infinite value and goes first.
  auto density = [&](int g) {
    const Group& x = groups_[g];
    if (x.gpu_w > 0) return unit_value[g] / x.gpu_w;
    return cpu_per_vcpu && x.shape.cpu > 0 ? unit_value[g] / double(x.shape.cpu) : unit_value[g];
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if ((x.gpu_w > 0) != (y.gpu_w > 0)) return x.gpu_w > 0;
    const double da = density(a), db = density(b);
    if (std::abs(da - db) > 1e-9 * std::max(1.0, std::abs(da)) && !(std::isinf(da) && std::isinf(db))) return da > db;
    if (x.cands.size() != y.cands.size()) return x.cands.size() < y.cands.size();
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.gpu_w != y.gpu_w) return x.gpu_w > y.gpu_w;
    return x.shape.cpu > y.shape.cpu;
  });
  return order;
}

std::vector<int> Planner::PriorityFillOrder() const {
  std::vector<int> order(groups_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.gpu_w != y.gpu_w) return x.gpu_w > y.gpu_w;
    return x.shape.cpu > y.shape.cpu;
  });
  return order;
}

bool Planner::MayUseExisting(const Group& g, int node) const {
  const Bin& b = existing_initial_[node];
  if (Contains(g.rep->avoid_nodes, snap_.nodes[node].id)) return false;
  if (b.type < 0 || !g.zone_ok[b.zone] || !g.type_pin_ok[b.type] || g.fit_by_type[b.type] == 0) return false;
  if (b.pool >= 0 ? !g.pool_ok[b.pool] : (!g.rep->pool.empty() || (classes_[g.cls].pol && !classes_[g.cls].pol->pools.empty())))
    return false;
  if (b.spot && !g.interruptible) return false;
  if (g.rep->capacity_type && (*g.rep->capacity_type == CapacityType::kSpot) != b.spot) return false;
  return true;
}

void Planner::PlaceOnExisting(State& st, const std::vector<int>& order) {
  Packing packing(*this, st, /*with_existing=*/true);
  for (int gi : order) {
    for (int bi : existing_room_for_group_[gi]) {
      if (st.rem[gi] == 0) break;
      st.rem[gi] -= packing.Place(existing_[bi], gi, st.rem[gi]);
    }
  }
}

std::vector<double> Planner::RealizedUnitValue(const State& st) const {
  std::vector<double> value(groups_.size(), 0.0);
  std::vector<double> units(groups_.size(), 0.0);
  for (const Bin& b : st.bins) {
    double gpu_load = 0, cpu_load = 0;
    for (auto [g, t] : b.content) {
      gpu_load += t * groups_[g].gpu_w;
      cpu_load += t * double(groups_[g].shape.cpu);
    }
    for (auto [g, t] : b.content) {
      const Group& grp = groups_[g];
      // A unit's part of its node's price: by GPUs on a node with GPU work,
      // else by vCPU; plus its own risk.
      const double part = gpu_load > 0 ? t * grp.gpu_w / gpu_load : cpu_load > 0 ? t * double(grp.shape.cpu) / cpu_load : 0;
      value[g] += b.mult * (b.price * part + t * Risk(grp, b));
      units[g] += double(b.mult) * t;
    }
  }
  for (size_t g = 0; g < groups_.size(); ++g)
    value[g] = units[g] > 0 ? std::max(groups_[g].lb, value[g] / units[g]) : groups_[g].lb;
  return value;
}

std::vector<int> Planner::UnplacedByPriority(const State& st) const {
  std::vector<std::pair<int, int>> left;  // (priority, units)
  for (size_t g = 0; g < groups_.size(); ++g) {
    int placed = 0;
    for (const Bin& b : existing_)
      for (auto [h, t] : b.content)
        if (h == int(g)) placed += t;
    for (const Bin& b : st.bins)
      for (auto [h, t] : b.content)
        if (h == int(g)) placed += t * b.mult;
    if (int(groups_[g].units.size()) > placed) left.emplace_back(groups_[g].priority, int(groups_[g].units.size()) - placed);
  }
  std::sort(left.begin(), left.end(), [](auto a, auto b) { return a.first > b.first; });
  std::vector<int> key;
  for (auto [priority, n] : left) {
    if (key.empty() || key[key.size() - 2] != priority) {
      key.push_back(priority);
      key.push_back(0);
    }
    key.back() += n;
  }
  return key;
}

void Planner::Classify(State& st) const {
  st.blocked.assign(groups_.size(), -1);
  st.team_blocked.assign(groups_.size(), 0);
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    if (st.rem[gi] == 0 || groups_[gi].has_static_reason) continue;
    int best = 99;
    for (int o : groups_[gi].cands) {
      const int b = BlockOf(groups_[gi], o, st);
      if (b != kBlockNone) best = std::min(best, b);
    }
    static const UnplacedReason kMap[] = {UnplacedReason::kNoOfferingFits, UnplacedReason::kBudget,
                                          UnplacedReason::kBudget,          UnplacedReason::kMaxNodesPerTick,
                                          UnplacedReason::kPoolMax,         UnplacedReason::kSpotShare,
                                          UnplacedReason::kZoneSpread,      UnplacedReason::kCapacityUnavailable};
    st.blocked[gi] = int(best == 99 ? UnplacedReason::kNoOfferingFits : kMap[best]);
    st.team_blocked[gi] = best == kBlockTeamBudget;
  }
}

std::vector<double> Planner::SlotPrices(const State& start, const State& planned) const {
  std::vector<double> price;
  // The pools with slots left that the plan takes past the share; the usual
  // plan has none, and nothing else is looked at.
  std::vector<char> scarce(pools_.size(), 0);
  bool any_scarce = false;
  for (size_t p = 0; p < pools_.size(); ++p) {
    const int cap = pools_[p].pol.max_nodes;
    scarce[p] = cap != kNoLimit && start.pool_count[p] < cap && planned.pool_count[p] > kScarceSlotShare * cap + 1e-9;
    any_scarce = any_scarce || scarce[p];
  }
  if (!any_scarce) return price;
  // Per scarce pool: the dearest option of the work being planned there
  // (so no saving on a node's price outweighs the room it wastes) and the
  // most GPUs one of those options holds.
  std::vector<double> dearest(pools_.size(), 0.0);
  std::vector<int> most_gpus(pools_.size(), 0);
  bool any = false;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (start.rem[g] == 0 || groups_[g].has_static_reason) continue;
    for (int o : groups_[g].cands) {
      const Option& op = options_[o];
      if (!scarce[op.pool]) continue;
      dearest[op.pool] = std::max(dearest[op.pool], op.price);
      most_gpus[op.pool] = std::max(most_gpus[op.pool], snap_.instance_types[op.type].gpu_count);
      any = true;
    }
  }
  if (!any) return price;
  price.assign(options_.size(), 0.0);
  for (size_t o = 0; o < options_.size(); ++o) {
    const Option& op = options_[o];
    if (most_gpus[op.pool] <= 0) continue;
    const int gpus = std::max(0, snap_.instance_types[op.type].gpu_count);
    price[o] = dearest[op.pool] * (1.0 - double(gpus) / most_gpus[op.pool]);
  }
  return price;
}

State Planner::ScaleUp(const State& base) {
  std::vector<std::vector<int>> ranks;
  const size_t ng = groups_.size();
  auto make_rank = [&](auto less) {
    std::vector<int> order(ng);
    for (size_t i = 0; i < ng; ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<int> rank(ng);
    for (size_t i = 0; i < ng; ++i) rank[order[i]] = int(i);
    return rank;
  };
  ranks.push_back(make_rank([&](int a, int b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if (x.gpu_w != y.gpu_w) return x.gpu_w > y.gpu_w;
    if (x.shape.cpu != y.shape.cpu) return x.shape.cpu > y.shape.cpu;
    return x.shape.mem > y.shape.mem;
  }));
  int pending = 0;
  for (int r : base.rem) pending += r;
  if (pending <= opts_.multi_start_max_units && ng > 1) {
    std::vector<double> lbs(ng);
    for (size_t g = 0; g < ng; ++g) lbs[g] = groups_[g].lb;
    ranks.push_back(make_rank([&](int a, int b) { return groups_[a].lb > groups_[b].lb; }));
    ranks.push_back(make_rank([&](int a, int b) {
      const Group& x = groups_[a];
      const Group& y = groups_[b];
      if (x.shape.cpu != y.shape.cpu) return x.shape.cpu > y.shape.cpu;
      return x.gpu_w > y.gpu_w;
    }));
    ranks.push_back(make_rank([&](int a, int b) { return groups_[a].interruptible < groups_[b].interruptible; }));
    // Scarce work first: a node bought for units with few or dear
    // alternatives is filled with them before flexible work takes its room.
    const std::vector<int> scarce = ExistingFillOrder(lbs);
    std::vector<int> rank(ng);
    for (size_t i = 0; i < ng; ++i) rank[scarce[i]] = int(i);
    ranks.push_back(std::move(rank));
  }
  auto solve = [&](const State& start) {
    // Greedy visits only the groups with units left, in rank order: a rank
    // that orders those as an earlier one did plans the same bins again,
    // which cannot beat the earlier plan.
    std::vector<std::vector<int>> visit_orders;
    std::vector<const std::vector<int>*> distinct;
    for (const auto& rank : ranks) {
      std::vector<int> visit;
      for (size_t g = 0; g < ng; ++g)
        if (start.rem[g] > 0) visit.push_back(int(g));
      std::sort(visit.begin(), visit.end(), [&](int a, int b) { return rank[a] < rank[b]; });
      if (std::find(visit_orders.begin(), visit_orders.end(), visit) != visit_orders.end()) continue;
      visit_orders.push_back(std::move(visit));
      distinct.push_back(&rank);
    }
    State best;
    bool have = false;
    auto plan_all = [&]() {
      for (const std::vector<int>* rank : distinct) {
        State st = start;
        Greedy(st, GreedyOrderFor(*rank));
        if (opts_.local_search) LocalSearch(st, pending <= opts_.multi_start_max_units);
        if (!have || Unplaced(st) < Unplaced(best) ||
            (Unplaced(st) == Unplaced(best) && TotalCost(st) < TotalCost(best) - 1e-9)) {
          best = std::move(st);
          have = true;
        }
      }
    };
    plan_all();
    // Node slots scarce in some pool: plan again with the GPU room a new
    // node there leaves unbought priced (in every cost compared, the first
    // plan's too); the nodes that hold the most GPUs win there, the
    // cheapest among those.
    slot_price_ = SlotPrices(start, best);
    if (!slot_price_.empty()) {
      plan_all();
      slot_price_.clear();
    }
    Classify(best);
    return best;
  };
  // A hard global or pool budget binds: keep the highest-priority prefix of
  // all demand that fits under it. Then the same within each team whose hard
  // cap binds, so one team's cap never cuts another team's work. What is cut
  // stays unplaced with reason budget.
  State start = base;
  State st = solve(start);
  if (!any_hard_budget_) return st;
  auto blocked_by = [&](const State& s, int team) {
    for (size_t g = 0; g < ng; ++g)
      if (s.blocked[g] == int(UnplacedReason::kBudget) && (team < 0 ? !s.team_blocked[g] : groups_[g].team == team))
        return true;
    return false;
  };
  if (blocked_by(st, -1)) {
    std::vector<int> all(ng);
    for (size_t i = 0; i < ng; ++i) all[i] = int(i);
    st = KeepPriorityPrefix(start, all, false, solve, [&](const State& s) { return !blocked_by(s, -1); });
  }
  for (int team = 0; team < int(teams_.size()); ++team) {
    if (!blocked_by(st, team)) continue;
    std::vector<int> scope;
    for (size_t g = 0; g < ng; ++g)
      if (groups_[g].team == team) scope.push_back(int(g));
    st = KeepPriorityPrefix(start, scope, true, solve, [&](const State& s) { return !blocked_by(s, team); });
  }
  return st;
}

State Planner::KeepPriorityPrefix(State& base, const std::vector<int>& scope, bool by_team,
                                  const std::function<State(const State&)>& solve,
                                  const std::function<bool(const State&)>& fits) const {
  std::vector<int> order = scope;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return groups_[a].priority > groups_[b].priority; });
  int pending = 0;
  for (int g : order) pending += base.rem[g];
  auto limited = [&](int k) {
    State s = base;
    for (int g : order) {
      const int take = std::min(s.rem[g], k);
      s.budget_cut[g] += s.rem[g] - take;
      s.cut_by_team[g] = by_team && take < s.rem[g];
      s.rem[g] = take;
      k -= take;
    }
    return s;
  };
  int lo = 0, hi = pending;  // lo fits
  State kept_base = limited(0);
  State best = solve(kept_base);
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    State start = limited(mid);
    State s = solve(start);
    if (fits(s)) {
      lo = mid;
      best = std::move(s);
      kept_base = std::move(start);
    } else {
      hi = mid - 1;
    }
  }
  base = std::move(kept_base);  // later cuts start from this one
  return best;
}

void Planner::MinNodes(State& st) {
  Packing packing(*this, st, /*with_existing=*/false);
  for (size_t p = 0; p < pools_.size(); ++p) {
    const int missing = pools_[p].pol.min_nodes - st.pool_count[p];
    if (missing <= 0) continue;
    // The floor is on-demand unless the pool cannot buy on-demand at all;
    // each zone offers its cheapest usable option.
    bool on_demand = false;
    for (const Option& o : options_) on_demand = on_demand || (o.pool == int(p) && o.usable && !o.spot);
    std::vector<int> zone_option(zone_names_.size(), -1);
    for (int o : options_by_price_) {
      const Option& op = options_[o];
      if (op.pool == int(p) && op.usable && !(on_demand && op.spot) && zone_option[op.zone] < 0) zone_option[op.zone] = o;
    }
    // Spread like zone_spread asks of work: each missing node goes where the
    // pool has the fewest nodes (existing, launching and planned), the
    // cheapest zone on a tie, so no zone holds more of the floor than it must.
    std::vector<int> in_zone(zone_names_.size(), 0);
    for (size_t i = 0; i < existing_.size(); ++i)
      if (existing_[i].pool == int(p) && snap_.nodes[i].state != NodeState::kTerminating) in_zone[existing_[i].zone]++;
    for (const Bin& b : st.bins)
      if (b.pool == int(p)) in_zone[b.zone] += b.mult;
    std::vector<int> zones;  // cheapest first
    for (int o : options_by_price_)
      if (zone_option[options_[o].zone] == o) zones.push_back(options_[o].zone);
    std::map<int, int> opened;  // option -> nodes
    for (int k = 0; k < missing; ++k) {
      int best = -1;
      for (int z : zones)
        if (MaxOpen(options_[zone_option[z]], st) > 0 && (best < 0 || in_zone[z] < in_zone[best])) best = z;
      if (best < 0) break;
      in_zone[best]++;
      opened[zone_option[best]]++;
      packing.CountNodes(zone_option[best], 1);  // their bins follow, one per option
    }
    for (int z : zones) {
      auto it = opened.find(zone_option[z]);
      if (it == opened.end()) continue;
      Bin b;
      InitBin(b, it->first);
      b.mult = it->second;
      st.bins.push_back(b);
    }
    if (!opened.empty())
      notes_.push_back("pool " + pools_[p].pol.name + " below min_nodes " + std::to_string(pools_[p].pol.min_nodes));
  }
}

}  // namespace gpuscaler::solver_detail
