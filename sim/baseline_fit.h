// Shared by the greedy baselines (baselines.cc, karpenter_baseline.cc): a
// node's free room as those autoscalers see it (whole GPUs, GPU fractions
// and MIG slices by milli-GPU, vCPU, memory), whether a unit may run on an
// offering of a pool, which pools may not scale down, and how a plan's cost
// and summary are told. Private to the simulator.
#pragma once

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/model/find_by_name.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::sim::baseline_detail {

// Free capacity of one node (existing or opened by this plan).
struct Bin {
  std::string pool;
  const Offering* offering = nullptr;
  const InstanceType* type = nullptr;
  const GpuModel* gpu = nullptr;
  std::vector<int> free_milli;
  int64_t free_cpu = 0;
  int64_t free_mem = 0;
  std::string node_id;      // existing node
  int launch_ordinal = -1;  // new node: index into `opened`
  bool accepts = true;
  // The node's capacity-spread labels (sim/capacity_spread.h), for the
  // split classes' domains; empty without split classes.
  std::map<std::string, std::string> spread_labels;
};

// A (pool, offering) the policy allows, with its type and GPU model.
struct Candidate {
  std::string pool;
  const Offering* offering;
  const InstanceType* type;
  const GpuModel* gpu;
};

// Whether the unit's placement rules (spot, capacity type, pool, zones,
// instance types, its class's pools, a class max_spot_share of 0: on-demand
// only) admit `o` in `pool`.
bool Admits(const Policy& policy, const DemandUnit& u, const std::string& pool, const Offering& o);
// Whether the pool may buy `o` (NodePoolPolicy::AllowsType, then its
// regions, zones and capacity types; a reserved offering's reservation is
// the caller's to check against the pool's selectors).
bool PoolAllows(const NodePoolPolicy& p, const Offering& o, const InstanceType& t, const GpuModel* gpu);
// Whether `u` fits the free room of `b`; takes it when `commit`.
bool TryFit(const DemandUnit& u, Bin& b, bool commit);
// The pools whose nodes may not be scaled down because a class's signals
// are stale (snapshot.scale_down_blocked_classes): the class's pools, or
// every pool for a class that names none or is not in the policy.
std::set<std::string> PoolsOfBlockedClasses(const Snapshot& s, const Policy& policy);
// Sets plan.cost_after_usd_per_hour (the cost before, plus the launches,
// less the terminated nodes' prices) and plan.summary ("<name>: N launch
// groups, N terminations, N unplaced").
void FinishPlan(Plan& plan, const std::string& name);

// The snapshot's types and GPU models by name, and empty bins of its offerings.
class FitIndex {
 public:
  explicit FitIndex(const Snapshot& s);
  const InstanceType* Type(const std::string& name) const;
  const GpuModel* GpuOf(const InstanceType* t) const;
  Bin EmptyBin(const std::string& pool, const Offering& o) const;
  // Every available (pool, offering) the policy allows; spot only when `spot_allowed`.
  // `reserved_allowed`: the reserved offerings of the reservations a pool
  // selects, while they are open (Karpenter's); without it none (the other
  // baselines buy no slot: they pay for the reservation and leave it idle).
  std::vector<Candidate> Candidates(const Policy& policy, bool spot_allowed, bool reserved_allowed = false) const;
  // A bin per node that is not terminating, holding its running work, with
  // the node's capacity-spread labels.
  std::vector<Bin> ExistingBins() const;

 private:
  const Snapshot& s_;
  std::unordered_map<std::string, const InstanceType*> types_;
};

}  // namespace gpuscaler::sim::baseline_detail
