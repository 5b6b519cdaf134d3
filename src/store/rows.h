// Column encodings shared by the writer and the reader: enums as the text the
// schema's CHECK constraints allow, id lists as JSON arrays.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/status.h"
#include "gpuscaler/store/audit_store.h"
#include "sqlite_db.h"

namespace gpuscaler::store_internal {

std::string IdsToJson(const std::vector<std::string>& ids);
Result<std::vector<std::string>> IdsFromJson(const std::string& text, std::string_view column);

// The columns ReadActionRow reads, in order: pasted into constant SQL.
#define GPUSCALER_ACTION_COLUMNS                                                                   \
  "id, decision_id, kind, idempotency_token, pool, instance_type, region, zone, capacity_type, " \
  "usd_per_hour, on_demand_usd_per_hour, interruptions_per_hour, count, instance_ids_json, "     \
  "reason, outcome, detail, result_instance_ids_json"
Result<ActionRow> ReadActionRow(const Query& q);

// The writer's and reader's shared queries.
Result<std::vector<ActionRow>> QueryOpenIntents(Connection& db);

}  // namespace gpuscaler::store_internal
