// The audit store's read side: what the controller reads back from its own
// store (node lifecycles, accepted launches, usage, the installation id) and
// the integrity check. The write side is sqlite_audit_store.cc.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "rows.h"
#include "schema.h"
#include "db.h"

namespace gpuscaler {

using store_internal::Connection;
using store_internal::Query;

Result<std::unique_ptr<AuditReader>> SqliteAuditStore::OpenReader() const {
  if (path_ == ":memory:") return std::make_unique<AuditReader>(db_);
  return AuditReader::Open(path_,
                           AuditReaderOptions{.busy_timeout = options_.busy_timeout, .password = options_.password});
}

namespace {

// The rows `read` gets through `reader`, each made an Out by `convert`.
template <typename Out, typename Read, typename Convert>
Result<std::vector<Out>> ReadThrough(Result<std::unique_ptr<AuditReader>> reader, Read read, Convert convert) {
  if (!reader) return reader.error();
  auto rows = read(**reader);
  if (!rows) return rows.error();
  std::vector<Out> out;
  out.reserve(rows->size());
  for (auto& row : *rows) out.push_back(convert(row));
  return out;
}

}  // namespace

Result<std::vector<NodeLifecycle>> SqliteAuditStore::NodeLifecycles(WallTime since, WallTime until) {
  return ReadThrough<NodeLifecycle>(
      OpenReader(), [&](AuditReader& reader) { return reader.NodesOverlapping(since, until); },
      [](NodeRow& r) -> NodeLifecycle {
        return {std::move(r.launch.instance_id), std::move(r.launch.offering), r.launch.launch_time, r.end_time,
                std::move(r.cause), std::move(r.launch.pool), std::move(r.prices)};
      });
}

Result<std::vector<AcceptedLaunch>> SqliteAuditStore::AcceptedLaunchesSince(WallTime since) {
  // Decisions by time first (indexed), then their actions: a restart reads
  // the last registration_timeout's launches, not the whole history.
  Result<std::vector<AcceptedLaunch>> rows = store_internal::Select<AcceptedLaunch>(
      *db_,
      "SELECT " GPUSCALER_ACTION_COLUMNS
      ", (SELECT d.time FROM decisions d WHERE d.id = actions.decision_id)"
      " FROM actions WHERE decision_id IN (SELECT id FROM decisions WHERE time >= ?1)"
      " AND kind = 'launch' AND outcome = 'succeeded' ORDER BY id",
      "reading accepted launches",
      [](const Query& q) -> Result<AcceptedLaunch> {
        AcceptedLaunch a;
        Result<ActionRow> row = store_internal::ReadActionRow(q);
        if (!row) return row.error();
        a.row = std::move(row).value();
        a.row.decision_time = q.OptionalTime(18);
        return a;
      },
      since);
  if (!rows) {
    NoteFailure(rows.error());
    return rows;
  }
  std::vector<AcceptedLaunch> accepted;
  for (AcceptedLaunch& a : *rows) {
    if (static_cast<int>(a.row.result_instance_ids.size()) >= a.row.action.count) continue;
    Result<std::vector<std::string>> arrived = ArrivedInstances(a.row.action.decision_id, a.row.action.pool);
    if (!arrived) {
      NoteFailure(arrived.error());
      return arrived.error();
    }
    a.arrived_instance_ids = std::move(*arrived);
    accepted.push_back(std::move(a));
  }
  return accepted;
}

Result<std::vector<std::string>> SqliteAuditStore::ArrivedInstances(int64_t decision_id, const std::string& pool) {
  std::set<std::string> results;
  Result<std::vector<std::string>> result_lists = store_internal::Select<std::string>(
      *db_, "SELECT result_instance_ids_json FROM actions WHERE decision_id = ?1 AND kind = 'launch'",
      "reading a decision's launched instances", [](const Query& q) -> Result<std::string> { return q.Text(0); },
      decision_id);
  if (!result_lists) return result_lists.error();
  for (const std::string& list : *result_lists) {
    Result<std::vector<std::string>> ids = store_internal::IdsFromJson(list, "actions.result_instance_ids_json");
    if (!ids) return ids.error();
    results.insert(ids->begin(), ids->end());
  }
  Result<std::vector<std::string>> nodes = store_internal::Select<std::string>(
      *db_, "SELECT instance_id FROM nodes WHERE decision_id = ?1 AND pool = ?2 ORDER BY launch_time, instance_id",
      "reading a decision's nodes", [](const Query& q) -> Result<std::string> { return q.Text(0); }, decision_id,
      pool);
  if (!nodes) return nodes.error();
  std::vector<std::string> arrived;
  for (std::string& id : *nodes) {
    if (!results.contains(id)) arrived.push_back(std::move(id));
  }
  return arrived;
}

Result<std::vector<UsageRecord>> SqliteAuditStore::UsageOverlapping(WallTime from, WallTime to) {
  return ReadThrough<UsageRecord>(
      OpenReader(), [&](AuditReader& reader) { return reader.UsageOverlapping(from, to); },
      [](UsageRow& r) { return std::move(r.usage); });
}

Result<std::string> SqliteAuditStore::InstallationId() {
  Result<Query> q = db_->Prepare("SELECT id FROM installation");
  if (!q) return q.error();
  Result<bool> row = q->Step("reading the installation id");
  if (!row) return row.error();
  if (!*row) return Error::Internal("the audit database has no installation id");
  return q->Text(0);
}

Result<std::string> SqliteAuditStore::IntegrityCheck() {
  if (db_->dialect() == store_internal::Dialect::kPostgres) return std::string("ok");
  Result<Query> q = db_->Prepare("PRAGMA integrity_check");
  if (!q) return q.error();
  std::string report;
  while (true) {
    Result<bool> row = q->Step("checking integrity");
    if (!row) return row.error();
    if (!*row) break;
    if (!report.empty()) report += '\n';
    report += q->Text(0);
  }
  return report;
}

}  // namespace gpuscaler
