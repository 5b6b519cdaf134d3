// AsyncDrainer: node drains that run outside the control loop, several at
// once, each with its own deadline (docs/kubernetes.md, "Scale-down drain").
// Every open drain advances one step when it is due, on the drainer's own
// worker thread (Start/Stop) or, in tests, when the caller runs Step():
//  1. start: do-not-disrupt check, cordon, the deadline written on the node
//     (a node already carrying one resumes with it: restarts lose nothing);
//  2. eviction rounds every retry_interval, PodDisruptionBudget refusals
//     (429) retried, never forced;
//  3. ends drained (no pod left), timed out (deadline passed: the node is
//     uncordoned and kept), refused (do-not-disrupt: nothing changed) or
//     failed (the node could not be read or cordoned by the deadline).
// While `may_act` says no (leadership lost) the drains pause. A node that
// is gone counts as drained. Ended drains are collected by TakeEnded.
// Thread-safe: Begin, IsOpen and TakeEnded from any thread; Step from one
// thread at a time (the worker's, once started).
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpuscaler/kube/drain.h"

namespace gpuscaler::kube {

class AsyncDrainer {
 public:
  enum class End { kDrained, kTimedOut, kRefused, kFailed };
  struct Outcome {
    std::string key;  // the caller's handle (Begin)
    std::string node_name;
    End end = End::kFailed;
    std::string detail;
    WallTime started{};
    WallTime ended{};
    DrainResult result;
  };

  // `client` and `clock` must outlive the drainer. `may_act` empty: always.
  AsyncDrainer(ApiClient& client, const Clock& clock, std::function<bool()> may_act = {},
               std::string component = "gpuscaler");
  ~AsyncDrainer();
  AsyncDrainer(const AsyncDrainer&) = delete;
  AsyncDrainer& operator=(const AsyncDrainer&) = delete;

  // Opens a drain of `node_name` under `key` and returns at once; its first
  // step runs with the next Step. A key already open: nothing changes.
  void Begin(const std::string& key, const std::string& node_name, DrainOptions options);
  bool IsOpen(const std::string& key) const;
  size_t open() const;
  // Advances every due drain by one step. Returns when the next step is due
  // (nullopt: no drain open).
  std::optional<WallTime> Step();
  std::vector<Outcome> TakeEnded();

  // The worker thread: Step whenever a drain is due or one begins.
  void Start();
  // Ends the worker (drains stay open, cordoned, for a successor). Idempotent.
  void Stop();

 private:
  struct Job {
    std::string node_name;
    DrainOptions options;
    WallTime opened{};
    WallTime deadline{};  // until the node says otherwise (resume)
    WallTime next{};
    std::optional<Drainer::Started> started;
    DrainResult result;
  };
  // One step of `job`; an outcome when it ended.
  std::optional<Outcome> Advance(const std::string& key, Job& job, WallTime now);
  void Run();

  Drainer drainer_;  // Step's thread only
  const Clock& clock_;
  std::function<bool()> may_act_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, Job> jobs_;
  std::vector<Outcome> ended_;
  bool begun_ = false;  // a Begin since the worker last looked
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace gpuscaler::kube
