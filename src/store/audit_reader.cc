#include "gpuscaler/store/audit_reader.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gpuscaler/store/database_url.h"
#include "pg_db.h"
#include "rows.h"
#include "schema.h"
#include "sqlite_db.h"

namespace gpuscaler {

using store_internal::Connection;
using store_internal::Query;
using store_internal::Select;

namespace {

// The schema version that records runs' clouds and tags and lost work.
constexpr int kLostWorkVersion = 6;
// The schema version that records reservations and nodes' reservation ids.
constexpr int kReservationsVersion = 7;
// The schema version that records decisions' leadership terms.
constexpr int kLeaderTermVersion = 8;

Result<DecisionRow> ReadDecisionRow(const Query& q) {
  DecisionRow row;
  row.id = q.Int(0);
  store_internal::ReadFields(q, 1, store_internal::kDecisionFields, &row.decision);
  return row;
}

Status CheckRange(WallTime from, WallTime to, std::string_view what) {
  if (from > to) {
    return Error::InvalidInput(std::string(what) + ": the range ends (" + FormatRfc3339(to) +
                               ") before it starts (" + FormatRfc3339(from) + ")");
  }
  return Status::Ok();
}

// The nodes alive in [?1, ?2) of run ?3 (NULL: all): the whole table (in
// rowid order), or through the time index (in launch order).
const char* NodesQuery(bool whole_table, bool with_reservations) {
#define GPUSCALER_NODES_WHERE \
  "WHERE launch_time < ?2 AND (end_time IS NULL OR end_time > ?1) AND (run_id = ?3 OR ?3 IS NULL)"
  static constexpr const char* kQueries[2][2] = {
      {"SELECT " GPUSCALER_NODE_COLUMNS_V6 " FROM nodes " GPUSCALER_NODES_WHERE " ORDER BY launch_time, instance_id",
       "SELECT " GPUSCALER_NODE_COLUMNS " FROM nodes " GPUSCALER_NODES_WHERE " ORDER BY launch_time, instance_id"},
      {"SELECT " GPUSCALER_NODE_COLUMNS_V6 " FROM nodes NOT INDEXED " GPUSCALER_NODES_WHERE,
       "SELECT " GPUSCALER_NODE_COLUMNS " FROM nodes NOT INDEXED " GPUSCALER_NODES_WHERE},
  };
#undef GPUSCALER_NODES_WHERE
  return kQueries[whole_table ? 1 : 0][with_reservations ? 1 : 0];
}

Status CheckLimit(int limit) {
  if (limit <= 0) return Error::InvalidInput("limit must be > 0, got " + std::to_string(limit));
  return Status::Ok();
}

// A read-only connection to `path`, a file or a PostgreSQL URL.
Result<std::shared_ptr<Connection>> OpenReadOnly(const std::string& path, const AuditReaderOptions& options) {
  if (IsPostgresUrl(path)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> db = store_internal::PostgresConnection::Connect(
        {.url = path, .password = options.password, .read_only = true, .connect_timeout = std::chrono::seconds(10)});
    if (!db) return db.error();
    return std::shared_ptr<Connection>(std::move(*db));
  }
  return Connection::Open(path, SQLITE_OPEN_READONLY, options.busy_timeout);
}

}  // namespace

Result<bool> AuditReader::IsAuditDatabase(const std::string& path, const AuditReaderOptions& options) {
  Result<std::shared_ptr<Connection>> db = OpenReadOnly(path, options);
  if (!db) return db.error();
  Result<std::optional<std::string>> foreign = store_internal::WhyNotAnAuditDatabase(**db);
  if (!foreign) return foreign.error();
  if (*foreign) return false;
  Result<int> version = store_internal::ReadSchemaVersion(**db);
  if (!version) return version.error();
  return *version > 0;
}

Result<std::unique_ptr<AuditReader>> AuditReader::Open(const std::string& path, const AuditReaderOptions& options) {
  const std::string context = "opening audit database '" + RedactDatabaseUrl(path) + "' for reading";
  if (path.empty() || path == ":memory:") {
    return Error::InvalidInput(context +
                               ": an in-memory database has no second connection; use SqliteAuditStore::OpenReader");
  }
  std::error_code ec;
  if (!IsPostgresUrl(path) && !std::filesystem::exists(path, ec)) return Error::NotFound(context + ": no such file");
  Result<std::shared_ptr<Connection>> db = OpenReadOnly(path, options);
  if (!db) return db.error();
  Result<int> version = store_internal::ReadSchemaVersion(**db);
  if (!version) return version.error().WithContext(context);
  const int known = store_internal::AuditMigrations().back().version;
  if (*version == 0) return Error::Config(context + ": the file is empty, not an audit database");
  if (*version > known) {
    return Error::Config(context + ": schema version " + std::to_string(*version) + " is newer than this binary's " +
                         std::to_string(known) + "; use a newer gpuscaler");
  }
  if (*version < store_internal::OldestReadableSchemaVersion()) {
    return Error::Config(context + ": schema version " + std::to_string(*version) + " is older than " +
                         std::to_string(known) + "; open it once with the daemon (or SqliteAuditStore) to migrate it");
  }
  if (options.memory_mapped && (*db)->dialect() == store_internal::Dialect::kSqlite) {
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

Result<std::vector<RunRow>> AuditReader::Runs() {
  return Select<RunRow>(*db_,
                        schema_version_ >= kLostWorkVersion ? "SELECT " GPUSCALER_RUN_COLUMNS " FROM runs ORDER BY id"
                                                            : "SELECT " GPUSCALER_RUN_COLUMNS_V5 " FROM runs ORDER BY id",
                        "reading runs", store_internal::ReadRunRow);
}

bool AuditReader::LostWorkRecorded() const { return schema_version_ >= kLostWorkVersion; }

Result<std::vector<LostWorkRecord>> AuditReader::LostWork(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading lost work"); !s.ok()) return s.error();
  if (!LostWorkRecorded()) return std::vector<LostWorkRecord>{};
  return Select<LostWorkRecord>(
      *db_,
      "SELECT " GPUSCALER_LOST_WORK_COLUMNS
      " FROM lost_work WHERE time >= ?1 AND time < ?2 AND (run_id = ?3 OR ?3 IS NULL) "
      "ORDER BY time, instance_id, workload_class, team",
      "reading lost work",
      [](const Query& r) -> Result<LostWorkRecord> {
        LostWorkRecord row;
        store_internal::ReadFields(r, 0, store_internal::kLostWorkFields, &row);
        return row;
      },
      from, to, run_id_);
}

bool AuditReader::ReservationsRecorded() const { return schema_version_ >= kReservationsVersion; }

Result<std::vector<ReservationRow>> AuditReader::Reservations() {
  if (!ReservationsRecorded()) return std::vector<ReservationRow>{};
  return Select<ReservationRow>(*db_,
                                "SELECT " GPUSCALER_RESERVATION_COLUMNS
                                " FROM reservations WHERE run_id = ?1 OR ?1 IS NULL ORDER BY id, first_seen, run_id",
                                "reading reservations", store_internal::ReadReservationRow, run_id_);
}

Result<std::vector<DecisionRow>> AuditReader::DecisionsSince(WallTime since, int limit) {
  if (Status s = CheckLimit(limit); !s.ok()) return s.error().WithContext("reading decisions");
  return Select<DecisionRow>(*db_,
                             "SELECT id, " GPUSCALER_DECISION_COLUMNS
                             " FROM decisions WHERE time >= ?1 AND (run_id = ?3 OR ?3 IS NULL) "
                             "ORDER BY time, id LIMIT ?2",
                             "reading decisions", ReadDecisionRow, since, limit, run_id_);
}

Result<std::vector<DecisionRow>> AuditReader::DecisionsAfterId(int64_t after_id, int limit) {
  if (Status s = CheckLimit(limit); !s.ok()) return s.error().WithContext("reading decisions");
  return Select<DecisionRow>(
      *db_,
      "SELECT id, " GPUSCALER_DECISION_COLUMNS
      " FROM decisions WHERE id > ?1 AND (run_id = ?3 OR ?3 IS NULL) ORDER BY id LIMIT ?2",
      "reading decisions", ReadDecisionRow, after_id, limit, run_id_);
}

Result<std::vector<std::pair<int64_t, int64_t>>> AuditReader::DecisionTerms(int64_t after_id, int limit) {
  if (Status s = CheckLimit(limit); !s.ok()) return s.error().WithContext("reading decisions' terms");
  return Select<std::pair<int64_t, int64_t>>(
      *db_,
      schema_version_ >= kLeaderTermVersion
          ? "SELECT id, leader_term FROM decisions WHERE id > ?1 AND (run_id = ?3 OR ?3 IS NULL) ORDER BY id LIMIT ?2"
          : "SELECT id, 0 FROM decisions WHERE id > ?1 AND (run_id = ?3 OR ?3 IS NULL) ORDER BY id LIMIT ?2",
      "reading decisions' terms",
      [](const Query& q) -> Result<std::pair<int64_t, int64_t>> { return std::pair{q.Int(0), q.Int(1)}; }, after_id,
      limit, run_id_);
}

Result<DecisionRow> AuditReader::Decision(int64_t id) {
  Result<Query> q = db_->Prepare("SELECT id, " GPUSCALER_DECISION_COLUMNS " FROM decisions WHERE id = ?1");
  if (!q) return q.error();
  Result<bool> found = q->Bind(1, id).Step("reading a decision");
  if (!found) return found.error();
  if (!*found) return Error::NotFound("decision " + std::to_string(id) + " is not in the audit store");
  return ReadDecisionRow(*q);
}

Result<AuditReader::DecisionPlanRow> AuditReader::DecisionPlan(int64_t id) {
  Result<Query> q = db_->Prepare("SELECT time, plan_json FROM decisions WHERE id = ?1");
  if (!q) return q.error();
  Result<bool> found = q->Bind(1, id).Step("reading a decision's plan");
  if (!found) return found.error();
  if (!*found) return Error::NotFound("decision " + std::to_string(id) + " is not in the audit store");
  return DecisionPlanRow{q->Time(0), q->Text(1)};
}

Result<std::vector<ActionRow>> AuditReader::ActionsForDecision(int64_t decision_id) {
  return Select<ActionRow>(
      *db_, "SELECT " GPUSCALER_ACTION_COLUMNS " FROM actions WHERE decision_id = ?1 ORDER BY id",
      "reading actions", store_internal::ReadActionRow, decision_id);
}

Result<std::vector<ActionRow>> AuditReader::OpenIntents() { return store_internal::QueryOpenIntents(*db_); }

Result<std::vector<NodeRow>> AuditReader::NodesOverlapping(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading nodes"); !s.ok()) return s.error();
  ConsistentRead snapshot(*this);
  if (!snapshot.status().ok()) return snapshot.status().error();
  // A report over most of the store (a year of a year's store) reads whole
  // tables rather than going through the time indexes: SQLite would look up
  // each node's row from the index (it has no statistics to know that the
  // range covers most rows), several times slower. Whether the range covers
  // most nodes is estimated from the span of launch times (index ends only:
  // no scan), and the table's size from its largest rowid (PostgreSQL: its
  // row count, dialect.h).
  Result<Query> span = db_->Prepare(
      "SELECT (SELECT max(rowid) FROM nodes), (SELECT min(launch_time) FROM nodes), "
      "(SELECT max(launch_time) FROM nodes)");
  if (!span) return span.error();
  if (Result<bool> row = span->Step("sizing the nodes table"); !row) return row.error();
  const int64_t table_rows = span->IsNull(0) ? 0 : span->Int(0);
  if (table_rows == 0) return std::vector<NodeRow>{};
  const int64_t first_launch = span->Int(1), last_launch = span->Int(2) + 1;
  const int64_t covered =
      std::min(ToUnixSeconds(to), last_launch) - std::max(ToUnixSeconds(from), first_launch);
  constexpr int64_t kWholeTableShare = 4;  // whole tables when the range may hold >= 1/4 of the nodes
  const bool most_nodes = covered * kWholeTableShare >= last_launch - first_launch;
  // The whole table comes in rowid order, which is about launch order: it
  // is sorted here (SQLite's sorter would spill rows this wide to disk).
  Result<std::vector<NodeRow>> nodes = Select<NodeRow>(
      *db_,
      NodesQuery(most_nodes, ReservationsRecorded()),
      "reading nodes", store_internal::ReadNodeRow, from, to, run_id_);
  if (nodes && most_nodes) {
    auto before = [](const NodeRow& a, const NodeRow& b) {
      if (a.launch.launch_time != b.launch.launch_time) return a.launch.launch_time < b.launch.launch_time;
      return a.launch.instance_id < b.launch.instance_id;
    };
    if (!std::is_sorted(nodes->begin(), nodes->end(), before)) {
      // Sorted by index, then moved once: rows are wide.
      std::vector<size_t> order(nodes->size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return before((*nodes)[a], (*nodes)[b]); });
      std::vector<NodeRow> sorted;
      sorted.reserve(order.size());
      for (size_t i : order) sorted.push_back(std::move((*nodes)[i]));
      *nodes = std::move(sorted);
    }
  }
  if (!nodes || nodes->empty()) return nodes;

  // The prices of the same nodes, in one pass over node_prices (in its key
  // order: by instance, then time). When the nodes read are most of the
  // store's, the whole table is read and the others skipped here: several
  // times cheaper than SQLite joining each price row to its node. A few
  // nodes of a large store are joined in SQL instead.
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i) index.emplace((*nodes)[i].launch.instance_id, i);
  const bool whole_table = static_cast<int64_t>(nodes->size()) * kWholeTableShare >= table_rows;
  Result<Query> p =
      whole_table
          ? db_->Prepare("SELECT instance_id, from_time, usd_per_hour FROM node_prices "
                         "ORDER BY instance_id, from_time")
          : db_->Prepare(
                "SELECT p.instance_id, p.from_time, p.usd_per_hour FROM node_prices p JOIN nodes n USING (instance_id) "
                "WHERE n.launch_time < ?2 AND (n.end_time IS NULL OR n.end_time > ?1) AND (n.run_id = ?3 OR ?3 IS NULL) "
                "ORDER BY p.instance_id, p.from_time");
  if (!p) return p.error();
  if (!whole_table) p->Bind(1, from).Bind(2, to).Bind(3, run_id_);
  // Rows come by instance: look each instance up once.
  std::string last_id;
  size_t last = nodes->size();
  bool last_known = false;
  while (true) {
    Result<bool> more = p->Step("reading node prices");
    if (!more) return more.error();
    if (!*more) break;
    const std::string_view id = p->TextView(0);
    if (last_id.empty() || id != last_id) {
      last_id.assign(id);
      auto it = index.find(last_id);
      last_known = it != index.end();  // else another run's node, or one outside the range
      if (last_known) last = it->second;
    }
    if (!last_known) continue;
    (*nodes)[last].prices.push_back(PriceInterval{.from = p->Time(1), .to = {}, .usd_per_hour = p->Real(2)});
  }
  for (NodeRow& node : *nodes) {
    for (size_t i = 0; i < node.prices.size(); ++i) {
      node.prices[i].to = i + 1 < node.prices.size() ? std::optional<WallTime>(node.prices[i + 1].from)
                                                     : node.end_time;
    }
  }
  return nodes;
}

Result<std::vector<UsageRow>> AuditReader::UsageOverlapping(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading usage"); !s.ok()) return s.error();
  return Select<UsageRow>(
      *db_,
      "SELECT " GPUSCALER_USAGE_COLUMNS
      " FROM usage WHERE end_time > ?1 AND start_time < ?2 AND (run_id = ?3 OR ?3 IS NULL) "
      "ORDER BY start_time, end_time, instance_id, workload_class, team",
      "reading usage",
      [](const Query& r) -> Result<UsageRow> {
        UsageRow row;
        store_internal::ReadFields(r, 0, store_internal::kUsageFields, &row.usage);
        return row;
      },
      from, to, run_id_);
}

Result<std::vector<PriceSample>> AuditReader::PriceSamples(WallTime from, WallTime to) {
  if (Status s = CheckRange(from, to, "reading price samples"); !s.ok()) return s.error();
  return Select<PriceSample>(*db_,
                             "SELECT " GPUSCALER_PRICE_SAMPLE_COLUMNS
                             " FROM price_samples WHERE time >= ?1 "
                             "AND time < ?2 ORDER BY time, instance_type, region, zone, capacity_type",
                             "reading price samples", store_internal::ReadPriceSample, from, to);
}

Status AuditReader::ForEachUsage(WallTime from, WallTime to, const std::function<void(const UsageView&)>& fn,
                                 std::optional<WallTime> end_after, std::optional<WallTime> end_until) {
  if (Status s = CheckRange(from, to, "reading usage"); !s.ok()) return s.error();
  // The text columns are read in place (valid until the next step), with no
  // string copies. The statement holds only the terms this call needs (one
  // cached statement per combination), and the start-time test
  // is made here on the value read anyway: each term SQLite evaluates costs
  // every one of millions of rows a column decode or a comparison.
  const int64_t lower = std::max(ToUnixSeconds(from), end_after ? ToUnixSeconds(*end_after)
                                                                : std::numeric_limits<int64_t>::min());
  const int64_t start_before = ToUnixSeconds(to);
  std::string sql = "SELECT " GPUSCALER_USAGE_COLUMNS " FROM usage WHERE end_time > ?1";
  if (end_until) sql += " AND end_time <= ?2";
  if (run_id_) sql += " AND run_id = ?3";
  Result<Query> q = db_->Prepare(sql.c_str());
  if (!q) return q.error().WithContext("reading usage");
  q->Bind(1, lower);
  if (end_until) q->Bind(2, ToUnixSeconds(*end_until));
  if (run_id_) q->Bind(3, *run_id_);
  UsageView view;
  while (true) {
    Result<bool> more = q->Step("reading usage");
    if (!more) return more.error();
    if (!*more) break;
    const int64_t start = q->Int(3);
    if (start >= start_before) continue;
    view.instance_id = q->TextView(0);
    view.workload_class = q->TextView(1);
    view.team = q->TextView(2);
    view.start = FromUnixSeconds(start);
    view.end = q->Time(4);
    view.gpu_seconds_allocated = q->Real(5);
    view.gpu_seconds_busy = q->IsNull(6) ? std::nullopt : std::optional<double>(q->Real(6));
    fn(view);
  }
  return Status::Ok();
}

Result<std::optional<WallTime>> AuditReader::LastRecordTime() {
  // The aggregate max skips the NULL of an empty table; NULL overall means
  // no records.
  Result<Query> q = db_->Prepare(
      "SELECT max(t) FROM ("
      "SELECT max(time) AS t FROM decisions WHERE run_id = ?1 OR ?1 IS NULL "
      "UNION ALL SELECT max(launch_time) FROM nodes WHERE run_id = ?1 OR ?1 IS NULL "
      "UNION ALL SELECT max(end_time) FROM nodes WHERE run_id = ?1 OR ?1 IS NULL "
      "UNION ALL SELECT max(end_time) FROM usage WHERE run_id = ?1 OR ?1 IS NULL "
      "UNION ALL SELECT max(ended) FROM runs WHERE id = ?1 OR ?1 IS NULL) AS last_times");
  if (!q) return q.error();
  q->Bind(1, run_id_);
  Result<bool> row = q->Step("reading the last record time");
  if (!row) return row.error();
  if (!*row || q->IsNull(0)) return std::optional<WallTime>();
  return std::optional<WallTime>(q->Time(0));
}

AuditReader::ConsistentRead::ConsistentRead(AuditReader& reader) : db_(*reader.db_) {
  if (db_.Autocommit()) {
    status_ = db_.Exec("BEGIN", "starting a read");
    began_ = status_.ok();
  }
}

AuditReader::ConsistentRead::~ConsistentRead() {
  // A read-only transaction: COMMIT only ends the snapshot.
  if (began_) (void)db_.Exec("COMMIT", "ending a read");
}

}  // namespace gpuscaler
