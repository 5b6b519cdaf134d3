#include "gpuscaler/model/node.h"

namespace gpuscaler {

std::string_view ToString(NodeState s) {
  switch (s) {
    case NodeState::kLaunching: return "launching";
    case NodeState::kReady: return "ready";
    case NodeState::kCordoned: return "cordoned";
    case NodeState::kDraining: return "draining";
    case NodeState::kTerminating: return "terminating";
    case NodeState::kHeldForReplacement: return "held_for_replacement";
  }
  return "unknown";
}

std::optional<NodeState> ParseNodeState(std::string_view text) {
  for (NodeState s : {NodeState::kLaunching, NodeState::kReady, NodeState::kCordoned,
                      NodeState::kDraining, NodeState::kTerminating, NodeState::kHeldForReplacement}) {
    if (ToString(s) == text) return s;
  }
  return std::nullopt;
}

}  // namespace gpuscaler
