// Retention: monthly rollups, batched pruning, and the reader's view of the
// rollups.
#include <string>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "rows.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Query;
using store_internal::Select;

namespace {

#define GPUSCALER_MONTHLY_USAGE_COLUMNS                                                                     \
  "run_id, month_start, workload_class, team, pool, capacity_type, cost_usd, idle_usd, on_demand_usd, " \
  "gpu_seconds_paid, gpu_seconds_allocated, gpu_seconds_busy, gpu_seconds_busy_measured"
constexpr auto kMonthlyUsageFields = std::make_tuple(
    &MonthlyUsageRow::run_id, &MonthlyUsageRow::month_start, &MonthlyUsageRow::workload_class, &MonthlyUsageRow::team,
    &MonthlyUsageRow::pool, &MonthlyUsageRow::capacity_type, &MonthlyUsageRow::cost_usd, &MonthlyUsageRow::idle_usd,
    &MonthlyUsageRow::on_demand_usd, &MonthlyUsageRow::gpu_seconds_paid, &MonthlyUsageRow::gpu_seconds_allocated,
    &MonthlyUsageRow::gpu_seconds_busy, &MonthlyUsageRow::gpu_seconds_busy_measured);

// What PruneBefore deletes, in order: nodes go before decisions, so a
// decision kept only for a node pruned now goes too (node_prices and actions
// follow by cascade), and before the usage and lost work of nodes gone.
constexpr const char* kPrune[] = {
    "DELETE FROM price_samples WHERE time < ?1",
    "DELETE FROM nodes WHERE end_time IS NOT NULL AND end_time < ?1",
    "DELETE FROM usage WHERE end_time < ?1 AND instance_id NOT IN (SELECT instance_id FROM nodes)",
    "DELETE FROM lost_work WHERE time < ?1 AND instance_id NOT IN (SELECT instance_id FROM nodes)",
    "DELETE FROM decisions WHERE time < ?1 "
    "AND id NOT IN (SELECT decision_id FROM nodes WHERE decision_id IS NOT NULL) "
    "AND id NOT IN (SELECT decision_id FROM actions WHERE outcome = 'pending' AND decision_id IS NOT NULL)",
};

// One table's share of a prune, each bounded by ?2 rows, in the order of
// PruneBefore: a node goes before the decision that launched it.
constexpr const char* kPruneBatch[] = {
    "DELETE FROM price_samples WHERE (time, instance_type, region, zone, capacity_type) IN "
    "(SELECT time, instance_type, region, zone, capacity_type FROM price_samples WHERE time < ?1 LIMIT ?2)",
    "DELETE FROM usage WHERE (end_time, instance_id, workload_class, team, start_time) IN "
    "(SELECT u.end_time, u.instance_id, u.workload_class, u.team, u.start_time FROM usage u "
    " WHERE u.end_time < ?1 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.instance_id = u.instance_id "
    "   AND (n.end_time IS NULL OR n.end_time >= ?1)) LIMIT ?2)",
    "DELETE FROM lost_work WHERE (instance_id, time, workload_class, team) IN "
    "(SELECT l.instance_id, l.time, l.workload_class, l.team FROM lost_work l "
    " WHERE l.time < ?1 AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.instance_id = l.instance_id "
    "   AND (n.end_time IS NULL OR n.end_time >= ?1)) LIMIT ?2)",
    "DELETE FROM nodes WHERE instance_id IN "
    "(SELECT instance_id FROM nodes WHERE end_time IS NOT NULL AND end_time < ?1 "
    " AND NOT EXISTS (SELECT 1 FROM usage u WHERE u.instance_id = nodes.instance_id) LIMIT ?2)",
    "DELETE FROM decisions WHERE id IN "
    "(SELECT id FROM decisions WHERE time < ?1 "
    " AND id NOT IN (SELECT decision_id FROM nodes WHERE decision_id IS NOT NULL) "
    " AND id NOT IN (SELECT decision_id FROM actions WHERE outcome = 'pending' AND decision_id IS NOT NULL) "
    " LIMIT ?2)",
};

Result<std::optional<WallTime>> ReadRolledUpBefore(store_internal::Connection& db) {
  Result<Query> q = db.Prepare("SELECT rolled_up_before FROM rollup_state WHERE id = 1");
  if (!q) return q.error();
  Result<bool> row = q->Step("reading the rollup mark");
  if (!row) return row.error();
  if (!*row) return std::optional<WallTime>();
  return std::optional<WallTime>(q->Time(0));
}

}  // namespace

Status SqliteAuditStore::RecordMonthlyUsage(const std::vector<MonthlyUsageRow>& rows, WallTime rolled_up_before) {
  if (in_tick_ || batch_open_) return Error::Internal("RecordMonthlyUsage inside a tick or a group of ticks");
  Result<std::optional<WallTime>> mark = ReadRolledUpBefore(*db_);
  if (!mark) return mark.error();
  if (*mark && rolled_up_before < **mark) {
    return Error::InvalidInput("rollup mark " + FormatRfc3339(rolled_up_before) + " is before the current one, " +
                               FormatRfc3339(**mark));
  }
  Status s = db_->Run("BEGIN IMMEDIATE", "recording monthly usage");
  for (size_t i = 0; s.ok() && i < rows.size(); ++i) {
    Result<Query> q = db_->Prepare(
        "INSERT INTO monthly_usage (" GPUSCALER_MONTHLY_USAGE_COLUMNS
        ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) "
        "ON CONFLICT (run_id, month_start, workload_class, team, pool, capacity_type) DO UPDATE SET "
        "cost_usd = excluded.cost_usd, idle_usd = excluded.idle_usd, on_demand_usd = excluded.on_demand_usd, "
        "gpu_seconds_paid = excluded.gpu_seconds_paid, gpu_seconds_allocated = excluded.gpu_seconds_allocated, "
        "gpu_seconds_busy = excluded.gpu_seconds_busy, gpu_seconds_busy_measured = excluded.gpu_seconds_busy_measured");
    s = q ? store_internal::BindFields(*q, 1, rows[i], kMonthlyUsageFields).Run("inserting") : q.status();
  }
  if (s.ok()) {
    s = db_->Run("INSERT INTO rollup_state (id, rolled_up_before) VALUES (1, ?1) "
                 "ON CONFLICT (id) DO UPDATE SET rolled_up_before = excluded.rolled_up_before",
                 "moving the rollup mark", rolled_up_before);
  }
  if (s.ok()) s = db_->Run("COMMIT", "committing monthly usage");
  if (!s.ok() && !db_->Autocommit()) (void)db_->Run("ROLLBACK", "rolling back monthly usage");
  return s.ok() ? s : s.error().WithContext("recording monthly usage");
}

Status SqliteAuditStore::PruneBefore(WallTime cut) {
  return AtomicallyCall("pruning the audit store", [&]() -> Status {
    for (const char* sql : kPrune) {
      if (Status s = db_->Run(sql, "deleting", cut); !s.ok()) return s;
    }
    return Status::Ok();
  });
}

Result<int64_t> SqliteAuditStore::PruneBatch(WallTime cut, int max_rows) {
  if (max_rows <= 0) return Error::InvalidInput("PruneBatch: max_rows must be > 0");
  if (in_tick_ || batch_open_) return Error::Internal("PruneBatch inside a tick or a group of ticks");
  Result<std::optional<WallTime>> mark = ReadRolledUpBefore(*db_);
  if (!mark) return mark.error();
  if (!*mark) return int64_t{0};
  const WallTime until = std::min(cut, **mark);
  for (const char* sql : kPruneBatch) {
    Status s = db_->Run("BEGIN IMMEDIATE", "pruning the audit store");
    if (s.ok()) s = db_->Run(sql, "pruning", until, int64_t{max_rows});
    const int64_t deleted = s.ok() ? db_->Changes() : 0;
    if (s.ok()) s = db_->Run("COMMIT", "committing a prune batch");
    if (!s.ok()) {
      if (!db_->Autocommit()) (void)db_->Run("ROLLBACK", "rolling back a prune batch");
      return s.error().WithContext("pruning the audit store");
    }
    if (deleted > 0) return deleted;
  }
  return int64_t{0};
}

Result<std::optional<WallTime>> AuditReader::RolledUpBefore() { return ReadRolledUpBefore(*db_); }

Result<std::vector<MonthlyUsageRow>> AuditReader::MonthlyUsage(WallTime from, WallTime to) {
  return Select<MonthlyUsageRow>(
      *db_,
      "SELECT " GPUSCALER_MONTHLY_USAGE_COLUMNS
      " FROM monthly_usage WHERE month_start >= ?1 AND month_start < ?2 AND (run_id = ?3 OR ?3 IS NULL) "
      "ORDER BY month_start, run_id, workload_class, team, pool, capacity_type",
      "reading monthly usage",
      [](const Query& q) -> Result<MonthlyUsageRow> {
        MonthlyUsageRow row;
        store_internal::ReadFields(q, 0, kMonthlyUsageFields, &row);
        return row;
      },
      from, to, run_id_);
}

}  // namespace gpuscaler
