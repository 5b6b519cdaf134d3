// The replan gate: decides whether a tick calls the planner or reuses the
// previous plan. The planner is deterministic, so a tick whose inputs are
// those of the last plan would get the same plan again; skipping it keeps
// the simulator fast and the audit store free of repeated decisions.
//
// A tick reuses (skips the planner) when reuse is enabled and one of:
//  - quiet and unchanged: the last plan asked for nothing, the governor holds
//    nothing that could expire, nothing the planner sees has changed, no node
//    crossed the policy's min_node_age and less than max_plan_reuse passed;
//  - idle: nothing is pending and less than idle_replan_interval passed (the
//    planner could only propose removals, which the scale-down stabilization
//    delays anyway);
//  - covered: less than idle_replan_interval passed, no structural change
//    (nodes outside the plan, availability, notices, blocked classes,
//    policy), the governor held back no launch, and every pending unit was
//    in the last planned snapshot (provided for on launching nodes, or
//    unplaced for a reason that still holds).
// idle_replan_interval 0 turns the last two off. A tick never reuses when a
// pool's limits changed (a scaling schedule started or ended), nor once the
// last plan's replan_by passed (a unit held for its deadline may go to
// on-demand).
//
// Deterministic; values only; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <unordered_set>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

struct ReplanGateOptions {
  bool reuse_unchanged_plans = true;
  Seconds max_plan_reuse{900};
  Seconds idle_replan_interval{0};
};

struct GateVerdict {
  bool plan = true;
  std::string reason;  // one line, for logs and the tick report
};

class ReplanGate {
 public:
  explicit ReplanGate(ReplanGateOptions options) : options_(options) {}

  // Something the planner sees changed; `structural` as in ClusterState.
  void NoteChange(bool any, bool structural);
  // Pool limits changed (a forecast asks for other capacity ahead): the
  // next check plans.
  void NoteLimitsChange() { limits_changed_ = true; }
  // The scaling schedules in force now: one starting or ending changes pool
  // limits, so the next check plans.
  void NoteSchedules(const Policy& policy, WallTime now);
  GateVerdict Check(const Snapshot& snapshot, const Policy& policy, bool governor_holds, WallTime now) const;
  // The planner ran on `snapshot` at `now`.
  void Planned(const Snapshot& snapshot, WallTime now);
  // What the governed plan asked for, and how many launches the governor held.
  void Governed(const Plan& plan, int launches_held);

 private:
  ReplanGateOptions options_;
  std::optional<WallTime> replan_by_;
  bool changed_ = true;
  bool structure_changed_ = true;
  bool limits_changed_ = false;
  bool last_plan_empty_ = false;
  int last_launches_held_ = 0;
  WallTime last_plan_time_{};
  std::unordered_set<std::string> last_pending_ids_;
  std::string schedules_in_force_;  // their names, at the last NoteSchedules
};

}  // namespace gpuscaler
