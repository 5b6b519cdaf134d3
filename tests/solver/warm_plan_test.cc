// Warm capacity in the plan (solver/warm_pool.h): which launches become
// wakes, how many stopped nodes a pool keeps, when surplus ones go, and
// what the plan says they cost.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "gpuscaler/solver/planner.h"
#include "gpuscaler/solver/warm_pool.h"

namespace gpuscaler::warm_plan_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::FindOffering;
using testing::HasNote;
using testing::MakeNode;
using testing::Unit;

Policy WarmPolicy(int size) {
  Policy p = BasePolicy();
  p.pools[0].warm = WarmPoolPolicy{};
  p.pools[0].warm->size = size;
  p.pools[0].warm->max_usd_per_hour = 10;
  return p;
}

WarmNode Stopped(const Snapshot& s, const std::string& id, const std::string& type, const std::string& zone,
                 Seconds stopped_for = Seconds(600), CapacityType capacity = CapacityType::kOnDemand) {
  WarmNode w;
  w.instance_id = id;
  w.pool = "gpu";
  w.offering = FindOffering(s, type, zone, capacity);
  w.stopped = true;
  w.since = s.time - stopped_for;
  w.waiting_usd_per_hour = s.default_volume_gib * s.volume_usd_per_gib_hour;
  return w;
}

const LaunchAction* WakeOf(const Plan& p) {
  for (const LaunchAction& l : p.launches)
    if (!l.wake_instance_ids.empty()) return &l;
  return nullptr;
}

int RefillNodes(const Plan& p) {
  int n = 0;
  for (const LaunchAction& l : p.launches)
    if (l.into_warm) n += l.count;
  return n;
}

// Refill nodes of `capacity` the plan launches.
int RefillNodesOf(const Plan& p, CapacityType capacity) {
  int n = 0;
  for (const LaunchAction& l : p.launches)
    if (l.into_warm && l.offering.capacity_type == capacity) n += l.count;
  return n;
}

int ColdNodes(const Plan& p) {
  int n = 0;
  for (const LaunchAction& l : p.launches)
    if (!l.into_warm && l.wake_instance_ids.empty()) n += l.count;
  return n;
}

TEST(WarmPlan, AnOnDemandLaunchWakesAStoppedNodeAndItsPlaceIsRefilled) {
  Snapshot s = BaseSnapshot();
  DemandUnit u = Unit("u0", 1);
  u.capacity_type = CapacityType::kOnDemand;
  s.pending = {u};
  s.warm_nodes = {Stopped(s, "i-warm", "g6.xlarge", "us-east-1a")};
  const Plan plan = MakePlan(s, WarmPolicy(1));
  const LaunchAction* wake = WakeOf(plan);
  ASSERT_NE(wake, nullptr) << plan.summary;
  EXPECT_EQ(wake->wake_instance_ids, std::vector<std::string>{"i-warm"});
  EXPECT_EQ(wake->count, 1);
  EXPECT_EQ(wake->unit_ids, std::vector<std::string>{"u0"});
  ASSERT_FALSE(wake->fallbacks.empty());
  EXPECT_EQ(wake->fallbacks.front().instance_type, "g6.xlarge");  // the cold launch it replaced
  EXPECT_EQ(ColdNodes(plan), 0);
  EXPECT_EQ(RefillNodes(plan), 1);
  ASSERT_EQ(plan.placements.size(), 1u);
  const Placement& p = plan.placements[0];
  ASSERT_GE(p.launch_index, 0);
  EXPECT_EQ(&plan.launches[size_t(p.launch_index)], wake);
  EXPECT_EQ(p.launch_ordinal, 0);
  EXPECT_EQ(plan.warm_targets.at("gpu"), 1);
}

TEST(WarmPlan, ASpotLaunchGivesWayOnlyWhenTheWaitIsWorthTheOnDemandPrice) {
  Snapshot s = BaseSnapshot();
  DemandUnit u = Unit("u0", 1);
  u.interruptible = true;
  s.pending = {u};
  s.warm_nodes = {Stopped(s, "i-warm", "g6.xlarge", "us-east-1a")};
  Policy p = WarmPolicy(1);
  p.classes[0].interruptible = true;
  p.classes[0].wait_cost_usd_per_hour = 1;  // two minutes saved are worth 3 cents
  const Plan cheap_wait = MakePlan(s, p);
  EXPECT_EQ(WakeOf(cheap_wait), nullptr) << cheap_wait.summary;
  EXPECT_EQ(ColdNodes(cheap_wait), 1);
  p.classes[0].wait_cost_usd_per_hour = 1000;
  const Plan dear_wait = MakePlan(s, p);
  ASSERT_NE(WakeOf(dear_wait), nullptr) << dear_wait.summary;
  EXPECT_NE(WakeOf(dear_wait)->reason.find("woken from warm capacity"), std::string::npos);
  EXPECT_EQ(ColdNodes(dear_wait), 0);
}

TEST(WarmPlan, WorkPinnedElsewhereOrCapacityLaunchedAheadWakesNothing) {
  Snapshot s = BaseSnapshot();
  DemandUnit u = Unit("u0", 1);
  u.zones = {"us-east-1b"};
  s.pending = {u};
  s.warm_nodes = {Stopped(s, "i-warm", "g6.xlarge", "us-east-1a")};
  const Plan pinned = MakePlan(s, WarmPolicy(1));
  EXPECT_EQ(WakeOf(pinned), nullptr);
  EXPECT_EQ(ColdNodes(pinned), 1);
  // A node the plan opens for forecast units only: nobody waits for it.
  Snapshot ahead = BaseSnapshot();
  ahead.warm_nodes = s.warm_nodes;
  DemandForecast f;
  f.workload_class = "inference";
  f.horizon = f.lead_time = Seconds(180);
  f.levels = {{0.5, 1}, {0.9, 1}, {0.99, 1}};
  ahead.forecasts = {f};
  Policy p = WarmPolicy(1);
  p.classes[0].forecast = ForecastPolicy{};
  p.classes[0].wait_cost_usd_per_hour = 1000;
  const Plan plan = MakePlan(ahead, p);
  EXPECT_EQ(WakeOf(plan), nullptr) << plan.summary;
}

TEST(WarmPlan, AutoSizeIsTheForecastRiseInWarmNodesWithinTheCostCap) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "a", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r0", 1)}));
  DemandForecast f;
  f.workload_class = "inference";
  f.demand_gpus = 1;
  f.horizon = f.lead_time = Seconds(180);
  f.levels = {{0.5, 2}, {0.9, 4}, {0.99, 9}};
  s.forecasts = {f};
  Policy p = WarmPolicy(0);
  p.pools[0].warm->size.reset();  // auto
  p.classes[0].forecast = ForecastPolicy{};  // quantile 0.9: a rise of 3 GPUs
  p.classes[0].forecast->max_idle_usd_per_hour = 0;
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).size, 3);
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(RefillNodes(plan), 3);
  EXPECT_TRUE(HasNote(plan, "pool gpu: warm capacity 3 x g6.xlarge (auto")) << plan.summary;
  // Each stopped node costs 100 GiB of volume: a cap of two nodes' worth keeps two.
  p.pools[0].warm->max_usd_per_hour = 2.5 * s.default_volume_gib * s.volume_usd_per_gib_hour;
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).size, 2);
  EXPECT_NE(WarmTargetOf(s, p, p.pools[0]).note.find("capped at 2"), std::string::npos);
  // A fixed size past the cap is cut to it too.
  p.pools[0].warm->size = 5;
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).size, 2);
  p.pools[0].warm->size.reset();
  // No forecast yet: none.
  s.forecasts.clear();
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).size, 0);
}

TEST(WarmPlan, SurplusNodesGoOnlyOnceTheirVolumesCostWhatARefillWould) {
  // A g6.xlarge refill runs about three minutes at $0.805/h (4 cents); its
  // 100 GiB stopped cost about 1.1 cents an hour: kept about 3.7 hours.
  Snapshot s = BaseSnapshot();
  s.warm_nodes = {Stopped(s, "i-old", "g6.xlarge", "us-east-1a", Seconds(5 * 3600)),
                  Stopped(s, "i-mid", "g6.xlarge", "us-east-1b", Seconds(2 * 3600)),
                  Stopped(s, "i-new", "g6.xlarge", "us-east-1a", Seconds(600))};
  const Plan plan = MakePlan(s, WarmPolicy(1));
  ASSERT_EQ(plan.terminations.size(), 1u) << plan.summary;
  EXPECT_EQ(plan.terminations[0].instance_id, "i-old");
  EXPECT_TRUE(plan.terminations[0].warm);
  EXPECT_EQ(RefillNodes(plan), 0);
  s.time += Seconds(2 * 3600);  // i-mid is now 4 hours stopped too
  const Plan later = MakePlan(s, WarmPolicy(1));
  EXPECT_EQ(later.terminations.size(), 2u);
}

TEST(WarmPlan, EmptyOnDemandNodesAreStoppedIntoWarmCapacityBeforeAnyRefill) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "idle", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.push_back(MakeNode(s, "busy", "g6.xlarge", "us-east-1b", CapacityType::kOnDemand, {Unit("r0", 1)}));
  const Plan plan = MakePlan(s, WarmPolicy(2));
  ASSERT_EQ(plan.terminations.size(), 1u) << plan.summary;
  EXPECT_EQ(plan.terminations[0].node_id, "idle");
  EXPECT_TRUE(plan.terminations[0].park);
  EXPECT_FALSE(plan.terminations[0].warm);
  EXPECT_EQ(RefillNodes(plan), 1);  // the second warm node is launched
  // Without warm capacity the idle node is simply terminated.
  const Plan cold = MakePlan(s, BasePolicy());
  ASSERT_EQ(cold.terminations.size(), 1u);
  EXPECT_FALSE(cold.terminations[0].park);
}

TEST(WarmPlan, PlanCostsCountTheStoppedNodesVolumes) {
  Snapshot s = BaseSnapshot();
  s.warm_nodes = {Stopped(s, "i-a", "g6.xlarge", "us-east-1a"), Stopped(s, "i-b", "g6.xlarge", "us-east-1b")};
  const double each = s.default_volume_gib * s.volume_usd_per_gib_hour;
  const Plan plan = MakePlan(s, WarmPolicy(2));
  EXPECT_NEAR(plan.cost_before_usd_per_hour, 2 * each, 1e-9);
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 2 * each, 1e-9);
  // Without the warm nodes nothing costs anything, and the refills' stopped cost is what comes.
  Snapshot empty = BaseSnapshot();
  const Plan refill = MakePlan(empty, WarmPolicy(2));
  EXPECT_EQ(RefillNodes(refill), 2);
  EXPECT_NEAR(refill.cost_after_usd_per_hour, 2 * each, 1e-9);
}

TEST(WarmPlan, AnAutoScalingGroupKeepsItsOwnWarmPool) {
  Snapshot s = BaseSnapshot();
  Policy p = WarmPolicy(3);
  p.pools[0].actuation = Actuation::kAsg;
  p.pools[0].auto_scaling_group = "gpu-asg";
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(RefillNodes(plan), 0);
  EXPECT_EQ(plan.warm_targets.at("gpu"), 3);
}

TEST(WarmPlan, TheWarmTypeStaysWhileItHoldsTheWork) {
  // Stopped 4-GPU nodes already hold a 1-GPU class's work: refills keep
  // their type rather than switching to the cheapest 1-GPU type.
  Snapshot s = BaseSnapshot();
  s.warm_nodes = {Stopped(s, "i-big", "g6.12xlarge", "us-east-1a")};
  s.pending = {};
  const Plan plan = MakePlan(s, WarmPolicy(2));
  ASSERT_EQ(RefillNodes(plan), 1);
  for (const LaunchAction& l : plan.launches) {
    if (l.into_warm) {
      EXPECT_EQ(l.offering.instance_type, "g6.12xlarge");
    }
  }
  // Work that the kept type cannot hold (8 GPUs) moves the choice on.
  s.pending = {Unit("big", 8)};
  int refills = 0;
  for (const LaunchAction& l : MakePlan(s, WarmPolicy(3)).launches) {
    if (!l.into_warm) continue;
    refills += l.count;
    EXPECT_NE(l.offering.instance_type, "g6.12xlarge");
  }
  EXPECT_EQ(refills, 2);
}

TEST(WarmPlan, ASpotWarmNodeStandsInForASpotLaunchAtTheSpotPrice) {
  // The wait is valued low (two minutes: 3 cents): an on-demand warm node
  // is not worth its price above the planned spot node; a spot one of the
  // same offering costs nothing above it, so it is woken.
  Snapshot s = BaseSnapshot();
  DemandUnit u = Unit("u0", 1);
  u.interruptible = true;
  s.pending = {u};
  Policy p = WarmPolicy(1);
  p.classes[0].interruptible = true;
  p.classes[0].wait_cost_usd_per_hour = 1;
  s.warm_nodes = {Stopped(s, "i-od", "g6.xlarge", "us-east-1a")};
  const Plan on_demand = MakePlan(s, p);
  EXPECT_EQ(WakeOf(on_demand), nullptr) << on_demand.summary;
  s.warm_nodes = {Stopped(s, "i-spot", "g6.xlarge", "us-east-1a", Seconds(600), CapacityType::kSpot)};
  p.pools[0].warm->capacity_type = WarmCapacityType::kSpot;
  const Plan spot = MakePlan(s, p);
  const LaunchAction* wake = WakeOf(spot);
  ASSERT_NE(wake, nullptr) << spot.summary;
  EXPECT_EQ(wake->wake_instance_ids, std::vector<std::string>{"i-spot"});
  EXPECT_EQ(wake->offering.capacity_type, CapacityType::kSpot);
  EXPECT_NEAR(wake->usd_per_hour, FindOffering(s, "g6.xlarge", "us-east-1a", CapacityType::kSpot).usd_per_hour, 1e-9);
  EXPECT_EQ(ColdNodes(spot), 0);
  // Its offering marked short (a capacity error): it would not start, so
  // the work is launched as planned.
  s.warm_nodes[0].offering.available = false;
  const Plan shortage = MakePlan(s, p);
  EXPECT_EQ(WakeOf(shortage), nullptr) << shortage.summary;
  EXPECT_EQ(ColdNodes(shortage), 1);
}

TEST(WarmPlan, ASpotWarmNodeNeverStandsInForOnDemandWork) {
  // The plan's spot shares hold: work planned on on-demand (here, work
  // that may not run on spot) is not woken on a spot node however dear
  // its wait.
  Snapshot s = BaseSnapshot();
  s.pending = {OnDemandOnly(Unit("u0", 1))};
  s.warm_nodes = {Stopped(s, "i-spot", "g6.xlarge", "us-east-1a", Seconds(600), CapacityType::kSpot)};
  Policy p = WarmPolicy(1);
  p.pools[0].warm->capacity_type = WarmCapacityType::kSpot;
  p.classes[0].wait_cost_usd_per_hour = 1000;
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(WakeOf(plan), nullptr) << plan.summary;
  EXPECT_EQ(ColdNodes(plan), 1);
}

TEST(WarmPlan, TheCapacityTypeSplitsTheSizeIntoSpotAndOnDemandRefills) {
  Snapshot s = BaseSnapshot();
  Policy p = WarmPolicy(4);
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).spot, 0) << "on-demand by default";
  EXPECT_EQ(RefillNodesOf(MakePlan(s, p), CapacityType::kOnDemand), 4);
  p.pools[0].warm->capacity_type = WarmCapacityType::kSpot;
  const Plan spot = MakePlan(s, p);
  EXPECT_EQ(RefillNodesOf(spot, CapacityType::kSpot), 4) << spot.summary;
  EXPECT_EQ(RefillNodesOf(spot, CapacityType::kOnDemand), 0);
  EXPECT_TRUE(HasNote(spot, "4 of them spot")) << spot.summary;
  // auto: the share the classes may hold on spot (the smallest of theirs).
  p.pools[0].warm->capacity_type = WarmCapacityType::kAuto;
  p.classes[0].max_spot_share = 0.7;
  p.classes[1].max_spot_share = 0.5;
  EXPECT_EQ(WarmTargetOf(s, p, p.pools[0]).spot, 2);
  const Plan mixed = MakePlan(s, p);
  EXPECT_EQ(RefillNodesOf(mixed, CapacityType::kSpot), 2) << mixed.summary;
  EXPECT_EQ(RefillNodesOf(mixed, CapacityType::kOnDemand), 2);
  // Each part is kept to its own size: two stopped spot nodes fill the
  // spot part only.
  s.warm_nodes = {Stopped(s, "i-s1", "g6.xlarge", "us-east-1a", Seconds(600), CapacityType::kSpot),
                  Stopped(s, "i-s2", "g6.xlarge", "us-east-1b", Seconds(600), CapacityType::kSpot)};
  const Plan kept = MakePlan(s, p);
  EXPECT_EQ(RefillNodesOf(kept, CapacityType::kSpot), 0) << kept.summary;
  EXPECT_EQ(RefillNodesOf(kept, CapacityType::kOnDemand), 2);
  // Spot offerings above spot's price cap: the spot part is not kept.
  p.spot.max_price_fraction_of_on_demand = 0.3;  // the fixture's spot is 40 % of on-demand
  const WarmTarget capped = WarmTargetOf(BaseSnapshot(), p, p.pools[0]);
  EXPECT_EQ(capped.spot, 0);
  EXPECT_EQ(capped.size, 2);
  EXPECT_NE(capped.note.find("no spot offering within spot's limits"), std::string::npos) << capped.note;
}

TEST(WarmPlan, OnlySpotNodesLaunchedToStopOnInterruptionAreParked) {
  Snapshot s = BaseSnapshot();
  Node stoppable = MakeNode(s, "stoppable", "g6.xlarge", "us-east-1a", CapacityType::kSpot);
  stoppable.labels[kWarmInterruptionTag] = "stop";
  s.nodes = {stoppable, MakeNode(s, "one-time", "g6.xlarge", "us-east-1b", CapacityType::kSpot)};
  Policy p = WarmPolicy(2);
  p.pools[0].warm->capacity_type = WarmCapacityType::kSpot;
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 2u) << plan.summary;
  for (const TerminationAction& t : plan.terminations) {
    EXPECT_EQ(t.park, t.node_id == "stoppable") << t.node_id << ": " << t.reason;
  }
  EXPECT_EQ(RefillNodesOf(plan, CapacityType::kSpot), 1);
}

}  // namespace
}  // namespace gpuscaler::warm_plan_test
