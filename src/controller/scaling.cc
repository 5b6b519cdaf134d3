#include "gpuscaler/controller/scaling.h"

#include <algorithm>
#include <iterator>
#include <set>

namespace gpuscaler {

GovernorResult ScalingGovernor::Apply(const ScalingPolicy& scaling, const std::map<std::string, int>& nodes_per_pool,
                                      WallTime now, Plan* plan) {
  GovernorResult result;
  std::map<std::string, int> launches;
  std::map<std::string, int> terms;
  std::set<std::string> pools;
  for (const auto& [pool, n] : nodes_per_pool) pools.insert(pool);
  for (const LaunchAction& l : plan->launches) {
    launches[l.pool] += l.count;
    pools.insert(l.pool);
  }
  for (const TerminationAction& t : plan->terminations) {
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
  std::vector<TerminationAction> kept;
  int total_down = 0;
  for (TerminationAction& t : plan->terminations) {
    int& budget = allowed_down[t.pool];
    if (budget > 0 && total_down < scaling.max_nodes_removed_per_tick) {
      --budget;
      ++total_down;
      kept.push_back(std::move(t));
    } else {
      ++result.terminations_held;
    }
  }
  if (total_down >= scaling.max_nodes_removed_per_tick && result.terminations_held > 0) {
    result.notes.push_back("max_nodes_removed_per_tick reached");
  }
  plan->terminations = std::move(kept);
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
  std::vector<TerminationAction> kept;
  for (TerminationAction& t : plan->terminations) {
    bool keep_node = all_pools || pools.count(t.pool) != 0;
    const std::string& wanted = t.instance_id.empty() ? t.node_id : t.instance_id;
    for (const Node& n : snapshot.nodes) {
      if (n.instance_id != wanted) continue;
      for (const DemandUnit& u : n.running) {
        if (std::binary_search(blocked.begin(), blocked.end(), u.workload_class)) keep_node = true;
      }
      break;
    }
    if (keep_node) {
      ++held->terminations_held;
      held->notes.push_back("stale signals: keeping " + t.node_id);
    } else {
      kept.push_back(std::move(t));
    }
  }
  plan->terminations = std::move(kept);
}

}  // namespace gpuscaler
