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

enum class Kind { kInt, kReal, kText, kBlob };
enum class Remap { kNone, kRun, kDecision };

struct Column {
  const char* name;
  Kind kind;
  Remap remap = Remap::kNone;
};

// One table as the copy moves it. `new_ids`: the target makes the row's id
// (RETURNING id), recorded for the rows that refer to it; `ignore_same`:
// a row the target has already (shared by several stores: price samples,
// policies) is kept as it is.
struct Table {
  const char* name;
  std::vector<Column> columns;
  Remap new_ids = Remap::kNone;
  bool ignore_same = false;
};

// Every table of the schema but schema_version and installation (the
// target's own), in an order where references come first.
const std::vector<Table>& CopiedTables() {
  static const std::vector<Table> tables = {
      {"runs",
       {{"name", Kind::kText}, {"source", Kind::kText}, {"policy_hash", Kind::kText}, {"started", Kind::kInt},
        {"ended", Kind::kInt}, {"cloud", Kind::kText}, {"instance_tags_json", Kind::kText},
        {"pool_tags_json", Kind::kText}},
       Remap::kRun},
      {"decisions",
       {{"time", Kind::kInt}, {"source", Kind::kText}, {"policy_name", Kind::kText}, {"policy_hash", Kind::kText},
        {"pending_units", Kind::kInt}, {"nodes", Kind::kInt}, {"signals_json", Kind::kText},
        {"snapshot_summary_json", Kind::kText}, {"plan_json", Kind::kText}, {"summary", Kind::kText},
        {"cost_before_usd_per_hour", Kind::kReal}, {"cost_after_usd_per_hour", Kind::kReal},
        {"expected_interruption_usd_per_hour", Kind::kReal}, {"scale_down_blocked", Kind::kInt},
        {"run_id", Kind::kInt, Remap::kRun}},
       Remap::kDecision},
      {"policies", {{"hash", Kind::kText}, {"name", Kind::kText}, {"policy_json", Kind::kText}}, Remap::kNone, true},
      {"decision_inputs",
       {{"decision_id", Kind::kInt, Remap::kDecision}, {"snapshot_codec", Kind::kText},
        {"snapshot_bytes", Kind::kInt}, {"snapshot", Kind::kBlob}, {"policy_hash", Kind::kText},
        {"planner_plan_json", Kind::kText}}},
      {"actions",
       {{"decision_id", Kind::kInt, Remap::kDecision}, {"kind", Kind::kText}, {"idempotency_token", Kind::kText},
        {"pool", Kind::kText}, {"instance_type", Kind::kText}, {"region", Kind::kText}, {"zone", Kind::kText},
        {"capacity_type", Kind::kText}, {"usd_per_hour", Kind::kReal}, {"on_demand_usd_per_hour", Kind::kReal},
        {"interruptions_per_hour", Kind::kReal}, {"count", Kind::kInt}, {"instance_ids_json", Kind::kText},
        {"reason", Kind::kText}, {"outcome", Kind::kText}, {"detail", Kind::kText},
        {"result_instance_ids_json", Kind::kText}}},
      {"nodes",
       {{"instance_id", Kind::kText}, {"node_id", Kind::kText}, {"pool", Kind::kText}, {"instance_type", Kind::kText},
        {"region", Kind::kText}, {"zone", Kind::kText}, {"capacity_type", Kind::kText},
        {"launch_usd_per_hour", Kind::kReal}, {"on_demand_usd_per_hour", Kind::kReal},
        {"interruptions_per_hour", Kind::kReal}, {"gpu_count", Kind::kInt}, {"launch_time", Kind::kInt},
        {"end_time", Kind::kInt}, {"decision_id", Kind::kInt, Remap::kDecision}, {"reason", Kind::kText},
        {"cause", Kind::kText}, {"run_id", Kind::kInt, Remap::kRun}, {"reservation_id", Kind::kText}}},
      {"node_prices", {{"instance_id", Kind::kText}, {"from_time", Kind::kInt}, {"usd_per_hour", Kind::kReal}}},
      {"price_samples",
       {{"time", Kind::kInt}, {"instance_type", Kind::kText}, {"region", Kind::kText}, {"zone", Kind::kText},
        {"capacity_type", Kind::kText}, {"usd_per_hour", Kind::kReal}, {"on_demand_usd_per_hour", Kind::kReal},
        {"interruptions_per_hour", Kind::kReal}, {"available", Kind::kInt}},
       Remap::kNone, true},
      {"usage",
       {{"end_time", Kind::kInt}, {"instance_id", Kind::kText}, {"workload_class", Kind::kText}, {"team", Kind::kText},
        {"start_time", Kind::kInt}, {"gpu_seconds_allocated", Kind::kReal}, {"gpu_seconds_busy", Kind::kReal},
        {"run_id", Kind::kInt, Remap::kRun}}},
      {"lost_work",
       {{"instance_id", Kind::kText}, {"time", Kind::kInt}, {"workload_class", Kind::kText}, {"team", Kind::kText},
        {"gpu_seconds", Kind::kReal}, {"run_id", Kind::kInt, Remap::kRun}}},
      {"monthly_usage",
       {{"run_id", Kind::kInt, Remap::kRun}, {"month_start", Kind::kInt}, {"workload_class", Kind::kText},
        {"team", Kind::kText}, {"pool", Kind::kText}, {"capacity_type", Kind::kText}, {"cost_usd", Kind::kReal},
        {"idle_usd", Kind::kReal}, {"on_demand_usd", Kind::kReal}, {"gpu_seconds_paid", Kind::kReal},
        {"gpu_seconds_allocated", Kind::kReal}, {"gpu_seconds_busy", Kind::kReal},
        {"gpu_seconds_busy_measured", Kind::kReal}}},
      {"reservations",
       {{"run_id", Kind::kInt, Remap::kRun}, {"id", Kind::kText}, {"first_seen", Kind::kInt}, {"last_seen", Kind::kInt},
        {"instance_type", Kind::kText}, {"region", Kind::kText}, {"zone", Kind::kText}, {"kind", Kind::kText},
        {"total_count", Kind::kInt}, {"start_time", Kind::kInt}, {"end_time", Kind::kInt},
        {"usd_per_hour", Kind::kReal}, {"upfront_usd", Kind::kReal}, {"tags_json", Kind::kText},
        {"pools_json", Kind::kText}}},
  };
  return tables;
}

Result<std::shared_ptr<Connection>> OpenConnection(const std::string& db, bool read_only) {
  if (IsPostgresUrl(db)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> c =
        store_internal::PostgresConnection::Connect({.url = db, .read_only = read_only});
    if (!c) return c.error();
    return std::shared_ptr<Connection>(std::move(*c));
  }
  return Connection::Open(db, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE, std::chrono::seconds(5));
}

struct Copier {
  Connection& from;
  Connection& to;
  std::map<int64_t, int64_t> runs;
  std::map<int64_t, int64_t> decisions;
  CopySummary summary;

  Status CopyTable(const Table& t) {
    std::string names;
    std::string params;
    for (size_t i = 0; i < t.columns.size(); ++i) {
      names += (i > 0 ? ", " : "") + std::string(t.columns[i].name);
      params += (i > 0 ? ", ?" : "?") + std::to_string(i + 1);
    }
    const bool keyed = t.new_ids != Remap::kNone;
    const std::string select =
        std::string("SELECT ") + (keyed ? "id, " : "") + names + " FROM " + t.name + (keyed ? " ORDER BY id" : "");
    const std::string insert = "INSERT INTO " + std::string(t.name) + " (" + names + ") VALUES (" + params + ")" +
                               (t.ignore_same ? " ON CONFLICT DO NOTHING" : "") + (keyed ? " RETURNING id" : "");
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
        const Column& c = t.columns[i];
        const int col = first + static_cast<int>(i);
        const int param = static_cast<int>(i) + 1;
        if (in->IsNull(col)) {
          out->BindNull(param);
        } else if (c.remap != Remap::kNone) {
          const std::map<int64_t, int64_t>& ids = c.remap == Remap::kRun ? runs : decisions;
          auto it = ids.find(in->Int(col));
          if (it == ids.end()) {
            return Error::Internal(what + ": " + c.name + " " + std::to_string(in->Int(col)) + " refers to no row");
          }
          out->Bind(param, it->second);
        } else if (c.kind == Kind::kInt) {
          out->Bind(param, in->Int(col));
        } else if (c.kind == Kind::kReal) {
          out->Bind(param, in->Real(col));
        } else if (c.kind == Kind::kBlob) {
          out->BindBlob(param, in->Blob(col));
        } else {
          out->Bind(param, in->Text(col));
        }
      }
      Result<bool> inserted = out->Step(what);
      if (!inserted) return inserted.error();
      if (keyed) (t.new_ids == Remap::kRun ? runs : decisions)[in->Int(0)] = out->Int(0);
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
Status CheckNotCopiedBefore(Connection& from, Connection& to, const std::string& target) {
  for (const auto& [table, key] : {std::pair{"actions", "idempotency_token"}, std::pair{"nodes", "instance_id"}}) {
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
        return Error::InvalidInput(std::string("the target ") + target + " holds " + table + " row '" + q->Text(0) +
                                   "' of the source already: it was copied there before; nothing copied");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CopySummary> CopyAuditStore(const std::string& from, const std::string& to) {
  const std::string context = "copying audit store " + RedactDatabaseUrl(from) + " to " + RedactDatabaseUrl(to);
  Result<std::shared_ptr<Connection>> source = OpenConnection(from, /*read_only=*/true);
  if (!source) return source.error().WithContext(context);
  Result<int> version = store_internal::ReadSchemaVersion(**source);
  if (!version) return version.error().WithContext(context);
  if (*version != SqliteAuditStore::CurrentSchemaVersion()) {
    return Error::Config(context + ": the source is at schema version " + std::to_string(*version) + ", not " +
                         std::to_string(SqliteAuditStore::CurrentSchemaVersion()) +
                         "; open it once with this gpuscaler's daemon (or sim --db) to migrate it");
  }
  {
    Result<std::unique_ptr<SqliteAuditStore>> created = SqliteAuditStore::Open(to);
    if (!created) return created.error().WithContext(context);
  }
  Result<std::shared_ptr<Connection>> target = OpenConnection(to, /*read_only=*/false);
  if (!target) return target.error().WithContext(context);
  Connection& in = **source;
  Connection& out = **target;
  Status s = in.Exec("BEGIN", "reading the source");
  if (s.ok()) s = out.Exec("BEGIN IMMEDIATE", "writing the target");
  if (s.ok()) s = CheckNotCopiedBefore(in, out, RedactDatabaseUrl(to));
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
