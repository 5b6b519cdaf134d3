// What the cluster state learns from the fleet between ticks, as small
// values with one way in (what was observed) and one way out: Publish puts
// the learner's part of the Snapshot there and says whether it changed in a
// way the replan gate must see. Each is in memory only unless it says how a
// restart rebuilds it.
//
//  - WarmUpLearner: per instance family, launch to GPUs allocatable
//    (Snapshot::warmup_seconds_by_family);
//  - DisruptionWindow: removals by plan within the policy's
//    disruption_interval (recently_disrupted) and the classes kept off spot
//    after a spot capacity error (spot_paused_classes);
//  - LostWorkAccount: per class, work lost to spot interruptions against the
//    GPU-hours it ran (spot_budget_spent_classes);
//  - SpotFloorAccount: per class with a spot_share_window, the on-demand
//    GPUs held above the floor on average (spot_floor_credit_gpus);
//  - SignalFreshness: the classes whose signals are stale or missing
//    (scale_down_blocked_classes: fail static, never read as zero).
// FleetLearners holds them all as the cluster state feeds them.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/node.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

struct LearnedStateCodec;

// Each family's warm-up moves a third of the way to every new observation
// (recent nodes weigh most: AMIs and drivers change), from the catalog's
// launch latency as the prior. A family is published once observed.
class WarmUpLearner {
 public:
  explicit WarmUpLearner(const Catalog& catalog);
  // The milestones reached this tick; only "gpus_allocatable" ones teach.
  void Observe(std::span<const NodeMilestone> milestones);
  // Rounded to whole seconds; true when a published figure moved (not a
  // structural change: it only reprices replacements).
  bool Publish(Snapshot& snapshot) const;

 private:
  friend struct LearnedStateCodec;  // learned_state.h: saves and restores the fields
  std::map<std::string, Seconds> prior_;  // the catalog's launch latency by family
  Seconds default_prior_;
  std::map<std::string, double> learned_s_;
};

class DisruptionWindow {
 public:
  // A node removed by plan (emptied, consolidated, replaced), not
  // interrupted.
  void RecordRemoval(WallTime at, const std::string& pool) { removals_.emplace_back(at, pool); }
  // A spot capacity error for the class's work: off spot until `until`.
  void PauseSpot(const std::string& workload_class, WallTime until) { spot_paused_until_[workload_class] = until; }
  // Removals recorded before a restart (node lifecycles ended "terminated"
  // or "consolidated"), in any order.
  void Restore(std::vector<std::pair<WallTime, std::string>> removals);
  // Drops removals older than a day (or the interval, if longer) and ended
  // pauses; true when either published list changed (structural).
  bool Publish(const Policy& policy, WallTime now, Snapshot& snapshot);

 private:
  friend struct LearnedStateCodec;  // learned_state.h: saves and restores the fields
  std::deque<std::pair<WallTime, std::string>> removals_;  // (time, pool), oldest first
  std::map<std::string, WallTime> spot_paused_until_;      // by class
};

// Both sums lose half their weight every `half_life` (the learned rates'),
// so old losses fade as GPU-hours without losses accrue.
class LostWorkAccount {
 public:
  explicit LostWorkAccount(Seconds half_life) : half_life_(half_life) {}
  // Decays the account to `now` and adds the GPU-hours the work running on
  // `nodes` accrued since the last call (the work of the last tick ran for
  // the whole interval: a tick is short against the half-life). Launching
  // placeholders (no instance id) run nothing.
  void Accrue(WallTime now, std::span<const Node> nodes);
  // A spot node got its notice: its running units' expected lost work.
  void ChargeInterruption(std::span<const DemandUnit> running);
  // The classes whose lost share is above their max_lost_work_share; true
  // when the list changed (structural).
  bool Publish(const Policy& policy, Snapshot& snapshot) const;

 private:
  friend struct LearnedStateCodec;  // learned_state.h: saves and restores the fields
  struct Sums {
    double lost_gpu_hours = 0;  // decayed
    double gpu_hours = 0;       // decayed
  };
  Seconds half_life_;
  std::map<std::string, Sums> by_class_;
  std::optional<WallTime> as_of_;
  // Restored from a saved state: the next call decays to its time and adds
  // nothing (what ran in between was not watched).
  bool resumed_ = false;
};

// Per class with a window: the GPU-hours of its running work and the part on
// on-demand nodes, both decayed with the window as half-life. The credit is
// the on-demand part above 1 - max_spot_share of the whole, over the
// account's weight in hours (the window / ln 2 once full).
class SpotFloorAccount {
 public:
  // Decays each windowed class's account to `now`, adds what the work on
  // `nodes` accrued since the last call, and drops classes without a window.
  void Observe(const Policy& policy, WallTime now, std::span<const Node> nodes);
  // spot_floor_credit_gpus. Never a change for the replan gate: the credit
  // drifts every tick and matters only to placement and consolidation, which
  // replan for their own reasons.
  void Publish(const Policy& policy, Snapshot& snapshot) const;

 private:
  friend struct LearnedStateCodec;  // learned_state.h: saves and restores the fields
  struct Sums {
    double on_demand_gpu_hours = 0;  // decayed
    double gpu_hours = 0;            // decayed
    double weight_hours = 0;         // decayed: the hours the sums cover
  };
  std::map<std::string, Sums> by_class_;
  std::optional<WallTime> as_of_;
  bool resumed_ = false;  // as LostWorkAccount's
};

// The classes whose demand signals are missing or older than their
// source's signals.max_staleness (default 120 s): their nodes are not
// scaled down (fail static), as missing is never read as zero.
class SignalFreshness {
 public:
  // The work source's signal states at `now`.
  void Observe(std::vector<SignalStatus> signals, const Policy& policy, WallTime now);
  // scale_down_blocked_classes (sorted); true when the list changed
  // (structural).
  bool Publish(Snapshot& snapshot) const;
  // The signals and the blocked classes, for the decision row.
  std::string Json(WallTime now) const;

 private:
  std::vector<SignalStatus> signals_;
  std::vector<std::string> blocked_;
};

// What the learners' Publish changed, for the replan gate.
struct LearnedChanges {
  bool any = false;
  bool structural = false;
};

struct FleetLearners {
  FleetLearners(const Catalog& catalog, Seconds interruption_half_life)
      : warm_up(catalog), lost_work(interruption_half_life) {}
  // Each learner's part into the snapshot.
  LearnedChanges Publish(const Policy& policy, WallTime now, Snapshot& snapshot);

  WarmUpLearner warm_up;
  DisruptionWindow disruption;
  LostWorkAccount lost_work;
  SpotFloorAccount spot_floor;
  SignalFreshness signals;
};

}  // namespace gpuscaler
