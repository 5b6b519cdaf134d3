// Decision inputs: the planner's snapshot and policy kept per decision
// (store/decision_inputs.h), and what a reader says when one is missing.
#include "gpuscaler/store/decision_inputs.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "gpuscaler/model/json.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "store/backends.h"
#include "store/store_test_util.h"

namespace gpuscaler {
namespace {

using testing_store::SpotOffering;
using testing_store::T;

Snapshot SmallSnapshot() {
  Snapshot s;
  s.time = T(1780000000);
  s.offerings.push_back(SpotOffering());
  Node n;
  n.id = "node-1";
  n.pool = "gpu";
  n.offering = SpotOffering();
  n.launch_time = T(1779990000);
  s.nodes.push_back(n);
  DemandUnit u;
  u.id = "job-1";
  u.workload_class = "default";
  u.gpus = 1;
  s.pending.push_back(u);
  s.month_to_date_usd = 12.5;
  s.hours_left_in_month = 100;
  s.recently_disrupted["gpu"] = 1;
  return s;
}

DecisionRecord WithInput(const Snapshot& snapshot, const Policy& policy) {
  DecisionRecord d;
  d.time = snapshot.time;
  d.policy_name = policy.name;
  d.policy_hash = policy.content_hash;
  d.plan_json = R"({"launches":[]})";
  d.planner_snapshot_json = FormatSnapshotJsonLine(snapshot);
  d.planner_policy = &policy;
  return d;
}

TEST(PolicyFileJson, ReadsBackToTheSameHashForEveryShippedPolicyAndTheDefault) {
  std::vector<Policy> policies = {DefaultPolicy()};
  // The examples and the replay policies (forecasts among them).
  for (const char* dir : {"policies", "sim/testdata/policies"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(GPUSCALER_SOURCE_DIR) / dir)) {
      PolicyLoadResult loaded = LoadPolicyFile(entry.path().string());
      ASSERT_TRUE(loaded.ok()) << loaded.status().error().message();
      policies.push_back(loaded.policy);
    }
  }
  ASSERT_GE(policies.size(), 4u);
  for (const Policy& p : policies) {
    SCOPED_TRACE(p.name);
    const std::string text = PolicyFileJson(p);
    PolicyLoadResult back = ParsePolicy(text, "stored.json");
    ASSERT_TRUE(back.ok()) << back.status().error().message() << "\n" << text;
    EXPECT_EQ(back.policy.content_hash, p.content_hash);
    EXPECT_EQ(CanonicalPolicyText(back.policy), CanonicalPolicyText(p));
  }
}

TEST(PolicyFileJson, KeepsOptionalCapsTeamsSignalQueriesAndForecasts) {
  Policy p = DefaultPolicy();
  p.classes[0].team = "ml";
  p.classes[0].max_queue_wait = Seconds(90);
  p.classes[0].queue_depth = SignalQuery{SignalSource::kRabbitMq, "", "/prod", "jobs"};
  p.budget.global.monthly_usd = 1000.25;
  p.budget.per_team["ml"].hourly_usd = 3;
  p.budget.per_pool["gpu"].hard = false;
  p.signals.max_staleness["prices"] = Seconds(7200);
  p.classes[0].wait_cost_usd_per_hour = 12.5;
  p.classes[0].forecast = ForecastPolicy{};
  p.classes[0].forecast->horizon = Seconds(300);
  p.classes[0].forecast->max_idle_usd_per_hour = 4;
  p.pools[0].placement_group = "train-gangs";
  p.content_hash = PolicyContentHash(p);
  PolicyLoadResult back = ParsePolicy(PolicyFileJson(p), "stored.json");
  ASSERT_TRUE(back.ok()) << back.status().error().message();
  EXPECT_EQ(back.policy.content_hash, p.content_hash);
}

TEST(PolicyFileJson, AFirstReclaimCooldownLongerThanTheDefaultLongestReadsBack) {
  PolicyLoadResult loaded = ParsePolicy(
      "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: gpu}]\nclasses: [{name: a}]\n"
      "spot: {reclaim_cooldown: 10h}\n",
      "policy.yaml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().error().message();
  EXPECT_EQ(loaded.policy.spot.reclaim_cooldown_max, Seconds(10 * 3600)) << "unset, the longest follows the first";
  PolicyLoadResult back = ParsePolicy(PolicyFileJson(loaded.policy), "stored.json");
  ASSERT_TRUE(back.ok()) << back.status().error().message();
  EXPECT_EQ(back.policy.content_hash, loaded.policy.content_hash);
}

TEST(SnapshotCompression, RoundTripsAndNamesTheDecisionWhenCorrupt) {
  const std::string text = FormatSnapshotJsonLine(SmallSnapshot());
  Result<std::string> packed = CompressSnapshotText(text);
  ASSERT_TRUE(packed.ok());
  EXPECT_LT(packed->size(), text.size());
  Result<std::string> back = DecompressSnapshotText(*packed, static_cast<int64_t>(text.size()), 7);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, text);

  Result<std::string> corrupt = DecompressSnapshotText(packed->substr(0, packed->size() / 2), text.size(), 7);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().category(), ErrorCategory::kInternal);
  EXPECT_NE(corrupt.error().message().find("decision 7"), std::string::npos) << corrupt.error().message();
}

class DecisionInputs : public testing_store::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, DecisionInputs, testing_store::AllBackends(), testing_store::BackendName);

TEST_P(DecisionInputs, StoresTheSnapshotExactlyAndThePolicyOncePerHash) {
  const std::string path = Db("audit.db");
  const Snapshot snapshot = SmallSnapshot();
  const Policy policy = DefaultPolicy();
  {
    auto store = std::move(SqliteAuditStore::Open(path)).value();
    ASSERT_TRUE(store->BeginTick().ok());
    ASSERT_TRUE(store->RecordDecision(WithInput(snapshot, policy)).ok());
    DecisionRecord edited = WithInput(snapshot, policy);
    edited.planner_plan_json = R"({"launches":[{"count":2}]})";
    ASSERT_TRUE(store->RecordDecision(edited).ok());
    DecisionRecord bare;
    bare.policy_hash = policy.content_hash;
    ASSERT_TRUE(store->RecordDecision(bare).ok());
    ASSERT_TRUE(store->CommitTick().ok());
  }
  auto reader = std::move(AuditReader::Open(path)).value();
  DecisionInputReader inputs(*reader);

  Result<StoredDecisionInput> first = inputs.Read(1);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->snapshot_json, FormatSnapshotJsonLine(snapshot));
  Result<Snapshot> parsed = ParseSnapshotJson(first->snapshot_json, "stored");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(FormatSnapshotJsonLine(*parsed), first->snapshot_json);
  EXPECT_EQ(first->policy_hash, policy.content_hash);
  EXPECT_EQ(first->policy_json, PolicyFileJson(policy));
  EXPECT_FALSE(first->planner_plan_json.has_value());

  Result<StoredDecisionInput> second = inputs.Read(2);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->planner_plan_json, std::optional<std::string>(R"({"launches":[{"count":2}]})"));

  Result<StoredDecisionInput> bare = inputs.Read(3);
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(bare.error().message().find("recorded without its planner input"), std::string::npos)
      << bare.error().message();

  Result<StoredDecisionInput> unknown = inputs.Read(42);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(unknown.error().message().find("decisions stored: 1..3"), std::string::npos) << unknown.error().message();
}

TEST_P(DecisionInputs, KeysThePolicyByWhatThePlannerWasGivenNotByItsLabel) {
  const std::string path = Db("audit.db");
  const Snapshot snapshot = SmallSnapshot();
  Policy edited = DefaultPolicy();  // edited after loading; content_hash still the default's
  edited.pools[0].capacity_types = {CapacityType::kOnDemand};
  ASSERT_NE(PolicyContentHash(edited), edited.content_hash);
  {
    auto store = std::move(SqliteAuditStore::Open(path)).value();
    ASSERT_TRUE(store->RecordDecision(WithInput(snapshot, DefaultPolicy())).ok());
    ASSERT_TRUE(store->RecordDecision(WithInput(snapshot, edited)).ok());
    DecisionRecord no_policy = WithInput(snapshot, edited);
    no_policy.planner_policy = nullptr;
    Result<int64_t> refused = store->RecordDecision(no_policy);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().category(), ErrorCategory::kInvalidInput);
  }
  auto reader = std::move(AuditReader::Open(path)).value();
  Result<StoredDecisionInput> first = DecisionInputReader(*reader).Read(1);
  Result<StoredDecisionInput> second = DecisionInputReader(*reader).Read(2);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->policy_hash, DefaultPolicy().content_hash);
  EXPECT_EQ(second->policy_hash, PolicyContentHash(edited));
  PolicyLoadResult back = ParsePolicy(second->policy_json, "stored.json");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back.policy.content_hash, PolicyContentHash(edited));
}

TEST_P(DecisionInputs, AnEmptyStoreSaysItHasNoDecisions) {
  const std::string path = Db("audit.db");
  (void)SqliteAuditStore::Open(path);
  auto reader = std::move(AuditReader::Open(path)).value();
  Result<StoredDecisionInput> none = DecisionInputReader(*reader).Read(1);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("has no decisions"), std::string::npos) << none.error().message();
}

}  // namespace
}  // namespace gpuscaler
