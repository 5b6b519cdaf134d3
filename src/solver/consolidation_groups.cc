// Consolidation's strategies over groups of nodes: several nodes of a pool
// replaced by one cheaper new node (Karpenter's multi-node consolidation),
// and two nodes' work split between two cheaper new nodes.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "consolidation.h"

namespace gpuscaler::solver_detail {

void Consolidation::FindGroupCandidates() {
  // Nodes that replacing several by one considers (the first in candidate
  // order): at most kGroupCandidates * (kGroupCandidates - 1) / 2 pairs a plan.
  constexpr size_t kGroupCandidates = 24;
  for (const Candidate& c : candidates_) {
    if (group_candidates_.size() >= kGroupCandidates) break;
    const Bin& b = planner_.existing_[c.node];
    if (c.empty || b.removed || b.receiver || b.pool < 0 || b.type < 0) continue;
    if (planner_.pools_[b.pool].disrupt_allow < 2) continue;
    const Node& n = planner_.snap_.nodes[c.node];
    GroupCandidate gc{c.node, CostOfRunningWork(c.node), 0, 0, 0};
    for (const auto& u : n.running) {
      gc.gpus += GpuShare(u);
      gc.cpu_milli += std::max<int64_t>(0, u.cpu_milli);
      gc.mem_mib += std::max<int64_t>(0, u.memory_mib);
    }
    group_candidates_.push_back(gc);
  }
}

int Consolidation::GroupRoom(int pool) const {
  if (AddedMax()) return 0;
  return std::min({planner_.pools_[pool].disrupt_allow, max_removed_ - removed_, kMaxGroupNodes});
}

// Replaces the nodes of `group` (one pool, none removed) with the cheapest
// new node that holds all their units and saves enough; false when none
// does. Only the first `now` nodes go in this plan (the budget's share); the
// new node is sized for all, and the rest follow into its free room in later
// plans, each a single-node move that saves its whole price.
bool Consolidation::ReplaceGroup(const std::vector<const GroupCandidate*>& group, int now) {
  const Snapshot& snap = planner_.snap_;
  const DisruptionPolicy& d = disruption_;
  const int pool = planner_.existing_[group.front()->node].pool;
  if (!PoolOkToRemove(pool, false, 0, now)) return false;
  double price = 0, disruption = 0, need_gpus = 0;
  int64_t need_cpu = 0, need_mem = 0;
  for (const GroupCandidate* gc : group) {
    price += planner_.existing_[gc->node].price;
    disruption += gc->cost.disruption;
    need_gpus += gc->gpus;
    need_cpu += gc->cpu_milli;
    need_mem += gc->mem_mib;
  }
  double old_total = price;  // what the group costs where it is
  for (const GroupCandidate* gc : group) old_total += gc->cost.risk;
  old_total -= disruption;
  if (old_total < d.min_savings_usd_per_hour || (price > 0 && old_total / price < d.min_savings_fraction))
    return false;
  std::vector<std::pair<int, int>> units;  // (node, running index), largest first
  for (int o : planner_.pool_options_by_price_[pool]) {
    const Option& op = planner_.options_[o];
    if (op.price >= old_total - d.min_savings_usd_per_hour) break;
    if (price > 0 && (old_total - op.price) / price < d.min_savings_fraction) break;
    if (!MayOpen(op, pool)) continue;
    // What the type has at most; Take decides the rest.
    const InstanceType& t = snap.instance_types[op.type];
    if (t.gpu_count < need_gpus - kEps || int64_t{t.vcpus} * 1000 < need_cpu || t.memory_mib < need_mem)
      continue;
    if (units.empty()) {
      for (const GroupCandidate* gc : group)
        for (size_t k = 0; k < snap.nodes[gc->node].running.size(); ++k) units.emplace_back(gc->node, int(k));
      std::stable_sort(units.begin(), units.end(), [&](const auto& x, const auto& y) {
        return GpuShare(snap.nodes[x.first].running[x.second]) >
               GpuShare(snap.nodes[y.first].running[y.second]);
      });
    }
    const Offering& off = snap.offerings[op.offering];
    // Every unit of the group must fit (a scratch bin and allowance); the
    // plan's bin takes the units that move now.
    Bin whole;
    Allowances whole_allow = packing_.state().allow;
    double risk_new = 0;
    if (!planner_.FillNewNode(whole, o, whole_allow, units, &risk_new)) continue;
    std::vector<std::pair<int, int>> moving;
    for (const auto& at : units)
      for (int m = 0; m < now; ++m)
        if (at.first == group[m]->node) moving.push_back(at);
    Allowances allow = packing_.state().allow;
    double risk_now = 0;
    if (!planner_.FillNewNode(group_bin_, o, allow, moving, &risk_now)) continue;
    const double saves = old_total - op.price - risk_new;
    if (saves < d.min_savings_usd_per_hour || (price > 0 && saves / price < d.min_savings_fraction)) continue;
    const double overlap_usd = op.price * WarmUpHours(snap, op.type, off);
    if (saves * horizon_h_ < overlap_usd) continue;
    packing_.state().allow = std::move(allow);
    group_bin_.risk = risk_now;
    group_bin_.moved.insert(group_bin_.moved.end(), moving.begin(), moving.end());
    const std::string to_follow = now < int(group.size()) ? " (" + std::to_string(int(group.size()) - now) +
                                                                " to follow into its free room)"
                                                          : "";
    for (int m = 0; m < now; ++m) {
      const GroupCandidate* gc = group[m];
      const Node& n = snap.nodes[gc->node];
      TerminationAction term = TerminationOf(n, TerminationKind::kReplace);
      term.saves_usd_per_hour = saves / double(group.size());
      for (const auto& u : n.running) term.moved_unit_ids.push_back(u.id);
      std::string others;
      for (const GroupCandidate* other : group)
        if (other != gc) others += (others.empty() ? "" : ", ") + snap.nodes[other->node].id;
      term.reason = "replaced, with " + others + ", by one " + planner_.Describe(off) + " at " +
                    Usd(op.price) + "/h: the " +
                    (group.size() == 2 ? std::string("two") : std::to_string(group.size())) + to_follow +
                    " save " + Usd(saves) + "/h after " + Usd(disruption) + "/h disruption cost";
      RemoveNode(gc->node, false);
      terms_.push_back(std::move(term));
    }
    AddReplacement(group_bin_);
    return true;
  }
  return false;
}

// Groups of three or more: per pool, the longest prefix of its remaining
// candidates that one node replaces. Work that arrived one unit at a time
// sits on the node each unit needed alone, often a node per fractional,
// CPU-heavy or on-demand-floor unit, where one larger node holds them all for
// less. The per-node strategies took the nodes that could go alone. Each node
// of a group is a removal that moves work: a group larger than the pool's
// disruption budget allows now (at least two) is staged, its first nodes
// moved now and the rest left to follow (ReplaceGroup).
void Consolidation::ReplaceGroups() {
  const std::vector<Bin>& existing = planner_.existing_;
  for (size_t first = 0; first < group_candidates_.size(); ++first) {
    const int pool = existing[group_candidates_[first].node].pool;
    bool pool_seen = false;
    for (size_t k = 0; k < first; ++k)
      pool_seen = pool_seen || existing[group_candidates_[k].node].pool == pool;
    if (pool_seen) continue;
    for (bool replaced = true; replaced;) {
      replaced = false;
      std::vector<const GroupCandidate*> members;
      for (const GroupCandidate& gc : group_candidates_)
        if (existing[gc.node].pool == pool && !existing[gc.node].removed) members.push_back(&gc);
      const int room = GroupRoom(pool);
      if (room < 2) break;
      for (int size = std::min(kMaxGroupNodes, int(members.size())); size >= 3 && !replaced; --size) {
        replaced = ReplaceGroup(std::vector<const GroupCandidate*>(members.begin(), members.begin() + size),
                                std::min(room, size));
      }
    }
  }
}

// The cheapest new node of `pool` (price and expected interruption loss)
// for each subset of `units`, by bit mask, under `limit` per hour: cost kInf
// and option -1 where none holds it.
void Consolidation::CheapestBySubset(int pool, const std::vector<std::pair<int, int>>& units, double limit,
                                     std::vector<double>& cheapest, std::vector<int>& cheapest_option) const {
  const Snapshot& snap = planner_.snap_;
  const int n = int(units.size());
  const int full = (1 << n) - 1;
  cheapest.assign(full + 1, kInf);
  cheapest_option.assign(full + 1, -1);
  Bin scratch;
  Allowances scratch_allow;
  for (int mask = 1; mask <= full; ++mask) {
    std::vector<std::pair<int, int>> sub;
    double g = 0;
    int64_t cpu = 0, mem = 0;
    for (int k = 0; k < n; ++k)
      if (mask >> k & 1) {
        sub.push_back(units[k]);
        const DemandUnit& u = snap.nodes[units[k].first].running[units[k].second];
        g += GpuShare(u);
        cpu += std::max<int64_t>(0, u.cpu_milli);
        mem += std::max<int64_t>(0, u.memory_mib);
      }
    for (int o : planner_.pool_options_by_price_[pool]) {
      const Option& op = planner_.options_[o];
      if (op.price >= limit) break;
      if (!MayOpen(op, pool)) continue;
      const InstanceType& t = snap.instance_types[op.type];
      if (t.gpu_count < g - kEps || int64_t{t.vcpus} * 1000 < cpu || t.memory_mib < mem) continue;
      scratch_allow = packing_.state().allow;  // reuses its storage
      double r = 0;
      if (!planner_.FillNewNode(scratch, o, scratch_allow, sub, &r)) continue;
      cheapest[mask] = op.price + r;
      cheapest_option[mask] = o;
      break;
    }
  }
}

// Whether the split of `units` between new nodes of `options` (by the masks
// `parts`) holds with the allowances: then it is made, `a` and `b` replaced.
bool Consolidation::CommitSplit(const GroupCandidate& a, const GroupCandidate& b,
                                const std::vector<std::pair<int, int>>& units, const int (&parts)[2],
                                const int (&options)[2], double cost, double saves) {
  const Snapshot& snap = planner_.snap_;
  Allowances allow = packing_.state().allow;
  std::vector<Bin> bins;
  for (int part = 0; part < 2; ++part) {
    std::vector<std::pair<int, int>> sub;
    for (int k = 0; k < int(units.size()); ++k)
      if (parts[part] >> k & 1) sub.push_back(units[k]);
    Bin nb;
    double r = 0;
    if (!planner_.FillNewNode(nb, options[part], allow, sub, &r)) return false;
    nb.risk = r;
    nb.moved = sub;
    bins.push_back(std::move(nb));
  }
  packing_.state().allow = std::move(allow);
  for (const GroupCandidate* gc : {&a, &b}) {
    const Node& nd = snap.nodes[gc->node];
    TerminationAction term = TerminationOf(nd, TerminationKind::kReplace);
    term.saves_usd_per_hour = saves / 2;
    for (const auto& u : nd.running) term.moved_unit_ids.push_back(u.id);
    term.reason = "replaced, with " + snap.nodes[(gc == &a ? b : a).node].id + ", by " +
                  planner_.Describe(snap.offerings[planner_.options_[options[0]].offering]) + " and " +
                  planner_.Describe(snap.offerings[planner_.options_[options[1]].offering]) + " at " +
                  Usd(cost) + "/h: the two save " + Usd(saves) + "/h after " +
                  Usd(a.cost.disruption + b.cost.disruption) + "/h disruption cost";
    RemoveNode(gc->node, false);
    terms_.push_back(std::move(term));
  }
  for (Bin& nb : bins) AddReplacement(nb);
  return true;
}

// Two nodes onto two new ones: the units of two candidates of a pool, split
// between two new nodes that cost less than both. Work that arrived at
// different times shares nodes by arrival, not by shape: a CPU-heavy pod
// leaves a GPU node's GPU idle while a GPU replica has a node of its own; the
// replica beside the CPU-heavy pod and the small unit on a small node cost
// less, and no single node holds all three for less. Every split of the (few)
// units is tried, each part on the cheapest node that holds it.
void Consolidation::SplitPairs() {
  // Pairs of the first kSplitCandidates candidates, with at most
  // kSplitMaxUnits units between them (every split of them is tried:
  // 2^kSplitMaxUnits subsets).
  constexpr size_t kSplitCandidates = 12;
  constexpr int kSplitMaxUnits = 6;
  const Snapshot& snap = planner_.snap_;
  const std::vector<Bin>& existing = planner_.existing_;
  const DisruptionPolicy& d = disruption_;
  std::vector<double> cheapest;
  std::vector<int> cheapest_option;
  const size_t first_nodes = std::min(group_candidates_.size(), kSplitCandidates);
  for (size_t i = 0; i < first_nodes; ++i) {
    for (size_t j = i + 1; j < first_nodes; ++j) {
      if (removed_ + 2 > max_removed_ ||
          packing_.state().added + 2 > planner_.policy_.scaling.max_nodes_added_per_tick)
        break;
      const GroupCandidate& a = group_candidates_[i];
      const GroupCandidate& b = group_candidates_[j];
      if (existing[a.node].removed || existing[b.node].removed || existing[a.node].receiver ||
          existing[b.node].receiver || existing[a.node].pool != existing[b.node].pool)
        continue;
      if (snap.time - snap.nodes[a.node].launch_time < kLastingNodeAge ||
          snap.time - snap.nodes[b.node].launch_time < kLastingNodeAge)
        continue;
      const int pool = existing[a.node].pool;
      if (GroupRoom(pool) < 2 || !PoolOkToRemove(pool, false, 0, 2)) continue;
      std::vector<std::pair<int, int>> units;
      for (const GroupCandidate* gc : {&a, &b})
        for (size_t k = 0; k < snap.nodes[gc->node].running.size(); ++k) units.emplace_back(gc->node, int(k));
      const int n = int(units.size());
      if (n < 2 || n > kSplitMaxUnits) continue;
      const double price = existing[a.node].price + existing[b.node].price;
      const double old_total = price + a.cost.risk + b.cost.risk - a.cost.disruption - b.cost.disruption;
      const double limit = old_total - d.min_savings_usd_per_hour;
      if (limit <= 0) continue;
      const int full = (1 << n) - 1;
      CheapestBySubset(pool, units, limit, cheapest, cheapest_option);
      // The best split (unit 0 on the first node); one node for all is
      // ReplacePairs'.
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
        const Option& op = planner_.options_[cheapest_option[mask]];
        overlap += op.price * WarmUpHours(snap, op.type, snap.offerings[op.offering]);
      }
      if (saves * horizon_h_ < overlap) continue;
      const int parts[2] = {best_mask, full ^ best_mask};
      const int options[2] = {cheapest_option[best_mask], cheapest_option[full ^ best_mask]};
      if (options[0] == options[1] && !MayOpen(planner_.options_[options[0]], pool, 2)) continue;
      CommitSplit(a, b, units, parts, options, best, saves);
    }
  }
}

// Pairs: any two remaining candidates of a pool.
void Consolidation::ReplacePairs() {
  const std::vector<Bin>& existing = planner_.existing_;
  for (size_t i = 0; i < group_candidates_.size(); ++i) {
    for (size_t j = i + 1; j < group_candidates_.size(); ++j) {
      if (removed_ + 2 > max_removed_ || AddedMax() || replacements_off_) return;
      const GroupCandidate& a = group_candidates_[i];
      const GroupCandidate& b = group_candidates_[j];
      if (existing[a.node].removed || existing[b.node].removed ||
          existing[a.node].pool != existing[b.node].pool)
        continue;
      ReplaceGroup({&a, &b}, 2);
    }
  }
}

}  // namespace gpuscaler::solver_detail
