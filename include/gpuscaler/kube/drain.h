// Draining a node before its instance is terminated, the way `kubectl drain`
// does it (docs/kubernetes.md, "Scale-down drain"):
//  1. refuse when the node or one of its pods says do-not-disrupt
//     (gpuscaler.io/do-not-disrupt or karpenter.sh/do-not-disrupt, as a label
//     or annotation, value "true", or a policy do_not_disrupt_labels key);
//  2. cordon: PATCH spec.unschedulable=true;
//  3. evict every pod on it through the Eviction API, skipping DaemonSet
//     pods and mirror (static) pods and finished pods; a 429 (a
//     PodDisruptionBudget forbids it now) is retried every retry_interval,
//     never forced; pods already being deleted are waited for;
//  4. done when no such pod is left; when `timeout` passes first, the node
//     is uncordoned (it stays in service) and the drain fails;
//  5. Events on the node say what happened, with the decision's reason.
// Blocking. Not thread-safe: one drain per Drainer at a time.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/kube/client.h"

namespace gpuscaler::kube {

struct DrainOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds retry_interval{std::chrono::seconds(5)};
  std::string reason;  // the decision's reason, for the Events
  std::vector<std::string> extra_do_not_disrupt_keys;  // policy do_not_disrupt_labels
};

struct DrainResult {
  int evicted = 0;            // evictions the API accepted
  int skipped = 0;            // DaemonSet and mirror pods left in place
  int budget_refusals = 0;    // 429 answers
  std::vector<std::string> remaining;  // namespace/name of pods still there (failure)
};

class Drainer {
 public:
  // Waits `d` (or less); false means give up now (leadership lost,
  // shutdown). The daemon waits on a condition variable; tests advance a
  // fake clock.
  using Wait = std::function<bool(std::chrono::milliseconds d)>;

  // `client` and `clock` must outlive the drainer.
  Drainer(ApiClient& client, const Clock& clock, Wait wait, std::string component = "gpuscaler");

  // Errors: kInvalidInput when do-not-disrupt forbids it (nothing changed),
  // kNotFound for an unknown node, kTransient when the timeout passed or the
  // wait gave up (result in the message), other API errors as ApiError.
  Result<DrainResult> Drain(const std::string& node_name, const DrainOptions& options);

  // PATCH spec.unschedulable.
  Status Cordon(const std::string& node_name, bool unschedulable);
  // Creates an Event about the node (type "Normal" or "Warning").
  Status RecordNodeEvent(const std::string& node_name, const std::string& node_uid, const std::string& reason,
                         const std::string& message, const std::string& type = "Normal");

 private:
  ApiClient& client_;
  const Clock& clock_;
  Wait wait_;
  std::string component_;
  int64_t events_ = 0;
};

}  // namespace gpuscaler::kube
