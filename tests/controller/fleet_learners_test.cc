// The cluster state's learners, each alone: what it takes in, what it
// publishes into a Snapshot, and when that is a change for the replan gate.
#include "gpuscaler/controller/fleet_learners.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuscaler {
namespace {

const WallTime kT0 = FromUnixSeconds(1'780'000'000);

DemandUnit Unit(const std::string& cls, int gpus, Seconds runtime, Seconds checkpoint) {
  DemandUnit u;
  u.id = cls + "-unit";
  u.workload_class = cls;
  u.gpus = gpus;
  u.expected_runtime = runtime;
  u.checkpoint_interval = checkpoint;
  return u;
}

Node NodeRunning(const std::string& id, CapacityType capacity, std::vector<DemandUnit> running) {
  Node n;
  n.id = id;
  n.instance_id = id;
  n.offering.capacity_type = capacity;
  n.running = std::move(running);
  return n;
}

TEST(WarmUpLearner, MovesAThirdOfTheWayFromTheCatalogsLatencyAndPublishesObservedFamiliesOnly) {
  Catalog catalog;
  catalog.launch_latency = {{"g5", Seconds(300)}};
  catalog.default_launch_latency = Seconds(240);
  WarmUpLearner learner(catalog);
  Snapshot snap;
  EXPECT_FALSE(learner.Publish(snap));
  EXPECT_TRUE(snap.warmup_seconds_by_family.empty());

  const std::vector<NodeMilestone> seen = {{"g5", "gpus_allocatable", 600}, {"g5", "node_ready", 10},
                                           {"p5", "gpus_allocatable", 540}};
  learner.Observe(seen);
  EXPECT_TRUE(learner.Publish(snap));
  EXPECT_EQ(snap.warmup_seconds_by_family.at("g5"), 400);  // 300 + (600 - 300) / 3
  EXPECT_EQ(snap.warmup_seconds_by_family.at("p5"), 340);  // the default prior: 240 + 300 / 3
  EXPECT_FALSE(learner.Publish(snap)) << "nothing new";
}

TEST(DisruptionWindow, CountsRemovalsWithinTheIntervalAndEndsSpotPauses) {
  Policy policy;
  policy.disruption.disruption_interval = Seconds(3600);
  DisruptionWindow window;
  window.Restore({{kT0 - Seconds(30 * 3600), "gpu"}, {kT0 - Seconds(1800), "gpu"}});
  window.RecordRemoval(kT0 - Seconds(60), "burst");
  window.PauseSpot("batch", kT0 + Seconds(600));
  Snapshot snap;
  EXPECT_TRUE(window.Publish(policy, kT0, snap));
  EXPECT_EQ(snap.recently_disrupted, (std::map<std::string, int>{{"burst", 1}, {"gpu", 1}}));
  EXPECT_EQ(snap.spot_paused_classes, std::vector<std::string>{"batch"});
  EXPECT_FALSE(window.Publish(policy, kT0 + Seconds(60), snap));

  EXPECT_TRUE(window.Publish(policy, kT0 + Seconds(3600), snap));
  EXPECT_TRUE(snap.recently_disrupted.empty());
  EXPECT_TRUE(snap.spot_paused_classes.empty());
}

TEST(LostWorkAccount, AClassIsSpentWhileItsLostShareIsAboveItsBudget) {
  Policy policy;
  WorkloadClassPolicy train;
  train.name = "train";
  train.max_lost_work_share = 0.06;
  policy.classes = {train};
  LostWorkAccount account(Seconds(7 * 24 * 3600));
  const DemandUnit unit = Unit("train", 4, Seconds(8 * 3600), Seconds(3600));  // loses half an hour a notice
  const std::vector<Node> nodes = {NodeRunning("i-1", CapacityType::kSpot, {unit}),
                                   NodeRunning("", CapacityType::kSpot, {unit})};  // a placeholder runs nothing
  account.Accrue(kT0, nodes);
  account.Accrue(kT0 + Seconds(10 * 3600), nodes);  // 40 GPU-hours (decay aside)
  Snapshot snap;
  EXPECT_FALSE(account.Publish(policy, snap));
  account.ChargeInterruption(std::vector<DemandUnit>{unit});  // 2 GPU-hours lost: under 6 % of 40
  EXPECT_FALSE(account.Publish(policy, snap));
  account.ChargeInterruption(std::vector<DemandUnit>{unit});
  EXPECT_TRUE(account.Publish(policy, snap));
  EXPECT_EQ(snap.spot_budget_spent_classes, std::vector<std::string>{"train"});
}

TEST(SpotFloorAccount, TheCreditIsTheOnDemandGpusHeldAboveTheFloorOnAverage) {
  Policy policy;
  WorkloadClassPolicy web;
  web.name = "web";
  web.max_spot_share = 0.5;
  web.spot_share_window = Seconds(1000 * 3600);  // long: decay is negligible over two hours
  policy.classes = {web};
  SpotFloorAccount account;
  const std::vector<Node> nodes = {NodeRunning("i-od", CapacityType::kOnDemand, {Unit("web", 3, Seconds(0), Seconds(0))}),
                                   NodeRunning("i-spot", CapacityType::kSpot, {Unit("web", 1, Seconds(0), Seconds(0))})};
  account.Observe(policy, kT0, nodes);
  account.Observe(policy, kT0 + Seconds(7200), nodes);
  Snapshot snap;
  account.Publish(policy, snap);
  // 4 GPUs of which 3 on demand; the floor is 2: one GPU above it.
  EXPECT_NEAR(snap.spot_floor_credit_gpus.at("web"), 1.0, 0.01);
}

}  // namespace
}  // namespace gpuscaler
