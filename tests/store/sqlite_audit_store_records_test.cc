// The audit store's records on both backends: every record type read back as
// written, bad records refused with their category, node records and price
// samples idempotent where a replay must be, usage rows not, and hostile text
// stored verbatim.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/sqlite_audit_store_fixture.h"
#include "store/store_test_util.h"

namespace gpuscaler::sqlite_audit_store_records_test {
namespace {

using sqlite_audit_store_testing::OpenReader;
using sqlite_audit_store_testing::OpenStore;
using sqlite_audit_store_testing::Store;
using testing_store::FullDecision;
using testing_store::LaunchAction;
using testing_store::NodeLaunch;
using testing_store::SpotOffering;
using testing_store::T;

INSTANTIATE_TEST_SUITE_P(Backends, Store, testing_store::AllBackends(), testing_store::BackendName);

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

}  // namespace
}  // namespace gpuscaler::sqlite_audit_store_records_test
