// The planner's spot choices: spot only where cheaper after interruption
// risk, paused classes and spent lost-work budgets, the price ceiling, a
// class's spot share and its credit, the risk model, max_pool_share,
// reclaimed pools and the replacement's wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_spot_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::ReasonCounts;
using testing::Unit;
using testing::Units;

TEST(Planner, NeverPutsNonInterruptibleWorkOnSpot) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 6, OnDemandOnly(Unit("", 1)));
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  ASSERT_FALSE(plan.launches.empty());
  for (const auto& l : plan.launches) EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand);
  // The class flag is enough too.
  s.pending = Units("u", 6, Unit("", 1));
  p.classes[0].interruptible = false;
  for (const auto& l : MakePlan(s, p).launches) EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand);
}

TEST(Planner, UsesSpotOnlyWhereCheaperInExpectation) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, Unit("", 1));
  Plan plan = MakePlan(s, BasePolicy());
  ASSERT_FALSE(plan.launches.empty());
  EXPECT_EQ(plan.launches[0].offering.capacity_type, CapacityType::kSpot);
  EXPECT_NE(plan.launches[0].reason.find("cheaper than on-demand after interruption risk"), std::string::npos)
      << plan.launches[0].reason;
  EXPECT_GT(plan.expected_interruption_usd_per_hour, 0);
  // Frequent interruptions of long work without checkpoints: on-demand wins.
  for (auto& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot) o.interruptions_per_hour = 0.9;
  for (auto& u : s.pending) {
    u.checkpoint_interval = Seconds(0);
    u.expected_runtime = Seconds(4 * 3600);
  }
  plan = MakePlan(s, BasePolicy());
  ASSERT_FALSE(plan.launches.empty());
  for (const auto& l : plan.launches) EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand) << l.reason;
}

TEST(Planner, KeepsSpotPausedClassesOnOnDemandWithTheReason) {
  Snapshot s = BaseSnapshot();
  // Free room on a spot node, which a paused class must not use either.
  s.nodes.push_back(MakeNode(s, "spot", "g5.12xlarge", "us-east-1a", CapacityType::kSpot, {Unit("r", 1, 2000, 8192, "training")}));
  s.pending = Units("i", 4, Unit("", 1));
  for (auto& u : Units("t", 4, Unit("", 1, 2000, 8192, "training"))) s.pending.push_back(u);
  s.spot_paused_classes = {"inference"};
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  std::map<std::string, CapacityType> capacity_of;
  for (const auto& pl : plan.placements)
    if (!pl.node_id.empty()) capacity_of[pl.unit_id] = CapacityType::kSpot;  // the only node
  for (const auto& l : plan.launches) {
    for (const auto& id : l.unit_ids) capacity_of[id] = l.offering.capacity_type;
    if (l.offering.capacity_type == CapacityType::kOnDemand) {
      EXPECT_NE(l.reason.find("spot paused after a capacity error"), std::string::npos) << l.reason;
    }
  }
  for (const auto& [id, capacity] : capacity_of)
    EXPECT_EQ(capacity, id[0] == 'i' ? CapacityType::kOnDemand : CapacityType::kSpot) << id;
  EXPECT_NE(plan.summary.find("class inference: spot paused after a capacity error"), std::string::npos) << plan.summary;
  ExpectValid(s, p, plan);

  // A pool that buys only spot leaves the paused class unplaced, saying why.
  s.nodes.clear();
  p.pools[0].capacity_types = {CapacityType::kSpot};
  const Plan spot_only = MakePlan(s, p);
  EXPECT_EQ(ReasonCounts(spot_only)[UnplacedReason::kCapacityUnavailable], 4);
  for (const auto& u : spot_only.unplaced)
    EXPECT_NE(u.detail.find("spot paused after a capacity error"), std::string::npos) << u.detail;
}

// A class whose lost-work budget the controller found spent gets no new spot
// work: its pending units go to on-demand (not even into a spot node's free
// room), its running units are not moved onto spot by consolidation, and
// the reasons say why; other classes keep spot, and what already runs on
// spot stays.
TEST(Planner, AClassWithItsLostWorkBudgetSpentGetsNoNewSpotWork) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(
      MakeNode(s, "spot", "g5.12xlarge", "us-east-1a", CapacityType::kSpot, {Unit("r", 1, 2000, 8192, "training")}));
  s.pending = Units("i", 4, Unit("", 1));
  for (auto& u : Units("t", 4, Unit("", 1, 2000, 8192, "training"))) s.pending.push_back(u);
  s.spot_budget_spent_classes = {"inference"};
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  std::map<std::string, CapacityType> capacity_of;
  for (const auto& pl : plan.placements)
    if (pl.node_id == "spot") capacity_of[pl.unit_id] = CapacityType::kSpot;
  for (const auto& l : plan.launches) {
    for (const auto& id : l.unit_ids) capacity_of[id] = l.offering.capacity_type;
    if (l.offering.capacity_type == CapacityType::kOnDemand) {
      EXPECT_NE(l.reason.find("spot paused, lost-work budget spent"), std::string::npos) << l.reason;
    }
  }
  ASSERT_EQ(capacity_of.size(), 8u) << plan.summary;
  for (const auto& [id, capacity] : capacity_of)
    EXPECT_EQ(capacity, id[0] == 'i' ? CapacityType::kOnDemand : CapacityType::kSpot) << id;
  EXPECT_NE(plan.summary.find("class inference: spot paused, lost-work budget spent"), std::string::npos)
      << plan.summary;
  ExpectValid(s, p, plan);

  // Consolidation: a running inference unit on an on-demand node fits the
  // spot node's free room. Without the mark it moves there; with it, it
  // stays on on-demand.
  Snapshot c = BaseSnapshot();
  c.nodes.push_back(
      MakeNode(c, "spot", "g5.12xlarge", "us-east-1a", CapacityType::kSpot, {Unit("r", 1, 2000, 8192, "training")}));
  c.nodes.push_back(MakeNode(c, "od", "g5.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("m", 1)}));
  auto terminated = [](const Plan& pl, const std::string& node) {
    return std::any_of(pl.terminations.begin(), pl.terminations.end(),
                       [&](const TerminationAction& t) { return t.node_id == node; });
  };
  const Plan moves = MakePlan(c, p);
  EXPECT_TRUE(terminated(moves, "od")) << moves.summary;
  c.spot_budget_spent_classes = {"inference"};
  const Plan held = MakePlan(c, p);
  EXPECT_FALSE(terminated(held, "od")) << held.summary;
  for (const auto& pl : held.placements) EXPECT_NE(pl.unit_id, "m") << held.summary;
  ExpectValid(c, p, held);
}

TEST(Planner, SkipsSpotAboveThePriceCeilingForOnDemand) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 2, Unit("", 1));
  Policy p = BasePolicy();
  p.spot.max_price_fraction_of_on_demand = 0.35;  // spot is 40 % here
  const Plan plan = MakePlan(s, p);
  ASSERT_FALSE(plan.launches.empty());
  for (const auto& l : plan.launches) {
    EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand);
    for (const auto& f : l.fallbacks) EXPECT_EQ(f.capacity_type, CapacityType::kOnDemand);
  }
}

TEST(Planner, CapsTheSpotShareOfAClass) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 8, Unit("", 1));
  Policy p = BasePolicy();
  p.classes[0].max_spot_share = 0.5;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty());
  double spot = 0, total = 0;
  for (const auto& l : plan.launches) {
    total += double(l.unit_ids.size());
    if (l.offering.capacity_type == CapacityType::kSpot) spot += double(l.unit_ids.size());
  }
  EXPECT_EQ(total, 8);
  EXPECT_LE(spot, 4);
  EXPECT_GT(spot, 0);
  ExpectValid(s, p, plan);
}

// A class's credit over its spot_share_window (spot_floor_credit_gpus) moves
// the moment's floor by one unit, down while positive and up while negative:
// a lone unit of a 70 % spot class goes to spot on any credit; with three
// units already on spot a fourth goes to on-demand whatever the credit
// (0.7 x 4 + 1 < 4); any debt keeps one more of ten on on-demand.
TEST(Planner, AClassesCreditOverItsSpotShareWindowMovesTheFloorByOneUnit) {
  Policy p = BasePolicy();
  p.classes[0].max_spot_share = 0.7;
  auto spot_units = [&](const Snapshot& s) {
    const Plan plan = MakePlan(s, p);
    ExpectValid(s, p, plan);
    EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
    int spot = 0;
    for (const auto& l : plan.launches)
      if (l.offering.capacity_type == CapacityType::kSpot) spot += int(l.unit_ids.size());
    return spot;
  };
  Snapshot lone = BaseSnapshot();
  lone.pending = Units("u", 1, Unit("", 1));
  EXPECT_EQ(spot_units(lone), 0) << "held at every placement: 0.7 x 1 < 1";
  lone.spot_floor_credit_gpus = {{"inference", 1.0}};
  EXPECT_EQ(spot_units(lone), 1);
  const Plan lowered = MakePlan(lone, p);
  EXPECT_TRUE(testing::HasNote(lowered, "class inference: on-demand floor one unit lower for new work (held on average: +1.00 GPUs"))
      << lowered.summary;
  lone.spot_floor_credit_gpus = {{"inference", 0.05}};
  EXPECT_EQ(spot_units(lone), 1) << "any credit: a whole unit";
  lone.spot_floor_credit_gpus = {{"inference", 0.0}};
  EXPECT_EQ(spot_units(lone), 0) << "no credit, no debt";
  lone.spot_floor_credit_gpus = {{"training", 5.0}};
  EXPECT_EQ(spot_units(lone), 0) << "another class's credit";

  Snapshot fourth = BaseSnapshot();
  for (int i = 0; i < 3; ++i)
    fourth.nodes.push_back(MakeNode(fourth, "s" + std::to_string(i), "g5.xlarge", "us-east-1a", CapacityType::kSpot,
                                    {Unit("r" + std::to_string(i), 1)}));
  fourth.pending = Units("u", 1, Unit("", 1));
  fourth.spot_floor_credit_gpus = {{"inference", 5.0}};
  EXPECT_EQ(spot_units(fourth), 0) << "one unit short at most";

  Snapshot ten = BaseSnapshot();
  ten.pending = Units("u", 10, Unit("", 1));
  EXPECT_EQ(spot_units(ten), 7);
  ten.spot_floor_credit_gpus = {{"inference", -3.0}};
  EXPECT_EQ(spot_units(ten), 6) << "one unit more, whatever the debt";
  ten.spot_floor_credit_gpus = {{"inference", -0.05}};
  EXPECT_EQ(spot_units(ten), 6);
  EXPECT_TRUE(testing::HasNote(MakePlan(ten, p), "class inference: on-demand floor one unit higher for new work (held on average: -0.05"));
}

// The credit lowers the floor for new work only: consolidation does not
// move a running unit of the class onto a spot node's free room on credit
// (nothing would move it back while the class is behind). Without a floor
// the same unit moves there.
TEST(Planner, ConsolidationMovesNoRunningWorkOntoSpotOnTheFloorsCredit) {
  Snapshot c = BaseSnapshot();
  c.nodes.push_back(
      MakeNode(c, "spot", "g5.12xlarge", "us-east-1a", CapacityType::kSpot, {Unit("r", 1, 2000, 8192, "training")}));
  c.nodes.push_back(MakeNode(c, "od", "g5.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("m", 1)}));
  auto moved_onto_spot = [&](const Plan& pl) {
    for (const auto& t : pl.terminations)
      if (t.node_id == "od") return true;
    return false;
  };
  Policy no_floor = BasePolicy();
  EXPECT_TRUE(moved_onto_spot(MakePlan(c, no_floor)));

  Policy floor = BasePolicy();
  floor.classes[0].max_spot_share = 0.7;
  c.spot_floor_credit_gpus = {{"inference", 1.0}};
  const Plan held = MakePlan(c, floor);
  EXPECT_FALSE(moved_onto_spot(held)) << held.summary;
  ExpectValid(c, floor, held);
}

TEST(Planner, ExpectedInterruptionCostFollowsTheRiskModel) {
  const Snapshot s = BaseSnapshot();
  const InstanceType& t = s.instance_types[1];  // g5.12xlarge, 4 GPUs
  const Offering& spot = testing::FindOffering(s, t.name, "us-east-1a", CapacityType::kSpot);
  DemandUnit u = Unit("u", 2);
  u.expected_runtime = Seconds(3600);
  u.checkpoint_interval = Seconds(1800);
  u.restart_cost = Seconds(360);
  // lost = min(0.5, 1)/2 + 0.1 = 0.35 h, then the replacement's launch
  // latency (the offering's 3 minutes, 0.05 h); value = 5.672 * 2/4.
  EXPECT_NEAR(ExpectedInterruptionUsdPerHour(u, spot, t), 0.05 * (0.35 + 0.05) * 5.672 / 2, 1e-9);
  EXPECT_NEAR(ExpectedInterruptionUsdPerHour(u, spot, t, 0.0), 0.05 * 0.35 * 5.672 / 2, 1e-9);
  // A learned warm-up of the family replaces the catalog's latency.
  Snapshot learned = s;
  EXPECT_NEAR(ReplacementWaitHours(learned, spot, t), 180.0 / 3600, 1e-12);
  learned.warmup_seconds_by_family["g5"] = 900;
  EXPECT_NEAR(ReplacementWaitHours(learned, spot, t), 0.25, 1e-12);
  u.checkpoint_interval = Seconds(0);  // all progress lost: runtime/2
  EXPECT_NEAR(LostHoursPerInterruption(u), 0.5 + 0.1, 1e-9);
  EXPECT_EQ(ExpectedInterruptionUsdPerHour(u, testing::FindOffering(s, t.name, "us-east-1a", CapacityType::kOnDemand), t), 0);
}

// The spot failure domain (family/zone) of an offering.
std::string DomainOf(const Snapshot& s, const Offering& o) {
  for (const auto& t : s.instance_types)
    if (t.name == o.instance_type) return t.family + "/" + o.zone;
  return o.instance_type + "/" + o.zone;
}

// GPUs of the class per spot failure domain (family/zone) that the plan
// launches.
std::map<std::string, int> SpotGpusByPool(const Plan& plan, const Snapshot& s) {
  std::map<std::string, int> out;
  for (const auto& l : plan.launches) {
    if (l.offering.capacity_type != CapacityType::kSpot) continue;
    int gpus = 0;
    for (const auto& id : l.unit_ids)
      for (const auto& u : s.pending)
        if (u.id == id) gpus += u.gpus;
    out[DomainOf(s, l.offering)] += gpus;
  }
  return out;
}

TEST(Planner, MaxPoolShareCountsEverySizeOfAFamilyInAZoneAsOnePool) {
  Snapshot s = BaseSnapshot();
  // One zone's spot is far cheaper than the others' for both 1-GPU g5 sizes:
  // a cap per size would put half the class on each size there, all of it
  // in one failure domain.
  for (auto& o : s.offerings) {
    if (o.capacity_type != CapacityType::kSpot) continue;
    const bool small = o.instance_type == "g5.xlarge" || o.instance_type == "g5.2xlarge";
    if (small && o.zone == "us-east-1a") o.usd_per_hour = o.instance_type == "g5.xlarge" ? 0.20 : 0.21;
  }
  s.pending = Units("u", 8, Unit("", 1));
  Policy p = BasePolicy();
  p.spot.max_pool_share = 0.5;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  const auto by_domain = SpotGpusByPool(plan, s);
  ASSERT_TRUE(by_domain.count("g5/us-east-1a")) << plan.summary;
  EXPECT_EQ(by_domain.at("g5/us-east-1a"), 4) << plan.summary;  // half of 8, over both sizes
  ExpectValid(s, p, plan);
}

TEST(Planner, MaxPoolShareSpreadsAClassAcrossSpotPools) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 8, Unit("", 1));
  Policy p = BasePolicy();
  const Plan piled = MakePlan(s, p);
  int most = 0;
  for (const auto& [pool, gpus] : SpotGpusByPool(piled, s)) most = std::max(most, gpus);
  ASSERT_GT(most, 2) << piled.summary;  // without the cap the cheapest pool takes more than a quarter

  p.spot.max_pool_share = 0.25;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  const auto by_pool = SpotGpusByPool(plan, s);
  int spot = 0;
  for (const auto& [pool, gpus] : by_pool) {
    EXPECT_LE(gpus, 2) << pool;
    spot += gpus;
  }
  EXPECT_GE(by_pool.size(), 2u) << plan.summary;
  EXPECT_GT(spot, 0);
  ExpectValid(s, p, plan);
  EXPECT_EQ(testing::CanonicalPlan(plan), testing::CanonicalPlan(MakePlan(s, p)));
}

TEST(Planner, MaxPoolShareKeepsNodesAlreadyOverItAndAddsNothingThere) {
  Snapshot s = BaseSnapshot();
  // Three units on a spot g5.12xlarge (one GPU free): 3 of the class's 4 GPUs
  // in one pool, over a cap of a quarter.
  s.nodes.push_back(MakeNode(s, "over", "g5.12xlarge", "us-east-1a", CapacityType::kSpot,
                             {Unit("r1", 1), Unit("r2", 1), Unit("r3", 1)}));
  s.pending = Units("u", 1, Unit("", 1));
  Policy p = BasePolicy();
  const Plan uncapped = MakePlan(s, p);
  ASSERT_EQ(uncapped.placements.size(), 1u) << uncapped.summary;  // the free GPU takes it without the cap
  EXPECT_EQ(uncapped.placements[0].node_id, "over");

  p.spot.max_pool_share = 0.25;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  for (const auto& pl : plan.placements) EXPECT_NE(pl.node_id, "over") << plan.summary;
  for (const auto& t : plan.terminations) EXPECT_NE(t.node_id, "over") << t.reason;
  // Nothing new in the failure domain (any g5 size in that zone).
  for (const auto& l : plan.launches)
    EXPECT_FALSE(l.offering.capacity_type == CapacityType::kSpot &&
                 DomainOf(s, l.offering) == "g5/us-east-1a");
  ExpectValid(s, p, plan);
}

TEST(Planner, PlacesNoNewSpotWorkInAReclaimedPool) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, Unit("", 1));
  Policy p = BasePolicy();
  const Plan before = MakePlan(s, p);
  std::set<std::string> spot_keys;
  for (const auto& l : before.launches)
    if (l.offering.capacity_type == CapacityType::kSpot) spot_keys.insert(l.offering.Key());
  ASSERT_FALSE(spot_keys.empty()) << before.summary;
  // The pool the plan chose, and a spot node there with free room, after a wave.
  const std::string reclaimed = *spot_keys.begin();
  const Offering* off = nullptr;
  for (const auto& o : s.offerings)
    if (o.Key() == reclaimed) off = &o;
  ASSERT_NE(off, nullptr);
  s.nodes.push_back(MakeNode(s, "left", off->instance_type, off->zone, CapacityType::kSpot));
  s.reclaimed_spot_pools = {reclaimed};
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  for (const auto& l : plan.launches) EXPECT_NE(l.offering.Key(), reclaimed) << plan.summary;
  for (const auto& pl : plan.placements) EXPECT_NE(pl.node_id, "left");
  EXPECT_NE(plan.summary.find("spot pool " + reclaimed + ": reclaimed in a wave of notices"), std::string::npos)
      << plan.summary;
  ExpectValid(s, p, plan);
  // After the cooldown the state no longer lists it: the pool is used again.
  s.reclaimed_spot_pools.clear();
  s.nodes.clear();
  const Plan after = MakePlan(s, p);
  bool back = false;
  for (const auto& l : after.launches) back = back || l.offering.Key() == reclaimed;
  EXPECT_TRUE(back) << after.summary;
}

TEST(Planner, TheReplacementsWaitIsPartOfTheSpotRisk) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 1, Unit("", 1));
  Policy p = BasePolicy();
  const Plan quick = MakePlan(s, p);
  ASSERT_EQ(quick.launches.size(), 1u);
  ASSERT_EQ(quick.launches[0].offering.capacity_type, CapacityType::kSpot) << quick.summary;
  // Replacement capacity that takes 30 hours to come: an interruption (0.05
  // an hour) now costs 30 h of the work's on-demand value on top of the lost
  // work, 1.5 times that value an hour, which spot's 60 % discount does not
  // pay for.
  s.warmup_seconds_by_family["g5"] = 30 * 3600;
  s.warmup_seconds_by_family["g6"] = 30 * 3600;
  const Plan slow = MakePlan(s, p);
  ASSERT_EQ(slow.launches.size(), 1u);
  EXPECT_EQ(slow.launches[0].offering.capacity_type, CapacityType::kOnDemand) << slow.summary;
  EXPECT_GT(quick.launches[0].expected_interruption_usd_per_hour, 0);
}

}  // namespace
}  // namespace gpuscaler::planner_spot_test
