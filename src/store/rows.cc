#include "rows.h"

#include <nlohmann/json.hpp>

namespace gpuscaler {

std::string_view ToString(ActionKind k) { return k == ActionKind::kTerminate ? "terminate" : "launch"; }

std::string_view ToString(ActionOutcome o) {
  switch (o) {
    case ActionOutcome::kPending:
      return "pending";
    case ActionOutcome::kSucceeded:
      return "succeeded";
    case ActionOutcome::kPartial:
      return "partial";
    case ActionOutcome::kFailed:
      return "failed";
  }
  return "pending";
}

std::optional<ActionKind> ParseActionKind(std::string_view text) {
  if (text == "launch") return ActionKind::kLaunch;
  if (text == "terminate") return ActionKind::kTerminate;
  return std::nullopt;
}

std::optional<ActionOutcome> ParseActionOutcome(std::string_view text) {
  for (ActionOutcome o :
       {ActionOutcome::kPending, ActionOutcome::kSucceeded, ActionOutcome::kPartial, ActionOutcome::kFailed}) {
    if (text == ToString(o)) return o;
  }
  return std::nullopt;
}

namespace store_internal {

std::string IdsToJson(const std::vector<std::string>& ids) { return nlohmann::json(ids).dump(); }

Result<std::vector<std::string>> IdsFromJson(const std::string& text, std::string_view column) {
  try {
    return nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Error::Internal(std::string(column) + " is not a JSON array of strings: " + e.what());
  }
}

Result<ActionRow> ReadActionRow(const Query& q) {
  ActionRow row;
  row.id = q.Int(0);
  row.action.decision_id = q.IsNull(1) ? 0 : q.Int(1);
  std::optional<ActionKind> kind = ParseActionKind(q.Text(2));
  if (!kind) return Error::Internal("actions.kind '" + q.Text(2) + "' unknown");
  row.action.kind = *kind;
  row.action.idempotency_token = q.Text(3);
  row.action.pool = q.Text(4);
  row.action.offering.instance_type = q.Text(5);
  row.action.offering.region = q.Text(6);
  row.action.offering.zone = q.Text(7);
  std::optional<CapacityType> capacity = ParseCapacityType(q.Text(8));
  if (!capacity) return Error::Internal("actions.capacity_type '" + q.Text(8) + "' unknown");
  row.action.offering.capacity_type = *capacity;
  row.action.offering.usd_per_hour = q.Real(9);
  row.action.offering.on_demand_usd_per_hour = q.Real(10);
  row.action.offering.interruptions_per_hour = q.Real(11);
  row.action.count = static_cast<int>(q.Int(12));
  Result<std::vector<std::string>> ids = IdsFromJson(q.Text(13), "actions.instance_ids_json");
  if (!ids) return ids.error();
  row.action.instance_ids = std::move(*ids);
  row.action.reason = q.Text(14);
  std::optional<ActionOutcome> outcome = ParseActionOutcome(q.Text(15));
  if (!outcome) return Error::Internal("actions.outcome '" + q.Text(15) + "' unknown");
  row.outcome = *outcome;
  row.detail = q.Text(16);
  Result<std::vector<std::string>> result_ids = IdsFromJson(q.Text(17), "actions.result_instance_ids_json");
  if (!result_ids) return result_ids.error();
  row.result_instance_ids = std::move(*result_ids);
  return row;
}

Result<std::vector<ActionRow>> QueryOpenIntents(Connection& db) {
  Result<Query> q =
      db.Prepare("SELECT " GPUSCALER_ACTION_COLUMNS
                 ", (SELECT d.time FROM decisions d WHERE d.id = actions.decision_id)"
                 " FROM actions WHERE outcome = 'pending' ORDER BY id");
  if (!q) return q.error();
  std::vector<ActionRow> rows;
  while (true) {
    Result<bool> more = q->Step("reading open intents");
    if (!more) return more.error();
    if (!*more) break;
    Result<ActionRow> row = ReadActionRow(*q);
    if (!row) return row.error();
    if (!q->IsNull(18)) row->decision_time = WallTime(Seconds(q->Int(18)));
    rows.push_back(std::move(*row));
  }
  return rows;
}

}  // namespace store_internal
}  // namespace gpuscaler
