#include "gpuscaler/controller/scaling.h"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_map>

namespace gpuscaler {

namespace {

// A replacement: terminations whose running work moves onto new nodes of the
// same plan, and those nodes. Removals without their new node leave work with
// nowhere to go, so they are held with it. A new node for several removals
// is sized for all their work: launched with only some of them, it costs more
// than before and may be replaced back by the next plan, so such a
// replacement is kept or held whole. A new node for one removal holds all its
// work, so it may go ahead while the removal waits.
struct Replacement {
  std::vector<size_t> terminations;           // indexes into Plan::terminations
  std::set<std::pair<int, int>> new_nodes;    // (launch index, ordinal)
};

// The plan's replacements; `of_termination[i]` is the index of termination
// i's replacement, or -1 when its work moves onto no new node (or it moves
// none). Terminations whose work shares a new node are one replacement.
std::vector<Replacement> ReplacementsOf(const Plan& plan, std::vector<int>* of_termination) {
  of_termination->assign(plan.terminations.size(), -1);
  // Only moved units matter: index them (few), then scan the placements once.
  std::unordered_map<std::string_view, size_t> termination_of_unit;
  for (size_t i = 0; i < plan.terminations.size(); ++i)
    for (const std::string& id : plan.terminations[i].moved_unit_ids) termination_of_unit.emplace(id, i);
  if (termination_of_unit.empty()) return {};
  // Terminations joined through a shared new node (union-find over them).
  std::vector<size_t> root(plan.terminations.size());
  std::iota(root.begin(), root.end(), size_t{0});
  auto find = [&](size_t t) {
    while (root[t] != t) t = root[t] = root[root[t]];
    return t;
  };
  std::vector<std::pair<size_t, std::pair<int, int>>> moves;  // (termination, new node)
  std::map<std::pair<int, int>, size_t> first_onto;           // new node -> a termination moving onto it
  for (const Placement& p : plan.placements) {
    if (p.launch_index < 0) continue;
    auto t = termination_of_unit.find(p.unit_id);
    if (t == termination_of_unit.end()) continue;
    const std::pair<int, int> node{p.launch_index, p.launch_ordinal};
    moves.emplace_back(t->second, node);
    auto [other, fresh] = first_onto.emplace(node, t->second);
    if (!fresh) root[find(t->second)] = find(other->second);
  }
  std::vector<Replacement> out;
  std::map<size_t, int> index_of_root;
  for (const auto& [t, node] : moves) {
    auto [it, fresh] = index_of_root.emplace(find(t), static_cast<int>(out.size()));
    if (fresh) out.emplace_back();
    out[it->second].new_nodes.insert(node);
    (*of_termination)[t] = it->second;
  }
  for (size_t t = 0; t < plan.terminations.size(); ++t)
    if ((*of_termination)[t] >= 0) out[(*of_termination)[t]].terminations.push_back(t);
  return out;
}

// Takes the new nodes of held replacements out of their launches: a dropped
// node's place goes to the launch's last node (placements follow), and the
// placements onto it go (moved units stay where they run; pending units the
// plan had put beside them wait for the next plan). Returns the number of
// nodes dropped.
int DropNewNodes(const std::set<std::pair<int, int>>& dropped, Plan* plan) {
  int count = 0;
  // Highest ordinal first, so the launch's last node is never one still to drop.
  for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
    const auto [li, ordinal] = *it;
    LaunchAction& l = plan->launches[static_cast<size_t>(li)];
    if (ordinal >= l.count) continue;  // already cut with the launch
    const int last = l.count - 1;
    std::vector<Placement> kept;
    for (Placement& p : plan->placements) {
      if (p.launch_index == li && p.launch_ordinal == ordinal) {
        l.unit_ids.erase(std::remove(l.unit_ids.begin(), l.unit_ids.end(), p.unit_id), l.unit_ids.end());
        continue;
      }
      if (p.launch_index == li && p.launch_ordinal == last) p.launch_ordinal = ordinal;
      kept.push_back(std::move(p));
    }
    plan->placements = std::move(kept);
    l.usd_per_hour *= static_cast<double>(last) / l.count;
    l.expected_interruption_usd_per_hour *= static_cast<double>(last) / l.count;
    l.count = last;
    ++count;
  }
  return count;
}

}  // namespace

GovernorResult ScalingGovernor::Apply(const ScalingPolicy& scaling, const std::map<std::string, int>& nodes_per_pool,
                                      WallTime now, Plan* plan) {
  GovernorResult result;
  std::map<std::string, int> launches;
  std::map<std::string, int> terms;
  std::set<std::string> pools;
  for (const auto& [pool, n] : nodes_per_pool) pools.insert(pool);
  // Warm capacity's refills and retirements change no running capacity:
  // the rules below neither count nor hold them.
  for (const LaunchAction& l : plan->launches) {
    if (l.into_warm) continue;
    launches[l.pool] += l.count;
    pools.insert(l.pool);
  }
  for (const TerminationAction& t : plan->terminations) {
    if (t.warm) continue;
    terms[t.pool] += 1;
    pools.insert(t.pool);
  }

  const Seconds keep = std::max(scaling.scale_up_stabilization, scaling.scale_down_stabilization);
  std::map<std::string, int> allowed_up;
  std::map<std::string, int> allowed_down;
  for (const std::string& pool : pools) {
    auto it = nodes_per_pool.find(pool);
    const int current = it == nodes_per_pool.end() ? 0 : it->second;
    const int up = launches[pool];
    const int down = terms[pool];
    const int desired = current + up - down;
    // Scale-down counts the empty nodes the plan left for later ticks: the
    // plan needs the pool this small, whatever one tick may remove.
    auto left = plan->empty_nodes_left_by_pool.find(pool);
    const int desired_down = desired - (left == plan->empty_nodes_left_by_pool.end() ? 0 : left->second);
    std::deque<Sample>& h = history_[pool];
    h.push_back({now, desired, desired_down});
    while (!h.empty() && h.front().time < now - keep) h.pop_front();

    int max_desired = desired_down;
    int min_desired = desired;
    for (const Sample& s : h) {
      if (s.time >= now - scaling.scale_down_stabilization) max_desired = std::max(max_desired, s.desired_down);
      if (s.time >= now - scaling.scale_up_stabilization) min_desired = std::min(min_desired, s.desired);
    }

    int ok_up = std::clamp(min_desired - current + down, 0, up);
    auto last_up = last_up_.find(pool);
    if (ok_up > 0 && last_up != last_up_.end() && now - last_up->second < scaling.scale_up_cooldown) {
      result.notes.push_back("pool " + pool + ": scale-up cooldown");
      ok_up = 0;
    }
    if (ok_up < up) {
      if (h.size() > 1) pending_hold_ = true;
      if (min_desired < desired) result.notes.push_back("pool " + pool + ": scale-up stabilization window");
    }

    int ok_down = std::clamp(current + ok_up - max_desired, 0, down);
    if (ok_down < down && max_desired > desired_down) {
      result.notes.push_back("pool " + pool + ": scale-down stabilization keeps " + std::to_string(max_desired) +
                             " nodes");
    }
    auto last_down = last_down_.find(pool);
    const bool cool_up = last_up != last_up_.end() && now - last_up->second < scaling.scale_down_cooldown;
    const bool cool_down = last_down != last_down_.end() && now - last_down->second < scaling.scale_down_cooldown;
    if (ok_down > 0 && (cool_up || cool_down)) {
      result.notes.push_back("pool " + pool + ": scale-down cooldown");
      ok_down = 0;
    }
    allowed_up[pool] = ok_up;
    allowed_down[pool] = ok_down;
  }

  // Max step per tick, then cut what is not allowed from the end of each list.
  int total_up = 0;
  for (auto it = plan->launches.begin(); it != plan->launches.end(); ++it) {
    if (it->into_warm) continue;
    int& budget = allowed_up[it->pool];
    int keep_count = std::min({it->count, budget, std::max(0, scaling.max_nodes_added_per_tick - total_up)});
    budget -= keep_count;
    total_up += keep_count;
    if (keep_count < it->count) {
      result.launches_held += it->count - keep_count;
      if (it->count > 0) it->usd_per_hour *= static_cast<double>(keep_count) / it->count;
      it->count = keep_count;
    }
  }
  if (total_up >= scaling.max_nodes_added_per_tick && result.launches_held > 0) {
    result.notes.push_back("max_nodes_added_per_tick reached");
  }
  // Terminations in plan order; a replacement is decided at its first
  // termination, for all of them and its new nodes together.
  std::vector<int> replacement_of;
  const std::vector<Replacement> replacements = ReplacementsOf(*plan, &replacement_of);
  std::vector<char> decided(replacements.size(), 0), let_through(plan->terminations.size(), 0);
  std::set<std::pair<int, int>> dropped_new_nodes;
  int total_down = 0;
  for (size_t i = 0; i < plan->terminations.size(); ++i) {
    if (plan->terminations[i].warm) {
      let_through[i] = 1;
      continue;
    }
    const int r = replacement_of[i];
    bool launched = true;
    if (r >= 0)
      for (const auto& [li, ordinal] : replacements[r].new_nodes)
        launched = launched && ordinal < plan->launches[li].count;
    // A removal that is no part of a replacement, or one node replaced by a
    // new node that holds all its work (the new node may go ahead while the
    // removal waits: the next plans move the work onto it once removals are
    // allowed), is let through by the rules alone.
    if (r < 0 || (replacements[r].terminations.size() == 1 && launched)) {
      int& budget = allowed_down[plan->terminations[i].pool];
      if (budget > 0 && total_down < scaling.max_nodes_removed_per_tick) {
        --budget;
        ++total_down;
        let_through[i] = 1;
      }
      continue;
    }
    if (decided[r]) continue;
    decided[r] = 1;
    const Replacement& rep = replacements[r];
    bool whole = total_down + static_cast<int>(rep.terminations.size()) <= scaling.max_nodes_removed_per_tick;
    whole = whole && launched;
    std::map<std::string, int> per_pool;
    for (size_t t : rep.terminations) ++per_pool[plan->terminations[t].pool];
    for (const auto& [pool, n] : per_pool) whole = whole && allowed_down[pool] >= n;
    if (whole) {
      for (const auto& [pool, n] : per_pool) allowed_down[pool] -= n;
      total_down += static_cast<int>(rep.terminations.size());
      for (size_t t : rep.terminations) let_through[t] = 1;
    } else {
      dropped_new_nodes.insert(rep.new_nodes.begin(), rep.new_nodes.end());
    }
  }
  std::vector<TerminationAction> kept;
  for (size_t i = 0; i < plan->terminations.size(); ++i) {
    if (let_through[i]) {
      kept.push_back(std::move(plan->terminations[i]));
    } else {
      ++result.terminations_held;
    }
  }
  if (total_down >= scaling.max_nodes_removed_per_tick && result.terminations_held > 0) {
    result.notes.push_back("max_nodes_removed_per_tick reached");
  }
  plan->terminations = std::move(kept);
  const int new_nodes_held = DropNewNodes(dropped_new_nodes, plan);
  if (new_nodes_held > 0) {
    result.launches_held += new_nodes_held;
    result.notes.push_back(std::to_string(new_nodes_held) +
                           " replacement node(s) held with the removals they were for");
  }
  pending_hold_ = result.launches_held > 0 || result.terminations_held > 0;
  return result;
}

void HoldBlockedTerminations(const Snapshot& snapshot, const Policy& policy, Plan* plan, GovernorResult* held) {
  const std::vector<std::string>& blocked = snapshot.scale_down_blocked_classes;
  if (blocked.empty()) return;
  std::set<std::string> pools;
  bool all_pools = false;
  for (const std::string& cls : blocked) {
    const WorkloadClassPolicy* c = policy.FindClass(cls);
    if (c == nullptr || c->pools.empty()) {
      all_pools = true;
    } else {
      pools.insert(c->pools.begin(), c->pools.end());
    }
  }
  // Nor do empty nodes left for later count towards a smaller pool there.
  for (auto it = plan->empty_nodes_left_by_pool.begin(); it != plan->empty_nodes_left_by_pool.end();) {
    it = all_pools || pools.count(it->first) != 0 ? plan->empty_nodes_left_by_pool.erase(it) : std::next(it);
  }
  std::vector<char> keep_node(plan->terminations.size(), 0);
  for (size_t i = 0; i < plan->terminations.size(); ++i) {
    const TerminationAction& t = plan->terminations[i];
    keep_node[i] = all_pools || pools.count(t.pool) != 0;
    const std::string& wanted = t.instance_id.empty() ? t.node_id : t.instance_id;
    for (const Node& n : snapshot.nodes) {
      if (n.instance_id != wanted) continue;
      for (const DemandUnit& u : n.running) {
        if (std::binary_search(blocked.begin(), blocked.end(), u.workload_class)) keep_node[i] = 1;
      }
      break;
    }
  }
  // A replacement is held whole: all its removals and its new nodes.
  std::vector<int> replacement_of;
  const std::vector<Replacement> replacements = ReplacementsOf(*plan, &replacement_of);
  std::set<std::pair<int, int>> dropped_new_nodes;
  for (const Replacement& rep : replacements) {
    if (rep.terminations.size() < 2) continue;  // a lone removal waits; its new node may go ahead
    bool held_whole = false;
    for (size_t t : rep.terminations) held_whole = held_whole || keep_node[t];
    if (!held_whole) continue;
    for (size_t t : rep.terminations) keep_node[t] = 1;
    dropped_new_nodes.insert(rep.new_nodes.begin(), rep.new_nodes.end());
  }
  std::vector<TerminationAction> kept;
  for (size_t i = 0; i < plan->terminations.size(); ++i) {
    if (keep_node[i]) {
      ++held->terminations_held;
      held->notes.push_back("stale signals: keeping " + plan->terminations[i].node_id);
    } else {
      kept.push_back(std::move(plan->terminations[i]));
    }
  }
  plan->terminations = std::move(kept);
  const int new_nodes_held = DropNewNodes(dropped_new_nodes, plan);
  if (new_nodes_held > 0) {
    held->launches_held += new_nodes_held;
    held->notes.push_back("stale signals: " + std::to_string(new_nodes_held) +
                          " replacement node(s) held with the removals they were for");
  }
}

}  // namespace gpuscaler
