// Warm capacity in the plan (pools[].warm): which pending work wakes a
// stopped node instead of waiting for a cold launch, how many stopped nodes
// each pool keeps, and what they cost.
//
// A pass over the plan the planner made without warm capacity, so packing,
// spot shares, consolidation and every other rule are unchanged by it:
//
//  - Wakes. A node of a launch whose units are real pending work (not
//    forecast units) is woken from the pool's stopped nodes instead when one
//    whose type holds those units sits in a zone they allow and the rule of
//    a pending unit's wait says so: the wait it saves, (cold lead time -
//    wake latency) x the units' wait cost (classes[].wait_cost_usd_per_hour,
//    default the units' on-demand value), is at least what the warm node
//    costs above the launch's offering while it would: the units' expected
//    runtime, or until consolidation may replace it (disruption.min_node_age
//    plus a cold lead time) if sooner. The cheapest such node is woken.
//    A spot warm node (pools[].warm.capacity_type spot or auto) stands in
//    only for a planned spot node and is priced at the spot price; both
//    sides' expected interruption cost counts, so an on-demand warm node
//    gives way for a spot launch only when the wait is worth the price. A
//    spot warm node whose offering is marked short (a capacity error) is not
//    woken. The wakes are launches with LaunchAction::wake_instance_ids,
//    their cold offering as fallbacks.
//  - Size. A pool keeps `warm.size` nodes, or with `size: auto` the rise in
//    demand the forecasts of the classes it serves put at their quantile
//    (classes[].forecast.quantile) within their horizon, in nodes of the
//    warm type; capped by `warm.max_usd_per_hour` over what one stopped node
//    costs. No forecast yet: 0, and a note. Of that size, `capacity_type`
//    spot keeps all spot, auto the share the classes sizing it may hold on
//    spot (the smallest max_spot_share), on-demand none; each part is
//    refilled and retired on its own.
//  - Refills. Below the size, one launch (LaunchAction::into_warm) of the
//    warm type, spread over the pool's zones: the type its warm nodes have
//    while it holds the shape holding the most GPUs now (RepresentativeUnit)
//    of every class the pool serves (of those with a forecast, when any
//    has one), else the cheapest on-demand type for that shape. Empty
//    nodes of that type the plan removes are stopped into the capacity
//    first (TerminationAction::park): on-demand ones, and spot ones
//    launched to stop on interruption (kWarmInterruptionTag); then refills
//    launched. A spot refill carries that tag: the cloud stops it instead of
//    ending it when it reclaims it (EC2: a persistent Spot request with
//    interruption behaviour stop; Compute Engine: termination action STOP),
//    and a one-time spot node cannot be stopped at all.
//    Woken nodes are refilled in the same plan.
//  - Retirements. Stopped nodes above the size, the oldest first, are
//    terminated (TerminationKind::kEmpty, TerminationAction::warm) once
//    they have been stopped long enough for their volumes to have cost what
//    refilling them would (price x cold lead time), and at least
//    scaling.scale_down_stabilization: a forecast that wavers does not
//    launch and retire in turn.
//  - Costs. The plan's cost before and after include the stopped nodes'
//    volumes (WarmNode::waiting_usd_per_hour).
//
// Pure function of the snapshot, the policy and the plan, like the planner.
#pragma once

#include <string>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

// The tag (and node label) "stop" of a spot instance launched to be stopped,
// not ended, when the cloud reclaims it, and so one that can be stopped on
// request: a refill of spot warm capacity.
inline constexpr const char* kWarmInterruptionTag = "gpuscaler.io/interruption-behavior";

// How many warm nodes `pool` should keep now (see the header comment), and
// a note saying how that was decided (for the plan's notes).
struct WarmTarget {
  int size = 0;
  int spot = 0;  // of `size`, spot (pools[].warm.capacity_type)
  std::string note;
};
WarmTarget WarmTargetOf(const Snapshot& snapshot, const Policy& policy, const NodePoolPolicy& pool);

// What one stopped node of `type` in `pool` costs per hour: its volumes
// (the pool's node template's block devices, else the snapshot's
// default_volume_gib; a hibernated node also keeps its memory on them), at
// the snapshot's volume_usd_per_gib_hour.
double WarmWaitingUsdPerHour(const Snapshot& snapshot, const NodePoolPolicy& pool, const InstanceType& type);
// The same for the snapshot's instance type named `instance_type`; 0 when
// the snapshot does not list it.
double WarmWaitingUsdPerHour(const Snapshot& snapshot, const NodePoolPolicy& pool, const std::string& instance_type);

// `plan` with the wakes, refills and retirements of every pool with
// pools[].warm, and the stopped nodes' cost in its costs (see above).
Plan AddWarmCapacity(const Snapshot& snapshot, const Policy& policy, Plan plan);

}  // namespace gpuscaler
