#include "gpuscaler/controller/replan_gate.h"

#include <algorithm>
#include <utility>

#include "gpuscaler/policy/schedule.h"

namespace gpuscaler {

void ReplanGate::NoteChange(bool any, bool structural) {
  if (any) changed_ = true;
  if (structural) changed_ = structure_changed_ = true;
}

void ReplanGate::NoteSchedules(const Policy& policy, WallTime now) {
  std::string schedules;
  for (const ScheduleInForce& f : SchedulesInForce(policy.scaling.schedules, now)) schedules += f.schedule->name + ";";
  if (schedules == schedules_in_force_) return;
  schedules_in_force_ = std::move(schedules);
  NoteChange(true, true);
  NoteLimitsChange();
}

GateVerdict ReplanGate::Check(const Snapshot& snapshot, const Policy& policy, bool governor_holds,
                              WallTime now) const {
  if (!options_.reuse_unchanged_plans) return {true, "plan: reuse disabled"};
  if (limits_changed_) return {true, "plan: a scaling schedule started or ended"};
  if (replan_by_ && now >= *replan_by_) return {true, "plan: a unit held for its deadline may go to on-demand"};
  bool age_crossed = false;
  for (const Node& n : snapshot.nodes) {
    const WallTime mature = n.launch_time + policy.disruption.min_node_age;
    if (mature > last_plan_time_ && mature <= now) age_crossed = true;
  }
  const bool quiet = last_plan_empty_ && !governor_holds;
  const bool unchanged = !changed_ && !age_crossed && now - last_plan_time_ < options_.max_plan_reuse;
  if (quiet && unchanged)
    return {false, "reuse: nothing changed since the last plan, which asked for nothing"};
  const bool in_interval = now - last_plan_time_ < options_.idle_replan_interval;
  if (snapshot.pending.empty() && in_interval)
    return {false, "reuse: nothing pending within the idle replan interval"};
  bool covered = !structure_changed_ && last_launches_held_ == 0 && in_interval;
  for (size_t i = 0; covered && i < snapshot.pending.size(); ++i) {
    covered = last_pending_ids_.count(snapshot.pending[i].id) != 0;
  }
  if (covered)
    return {false, "reuse: every pending unit was in the last plan and nothing structural changed"};
  if (changed_) return {true, "plan: inputs changed"};
  if (age_crossed) return {true, "plan: a node reached min_node_age"};
  if (!last_plan_empty_) return {true, "plan: the last plan asked for changes"};
  if (governor_holds) return {true, "plan: the governor holds actions that may expire"};
  return {true, "plan: max_plan_reuse passed"};
}

void ReplanGate::Planned(const Snapshot& snapshot, WallTime now) {
  changed_ = false;
  structure_changed_ = false;
  limits_changed_ = false;
  last_pending_ids_.clear();
  for (const DemandUnit& u : snapshot.pending) last_pending_ids_.insert(u.id);
  last_plan_time_ = now;
}

void ReplanGate::Governed(const Plan& plan, int launches_held) {
  last_launches_held_ = launches_held;
  replan_by_ = plan.replan_by;
  last_plan_empty_ =
      plan.terminations.empty() && std::all_of(plan.launches.begin(), plan.launches.end(),
                                               [](const LaunchAction& l) { return l.count == 0; });
}

}  // namespace gpuscaler
