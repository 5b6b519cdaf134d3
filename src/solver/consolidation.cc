// Consolidation's driver, the strategies that take one node at a time
// (empty, delete, replace, part to free room) and the steps they share. The
// strategies over groups of nodes are in consolidation_groups.cc.
#include "consolidation.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpuscaler::solver_detail {

namespace {

bool LabelSaysDoNotDisrupt(const std::map<std::string, std::string>& labels,
                           const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    auto it = labels.find(k);
    if (it != labels.end() && it->second != "false") return true;
  }
  return false;
}

}  // namespace

double WarmUpHours(const Snapshot& snap, int type, const Offering& o) {
  if (type >= 0) {
    const InstanceType& t = snap.instance_types[type];
    auto it = snap.warmup_seconds_by_family.find(t.FamilyOrName());
    if (it != snap.warmup_seconds_by_family.end()) return it->second / 3600.0;
  }
  return static_cast<double>(o.launch_latency.count()) / 3600.0;
}

Consolidation::Consolidation(Planner& planner, State& state, Plan& plan,
                             std::vector<TerminationAction>& terms, ConsolidationStrategies strategies)
    : planner_(planner),
      packing_(planner, state, /*with_existing=*/true),
      plan_(plan),
      terms_(terms),
      strategies_(strategies),
      disruption_(planner.policy_.disruption),
      horizon_h_(std::max(1.0, static_cast<double>(disruption_.replacement_horizon.count())) / 3600.0),
      max_removed_(planner.policy_.scaling.max_nodes_removed_per_tick),
      replacements_off_(!planner.snap_.stale_prices.empty()) {}

bool Consolidation::AddedMax() const {
  return packing_.state().added >= planner_.policy_.scaling.max_nodes_added_per_tick;
}

void Consolidation::Run() {
  if (max_removed_ <= 0) return;
  State& st = packing_.state();
  // A class's credit over its spot_share_window lowers its floor for new
  // units only: moving running work onto spot on credit would leave the
  // account no way back (nothing moves work onto on-demand to repay it).
  for (size_t c = 0; c < planner_.classes_.size(); ++c)
    if (planner_.classes_[c].floor_shift > 0 && st.allow.spot[c] < kInf)
      st.allow.spot[c] -= planner_.classes_[c].floor_shift;
  FindCandidates();
  receivers_ = planner_.existing_order_;
  for (int bi : receivers_) free_whole_total_ += std::max(0, planner_.existing_[bi].free_whole);

  for (const Candidate& c : candidates_) {
    const Bin& src = planner_.existing_[c.node];
    if (removed_ >= max_removed_) {
      // Candidates are sorted empty first: what remains is counted, not removed.
      if (!c.empty) break;
      CountEmptyLeft(c);
      continue;
    }
    if (src.receiver || src.removed) continue;
    if (!PoolOkToRemove(src.pool, c.empty)) continue;
    if (c.empty) {
      if (strategies_.Has(ConsolidationStrategy::kEmpty)) RemoveEmpty(c);
      continue;
    }
    const std::optional<NodeWork> work = WorkOf(c);
    if (!work) continue;
    if (strategies_.Has(ConsolidationStrategy::kDelete) && DeleteIntoFreeRoom(*work)) continue;
    ReplaceNode(*work);
  }

  if (removed_ + 2 > max_removed_ || AddedMax() || replacements_off_) return;
  FindGroupCandidates();
  if (strategies_.Has(ConsolidationStrategy::kGroups)) ReplaceGroups();
  if (strategies_.Has(ConsolidationStrategy::kSplit)) SplitPairs();
  if (strategies_.Has(ConsolidationStrategy::kGroups)) ReplacePairs();
}

void Consolidation::FindCandidates() {
  const Snapshot& snap = planner_.snap_;
  // Pools that a blocked class may use: their capacity stays (fail static).
  std::vector<char> pool_blocked(planner_.pools_.size(), 0);
  for (const ClassInfo& c : planner_.classes_) {
    if (!c.blocked) continue;
    for (size_t p = 0; p < planner_.pools_.size(); ++p)
      if (!c.pol || c.pol->pools.empty() || Contains(c.pol->pools, planner_.pools_[p].pol.name))
        pool_blocked[p] = 1;
  }
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const Node& n = snap.nodes[i];
    const Bin& b = planner_.existing_[i];
    if (n.state != NodeState::kReady || !b.content.empty()) continue;
    if (snap.time - n.launch_time < disruption_.min_node_age) continue;
    if (n.do_not_disrupt || LabelSaysDoNotDisrupt(n.labels, disruption_.do_not_disrupt_labels)) continue;
    // A node on a reservation holds a slot paid whether it runs or not:
    // removing it saves nothing, and kept it takes the next work at once.
    if (n.offering.capacity_type == CapacityType::kReserved) continue;
    if (b.pool >= 0 && pool_blocked[b.pool]) continue;
    if (b.pool < 0 && !snap.scale_down_blocked_classes.empty()) continue;
    bool blocked = false;
    double w = 0;
    for (size_t k = 0; k < n.running.size(); ++k) {
      // A gang moves whole or not at all: one member moved alone stops the
      // others and sends them all back to their last checkpoint.
      blocked = blocked || planner_.classes_[planner_.running_class_[i][k]].blocked || n.running[k].gang;
      w += GpuShare(n.running[k]);
    }
    if (blocked) continue;
    candidates_.push_back({int(i), n.running.empty(), w, b.price});
  }
  std::stable_sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
    if (a.empty != b.empty) return a.empty;
    if (a.gpu_w != b.gpu_w) return a.gpu_w < b.gpu_w;
    return a.price > b.price;
  });
}

void Consolidation::CountEmptyLeft(const Candidate& c) {
  const Bin& src = planner_.existing_[c.node];
  if (src.receiver || src.removed) return;
  const std::string& pool = planner_.snap_.nodes[c.node].pool;
  auto counted = plan_.empty_nodes_left_by_pool.find(pool);
  const int held_back = counted == plan_.empty_nodes_left_by_pool.end() ? 0 : counted->second;
  if (!PoolOkToRemove(src.pool, true, held_back)) return;
  ++plan_.empty_nodes_left_by_pool[pool];
}

Consolidation::WorkCost Consolidation::CostOfRunningWork(int node) const {
  const Node& n = planner_.snap_.nodes[node];
  const Bin& b = planner_.existing_[node];
  const InstanceType& type = planner_.snap_.instance_types[b.type];
  WorkCost c;
  for (const auto& u : n.running) {
    c.risk += ExpectedInterruptionUsdPerHour(u, n.offering, type, b.wait_h);
    c.disruption +=
        std::max<int64_t>(0, u.restart_cost.count()) / 3600.0 * OnDemandValueUsdPerHour(u, n.offering, type);
  }
  c.disruption /= horizon_h_;
  return c;
}

std::optional<Consolidation::NodeWork> Consolidation::WorkOf(const Candidate& c) const {
  const Node& n = planner_.snap_.nodes[c.node];
  const Bin& src = planner_.existing_[c.node];
  NodeWork w;
  w.node = c.node;
  if (src.type >= 0) w.cost = CostOfRunningWork(c.node);
  for (const auto& u : n.running) w.need_whole += std::max(0, u.gpus);
  const double best_case = src.price + w.cost.risk - w.cost.disruption;
  if (best_case < disruption_.min_savings_usd_per_hour ||
      (src.price > 0 && best_case / src.price < disruption_.min_savings_fraction))
    return std::nullopt;
  if (src.type < 0) return std::nullopt;
  w.order.resize(n.running.size());
  for (size_t k = 0; k < w.order.size(); ++k) w.order[k] = int(k);
  std::stable_sort(w.order.begin(), w.order.end(),
                   [&](int a, int b) { return GpuShare(n.running[a]) > GpuShare(n.running[b]); });
  return w;
}

bool Consolidation::MayReceive(const Bin& b, int bi, const DemandUnit& u, const Shape& s, int cls,
                               int* mig) const {
  if (b.removed) return false;
  if ((s.cpu > b.free_cpu) || (s.mem > b.free_mem) || (s.gpus > b.free_whole)) return false;
  if (s.gpus == 0 && (s.milli > 0 || s.mig) && b.free_whole == 0 && b.parts.empty()) return false;
  if (Contains(u.avoid_nodes, planner_.snap_.nodes[bi].id)) return false;
  return planner_.UnitAllowed(u, cls, b.pool, planner_.snap_.nodes[bi].offering, b.type, b.zone, mig);
}

bool Consolidation::KnownNoRoom(const DemandUnit& u) const {
  auto it = no_room_.find(DemandKeyHash(u));
  if (it == no_room_.end()) return false;
  for (const DemandUnit* v : it->second)
    if (SameDemand(*v, u)) return true;
  return false;
}

bool Consolidation::AllowancesUnlimited(const DemandUnit& u, int cls, const Allowances& a) const {
  if (a.spot[cls] < kInf || planner_.classes_[cls].zone_limited || planner_.classes_[cls].pool_limited)
    return false;
  const auto team = planner_.team_index_.find(TeamOf(u, planner_.policy_));
  return team == planner_.team_index_.end() || a.team_usd[team->second] == kInf;
}

// The disruption budget limits the removals that move running work
// (consolidation, replacement). An empty node moves none: it goes whenever it
// is not needed, within the pool's min_nodes and the tick's removals, and the
// controller counts it in the window like every removal by plan. `held_back`:
// empty nodes of the pool already counted as not needed but left for later
// ticks; they leave the pool too. `count`: nodes removed together.
bool Consolidation::PoolOkToRemove(int pool, bool empty, int held_back, int count) const {
  if (pool < 0) return true;
  if (!empty && planner_.pools_[pool].disrupt_allow < count) return false;
  return packing_.state().pool_count[pool] - held_back - count >= planner_.pools_[pool].pol.min_nodes;
}

void Consolidation::RemoveNode(int node, bool empty) {
  const Bin& b = planner_.existing_[node];
  free_whole_total_ -= std::max(0, b.free_whole);
  ++removed_;
  if (b.pool >= 0 && !empty) planner_.pools_[b.pool].disrupt_allow--;
  packing_.RemoveExistingNode(node);
}

void Consolidation::AddReplacement(const Bin& bin) { packing_.AddNode(bin); }

void Consolidation::RecountFreeWhole() {
  free_whole_total_ = 0;
  for (int bi : receivers_)
    if (!planner_.existing_[bi].removed) free_whole_total_ += std::max(0, planner_.existing_[bi].free_whole);
}

void Consolidation::Undo(FreeRoomMoves& moves) {
  packing_.UndoMoves(moves.undo);
  moves.dest.clear();
}

// A unit that fits nowhere is remembered in no_room_; with `stop_at_miss`,
// the moves stop there.
Consolidation::FreeRoomMoves Consolidation::MoveToFreeRoom(int node, const std::vector<int>& order,
                                                           Allowances& allow, bool stop_at_miss) {
  FreeRoomMoves m;
  const Snapshot& snap = planner_.snap_;
  const Node& n = snap.nodes[node];
  std::vector<Bin>& existing = planner_.existing_;
  Bin before;  // a receiver as it was (MoveRunningUnit's working storage)
  for (int k : order) {
    const DemandUnit& u = n.running[k];
    const Shape s = ShapeOf(u);
    const int cls = planner_.running_class_[node][k];
    const bool fits_nowhere = KnownNoRoom(u);
    bool placed = false;
    for (size_t r = 0; r < receivers_.size() && !fits_nowhere; ++r) {
      const int bi = receivers_[r];
      if (bi == node) continue;
      int mig = -1;
      if (!MayReceive(existing[bi], bi, u, s, cls, &mig)) continue;
      if (!packing_.MoveRunningUnit(node, k, cls, s, mig, bi, allow, before, m.undo)) continue;
      m.dest.emplace_back(k, bi);
      m.risk += ExpectedInterruptionUsdPerHour(u, snap.nodes[bi].offering,
                                               snap.instance_types[existing[bi].type], existing[bi].wait_h);
      placed = true;
      break;
    }
    if (placed) continue;
    int mig = -1;
    m.left.emplace_back(node, k);
    if (!fits_nowhere && AllowancesUnlimited(u, cls, allow) &&
        !MayReceive(existing[node], node, u, s, cls, &mig))
      no_room_[DemandKeyHash(u)].push_back(&u);
    if (stop_at_miss) break;
  }
  return m;
}

void Consolidation::PlaceMoved(int node, const std::vector<std::pair<int, int>>& dest) {
  const Node& n = planner_.snap_.nodes[node];
  for (auto [k, bi] : dest) {
    planner_.existing_[bi].receiver = true;
    planner_.existing_[bi].moved.emplace_back(node, k);
    Placement p;
    p.unit_id = n.running[k].id;
    p.node_id = planner_.snap_.nodes[bi].id;
    plan_.placements.push_back(std::move(p));
  }
}

bool Consolidation::RemoveEmpty(const Candidate& c) {
  const Bin& src = planner_.existing_[c.node];
  TerminationAction t = TerminationOf(planner_.snap_.nodes[c.node], TerminationKind::kEmpty);
  t.saves_usd_per_hour = src.price;
  t.reason = "empty node, not needed: saves " + Usd(src.price) + "/h";
  RemoveNode(c.node, true);
  terms_.push_back(std::move(t));
  return true;
}

bool Consolidation::DeleteIntoFreeRoom(const NodeWork& w) {
  const Bin& src = planner_.existing_[w.node];
  if (free_whole_total_ - std::max(0, src.free_whole) < w.need_whole) return false;
  State& st = packing_.state();
  Allowances allow = st.allow;
  FreeRoomMoves moves = MoveToFreeRoom(w.node, w.order, allow, /*stop_at_miss=*/true);
  const double saves = src.price + w.cost.risk - moves.risk - w.cost.disruption;
  const bool pays = moves.left.empty() && saves >= disruption_.min_savings_usd_per_hour &&
                    saves / src.price >= disruption_.min_savings_fraction;
  if (!pays) {
    Undo(moves);
    return false;
  }
  const Node& n = planner_.snap_.nodes[w.node];
  st.allow = std::move(allow);
  TerminationAction t = TerminationOf(n, TerminationKind::kConsolidate);
  t.saves_usd_per_hour = saves;
  for (auto [k, bi] : moves.dest) t.moved_unit_ids.push_back(n.running[k].id);
  PlaceMoved(w.node, moves.dest);
  t.reason = "its " + std::to_string(n.running.size()) + " unit(s) fit on other nodes: saves " + Usd(saves) +
             "/h after " + Usd(w.cost.disruption) + "/h disruption cost";
  RemoveNode(w.node, false);
  RecountFreeWhole();  // the receivers' room went down as well
  terms_.push_back(std::move(t));
  return true;
}

bool Consolidation::MayOpen(const Option& op, int pool, int nodes) const {
  return op.pool == pool && op.usable && planner_.ReservedRoom(op, packing_.state()) >= nodes;
}

// The cheapest new node in the node's pool that holds `moving` and saves
// enough after `moved_risk` (the expected loss of units moved to other
// nodes), with the allowances charged from `from`.
Consolidation::Replacement Consolidation::CheapestReplacement(const NodeWork& w,
                                                              const std::vector<std::pair<int, int>>& moving,
                                                              const Allowances& from, double moved_risk) {
  const Bin& src = planner_.existing_[w.node];
  const DisruptionPolicy& d = disruption_;
  const double risk_old = w.cost.risk, disruption = w.cost.disruption;
  Replacement r;
  const double limit = src.price + risk_old - moved_risk - disruption - d.min_savings_usd_per_hour;
  for (int o : planner_.pool_options_by_price_[src.pool]) {
    const Option& op = planner_.options_[o];
    if (op.price >= limit) break;
    if (!MayOpen(op, src.pool)) continue;
    if (src.price > 0 &&
        (src.price + risk_old - moved_risk - op.price - disruption) / src.price < d.min_savings_fraction)
      break;
    double risk_new = 0;
    r.allow = from;
    if (!planner_.FillNewNode(r.bin, o, r.allow, moving, &risk_new)) continue;
    const double saves = src.price + risk_old - moved_risk - op.price - risk_new - disruption;
    if (saves < d.min_savings_usd_per_hour || saves / src.price < d.min_savings_fraction) continue;
    // The new node comes first: both are paid while it warms up. The
    // saving over the policy's horizon must cover that overlap.
    const Offering& off = planner_.snap_.offerings[op.offering];
    if (saves * horizon_h_ < op.price * WarmUpHours(planner_.snap_, op.type, off)) continue;
    r.option = o;
    r.bin.risk = risk_new;
    r.saves = saves;
    return r;
  }
  return r;
}

Consolidation::Replacement Consolidation::ReplaceWhole(const NodeWork& w) {
  std::vector<std::pair<int, int>> moving;
  for (int k : w.order) moving.emplace_back(w.node, k);
  return CheapestReplacement(w, moving, packing_.state().allow, 0);
}

// Only for lasting on-demand nodes: a spot node's work is placed afresh at
// its pool's next reclaim anyway. The units that fit go to other nodes' free
// room (largest first, `moves`), the cheapest new node takes the rest.
Consolidation::Replacement Consolidation::ReplacePart(const NodeWork& w, FreeRoomMoves& moves) {
  const Node& n = planner_.snap_.nodes[w.node];
  const Bin& src = planner_.existing_[w.node];
  if (n.offering.capacity_type != CapacityType::kOnDemand ||
      planner_.snap_.time - n.launch_time < kLastingNodeAge ||
      !(free_whole_total_ - std::max(0, src.free_whole) > 0 || w.need_whole == 0))
    return {};
  Allowances allow = packing_.state().allow;
  moves = MoveToFreeRoom(w.node, w.order, allow, /*stop_at_miss=*/false);
  if (moves.dest.empty() || moves.left.empty()) return {};
  return CheapestReplacement(w, moves.left, allow, moves.risk);
}

// Replace with one cheaper node in the same pool: all the units on it, or
// (as Karpenter's replace does) those that do not fit in other nodes' free
// room, the rest moved there. The larger saving is made.
bool Consolidation::ReplaceNode(const NodeWork& w) {
  const Bin& src = planner_.existing_[w.node];
  if (src.pool < 0 || AddedMax() || replacements_off_) return false;
  Replacement whole, rest;
  FreeRoomMoves moves;
  if (strategies_.Has(ConsolidationStrategy::kReplace)) whole = ReplaceWhole(w);
  if (strategies_.Has(ConsolidationStrategy::kPartToFreeRoom)) rest = ReplacePart(w, moves);
  const bool partial = rest.option >= 0 && rest.saves > whole.saves;
  if (!partial) Undo(moves);
  Replacement& chosen = partial ? rest : whole;
  if (chosen.option < 0) return false;
  const Node& n = planner_.snap_.nodes[w.node];
  const Option& op = planner_.options_[chosen.option];
  packing_.state().allow = std::move(chosen.allow);
  if (partial) {
    chosen.bin.moved = moves.left;
  } else {
    for (int k : w.order) chosen.bin.moved.emplace_back(w.node, k);
  }
  TerminationAction t = TerminationOf(n, TerminationKind::kReplace);
  t.saves_usd_per_hour = chosen.saves;
  for (int k : w.order) t.moved_unit_ids.push_back(n.running[k].id);
  PlaceMoved(w.node, moves.dest);
  t.reason =
      "replaced by " + planner_.Describe(planner_.snap_.offerings[op.offering]) + " at " + Usd(op.price) +
      "/h" +
      (partial ? " (" + std::to_string(moves.dest.size()) + " of its units to other nodes' free room)" : "") +
      ": saves " + Usd(chosen.saves) + "/h after " + Usd(w.cost.disruption) + "/h disruption cost";
  AddReplacement(chosen.bin);
  RemoveNode(w.node, false);
  if (partial) RecountFreeWhole();
  terms_.push_back(std::move(t));
  return true;
}

Plan PlanWithConsolidationStrategies(const Snapshot& snapshot, const Policy& policy,
                                     ConsolidationStrategies strategies) {
  Planner planner(snapshot, policy, PlannerOptions{});
  planner.SetConsolidationStrategies(strategies);
  return planner.Run();
}

void Planner::Consolidate(State& st, Plan& plan, std::vector<TerminationAction>& terms) {
  Consolidation(*this, st, plan, terms, consolidation_strategies_).Run();
}

}  // namespace gpuscaler::solver_detail
