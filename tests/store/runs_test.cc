// Runs: every replay and every daemon lifetime is a run; decisions, nodes and
// usage rows name theirs, and readers can keep to one. Files written before
// runs existed get one "legacy" run holding their rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "src/store/schema.h"
#include "src/store/sqlite_db.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler {
namespace {

using store_internal::AuditMigrations;
using store_internal::Connection;
using store_internal::Migrate;
using store_internal::Query;
using testing_store::FullDecision;
using testing_store::NodeLaunch;
using testing_store::T;

class Runs : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Runs, testing_store::AllBackends(), testing_store::BackendName);

UsageRecord Usage(const std::string& instance_id, int64_t start, int64_t end, std::optional<double> busy) {
  UsageRecord u;
  u.instance_id = instance_id;
  u.workload_class = "render";
  u.start = T(start);
  u.end = T(end);
  u.gpu_seconds_allocated = static_cast<double>(end - start);
  u.gpu_seconds_busy = busy;
  return u;
}

// Writes one run: a decision, a node and a usage row at `t`.
void WriteRun(SqliteAuditStore& store, const std::string& name, const std::string& instance_id, int64_t t) {
  ASSERT_TRUE(store.BeginRun({name, "sim", "hash-" + name, T(t)}).ok());
  Result<int64_t> d = store.RecordDecision(FullDecision(t));
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  ASSERT_TRUE(store.RecordNodeLaunch(NodeLaunch(instance_id, *d, t)).ok());
  ASSERT_TRUE(store.RecordUsage({Usage(instance_id, t, t + 600, std::nullopt)}).ok());
  ASSERT_TRUE(store.EndRun(T(t + 600)).ok());
}

TEST_P(Runs, EachRunKeepsItsOwnDecisionsNodesAndUsage) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  WriteRun(*store, "on-demand", "i-od", 1'800'000'000);
  WriteRun(*store, "gpuscaler", "i-gs", 1'800'000'000);
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();

  Result<std::vector<RunRow>> runs = reader->Runs();
  ASSERT_TRUE(runs.ok()) << runs.error().ToString();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].run.name, "on-demand");
  EXPECT_EQ((*runs)[1].run.name, "gpuscaler");
  EXPECT_EQ((*runs)[1].run.source, "sim");
  EXPECT_EQ((*runs)[1].run.policy_hash, "hash-gpuscaler");
  EXPECT_EQ((*runs)[1].run.started, T(1'800'000'000));
  EXPECT_EQ((*runs)[1].ended, T(1'800'000'600));

  for (const RunRow& run : *runs) {
    SCOPED_TRACE(run.run.name);
    reader->SelectRun(run.id);
    const std::string want = run.run.name == "gpuscaler" ? "i-gs" : "i-od";
    Result<std::vector<NodeRow>> nodes = reader->NodesOverlapping(T(0), T(2'000'000'000));
    ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
    ASSERT_EQ(nodes->size(), 1u);
    EXPECT_EQ((*nodes)[0].launch.instance_id, want);
    Result<std::vector<UsageRow>> usage = reader->UsageOverlapping(T(0), T(2'000'000'000));
    ASSERT_TRUE(usage.ok());
    ASSERT_EQ(usage->size(), 1u);
    EXPECT_EQ((*usage)[0].usage.instance_id, want);
    int streamed = 0;
    ASSERT_TRUE(reader->ForEachUsage(T(0), T(2'000'000'000), [&](const UsageView& u) {
      ++streamed;
      EXPECT_EQ(u.instance_id, want);
    }).ok());
    EXPECT_EQ(streamed, 1);
    Result<std::vector<DecisionRow>> decisions = reader->DecisionsSince(T(0), 10);
    ASSERT_TRUE(decisions.ok());
    EXPECT_EQ(decisions->size(), 1u);
  }
  reader->SelectRun(std::nullopt);
  EXPECT_EQ(std::move(reader->NodesOverlapping(T(0), T(2'000'000'000))).value().size(), 2u);
}

// The streamed scan is the same row set as UsageOverlapping (end > from and
// start < to), for every run selection and split of the end times, on rows
// whose ends and starts sit exactly on the bounds.
TEST_P(Runs, ForEachUsageStreamsTheRowsOfUsageOverlappingAtEveryBound) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  const int64_t t0 = 1'800'000'000;
  std::vector<int64_t> run_ids;
  for (const char* name : {"a", "b"}) {
    ASSERT_TRUE(store->BeginRun({name, "sim", std::string("hash-") + name, T(t0)}).ok());
    const std::string id = std::string("i-") + name;
    ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch(id, 0, t0)).ok());
    std::vector<UsageRecord> rows;
    // Contiguous 100 s rows from t0 to t0 + 1000, and one that starts and
    // ends at t0 + 500.
    for (int64_t s = t0; s < t0 + 1000; s += 100) rows.push_back(Usage(id, s, s + 100, 10.0));
    rows.push_back(Usage(id, t0 + 500, t0 + 500, std::nullopt));
    ASSERT_TRUE(store->RecordUsage(rows).ok());
    ASSERT_TRUE(store->EndRun(T(t0 + 1000)).ok());
  }
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  std::vector<RunRow> runs = std::move(reader->Runs()).value();
  ASSERT_EQ(runs.size(), 2u);
  using Key = std::tuple<std::string, int64_t, int64_t>;
  for (std::optional<int64_t> run : {std::optional<int64_t>(), std::optional<int64_t>(runs[1].id)}) {
    reader->SelectRun(run);
    for (int64_t from : {t0 - 1, t0 + 100, t0 + 500, t0 + 550}) {
      for (int64_t to : {t0 + 500, t0 + 501, t0 + 900, t0 + 2000}) {
        if (to <= from) continue;
        SCOPED_TRACE(::testing::Message() << "run " << run.value_or(-1) << " from +" << from - t0 << " to +" << to - t0);
        Result<std::vector<UsageRow>> overlapping = reader->UsageOverlapping(T(from), T(to));
        ASSERT_TRUE(overlapping.ok());
        std::vector<Key> want;
        for (const UsageRow& r : *overlapping) {
          want.emplace_back(r.usage.instance_id, ToUnixSeconds(r.usage.start), ToUnixSeconds(r.usage.end));
        }
        std::sort(want.begin(), want.end());
        auto streamed = [&](std::optional<WallTime> end_after, std::optional<WallTime> end_until) {
          std::vector<Key> got;
          Status s = reader->ForEachUsage(
              T(from), T(to),
              [&](const UsageView& u) {
                got.emplace_back(std::string(u.instance_id), ToUnixSeconds(u.start), ToUnixSeconds(u.end));
              },
              end_after, end_until);
          EXPECT_TRUE(s.ok());
          return got;
        };
        std::vector<Key> whole = streamed(std::nullopt, std::nullopt);
        std::sort(whole.begin(), whole.end());
        EXPECT_EQ(whole, want);
        // Split at an end time: the halves are disjoint and make the whole.
        std::vector<Key> halves = streamed(std::nullopt, T(t0 + 500));
        std::vector<Key> later = streamed(T(t0 + 500), std::nullopt);
        halves.insert(halves.end(), later.begin(), later.end());
        std::sort(halves.begin(), halves.end());
        EXPECT_EQ(halves, want);
      }
    }
  }
}

TEST_P(Runs, BusyTimeNotMeasuredIsStoredAsNullNotAsAllocated) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-1", 0, 1'800'000'000)).ok());
  ASSERT_TRUE(store
                  ->RecordUsage({Usage("i-1", 1'800'000'000, 1'800'000'100, std::nullopt),
                                 Usage("i-1", 1'800'000'100, 1'800'000'200, 25.0)})
                  .ok());
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  std::vector<UsageRow> rows = std::move(reader->UsageOverlapping(T(0), T(2'000'000'000))).value();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[0].usage.gpu_seconds_busy.has_value());
  ASSERT_TRUE(rows[1].usage.gpu_seconds_busy.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].usage.gpu_seconds_busy, 25.0);
  // busy above allocated is refused, measured or not.
  Status bad = store->RecordUsage({Usage("i-1", 1'800'000'200, 1'800'000'300, 101.0)});
  EXPECT_EQ(bad.error().category(), ErrorCategory::kInvalidInput);
}

TEST_P(Runs, RowsRecordedBeforeAnyRunGetAnUnnamedRun) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  ASSERT_TRUE(store->RecordDecision(FullDecision(1'800'000'000)).ok());
  ASSERT_TRUE(store->run_id().has_value());
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  std::vector<RunRow> runs = std::move(reader->Runs()).value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.name, "unnamed");
  EXPECT_EQ(runs[0].run.started, T(1'800'000'000));
  reader->SelectRun(runs[0].id);
  EXPECT_EQ(std::move(reader->DecisionsSince(T(0), 10)).value().size(), 1u);
}

TEST_P(Runs, BeginRunRejectsAnEmptyNameAndAnUnknownSource) {
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(Db(":memory:"))).value();
  EXPECT_EQ(store->BeginRun({"", "sim", "", T(0)}).error().category(), ErrorCategory::kInvalidInput);
  Result<int64_t> bad = store->BeginRun({"x", "batch", "", T(0)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("source 'batch'"), std::string::npos) << bad.error().message();
}

int64_t Scalar(Connection& db, const char* sql) {
  Result<Query> q = db.Prepare(sql);
  EXPECT_TRUE(q.ok());
  EXPECT_TRUE(q->Step("scalar").value());
  return q->Int(0);
}

// A version-2 file (written before runs) is migrated: its rows go into one
// run named "legacy" spanning them, and a version-3 binary reads them.
TEST_P(Runs, AVersionTwoFileGetsALegacyRunHoldingItsRows) {
  const std::string path = Db("v2.db");
  {
    std::shared_ptr<Connection> db = Connect("v2.db");
    ASSERT_TRUE(Migrate(*db, AuditMigrations().first(2)).ok());
    ASSERT_TRUE(db->Exec("INSERT INTO decisions (time, source, policy_name, policy_hash, pending_units, nodes, "
                         "signals_json, snapshot_summary_json, plan_json, summary, cost_before_usd_per_hour, "
                         "cost_after_usd_per_hour, expected_interruption_usd_per_hour, scale_down_blocked) "
                         "VALUES (1800000000, 'daemon', 'p', 'h-old', 0, 0, '{}', '{}', '{}', 's', 0, 0, 0, 0)",
                         "decision")
                    .ok());
    ASSERT_TRUE(db->Exec("INSERT INTO nodes (instance_id, node_id, pool, instance_type, region, zone, capacity_type, "
                         "launch_usd_per_hour, on_demand_usd_per_hour, interruptions_per_hour, gpu_count, "
                         "launch_time, end_time, decision_id, reason, cause) VALUES ('i-old', 'n', 'gpu', "
                         "'g5.xlarge', 'us-east-1', 'us-east-1a', 'spot', 0.4, 1.0, 0, 1, 1800000000, 1800007200, "
                         "1, 'r', 'terminated')",
                         "node")
                    .ok());
    ASSERT_TRUE(db->Exec("INSERT INTO usage (end_time, instance_id, workload_class, team, start_time, "
                         "gpu_seconds_allocated, gpu_seconds_busy) VALUES (1800003600, 'i-old', 'c', '', "
                         "1800000000, 3600, 1800)",
                         "usage")
                    .ok());
  }
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  std::vector<RunRow> runs = std::move(reader->Runs()).value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.name, "legacy");
  EXPECT_EQ(runs[0].run.source, "legacy");
  EXPECT_EQ(runs[0].run.policy_hash, "h-old");
  EXPECT_EQ(runs[0].run.started, T(1'800'000'000));
  EXPECT_EQ(runs[0].ended, T(1'800'007'200));
  reader->SelectRun(runs[0].id);
  EXPECT_EQ(std::move(reader->NodesOverlapping(T(0), T(2'000'000'000))).value().size(), 1u);
  std::vector<UsageRow> usage = std::move(reader->UsageOverlapping(T(0), T(2'000'000'000))).value();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].usage.gpu_seconds_busy, std::optional<double>(1800));
  EXPECT_EQ(std::move(reader->DecisionsSince(T(0), 10)).value().size(), 1u);
  EXPECT_EQ(std::move(store->IntegrityCheck()).value(), "ok");
}

TEST_P(Runs, AnEmptyVersionTwoFileGetsNoLegacyRun) {
  const std::string path = Db("v2-empty.db");
  {
    std::shared_ptr<Connection> db = Connect("v2-empty.db");
    ASSERT_TRUE(Migrate(*db, AuditMigrations().first(2)).ok());
    EXPECT_EQ(Scalar(*db, "SELECT count(*) FROM decisions"), 0);
  }
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
  std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
  EXPECT_TRUE(std::move(reader->Runs()).value().empty());
}

// A migration that only changes an index (5: usage_by_run dropped) leaves
// what readers read alone, and one that only adds what readers check the
// version for (6: run clouds, lost work) is read as not recorded: a reader
// opens a file behind such migrations, so the report binary can be upgraded
// before the daemons. A file behind a migration that changes tables is
// refused with the way to migrate it.
TEST_P(Runs, AReaderOpensAFileBehindOnlyByAnIndexAndRefusesOlderOnes) {
  auto file_at = [&](const std::string& name, size_t migrations) {
    const std::string path = Db(name);
    std::shared_ptr<Connection> db = Connect(name);
    EXPECT_TRUE(Migrate(*db, AuditMigrations().first(migrations)).ok());
    return path;
  };
  // Whether the usage_by_run index exists.
  auto usage_by_run = [&](const std::string& name) {
    std::shared_ptr<Connection> db = Connect(name);
    return Scalar(*db, postgres() ? "SELECT count(*) FROM pg_indexes WHERE indexname = 'usage_by_run'"
                                  : "SELECT count(*) FROM sqlite_master WHERE name = 'usage_by_run'");
  };
  const std::string v4 = file_at("v4.db", 4);
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(v4);
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  EXPECT_EQ((*reader)->SchemaVersion(), 4);
  EXPECT_TRUE(std::move((*reader)->Runs()).value().empty());
  reader->reset();
  EXPECT_EQ(usage_by_run("v4.db"), 1);
  ASSERT_TRUE(SqliteAuditStore::Open(v4).ok());
  EXPECT_EQ(usage_by_run("v4.db"), 0);
  EXPECT_EQ(Scalar(*Connect("v4.db"), "SELECT max(version) FROM schema_version"),
            SqliteAuditStore::CurrentSchemaVersion());

  Result<std::unique_ptr<AuditReader>> old = AuditReader::Open(file_at("v3.db", 3));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(old.error().message().find("schema version 3 is older"), std::string::npos) << old.error().ToString();
  EXPECT_NE(old.error().message().find("migrate it"), std::string::npos) << old.error().ToString();
}

}  // namespace
}  // namespace gpuscaler
