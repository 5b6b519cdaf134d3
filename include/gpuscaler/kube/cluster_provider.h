// ClusterCloudProvider: the CloudProvider wrapper the daemon puts around the
// real one when it runs with Kubernetes (docs/kubernetes.md): Launch and
// Terminate act only while this replica leads (leader election); otherwise
// they fail with kTransient at once and touch nothing, so a replica that
// lost its Lease mid-tick stops actuating before its next cloud call.
//
// It does not drain: the controller drains a node before it terminates the
// instance, outside the tick (AsyncDrainer through the ClusterNodes seam),
// and calls Terminate once the node is empty (or has no kubelet to drain).
//
// Interruption notices: the cloud's (the inner provider's) and, with
// `node_notices`, the ones nodes report about themselves (the condition of
// spot_notice.h, written by `gpuscaler node-agent` from the VM's own
// notice, earlier than the cloud API shows it), each node's once per
// NotBefore. The inner provider's error is returned only when no node
// reported anything. Other reads pass through. Not thread-safe (like the
// providers it wraps).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/kube/objects.h"

namespace gpuscaler::kube {

// One interruption notice per node whose condition says so (NodeInfo::
// spot_notice): the node's instance id, noticed `now`, deadline NotBefore.
// Nodes without an instance id are left out.
std::vector<InterruptionNotice> SpotNoticesFromNodes(const std::vector<NodeInfo>& nodes, WallTime now);

class ClusterCloudProvider final : public CloudProvider {
 public:
  struct Parts {
    CloudProvider* inner = nullptr;   // required
    std::function<bool()> is_leader;  // empty: always (no leader election)
    // The notices nodes report now (SpotNoticesFromNodes of the watched
    // nodes); empty: none.
    std::function<std::vector<InterruptionNotice>()> node_notices;
  };
  explicit ClusterCloudProvider(Parts parts) : parts_(std::move(parts)) {}

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override { return parts_.inner->ListInstances(); }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) override {
    return parts_.inner->AcknowledgeInterruptions(notices);
  }
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override { return parts_.inner->SpotPrices(since); }

 private:
  bool Leading() const { return !parts_.is_leader || parts_.is_leader(); }
  Parts parts_;
  // Node-reported notices already passed on: instance -> NotBefore.
  std::map<std::string, WallTime> node_noticed_;
};

}  // namespace gpuscaler::kube
