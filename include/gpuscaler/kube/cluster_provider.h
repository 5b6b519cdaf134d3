// ClusterCloudProvider: the CloudProvider wrapper the daemon puts around the
// real one when it runs with Kubernetes (docs/kubernetes.md): Launch and
// Terminate act only while this replica leads (leader election); otherwise
// they fail with kTransient at once and touch nothing, so a replica that
// lost its Lease mid-tick stops actuating before its next cloud call.
//
// It does not drain: the controller drains a node before it terminates the
// instance, outside the tick (AsyncDrainer through the ClusterNodes seam),
// and calls Terminate once the node is empty (or has no kubelet to drain).
// Reads pass through. Not thread-safe (like the providers it wraps).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"

namespace gpuscaler::kube {

class ClusterCloudProvider final : public CloudProvider {
 public:
  struct Parts {
    CloudProvider* inner = nullptr;   // required
    std::function<bool()> is_leader;  // empty: always (no leader election)
  };
  explicit ClusterCloudProvider(Parts parts) : parts_(std::move(parts)) {}

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override { return parts_.inner->ListInstances(); }
  Result<std::vector<InterruptionNotice>> PollInterruptions() override { return parts_.inner->PollInterruptions(); }
  Status AcknowledgeInterruptions(const std::vector<InterruptionNotice>& notices) override {
    return parts_.inner->AcknowledgeInterruptions(notices);
  }
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override { return parts_.inner->SpotPrices(since); }

 private:
  bool Leading() const { return !parts_.is_leader || parts_.is_leader(); }
  Parts parts_;
};

}  // namespace gpuscaler::kube
