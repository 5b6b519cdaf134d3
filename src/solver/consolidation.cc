#include "planner_impl.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

namespace {

// Nodes that replacing several by one considers (the first in candidate
// order): at most kGroupCandidates * (kGroupCandidates - 1) / 2 pairs a plan.
constexpr size_t kGroupCandidates = 24;
// The most nodes one new node replaces (the disruption budget permitting).
constexpr int kMaxGroupNodes = 8;
// Two nodes split onto two new ones: pairs of the first kSplitCandidates
// candidates, with at most kSplitMaxUnits units between them (every split of
// them is tried: 2^kSplitMaxUnits subsets).
constexpr size_t kSplitCandidates = 12;
constexpr int kSplitMaxUnits = 6;
// Moves that buy new nodes to repack work, a split or a replacement that
// sends part of a node's work to other nodes' free room, only for nodes that
// have run this long: worth it for placements that last (serving replicas),
// not for work that comes and goes within hours (training bursts).
constexpr Seconds kLastingNodeAge{6 * 3600};

bool LabelSaysDoNotDisrupt(const std::map<std::string, std::string>& labels, const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    auto it = labels.find(k);
    if (it != labels.end() && it->second != "false") return true;
  }
  return false;
}

// What a node's running work costs where it is: its expected interruption
// loss per hour, and the one-off cost of moving it (each unit's restart at
// on-demand value) spread over `horizon_h`, the hours a consolidation has to
// pay for itself (the policy's replacement_horizon).
struct RunningWorkCost {
  double risk = 0;
  double disruption = 0;
};
RunningWorkCost CostOfRunningWork(const Node& n, const InstanceType& type, double wait_h, double horizon_h) {
  RunningWorkCost c;
  for (const auto& u : n.running) {
    c.risk += ExpectedInterruptionUsdPerHour(u, n.offering, type, wait_h);
    c.disruption += std::max<int64_t>(0, u.restart_cost.count()) / 3600.0 * OnDemandValueUsdPerHour(u, n.offering, type);
  }
  c.disruption /= horizon_h;
  return c;
}

// Hours a new node of offering `o` (type index `type`) warms up before its
// GPUs are allocatable: its family's learned warm-up, else the offering's
// launch latency (the catalog's prior).
double WarmUpHours(const Snapshot& snap, int type, const Offering& o) {
  if (type >= 0) {
    const InstanceType& t = snap.instance_types[type];
    auto it = snap.warmup_seconds_by_family.find(t.FamilyOrName());
    if (it != snap.warmup_seconds_by_family.end()) return it->second / 3600.0;
  }
  return static_cast<double>(o.launch_latency.count()) / 3600.0;
}

}  // namespace

bool Planner::MoveAllowance(const DemandUnit& u, int cls, const Bin& from, const Bin& to, Allowances& a) const {
  const double w = GpuShare(u);
  if (w <= 0) return true;
  const bool onto_spot = to.spot && !from.spot;
  const bool zone_change = classes_[cls].zone_limited && from.zone != to.zone;
  const auto team_it = team_index_.find(TeamOf(u, policy_));
  const int team = team_it == team_index_.end() ? -1 : team_it->second;
  const double team_more = team >= 0 && a.team_usd[team] < kInf ? w * (PricePerGpu(to) - PricePerGpu(from)) : 0;
  if (onto_spot && a.spot[cls] < w - kEps) return false;
  if (zone_change && a.zone[cls][to.zone] < w - kEps) return false;
  if (team_more > 0 && a.team_usd[team] < team_more - kEps) return false;
  const int from_pool = classes_[cls].pool_limited ? SpotPoolOf(from) : -1;
  const int to_pool = classes_[cls].pool_limited ? SpotPoolOf(to) : -1;
  if (to_pool >= 0 && to_pool != from_pool && a.spot_pool[cls][to_pool] < w - kEps) return false;
  if (from_pool != to_pool) {
    if (from_pool >= 0) a.spot_pool[cls][from_pool] += w;
    if (to_pool >= 0) a.spot_pool[cls][to_pool] -= w;
  }
  if (a.spot[cls] < kInf && from.spot != to.spot) a.spot[cls] += from.spot ? w : -w;
  if (zone_change) {
    a.zone[cls][from.zone] += w;
    a.zone[cls][to.zone] -= w;
  }
  if (team >= 0) a.team_usd[team] -= team_more;
  return true;
}

void Planner::Consolidate(State& st, Plan& plan, std::vector<TerminationAction>& terms) {
  const DisruptionPolicy& d = policy_.disruption;
  // The hours a consolidation has to pay for itself in: its new nodes'
  // warm-up overlap and the moved work's restart cost are both paid once.
  const double horizon_h = std::max(1.0, static_cast<double>(d.replacement_horizon.count())) / 3600.0;
  int removed = 0;
  const int max_removed = policy_.scaling.max_nodes_removed_per_tick;
  // A replacement is bought because another offering's price is lower: on
  // prices that cannot be trusted it is not made. Moves into existing free
  // room stay (they save a node's whole price, whatever the spot prices).
  const bool replacements_off = !snap_.stale_prices.empty();
  if (max_removed <= 0) return;

  // A class's credit over its spot_share_window lowers its floor for new
  // units only: moving running work onto spot on credit would leave the
  // account no way back (nothing moves work onto on-demand to repay it).
  for (size_t c = 0; c < classes_.size(); ++c)
    if (classes_[c].floor_shift > 0 && st.allow.spot[c] < kInf) st.allow.spot[c] -= classes_[c].floor_shift;
  // Pools that a blocked class may use: their capacity stays (fail static).
  std::vector<char> pool_blocked(pools_.size(), 0);
  for (const ClassInfo& c : classes_) {
    if (!c.blocked) continue;
    for (size_t p = 0; p < pools_.size(); ++p)
      if (!c.pol || c.pol->pools.empty() || Contains(c.pol->pools, pools_[p].pol.name)) pool_blocked[p] = 1;
  }
  struct Cand {
    int node;
    bool empty;
    double gpu_w;
    double price;
  };
  std::vector<Cand> cands;
  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    const Node& n = snap_.nodes[i];
    const Bin& b = existing_[i];
    if (n.state != NodeState::kReady || !b.content.empty()) continue;
    if (snap_.time - n.launch_time < d.min_node_age) continue;
    if (n.do_not_disrupt || LabelSaysDoNotDisrupt(n.labels, d.do_not_disrupt_labels)) continue;
    if (b.pool >= 0 && pool_blocked[b.pool]) continue;
    if (b.pool < 0 && !snap_.scale_down_blocked_classes.empty()) continue;
    bool blocked = false;
    double w = 0;
    for (const auto& u : n.running) {
      blocked = blocked || classes_[class_index_.at(u.workload_class)].blocked;
      w += GpuShare(u);
    }
    if (blocked) continue;
    cands.push_back({int(i), n.running.empty(), w, b.price});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.empty != b.empty) return a.empty;
    if (a.gpu_w != b.gpu_w) return a.gpu_w < b.gpu_w;
    return a.price > b.price;
  });
  std::vector<int> receivers;  // accepting existing nodes, in placement order
  for (int bi : existing_order_) receivers.push_back(bi);
  // Whether `b` passes the cheap checks for one unit `u` (room aside from
  // fractional and MIG packing, which Take decides).
  auto may_receive = [&](const Bin& b, int bi, const DemandUnit& u, const Shape& s, int cls, int* mig) {
    if (b.removed) return false;
    if ((s.cpu > b.free_cpu) || (s.mem > b.free_mem) || (s.gpus > b.free_whole)) return false;
    if (s.gpus == 0 && (s.milli > 0 || s.mig) && b.free_whole == 0 && b.parts.empty()) return false;
    return UnitAllowed(u, cls, b.pool, snap_.nodes[bi].offering, b.type, b.zone, mig);
  };
  // Running units that found no other node during this pass, by their
  // requirements (SameDemand).
  // Receivers only lose room as the pass goes on (moves take it; an undone
  // attempt puts back what it took), so a unit that did not fit for want of
  // room will not fit later in the pass either. Only units whose moves no
  // allowance limits (spot share, zone spread, team cap: a move can give
  // those back) are remembered, and only when their own node had no room for
  // them either (it is a receiver for the next candidate).
  std::unordered_map<size_t, std::vector<const DemandUnit*>> no_room;
  auto known_no_room = [&](const DemandUnit& u) {
    auto it = no_room.find(DemandKeyHash(u));
    if (it == no_room.end()) return false;
    for (const DemandUnit* v : it->second)
      if (SameDemand(*v, u)) return true;
    return false;
  };
  auto allowances_unlimited = [&](const DemandUnit& u, int cls, const Allowances& a) {
    if (a.spot[cls] < kInf || classes_[cls].zone_limited || classes_[cls].pool_limited) return false;
    const auto team = team_index_.find(TeamOf(u, policy_));
    return team == team_index_.end() || a.team_usd[team->second] == kInf;
  };
  int64_t free_whole_total = 0;
  for (int bi : receivers) free_whole_total += std::max(0, existing_[bi].free_whole);

  // The disruption budget limits the removals that move running work
  // (consolidation, replacement). An empty node moves none: it goes whenever
  // it is not needed, within the pool's min_nodes and the tick's removals,
  // and the controller counts it in the window like every removal by plan.
  // `held_back`: empty nodes of the pool already counted as not needed but
  // left for later ticks (below); they leave the pool too. `count`: nodes
  // removed together.
  auto pool_ok_to_remove = [&](int pool, bool empty, int held_back = 0, int count = 1) {
    if (pool < 0) return true;
    if (!empty && pools_[pool].disrupt_allow < count) return false;
    return st.pool_count[pool] - held_back - count >= pools_[pool].pol.min_nodes;
  };
  // Node `bi` leaves the plan (its termination is the caller's).
  auto commit_removal = [&](int bi, bool empty) {
    Bin& b = existing_[bi];
    b.removed = true;
    free_whole_total -= std::max(0, b.free_whole);
    ++removed;
    if (b.pool >= 0) {
      if (!empty) pools_[b.pool].disrupt_allow--;
      st.pool_count[b.pool]--;
      st.pool_cost[b.pool] -= b.price;
    }
    st.cost -= b.price;
  };
  // A new node that takes replaced nodes' work joins the plan.
  auto commit_replacement = [&](const Bin& nb, const Option& op) {
    st.bins.push_back(nb);
    st.pool_count[op.pool]++;
    st.pool_cost[op.pool] += op.price;
    st.cost += op.price;
    st.added++;
  };

  // Puts `units` ((node, running index) of existing nodes) into `bin`, a
  // fresh bin of option `o`, charging their moves to `allow` and their
  // expected interruption loss to `risk`; false when one does not fit there
  // or is not allowed.
  auto fill_new_node = [&](Bin& bin, int o, Allowances& allow, const std::vector<std::pair<int, int>>& units,
                           double* risk) {
    const Option& op = options_[o];
    const Offering& off = snap_.offerings[op.offering];
    InitBin(bin, o);
    for (const auto& [node, k] : units) {
      const DemandUnit& u = snap_.nodes[node].running[k];
      const int cls = class_index_.at(u.workload_class);
      int mig = -1;
      if (!UnitAllowed(u, cls, op.pool, off, op.type, op.zone, &mig) || Take(bin, ShapeOf(u), mig, 1) != 1 ||
          !MoveAllowance(u, cls, existing_[node], bin, allow))
        return false;
      *risk += ExpectedInterruptionUsdPerHour(u, off, snap_.instance_types[op.type], op.wait_h);
    }
    return true;
  };

  // Units of node `node` (running indices, in `order`) moved into other
  // nodes' free room, charged to `allow`: where each went, the receivers as
  // they were (to undo), the units that fit nowhere and the moved units'
  // expected interruption loss. A unit that fits nowhere is remembered in
  // `no_room`; with `stop_at_miss`, the moves stop there.
  struct FreeRoomMoves {
    std::vector<std::pair<int, int>> dest;  // (running index, bin)
    std::vector<std::pair<int, Bin>> undo;
    std::vector<std::pair<int, int>> left;  // (node, running index)
    double risk = 0;
    void Undo(std::vector<Bin>& bins) {
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) bins[it->first] = std::move(it->second);
      undo.clear();
      dest.clear();
    }
  };
  auto move_to_free_room = [&](int node, const std::vector<int>& order, Allowances& allow,
                               bool stop_at_miss) {
    FreeRoomMoves m;
    const Node& n = snap_.nodes[node];
    const Bin& src = existing_[node];
    for (int k : order) {
      const DemandUnit& u = n.running[k];
      const Shape s = ShapeOf(u);
      const int cls = class_index_.at(u.workload_class);
      const bool fits_nowhere = known_no_room(u);
      bool placed = false;
      for (size_t r = 0; r < receivers.size() && !fits_nowhere; ++r) {
        const int bi = receivers[r];
        if (bi == node) continue;
        Bin& b = existing_[bi];
        int mig = -1;
        if (!may_receive(b, bi, u, s, cls, &mig)) continue;
        Bin copy = b;
        if (Take(b, s, mig, 1) != 1) continue;
        if (!MoveAllowance(u, cls, src, b, allow)) {
          b = std::move(copy);
          continue;
        }
        m.undo.emplace_back(bi, std::move(copy));
        m.dest.emplace_back(k, bi);
        m.risk += ExpectedInterruptionUsdPerHour(u, snap_.nodes[bi].offering, snap_.instance_types[b.type],
                                                 b.wait_h);
        placed = true;
        break;
      }
      if (placed) continue;
      int mig = -1;
      m.left.emplace_back(node, k);
      if (!fits_nowhere && allowances_unlimited(u, cls, allow) && !may_receive(src, node, u, s, cls, &mig))
        no_room[DemandKeyHash(u)].push_back(&u);
      if (stop_at_miss) break;
    }
    return m;
  };

  for (const Cand& c : cands) {
    Bin& src = existing_[c.node];
    if (removed >= max_removed) {
      // Candidates are sorted empty first: what remains is counted, not removed.
      if (!c.empty) break;
      if (src.receiver || src.removed) continue;
      const std::string& pool = snap_.nodes[c.node].pool;
      auto counted = plan.empty_nodes_left_by_pool.find(pool);
      const int held_back = counted == plan.empty_nodes_left_by_pool.end() ? 0 : counted->second;
      if (!pool_ok_to_remove(src.pool, true, held_back)) continue;
      ++plan.empty_nodes_left_by_pool[pool];
      continue;
    }
    if (src.receiver || src.removed) continue;
    const Node& n = snap_.nodes[c.node];
    if (!pool_ok_to_remove(src.pool, c.empty)) continue;
    TerminationAction t = TerminationOf(n, TerminationKind::kEmpty);
    if (c.empty) {
      t.saves_usd_per_hour = src.price;
      t.reason = "empty node, not needed: saves " + Usd(src.price) + "/h";
      commit_removal(c.node, true);
      terms.push_back(std::move(t));
      continue;
    }
    const InstanceType* type = src.type >= 0 ? &snap_.instance_types[src.type] : nullptr;
    const RunningWorkCost old_cost = type ? CostOfRunningWork(n, *type, src.wait_h, horizon_h) : RunningWorkCost{};
    const double risk_old = old_cost.risk, disruption = old_cost.disruption;
    int need_whole = 0;
    for (const auto& u : n.running) need_whole += std::max(0, u.gpus);
    const double best_case = src.price + risk_old - disruption;
    if (best_case < d.min_savings_usd_per_hour || (src.price > 0 && best_case / src.price < d.min_savings_fraction))
      continue;
    if (!type) continue;
    std::vector<int> order(n.running.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = int(k);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return GpuShare(n.running[a]) > GpuShare(n.running[b]);
    });
    // 1. Move everything onto other existing nodes.
    if (free_whole_total - std::max(0, src.free_whole) >= need_whole) {
      Allowances allow = st.allow;
      FreeRoomMoves moves = move_to_free_room(c.node, order, allow, /*stop_at_miss=*/true);
      const bool all = moves.left.empty();
      const double risk_new = moves.risk;
      const double saves = src.price + risk_old - risk_new - disruption;
      if (all && saves >= d.min_savings_usd_per_hour && saves / src.price >= d.min_savings_fraction) {
        st.allow = std::move(allow);
        t.kind = TerminationKind::kConsolidate;
        t.saves_usd_per_hour = saves;
        for (auto [k, bi] : moves.dest) {
          const DemandUnit& u = n.running[k];
          t.moved_unit_ids.push_back(u.id);
          existing_[bi].receiver = true;
          existing_[bi].moved.emplace_back(c.node, k);
          Placement p;
          p.unit_id = u.id;
          p.node_id = snap_.nodes[bi].id;
          plan.placements.push_back(std::move(p));
        }
        t.reason = "its " + std::to_string(n.running.size()) + " unit(s) fit on other nodes: saves " + Usd(saves) +
                   "/h after " + Usd(disruption) + "/h disruption cost";
        commit_removal(c.node, false);
        // The receivers' room went down as well.
        free_whole_total = 0;
        for (int bi : receivers)
          if (!existing_[bi].removed) free_whole_total += std::max(0, existing_[bi].free_whole);
        terms.push_back(std::move(t));
        continue;
      }
      moves.Undo(existing_);
    }
    // 2. Replace with one cheaper node in the same pool: all the units on
    //    it, or (as Karpenter's replace does) those that do not fit in other
    //    nodes' free room, the rest moved there. The larger saving is made.
    if (src.pool < 0 || st.added >= policy_.scaling.max_nodes_added_per_tick || replacements_off) continue;
    // The cheapest new node that holds `moving` and saves enough, after
    // `moved_risk` (the expected loss of units moved to other nodes), with
    // the allowances charged from `from`; option -1 when none does.
    struct Replacement {
      int option = -1;
      Bin bin;  // its risk: the expected interruption loss of what it holds
      Allowances allow;
      double saves = -kInf;
    };
    auto cheapest_replacement = [&](const std::vector<std::pair<int, int>>& moving, const Allowances& from,
                                    double moved_risk) {
      Replacement r;
      const double limit = src.price + risk_old - moved_risk - disruption - d.min_savings_usd_per_hour;
      for (int o : options_by_price_) {
        const Option& op = options_[o];
        if (op.price >= limit) break;
        if (op.pool != src.pool || !op.usable) continue;
        if (src.price > 0 &&
            (src.price + risk_old - moved_risk - op.price - disruption) / src.price < d.min_savings_fraction)
          break;
        double risk_new = 0;
        r.allow = from;
        if (!fill_new_node(r.bin, o, r.allow, moving, &risk_new)) continue;
        const double saves = src.price + risk_old - moved_risk - op.price - risk_new - disruption;
        if (saves < d.min_savings_usd_per_hour || saves / src.price < d.min_savings_fraction) continue;
        // The new node comes first: both are paid while it warms up. The
        // saving over the policy's horizon must cover that overlap.
        const Offering& off = snap_.offerings[op.offering];
        if (saves * horizon_h < op.price * WarmUpHours(snap_, op.type, off)) continue;
        r.option = o;
        r.bin.risk = risk_new;
        r.saves = saves;
        return r;
      }
      return r;
    };
    std::vector<std::pair<int, int>> moving;
    for (int k : order) moving.emplace_back(c.node, k);
    Replacement whole = cheapest_replacement(moving, st.allow, 0);
    // The units that fit in other nodes' free room (largest first), and the
    // cheapest node for the rest; only for lasting on-demand nodes: a spot
    // node's work is placed afresh at its pool's next reclaim anyway.
    Replacement rest;
    FreeRoomMoves moves;
    if (n.offering.capacity_type == CapacityType::kOnDemand &&
        snap_.time - n.launch_time >= kLastingNodeAge &&
        (free_whole_total - std::max(0, src.free_whole) > 0 || need_whole == 0)) {
      Allowances allow = st.allow;
      moves = move_to_free_room(c.node, order, allow, /*stop_at_miss=*/false);
      if (!moves.dest.empty() && !moves.left.empty())
        rest = cheapest_replacement(moves.left, allow, moves.risk);
    }
    const bool partial = rest.option >= 0 && rest.saves > whole.saves;
    if (!partial) moves.Undo(existing_);
    Replacement& chosen = partial ? rest : whole;
    if (chosen.option < 0) continue;
    const Option& op = options_[chosen.option];
    st.allow = std::move(chosen.allow);
    chosen.bin.moved = partial ? moves.left : moving;
    t.kind = TerminationKind::kReplace;
    t.saves_usd_per_hour = chosen.saves;
    for (int k : order) t.moved_unit_ids.push_back(n.running[k].id);
    for (auto [k, bi] : moves.dest) {
      existing_[bi].receiver = true;
      existing_[bi].moved.emplace_back(c.node, k);
      Placement p;
      p.unit_id = n.running[k].id;
      p.node_id = snap_.nodes[bi].id;
      plan.placements.push_back(std::move(p));
    }
    t.reason =
        "replaced by " + Describe(snap_.offerings[op.offering]) + " at " + Usd(op.price) + "/h" +
        (partial ? " (" + std::to_string(moves.dest.size()) + " of its units to other nodes' free room)"
                 : "") +
        ": saves " + Usd(chosen.saves) + "/h after " + Usd(disruption) + "/h disruption cost";
    commit_replacement(chosen.bin, op);
    commit_removal(c.node, false);
    if (partial) {
      free_whole_total = 0;
      for (int bi : receivers)
        if (!existing_[bi].removed) free_whole_total += std::max(0, existing_[bi].free_whole);
    }
    terms.push_back(std::move(t));
  }

  // 3. Replace several nodes of a pool with one new node cheaper than all of
  //    them (Karpenter's multi-node consolidation): work that arrived one
  //    unit at a time sits on the node each unit needed alone, often a node
  //    per fractional, CPU-heavy or on-demand-floor unit, where one larger
  //    node holds them all for less. The passes above took the nodes that
  //    could go alone. Groups of three or more are the first candidates of
  //    their pool in candidate order (least work first), the longest that
  //    pays tried first; then any two candidates of a pool. Each node of a
  //    group is a removal that moves work: a group larger than the pool's
  //    disruption budget allows now (at least two) is staged, its first
  //    nodes moved now and the rest left to follow (replace_group).
  if (removed + 2 > max_removed || st.added >= policy_.scaling.max_nodes_added_per_tick || replacements_off) return;
  struct GroupCand {
    int node;
    RunningWorkCost cost;
    double gpus;  // GPU share of its units
    int64_t cpu_milli;
    int64_t mem_mib;
  };
  std::vector<GroupCand> group_cands;
  for (const Cand& c : cands) {
    if (group_cands.size() >= kGroupCandidates) break;
    const Bin& b = existing_[c.node];
    if (c.empty || b.removed || b.receiver || b.pool < 0 || b.type < 0) continue;
    if (pools_[b.pool].disrupt_allow < 2) continue;
    const Node& n = snap_.nodes[c.node];
    GroupCand gc{c.node, CostOfRunningWork(n, snap_.instance_types[b.type], b.wait_h, horizon_h), 0, 0, 0};
    for (const auto& u : n.running) {
      gc.gpus += GpuShare(u);
      gc.cpu_milli += std::max<int64_t>(0, u.cpu_milli);
      gc.mem_mib += std::max<int64_t>(0, u.memory_mib);
    }
    group_cands.push_back(gc);
  }
  // Replaces the nodes of `group` (one pool, none removed) with the cheapest
  // new node that holds all their units and saves enough; false when none does.
  Bin nb;
  // Only the first `now` nodes go in this plan (the budget's share); the new
  // node is sized for all, and the rest follow into its free room in later
  // plans, each a single-node move that saves its whole price.
  auto replace_group = [&](const std::vector<const GroupCand*>& group, int now) {
    const int pool = existing_[group.front()->node].pool;
    if (!pool_ok_to_remove(pool, false, 0, now)) return false;
    double price = 0, disruption = 0, need_gpus = 0;
    int64_t need_cpu = 0, need_mem = 0;
    for (const GroupCand* gc : group) {
      price += existing_[gc->node].price;
      disruption += gc->cost.disruption;
      need_gpus += gc->gpus;
      need_cpu += gc->cpu_milli;
      need_mem += gc->mem_mib;
    }
    double old_total = price;  // what the group costs where it is
    for (const GroupCand* gc : group) old_total += gc->cost.risk;
    old_total -= disruption;
    if (old_total < d.min_savings_usd_per_hour || (price > 0 && old_total / price < d.min_savings_fraction))
      return false;
    // The group's units, largest first: (node, running index).
    std::vector<std::pair<int, int>> units;
    for (const GroupCand* gc : group)
      for (size_t k = 0; k < snap_.nodes[gc->node].running.size(); ++k) units.emplace_back(gc->node, int(k));
    auto unit_at = [&](const std::pair<int, int>& at) -> const DemandUnit& {
      return snap_.nodes[at.first].running[at.second];
    };
    std::stable_sort(units.begin(), units.end(), [&](const auto& x, const auto& y) {
      return GpuShare(unit_at(x)) > GpuShare(unit_at(y));
    });
    for (int o : options_by_price_) {
      const Option& op = options_[o];
      if (op.price >= old_total - d.min_savings_usd_per_hour) break;
      if (price > 0 && (old_total - op.price) / price < d.min_savings_fraction) break;
      if (op.pool != pool || !op.usable) continue;
      // What the type has at most; Take decides the rest.
      const InstanceType& t = snap_.instance_types[op.type];
      if (t.gpu_count < need_gpus - kEps || int64_t{t.vcpus} * 1000 < need_cpu || t.memory_mib < need_mem)
        continue;
      const Offering& off = snap_.offerings[op.offering];
      // Every unit of the group must fit (a scratch bin and allowance); the
      // plan's bin takes the units that move now.
      Bin whole;
      Allowances whole_allow = st.allow;
      double risk_new = 0;
      if (!fill_new_node(whole, o, whole_allow, units, &risk_new)) continue;
      std::vector<std::pair<int, int>> moving;
      for (const auto& at : units)
        for (int m = 0; m < now; ++m)
          if (at.first == group[m]->node) moving.push_back(at);
      Allowances allow = st.allow;
      double risk_now = 0;
      if (!fill_new_node(nb, o, allow, moving, &risk_now)) continue;
      const double saves = old_total - op.price - risk_new;
      if (saves < d.min_savings_usd_per_hour || (price > 0 && saves / price < d.min_savings_fraction))
        continue;
      const double overlap_usd = op.price * WarmUpHours(snap_, op.type, off);
      if (saves * horizon_h < overlap_usd) continue;
      st.allow = std::move(allow);
      nb.risk = risk_now;
      nb.moved.insert(nb.moved.end(), moving.begin(), moving.end());
      const std::string to_follow =
          now < int(group.size()) ? " (" + std::to_string(int(group.size()) - now) + " to follow into its free room)" : "";
      for (int m = 0; m < now; ++m) {
        const GroupCand* gc = group[m];
        const Node& n = snap_.nodes[gc->node];
        TerminationAction term = TerminationOf(n, TerminationKind::kReplace);
        term.saves_usd_per_hour = saves / double(group.size());
        for (const auto& u : n.running) term.moved_unit_ids.push_back(u.id);
        std::string others;
        for (const GroupCand* other : group)
          if (other != gc) others += (others.empty() ? "" : ", ") + snap_.nodes[other->node].id;
        term.reason = "replaced, with " + others + ", by one " + Describe(off) + " at " + Usd(op.price) +
                      "/h: the " + (group.size() == 2 ? std::string("two") : std::to_string(group.size())) +
                      to_follow + " save " + Usd(saves) + "/h after " + Usd(disruption) + "/h disruption cost";
        commit_removal(gc->node, false);
        terms.push_back(std::move(term));
      }
      commit_replacement(nb, op);
      return true;
    }
    return false;
  };
  // The most nodes one group of `pool` may have now.
  auto group_room = [&](int pool) {
    if (st.added >= policy_.scaling.max_nodes_added_per_tick) return 0;
    return std::min({pools_[pool].disrupt_allow, max_removed - removed, kMaxGroupNodes});
  };
  // Groups of three or more: per pool, the longest prefix of its remaining
  // candidates that one node replaces.
  for (size_t first = 0; first < group_cands.size(); ++first) {
    const int pool = existing_[group_cands[first].node].pool;
    bool pool_seen = false;
    for (size_t k = 0; k < first; ++k) pool_seen = pool_seen || existing_[group_cands[k].node].pool == pool;
    if (pool_seen) continue;
    for (bool replaced = true; replaced;) {
      replaced = false;
      std::vector<const GroupCand*> members;
      for (const GroupCand& gc : group_cands)
        if (existing_[gc.node].pool == pool && !existing_[gc.node].removed) members.push_back(&gc);
      const int room = group_room(pool);
      if (room < 2) break;
      for (int size = std::min(kMaxGroupNodes, int(members.size())); size >= 3 && !replaced; --size) {
        replaced = replace_group(std::vector<const GroupCand*>(members.begin(), members.begin() + size),
                                 std::min(room, size));
      }
    }
  }
  // Two nodes onto two new ones: the units of two candidates of a pool,
  // split between two new nodes that cost less than both. Work that arrived
  // at different times shares nodes by arrival, not by shape: a CPU-heavy pod
  // leaves a GPU node's GPU idle while a GPU replica has a node of its own;
  // the replica beside the CPU-heavy pod and the small unit on a small node
  // cost less, and no single node holds all three for less. Every split of
  // the (few) units is tried, each part on the cheapest node that holds it.
  {
    const size_t first_nodes = std::min(group_cands.size(), kSplitCandidates);
    for (size_t i = 0; i < first_nodes; ++i) {
      for (size_t j = i + 1; j < first_nodes; ++j) {
        if (removed + 2 > max_removed || st.added + 2 > policy_.scaling.max_nodes_added_per_tick) break;
        const GroupCand& a = group_cands[i];
        const GroupCand& b = group_cands[j];
        if (existing_[a.node].removed || existing_[b.node].removed || existing_[a.node].receiver ||
            existing_[b.node].receiver || existing_[a.node].pool != existing_[b.node].pool)
          continue;
        if (snap_.time - snap_.nodes[a.node].launch_time < kLastingNodeAge ||
            snap_.time - snap_.nodes[b.node].launch_time < kLastingNodeAge)
          continue;
        const int pool = existing_[a.node].pool;
        if (group_room(pool) < 2 || !pool_ok_to_remove(pool, false, 0, 2)) continue;
        std::vector<std::pair<int, int>> units;
        for (const GroupCand* gc : {&a, &b})
          for (size_t k = 0; k < snap_.nodes[gc->node].running.size(); ++k) units.emplace_back(gc->node, int(k));
        const int n = int(units.size());
        if (n < 2 || n > kSplitMaxUnits) continue;
        const double price = existing_[a.node].price + existing_[b.node].price;
        const double old_total = price + a.cost.risk + b.cost.risk - a.cost.disruption - b.cost.disruption;
        const double limit = old_total - d.min_savings_usd_per_hour;
        if (limit <= 0) continue;
        const int full = (1 << n) - 1;
        // The cheapest new node (price and expected interruption loss) for
        // each subset of the units, by bit mask.
        std::vector<double> cheapest(full + 1, kInf);
        std::vector<int> cheapest_opt(full + 1, -1);
        Bin scratch;
        Allowances scratch_allow;
        for (int mask = 1; mask <= full; ++mask) {
          std::vector<std::pair<int, int>> sub;
          double g = 0;
          int64_t cpu = 0, mem = 0;
          for (int k = 0; k < n; ++k)
            if (mask >> k & 1) {
              sub.push_back(units[k]);
              const DemandUnit& u = snap_.nodes[units[k].first].running[units[k].second];
              g += GpuShare(u);
              cpu += std::max<int64_t>(0, u.cpu_milli);
              mem += std::max<int64_t>(0, u.memory_mib);
            }
          for (int o : options_by_price_) {
            const Option& op = options_[o];
            if (op.price >= limit) break;
            if (op.pool != pool || !op.usable) continue;
            const InstanceType& t = snap_.instance_types[op.type];
            if (t.gpu_count < g - kEps || int64_t{t.vcpus} * 1000 < cpu || t.memory_mib < mem) continue;
            scratch_allow = st.allow;  // reuses its storage
            double r = 0;
            if (!fill_new_node(scratch, o, scratch_allow, sub, &r)) continue;
            cheapest[mask] = op.price + r;
            cheapest_opt[mask] = o;
            break;
          }
        }
        // The best split (unit 0 on the first node); one node for all is the
        // pairs pass's (below).
        double best = cheapest[full];
        int best_mask = full;
        for (int mask = 1; mask < full; ++mask) {
          if (!(mask & 1)) continue;
          const double c = cheapest[mask] + cheapest[full ^ mask];
          if (c < best) {
            best = c;
            best_mask = mask;
          }
        }
        if (best_mask == full) continue;
        const double saves = old_total - best;
        if (saves < d.min_savings_usd_per_hour || saves / price < d.min_savings_fraction) continue;
        double overlap = 0;
        for (int mask : {best_mask, full ^ best_mask}) {
          const Option& op = options_[cheapest_opt[mask]];
          overlap += op.price * WarmUpHours(snap_, op.type, snap_.offerings[op.offering]);
        }
        if (saves * horizon_h < overlap) continue;
        Allowances allow = st.allow;
        std::vector<std::pair<Bin, int>> bins;
        bool ok = true;
        for (int mask : {best_mask, full ^ best_mask}) {
          std::vector<std::pair<int, int>> sub;
          for (int k = 0; k < n; ++k)
            if (mask >> k & 1) sub.push_back(units[k]);
          Bin nb;
          double r = 0;
          if (!fill_new_node(nb, cheapest_opt[mask], allow, sub, &r)) {
            ok = false;
            break;
          }
          nb.risk = r;
          nb.moved = sub;
          bins.emplace_back(std::move(nb), cheapest_opt[mask]);
        }
        if (!ok) continue;
        st.allow = std::move(allow);
        for (const GroupCand* gc : {&a, &b}) {
          const Node& nd = snap_.nodes[gc->node];
          TerminationAction term = TerminationOf(nd, TerminationKind::kReplace);
          term.saves_usd_per_hour = saves / 2;
          for (const auto& u : nd.running) term.moved_unit_ids.push_back(u.id);
          term.reason = "replaced, with " + snap_.nodes[(gc == &a ? b : a).node].id + ", by " +
                        Describe(snap_.offerings[options_[bins[0].second].offering]) + " and " +
                        Describe(snap_.offerings[options_[bins[1].second].offering]) + " at " + Usd(best) +
                        "/h: the two save " + Usd(saves) + "/h after " + Usd(a.cost.disruption + b.cost.disruption) +
                        "/h disruption cost";
          commit_removal(gc->node, false);
          terms.push_back(std::move(term));
        }
        for (auto& [nb, o] : bins) commit_replacement(nb, options_[o]);
      }
    }
  }
  // Pairs: any two remaining candidates of a pool.
  for (size_t i = 0; i < group_cands.size(); ++i) {
    for (size_t j = i + 1; j < group_cands.size(); ++j) {
      if (removed + 2 > max_removed || st.added >= policy_.scaling.max_nodes_added_per_tick || replacements_off) return;
      const GroupCand& a = group_cands[i];
      const GroupCand& b = group_cands[j];
      if (existing_[a.node].removed || existing_[b.node].removed ||
          existing_[a.node].pool != existing_[b.node].pool)
        continue;
      replace_group({&a, &b}, 2);
    }
  }
}

}  // namespace gpuscaler::solver_detail
