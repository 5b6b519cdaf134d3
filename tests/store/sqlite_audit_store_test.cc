#include "gpuscaler/store/sqlite_audit_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/database_url.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler {
namespace {

using testing_store::FullDecision;
using testing_store::LaunchAction;
using testing_store::NodeLaunch;
using testing_store::SpotOffering;
using testing_store::T;
using testing_store::TempDir;

std::unique_ptr<SqliteAuditStore> OpenStore(const std::string& path, SqliteAuditStoreOptions options = {}) {
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

std::unique_ptr<AuditReader> OpenReader(const std::string& path, AuditReaderOptions options = {}) {
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.error().ToString();
  return reader.ok() ? std::move(*reader) : nullptr;
}

// Runs one statement on a separate raw connection (to tamper with a file or
// database as another program would) and returns the first column of the
// first row.
std::string RawQuery(const std::string& path, const char* sql) {
  if (IsPostgresUrl(path)) {
    Result<std::shared_ptr<store_internal::PostgresConnection>> db =
        store_internal::PostgresConnection::Connect({.url = path});
    if (!db) {
      ADD_FAILURE() << db.error().ToString();
      return "";
    }
    Result<store_internal::Query> q = (*db)->Prepare(sql);
    Result<bool> row = q ? q->Step("raw query") : Result<bool>(q.error());
    if (!row) {
      ADD_FAILURE() << row.error().ToString();
      return "";
    }
    return *row ? q->Text(0) : "";
  }
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    } else if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
      ADD_FAILURE() << sqlite3_errmsg(db);
    }
  } else {
    ADD_FAILURE() << sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

class Store : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Store, testing_store::AllBackends(), testing_store::BackendName);
class Reader : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, Reader, testing_store::AllBackends(), testing_store::BackendName);

void ExpectSameOffering(const Offering& got, const Offering& want) {
  EXPECT_EQ(got.instance_type, want.instance_type);
  EXPECT_EQ(got.region, want.region);
  EXPECT_EQ(got.zone, want.zone);
  EXPECT_EQ(got.capacity_type, want.capacity_type);
  EXPECT_DOUBLE_EQ(got.usd_per_hour, want.usd_per_hour);
  EXPECT_DOUBLE_EQ(got.on_demand_usd_per_hour, want.on_demand_usd_per_hour);
  EXPECT_DOUBLE_EQ(got.interruptions_per_hour, want.interruptions_per_hour);
}

TEST_P(Store, RoundTripsEveryRecordType) {
  const std::string path = Db("audit.db");
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);

  ASSERT_TRUE(store->BeginTick().ok());
  const DecisionRecord decision = FullDecision(1'800'000'000);
  Result<int64_t> decision_id = store->RecordDecision(decision);
  ASSERT_TRUE(decision_id.ok()) << decision_id.error().ToString();

  ActionRecord launch = LaunchAction(*decision_id, "d1-launch-0");
  ActionRecord terminate = LaunchAction(*decision_id, "d1-terminate-0");
  terminate.kind = ActionKind::kTerminate;
  terminate.offering.capacity_type = CapacityType::kOnDemand;
  terminate.count = 1;
  terminate.instance_ids = {"i-old1"};
  Result<std::vector<int64_t>> action_ids = store->RecordActionIntents({launch, terminate});
  ASSERT_TRUE(action_ids.ok()) << action_ids.error().ToString();
  ASSERT_EQ(action_ids->size(), 2u);
  ASSERT_TRUE(store->RecordActionOutcome((*action_ids)[0], ActionOutcome::kPartial, "1 of 2: capacity",
                                         {"i-new1"})
                  .ok());

  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-new1", *decision_id, 1'800'000'100)).ok());
  ASSERT_TRUE(store->RecordNodePrice("i-new1", T(1'800'003'700), 2.5).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-new1", T(1'800'007'300), "interrupted"}).ok());

  PriceSample sample{T(1'800'000'050), SpotOffering()};
  sample.offering.available = false;
  ASSERT_TRUE(store->RecordPriceSamples({sample}).ok());
  UsageRecord usage{"i-new1", "render", "vfx", T(1'800'000'100), T(1'800'000'160), 240.0, 180.5};
  ASSERT_TRUE(store->RecordUsage({usage}).ok());
  ASSERT_TRUE(store->CommitTick().ok());

  auto reader = OpenReader(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->SchemaVersion(), SqliteAuditStore::CurrentSchemaVersion());

  Result<std::vector<DecisionRow>> decisions = reader->DecisionsSince(T(0), 10);
  ASSERT_TRUE(decisions.ok()) << decisions.error().ToString();
  ASSERT_EQ(decisions->size(), 1u);
  const DecisionRecord& d = (*decisions)[0].decision;
  EXPECT_EQ((*decisions)[0].id, *decision_id);
  EXPECT_EQ(d.time, decision.time);
  EXPECT_EQ(d.source, decision.source);
  EXPECT_EQ(d.policy_name, decision.policy_name);
  EXPECT_EQ(d.policy_hash, decision.policy_hash);
  EXPECT_EQ(d.pending_units, decision.pending_units);
  EXPECT_EQ(d.nodes, decision.nodes);
  EXPECT_EQ(d.signals_json, decision.signals_json);
  EXPECT_EQ(d.snapshot_summary_json, decision.snapshot_summary_json);
  EXPECT_EQ(d.plan_json, decision.plan_json);
  EXPECT_EQ(d.summary, decision.summary);
  EXPECT_DOUBLE_EQ(d.cost_before_usd_per_hour, decision.cost_before_usd_per_hour);
  EXPECT_DOUBLE_EQ(d.cost_after_usd_per_hour, decision.cost_after_usd_per_hour);
  EXPECT_DOUBLE_EQ(d.expected_interruption_usd_per_hour, decision.expected_interruption_usd_per_hour);
  EXPECT_TRUE(d.scale_down_blocked);
  Result<DecisionRow> by_id = reader->Decision(*decision_id);
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id->decision.summary, decision.summary);

  Result<std::vector<ActionRow>> actions = reader->ActionsForDecision(*decision_id);
  ASSERT_TRUE(actions.ok()) << actions.error().ToString();
  ASSERT_EQ(actions->size(), 2u);
  const ActionRow& a0 = (*actions)[0];
  EXPECT_EQ(a0.id, (*action_ids)[0]);
  EXPECT_EQ(a0.action.decision_id, *decision_id);
  EXPECT_EQ(a0.action.kind, ActionKind::kLaunch);
  EXPECT_EQ(a0.action.idempotency_token, "d1-launch-0");
  EXPECT_EQ(a0.action.pool, "render");
  ExpectSameOffering(a0.action.offering, launch.offering);
  EXPECT_EQ(a0.action.count, 2);
  EXPECT_TRUE(a0.action.instance_ids.empty());
  EXPECT_EQ(a0.action.reason, launch.reason);
  EXPECT_EQ(a0.outcome, ActionOutcome::kPartial);
  EXPECT_EQ(a0.detail, "1 of 2: capacity");
  EXPECT_EQ(a0.result_instance_ids, std::vector<std::string>{"i-new1"});
  const ActionRow& a1 = (*actions)[1];
  EXPECT_EQ(a1.action.kind, ActionKind::kTerminate);
  EXPECT_EQ(a1.action.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(a1.action.instance_ids, std::vector<std::string>{"i-old1"});
  EXPECT_EQ(a1.outcome, ActionOutcome::kPending);

  Result<std::vector<ActionRow>> open = reader->OpenIntents();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].action.idempotency_token, "d1-terminate-0");

  Result<std::vector<NodeRow>> nodes = reader->NodesOverlapping(T(1'800'000'000), T(1'800'010'000));
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 1u);
  const NodeRow& n = (*nodes)[0];
  EXPECT_EQ(n.launch.instance_id, "i-new1");
  EXPECT_EQ(n.launch.node_id, "ip-10-0-1-i-new1");
  EXPECT_EQ(n.launch.pool, "render");
  ExpectSameOffering(n.launch.offering, SpotOffering());
  EXPECT_EQ(n.launch.gpu_count, 4);
  EXPECT_EQ(n.launch.launch_time, T(1'800'000'100));
  EXPECT_EQ(n.launch.decision_id, *decision_id);
  EXPECT_EQ(n.launch.reason, "queue render");
  EXPECT_EQ(n.end_time, T(1'800'007'300));
  EXPECT_EQ(n.cause, "interrupted");
  ASSERT_EQ(n.prices.size(), 2u);
  EXPECT_EQ(n.prices[0].from, T(1'800'000'100));
  EXPECT_EQ(n.prices[0].to, T(1'800'003'700));
  EXPECT_DOUBLE_EQ(n.prices[0].usd_per_hour, 2.2345);
  EXPECT_EQ(n.prices[1].from, T(1'800'003'700));
  EXPECT_EQ(n.prices[1].to, T(1'800'007'300));
  EXPECT_DOUBLE_EQ(n.prices[1].usd_per_hour, 2.5);

  Result<std::vector<PriceSample>> samples = reader->PriceSamples(T(1'800'000'000), T(1'800'000'051));
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].time, sample.time);
  ExpectSameOffering((*samples)[0].offering, sample.offering);
  EXPECT_FALSE((*samples)[0].offering.available);

  Result<std::vector<UsageRow>> used = reader->UsageOverlapping(T(1'800'000'150), T(1'800'000'151));
  ASSERT_TRUE(used.ok());
  ASSERT_EQ(used->size(), 1u);
  const UsageRecord& u = (*used)[0].usage;
  EXPECT_EQ(u.instance_id, "i-new1");
  EXPECT_EQ(u.workload_class, "render");
  EXPECT_EQ(u.team, "vfx");
  EXPECT_EQ(u.start, usage.start);
  EXPECT_EQ(u.end, usage.end);
  EXPECT_DOUBLE_EQ(u.gpu_seconds_allocated, 240.0);
  ASSERT_TRUE(u.gpu_seconds_busy.has_value());
  EXPECT_DOUBLE_EQ(*u.gpu_seconds_busy, 180.5);
}

TEST_P(Store, IntentSurvivesACrashBeforeCommitTickWithItsDecision) {
  const std::string path = Db("audit.db");
  int64_t decision_id = 0;
  int64_t action_id = 0;
  {
    auto store = OpenStore(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->BeginTick().ok());
    Result<int64_t> d = store->RecordDecision(FullDecision(100));
    ASSERT_TRUE(d.ok());
    decision_id = *d;
    Result<int64_t> a = store->RecordActionIntent(LaunchAction(decision_id, "crash-token"));
    ASSERT_TRUE(a.ok()) << a.error().ToString();
    action_id = *a;
    // After the intent: part of the reopened batch, lost by the crash.
    ASSERT_TRUE(store->RecordActionOutcome(action_id, ActionOutcome::kSucceeded, "ok", {"i-1"}).ok());
    ASSERT_TRUE(store->RecordPriceSamples({PriceSample{T(101), SpotOffering()}}).ok());
    ASSERT_TRUE(store->RecordDecision(FullDecision(102)).ok());
    // The store goes away without CommitTick, as in a crash.
  }
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  Result<std::vector<ActionRow>> open = store->OpenIntents();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].id, action_id);
  EXPECT_EQ((*open)[0].outcome, ActionOutcome::kPending);
  EXPECT_EQ((*open)[0].action.idempotency_token, "crash-token");

  auto reader = OpenReader(path);
  ASSERT_NE(reader, nullptr);
  Result<std::vector<DecisionRow>> decisions = reader->DecisionsSince(T(0), 10);
  ASSERT_TRUE(decisions.ok());
  ASSERT_EQ(decisions->size(), 1u) << "the decision before the intent is kept, the one after is lost";
  EXPECT_EQ((*decisions)[0].id, decision_id);
  Result<std::vector<PriceSample>> samples = reader->PriceSamples(T(0), T(1000));
  ASSERT_TRUE(samples.ok());
  EXPECT_TRUE(samples->empty());
}

TEST_P(Store, TickRecordsAfterAnIntentCommitWithTheTick) {
  const std::string path = Db("audit.db");
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->BeginTick().ok());
  Result<int64_t> d = store->RecordDecision(FullDecision(100));
  ASSERT_TRUE(d.ok());
  Result<int64_t> a = store->RecordActionIntent(LaunchAction(*d, "t1"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(store->RecordActionOutcome(*a, ActionOutcome::kSucceeded, "", {"i-1"}).ok());
  ASSERT_TRUE(store->CommitTick().ok());
  store.reset();

  store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  Result<std::vector<ActionRow>> open = store->OpenIntents();
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
}

TEST_P(Store, EachDatabaseHasItsOwnInstallationIdThatSurvivesReopening) {
  std::string first;
  {
    std::unique_ptr<SqliteAuditStore> a = OpenStore(Db("a.db"));
    ASSERT_NE(a, nullptr);
    Result<std::string> id = a->InstallationId();
    ASSERT_TRUE(id.ok()) << id.error().ToString();
    EXPECT_EQ(id->size(), 12u);
    first = *id;
  }
  std::unique_ptr<SqliteAuditStore> again = OpenStore(Db("a.db"));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->InstallationId().value(), first);
  std::unique_ptr<SqliteAuditStore> other = OpenStore(Db("b.db"));
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other->InstallationId().value(), first);
}

TEST_P(Store, CreatesTheSchemaInAnEmptyFileAndReopensIt) {
  const std::string path = Db("audit.db");
  if (!postgres()) std::ofstream(path).flush();  // an empty file is an empty database
  ASSERT_NE(OpenStore(path), nullptr);
  EXPECT_EQ(RawQuery(path, "SELECT max(version) FROM schema_version"),
            std::to_string(SqliteAuditStore::CurrentSchemaVersion()));
  if (!postgres()) {
    EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  }
  ASSERT_NE(OpenStore(path), nullptr);
  EXPECT_EQ(RawQuery(path, "SELECT count(*) FROM schema_version"),
            std::to_string(SqliteAuditStore::CurrentSchemaVersion()));
  for (const char* table : {"decisions", "actions", "nodes", "node_prices", "price_samples", "usage", "installation"}) {
    SCOPED_TRACE(table);
    const std::string sql =
        std::string(postgres() ? "SELECT count(*) FROM information_schema.tables WHERE table_name = '"
                               : "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '") +
        table + "'";
    EXPECT_EQ(RawQuery(path, sql.c_str()), "1");
  }
}

TEST_P(Store, RefusesASchemaNewerThanTheBinary) {
  const std::string path = Db("audit.db");
  ASSERT_NE(OpenStore(path), nullptr);
  RawQuery(path, "INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', 0)");

  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(store.error().message().find("version 99 is newer"), std::string::npos) << store.error().ToString();
  EXPECT_EQ(RawQuery(path, "SELECT max(version) FROM schema_version"), "99") << "never downgraded";

  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(path);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.error().category(), ErrorCategory::kConfig);
}

// The fleet report's directory walk asks this instead of reading error text.
TEST(AuditReader, TellsAuditDatabasesFromOtherSqliteFiles) {
  TempDir dir;
  const std::string audit = dir.File("audit.db");
  ASSERT_NE(OpenStore(audit), nullptr);
  const std::string foreign = dir.File("foreign.db");
  RawQuery(foreign, "CREATE TABLE customers (name TEXT)");
  const std::string other_app = dir.File("other_app.db");
  RawQuery(other_app, "PRAGMA application_id = 7");
  const std::string newer = dir.File("newer.db");
  ASSERT_NE(OpenStore(newer), nullptr);
  RawQuery(newer, "INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', 0)");
  const std::string empty = dir.File("empty.db");
  RawQuery(empty, "PRAGMA user_version = 0");
  for (const auto& [path, expected] : std::vector<std::pair<std::string, bool>>{
           {audit, true}, {newer, true}, {foreign, false}, {other_app, false}, {empty, false}}) {
    SCOPED_TRACE(path);
    Result<bool> is_audit = AuditReader::IsAuditDatabase(path);
    ASSERT_TRUE(is_audit.ok()) << is_audit.error().ToString();
    EXPECT_EQ(*is_audit, expected);
  }
  EXPECT_FALSE(AuditReader::IsAuditDatabase(dir.File("missing.db")).ok());
}

TEST(SqliteAuditStore, RefusesFilesThatAreNotAuditDatabases) {
  TempDir dir;
  const std::string foreign = dir.File("foreign.db");
  RawQuery(foreign, "CREATE TABLE customers (name TEXT)");
  const std::string garbage = dir.File("garbage.db");
  { std::ofstream(garbage) << "this is not a database, just a text file that is long enough to have a header"; }
  for (const std::string& path : {foreign, garbage}) {
    SCOPED_TRACE(path);
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.error().category(), ErrorCategory::kConfig) << store.error().ToString();
  }
  Result<std::unique_ptr<AuditReader>> missing = AuditReader::Open(dir.File("missing.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kNotFound);
  Result<std::unique_ptr<SqliteAuditStore>> no_dir = SqliteAuditStore::Open(dir.File("no/such/dir/audit.db"));
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.error().category(), ErrorCategory::kConfig) << no_dir.error().ToString();
}

TEST_P(Store, DuplicateIdempotencyTokenIsAClearErrorAndTheTickGoesOn) {
  auto store = OpenStore(Db("audit.db"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->BeginTick().ok());
  Result<int64_t> d = store->RecordDecision(FullDecision(100));
  ASSERT_TRUE(d.ok());
  Result<int64_t> first = store->RecordActionIntent(LaunchAction(*d, "dup-token"));
  ASSERT_TRUE(first.ok());
  Result<int64_t> again = store->RecordActionIntent(LaunchAction(*d, "dup-token"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().category(), ErrorCategory::kInvalidInput);
  EXPECT_NE(again.error().message().find("'dup-token'"), std::string::npos) << again.error().ToString();
  EXPECT_NE(again.error().message().find("already recorded (action id " + std::to_string(*first) + ")"),
            std::string::npos)
      << again.error().ToString();

  // A batch with a duplicate records none of its intents.
  Result<std::vector<int64_t>> batch =
      store->RecordActionIntents({LaunchAction(*d, "fresh-token"), LaunchAction(*d, "dup-token")});
  ASSERT_FALSE(batch.ok());
  ASSERT_TRUE(store->RecordDecision(FullDecision(101)).ok());
  ASSERT_TRUE(store->CommitTick().ok());

  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<ActionRow>> open = (*reader)->OpenIntents();
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->size(), 1u);
  EXPECT_EQ((*open)[0].action.idempotency_token, "dup-token");
  Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsSince(T(0), 10);
  ASSERT_TRUE(decisions.ok());
  EXPECT_EQ(decisions->size(), 2u);
}

TEST_P(Store, RejectsBadRecordsWithTheirCategory) {
  auto store = OpenStore(Db("audit.db"));
  ASSERT_NE(store, nullptr);
  Result<int64_t> d = store->RecordDecision(FullDecision(100));
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-1", *d, 1000)).ok());
  Result<int64_t> action = store->RecordActionIntent(LaunchAction(*d, "ok-token"));
  ASSERT_TRUE(action.ok());

  struct Case {
    std::string name;
    Status status;
    ErrorCategory want;
  };
  DecisionRecord nan_cost = FullDecision(100);
  nan_cost.cost_after_usd_per_hour = std::nan("");
  ActionRecord negative = LaunchAction(*d, "neg");
  negative.count = -1;
  std::vector<Case> cases = {
      {"empty token", store->RecordActionIntent(LaunchAction(*d, "")).status(), ErrorCategory::kInvalidInput},
      {"unknown decision", store->RecordActionIntent(LaunchAction(999, "orphan")).status(),
       ErrorCategory::kNotFound},
      {"negative count", store->RecordActionIntent(negative).status(), ErrorCategory::kInvalidInput},
      {"NaN cost", store->RecordDecision(nan_cost).status(), ErrorCategory::kInvalidInput},
      {"pending outcome", store->RecordActionOutcome(*action, ActionOutcome::kPending, "", {}),
       ErrorCategory::kInvalidInput},
      {"unknown action", store->RecordActionOutcome(12345, ActionOutcome::kFailed, "", {}),
       ErrorCategory::kNotFound},
      {"node of unknown decision", store->RecordNodeLaunch(NodeLaunch("i-2", 999, 1000)), ErrorCategory::kNotFound},
      {"price of unknown node", store->RecordNodePrice("i-nope", T(2000), 1.0), ErrorCategory::kNotFound},
      {"price before launch", store->RecordNodePrice("i-1", T(999), 1.0), ErrorCategory::kInvalidInput},
      {"negative price", store->RecordNodePrice("i-1", T(2000), -1.0), ErrorCategory::kInvalidInput},
      {"end of unknown node", store->RecordNodeEnd({"i-nope", T(2000), "terminated"}), ErrorCategory::kNotFound},
      {"end before launch", store->RecordNodeEnd({"i-1", T(10), "terminated"}), ErrorCategory::kInvalidInput},
      {"usage ends before start", store->RecordUsage({{"i-1", "render", "", T(20), T(10), 1, 1}}),
       ErrorCategory::kInvalidInput},
      {"busy above allocated", store->RecordUsage({{"i-1", "render", "", T(10), T(20), 1, 2}}),
       ErrorCategory::kInvalidInput},
      {"commit without begin", store->CommitTick(), ErrorCategory::kInternal},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.error().category(), c.want) << c.status.error().ToString();
  }
  ASSERT_TRUE(store->BeginTick().ok());
  Status twice = store->BeginTick();
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().category(), ErrorCategory::kInternal);
  EXPECT_TRUE(store->CommitTick().ok());
}

TEST_P(Store, NodeRecordsAreIdempotent) {
  auto store = OpenStore(Db("audit.db"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-1", 0, 1000)).ok());
  NodeLaunchRecord again = NodeLaunch("i-1", 0, 5000);
  again.reason = "rediscovered";
  ASSERT_TRUE(store->RecordNodeLaunch(again).ok());
  ASSERT_TRUE(store->RecordNodePrice("i-1", T(1000), 3.0).ok()) << "replaces the launch price at the same second";
  ASSERT_TRUE(store->RecordNodeEnd({"i-1", T(2000), "terminated"}).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-1", T(3000), "vanished"}).ok());
  Status after_end = store->RecordNodePrice("i-1", T(2500), 1.0);
  ASSERT_FALSE(after_end.ok());
  EXPECT_EQ(after_end.error().category(), ErrorCategory::kInvalidInput);

  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(T(0), T(10'000));
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 1u);
  EXPECT_EQ((*nodes)[0].launch.launch_time, T(1000));
  EXPECT_EQ((*nodes)[0].launch.reason, "queue render");
  EXPECT_EQ((*nodes)[0].launch.decision_id, 0);
  EXPECT_EQ((*nodes)[0].end_time, T(2000));
  EXPECT_EQ((*nodes)[0].cause, "terminated");
  ASSERT_EQ((*nodes)[0].prices.size(), 1u);
  EXPECT_DOUBLE_EQ((*nodes)[0].prices[0].usd_per_hour, 3.0);
  EXPECT_EQ((*nodes)[0].prices[0].to, T(2000));
}

TEST_P(Store, StoresHostileTextVerbatim) {
  const std::string path = Db("audit.db");
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  DecisionRecord d = FullDecision(100);
  d.summary = "x'); DROP TABLE decisions; --";
  d.policy_name = std::string("nul\0inside", 10);
  if (postgres()) {
    // PostgreSQL text holds no NUL byte: refused, never cut short.
    Result<int64_t> refused = store->RecordDecision(d);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().category(), ErrorCategory::kInvalidInput) << refused.error().ToString();
    d.policy_name = "no nul";
  }
  ASSERT_TRUE(store->RecordDecision(d).ok());
  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<DecisionRow>> rows = (*reader)->DecisionsSince(T(0), 5);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].decision.summary, d.summary);
  EXPECT_EQ((*rows)[0].decision.policy_name, d.policy_name);
}

TEST_P(Store, PruneBeforeKeepsWhatBillingStillNeeds) {
  auto store = OpenStore(Db("audit.db"));
  ASSERT_NE(store, nullptr);
  const int64_t cut = 10'000;
  Result<int64_t> old_plain = store->RecordDecision(FullDecision(100));       // pruned
  Result<int64_t> old_running = store->RecordDecision(FullDecision(200));     // launched a running node
  Result<int64_t> old_ended_late = store->RecordDecision(FullDecision(300));  // node ended after the cut
  Result<int64_t> old_ended = store->RecordDecision(FullDecision(400));       // node ended before the cut
  Result<int64_t> old_pending = store->RecordDecision(FullDecision(500));     // has a pending intent
  Result<int64_t> recent = store->RecordDecision(FullDecision(cut));          // at the cut: kept
  for (const auto* id : {&old_plain, &old_running, &old_ended_late, &old_ended, &old_pending, &recent}) {
    ASSERT_TRUE(id->ok());
  }
  Result<int64_t> done = store->RecordActionIntent(LaunchAction(*old_plain, "done"));
  ASSERT_TRUE(done.ok());
  ASSERT_TRUE(store->RecordActionOutcome(*done, ActionOutcome::kSucceeded, "", {}).ok());
  ASSERT_TRUE(store->RecordActionIntent(LaunchAction(*old_pending, "pending")).ok());

  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-running", *old_running, 200)).ok());
  ASSERT_TRUE(store->RecordNodePrice("i-running", T(250), 1.5).ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-late", *old_ended_late, 300)).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-late", T(cut + 5), "terminated"}).ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-gone", *old_ended, 400)).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-gone", T(cut - 1), "terminated"}).ok());

  ASSERT_TRUE(store->RecordPriceSamples({{T(cut - 1), SpotOffering()}, {T(cut), SpotOffering()}}).ok());
  ASSERT_TRUE(store->RecordUsage({{"i-gone", "render", "", T(400), T(500), 10, 5},
                                  {"i-running", "render", "", T(200), T(300), 10, 5},
                                  {"i-unknown", "render", "", T(200), T(300), 10, 5},
                                  {"i-unknown", "render", "", T(cut - 10), T(cut + 10), 10, 5}})
                  .ok());

  ASSERT_TRUE(store->PruneBefore(T(cut)).ok());

  Result<std::unique_ptr<AuditReader>> opened = store->OpenReader();
  ASSERT_TRUE(opened.ok());
  AuditReader& reader = **opened;
  Result<std::vector<DecisionRow>> decisions = reader.DecisionsSince(T(0), 100);
  ASSERT_TRUE(decisions.ok());
  std::vector<int64_t> kept;
  for (const DecisionRow& row : *decisions) kept.push_back(row.id);
  EXPECT_EQ(kept, (std::vector<int64_t>{*old_running, *old_ended_late, *old_pending, *recent}));
  EXPECT_EQ(reader.ActionsForDecision(*old_plain)->size(), 0u) << "actions go with their decision";
  EXPECT_EQ(reader.OpenIntents()->size(), 1u);

  Result<std::vector<NodeRow>> nodes = reader.NodesOverlapping(T(0), T(cut * 2));
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].launch.instance_id, "i-running");
  EXPECT_EQ((*nodes)[0].prices.size(), 2u) << "a kept node keeps its price history from launch";
  EXPECT_EQ((*nodes)[1].launch.instance_id, "i-late");

  Result<std::vector<PriceSample>> samples = reader.PriceSamples(T(0), T(cut * 2));
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].time, T(cut));

  Result<std::vector<UsageRow>> usage = reader.UsageOverlapping(T(0), T(cut * 2));
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(usage->size(), 2u);
  EXPECT_EQ((*usage)[0].usage.instance_id, "i-running");
  EXPECT_EQ((*usage)[1].usage.end, T(cut + 10));

  Result<std::string> integrity = store->IntegrityCheck();
  ASSERT_TRUE(integrity.ok());
  EXPECT_EQ(*integrity, "ok");
}

TEST_P(Store, ReaderDoesNotWaitForAnOpenTick) {
  const std::string path = Db("audit.db");
  auto store = OpenStore(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordDecision(FullDecision(100)).ok());
  ASSERT_TRUE(store->BeginTick().ok());
  ASSERT_TRUE(store->RecordDecision(FullDecision(200)).ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-1", 0, 200)).ok());

  // A zero busy timeout: any wait on the writer's lock would fail at once.
  auto reader = OpenReader(path, AuditReaderOptions{.busy_timeout = std::chrono::milliseconds(0)});
  ASSERT_NE(reader, nullptr);
  Result<std::vector<DecisionRow>> during = reader->DecisionsSince(T(0), 10);
  ASSERT_TRUE(during.ok()) << during.error().ToString();
  EXPECT_EQ(during->size(), 1u) << "the open tick is not visible";
  Result<std::vector<NodeRow>> nodes = reader->NodesOverlapping(T(0), T(1000));
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  EXPECT_TRUE(nodes->empty());

  ASSERT_TRUE(store->CommitTick().ok());
  Result<std::vector<DecisionRow>> after = reader->DecisionsSince(T(0), 10);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 2u);
}

TEST(SqliteAuditStore, SecondWriterGetsATransientError) {
  TempDir dir;
  const std::string path = dir.File("audit.db");
  auto first = OpenStore(path);
  ASSERT_NE(first, nullptr);
  auto second = OpenStore(path, SqliteAuditStoreOptions{.busy_timeout = std::chrono::milliseconds(0)});
  ASSERT_NE(second, nullptr);
  ASSERT_TRUE(first->BeginTick().ok());
  Status blocked = second->BeginTick();
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.error().category(), ErrorCategory::kTransient) << blocked.error().ToString();
  Status write = second->RecordDecision(FullDecision(1)).status();
  ASSERT_FALSE(write.ok());
  EXPECT_EQ(write.error().category(), ErrorCategory::kTransient);
  // The locked tick records nothing and ends with CommitTick, which says so.
  Status commit = second->CommitTick();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.error().category(), ErrorCategory::kTransient);
  ASSERT_TRUE(first->CommitTick().ok());
  EXPECT_TRUE(second->RecordDecision(FullDecision(1)).ok());
}

TEST(SqliteAuditStore, FullDatabaseIsATransientErrorNotACrash) {
  TempDir dir;
  const std::string path = dir.File("audit.db");
  auto store = OpenStore(path, SqliteAuditStoreOptions{.max_size_mib = 1});
  ASSERT_NE(store, nullptr);
  DecisionRecord big = FullDecision(100);
  big.plan_json = "\"" + std::string(64 * 1024, 'p') + "\"";
  ASSERT_TRUE(store->BeginTick().ok());
  Status failure;
  int written = 0;
  for (int i = 0; i < 100 && failure.ok(); ++i) {
    Result<int64_t> id = store->RecordDecision(big);
    failure = id.status();
    written += id.ok() ? 1 : 0;
  }
  ASSERT_FALSE(failure.ok()) << "1 MiB cannot hold 100 × 64 KiB";
  EXPECT_GT(written, 0);
  EXPECT_EQ(failure.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(failure.error().message().find("disk full"), std::string::npos) << failure.error().ToString();
  (void)store->CommitTick();  // either outcome is acceptable; it must not crash
  Result<std::string> integrity = store->IntegrityCheck();
  ASSERT_TRUE(integrity.ok()) << integrity.error().ToString();
  EXPECT_EQ(*integrity, "ok");
}

TEST(SqliteAuditStore, InMemoryStoreSharesItsConnectionWithItsReader) {
  auto store = OpenStore(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->BeginTick().ok());
  ASSERT_TRUE(store->RecordDecision(FullDecision(100)).ok());
  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<DecisionRow>> rows = (*reader)->DecisionsSince(T(0), 10);
  ASSERT_TRUE(rows.ok()) << rows.error().ToString();
  EXPECT_EQ(rows->size(), 1u);
  ASSERT_TRUE(store->CommitTick().ok());
  Result<std::unique_ptr<AuditReader>> direct = AuditReader::Open(":memory:");
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.error().category(), ErrorCategory::kInvalidInput);
}

TEST_P(Reader, RejectsBadRangesAndLimits) {
  auto store = OpenStore(Db(":memory:"));
  ASSERT_NE(store, nullptr);
  Result<std::unique_ptr<AuditReader>> opened = store->OpenReader();
  ASSERT_TRUE(opened.ok());
  AuditReader& reader = **opened;
  EXPECT_EQ(reader.DecisionsSince(T(0), 0).error().category(), ErrorCategory::kInvalidInput);
  EXPECT_EQ(reader.DecisionsAfterId(0, -1).error().category(), ErrorCategory::kInvalidInput);
  EXPECT_EQ(reader.NodesOverlapping(T(10), T(5)).error().category(), ErrorCategory::kInvalidInput);
  EXPECT_EQ(reader.UsageOverlapping(T(10), T(5)).error().category(), ErrorCategory::kInvalidInput);
  EXPECT_EQ(reader.PriceSamples(T(10), T(5)).error().category(), ErrorCategory::kInvalidInput);
  EXPECT_EQ(reader.Decision(42).error().category(), ErrorCategory::kNotFound);
}

TEST_P(Reader, PagesDecisionsByTimeAndById) {
  auto store = OpenStore(Db(":memory:"));
  ASSERT_NE(store, nullptr);
  std::vector<int64_t> ids;
  for (int64_t t : {100, 100, 100, 200, 300}) {
    Result<int64_t> id = store->RecordDecision(FullDecision(t));
    ASSERT_TRUE(id.ok());
    ids.push_back(*id);
  }
  Result<std::unique_ptr<AuditReader>> opened = store->OpenReader();
  ASSERT_TRUE(opened.ok());
  AuditReader& reader = **opened;
  Result<std::vector<DecisionRow>> since = reader.DecisionsSince(T(150), 10);
  ASSERT_TRUE(since.ok());
  ASSERT_EQ(since->size(), 2u);
  EXPECT_EQ((*since)[0].id, ids[3]);
  Result<std::vector<DecisionRow>> page = reader.DecisionsAfterId(ids[1], 2);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->size(), 2u);
  EXPECT_EQ((*page)[0].id, ids[2]);
  EXPECT_EQ((*page)[1].id, ids[3]);
}

TEST_P(Reader, FindsNodesAndUsageThatOverlapARange) {
  auto store = OpenStore(Db(":memory:"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-before", 0, 0)).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-before", T(100), "terminated"}).ok());  // ends at from: out
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-across", 0, 50)).ok());
  ASSERT_TRUE(store->RecordNodeEnd({"i-across", T(150), "terminated"}).ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-running", 0, 120)).ok());
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-after", 0, 200)).ok());  // starts at to: out
  ASSERT_TRUE(store->RecordUsage({{"i-across", "a", "", T(50), T(100), 1, 1},
                                  {"i-across", "a", "", T(90), T(110), 1, 1},
                                  {"i-running", "a", "", T(190), T(210), 1, 1},
                                  {"i-after", "a", "", T(200), T(210), 1, 1}})
                  .ok());
  Result<std::unique_ptr<AuditReader>> opened = store->OpenReader();
  ASSERT_TRUE(opened.ok());
  Result<std::vector<NodeRow>> nodes = (*opened)->NodesOverlapping(T(100), T(200));
  ASSERT_TRUE(nodes.ok());
  std::vector<std::string> names;
  for (const NodeRow& n : *nodes) names.push_back(n.launch.instance_id);
  EXPECT_EQ(names, (std::vector<std::string>{"i-across", "i-running"}));
  EXPECT_EQ((*nodes)[1].prices.size(), 1u);
  EXPECT_FALSE((*nodes)[1].prices[0].to.has_value()) << "running: the last interval is open";
  Result<std::vector<UsageRow>> usage = (*opened)->UsageOverlapping(T(100), T(200));
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(usage->size(), 2u);
  EXPECT_EQ((*usage)[0].usage.start, T(90));
  EXPECT_EQ((*usage)[1].usage.start, T(190));
}

}  // namespace
}  // namespace gpuscaler

namespace gpuscaler {
namespace {

TEST_P(Store, SamePriceSampleKeyReplacesAndSameUsageKeyIsRejected) {
  auto store = OpenStore(Db(":memory:"));
  ASSERT_NE(store, nullptr);
  PriceSample first{T(100), SpotOffering()};
  PriceSample second = first;
  second.offering.usd_per_hour = 9.5;
  ASSERT_TRUE(store->RecordPriceSamples({first}).ok());
  ASSERT_TRUE(store->RecordPriceSamples({second}).ok());
  UsageRecord u{"i-1", "render", "vfx", T(100), T(160), 240, 120};
  ASSERT_TRUE(store->RecordUsage({u}).ok());
  UsageRecord other_team = u;
  other_team.team = "games";
  Status twice = store->RecordUsage({other_team, u});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().category(), ErrorCategory::kInvalidInput) << twice.error().ToString();

  Result<std::unique_ptr<AuditReader>> reader = store->OpenReader();
  ASSERT_TRUE(reader.ok());
  Result<std::vector<PriceSample>> samples = (*reader)->PriceSamples(T(0), T(1000));
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_DOUBLE_EQ((*samples)[0].offering.usd_per_hour, 9.5);
  Result<std::vector<UsageRow>> usage = (*reader)->UsageOverlapping(T(0), T(1000));
  ASSERT_TRUE(usage.ok());
  ASSERT_EQ(usage->size(), 1u) << "a rejected call records none of its rows";
  EXPECT_EQ((*usage)[0].usage.team, "vfx");
}

TEST_P(Store, WithTickIntentsAreLostWithAnUncommittedTick) {
  const std::string path = Db("audit.db");
  {
    auto store = OpenStore(path, SqliteAuditStoreOptions{.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick});
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->BeginTick().ok());
    Result<int64_t> d = store->RecordDecision(FullDecision(100));
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(store->RecordActionIntent(LaunchAction(*d, "sim-token")).ok());
    Result<std::vector<ActionRow>> open = store->OpenIntents();
    ASSERT_TRUE(open.ok());
    EXPECT_EQ(open->size(), 1u) << "the writer sees its own batch";
  }
  auto reader = OpenReader(path);
  ASSERT_NE(reader, nullptr);
  Result<std::vector<ActionRow>> open = reader->OpenIntents();
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
  EXPECT_TRUE(reader->DecisionsSince(T(0), 10)->empty());
}

}  // namespace
}  // namespace gpuscaler

namespace gpuscaler {
namespace {

TEST_P(Store, GroupCommitHoldsTicksUntilTheNthOrAFlush) {
  const std::string path = Db("audit.db");
  auto store = OpenStore(path, SqliteAuditStoreOptions{.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick,
                                                       .group_commit_ticks = 3});
  ASSERT_NE(store, nullptr);
  auto reader = OpenReader(path);
  ASSERT_NE(reader, nullptr);
  auto visible = [&] { return reader->DecisionsSince(T(0), 100)->size(); };
  auto tick = [&](int64_t t) {
    ASSERT_TRUE(store->BeginTick().ok());
    ASSERT_TRUE(store->RecordDecision(FullDecision(t)).ok());
    ASSERT_TRUE(store->RecordPriceSamples({{T(t), SpotOffering()}}).ok());
    ASSERT_TRUE(store->CommitTick().ok());
  };
  tick(1);
  tick(2);
  EXPECT_EQ(visible(), 0u);
  ASSERT_TRUE(store->RecordNodeLaunch(NodeLaunch("i-1", 0, 2)).ok()) << "a write between grouped ticks joins them";
  tick(3);
  EXPECT_EQ(visible(), 3u);
  tick(4);
  EXPECT_EQ(visible(), 3u);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(visible(), 4u);
  tick(5);
  store.reset();  // the destructor commits grouped ticks that CommitTick accepted
  EXPECT_EQ(visible(), 5u);
  EXPECT_EQ(reader->NodesOverlapping(T(0), T(100))->size(), 1u);
}

// A range over most of the store reads whole tables; a narrow one goes
// through the time indexes. Both give the nodes overlapping the range, in
// launch order (recorded out of it here), each with all its prices, and
// none of another run's.
TEST_P(Store, NodesOverlappingIsTheSameWhetherTheRangeCoversMostNodesOrFew) {
  const std::string path = Db("nodes.db");
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(path)).value();
  constexpr int64_t kT0 = 1'800'000'000;
  constexpr int kNodes = 40;
  auto launch_of = [](int i) { return kT0 + 3600 * int64_t{i}; };  // one an hour, each lives 3 h
  ASSERT_TRUE(store->BeginRun({"fleet", "daemon", "hash-fleet", T(kT0)}).ok());
  for (int i = kNodes - 1; i >= 0; --i) {  // latest first: the table is not in launch order
    const std::string id = "i-" + std::to_string(1000 + i);
    Result<int64_t> d = store->RecordDecision(testing_store::FullDecision(launch_of(i)));
    ASSERT_TRUE(d.ok()) << d.error().ToString();
    ASSERT_TRUE(store->RecordNodeLaunch(testing_store::NodeLaunch(id, *d, launch_of(i))).ok());
    ASSERT_TRUE(store->RecordNodePrice(id, T(launch_of(i)), 1.0 + i).ok());
    ASSERT_TRUE(store->RecordNodePrice(id, T(launch_of(i) + 5400), 2.0 + i).ok());
    ASSERT_TRUE(store->RecordNodeEnd({id, T(launch_of(i) + 3 * 3600), "terminated"}).ok());
  }
  // Another run's node, inside every range below.
  ASSERT_TRUE(store->BeginRun({"other", "sim", "hash-other", T(kT0)}).ok());
  Result<int64_t> other = store->RecordDecision(testing_store::FullDecision(kT0));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(store->RecordNodeLaunch(testing_store::NodeLaunch("i-other", *other, launch_of(20))).ok());
  ASSERT_TRUE(store->RecordNodePrice("i-other", T(launch_of(20)), 99.0).ok());
  store.reset();

  std::unique_ptr<AuditReader> reader = std::move(AuditReader::Open(path)).value();
  Result<std::vector<RunRow>> runs = reader->Runs();
  ASSERT_TRUE(runs.ok());
  reader->SelectRun(runs->front().id);
  struct Range {
    int64_t from, to;
  };
  for (Range r : {Range{kT0 - 86400, kT0 + 86400 * 3},                  // every node: whole tables
                  Range{launch_of(5) + 1800, launch_of(35)},            // most nodes
                  Range{launch_of(20) + 100, launch_of(20) + 200}}) {  // three nodes: the indexes
    SCOPED_TRACE(std::to_string(r.from - kT0) + ".." + std::to_string(r.to - kT0));
    Result<std::vector<NodeRow>> nodes = reader->NodesOverlapping(T(r.from), T(r.to));
    ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
    std::vector<int> want;
    for (int i = 0; i < kNodes; ++i) {
      if (launch_of(i) < r.to && launch_of(i) + 3 * 3600 > r.from) want.push_back(i);
    }
    ASSERT_EQ(nodes->size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const NodeRow& n = (*nodes)[k];
      const int i = want[k];
      EXPECT_EQ(n.launch.instance_id, "i-" + std::to_string(1000 + i));
      EXPECT_EQ(n.launch.launch_time, T(launch_of(i)));
      ASSERT_EQ(n.prices.size(), 2u) << n.launch.instance_id;
      EXPECT_EQ(n.prices[0].from, T(launch_of(i)));
      EXPECT_EQ(n.prices[0].to, T(launch_of(i) + 5400));
      EXPECT_DOUBLE_EQ(n.prices[0].usd_per_hour, 1.0 + i);
      EXPECT_EQ(n.prices[1].to, T(launch_of(i) + 3 * 3600));
      EXPECT_DOUBLE_EQ(n.prices[1].usd_per_hour, 2.0 + i);
    }
  }
}

}  // namespace
}  // namespace gpuscaler
