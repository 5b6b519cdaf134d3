// The controller's per-class accounts over the recent past:
// - the lost-work budget (classes[].max_lost_work_share): the work a class
//   loses to spot notices, against its GPU-hours, decides whether the planner
//   may give it new spot work;
// - the floor held on average (classes[].spot_share_window): the class's
//   GPU-hours on on-demand, against all of them, decide whether the planner
//   may leave the moment's floor one unit short.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/fake_work_source.h"
#include "fakes/recording_planner.h"
#include "fakes/g5_fleet.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {
namespace {

using testing::FakeClock;
using testing::FakeCloudProvider;
using testing::FakeWorkSource;

// Two classes: "batch" accepts losing 1 % of its GPU-hours, "serve" has no
// budget.
Policy BudgetPolicy() {
  Policy p = testing::UndampedGpuPolicy();
  p.classes[0].max_lost_work_share = 0.01;
  WorkloadClassPolicy serve;
  serve.name = "serve";
  p.classes.push_back(serve);
  return p;
}

DemandUnit Job(const std::string& id, const std::string& cls, Seconds checkpoint) {
  DemandUnit u;
  u.id = id;
  u.workload_class = cls;
  u.gpus = 1;
  u.checkpoint_interval = checkpoint;
  u.expected_runtime = Seconds(48 * 3600);
  return u;
}

struct Scene {
  FakeClock clock;
  FakeCloudProvider cloud{clock};
  FakeWorkSource work;
  Catalog catalog = testing::G5XlargeCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  Plan next_plan;
  std::vector<Snapshot> seen;
  std::unique_ptr<Controller> controller;

  // No forgetting (half-life 0): the account is exact sums, so the test
  // can say when the share crosses the budget.
  explicit Scene(Policy policy) {
    ControllerOptions o;
    o.reuse_unchanged_plans = false;
    o.interruption_risk.half_life = Seconds(0);
    controller = std::make_unique<Controller>(clock, cloud, store.get(), work, catalog, std::move(policy), o,
                                              testing::RecordingPlanner(&seen, &next_plan));
  }
  // Launches one g5.xlarge node in us-east-1a per capacity type listed, in
  // one plan; their instance ids, in that order.
  std::vector<std::string> Launch(const std::vector<CapacityType>& capacities) {
    next_plan.launches.clear();
    for (CapacityType capacity : capacities) {
      LaunchAction l;
      l.pool = "gpu";
      for (const Offering& o : controller->snapshot().offerings)
        if (o.instance_type == "g5.xlarge" && o.zone == "us-east-1a" && o.capacity_type == capacity)
          l.offering = o;
      l.count = 1;
      l.reason = "test";
      next_plan.launches.push_back(l);
    }
    controller->Tick();
    std::vector<std::string> ids;
    for (CapacityType capacity : capacities) {
      for (const Node& n : controller->snapshot().nodes) {
        if (n.offering.capacity_type != capacity) continue;
        if (std::find(ids.begin(), ids.end(), n.instance_id) != ids.end()) continue;
        ids.push_back(n.instance_id);
        break;
      }
    }
    return ids;
  }
  void Notice(const std::string& id) {
    cloud.notices = {{id, clock.WallNow(), clock.WallNow() + Seconds(120)}};
  }
  // Ticks every `step` for `hours`.
  void RunFor(int hours, Seconds step = Seconds(3600)) {
    for (int64_t t = 0; t < hours * 3600; t += step.count()) {
      clock.Advance(step);
      controller->Tick();
    }
  }
  const std::vector<std::string>& Spent() const { return seen.back().spot_budget_spent_classes; }
};

// 1 GPU of batch ran 10 GPU-hours; a notice on its spot node loses half a
// 30-minute checkpoint interval: 0.25 GPU-h, above 1 % of 10 GPU-hours. The
// same loss in a class with no budget changes nothing.
TEST(LostWorkBudget, ANoticeThatLosesMoreThanTheBudgetKeepsTheClassOffSpot) {
  Scene s(BudgetPolicy());
  const std::vector<std::string> ids = s.Launch({CapacityType::kSpot, CapacityType::kSpot});
  ASSERT_EQ(ids.size(), 2u);
  const std::vector<std::string> spot = ids;
  s.work.SetRunning(spot[0], {Job("b1", "batch", Seconds(1800))});
  s.work.SetRunning(spot[1], {Job("s1", "serve", Seconds(1800))});
  s.RunFor(10);
  EXPECT_TRUE(s.Spent().empty());

  s.clock.Advance(Seconds(60));
  s.Notice(spot[1]);
  s.controller->Tick();
  EXPECT_TRUE(s.Spent().empty()) << "serve has no budget";

  s.clock.Advance(Seconds(60));
  s.Notice(spot[0]);
  s.controller->Tick();
  EXPECT_EQ(s.Spent(), std::vector<std::string>{"batch"});
  EXPECT_EQ(s.controller->snapshot().spot_budget_spent_classes, std::vector<std::string>{"batch"});
}

// The class is back on spot once its GPU-hours make the loss small enough:
// 0.25 GPU-h lost is 1 % of 25 GPU-hours.
TEST(LostWorkBudget, TheClassReturnsToSpotOnceItsLostShareIsUnderTheBudget) {
  Scene s(BudgetPolicy());
  const std::vector<std::string> ids = s.Launch({CapacityType::kSpot, CapacityType::kOnDemand});
  ASSERT_EQ(ids.size(), 2u);
  const std::vector<std::string> spot = {ids[0]}, on_demand = {ids[1]};
  s.work.SetRunning(spot[0], {Job("b1", "batch", Seconds(1800))});
  s.RunFor(2);
  s.clock.Advance(Seconds(60));
  s.Notice(spot[0]);
  s.controller->Tick();
  ASSERT_EQ(s.Spent(), std::vector<std::string>{"batch"});
  // The job goes on running on the on-demand node. GPU-hours accrue from the
  // work each tick saw (the launch tick saw none): 1 before the notice, then
  // one per hour.
  s.work.SetRunning(on_demand[0], {Job("b1", "batch", Seconds(1800))});
  s.RunFor(22);
  EXPECT_EQ(s.Spent(), std::vector<std::string>{"batch"}) << "23 GPU-hours: 0.25 is above 1 %";
  s.RunFor(2);
  EXPECT_TRUE(s.Spent().empty()) << "25 GPU-hours and a minute: 0.25 is under 1 %";
}

// What a notice charges is the work since the last checkpoint: a job that
// checkpoints on the notice loses at most the notice window (2 minutes), so
// the same interruption stays within the budget.
TEST(LostWorkBudget, WorkThatCheckpointsOnTheNoticeLosesOnlyTheNoticeWindow) {
  Scene s(BudgetPolicy());
  const std::vector<std::string> spot = s.Launch({CapacityType::kSpot});
  ASSERT_EQ(spot.size(), 1u);
  DemandUnit u = Job("b1", "batch", Seconds(1800));
  u.checkpoint_on_notice = true;
  s.work.SetRunning(spot[0], {u});
  s.RunFor(10);
  s.clock.Advance(Seconds(60));
  s.Notice(spot[0]);
  s.controller->Tick();
  EXPECT_TRUE(s.Spent().empty()) << "1 minute of 1 GPU is under 1 % of 10 GPU-hours";
}

// A notice on an on-demand node (a scheduled maintenance) is not a spot loss.
TEST(LostWorkBudget, NoticesOnOnDemandNodesAreNotCharged) {
  Scene s(BudgetPolicy());
  const std::vector<std::string> on_demand = s.Launch({CapacityType::kOnDemand});
  ASSERT_EQ(on_demand.size(), 1u);
  s.work.SetRunning(on_demand[0], {Job("b1", "batch", Seconds(1800))});
  s.RunFor(1);
  s.clock.Advance(Seconds(60));
  s.Notice(on_demand[0]);
  s.controller->Tick();
  EXPECT_TRUE(s.Spent().empty());
}

// "serve" holds half its GPUs on on-demand on average over a 1000-hour
// half-life (long enough that the sums below are exact to 0.5 %); "batch" has
// no window and is never listed.
Policy FloorPolicy(Seconds window = Seconds(1000 * 3600)) {
  Policy p = testing::UndampedGpuPolicy();
  p.classes[0].max_spot_share = 0.5;
  WorkloadClassPolicy serve;
  serve.name = "serve";
  serve.max_spot_share = 0.5;
  serve.spot_share_window = window;
  p.classes.push_back(serve);
  return p;
}

// The class's credit in the snapshot the planner saw last; NaN when absent.
double Credit(const Scene& s, const std::string& cls) {
  const auto& credit = s.seen.back().spot_floor_credit_gpus;
  auto it = credit.find(cls);
  return it == credit.end() ? std::nan("") : it->second;
}

// Each tick counts the work it sees for the hour since the last one; the
// credit is the on-demand GPU-hours above half of all, per hour of account.
TEST(SpotFloorAccount, TheCreditIsTheOnDemandGpusAboveTheFloorOnAverage) {
  Scene s(FloorPolicy());
  const std::vector<std::string> ids = s.Launch({CapacityType::kSpot, CapacityType::kOnDemand});
  ASSERT_EQ(ids.size(), 2u);
  const std::string spot = ids[0], on_demand = ids[1];
  s.RunFor(1);
  EXPECT_EQ(Credit(s, "serve"), 0) << "no GPU-hours yet: the floor is held at every placement";
  EXPECT_TRUE(std::isnan(Credit(s, "batch"))) << "no window";

  s.work.SetRunning(on_demand, {Job("s1", "serve", Seconds(1800)), Job("b1", "batch", Seconds(1800))});
  s.RunFor(2);
  EXPECT_NEAR(Credit(s, "serve"), (2 - 0.5 * 2) / 3.0, 0.01) << "2 of 2 GPU-hours on on-demand, over 3 hours";

  s.work.SetRunning(on_demand, {});
  s.work.SetRunning(spot, {Job("s1", "serve", Seconds(1800))});
  s.RunFor(2);
  EXPECT_NEAR(Credit(s, "serve"), 0, 0.01) << "2 of 4: at the floor";
  s.RunFor(1);
  EXPECT_NEAR(Credit(s, "serve"), (2 - 0.5 * 5) / 6.0, 0.01) << "2 of 5: under it";
  EXPECT_LT(s.controller->snapshot().spot_floor_credit_gpus.at("serve"), 0);

  s.work.SetRunning(spot, {});
  s.work.SetRunning(on_demand, {Job("s1", "serve", Seconds(1800))});
  s.RunFor(1);
  EXPECT_NEAR(Credit(s, "serve"), 0, 0.01) << "3 of 6: back at the floor";
}

// The window is a half-life: ten hours on on-demand, then two on spot. With
// a 1000-hour window that is 10 of 12 GPU-hours on on-demand (a credit of
// (10 - 6) / 12 GPUs); with a 1-hour window the ten weigh about 0.5 GPU-h
// against 2 in all (a debt of a quarter GPU).
TEST(SpotFloorAccount, OnDemandHoursLongAgoFadeWithTheWindow) {
  for (const auto& [window, credit] : std::vector<std::pair<Seconds, double>>{{Seconds(1000 * 3600), 4.0 / 12},
                                                                             {Seconds(3600), -0.25}}) {
    SCOPED_TRACE(window.count());
    Scene s(FloorPolicy(window));
    const std::vector<std::string> ids = s.Launch({CapacityType::kSpot, CapacityType::kOnDemand});
    ASSERT_EQ(ids.size(), 2u);
    s.work.SetRunning(ids[1], {Job("s1", "serve", Seconds(1800))});
    s.RunFor(10);
    s.work.SetRunning(ids[1], {});
    s.work.SetRunning(ids[0], {Job("s1", "serve", Seconds(1800))});
    s.RunFor(2);
    EXPECT_NEAR(Credit(s, "serve"), credit, 0.01);
  }
}

// The account is in memory: a restarted controller plans its first tick
// with no credit (the floor at every placement), however far ahead the class
// was before.
TEST(SpotFloorAccount, ARestartStartsTheCreditAtZero) {
  Scene s(FloorPolicy());
  const std::vector<std::string> on_demand = s.Launch({CapacityType::kOnDemand});
  ASSERT_EQ(on_demand.size(), 1u);
  s.work.SetRunning(on_demand[0], {Job("s1", "serve", Seconds(1800))});
  s.RunFor(5);
  ASSERT_GT(Credit(s, "serve"), 0);

  s.clock.Advance(Seconds(60));
  std::vector<Snapshot> seen;
  Plan none;
  ControllerOptions o;
  o.reuse_unchanged_plans = false;
  Controller restarted(s.clock, s.cloud, s.store.get(), s.work, s.catalog, FloorPolicy(), o,
                       testing::RecordingPlanner(&seen, &none));
  restarted.Tick();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].spot_floor_credit_gpus.count("serve"), 0u);
}

TEST(SpotFloorAccount, AClassWithoutAWindowOrWithoutAFloorHasNoCredit) {
  Policy p = FloorPolicy();
  p.classes[1].max_spot_share = 1.0;
  Scene s(p);
  const std::vector<std::string> on_demand = s.Launch({CapacityType::kOnDemand});
  ASSERT_EQ(on_demand.size(), 1u);
  s.work.SetRunning(on_demand[0], {Job("s1", "serve", Seconds(1800)), Job("b1", "batch", Seconds(1800))});
  s.RunFor(3);
  EXPECT_TRUE(s.seen.back().spot_floor_credit_gpus.empty());
}

}  // namespace
}  // namespace gpuscaler
