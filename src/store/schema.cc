#include "schema.h"

#include <string>

namespace gpuscaler::store_internal {
namespace {

// The PRAGMA below takes a literal: keep it equal to kApplicationId.
static_assert(kApplicationId == 1735422819);

// Version 1: the whole audit schema. Later versions append migrations here;
// a shipped migration is never edited (what it does; its text may change to
// run on PostgreSQL too, dialect.h renders it there).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version (
  version     INTEGER PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at  INTEGER NOT NULL
);

CREATE TABLE decisions (
  id                                 INTEGER PRIMARY KEY AUTOINCREMENT,
  time                               INTEGER NOT NULL,
  source                             TEXT NOT NULL,
  policy_name                        TEXT NOT NULL,
  policy_hash                        TEXT NOT NULL,
  pending_units                      INTEGER NOT NULL,
  nodes                              INTEGER NOT NULL,
  signals_json                       TEXT NOT NULL,
  snapshot_summary_json              TEXT NOT NULL,
  plan_json                          TEXT NOT NULL,
  summary                            TEXT NOT NULL,
  cost_before_usd_per_hour           REAL NOT NULL,
  cost_after_usd_per_hour            REAL NOT NULL,
  expected_interruption_usd_per_hour REAL NOT NULL,
  scale_down_blocked                 INTEGER NOT NULL CHECK (scale_down_blocked IN (0, 1))
);
CREATE INDEX decisions_by_time ON decisions(time);

CREATE TABLE actions (
  id                       INTEGER PRIMARY KEY AUTOINCREMENT,
  decision_id              INTEGER REFERENCES decisions(id) ON DELETE CASCADE,
  kind                     TEXT NOT NULL CHECK (kind IN ('launch', 'terminate')),
  idempotency_token        TEXT NOT NULL UNIQUE CHECK (idempotency_token <> ''),
  pool                     TEXT NOT NULL,
  instance_type            TEXT NOT NULL,
  region                   TEXT NOT NULL,
  zone                     TEXT NOT NULL,
  capacity_type            TEXT NOT NULL CHECK (capacity_type IN ('on-demand', 'spot')),
  usd_per_hour             REAL NOT NULL,
  on_demand_usd_per_hour   REAL NOT NULL,
  interruptions_per_hour   REAL NOT NULL,
  count                    INTEGER NOT NULL CHECK (count >= 0),
  instance_ids_json        TEXT NOT NULL,
  reason                   TEXT NOT NULL,
  outcome                  TEXT NOT NULL DEFAULT 'pending'
                           CHECK (outcome IN ('pending', 'succeeded', 'partial', 'failed')),
  detail                   TEXT NOT NULL DEFAULT '',
  result_instance_ids_json TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX actions_by_decision ON actions(decision_id);
CREATE INDEX actions_pending ON actions(id) WHERE outcome = 'pending';

CREATE TABLE nodes (
  instance_id            TEXT PRIMARY KEY,
  node_id                TEXT NOT NULL,
  pool                   TEXT NOT NULL,
  instance_type          TEXT NOT NULL,
  region                 TEXT NOT NULL,
  zone                   TEXT NOT NULL,
  capacity_type          TEXT NOT NULL CHECK (capacity_type IN ('on-demand', 'spot')),
  launch_usd_per_hour    REAL NOT NULL,
  on_demand_usd_per_hour REAL NOT NULL,
  interruptions_per_hour REAL NOT NULL,
  gpu_count              INTEGER NOT NULL CHECK (gpu_count >= 0),
  launch_time            INTEGER NOT NULL,
  end_time               INTEGER CHECK (end_time IS NULL OR end_time >= launch_time),
  decision_id            INTEGER REFERENCES decisions(id) ON DELETE SET NULL,
  reason                 TEXT NOT NULL,
  cause                  TEXT
);
CREATE INDEX nodes_by_launch ON nodes(launch_time);
CREATE INDEX nodes_by_end ON nodes(end_time);
CREATE INDEX nodes_by_decision ON nodes(decision_id);

CREATE TABLE node_prices (
  instance_id  TEXT NOT NULL REFERENCES nodes(instance_id) ON DELETE CASCADE,
  from_time    INTEGER NOT NULL,
  usd_per_hour REAL NOT NULL CHECK (usd_per_hour >= 0),
  PRIMARY KEY (instance_id, from_time)
) WITHOUT ROWID;

CREATE TABLE price_samples (
  time                   INTEGER NOT NULL,
  instance_type          TEXT NOT NULL,
  region                 TEXT NOT NULL,
  zone                   TEXT NOT NULL,
  capacity_type          TEXT NOT NULL CHECK (capacity_type IN ('on-demand', 'spot')),
  usd_per_hour           REAL NOT NULL,
  on_demand_usd_per_hour REAL NOT NULL,
  interruptions_per_hour REAL NOT NULL,
  available              INTEGER NOT NULL CHECK (available IN (0, 1)),
  PRIMARY KEY (time, instance_type, region, zone, capacity_type)
) WITHOUT ROWID;

CREATE TABLE usage (
  end_time              INTEGER NOT NULL,
  instance_id           TEXT NOT NULL,
  workload_class        TEXT NOT NULL,
  team                  TEXT NOT NULL,
  start_time            INTEGER NOT NULL,
  gpu_seconds_allocated REAL NOT NULL,
  gpu_seconds_busy      REAL NOT NULL,
  PRIMARY KEY (end_time, instance_id, workload_class, team, start_time),
  CHECK (end_time >= start_time),
  CHECK (gpu_seconds_busy >= 0 AND gpu_seconds_busy <= gpu_seconds_allocated + 1e-6)
) WITHOUT ROWID;
)sql";

// One random id per audit database, made when the database is: with the
// cluster name it keeps idempotency tokens (and so the cloud's ClientTokens)
// of two installations, or of one installation's old and new database, apart.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE installation (
  id TEXT NOT NULL CHECK (length(id) = 12)
);
INSERT INTO installation (id) VALUES (lower(hex(randomblob(6))));
)sql";

// Runs: every daemon lifetime and every simulated replay is a run; its
// decisions, nodes and usage rows name it. Rows written before this version
// go into one run named "legacy" (made only when there are such rows).
// usage.gpu_seconds_busy becomes nullable (NULL: not measured), which SQLite
// allows only by rebuilding the table. monthly_usage keeps the per-month sums
// reports need once retention has pruned the detail rows.
constexpr const char* kSchemaV3 = R"sql(
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL CHECK (name <> ''),
  source      TEXT NOT NULL CHECK (source IN ('daemon', 'sim', 'legacy')),
  policy_hash TEXT NOT NULL,
  started     INTEGER NOT NULL,
  ended       INTEGER CHECK (ended IS NULL OR ended >= started)
);

INSERT INTO runs (name, source, policy_hash, started, ended)
SELECT 'legacy', 'legacy', coalesce((SELECT policy_hash FROM decisions ORDER BY id DESC LIMIT 1), ''), lo, hi
FROM (SELECT min(t) AS lo, max(t) AS hi
      FROM (SELECT time AS t FROM decisions
            UNION ALL SELECT launch_time FROM nodes
            UNION ALL SELECT end_time FROM nodes
            UNION ALL SELECT start_time FROM usage
            UNION ALL SELECT end_time FROM usage) AS recorded_times) AS bounds
WHERE lo IS NOT NULL;

ALTER TABLE decisions ADD COLUMN run_id INTEGER REFERENCES runs(id);
ALTER TABLE nodes ADD COLUMN run_id INTEGER REFERENCES runs(id);
UPDATE decisions SET run_id = (SELECT id FROM runs WHERE source = 'legacy');
UPDATE nodes SET run_id = (SELECT id FROM runs WHERE source = 'legacy');
CREATE INDEX decisions_by_run ON decisions(run_id, time);
CREATE INDEX nodes_by_run ON nodes(run_id, launch_time);

CREATE TABLE usage_v3 (
  end_time              INTEGER NOT NULL,
  instance_id           TEXT NOT NULL,
  workload_class        TEXT NOT NULL,
  team                  TEXT NOT NULL,
  start_time            INTEGER NOT NULL,
  gpu_seconds_allocated REAL NOT NULL,
  gpu_seconds_busy      REAL,
  run_id                INTEGER REFERENCES runs(id),
  PRIMARY KEY (end_time, instance_id, workload_class, team, start_time),
  CHECK (end_time >= start_time),
  CHECK (gpu_seconds_busy IS NULL OR (gpu_seconds_busy >= 0 AND gpu_seconds_busy <= gpu_seconds_allocated + 1e-6))
) WITHOUT ROWID;
INSERT INTO usage_v3 SELECT end_time, instance_id, workload_class, team, start_time, gpu_seconds_allocated,
                            gpu_seconds_busy, (SELECT id FROM runs WHERE source = 'legacy')
                     FROM usage;
DROP TABLE usage;
ALTER TABLE usage_v3 RENAME TO usage;
CREATE INDEX usage_by_run ON usage(run_id, end_time);

CREATE TABLE monthly_usage (
  run_id                    INTEGER NOT NULL REFERENCES runs(id),
  month_start               INTEGER NOT NULL,
  workload_class            TEXT NOT NULL,
  team                      TEXT NOT NULL,
  pool                      TEXT NOT NULL,
  capacity_type             TEXT NOT NULL,
  cost_usd                  REAL NOT NULL,
  idle_usd                  REAL NOT NULL,
  on_demand_usd             REAL NOT NULL,
  gpu_seconds_paid          REAL NOT NULL,
  gpu_seconds_allocated     REAL NOT NULL,
  gpu_seconds_busy          REAL NOT NULL,
  gpu_seconds_busy_measured REAL NOT NULL,
  PRIMARY KEY (run_id, month_start, workload_class, team, pool, capacity_type)
) WITHOUT ROWID;
-- Months before rolled_up_before are in monthly_usage: retention prunes
-- detail rows only before it, and reports read those months from the rollup.
CREATE TABLE rollup_state (
  id               INTEGER PRIMARY KEY CHECK (id = 1),
  rolled_up_before INTEGER NOT NULL
);
)sql";

// Decision inputs (audit-replay): what the planner saw, so that
// `gpuscaler explain --db --decision` replays a decision. Only its own
// tables: it applies on top of any other migration.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE policies (
  hash        TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  policy_json TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE decision_inputs (
  decision_id       INTEGER PRIMARY KEY REFERENCES decisions(id) ON DELETE CASCADE,
  snapshot_codec    TEXT NOT NULL CHECK (snapshot_codec IN ('zstd')),
  snapshot_bytes    INTEGER NOT NULL CHECK (snapshot_bytes >= 0),
  snapshot          BLOB NOT NULL,
  policy_hash       TEXT NOT NULL REFERENCES policies(hash),
  planner_plan_json TEXT
);
)sql";

// No query reads usage by run: reports scan a time range by the primary key
// and filter the run as they go. The index was a third of a year-old file
// and one more B-tree written per usage row, and its pages, interleaved with
// the table's, slowed every scan of usage.
constexpr const char* kSchemaV5 = R"sql(
DROP INDEX IF EXISTS usage_by_run;
)sql";

// What reports need to say where a run's money went and what its
// interruptions cost: the cloud a run bought from and the tags its instances
// carry (FOCUS ProviderName and Tags), and the work each interruption lost,
// per class and team, as the run measured it. Additions only: a reader of
// version 5 reads a version-5 file as before, and reads these as not
// recorded (AuditReader checks the version).
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE runs ADD COLUMN cloud TEXT;
ALTER TABLE runs ADD COLUMN instance_tags_json TEXT;
ALTER TABLE runs ADD COLUMN pool_tags_json TEXT;

CREATE TABLE lost_work (
  instance_id    TEXT NOT NULL,
  time           INTEGER NOT NULL,
  workload_class TEXT NOT NULL,
  team           TEXT NOT NULL,
  gpu_seconds    REAL NOT NULL CHECK (gpu_seconds >= 0),
  run_id         INTEGER REFERENCES runs(id),
  PRIMARY KEY (instance_id, time, workload_class, team)
) WITHOUT ROWID;
CREATE INDEX lost_work_by_time ON lost_work(time);
)sql";

// Reserved capacity: the reservations each run saw (one row per version of
// a reservation: a change of its count, end or price starts a new row and
// ends the previous one), the pools that select each, and the reservation a
// node was launched into (NULL: none). Additions only: a reader of version
// 6 reads a version-6 file as before, and reads these as not recorded
// (AuditReader checks the version).
constexpr const char* kSchemaV7 = R"sql(
ALTER TABLE nodes ADD COLUMN reservation_id TEXT;

CREATE TABLE reservations (
  run_id        INTEGER NOT NULL REFERENCES runs(id),
  id            TEXT NOT NULL CHECK (id <> ''),
  first_seen    INTEGER NOT NULL,
  last_seen     INTEGER CHECK (last_seen IS NULL OR last_seen >= first_seen),
  instance_type TEXT NOT NULL,
  region        TEXT NOT NULL,
  zone          TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('default', 'capacity-block')),
  total_count   INTEGER NOT NULL CHECK (total_count >= 0),
  start_time    INTEGER NOT NULL,
  end_time      INTEGER CHECK (end_time IS NULL OR end_time >= start_time),
  usd_per_hour  REAL NOT NULL CHECK (usd_per_hour >= 0),
  upfront_usd   REAL NOT NULL CHECK (upfront_usd >= 0),
  tags_json     TEXT NOT NULL,
  pools_json    TEXT NOT NULL,
  PRIMARY KEY (run_id, id, first_seen)
) WITHOUT ROWID;
)sql";

// Leadership fencing (SqliteAuditStore::ClaimLeadership): each cluster's
// current leadership term, and the term each decision was made under (0:
// no claim, one replica). Additions only.
constexpr const char* kSchemaV8 = R"sql(
ALTER TABLE decisions ADD COLUMN leader_term INTEGER NOT NULL DEFAULT 0;

CREATE TABLE leadership (
  cluster  TEXT PRIMARY KEY CHECK (cluster <> ''),
  term     INTEGER NOT NULL CHECK (term > 0),
  holder   TEXT NOT NULL,
  since    INTEGER NOT NULL
);
)sql";

// What a controller has learned that no history in the store rebuilds (the
// warm-up per instance family, capacity-error and reclaim marks, spot
// pauses, the lost-work and spot-floor accounts): one JSON document per
// cluster, replaced as it changes, read back by the next leader or a
// restart. Additions only.
constexpr const char* kSchemaV9 = R"sql(
CREATE TABLE learned_state (
  cluster     TEXT PRIMARY KEY CHECK (cluster <> ''),
  updated_at  INTEGER NOT NULL,
  state_json  TEXT NOT NULL
);
)sql";

constexpr Migration kMigrations[] = {
    {1, "audit schema: decisions, actions, nodes, node_prices, price_samples, usage", kSchemaV1},
    {2, "installation: a random id per audit database", kSchemaV2},
    {3, "runs; run_id on decisions, nodes and usage; usage busy time nullable (not measured); monthly_usage", kSchemaV3},
    {4, "decision inputs: the planner's snapshot per decision, policies by hash", kSchemaV4},
    {5, "usage: no index by run", kSchemaV5, /*older_readable=*/true},
    {6, "runs: cloud and instance tags; lost_work per interruption", kSchemaV6, /*older_readable=*/true},
    {7, "reservations per run; nodes.reservation_id", kSchemaV7, /*older_readable=*/true},
    {8, "leadership terms per cluster; decisions.leader_term", kSchemaV8, /*older_readable=*/true},
    {9, "learned state per cluster", kSchemaV9, /*older_readable=*/true},
};

Result<int64_t> ScalarInt(Connection& db, const char* sql, std::string_view what) {
  Result<Query> q = db.Prepare(sql);
  if (!q) return q.error();
  Result<bool> row = q->Step(what);
  if (!row) return row.error();
  if (!*row || q->IsNull(0)) return int64_t{0};
  return q->Int(0);
}

// 1 when the database has the schema_version table, else 0. PostgreSQL:
// in the session's schema (the first of its search_path).
Result<int64_t> HasVersionTable(Connection& db) {
  if (db.dialect() == Dialect::kPostgres) {
    return ScalarInt(db,
                     "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() "
                     "AND table_name = 'schema_version'",
                     "looking for the schema_version table");
  }
  return ScalarInt(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
                   "looking for the schema_version table");
}

// How many tables and other objects the database holds.
Result<int64_t> CountObjects(Connection& db) {
  if (db.dialect() == Dialect::kPostgres) {
    return ScalarInt(db, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
                     "listing tables");
  }
  return ScalarInt(db, "SELECT count(*) FROM sqlite_master", "listing tables");
}

std::string NotOurs(const std::string& why) {
  return "not a gpuscaler audit database (" + why + "); point --db at an audit file or a new path";
}

}  // namespace

std::span<const Migration> AuditMigrations() { return kMigrations; }

int OldestReadableSchemaVersion() {
  std::span<const Migration> all = AuditMigrations();
  size_t i = all.size() - 1;
  while (i > 0 && all[i].older_readable) --i;
  return all[i].version;
}

Result<std::optional<std::string>> WhyNotAnAuditDatabase(Connection& db) {
  // A PostgreSQL database has no application id: the schema_version table
  // alone tells.
  Result<int64_t> app_id = db.dialect() == Dialect::kPostgres
                               ? Result<int64_t>(int64_t{kApplicationId})
                               : ScalarInt(db, "PRAGMA application_id", "reading the application id");
  if (!app_id) return app_id.error();
  Result<int64_t> has_version_table = HasVersionTable(db);
  if (!has_version_table) return has_version_table.error();
  if (*has_version_table == 0) {
    Result<int64_t> objects = CountObjects(db);
    if (!objects) return objects.error();
    if (*objects != 0) return std::optional<std::string>("it has tables but no schema_version table");
  }
  // An empty database may carry our id already (set before the first
  // migration) or none.
  if (*app_id != kApplicationId && (*has_version_table != 0 || *app_id != 0))
    return std::optional<std::string>("application_id " + std::to_string(*app_id));
  return std::optional<std::string>();
}

Result<int> ReadSchemaVersion(Connection& db) {
  Result<std::optional<std::string>> foreign = WhyNotAnAuditDatabase(db);
  if (!foreign) return foreign.error();
  if (*foreign) return Error::Config(NotOurs(**foreign));
  Result<int64_t> has_version_table = HasVersionTable(db);
  if (!has_version_table) return has_version_table.error();
  if (*has_version_table == 0) return 0;
  Result<int64_t> version = ScalarInt(db, "SELECT max(version) FROM schema_version", "reading the schema version");
  if (!version) return version.error();
  return static_cast<int>(*version);
}

Status Migrate(Connection& db, std::span<const Migration> migrations) {
  assert(!migrations.empty());
  const int known = migrations.back().version;
  Result<int> on_disk = ReadSchemaVersion(db);
  if (!on_disk) return on_disk.error();
  if (*on_disk > known) {
    return Error::Config("audit database schema version " + std::to_string(*on_disk) +
                         " is newer than this binary's " + std::to_string(known) +
                         ": it was written by a newer gpuscaler; refusing to downgrade it");
  }
  for (const Migration& m : migrations) {
    if (m.version <= *on_disk) continue;
    if (Status s = db.Exec("BEGIN IMMEDIATE", "starting a schema migration"); !s.ok()) return s;
    Status s;
    if (db.dialect() == Dialect::kPostgres) {
      // PostgreSQL takes no write lock at BEGIN: two replicas opening one
      // database migrate one after the other.
      s = db.Exec("SELECT pg_advisory_xact_lock(1735422819)", "waiting for another process's schema migration");
    }
    // Another process may have migrated between our read and our lock.
    Result<int> now = s.ok() ? ReadSchemaVersion(db) : Result<int>(s.error());
    if (s.ok()) s = now.status();
    if (s.ok() && *now < m.version) {
      s = db.Exec(m.sql, "applying schema migration " + std::to_string(m.version));
      if (s.ok()) {
        s = db.Run(
            "INSERT INTO schema_version (version, description, applied_at) "
            "VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER))",
            "recording the schema version", m.version, m.description);
      }
      if (s.ok() && db.dialect() == Dialect::kSqlite) {
        s = db.Exec("PRAGMA application_id = 1735422819", "setting the application id");
      }
    }
    if (s.ok()) s = db.Exec("COMMIT", "committing a schema migration");
    if (!s.ok()) {
      if (!db.Autocommit()) (void)db.Exec("ROLLBACK", "rolling back a schema migration");
      return s.error().WithContext("migrating the audit schema to version " + std::to_string(m.version));
    }
  }
  return Status::Ok();
}

}  // namespace gpuscaler::store_internal
