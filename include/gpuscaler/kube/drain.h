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
// The cordon also writes the drain's deadline on the node (annotation
// kDrainDeadlineAnnotation, removed by an uncordon), so a drain started
// before a restart resumes with the deadline it had.
// Drain() is the blocking whole; Start/EvictRound/Succeeded/GiveUp are its
// steps, for AsyncDrainer (async_drain.h), which interleaves several drains
// on its own thread. Not thread-safe: one thread uses a Drainer.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/kube/client.h"
#include "gpuscaler/kube/objects.h"

namespace gpuscaler::kube {

struct DrainOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::chrono::milliseconds retry_interval{std::chrono::seconds(5)};
  std::string reason;  // the decision's reason, for the Events
  std::vector<std::string> extra_do_not_disrupt_keys;  // policy do_not_disrupt_labels
};

// The node annotation holding an open drain's deadline (RFC 3339).
inline constexpr const char* kDrainDeadlineAnnotation = "gpuscaler.io/drain-deadline";

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

  // The steps of Drain.
  struct Started {
    std::string node_uid;
    WallTime deadline{};
    bool resumed = false;  // the node carried an open drain's deadline: kept
  };
  // Refuses on do-not-disrupt (kInvalidInput, a DrainRefused event, nothing
  // changed), else cordons the node, writes `deadline` on it and posts the
  // Draining event; a node already cordoned with a deadline resumes with it.
  Result<Started> Start(const std::string& node_name, const DrainOptions& options, WallTime deadline);
  // One round: asks the Eviction API to evict every pod still to leave (a
  // 429 is counted and retried next round). True when none is left.
  Result<bool> EvictRound(const std::string& node_name, DrainResult* result);
  // The Drained event.
  void Succeeded(const std::string& node_name, const Started& started, const DrainOptions& options,
                 const DrainResult& result);
  // Ends a drain that did not finish: uncordons the node unless
  // `interrupted` (leadership lost, shutdown: the next leader decides),
  // posts the Warning event and returns the kTransient error to report.
  Error GiveUp(const std::string& node_name, const Started& started, const DrainOptions& options,
               DrainResult* result, bool interrupted);

  // PATCH spec.unschedulable (uncordoning also drops the drain's deadline).
  Status Cordon(const std::string& node_name, bool unschedulable);
  // Warm capacity (pools[].warm): `warm` cordons the node before its
  // instance is stopped; not `warm` puts a woken node back in service:
  // uncordoned, and the registration taint kWarmTag of a refill removed
  // (read, then written with the node's resourceVersion, retried on a
  // conflict).
  Status SetWarm(const std::string& node_name, bool warm);
  // Creates an Event about the node (type "Normal" or "Warning").
  Status RecordNodeEvent(const std::string& node_name, const std::string& node_uid, const std::string& reason,
                         const std::string& message, const std::string& type = "Normal");

 private:
  ApiClient& client_;
  // The pods on the node that must leave (not DaemonSet, mirror or finished
  // ones); counts the skipped ones into `result`.
  Result<std::vector<PodInfo>> PodsToEvict(const std::string& node_name, DrainResult* result);

  const Clock& clock_;
  Wait wait_;
  std::string component_;
  int64_t events_ = 0;
};

}  // namespace gpuscaler::kube
