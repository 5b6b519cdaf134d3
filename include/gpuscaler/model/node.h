// Nodes: GPU machines that exist (running) or are on their way (launching),
// with the work bound to them. Values only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/demand.h"
#include "gpuscaler/model/instance.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

enum class NodeState {
  kLaunching,    // requested from the cloud, not Ready yet: its capacity counts
  kReady,
  kCordoned,     // unschedulable (Kubernetes, or a rebalance recommendation): takes no new work
  kDraining,     // being emptied before termination
  kTerminating,  // termination requested
  // Its replacement is coming: keeps its work, takes no new work; back to
  // ready if the replacement fails. Set and cleared by the replacement's
  // owner only, so a cordon for another reason is never undone by it.
  kHeldForReplacement,
};

std::string_view ToString(NodeState s);
std::optional<NodeState> ParseNodeState(std::string_view text);

struct Node {
  std::string id;           // node name (Kubernetes) or instance id
  std::string instance_id;  // cloud instance id ("i-0abc…"); empty while launching
  std::string pool;
  Offering offering;        // what it is and what it costs now
  WallTime launch_time{};
  NodeState state = NodeState::kReady;
  std::map<std::string, std::string> labels;
  bool do_not_disrupt = false;  // annotation or label said so
  // The cluster placement group (EC2) it runs in, "" none: one zone holds
  // all of a group's instances.
  std::string placement_group;
  // Work bound to the node. Its GPUs, MIG slices, CPU and memory are taken.
  std::vector<DemandUnit> running;

  bool AcceptsWork() const {
    return state == NodeState::kLaunching || state == NodeState::kReady;
  }
};

}  // namespace gpuscaler
