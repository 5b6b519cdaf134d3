#include "gpuscaler/store/copy.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/store/database_url.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "pg_db.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {
namespace {

using store_internal::Connection;
using store_internal::Query;

enum class CopyKind { kInt, kReal, kText, kBlob };
enum class CopyRemap { kNone, kRun, kDecision };

struct CopiedColumn {
  const char* name;
  CopyKind kind;
  CopyRemap remap = CopyRemap::kNone;
};

// One table as the copy moves it. `new_ids`: the target makes the row's id
// (RETURNING id), recorded for the rows that refer to it; `ignore_same`:
// a row the target has already (shared by several stores: price samples,
// policies) is kept as it is.
struct CopiedTable {
  const char* name;
  std::vector<CopiedColumn> columns;
  CopyRemap new_ids = CopyRemap::kNone;
  bool ignore_same = false;
};

// Every table of the schema but schema_version, installation and
// leadership (the target's own: which replica may write it now), in an order
// where references come first.
const std::vector<CopiedTable>& CopiedTables() {
  static const std::vector<CopiedTable> tables = {
      {"runs",
       {{"name", CopyKind::kText},
        {"source", CopyKind::kText},
        {"policy_hash", CopyKind::kText},
        {"started", CopyKind::kInt},
        {"ended", CopyKind::kInt},
        {"cloud", CopyKind::kText},
        {"instance_tags_json", CopyKind::kText},
        {"pool_tags_json", CopyKind::kText}},
       CopyRemap::kRun},
      {"decisions",
       {{"time", CopyKind::kInt},
        {"source", CopyKind::kText},
        {"policy_name", CopyKind::kText},
        {"policy_hash", CopyKind::kText},
        {"pending_units", CopyKind::kInt},
        {"nodes", CopyKind::kInt},
        {"signals_json", CopyKind::kText},
        {"snapshot_summary_json", CopyKind::kText},
        {"plan_json", CopyKind::kText},
        {"summary", CopyKind::kText},
        {"cost_before_usd_per_hour", CopyKind::kReal},
        {"cost_after_usd_per_hour", CopyKind::kReal},
        {"expected_interruption_usd_per_hour", CopyKind::kReal},
        {"scale_down_blocked", CopyKind::kInt},
        {"run_id", CopyKind::kInt, CopyRemap::kRun},
        {"leader_term", CopyKind::kInt}},
       CopyRemap::kDecision},
      {"policies",
       {{"hash", CopyKind::kText}, {"name", CopyKind::kText}, {"policy_json", CopyKind::kText}},
       CopyRemap::kNone,
       true},
      {"decision_inputs",
       {{"decision_id", CopyKind::kInt, CopyRemap::kDecision},
        {"snapshot_codec", CopyKind::kText},
        {"snapshot_bytes", CopyKind::kInt},
        {"snapshot", CopyKind::kBlob},
        {"policy_hash", CopyKind::kText},
        {"planner_plan_json", CopyKind::kText}}},
      {"actions",
       {{"decision_id", CopyKind::kInt, CopyRemap::kDecision},
        {"kind", CopyKind::kText},
        {"idempotency_token", CopyKind::kText},
        {"pool", CopyKind::kText},
        {"instance_type", CopyKind::kText},
        {"region", CopyKind::kText},
        {"zone", CopyKind::kText},
        {"capacity_type", CopyKind::kText},
        {"usd_per_hour", CopyKind::kReal},
        {"on_demand_usd_per_hour", CopyKind::kReal},
        {"interruptions_per_hour", CopyKind::kReal},
        {"count", CopyKind::kInt},
        {"instance_ids_json", CopyKind::kText},
        {"reason", CopyKind::kText},
        {"outcome", CopyKind::kText},
        {"detail", CopyKind::kText},
        {"result_instance_ids_json", CopyKind::kText}}},
      {"nodes",
       {{"instance_id", CopyKind::kText},
        {"node_id", CopyKind::kText},
        {"pool", CopyKind::kText},
        {"instance_type", CopyKind::kText},
        {"region", CopyKind::kText},
        {"zone", CopyKind::kText},
        {"capacity_type", CopyKind::kText},
        {"launch_usd_per_hour", CopyKind::kReal},
        {"on_demand_usd_per_hour", CopyKind::kReal},
        {"interruptions_per_hour", CopyKind::kReal},
        {"gpu_count", CopyKind::kInt},
        {"launch_time", CopyKind::kInt},
        {"end_time", CopyKind::kInt},
        {"decision_id", CopyKind::kInt, CopyRemap::kDecision},
        {"reason", CopyKind::kText},
        {"cause", CopyKind::kText},
        {"run_id", CopyKind::kInt, CopyRemap::kRun},
        {"reservation_id", CopyKind::kText}}},
      {"node_prices",
       {{"instance_id", CopyKind::kText}, {"from_time", CopyKind::kInt}, {"usd_per_hour", CopyKind::kReal}}},
      {"price_samples",
       {{"time", CopyKind::kInt},
        {"instance_type", CopyKind::kText},
        {"region", CopyKind::kText},
        {"zone", CopyKind::kText},
        {"capacity_type", CopyKind::kText},
        {"usd_per_hour", CopyKind::kReal},
        {"on_demand_usd_per_hour", CopyKind::kReal},
        {"interruptions_per_hour", CopyKind::kReal},
        {"available", CopyKind::kInt}},
       CopyRemap::kNone,
       true},
      {"usage",
       {{"end_time", CopyKind::kInt},
        {"instance_id", CopyKind::kText},
        {"workload_class", CopyKind::kText},
        {"team", CopyKind::kText},
        {"start_time", CopyKind::kInt},
        {"gpu_seconds_allocated", CopyKind::kReal},
        {"gpu_seconds_busy", CopyKind::kReal},
        {"run_id", CopyKind::kInt, CopyRemap::kRun}}},
      {"lost_work",
       {{"instance_id", CopyKind::kText},
        {"time", CopyKind::kInt},
        {"workload_class", CopyKind::kText},
        {"team", CopyKind::kText},
        {"gpu_seconds", CopyKind::kReal},
        {"run_id", CopyKind::kInt, CopyRemap::kRun}}},
      {"monthly_usage",
       {{"run_id", CopyKind::kInt, CopyRemap::kRun},
        {"month_start", CopyKind::kInt},
        {"workload_class", CopyKind::kText},
        {"team", CopyKind::kText},
        {"pool", CopyKind::kText},
        {"capacity_type", CopyKind::kText},
        {"cost_usd", CopyKind::kReal},
        {"idle_usd", CopyKind::kReal},
        {"on_demand_usd", CopyKind::kReal},
        {"gpu_seconds_paid", CopyKind::kReal},
        {"gpu_seconds_allocated", CopyKind::kReal},
        {"gpu_seconds_busy", CopyKind::kReal},
        {"gpu_seconds_busy_measured", CopyKind::kReal}}},
      {"reservations",
       {{"run_id", CopyKind::kInt, CopyRemap::kRun},
        {"id", CopyKind::kText},
        {"first_seen", CopyKind::kInt},
        {"last_seen", CopyKind::kInt},
        {"instance_type", CopyKind::kText},
        {"region", CopyKind::kText},
        {"zone", CopyKind::kText},
        {"kind", CopyKind::kText},
        {"total_count", CopyKind::kInt},
        {"start_time", CopyKind::kInt},
        {"end_time", CopyKind::kInt},
        {"usd_per_hour", CopyKind::kReal},
        {"upfront_usd", CopyKind::kReal},
        {"tags_json", CopyKind::kText},
        {"pools_json", CopyKind::kText}}},
      // A cluster's learned state the target has already (its controller
      // runs there now) is the newer one: kept.
      {"learned_state",
       {{"cluster", CopyKind::kText}, {"updated_at", CopyKind::kInt}, {"state_json", CopyKind::kText}},
       CopyRemap::kNone,
       true},
  };
  return tables;
}

Result<std::shared_ptr<Connection>> OpenCopyConnection(const std::string& db, bool read_only) {
  if (IsPostgresUrl(db)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> c =
        store_internal::PostgresConnection::Connect({.url = db, .read_only = read_only});
    if (!c) return c.error();
    return std::shared_ptr<Connection>(std::move(*c));
  }
  return Connection::Open(db, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE,
                          std::chrono::seconds(5));
}

struct Copier {
  Connection& from;
  Connection& to;
  std::map<int64_t, int64_t> runs;
  std::map<int64_t, int64_t> decisions;
  CopySummary summary;

  Status CopyTable(const CopiedTable& t) {
    std::string names;
    std::string params;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      names += (i > 0 ? ", " : "") + std::string(t.columns[i].name);
      params += (i > 0 ? ", ?" : "?") + std::to_string(i + 1);
    }
    const bool keyed = t.new_ids != CopyRemap::kNone;
    const std::string select = std::string("SELECT ") + (keyed ? "id, " : "") + names + " FROM " + t.name +
                               (keyed ? " ORDER BY id" : "");
    const std::string insert = "INSERT INTO " + std::string(t.name) + " (" + names + ") VALUES (" + params +
                               ")" + (t.ignore_same ? " ON CONFLICT DO NOTHING" : "") +
                               (keyed ? " RETURNING id" : "");
    const std::string what = std::string("copying table ") + t.name;
    Result<Query> in = from.Prepare(select.c_str());
    if (!in) return in.error().WithContext(what);
    int64_t copied = 0;
    while (true) {
      Result<bool> more = in->Step(what);
      if (!more) return more.error();
      if (!*more) break;
      Result<Query> out = to.Prepare(insert.c_str());
      if (!out) return out.error().WithContext(what);
      const int first = keyed ? 1 : 0;
      for (size_t i = 0; i < t.columns.size(); ++i) {
        const CopiedColumn& c = t.columns[i];
        const int col = first + static_cast<int>(i);
        const int param = static_cast<int>(i) + 1;
        if (in->IsNull(col)) {
          out->BindNull(param);
        } else if (c.remap != CopyRemap::kNone) {
          const std::map<int64_t, int64_t>& ids = c.remap == CopyRemap::kRun ? runs : decisions;
          auto it = ids.find(in->Int(col));
          if (it == ids.end()) {
            return Error::Internal(what + ": " + c.name + " " + std::to_string(in->Int(col)) +
                                   " refers to no row");
          }
          out->Bind(param, it->second);
        } else if (c.kind == CopyKind::kInt) {
          out->Bind(param, in->Int(col));
        } else if (c.kind == CopyKind::kReal) {
          out->Bind(param, in->Real(col));
        } else if (c.kind == CopyKind::kBlob) {
          out->BindBlob(param, in->Blob(col));
        } else {
          out->Bind(param, in->Text(col));
        }
      }
      Result<bool> inserted = out->Step(what);
      if (!inserted) return inserted.error();
      if (keyed) (t.new_ids == CopyRemap::kRun ? runs : decisions)[in->Int(0)] = out->Int(0);
      ++copied;
    }
    summary.rows[t.name] = copied;
    return Status::Ok();
  }

  // The rollup mark: the earlier of the two (months before it are rolled
  // up in both stores).
  Status CopyRollupMark() {
    Result<Query> q = from.Prepare("SELECT rolled_up_before FROM rollup_state WHERE id = 1");
    if (!q) return q.error();
    Result<bool> row = q->Step("reading the rollup mark");
    if (!row) return row.error();
    if (!*row) return Status::Ok();
    return to.Run(
        "INSERT INTO rollup_state (id, rolled_up_before) VALUES (1, ?1) ON CONFLICT (id) DO UPDATE SET "
        "rolled_up_before = CASE WHEN excluded.rolled_up_before < rollup_state.rolled_up_before "
        "THEN excluded.rolled_up_before ELSE rollup_state.rolled_up_before END",
        "copying the rollup mark", q->Int(0));
  }
};

// kInvalidInput when the target holds any of the source's actions or nodes.
Status CheckNotCopiedBefore(Connection& from, Connection& to) {
  for (const auto& [table, key] :
       {std::pair{"actions", "idempotency_token"}, std::pair{"nodes", "instance_id"}}) {
    const std::string sql = std::string("SELECT ") + key + " FROM " + table;
    Result<Query> q = from.Prepare(sql.c_str());
    if (!q) return q.error();
    const std::string probe = std::string("SELECT count(*) FROM ") + table + " WHERE " + key + " = ?1";
    while (true) {
      Result<bool> more = q->Step("reading the source's keys");
      if (!more) return more.error();
      if (!*more) break;
      Result<Query> p = to.Prepare(probe.c_str());
      if (!p) return p.error();
      Result<bool> found = p->Bind(1, q->Text(0)).Step("looking for the source's rows in the target");
      if (!found) return found.error();
      if (*found && p->Int(0) > 0) {
        return Error::InvalidInput(std::string("the target holds ") + table + " row '" + q->Text(0) +
                                   "' of the source already: it was copied there before; nothing copied");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CopySummary> CopyAuditStore(const std::string& from, const std::string& to) {
  const std::string context =
      "copying audit store " + RedactDatabaseUrl(from) + " to " + RedactDatabaseUrl(to);
  Result<std::shared_ptr<Connection>> source = OpenCopyConnection(from, /*read_only=*/true);
  if (!source) return source.error().WithContext(context);
  Result<int> version = store_internal::ReadSchemaVersion(**source);
  if (!version) return version.error().WithContext(context);
  if (*version != SqliteAuditStore::CurrentSchemaVersion()) {
    return Error::Config(context + ": the source is at schema version " + std::to_string(*version) +
                         ", not " + std::to_string(SqliteAuditStore::CurrentSchemaVersion()) +
                         "; open it once with this gpuscaler's daemon (or sim --db) to migrate it");
  }
  {
    Result<std::unique_ptr<SqliteAuditStore>> created = SqliteAuditStore::Open(to);
    if (!created) return created.error().WithContext(context);
  }
  Result<std::shared_ptr<Connection>> target = OpenCopyConnection(to, /*read_only=*/false);
  if (!target) return target.error().WithContext(context);
  Connection& in = **source;
  Connection& out = **target;
  Status s = in.Exec("BEGIN", "reading the source");
  if (s.ok()) s = out.Exec("BEGIN IMMEDIATE", "writing the target");
  if (s.ok()) s = CheckNotCopiedBefore(in, out);
  Copier copier{in, out, {}, {}, {}};
  for (size_t i = 0; s.ok() && i < CopiedTables().size(); ++i) s = copier.CopyTable(CopiedTables()[i]);
  if (s.ok()) s = copier.CopyRollupMark();
  if (s.ok()) s = out.Exec("COMMIT", "committing the copy");
  if (!s.ok() && !out.Autocommit()) (void)out.Exec("ROLLBACK", "rolling back the copy");
  if (!in.Autocommit()) (void)in.Exec("COMMIT", "ending the read");
  if (!s.ok()) return s.error().WithContext(context);
  return copier.summary;
}

}  // namespace gpuscaler
