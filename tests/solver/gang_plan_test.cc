// Gangs: multi-node jobs planned whole, in one zone, priced as one risk, and
// never split by consolidation (docs/snapshot.md#gangs).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "consolidation_scenes.h"
#include "fixtures.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ConsolidationSnapshot;
using testing::FindOffering;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Unit;

DemandUnit Member(const std::string& gang, int index, int size, int gpus) {
  DemandUnit u = Unit(gang + "/" + std::to_string(index), gpus, 8000, 65536, "training");
  u.gang = GangMembership{gang, size, /*same_zone=*/true, /*same_instance_type=*/false};
  return u;
}

// Zone of every placement of `prefix`'s units, from the launch or node it is on.
std::set<std::string> ZonesOf(const Snapshot& s, const Plan& plan, const std::string& prefix) {
  std::set<std::string> zones;
  for (const Placement& p : plan.placements) {
    if (p.unit_id.rfind(prefix, 0) != 0) continue;
    if (p.launch_index >= 0) {
      zones.insert(plan.launches[size_t(p.launch_index)].offering.zone);
    } else {
      for (const Node& n : s.nodes)
        if (n.id == p.node_id) zones.insert(n.offering.zone);
    }
  }
  return zones;
}

int PlacedOf(const Plan& plan, const std::string& prefix) {
  int n = 0;
  for (const Placement& p : plan.placements) n += p.unit_id.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

// Free room on an existing node in one zone and cheaper new nodes in the
// other pull lone units apart; a gang's members stay in one zone.
TEST(GangPlan, AGangIsPlacedInOneZone) {
  Snapshot s = BaseSnapshot();
  for (Offering& o : s.offerings) {
    if (o.zone == "us-east-1b" && o.capacity_type == CapacityType::kSpot) o.usd_per_hour *= 1.5;
  }
  s.nodes.push_back(MakeNode(s, "room-b", "g5.12xlarge", "us-east-1b", CapacityType::kOnDemand));
  Policy p = BasePolicy();
  p.disruption.consolidation = false;
  for (int i = 0; i < 3; ++i) {
    DemandUnit lone = Member("lone", i, 3, 4);
    lone.gang.reset();
    s.pending.push_back(lone);
  }
  const Plan apart = MakePlan(s, p);
  ASSERT_EQ(PlacedOf(apart, "lone/"), 3);
  ASSERT_GT(ZonesOf(s, apart, "lone/").size(), 1u) << "the scene must pull lone units apart";

  s.pending.clear();
  for (int i = 0; i < 3; ++i) s.pending.push_back(Member("job", i, 3, 4));
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(PlacedOf(plan, "job/"), 3);
  EXPECT_EQ(ZonesOf(s, plan, "job/").size(), 1u);
  EXPECT_TRUE(plan.unplaced.empty());
  // Its nodes are bought all or none, with fallbacks in its zone only.
  ASSERT_FALSE(plan.launches.empty());
  for (const LaunchAction& l : plan.launches) {
    EXPECT_TRUE(l.all_or_nothing);
    for (const Offering& o : l.fallbacks) EXPECT_EQ(o.zone, l.offering.zone);
  }
  EXPECT_NE(FormatPlanJsonLine(plan).find("\"all_or_nothing\":true"), std::string::npos);
  for (const LaunchAction& l : apart.launches) EXPECT_FALSE(l.all_or_nothing) << "lone units";
  EXPECT_EQ(FormatPlanJsonLine(apart).find("all_or_nothing"), std::string::npos);
}

// A pool cap of three nodes and four 8-GPU members: none is placed and no
// node is launched for them; other work still is.
TEST(GangPlan, AGangThatCannotBePlacedWholeIsNotPlacedAtAll) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  p.pools[0].max_nodes = 3;
  for (int i = 0; i < 4; ++i) s.pending.push_back(Member("big", i, 4, 8));
  s.pending.push_back(Unit("lone", 1));
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(PlacedOf(plan, "big/"), 0);
  EXPECT_EQ(PlacedOf(plan, "lone"), 1);
  EXPECT_EQ(LaunchedNodes(plan), 1);
  int incomplete = 0;
  for (const UnplacedUnit& u : plan.unplaced) {
    if (u.reason != UnplacedReason::kGangIncomplete) continue;
    ++incomplete;
    EXPECT_NE(u.detail.find("gang big (4 members)"), std::string::npos) << u.detail;
    EXPECT_NE(u.detail.find("pool-max"), std::string::npos) << u.detail;
  }
  EXPECT_EQ(incomplete, 4);
  EXPECT_NE(plan.summary.find("unplaced"), std::string::npos) << plan.summary;

  p.pools[0].max_nodes = 5;
  EXPECT_EQ(PlacedOf(MakePlan(s, p), "big/"), 4) << "with room for all four, all are placed";
}

TEST(GangPlan, AGangWithMembersMissingWaitsForThem) {
  Snapshot s = BaseSnapshot();
  for (int i = 0; i < 3; ++i) s.pending.push_back(Member("part", i, 4, 4));
  const Plan plan = MakePlan(s, BasePolicy());
  EXPECT_EQ(LaunchedNodes(plan), 0);
  ASSERT_EQ(plan.unplaced.size(), 3u);
  EXPECT_EQ(plan.unplaced[0].reason, UnplacedReason::kGangIncomplete);
  EXPECT_NE(plan.unplaced[0].detail.find("3 of its 4 members exist"), std::string::npos) << plan.unplaced[0].detail;
}

// Members already running fix the zone of the rest.
TEST(GangPlan, PendingMembersJoinTheZoneOfRunningOnes) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(
      MakeNode(s, "runs-b", "g5.12xlarge", "us-east-1b", CapacityType::kOnDemand, {Member("job", 0, 3, 4)}));
  for (Offering& o : s.offerings) {
    if (o.zone == "us-east-1b") o.usd_per_hour *= 1.3;
  }
  for (int i = 1; i < 3; ++i) s.pending.push_back(Member("job", i, 3, 4));
  const Plan plan = MakePlan(s, BasePolicy());
  EXPECT_EQ(PlacedOf(plan, "job/"), 2);
  EXPECT_EQ(ZonesOf(s, plan, "job/"), std::set<std::string>{"us-east-1b"});
}

// One reclaim loses the whole gang's work since its checkpoint: spot that
// pays for eight lone jobs does not pay for a gang of eight.
TEST(GangPlan, AGangPricesSpotRiskAsOneJob) {
  const auto plan_for = [](bool gang, double co_reclaim_share = 0) {
    Snapshot s = BaseSnapshot({"us-east-1a"});
    for (Offering& o : s.offerings) o.co_reclaim_share = co_reclaim_share;
    for (int i = 0; i < 8; ++i) {
      DemandUnit u = Member("g", i, 8, 8);
      u.expected_runtime = Seconds(24 * 3600);
      u.checkpoint_interval = Seconds(4 * 3600);
      if (!gang) u.gang.reset();
      s.pending.push_back(u);
    }
    return MakePlan(s, BasePolicy());
  };
  const auto spot_nodes = [](const Plan& plan) {
    int n = 0;
    for (const LaunchAction& l : plan.launches) n += l.offering.capacity_type == CapacityType::kSpot ? l.count : 0;
    return n;
  };
  const Plan lone = plan_for(false);
  const Plan gang = plan_for(true);
  EXPECT_EQ(PlacedOf(lone, "g/"), 8);
  EXPECT_EQ(PlacedOf(gang, "g/"), 8);
  EXPECT_EQ(spot_nodes(lone), LaunchedNodes(lone));
  EXPECT_EQ(spot_nodes(gang), 0);
  // Where reclaims take a whole zone's spot at once, eight nodes are hit no
  // more often than one: the gang goes to spot as the lone jobs do.
  const Plan together = plan_for(true, 1.0);
  EXPECT_EQ(spot_nodes(together), LaunchedNodes(together));

  const Snapshot s = BaseSnapshot({"us-east-1a"});
  const Offering& spot = FindOffering(s, "g5.48xlarge", "us-east-1a", CapacityType::kSpot);
  DemandUnit member = Member("g", 0, 8, 8);
  DemandUnit alone = member;
  alone.gang.reset();
  EXPECT_DOUBLE_EQ(ExpectedInterruptionUsdPerHour(member, spot, s.instance_types[2]),
                   8 * ExpectedInterruptionUsdPerHour(alone, spot, s.instance_types[2]));
}

TEST(GangPlan, GangReachRunsFromTheGangsSizeToOneAsReclaimsGoTogether) {
  EXPECT_EQ(GangInterruptionReach(1, 0), 1);
  EXPECT_EQ(GangInterruptionReach(8, 0), 8);
  EXPECT_EQ(GangInterruptionReach(8, 1), 1);
  EXPECT_DOUBLE_EQ(GangInterruptionReach(2, 0.5), 1.5);  // (1 - 0.25) / 0.5
  EXPECT_LT(GangInterruptionReach(16, 0.3), GangInterruptionReach(16, 0.1));
}

// ConsolidationSnapshot moves "small"'s unit onto "big" (planner_consolidation_test); as a
// gang member it stays.
TEST(GangPlan, ConsolidationNeverMovesARunningGangMemberAlone) {
  Snapshot s = ConsolidationSnapshot();
  const auto small_removed = [](const Plan& plan) {
    for (const TerminationAction& t : plan.terminations)
      if (t.node_id == "small") return true;
    return false;
  };
  ASSERT_TRUE(small_removed(MakePlan(s, BasePolicy())));
  for (Node& n : s.nodes) {
    if (n.id == "small") n.running[0].gang = GangMembership{"job", 2, true, false};
  }
  EXPECT_FALSE(small_removed(MakePlan(s, BasePolicy())));
}

TEST(GangPlan, GangMembershipRoundTripsThroughSnapshotJson) {
  Snapshot s = BaseSnapshot({"us-east-1a"});
  s.pending.push_back(Member("job", 0, 2, 4));
  s.pending.back().gang->same_instance_type = true;
  s.pending.push_back(Unit("lone", 1));
  const std::string text = FormatSnapshotJson(s);
  EXPECT_EQ(text.find("\"gang\"", text.find("\"lone\"")), std::string::npos) << "no gang, no field";
  Result<Snapshot> back = ParseSnapshotJson(text, "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().ToString();
  ASSERT_TRUE(back->pending[0].gang);
  EXPECT_EQ(*back->pending[0].gang, *s.pending[0].gang);
  EXPECT_FALSE(back->pending[1].gang);
  Result<Snapshot> bad = ParseSnapshotJson(
      R"({"pending": [{"id": "a", "gang": {"name": "j", "size": 1}}]})", "snap.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().ToString().find("pending[0].gang.size"), std::string::npos) << bad.error().ToString();
}

// A pool whose gangs go into a cluster placement group: spot in us-east-1a
// is the cheaper, and node "held" in us-east-1b runs in the group (with a
// member of another gang, so it stays).
struct PlacementGroupScene {
  Snapshot snapshot = BaseSnapshot();
  Policy policy = BasePolicy();
  PlacementGroupScene() {
    for (Offering& o : snapshot.offerings) {
      if (o.zone == "us-east-1b") o.usd_per_hour *= 1.5;
    }
    policy.pools[0].placement_group = "train-pg";
    policy.disruption.consolidation = false;
    snapshot.nodes.push_back(MakeNode(snapshot, "held", "g5.48xlarge", "us-east-1b", CapacityType::kOnDemand,
                                      {Member("earlier", 0, 2, 8)}));
    snapshot.nodes.back().placement_group = "train-pg";
    for (int i = 0; i < 2; ++i) snapshot.pending.push_back(Member("job", i, 2, 8));
  }
};

TEST(GangPlan, AGangGoesToTheZoneWhereItsPoolsPlacementGroupIsInUse) {
  PlacementGroupScene scene;
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(PlacedOf(plan, "job/"), 2);
  EXPECT_EQ(ZonesOf(scene.snapshot, plan, "job/"), std::set<std::string>{"us-east-1b"});

  // The same node outside the group, or a pool that names no group: the
  // cheaper zone.
  PlacementGroupScene other_group;
  other_group.snapshot.nodes[0].placement_group = "";
  EXPECT_EQ(ZonesOf(other_group.snapshot, MakePlan(other_group.snapshot, other_group.policy), "job/"),
            std::set<std::string>{"us-east-1a"});
  PlacementGroupScene no_group;
  no_group.policy.pools[0].placement_group = "";
  EXPECT_EQ(ZonesOf(no_group.snapshot, MakePlan(no_group.snapshot, no_group.policy), "job/"),
            std::set<std::string>{"us-east-1a"});
}

TEST(GangPlan, AGangThatCannotGoWhereItsPlacementGroupIsWaitsAndSaysSo) {
  PlacementGroupScene scene;
  for (DemandUnit& u : scene.snapshot.pending) u.zones = {"us-east-1a"};
  const Plan plan = MakePlan(scene.snapshot, scene.policy);
  EXPECT_EQ(PlacedOf(plan, "job/"), 0);
  ASSERT_EQ(plan.unplaced.size(), 2u);
  EXPECT_EQ(plan.unplaced[0].reason, UnplacedReason::kGangIncomplete);
  EXPECT_NE(plan.unplaced[0].detail.find("placement group is in use in us-east-1b"), std::string::npos)
      << plan.unplaced[0].detail;
  EXPECT_EQ(LaunchedNodes(plan), 0);
}

}  // namespace
}  // namespace gpuscaler
