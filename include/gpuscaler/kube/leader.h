// Leader election with a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection does it (docs/kubernetes.md, "Leader election"):
//  - each try GETs the Lease and CREATEs it (holder = self) when it is
//    missing;
//  - someone else's Lease is taken over only when its record has not changed
//    for leaseDurationSeconds, measured on the local clock from the moment
//    this elector saw it change (never comparing the other's timestamps with
//    the local clock, so clock skew does not matter);
//  - every write is an UPDATE carrying metadata.resourceVersion, so of two
//    writers one gets 409 Conflict and stays a candidate;
//  - the holder renews every retry_period; it stops leading as soon as
//    renew_deadline passes since its last successful renewal, even while a
//    request is still hanging (IsLeader() reads the clock itself);
//  - Stop(release) clears holderIdentity (and sets leaseDurationSeconds to 1)
//    so another replica takes over at once.
// Thread-safe: IsLeader() from any thread; TryAcquireOrRenew() from one
// thread at a time (the elector's own while started).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/kube/client.h"

namespace gpuscaler::kube {

struct LeaderElectionOptions {
  std::string namespace_name = "gpuscaler";
  std::string lease_name = "gpuscaler";
  std::string identity;  // unique per replica (pod name plus a random suffix)
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// kConfig unless lease_duration > renew_deadline > 1.2 x retry_period > 0
// and names and identity are set (client-go's rules).
Status ValidateLeaderElection(const LeaderElectionOptions& options);

class LeaderElector {
 public:
  // `client` and `clock` must outlive the elector. `on_change` (may be
  // empty) is called by Start()'s thread when leadership is gained or lost.
  LeaderElector(ApiClient& client, const Clock& clock, LeaderElectionOptions options,
                std::function<void(bool leader)> on_change = {});
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One try at clock.Now(): acquire, take over or renew. True when this
  // elector holds the Lease afterwards. Errors of the API are kept in
  // last_error(); they count as "not renewed".
  bool TryAcquireOrRenew();
  // Holds the Lease, renewed less than renew_deadline ago.
  bool IsLeader() const;

  // Tries every retry_period on its own thread (candidates wait up to 20%
  // longer, jittered, so replicas do not try in lockstep).
  void Start();
  // Ends the thread; with `release`, gives the Lease up if held. Idempotent.
  void Stop(bool release = true);

  const std::string& identity() const { return options_.identity; }
  std::string last_error() const;
  // The Lease's leaseTransitions as last read or written.
  int64_t transitions_seen() const;
  // How long the Lease has had no live holder, as this replica sees it:
  // since it was released, or since its holder's record outlived its
  // leaseDurationSeconds unrenewed (measured on the local clock from the
  // moment the record was seen to change). Zero while a holder's record is
  // live, and before the first look at the Lease.
  std::chrono::milliseconds LeaderlessFor() const;

 private:
  struct Record {
    std::string holder;
    int64_t lease_duration_s = 0;
    std::string acquire_time;
    std::string renew_time;
    int64_t transitions = 0;
    bool operator==(const Record&) const = default;
  };
  std::string LeasePath() const;
  std::string LeaseBody(const Record& r, const std::string& resource_version) const;
  bool Write(const std::string& method, const std::string& path, const Record& r, const std::string& rv);
  void Release();
  void Run();
  void SetError(std::string e);

  ApiClient& client_;
  const Clock& clock_;
  LeaderElectionOptions options_;
  std::function<void(bool)> on_change_;

  mutable std::mutex mu_;
  std::optional<Record> observed_;
  SteadyTime observed_at_{};
  std::optional<SteadyTime> renewed_at_;  // last successful write as holder
  bool holder_ = false;
  std::string last_error_;
  int64_t transitions_ = 0;

  std::mutex run_mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// "2023-07-04T21:58:48.000000Z": a MicroTime from a wall time.
std::string FormatMicroTime(WallTime t);

}  // namespace gpuscaler::kube
