// The learned_state table: one JSON document per cluster of what its
// controller has learned that no history rebuilds
// (AuditStore::SaveLearnedState, LearnedState).
#include <string>

#include <nlohmann/json.hpp>

#include "gpuscaler/store/sqlite_audit_store.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Query;

Status SqliteAuditStore::SaveLearnedState(const std::string& owner, WallTime at, const std::string& state_json) {
  if (owner.empty()) return Error::InvalidInput("saving learned state: empty owner");
  const nlohmann::json parsed = nlohmann::json::parse(state_json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return Error::InvalidInput("saving learned state of '" + owner + "': the document is not a JSON object");
  }
  return AtomicallyCall("saving learned state", [&]() -> Status {
    return db_->Run(
        "INSERT INTO learned_state (cluster, updated_at, state_json) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (cluster) DO UPDATE SET updated_at = excluded.updated_at, state_json = excluded.state_json",
        "replacing the cluster's learned state", owner, at, state_json);
  });
}

Result<std::optional<std::string>> SqliteAuditStore::LearnedState(const std::string& owner) {
  Result<Query> q = db_->Prepare("SELECT state_json FROM learned_state WHERE cluster = ?1");
  if (!q) return q.error().WithContext("reading learned state");
  Result<bool> row = q->Bind(1, owner).Step("reading learned state of '" + owner + "'");
  if (!row) return row.error();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(q->Text(0));
}

}  // namespace gpuscaler
