#include "gpuscaler/daemon/decision_replay.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/solver/planner.h"
#include "gpuscaler/store/decision_inputs.h"

namespace gpuscaler {

Result<DecisionReplay> ReplayDecision(AuditReader& reader, int64_t id, const Policy* policy) {
  DecisionInputReader inputs(reader);
  Result<StoredDecisionInput> input = inputs.Read(id);
  if (!input) return input.error();
  Result<DecisionRow> row = reader.Decision(id);
  if (!row) return row.error();

  DecisionReplay replay;
  replay.decision = std::move(*row);
  const std::string where = "decision " + std::to_string(id);
  Result<Snapshot> snapshot = ParseSnapshotJson(input->snapshot_json, where + " snapshot");
  if (!snapshot) return Error::Internal(snapshot.error().message());
  replay.snapshot = std::move(*snapshot);

  if (policy != nullptr) {
    replay.policy = *policy;
    replay.recorded_policy = false;
  } else {
    PolicyLoadResult loaded = ParsePolicy(input->policy_json, where + " policy " + input->policy_hash);
    if (!loaded.ok()) return Error::Internal(loaded.status().error().message());
    if (loaded.policy.content_hash != input->policy_hash) {
      return Error::Internal(where + ": the stored policy reads back with hash " + loaded.policy.content_hash +
                             ", not the recorded " + input->policy_hash);
    }
    replay.policy = std::move(loaded.policy);
  }

  replay.plan = MakePlan(replay.snapshot, replay.policy);
  replay.plan_json = FormatPlanJsonLine(replay.plan);
  replay.governor_edited = input->planner_plan_json.has_value();
  replay.planner_plan_json =
      replay.governor_edited ? std::move(*input->planner_plan_json) : replay.decision.decision.plan_json;
  replay.matches_recorded = replay.plan_json == replay.planner_plan_json;
  return replay;
}

std::string FormatDecisionReplayJson(const DecisionReplay& replay) {
  const DecisionRecord& d = replay.decision.decision;
  Json j = {{"decision_id", replay.decision.id},
            {"time", FormatRfc3339(d.time)},
            {"source", d.source},
            {"policy_name", replay.policy.name},
            {"policy_hash", replay.policy.content_hash},
            {"recorded_policy", replay.recorded_policy},
            {"governor_edited", replay.governor_edited},
            {"matches_recorded", replay.matches_recorded},
            {"plan", ToJson(replay.plan)}};
  if (!replay.matches_recorded) j["recorded_plan"] = Json::parse(replay.planner_plan_json, nullptr, false);
  return j.dump(2) + "\n";
}

}  // namespace gpuscaler
