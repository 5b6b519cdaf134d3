// The workload model: the jobs of a trace queue, are placed on the GPUs of
// ready nodes, run for their duration and finish; an interruption loses the
// work done since the job's last checkpoint and requeues it; a node removed by
// the controller is drained gracefully (progress kept, the restart cost paid
// again). It is the simulator's WorkSource: the controller sees its queue and
// what runs on each node.
//
// Scheduling is first-fit in queue order (priority, then time queued, then
// trace order) over ready nodes in the order they became ready, honouring the
// job's constraints: GPU model and memory, CPU and memory, whole GPUs on one
// node, fractional GPUs (gpu_milli) and MIG profiles sharing a GPU, zones,
// instance types, capacity type (non-interruptible work never lands on spot)
// and the pools its class may use. A node under an interruption notice takes
// no new work. Queue wait is the total time a job spent queued (over all its
// requeues; still-queued jobs count up to the end of the replay).
//
// Incremental: a pass only tries jobs that arrived since the last one unless
// capacity was freed, and a shape that did not fit is not tried again in the
// same pass. Deterministic. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/policy/policy.h"
#include "sim/capacity_spread.h"
#include "sim/sim_cloud.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

// Jobs of a class with a deadline (classes[].deadline of the scenario's
// policy), by outcome at the end of the replay.
struct DeadlineCounts {
  int64_t met = 0;     // finished by the deadline
  int64_t missed = 0;  // finished after it, or unfinished when it passed
  int64_t open = 0;    // unfinished, the deadline after the replay's end
  // Longer than the deadline even when started at submission: no schedule
  // meets it, so it is in none of the counts above.
  int64_t unmeetable = 0;
};

// Class -> deadline from submission, of the policy's classes that have one
// (classes[].deadline).
std::map<std::string, DeadlineRule> ClassDeadlines(const Policy& policy);

// The deadline of `job` under `deadlines` (ClassDeadlines) in a replay that
// starts at `start`: its submission plus its class's deadline; nullopt when
// its class has none. The one deadline the simulator puts on pending units
// and judges results by.
std::optional<WallTime> JobDueAt(const TraceJob& job, WallTime start,
                                 const std::map<std::string, DeadlineRule>& deadlines);

// Whether `job`'s class under `deadlines` sets deadlines as a multiple of the
// runtime ("1.5x"): its jobs then state their runtimes, as a pod does with
// its gpuscaler.io/expected-runtime annotation, and the replay takes the
// trace's duration as that statement, whatever the runtime knowledge.
bool StatesRuntime(const TraceJob& job, const std::map<std::string, DeadlineRule>& deadlines);

// Whether `job`, started at its submission and never stopped, finishes by
// `due`; a job that cannot is "unmeetable" in DeadlineCounts.
bool CanMeetDeadline(const TraceJob& job, WallTime start, WallTime due);

struct ClassStats {
  std::vector<int64_t> waits_s;  // one per submitted job
  int64_t completed = 0;
  int64_t unfinished = 0;
  std::optional<DeadlineCounts> deadlines;  // set: the class has a deadline
};

// How the cluster admits the pods of a gang (DemandUnit::gang).
enum class GangAdmission {
  // All at once or not at all, when every member fits in one zone (Kueue
  // with a ProvisioningRequest, or a coscheduling scheduler): what
  // gpuscaler sets up.
  kWhole,
  // Each pod alone, as it fits; the job waits at its rendezvous, holding the
  // GPUs of the members already placed, until the last member is placed (a
  // gang-unaware autoscaler and scheduler). Members placed later go to the
  // zone of the first (the pods' zone affinity).
  kEachPod,
};

struct WorkloadStats {
  int64_t jobs_submitted = 0;
  int64_t jobs_completed = 0;
  int64_t jobs_running = 0;
  int64_t jobs_queued = 0;
  int64_t requeues = 0;
  double busy_gpu_seconds = 0;  // GPUs held by running jobs × time
  double lost_gpu_seconds = 0;  // work since the last checkpoint, lost to interruptions
  // GPUs held by gang members placed while their gang could not start yet ×
  // the time they waited so (kEachPod admission; 0 under kWhole).
  double partial_gang_idle_gpu_seconds = 0;
  int64_t gang_starts = 0;
  // Jobs running on a Capacity Block's instance when the cloud took it back
  // (SimCloudObserver::OnTakeBack): they lose their work since the last
  // checkpoint. Of them, those whose runtime the planner was told
  // correctly: not longer than their class's expected runtime under
  // UseClassRuntimes, every job otherwise.
  int64_t jobs_taken_back = 0;
  int64_t jobs_taken_back_runtime_known = 0;
};

class Workload final : public WorkSource, public SimCloudObserver {
 public:
  // `trace` and `catalog` must outlive the workload. Offsets are from `start`.
  // Pending() lists at most `max_pending` units (the head of the queue).
  // Pending units carry the deadline of their class in `policy` (the one the
  // controller runs); ClassResults counts deadlines met by the classes of
  // `deadlines_from` (default: `policy`), so a run whose policy defers
  // nothing is still judged by the same deadlines.
  Workload(const Trace& trace, const Catalog& catalog, const Policy& policy, WallTime start,
           size_t max_pending = 2000, const Policy* deadlines_from = nullptr);

  // From now on, as the pods of a Karpenter user's floor split (the greedy
  // and karpenter baselines; sim/capacity_spread.h): a job of a split class
  // of `policy` carries the topologySpreadConstraint on its class's
  // capacity-spread label (maxSkew 1, DoNotSchedule): it goes only on a node
  // with a value of that label, in a domain with the fewest of the class's
  // running jobs among the domains that have nodes (as kube-scheduler
  // counts); a job of an interruptible class with max_spot_share 0 goes on
  // on-demand nodes only. Call before the first node is ready.
  void SplitFloorClasses(const Policy& policy);

  // From now on, pending and running units carry their class's
  // shape.expected_runtime in `policy` (the default for a class it does not
  // name) instead of what is left of the job: the planner knows no job's
  // duration, as in the daemon.
  void UseClassRuntimes(const Policy& policy);

  // From now on, gangs are admitted so (default kWhole). Call before the
  // first node is ready.
  void SetGangAdmission(GangAdmission admission) { gang_admission_ = admission; }

  // Next job arrival or finish, if any.
  std::optional<WallTime> NextEventTime();
  // Arrivals and finishes at or before `t`, in time order.
  void RunEventsUntil(WallTime t);
  // A scheduling pass at `now`.
  void Schedule(WallTime now);

  // WorkSource.
  const std::vector<DemandUnit>& Pending() override;
  uint64_t PendingVersion() const override { return pending_version_; }
  const std::vector<DemandUnit>& RunningOn(const std::string& instance_id) override;
  uint64_t RunningVersion(const std::string& instance_id) const override;
  std::vector<SignalStatus> Signals() const override;
  // GPUs held by running jobs × the time they ran, per node and (class,
  // team), since the previous call: exact, from placement to finish,
  // eviction or `now`. The first call starts measuring and returns nothing.
  std::optional<HeldGpuSeconds> TakeHeldGpuSeconds(WallTime now) override;
  // Every interruption since the previous call with the work its jobs lost
  // (what adds up to WorkloadStats::lost_gpu_seconds). The first call
  // starts measuring and returns none.
  std::optional<std::vector<LostWork>> TakeLostWork() override;
  // The time Signals() reports as sampled (the replay's current time).
  void SetSignalTime(WallTime t) { signal_time_ = t; }

  // SimCloudObserver.
  void OnReady(const Instance& instance, int gpu_count) override;
  void OnNotice(const std::string& instance_id, WallTime deadline) override;
  void OnGone(const std::string& instance_id, WallTime at, bool interrupted) override;
  void OnTakeBack(const std::string& instance_id) override { taken_back_.insert(instance_id); }

  // Counts the GPU time of jobs still running up to `end` as busy (call once,
  // at the end of the replay).
  void CloseAccounting(WallTime end);
  const WorkloadStats& stats() const { return stats_; }
  // Per class; waits of still-queued jobs are counted up to `end`.
  std::map<std::string, ClassStats> ClassResults(WallTime end) const;
  // The ids of the jobs queued now that have never run.
  std::vector<std::string> NeverStarted() const;
  // Per gang start, the seconds from when all its members were queued to its
  // start; a gang waiting at `end` adds its wait so far.
  std::vector<int64_t> GangWaits(WallTime end) const;
  int64_t queued() const { return static_cast<int64_t>(queue_.size()); }
  int64_t running() const { return stats_.jobs_running; }
  int ready_nodes() const { return static_cast<int>(nodes_.size()); }

 private:
  // The expected_runtime the planner is told for job `job` (UseClassRuntimes).
  Seconds ExpectedRuntime(size_t job) const;
  // Whether the planner was told a runtime no shorter than the job's.
  bool RuntimeKnown(size_t job) const;
  enum class JobState { kFuture, kQueued, kRunning, kDone };
  struct Job {
    JobState state = JobState::kFuture;
    int64_t remaining_s = 0;  // work left
    int64_t wait_s = 0;
    WallTime queued_since{};
    WallTime run_start{};
    WallTime done_at{};
    int64_t overhead_s = 0;   // restart cost paid by this run
    // Progress of this run saved when a spot notice reached its node (jobs
    // that checkpoint on notice); -1: none.
    int64_t saved_at_notice_s = -1;
    bool started_before = false;
    // A gang member placed whose gang has not started: it holds its GPUs and
    // makes no progress (no finish is scheduled).
    bool waiting_for_gang = false;
    WallTime placed_at{};
    uint32_t generation = 0;
    int node = -1;            // slot in nodes_
    std::vector<int> gpus;    // GPU indices held
    int milli = 0;            // per GPU held (1000 for whole GPUs)
    int shape = 0;
    int spread_domain = -1;  // running in this domain of its split class
  };
  struct SimNode {
    std::string id;
    std::string pool;
    std::string zone;
    std::string instance_type;
    CapacityType capacity_type = CapacityType::kOnDemand;
    const GpuModel* gpu = nullptr;
    std::vector<int> free_milli;
    int64_t free_cpu_milli = 0;
    int64_t free_memory_mib = 0;
    bool draining = false;
    std::vector<size_t> jobs;
    std::vector<DemandUnit> units;  // what runs, for the controller
    uint64_t version = 0;
    bool alive = true;
    // Per job shape: -1 not known yet, 0 never fits (constraints), 1 may fit.
    std::vector<int8_t> static_fit;
    std::map<std::string, int> spread_domain;  // split class -> its domain here (-1: none)
  };
  // A split class's jobs and ready nodes by domain.
  struct SpreadState {
    std::vector<int> running;
    std::vector<int> nodes;
  };
  struct QueueKey {
    int neg_priority;
    int64_t queued_since;
    size_t job;
    bool operator<(const QueueKey& o) const {
      if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
      if (queued_since != o.queued_since) return queued_since < o.queued_since;
      return job < o.job;
    }
  };
  struct Finish {
    WallTime t;
    size_t job;
    uint32_t generation;
    bool operator>(const Finish& o) const { return t != o.t ? t > o.t : job > o.job; }
  };

  // A multi-node job: its members are trace jobs; it runs when all are
  // placed and stops as a whole.
  struct Gang {
    std::vector<size_t> members;  // trace jobs, in trace order
    int placed = 0;               // members placed (waiting or running)
    int queued = 0;               // members queued now
    WallTime all_queued_since{};  // when its last member was queued
    std::vector<int64_t> waits_s;  // per start
    std::string zone;             // of placed members under kEachPod
    // Started: every member placed (members that finished stay counted).
    bool running() const { return placed == static_cast<int>(members.size()); }
  };

  void Enqueue(size_t job, WallTime now);
  // Gangs (workload_gangs.cc).
  void FindGangs();
  int GangOf(size_t job) const { return gang_of_.empty() ? -1 : gang_of_[job]; }
  // Places every queued member of `gang` in one zone (or anywhere, without
  // same_zone), or none; true when placed (the gang then runs).
  bool PlaceGangWhole(int gang, WallTime now);
  // Places the one member `job` under kEachPod admission.
  bool PlaceGangMember(size_t job, WallTime now);
  // After TryPlace placed a member: holds it, and starts the gang once all
  // its members are placed.
  void NoteGangMemberPlaced(size_t job, WallTime now);
  // Undoes TryPlace of a member whose gang has not started.
  void Unplace(size_t job, WallTime now);
  // Stops the whole running gang of `job` (interrupted: back to the last
  // checkpoint) and queues its members again.
  void StopGang(int gang, WallTime now, bool interrupted);
  void AddGangIdle(const Job& j, WallTime now);
  bool TryPlace(size_t job, int node_slot, WallTime now);
  bool Fits(const DemandUnit& u, SimNode& n, int shape, int* milli_per_gpu) const;
  bool StaticFit(const DemandUnit& u, const SimNode& n) const;
  // SplitFloorClasses' rule for `u` on `n`; the domain it would run in
  // (-1 for a job of a class that is not split) in `*domain`.
  bool SpreadAllows(const DemandUnit& u, const SimNode& n, int* domain) const;
  void Release(size_t job, WallTime now);
  void Evict(size_t job, WallTime now, bool interrupted);
  // Evict for one job alone (a gang member: without its gang), resuming
  // from `saved_s` seconds of progress when set (a gang resumes from the
  // last checkpoint all its members have).
  void EvictOne(size_t job, WallTime now, bool interrupted, std::optional<int64_t> saved_s);
  // Progress the job keeps if stopped at `now` (interrupted: its last
  // checkpoint, or what it saved at a notice).
  int64_t SavedProgress(size_t job, WallTime now, bool interrupted) const;
  // Seconds of the job's work done by this run at `now` (after its restart
  // cost, at most what was left).
  static int64_t RunProgress(const Job& j, WallTime now);
  // The job's deadline under `deadlines` (class -> deadline from submission):
  // unit_deadlines_ (what the run's policy defers) or judged_deadlines_.
  std::optional<WallTime> DueAt(size_t job, const std::map<std::string, DeadlineRule>& deadlines) const;
  // The unit's deadline (the run's policy's) and the terms of its Uniform
  // Progress line: submission and whole expected runtime.
  void SetDeadlineTerms(size_t job, DemandUnit* u) const;
  double JobGpus(const Job& j) const;
  void Touch(SimNode& n) { n.version = ++version_counter_; }
  // Adds the job's held GPU-seconds from the later of its start and the
  // last TakeHeldGpuSeconds up to `now` to held_.
  void AddHeld(size_t job, const std::string& instance_id, WallTime now);

  const Trace& trace_;
  const Catalog& catalog_;
  WallTime start_;
  size_t max_pending_;
  std::vector<Job> jobs_;
  size_t next_arrival_ = 0;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<Finish>> finishes_;
  std::set<QueueKey> queue_;
  std::vector<size_t> arrived_;  // since the last pass
  bool capacity_freed_ = false;
  std::vector<SimNode> nodes_;             // ready, in order (dead ones compacted away lazily)
  std::unordered_map<std::string, int> node_slot_;
  std::unordered_map<std::string, bool> noticed_before_ready_;
  std::set<std::string> taken_back_;  // instances being taken back (OnTakeBack) until gone
  std::map<std::string, std::set<std::string>> class_pools_;  // empty set: any pool
  SpreadClasses spread_;                                      // none unless SplitFloorClasses
  std::map<std::string, SpreadState> spread_state_;           // per split class
  std::set<std::string> on_demand_only_;             // SplitFloorClasses: share-0 interruptible classes
  std::map<std::string, DeadlineRule> unit_deadlines_;    // class -> deadline set on pending units
  std::optional<std::map<std::string, Seconds>> class_runtimes_;  // class -> runtime (UseClassRuntimes)
  std::map<std::string, DeadlineRule> judged_deadlines_;  // class -> deadline ClassResults judges by
  std::vector<std::string> classes_;
  std::vector<int> shape_of_;  // per trace job
  std::vector<Gang> gangs_;
  std::vector<int> gang_of_;  // per trace job: its gang, -1 none (empty: no gangs)
  GangAdmission gang_admission_ = GangAdmission::kWhole;
  int shape_count_ = 0;
  std::vector<DemandUnit> pending_units_;
  bool pending_dirty_ = true;
  uint64_t pending_version_ = 1;
  uint64_t version_counter_ = 1;
  WallTime signal_time_{};
  WorkloadStats stats_;
  bool measuring_held_ = false;  // TakeHeldGpuSeconds was called
  HeldGpuSeconds held_;          // since held_since_, of jobs that stopped running
  WallTime held_since_{};
  bool measuring_lost_ = false;  // TakeLostWork was called
  std::vector<LostWork> lost_;   // since the last TakeLostWork
};

}  // namespace gpuscaler::sim
