// Reading the audit store back, on both backends: bad ranges and limits
// refused, decisions paged by time and by id, the nodes and usage that overlap
// a range (the same through whole tables or the time indexes), and pruning
// that keeps what billing still needs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/sqlite_audit_store_fixture.h"
#include "store/store_test_util.h"

namespace gpuscaler::sqlite_audit_store_reader_test {
namespace {

using sqlite_audit_store_testing::OpenReader;
using sqlite_audit_store_testing::OpenStore;
using sqlite_audit_store_testing::Reader;
using sqlite_audit_store_testing::Store;
using testing_store::FullDecision;
using testing_store::LaunchAction;
using testing_store::NodeLaunch;
using testing_store::SpotOffering;
using testing_store::T;

INSTANTIATE_TEST_SUITE_P(Backends, Reader, testing_store::AllBackends(), testing_store::BackendName);

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

}  // namespace
}  // namespace gpuscaler::sqlite_audit_store_reader_test
