#include "gpuscaler/store/audit_reader.h"

#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "rows.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Connection;
using store_internal::Query;
using store_internal::ReadSnapshot;

namespace {

#define GPUSCALER_DECISION_COLUMNS                                                                \
  "id, time, source, policy_name, policy_hash, pending_units, nodes, signals_json, "           \
  "snapshot_summary_json, plan_json, summary, cost_before_usd_per_hour, cost_after_usd_per_hour, " \
  "expected_interruption_usd_per_hour, scale_down_blocked"

DecisionRow ReadDecisionRow(const Query& q) {
  DecisionRow row;
  row.id = q.Int(0);
  DecisionRecord& d = row.decision;
  d.time = q.Time(1);
  d.source = q.Text(2);
  d.policy_name = q.Text(3);
  d.policy_hash = q.Text(4);
  d.pending_units = static_cast<int>(q.Int(5));
  d.nodes = static_cast<int>(q.Int(6));
  d.signals_json = q.Text(7);
  d.snapshot_summary_json = q.Text(8);
  d.plan_json = q.Text(9);
  d.summary = q.Text(10);
  d.cost_before_usd_per_hour = q.Real(11);
  d.cost_after_usd_per_hour = q.Real(12);
  d.expected_interruption_usd_per_hour = q.Real(13);
  d.scale_down_blocked = q.Int(14) != 0;
  return row;
}

Result<Offering> ReadOffering(const Query& q, int first, std::string_view table) {
  Offering o;
  o.instance_type = q.Text(first);
  o.region = q.Text(first + 1);
  o.zone = q.Text(first + 2);
  std::optional<CapacityType> capacity = ParseCapacityType(q.Text(first + 3));
  if (!capacity) return Error::Internal(std::string(table) + ".capacity_type '" + q.Text(first + 3) + "' unknown");
  o.capacity_type = *capacity;
  o.usd_per_hour = q.Real(first + 4);
  o.on_demand_usd_per_hour = q.Real(first + 5);
  o.interruptions_per_hour = q.Real(first + 6);
  return o;
}

// Steps `q` to the end, appending read(q) for every row.
template <typename Row, typename Read>
Status Collect(Query& q, std::string_view what, std::vector<Row>* out, Read&& read) {
  while (true) {
    Result<bool> more = q.Step(what);
    if (!more) return more.error();
    if (!*more) return Status::Ok();
    Result<Row> row = read(q);
    if (!row) return row.error();
    out->push_back(std::move(*row));
  }
}

Status CheckRange(WallTime from, WallTime to, std::string_view what) {
  if (from > to) {
    return Error::InvalidInput(std::string(what) + ": the range ends (" + FormatRfc3339(to) +
                               ") before it starts (" + FormatRfc3339(from) + ")");
  }
  return Status::Ok();
}

Status CheckLimit(int limit) {
  if (limit <= 0) return Error::InvalidInput("limit must be > 0, got " + std::to_string(limit));
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<AuditReader>> AuditReader::Open(const std::string& path, const AuditReaderOptions& options) {
  const std::string context = "opening audit database '" + path + "' for reading";
  if (path.empty() || path == ":memory:") {
    return Error::InvalidInput(context +
                               ": an in-memory database has no second connection; use SqliteAuditStore::OpenReader");
  }
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Error::NotFound(context + ": no such file");
  Result<std::shared_ptr<Connection>> db = Connection::Open(path, SQLITE_OPEN_READONLY, options.busy_timeout);
  if (!db) return db.error();
  Result<int> version = store_internal::ReadSchemaVersion(**db);
  if (!version) return version.error().WithContext(context);
  const int known = store_internal::AuditMigrations().back().version;
  if (*version == 0) return Error::Config(context + ": the file is empty, not an audit database");
  if (*version > known) {
    return Error::Config(context + ": schema version " + std::to_string(*version) + " is newer than this binary's " +
                         std::to_string(known) + "; use a newer gpuscaler");
  }
  if (*version < known) {
    return Error::Config(context + ": schema version " + std::to_string(*version) + " is older than " +
                         std::to_string(known) + "; open it once with the daemon (or SqliteAuditStore) to migrate it");
  }
  if (options.memory_mapped) {
    if (Status s = (*db)->Exec("PRAGMA mmap_size = 4294967296", "mapping the audit database"); !s.ok()) {
      return s.error().WithContext(context);
    }
  }
  auto reader = std::make_unique<AuditReader>(std::move(*db));
  reader->schema_version_ = *version;
  return reader;
}

AuditReader::AuditReader(std::shared_ptr<Connection> db)
    : db_(std::move(db)), schema_version_(store_internal::AuditMigrations().back().version) {}

AuditReader::~AuditReader() = default;

int AuditReader::SchemaVersion() const { return schema_version_; }

Result<std::vector<DecisionRow>> AuditReader::DecisionsSince(WallTime since, int limit) {
  if (Status s = CheckLimit(limit); !s.ok()) return s.error().WithContext("reading decisions");
  Result<Query> q = db_->Prepare("SELECT " GPUSCALER_DECISION_COLUMNS
                                 " FROM decisions WHERE time >= ?1 ORDER BY time, id LIMIT ?2");
  if (!q) return q.error();
  q->Bind(1, since).Bind(2, limit);
  std::vector<DecisionRow> rows;
  Status s = Collect(*q, "reading decisions", &rows, [](const Query& r) -> Result<DecisionRow> {
    return ReadDecisionRow(r);
  });
  if (!s.ok()) return s.error();
  return rows;
}

Result<std::vector<DecisionRow>> AuditReader::DecisionsAfterId(int64_t after_id, int limit) {
  if (Status s = CheckLimit(limit); !s.ok()) return s.error().WithContext("reading decisions");
  Result<Query> q =
      db_->Prepare("SELECT " GPUSCALER_DECISION_COLUMNS " FROM decisions WHERE id > ?1 ORDER BY id LIMIT ?2");
  if (!q) return q.error();
  q->Bind(1, after_id).Bind(2, limit);
  std::vector<DecisionRow> rows;
  Status s = Collect(*q, "reading decisions", &rows, [](const Query& r) -> Result<DecisionRow> {
    return ReadDecisionRow(r);
  });
  if (!s.ok()) return s.error();
  return rows;
}

Result<DecisionRow> AuditReader::Decision(int64_t id) {
  Result<Query> q = db_->Prepare("SELECT " GPUSCALER_DECISION_COLUMNS " FROM decisions WHERE id = ?1");
  if (!q) return q.error();
  Result<bool> found = q->Bind(1, id).Step("reading a decision");
  if (!found) return found.error();
  if (!*found) return Error::NotFound("decision " + std::to_string(id) + " is not in the audit store");
  return ReadDecisionRow(*q);
}

Result<std::vector<ActionRow>> AuditReader::ActionsForDecision(int64_t decision_id) {
  Result<Query> q =
      db_->Prepare("SELECT " GPUSCALER_ACTION_COLUMNS " FROM actions WHERE decision_id = ?1 ORDER BY id");
  if (!q) return q.error();
  q->Bind(1, decision_id);
  std::vector<ActionRow> rows;
  Status s = Collect(*q, "reading actions", &rows, store_internal::ReadActionRow);
  if (!s.ok()) return s.error();
  return rows;
}

Result<std::vector<ActionRow>> AuditReader::OpenIntents() { return store_internal::QueryOpenIntents(*db_); }

Result<std::vector<NodeRow>> AuditReader::NodesOverlapping(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading nodes"); !s.ok()) return s.error();
  ReadSnapshot snapshot(*db_);
  if (!snapshot.status().ok()) return snapshot.status().error();
  Result<Query> q = db_->Prepare(
      "SELECT instance_id, node_id, pool, instance_type, region, zone, capacity_type, launch_usd_per_hour, "
      "on_demand_usd_per_hour, interruptions_per_hour, gpu_count, launch_time, end_time, decision_id, reason, "
      "cause FROM nodes WHERE launch_time < ?2 AND (end_time IS NULL OR end_time > ?1) "
      "ORDER BY launch_time, instance_id");
  if (!q) return q.error();
  q->Bind(1, from).Bind(2, to);
  std::vector<NodeRow> nodes;
  Status s = Collect(*q, "reading nodes", &nodes, [](const Query& r) -> Result<NodeRow> {
    NodeRow row;
    NodeLaunchRecord& n = row.launch;
    n.instance_id = r.Text(0);
    n.node_id = r.Text(1);
    n.pool = r.Text(2);
    Result<Offering> offering = ReadOffering(r, 3, "nodes");
    if (!offering) return offering.error();
    n.offering = std::move(*offering);
    n.gpu_count = static_cast<int>(r.Int(10));
    n.launch_time = r.Time(11);
    row.end_time = r.OptionalTime(12);
    n.decision_id = r.IsNull(13) ? 0 : r.Int(13);
    n.reason = r.Text(14);
    row.cause = r.Text(15);
    return row;
  });
  if (!s.ok()) return s.error();
  if (nodes.empty()) return nodes;

  // The prices of the same nodes, in one pass over node_prices joined to the
  // same filter (one query rather than one per node).
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].launch.instance_id, i);
  Result<Query> p = db_->Prepare(
      "SELECT p.instance_id, p.from_time, p.usd_per_hour FROM node_prices p JOIN nodes n USING (instance_id) "
      "WHERE n.launch_time < ?2 AND (n.end_time IS NULL OR n.end_time > ?1) "
      "ORDER BY p.instance_id, p.from_time");
  if (!p) return p.error();
  p->Bind(1, from).Bind(2, to);
  // Rows come by instance: look each instance up once.
  std::string last_id;
  size_t last = nodes.size();
  while (true) {
    Result<bool> more = p->Step("reading node prices");
    if (!more) return more.error();
    if (!*more) break;
    std::string id = p->Text(0);
    if (last == nodes.size() || id != last_id) {
      auto it = index.find(id);
      if (it == index.end()) {
        last = nodes.size();
        continue;  // unreachable within one snapshot
      }
      last = it->second;
      last_id = std::move(id);
    }
    nodes[last].prices.push_back(PriceInterval{.from = p->Time(1), .to = {}, .usd_per_hour = p->Real(2)});
  }
  for (NodeRow& node : nodes) {
    for (size_t i = 0; i < node.prices.size(); ++i) {
      node.prices[i].to = i + 1 < node.prices.size() ? std::optional<WallTime>(node.prices[i + 1].from)
                                                     : node.end_time;
    }
  }
  return nodes;
}

Result<std::vector<UsageRow>> AuditReader::UsageOverlapping(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading usage"); !s.ok()) return s.error();
  Result<Query> q = db_->Prepare(
      "SELECT instance_id, workload_class, team, start_time, end_time, gpu_seconds_allocated, gpu_seconds_busy "
      "FROM usage WHERE end_time > ?1 AND start_time < ?2 "
      "ORDER BY start_time, end_time, instance_id, workload_class, team");
  if (!q) return q.error();
  q->Bind(1, from).Bind(2, to);
  std::vector<UsageRow> rows;
  Status s = Collect(*q, "reading usage", &rows, [](const Query& r) -> Result<UsageRow> {
    UsageRow row;
    row.usage.instance_id = r.Text(0);
    row.usage.workload_class = r.Text(1);
    row.usage.team = r.Text(2);
    row.usage.start = r.Time(3);
    row.usage.end = r.Time(4);
    row.usage.gpu_seconds_allocated = r.Real(5);
    row.usage.gpu_seconds_busy = r.Real(6);
    return row;
  });
  if (!s.ok()) return s.error();
  return rows;
}

Result<std::vector<PriceSample>> AuditReader::PriceSamples(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading price samples"); !s.ok()) return s.error();
  Result<Query> q = db_->Prepare(
      "SELECT time, instance_type, region, zone, capacity_type, usd_per_hour, on_demand_usd_per_hour, "
      "interruptions_per_hour, available FROM price_samples WHERE time >= ?1 AND time < ?2 "
      "ORDER BY time, instance_type, region, zone, capacity_type");
  if (!q) return q.error();
  q->Bind(1, from).Bind(2, to);
  std::vector<PriceSample> rows;
  Status s = Collect(*q, "reading price samples", &rows, [](const Query& r) -> Result<PriceSample> {
    PriceSample sample;
    sample.time = r.Time(0);
    Result<Offering> offering = ReadOffering(r, 1, "price_samples");
    if (!offering) return offering.error();
    sample.offering = std::move(*offering);
    sample.offering.available = r.Int(8) != 0;
    return sample;
  });
  if (!s.ok()) return s.error();
  return rows;
}

Status AuditReader::ForEachUsage(WallTime from, WallTime to, const std::function<void(const UsageView&)>& fn,
                                 std::optional<WallTime> end_after, std::optional<WallTime> end_until) {
  if (Status s = CheckRange(from, to, "reading usage"); !s.ok()) return s.error();
  // Its own statement rather than the cache's Query: the text columns are
  // read in place (valid until the next step), with no string copies.
  static constexpr const char* kSql =
      "SELECT instance_id, workload_class, team, start_time, end_time, gpu_seconds_allocated, gpu_seconds_busy "
      "FROM usage WHERE end_time > ?1 AND end_time > ?3 AND end_time <= ?4 AND start_time < ?2";
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_->raw(), kSql, -1, &raw, nullptr);
  if (rc != SQLITE_OK) return store_internal::SqliteError(rc, db_->raw(), "reading usage");
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
  sqlite3_bind_int64(raw, 1, ToUnixSeconds(from));
  sqlite3_bind_int64(raw, 2, ToUnixSeconds(to));
  sqlite3_bind_int64(raw, 3, end_after ? ToUnixSeconds(*end_after) : std::numeric_limits<int64_t>::min());
  sqlite3_bind_int64(raw, 4, end_until ? ToUnixSeconds(*end_until) : std::numeric_limits<int64_t>::max());
  auto text = [raw](int col) {
    const unsigned char* p = sqlite3_column_text(raw, col);
    return p == nullptr ? std::string_view()
                        : std::string_view(reinterpret_cast<const char*>(p),
                                           static_cast<size_t>(sqlite3_column_bytes(raw, col)));
  };
  UsageView view;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
    view.instance_id = text(0);
    view.workload_class = text(1);
    view.team = text(2);
    view.start = FromUnixSeconds(sqlite3_column_int64(raw, 3));
    view.end = FromUnixSeconds(sqlite3_column_int64(raw, 4));
    view.gpu_seconds_allocated = sqlite3_column_double(raw, 5);
    view.gpu_seconds_busy = sqlite3_column_double(raw, 6);
    fn(view);
  }
  if (rc != SQLITE_DONE) return store_internal::SqliteError(rc, db_->raw(), "reading usage");
  return Status::Ok();
}

Result<std::optional<WallTime>> AuditReader::LastRecordTime() {
  // Multi-argument max() is NULL if any argument is: an empty table counts
  // as -1, and -1 overall means no records.
  Result<Query> q = db_->Prepare(
      "SELECT max(coalesce((SELECT max(time) FROM decisions), -1), "
      "coalesce((SELECT max(launch_time) FROM nodes), -1), "
      "coalesce((SELECT max(end_time) FROM nodes), -1), "
      "coalesce((SELECT max(end_time) FROM usage), -1))");
  if (!q) return q.error();
  Result<bool> row = q->Step("reading the last record time");
  if (!row) return row.error();
  if (!*row || q->IsNull(0) || q->Int(0) < 0) return std::optional<WallTime>();
  return std::optional<WallTime>(q->Time(0));
}

AuditReader::ConsistentRead::ConsistentRead(AuditReader& reader)
    : snapshot_(std::make_unique<ReadSnapshot>(*reader.db_)), status_(snapshot_->status()) {}

AuditReader::ConsistentRead::~ConsistentRead() = default;

const Status& AuditReader::ConsistentRead::status() const { return status_; }

}  // namespace gpuscaler
