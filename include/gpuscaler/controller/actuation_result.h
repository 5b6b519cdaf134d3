// What acting on a plan changed, as the actuator reports it and the cluster
// state applies it: nodes launched or found, launches accepted but not
// listed yet, replacements waiting for their new nodes, instances
// terminated, drains started or ended. Values only; below both the actuator
// and the cluster state, so neither needs the other's header.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

// The node state an instance state stands for.
NodeState NodeStateOf(InstanceState s);

// A node the cluster state should add.
struct LaunchedNode {
  Instance instance;
  NodeState state = NodeState::kLaunching;
};

// An instance that is gone because we terminated it.
struct EndedNode {
  std::string instance_id;
  std::string cause;  // "terminated" | "consolidated"
};

// A launch the cloud accepted whose instances are not listed yet (an Auto
// Scaling group raised its desired capacity; the instances appear later,
// tagged with the launch's token). The cluster state holds `count` launching
// placeholder nodes for it until they appear or the pool's
// registration_timeout passes.
struct InFlightLaunch {
  std::string token;  // idempotency token = the instances' kIntentTag
  std::string pool;
  Offering offering;  // the offering the intent chose
  int count = 0;
  int64_t decision_id = 0;
  std::string reason;
  WallTime accepted_at{};
};

// A "replace with cheaper" termination waiting for its replacement: the old
// node is removed (drained first, with Kubernetes) only once every
// replacement node is Ready with its GPUs allocatable.
struct PendingReplacement {
  TerminationAction termination;
  int64_t decision_id = 0;
  size_t action_index = 0;  // the termination's index in its decision's actions
  std::vector<std::string> replacement_ids;  // instances launched for its moved work
  WallTime since{};
};

// What observing found that the act stage must do to nodes (with
// ClusterNodes; without, nothing): drain a node under an interruption notice
// by the notice's deadline, cordon a node on a rebalance recommendation.
// Observation records the facts; the actuator acts.
struct NodeActions {
  struct Drain {
    std::string instance_id;
    WallTime deadline{};
  };
  std::vector<Drain> drains;
  std::vector<std::string> cordons;
  // Warm capacity (pools[].warm): refills whose node is ready, to be
  // cordoned and stopped into the warm state; and woken instances whose
  // node is Ready again, to be put back in service (ClusterNodes::SetWarm).
  struct WarmStop {
    std::string instance_id;
    WarmState state = WarmState::kStopped;
    double waiting_usd_per_hour = 0;  // what it costs stopped (its node's price from then on)
  };
  std::vector<WarmStop> warm_stops;
  std::vector<std::string> warm_returns;
  bool empty() const { return drains.empty() && cordons.empty() && warm_stops.empty() && warm_returns.empty(); }
};

// A capacity error or a successful launch of an offering while acting, for
// the cluster state's availability marks (OfferingAvailability), in the
// order they happened.
struct AvailabilityEvent {
  std::string offering_key;
  WallTime at{};
  bool capacity_error = true;  // false: a launch succeeded
};

struct ActuationResult {
  std::vector<LaunchedNode> launched;  // in launch order (woken warm nodes too)
  // Warm capacity: instances launched to refill it (not nodes: they take no
  // work and are stopped once ready), instances stopped into it, and the
  // stopped instances started again (they are also in `launched`).
  std::vector<Instance> warm_filling;
  std::vector<std::string> warm_stopped;
  // Empty nodes stopped into warm capacity instead of terminated
  // (TerminationAction::park): they leave the nodes for the warm capacity.
  std::vector<Instance> parked;
  std::vector<std::string> woken;
  std::vector<InFlightLaunch> in_flight;
  // Replacements whose old node waits for the new ones (see PendingReplacement).
  std::vector<PendingReplacement> replacements;
  std::vector<EndedNode> ended;        // in termination order
  // Terminated by a recovered intent: to be ignored if still listed.
  std::vector<std::string> terminated_elsewhere;
  // Instances whose node drain started (or resumed): they take no new work
  // and are terminated when the drain ends well.
  std::vector<std::string> draining;
  // Instances whose drain ended without removal: back in service.
  std::vector<std::string> kept;
  // Pending units whose launch met a spot capacity error (for the policy's
  // spot.fallback_duration).
  std::vector<std::string> spot_capacity_error_units;
  std::vector<AvailabilityEvent> availability_events;
  std::set<std::string> scaled_up_pools;
  std::set<std::string> scaled_down_pools;
  // Something failed or came out other than planned: the next tick must
  // plan again rather than reuse this plan.
  bool failed = false;
};

}  // namespace gpuscaler
