// Replaying a recorded decision: the planner run again on the input the
// audit store kept for it (store/decision_inputs.h). Used by
// `gpuscaler explain --db F --decision ID` and the daemon's /decisions/ID.
//
// The planner is MakePlan, a pure function of snapshot and policy, so with the
// stored policy the replayed plan equals, byte for byte, the plan the planner
// made at the time: the decision's plan_json when the governor changed
// nothing, else the planner's plan stored beside it (the governor's holds and
// cooldowns depend on earlier ticks and are not replayed). With another
// policy it shows what that policy would have done at that moment.
//
// Thread-safety: a pure function of what it reads; use one AuditReader per
// thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler {

struct DecisionReplay {
  DecisionRow decision;        // the row as recorded (plan_json: after the governor)
  Snapshot snapshot;           // what the planner saw
  Policy policy;               // the policy replayed with (recorded, or the caller's)
  bool recorded_policy = true;  // false: a what-if with the caller's policy
  Plan plan;                   // the replayed plan
  std::string plan_json;       // FormatPlanJsonLine(plan)
  // What the planner made at the time: planner_plan_json when the governor
  // edited the plan, else the decision's plan_json.
  std::string planner_plan_json;
  bool governor_edited = false;
  // plan_json == planner_plan_json (meaningful with the recorded policy).
  bool matches_recorded = false;
};

// Replays decision `id` read through `reader`. `policy`: replay with this
// policy instead of the recorded one. Errors as DecisionInputReader::Read
// (unknown id: kNotFound listing the stored id range; no stored input:
// kNotFound saying why), and kInternal when the stored snapshot or policy
// cannot be read back or the policy no longer has its recorded hash.
Result<DecisionReplay> ReplayDecision(AuditReader& reader, int64_t id, const Policy* policy = nullptr);

// The replay as one JSON document: decision id, time, source, policy name
// and hash, whether the recorded policy was used, governor_edited,
// matches_recorded, then "plan" (the replayed plan) and, when it differs,
// "recorded_plan" (the planner's plan at the time). Pretty-printed, with a
// trailing newline.
std::string FormatDecisionReplayJson(const DecisionReplay& replay);

}  // namespace gpuscaler
