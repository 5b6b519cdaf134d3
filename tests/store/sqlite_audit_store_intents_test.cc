// Ticks and action intents in the audit store, on both backends: an intent
// survives a crash before CommitTick (with its decision, not what came after),
// a duplicate idempotency token is a clear error that leaves the tick going,
// readers never wait for an open tick, and intents kept with the tick (the
// simulator's mode, group commit) are lost with it or held until the Nth tick
// or a flush.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/sqlite_audit_store_fixture.h"
#include "store/store_test_util.h"

namespace gpuscaler::sqlite_audit_store_intents_test {
namespace {

using sqlite_audit_store_testing::OpenReader;
using sqlite_audit_store_testing::OpenStore;
using sqlite_audit_store_testing::Store;
using testing_store::FullDecision;
using testing_store::LaunchAction;
using testing_store::NodeLaunch;
using testing_store::SpotOffering;
using testing_store::T;

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

}  // namespace
}  // namespace gpuscaler::sqlite_audit_store_intents_test
