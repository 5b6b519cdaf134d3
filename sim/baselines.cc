#include "sim/baselines.h"

#include <algorithm>
#include <functional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "gpuscaler/policy/loader.h"
#include "gpuscaler/solver/planner.h"
#include "sim/baseline_fit.h"
#include "sim/capacity_spread.h"

namespace gpuscaler::sim {
namespace {

// The fitting rules every greedy baseline shares (sim/baseline_fit.h).
using namespace baseline_detail;

// Orders candidates for one unit; the first is launched, the rest are fallbacks.
using Ranker = std::function<void(const DemandUnit&, std::vector<Candidate>*)>;

// `split`: classes with an on-demand floor are split over capacity-spread
// domains (sim/capacity_spread.h): each of their pending units goes to the
// domain with the fewest of the class's pods, and only on that domain's
// nodes or a new node of its capacity type, with fallbacks of that type only.
Plan GreedyPlan(const Snapshot& s, const Policy& policy, bool spot_allowed, bool split, const Ranker& rank,
                const std::string& name) {
  Plan plan;
  const FitIndex index(s);
  std::vector<Bin> bins = index.ExistingBins();
  const SpreadClasses spread = split ? SpreadClasses(policy) : SpreadClasses();
  SpreadClasses::Counts domain_pods(spread);
  std::map<std::string, int> pool_nodes;
  for (const Node& n : s.nodes) {
    plan.cost_before_usd_per_hour += n.offering.usd_per_hour;
    if (n.state != NodeState::kTerminating) {
      pool_nodes[n.pool] += 1;
      domain_pods.AddRunning(n.labels, n.running);
    }
  }
  const size_t existing = bins.size();
  const std::vector<Candidate> all = index.Candidates(policy, spot_allowed);

  // (pool, offering key, node labels) -> launch index
  std::map<std::tuple<std::string, std::string, std::map<std::string, std::string>>, int> launch_of;
  std::vector<std::string> used_nodes;
  for (const DemandUnit& u : s.pending) {
    const CapacitySpread* split_class = spread.Find(u.workload_class);
    const int domain = split_class != nullptr ? domain_pods.Next(u.workload_class, u.id) : -1;
    auto in_domain = [&](const Bin& b) {
      return split_class == nullptr || SpreadClasses::InDomain(b.spread_labels, u.workload_class, domain);
    };
    bool placed = false;
    for (size_t i = 0; i < bins.size() && !placed; ++i) {
      const Offering& o = *bins[i].offering;
      if (!Admits(policy, u, bins[i].pool, o) || !in_domain(bins[i])) continue;
      if (!TryFit(u, bins[i], true)) continue;
      placed = true;
      Placement p;
      p.unit_id = u.id;
      if (i < existing) {
        p.node_id = bins[i].node_id;
        used_nodes.push_back(bins[i].node_id);
      } else {
        p.launch_index = launch_of[{bins[i].pool, o.Key(), bins[i].spread_labels}];
        p.launch_ordinal = bins[i].launch_ordinal;
      }
      plan.placements.push_back(p);
    }
    if (placed) {
      if (split_class != nullptr) domain_pods.Add(u.workload_class, domain);
      continue;
    }
    std::vector<Candidate> cands;
    for (const Candidate& c : all) {
      if (!Admits(policy, u, c.pool, *c.offering)) continue;
      if (split_class != nullptr && c.offering->capacity_type != split_class->TypeOf(domain)) continue;
      const NodePoolPolicy* pool = policy.FindPool(c.pool);
      if (pool != nullptr && pool_nodes[c.pool] >= pool->max_nodes) continue;
      Bin probe = index.EmptyBin(c.pool, *c.offering);
      if (TryFit(u, probe, false)) cands.push_back(c);
    }
    if (cands.empty()) {
      std::string why = name + ": no offering fits";
      if (split_class != nullptr) {
        why += " in capacity-spread domain " + SpreadLabelValue(domain) + " of " +
               std::to_string(split_class->domains) + " (" +
               std::string(ToString(split_class->TypeOf(domain))) + " only)";
      }
      plan.unplaced.push_back({u.id, u.workload_class, UnplacedReason::kNoOfferingFits, std::move(why)});
      continue;
    }
    rank(u, &cands);
    const Candidate& best = cands.front();
    std::map<std::string, std::string> labels =
        spread.LabelsForNewNode(best.pool, best.offering->capacity_type, u.workload_class, domain);
    auto key = std::make_tuple(best.pool, best.offering->Key(), labels);
    auto it = launch_of.find(key);
    if (it == launch_of.end()) {
      LaunchAction l;
      l.pool = best.pool;
      l.offering = *best.offering;
      for (size_t k = 1; k < cands.size() && l.fallbacks.size() < 8; ++k) {
        if (cands[k].pool != best.pool) continue;
        // A node of one domain (NodePool) is of one capacity type.
        if (!labels.empty() && cands[k].offering->capacity_type != best.offering->capacity_type) continue;
        l.fallbacks.push_back(*cands[k].offering);
      }
      l.reason = name + ": " + std::string(ToString(best.offering->capacity_type)) + " " +
                 best.offering->instance_type + " for pending " + u.workload_class + " work";
      if (split_class != nullptr) {
        l.reason += " (capacity-spread domain " + SpreadLabelValue(domain) + " of " +
                    std::to_string(split_class->domains) + ")";
      }
      l.node_labels = labels;
      it = launch_of.emplace(std::move(key), static_cast<int>(plan.launches.size())).first;
      plan.launches.push_back(std::move(l));
    }
    LaunchAction& l = plan.launches[static_cast<size_t>(it->second)];
    Bin b = index.EmptyBin(best.pool, *best.offering);
    b.launch_ordinal = l.count;
    b.spread_labels = std::move(labels);
    TryFit(u, b, true);
    bins.push_back(std::move(b));
    l.count += 1;
    l.usd_per_hour += best.offering->usd_per_hour;
    l.unit_ids.push_back(u.id);
    pool_nodes[best.pool] += 1;
    if (split_class != nullptr) domain_pods.Add(u.workload_class, domain);
    plan.placements.push_back({u.id, "", it->second, l.count - 1});
  }

  // Empty nodes go, unless they serve a class whose signals are stale.
  const std::set<std::string> blocked_pools = PoolsOfBlockedClasses(s, policy);
  for (const Node& n : s.nodes) {
    if (n.state != NodeState::kReady || !n.running.empty() || n.do_not_disrupt) continue;
    if (blocked_pools.count(n.pool) != 0 || Contains(used_nodes, n.id)) continue;
    if (s.time - n.launch_time < policy.disruption.min_node_age) continue;
    TerminationAction t = TerminationOf(n, TerminationKind::kEmpty);
    t.saves_usd_per_hour = n.offering.usd_per_hour;
    t.reason = name + ": empty node";
    plan.terminations.push_back(std::move(t));
  }
  FinishPlan(plan, name);
  return plan;
}

}  // namespace

const std::vector<std::string>& BaselineNames() {
  static const std::vector<std::string> kNames = {"on-demand", "static-peak", "karpenter", "greedy",
                                                  "cluster-autoscaler"};
  return kNames;
}

Policy ForceOnDemand(Policy policy) {
  for (NodePoolPolicy& p : policy.pools) p.capacity_types = {CapacityType::kOnDemand};
  for (WorkloadClassPolicy& c : policy.classes) c.max_spot_share = 0;
  policy.spot.fallback_to_on_demand = true;
  policy.content_hash = PolicyContentHash(policy);
  return policy;
}

namespace {

// The policy with one optional class field cleared in every class; the
// hash is recomputed only when a class had it, so a policy without the
// field keeps its hash.
template <typename T>
Policy WithoutClassOption(Policy policy, std::optional<T> WorkloadClassPolicy::*field) {
  bool had = false;
  for (WorkloadClassPolicy& c : policy.classes) {
    had = had || (c.*field).has_value();
    (c.*field).reset();
  }
  if (had) policy.content_hash = PolicyContentHash(policy);
  return policy;
}

}  // namespace

Policy WithoutForecasts(Policy policy) {
  return WithoutClassOption(std::move(policy), &WorkloadClassPolicy::forecast);
}

Policy WithoutWarmCapacity(Policy policy) {
  bool had = false;
  for (NodePoolPolicy& pool : policy.pools) {
    had = had || pool.warm.has_value();
    pool.warm.reset();
  }
  if (had) policy.content_hash = PolicyContentHash(policy);
  return policy;
}

Policy WithoutDeferral(Policy policy) {
  return WithoutClassOption(std::move(policy), &WorkloadClassPolicy::deadline);
}

Policy WithoutLostWorkBudget(Policy policy) {
  bool had = false;
  for (WorkloadClassPolicy& c : policy.classes) {
    had = had || c.max_lost_work_share < 1.0;
    c.max_lost_work_share = 1.0;
  }
  if (had) policy.content_hash = PolicyContentHash(policy);
  return policy;
}

Policy Reactive(Policy policy) {
  policy = WithoutWarmCapacity(WithoutDeferral(WithoutForecasts(std::move(policy))));
  policy.scaling.schedules.clear();
  policy.content_hash = PolicyContentHash(policy);
  return policy;
}

bool PlansAhead(const Policy& policy) {
  return !policy.scaling.schedules.empty() ||
         std::any_of(policy.pools.begin(), policy.pools.end(),
                     [](const NodePoolPolicy& p) { return p.warm.has_value(); }) ||
         std::any_of(policy.classes.begin(), policy.classes.end(),
                     [](const WorkloadClassPolicy& c) { return c.forecast.has_value() || c.deadline.has_value(); });
}

PlannerFn CheapestNodeGreedyPlanner() {
  return [](const Snapshot& s, const Policy& policy) {
    auto rank = [](const DemandUnit&, std::vector<Candidate>* c) {
      std::stable_sort(c->begin(), c->end(), [](const Candidate& a, const Candidate& b) {
        const bool sa = a.offering->capacity_type == CapacityType::kSpot;
        const bool sb = b.offering->capacity_type == CapacityType::kSpot;
        if (sa != sb) return sa;
        if (a.offering->usd_per_hour != b.offering->usd_per_hour) return a.offering->usd_per_hour < b.offering->usd_per_hour;
        return a.offering->Key() < b.offering->Key();
      });
    };
    return GreedyPlan(s, policy, true, true, rank, "greedy");
  };
}

PlannerFn ClusterAutoscalerLikePlanner() {
  return [](const Snapshot& s, const Policy& policy) {
    auto rank = [](const DemandUnit& u, std::vector<Candidate>* c) {
      auto waste = [&u](const Candidate& x) {
        const double gpus = std::max(1, x.type->gpu_count);
        const double used = std::max(1, WholeGpusTaken(u));
        const double cpu = std::max(1, x.type->vcpus) * 1000.0;
        return (gpus - used) / gpus + std::max(0.0, cpu - static_cast<double>(u.cpu_milli)) / cpu * 0.1;
      };
      std::stable_sort(c->begin(), c->end(), [&](const Candidate& a, const Candidate& b) {
        const double wa = waste(a);
        const double wb = waste(b);
        if (wa != wb) return wa < wb;
        if (a.offering->usd_per_hour != b.offering->usd_per_hour) return a.offering->usd_per_hour < b.offering->usd_per_hour;
        return a.offering->Key() < b.offering->Key();
      });
    };
    return GreedyPlan(s, policy, false, false, rank, "cluster-autoscaler-like");
  };
}

PlannerFn StaticPeakPlanner(std::map<std::pair<std::string, std::string>, int> peak) {
  return [peak = std::move(peak)](const Snapshot& s, const Policy&) {
    Plan plan;
    std::map<std::pair<std::string, std::string>, int> have;
    for (const Node& n : s.nodes) {
      plan.cost_before_usd_per_hour += n.offering.usd_per_hour;
      if (n.state != NodeState::kTerminating) have[{n.offering.Key(), n.pool}] += 1;
    }
    for (const auto& [key, want] : peak) {
      const int missing = want - have[key];
      if (missing <= 0) continue;
      auto o = std::find_if(s.offerings.begin(), s.offerings.end(),
                            [&](const Offering& x) { return x.Key() == key.first; });
      if (o == s.offerings.end()) continue;
      LaunchAction l;
      l.pool = key.second;
      l.offering = *o;
      l.count = missing;
      l.usd_per_hour = missing * o->usd_per_hour;
      l.reason = "static-peak: keep " + std::to_string(want) + " " + key.first;
      plan.launches.push_back(std::move(l));
    }
    plan.cost_after_usd_per_hour = plan.cost_before_usd_per_hour;
    for (const LaunchAction& l : plan.launches) plan.cost_after_usd_per_hour += l.usd_per_hour;
    plan.summary = "static-peak: " + std::to_string(plan.launches.size()) + " launch groups";
    return plan;
  };
}

}  // namespace gpuscaler::sim
