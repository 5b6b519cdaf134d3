// The ClusterNodes seam: what the cluster (Kubernetes) says about the nodes
// of gpuscaler's instances, and node drains that run outside the tick.
//
// Without it (the simulator, a daemon without Kubernetes) the controller
// terminates instances directly and tracks registration by instance state
// only. Implementations: the daemon's Kubernetes adapter
// (src/daemon/kube_setup.cc over kube::ClusterCache and kube::AsyncDrainer),
// tests' fakes. Called from the control loop's thread only; a drain
// progresses on the implementation's own thread (or step by step) between
// calls, never inside one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

// The node an instance registered as.
struct NodeHealth {
  bool ready = false;             // condition Ready=True
  bool gpus_allocatable = false;  // status.allocatable["nvidia.com/gpu"] > 0
  // When the Ready condition last changed (its lastTransitionTime); unset
  // when the node does not say.
  std::optional<WallTime> ready_changed_at;
};

// A drain asked for by a terminate action: the action's intent row stays
// open while it runs, and is closed when it ends.
struct DrainRequest {
  std::string instance_id;
  int64_t action_id = 0;  // the terminate intent's row (0: no store)
  std::string reason;     // the decision's reason, for the node's Events
  std::string cause;      // the node's end cause once terminated ("terminated", "consolidated", …)
  Seconds timeout{600};   // the policy's disruption.drain_timeout
  std::vector<std::string> do_not_disrupt_keys;
};

enum class DrainEnd {
  kDrained,   // no pod left to move: terminate the instance
  kTimedOut,  // pods still there at the deadline: the node is uncordoned and kept
  kRefused,   // do-not-disrupt on the node or a pod: nothing was changed
  kFailed,    // the API failed (the node is uncordoned when it can be)
};
std::string_view ToString(DrainEnd e);

struct DrainOutcome {
  DrainRequest request;
  DrainEnd end = DrainEnd::kFailed;
  std::string detail;  // what is left, or why
  WallTime started{};
  WallTime ended{};
  int evicted = 0;
};

class ClusterNodes {
 public:
  virtual ~ClusterNodes() = default;
  // False while the cluster's nodes are not known (cache not synced, API
  // down): registration timeouts and repairs wait, fail static.
  virtual bool Synced() = 0;
  // The node of an instance; nullopt when none has registered for it.
  virtual std::optional<NodeHealth> Health(const std::string& instance_id) = 0;
  // Starts draining the instance's node and returns at once. kNotFound: the
  // instance has no node (terminate it directly). Another error: not
  // started (kTransient: try again next tick). A drain already open for the
  // instance (after a restart: a node this controller cordoned for a drain,
  // whose deadline it kept) is resumed, not restarted.
  virtual Status BeginDrain(const DrainRequest& request) = 0;
  // Drains that ended since the last call, in the order they ended.
  virtual std::vector<DrainOutcome> TakeEndedDrains() = 0;
  // Marks the instance's node unschedulable (or schedulable again), e.g. on
  // a rebalance recommendation. kNotFound: no node.
  virtual Status Cordon(const std::string& instance_id, bool unschedulable) = 0;
  // Warm capacity (pools[].warm): `warm` true before the instance is
  // stopped (its node cordoned, so nothing lands on it while it stops);
  // false once a woken instance's node is Ready again (uncordoned, and the
  // registration taint kWarmTag=refill:NoSchedule of a refill removed, so
  // it takes work like a node launched cold). kNotFound: no node. The
  // default only cordons and uncordons.
  virtual Status SetWarm(const std::string& instance_id, bool warm) { return Cordon(instance_id, warm); }
};

}  // namespace gpuscaler
