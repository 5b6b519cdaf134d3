// The loop's side of the audit store: each tick's transaction and the
// decision row of every plan made.
//
// A decision is numbered by the store (its row id), or locally (1, 2, ...)
// when there is no store: intents and reports name it either way. Only the
// default planner's decisions record the planner's input (its snapshot and
// policy), as only they can be replayed (store/decision_inputs.h).
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/controller/cluster_state.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/plan.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

struct DecisionToRecord {
  const Plan& plan;  // what is acted on
  // The planner's own plan before the governor (null: the input is not
  // recorded); `edited`: the governor, repairs or an oracle forecast's notes
  // changed it.
  const Plan* planned = nullptr;
  bool edited = false;
  std::string planner_snapshot_json;  // the planner's input, with `planned`
  bool listed = true;                 // the instance list was read this tick
};

class DecisionRecorder {
 public:
  // `store` may be null (nothing recorded) and must outlive the recorder.
  DecisionRecorder(AuditStore* store, std::string source, bool records_planner_input)
      : store_(store), source_(std::move(source)), records_planner_input_(records_planner_input) {}

  // The tick's transaction (no store: nothing to begin or commit).
  Status BeginTick() { return store_ != nullptr ? store_->BeginTick() : Status::Ok(); }
  Status CommitTick() { return store_ != nullptr ? store_->CommitTick() : Status::Ok(); }
  bool RecordsToStore() const { return store_ != nullptr; }
  // Whether this tick's plan should come with its input (RecordDecision's
  // `planned` and `planner_snapshot_json`).
  bool RecordsPlannerInput() const { return store_ != nullptr && records_planner_input_; }

  // Records the decision and sets report->decision_id; false (the error in
  // the report) when the store could not, and then nothing may act on it.
  // With it, the snapshot's reservations and the pools that select them,
  // when they differ from what this recorder recorded last
  // (AuditStore::RecordReservations; a failure is in the report, and they
  // are tried again with the next decision).
  bool Record(DecisionToRecord decision, const ClusterState& state, const Policy& policy, WallTime now,
              TickReport* report);

 private:
  void RecordReservations(const Snapshot& snapshot, const Policy& policy, WallTime now, TickReport* report);

  AuditStore* store_;
  std::string source_;  // DecisionRecord::source
  bool records_planner_input_;
  int64_t local_decisions_ = 0;
  std::optional<std::vector<ReservationRecord>> recorded_reservations_;  // nullopt: none recorded yet
};

}  // namespace gpuscaler
