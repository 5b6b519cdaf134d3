#include "gpuscaler/controller/decision_recorder.h"

#include <utility>

#include "gpuscaler/model/json.h"

namespace gpuscaler {

bool DecisionRecorder::Record(DecisionToRecord decision, const ClusterState& state, const Policy& policy,
                              WallTime now, TickReport* report) {
  report->decision_id = ++local_decisions_;
  if (store_ == nullptr) return true;
  const Snapshot& snapshot = state.snapshot();
  const Plan& plan = decision.plan;
  DecisionRecord d;
  d.time = now;
  d.source = source_;
  d.policy_name = policy.name;
  d.policy_hash = policy.content_hash;
  d.pending_units = static_cast<int>(snapshot.pending.size());
  d.nodes = static_cast<int>(snapshot.nodes.size());
  d.signals_json = state.SignalsJson(now);
  d.snapshot_summary_json = state.SummaryJson();
  d.plan_json = FormatPlanJsonLine(plan);
  d.summary = SummarizePlan(plan, snapshot.pending.size());
  d.cost_before_usd_per_hour = plan.cost_before_usd_per_hour;
  d.cost_after_usd_per_hour = plan.cost_after_usd_per_hour;
  d.expected_interruption_usd_per_hour = plan.expected_interruption_usd_per_hour;
  d.scale_down_blocked = !state.blocked_classes().empty() || !decision.listed;
  if (decision.planned != nullptr) {
    d.planner_snapshot_json = std::move(decision.planner_snapshot_json);
    d.planner_policy = &policy;
    // Kept when what is acted on differs from what the planner made (the
    // governor held something back, repairs were added).
    if (decision.edited) {
      std::string planner_plan_json = FormatPlanJsonLine(*decision.planned);
      if (planner_plan_json != d.plan_json) d.planner_plan_json = std::move(planner_plan_json);
    }
  }
  Result<int64_t> id = store_->RecordDecision(d);
  if (!id) {
    report->errors.push_back(id.error());
    return false;
  }
  report->decision_id = *id;
  RecordReservations(snapshot, policy, now, report);
  return true;
}

void DecisionRecorder::RecordReservations(const Snapshot& snapshot, const Policy& policy, WallTime now,
                                          TickReport* report) {
  std::vector<ReservationRecord> listed;
  listed.reserve(snapshot.reservations.size());
  for (const Reservation& r : snapshot.reservations) {
    ReservationRecord record{r, {}};
    record.reservation.available_count = 0;  // changes with every launch; not recorded
    for (const NodePoolPolicy& pool : policy.pools) {
      if (pool.SelectsReservation(r)) record.pools.push_back(pool.name);
    }
    listed.push_back(std::move(record));
  }
  if (recorded_reservations_ && *recorded_reservations_ == listed) return;
  const Status s = store_->RecordReservations(listed, now);
  if (!s.ok()) {
    report->errors.push_back(s.error());
    return;
  }
  recorded_reservations_ = std::move(listed);
}

}  // namespace gpuscaler
