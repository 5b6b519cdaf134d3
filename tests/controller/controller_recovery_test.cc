// The controller's intent-first actuation and its recovery after a restart:
// no cloud call without a written intent, open launches and terminations
// completed, replayed or abandoned, and the month's spend restored.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "controller_harness.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::controller_recovery_test {
namespace {

using Harness = testing::ControllerHarness;
using testing::TestPolicy;

TEST(Controller, WritesTheIntentBeforeCallingTheCloud) {
  Harness h;
  std::vector<ActionRow> open_at_call;
  h.cloud.on_launch = [&](const LaunchRequest&) { open_at_call = std::move(h.store->OpenIntents()).value(); };
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  TickReport r = h.controller->Tick();
  ASSERT_EQ(open_at_call.size(), 1u);
  EXPECT_EQ(open_at_call[0].action.kind, ActionKind::kLaunch);
  EXPECT_EQ(open_at_call[0].action.idempotency_token, std::to_string(r.decision_id) + "-0");
  EXPECT_EQ(h.cloud.launches[0].idempotency_token, std::to_string(r.decision_id) + "-0");
  // And the outcome afterwards: nothing is left open.
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
}

TEST(Controller, DoesNotCallTheCloudWhenTheIntentCannotBeWritten) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/spot", 1)};
  h.next_plan.launches[0].count = 1;
  // First tick: the action gets token "<decision>-0". Replaying the same token
  // (same decision id) cannot happen, so force a store failure by closing the
  // tick early: record an intent with the token the controller will use.
  ActionRecord clash;
  clash.idempotency_token = "1-0";
  clash.kind = ActionKind::kLaunch;
  ASSERT_TRUE(h.store->RecordActionIntent(clash).ok());
  TickReport r = h.controller->Tick();
  ASSERT_EQ(r.decision_id, 1);
  EXPECT_TRUE(h.cloud.launches.empty());
  EXPECT_FALSE(r.errors.empty());
}

// A monthly cap must not restart at zero with the process: the month-to-date
// spend, whole and per pool, comes back from the audit store.
TEST(ControllerRecovery, MonthToDateSpendIsRestoredFromTheStore) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};  // $2.00/h
  h.controller->Tick();
  for (int i = 0; i < 3; ++i) {
    h.clock.Advance(Seconds(3600));
    h.controller->Tick();
  }
  EXPECT_NEAR(h.seen.back().month_to_date_usd, 6.0, 1e-6);
  EXPECT_NEAR(h.seen.back().month_to_date_usd_by_pool.at("gpu"), 6.0, 1e-6);

  h.clock.Advance(Seconds(1800));  // a restart half an hour later
  std::vector<Snapshot> seen;
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  Controller restarted(h.clock, h.cloud, h.store.get(), h.work, h.catalog, TestPolicy(), o,
                       [&seen](const Snapshot& s, const Policy&) {
                         seen.push_back(s);
                         return Plan{};
                       });
  restarted.Tick();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NEAR(seen[0].month_to_date_usd, 7.0, 1e-6);
  EXPECT_NEAR(seen[0].month_to_date_usd_by_pool.at("gpu"), 7.0, 1e-6);
}

// What the controller writes before calling the cloud, as if a previous run
// had crashed right after writing it (and, with `call_went_through`, right
// after the cloud answered, before the outcome was recorded).
ActionRow LeaveOpenLaunch(Harness& h, WallTime decided, bool call_went_through, int count = 2) {
  DecisionRecord d;
  d.time = decided;
  d.policy_name = "test";
  d.policy_hash = "h";
  const int64_t decision = std::move(h.store->RecordDecision(d)).value();
  ActionRecord a;
  a.decision_id = decision;
  a.kind = ActionKind::kLaunch;
  a.idempotency_token = std::to_string(decision) + "-0";
  a.pool = "gpu";
  a.offering.instance_type = "g5.xlarge";
  a.offering.region = "us-east-1";
  a.offering.zone = "us-east-1a";
  a.offering.capacity_type = CapacityType::kOnDemand;
  a.offering.usd_per_hour = a.offering.on_demand_usd_per_hour = 1.0;
  a.count = count;
  a.reason = "3 pending units";
  const int64_t id = std::move(h.store->RecordActionIntent(a)).value();
  if (call_went_through) {
    LaunchRequest r;
    r.pool = "gpu";
    r.count = count;
    r.offerings = {a.offering};
    r.idempotency_token = a.idempotency_token;
    r.tags = {{kOwnerTag, "gpu"}, {kIntentTag, a.idempotency_token}};
    EXPECT_TRUE(h.cloud.Launch(r).ok());
  }
  ActionRow row;
  row.id = id;
  row.action = a;
  return row;
}

int Nodes(Harness& h) {
  auto reader = h.store->OpenReader();
  return static_cast<int>(std::move((*reader)->NodesOverlapping(WallTime(), WallTime(Seconds(int64_t{1} << 40)))).value().size());
}

TEST(ControllerRecovery, ALaunchWhoseCallWentThroughIsCompletedNotRepeated) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  ActionRow open = LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/true);
  h.clock.Advance(Seconds(20));  // the restart
  TickReport r = h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);        // no duplicate
  ASSERT_EQ(h.cloud.launches.size(), 2u);         // the original call and the replay
  EXPECT_EQ(h.cloud.launches[1].idempotency_token, open.action.idempotency_token);
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);
  EXPECT_EQ(Nodes(h), 2);  // recorded once each, with their decision
  EXPECT_TRUE(r.errors.empty()) << r.errors[0].ToString();
}

TEST(ControllerRecovery, ALaunchThatNeverReachedTheCloudIsSentOnceWithinTheWindow) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/false);
  h.clock.Advance(Seconds(30));
  h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);
  EXPECT_EQ(h.cloud.launches.size(), 1u);
  for (const auto& [id, inst] : h.cloud.instances) EXPECT_EQ(inst.tags.count(kIntentTag), 1u);
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  // A second tick does not replay it again.
  h.controller->Tick();
  EXPECT_EQ(h.cloud.instances.size(), 2u);
}

TEST(ControllerRecovery, AnIntentOlderThanTheWindowIsAbandonedAndItsInstancesAdopted) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  LeaveOpenLaunch(h, h.clock.WallNow(), /*call_went_through=*/true);
  h.clock.Advance(Seconds(3600));  // down for an hour
  h.controller->Tick();
  EXPECT_EQ(h.cloud.launches.size(), 1u);  // not replayed
  EXPECT_TRUE(std::move(h.store->OpenIntents()).value().empty());
  EXPECT_EQ(h.controller->snapshot().nodes.size(), 2u);  // found by the owner tag: not untracked
}

TEST(ControllerRecovery, AnOpenTerminationIsSentAgain) {
  Harness h;
  h.clock.Advance(Seconds(1790000000));
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  ASSERT_EQ(h.cloud.instances.size(), 1u);
  const std::string id = h.cloud.instances.begin()->first;
  ActionRecord t;
  t.kind = ActionKind::kTerminate;
  t.idempotency_token = "crash-terminate";
  t.pool = "gpu";
  t.offering = h.cloud.instances.begin()->second.offering;
  t.count = 1;
  t.instance_ids = {id};
  t.reason = "consolidation";
  ASSERT_TRUE(h.store->RecordActionIntent(t).ok());
  Harness restarted;  // a new controller on the same cloud and store
  restarted.store = std::move(h.store);
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  restarted.controller = std::make_unique<Controller>(h.clock, h.cloud, restarted.store.get(), restarted.work,
                                                      restarted.catalog, TestPolicy(), o,
                                                      [](const Snapshot&, const Policy&) { return Plan{}; });
  restarted.controller->Tick();
  EXPECT_TRUE(h.cloud.instances.empty());
  ASSERT_EQ(h.cloud.terminations.size(), 1u);
  EXPECT_EQ(h.cloud.terminations[0], std::vector<std::string>{id});
  EXPECT_TRUE(std::move(restarted.store->OpenIntents()).value().empty());
}

}  // namespace
}  // namespace gpuscaler::controller_recovery_test
