// Baselines: other autoscalers' decision rules as planner functions, run in
// the same harness (controller, simulated cloud, workload) as MakePlan so the
// comparison differs only in the decisions.
//
//  - "on-demand": MakePlan with every pool forced to on-demand (same packing,
//    no spot): the yardstick for savings.
//  - "static-peak": provisions, from the first tick, the largest number of
//    nodes per offering and pool that the on-demand run ever had, and never
//    removes any.
//  - "karpenter": Karpenter v1's provisioning and disruption rules with its
//    defaults (karpenter_baseline.cc, docs/simulator.md).
//  - "greedy": a cost-first greedy: each pending unit goes first-fit on free
//    capacity, else on a new node of the cheapest offering that fits it
//    alone, spot first for interruptible work, with the other offerings
//    (other zones, then on-demand) as capacity fallbacks; empty nodes are
//    removed after min_node_age. No interruption-risk model, no budget.
//    "greedy" and "karpenter" hold a class's on-demand floor
//    (max_spot_share < 1) as a Karpenter user does, by the capacity-spread
//    split of sim/capacity_spread.h; their nodes carry its labels, so they
//    stay pure functions of the snapshot (no state between calls).
//  - "cluster-autoscaler": Cluster-Autoscaler-like: on-demand node groups
//    only, the least-waste expander (fewest idle GPUs, then CPU, then price)
//    for new nodes; empty nodes are removed.
// All are pure and deterministic, like MakePlan.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/controller/controller.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::sim {

const std::vector<std::string>& BaselineNames();

// The policy with every pool on on-demand only and no spot share.
Policy ForceOnDemand(Policy policy);
// The policy as a purely reactive controller runs it: no scaling schedules,
// no demand forecasts, no warm capacity and no deferral (the `gpuscaler-reactive` run, which
// shows what planning ahead and waiting for spot change).
Policy Reactive(Policy policy);
// The policy without its classes' deadlines: all work runs at once (what
// every baseline but gpuscaler runs).
Policy WithoutDeferral(Policy policy);
// The policy without its classes' demand forecasts (what every baseline
// but gpuscaler runs).
Policy WithoutForecasts(Policy policy);
// The policy without its pools' warm capacity (pools[].warm): every node is
// launched cold (what every baseline but gpuscaler runs).
Policy WithoutWarmCapacity(Policy policy);
// The policy without its classes' lost-work budgets (max_lost_work_share:
// the controller's, for gpuscaler's planner; every baseline but gpuscaler
// and gpuscaler-reactive runs without, so its row does not move when a
// policy sets one).
Policy WithoutLostWorkBudget(Policy policy);
// Whether the policy has anything Reactive takes away.
bool PlansAhead(const Policy& policy);

PlannerFn KarpenterLikePlanner();
PlannerFn CheapestNodeGreedyPlanner();
PlannerFn ClusterAutoscalerLikePlanner();
// `peak`: (Offering::Key, pool) -> nodes to keep.
PlannerFn StaticPeakPlanner(std::map<std::pair<std::string, std::string>, int> peak);

}  // namespace gpuscaler::sim
