// The lifecycle of a "replace with cheaper" move, from the plan that
// launches the new nodes to the removal of the old one.
//
// The actuator launches the new nodes and hands back a PendingReplacement.
// From then on the tracker owns it: the old node is held for the
// replacement (NodeState::kHeldForReplacement: it keeps its work and takes
// no new work) and the new nodes are protected from removal (they are empty
// until the old node's work moves). Each tick, Progress
//  - removes the old node (drained first, with ClusterNodes) once every new
//    node can take work;
//  - gives up when a new node is gone, or has not become ready within the
//    pool's registration_timeout: the old node goes back in service;
//  - forgets a replacement whose old node left meanwhile (interrupted,
//    vanished), and releases its new nodes.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/controller/actuation_result.h"
#include "gpuscaler/controller/actuator.h"
#include "gpuscaler/controller/cluster_state.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

class ReplacementTracker {
 public:
  // Takes the replacements the actuator started: holds each old node and
  // protects its new ones.
  void Start(const std::vector<PendingReplacement>& started, ClusterState& state);
  // Moves every replacement on as above. Returns what the actuator did
  // (old nodes drained or terminated) for the cluster state to apply.
  ActuationResult Progress(WallTime now, const Policy& policy, ClusterState& state, Actuator& actuator,
                           TickReport* report);
  bool idle() const { return waiting_.empty() && protecting_.empty(); }

 private:
  // Releases the new nodes protected for `old_id`'s replacement.
  void Release(const std::string& old_id, ClusterState& state);
  // The old node goes back in service.
  void GiveUp(const std::string& old_id, ClusterState& state);

  std::vector<PendingReplacement> waiting_;
  // Replacement nodes kept from removal while the node they replace is
  // still there: old instance id -> new instance ids.
  std::map<std::string, std::vector<std::string>> protecting_;
};

}  // namespace gpuscaler
