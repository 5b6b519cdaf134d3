// A Spot eviction notice that a node reports about itself, as a Node
// condition: the cloud's notice is visible only from the VM itself (Azure:
// the Instance Metadata Service's scheduled events, a Preempt about 30 s
// ahead), so `gpuscaler node-agent`, a DaemonSet on the Spot nodes, writes
// it onto its own Node (a status patch, as node-problem-detector does) and
// the daemon reads it from the nodes it already watches.
//
// The condition: type kSpotPreemptedCondition, status "True", reason the
// event's type ("Preempt" or "Terminate"), message
//   "NotBefore=<RFC 3339, UTC> EventId=<the event's id>"
// (NotBefore: when the VM may go; the time the agent saw the event when the
// event gave none, i.e. it has started). Nothing else in the message is read.
// Thread-safe: free functions on values.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/model/time.h"

namespace gpuscaler::kube {

inline constexpr const char* kSpotPreemptedCondition = "gpuscaler.io/SpotPreempted";

struct NodeSpotNotice {
  std::string event_type;  // "Preempt" or "Terminate"
  std::string event_id;
  WallTime not_before{};
};

std::string FormatSpotNoticeMessage(const NodeSpotNotice& notice);
// nullopt when the message has no readable NotBefore.
std::optional<NodeSpotNotice> ParseSpotNoticeMessage(std::string_view reason, std::string_view message);

// The body of a strategic merge patch of a Node's status
// (PATCH /api/v1/nodes/{name}/status, Content-Type
// application/strategic-merge-patch+json) that sets the condition, stamped
// `now`; the API server merges Node conditions by type, so the kubelet's
// own conditions stay as they are.
std::string SpotNoticeStatusPatch(const NodeSpotNotice& notice, WallTime now);

}  // namespace gpuscaler::kube
