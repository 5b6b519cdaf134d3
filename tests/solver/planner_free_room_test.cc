// The planner's free room by scarcity: existing free room goes to the units
// whose alternatives cost most, within priorities, and pending work leaves a
// risky spot node for room a new node leaves free.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_free_room_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::LaunchesOf;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;
using testing::Units;
using testing::WithModels;

// BaseSnapshot in us-east-1a and us-east-1e plus L40S nodes: g6e.xlarge in
// us-east-1a only, g6e.48xlarge in both zones, on-demand and spot.
Snapshot WithL40s() {
  Snapshot s = BaseSnapshot({"us-east-1a", "us-east-1e"});
  s.gpu_models.push_back({"NVIDIA-L40S", "l40s", 46068, {}});
  s.instance_types.push_back(testing::Type("g6e.xlarge", "g6e", "NVIDIA-L40S", 1, 46068, 4, 32));
  s.instance_types.push_back(testing::Type("g6e.48xlarge", "g6e", "NVIDIA-L40S", 8, 46068, 192, 1536));
  for (auto cap : {CapacityType::kOnDemand, CapacityType::kSpot}) {
    s.offerings.push_back(testing::MakeOffering("g6e.xlarge", "us-east-1a", cap, 1.861));
    for (const char* z : {"us-east-1a", "us-east-1e"})
      s.offerings.push_back(testing::MakeOffering("g6e.48xlarge", z, cap, 30.131));
  }
  return s;
}

std::string NodeOf(const Plan& plan, const std::string& unit) {
  for (const auto& pl : plan.placements)
    if (pl.unit_id == unit) return pl.node_id.empty() ? "launch:" + plan.launches[pl.launch_index].offering.instance_type : pl.node_id;
  return "";
}

TEST(Planner, GivesTheOnlyFreeL40sRoomInAZoneToTheUnitsPinnedThere) {
  // The only L40S room in us-east-1e: 6 free GPUs of an on-demand
  // g6e.48xlarge. Six 1-GPU units must run on L40S in us-east-1e; a 4-GPU
  // unit may run anywhere. Giving the room to the 4-GPU unit would leave
  // four pinned units for a new g6e.48xlarge ($30/h); the cheap plan puts
  // the 4-GPU unit on a new g6.12xlarge ($4.60/h).
  Snapshot s = WithL40s();
  s.nodes.push_back(MakeNode(s, "e-l40s", "g6e.48xlarge", "us-east-1e", CapacityType::kOnDemand, Units("r", 2, Unit("", 1))));
  DemandUnit pinned = OnDemandOnly(WithModels(Unit("", 1, 4000, 16384), {"l40s"}));
  pinned.zones = {"us-east-1e"};
  s.pending = Units("pinned-", 6, pinned);
  s.pending.push_back(OnDemandOnly(Unit("flexible", 4, 16000, 65536)));
  const Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(NodeOf(plan, "pinned-" + std::to_string(i)), "e-l40s");
  EXPECT_EQ(LaunchesOf(plan, "g6e.48xlarge"), 0);
  EXPECT_EQ(NodeOf(plan, "flexible"), "launch:g6.12xlarge");
  EXPECT_NEAR(plan.cost_after_usd_per_hour - plan.cost_before_usd_per_hour, 4.602, 1e-9);
  EXPECT_TRUE(plan.unplaced.empty());
  ExpectValid(s, p, plan);
}

TEST(Planner, GivesFreeRoomToTheUnitWhoseAlternativesCostMore) {
  struct Case {
    std::string name;
    DemandUnit scarce;    // only dear new nodes hold it
    DemandUnit flexible;  // a cheap new node holds it; larger, so a size order would serve it first
    std::string node_type;
    std::string zone;
  };
  DemandUnit zone_pinned = OnDemandOnly(WithModels(Unit("scarce", 1, 2000, 8192), {"l40s"}));
  zone_pinned.zones = {"us-east-1e"};
  const std::vector<Case> cases = {
      {"minimum GPU memory: only A100 (p4de) or L40S nodes hold it",
       OnDemandOnly(WithModels(Unit("scarce", 1, 2000, 8192), {}, 60000)), OnDemandOnly(Unit("flexible", 1, 3000, 12288)),
       "p4de.24xlarge", "us-east-1a"},
      {"GPU model and zone pins: only a g6e.48xlarge in us-east-1e holds it", zone_pinned,
       OnDemandOnly(Unit("flexible", 1, 3000, 12288)), "g6e.48xlarge", "us-east-1e"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = WithL40s();
    s.nodes.push_back(MakeNode(s, "one-free", c.node_type, c.zone, CapacityType::kOnDemand, Units("r", 7, Unit("", 1))));
    s.pending = {c.scarce, c.flexible};
    const Policy p = BasePolicy();
    const Plan plan = MakePlan(s, p);
    EXPECT_EQ(NodeOf(plan, "scarce"), "one-free");
    EXPECT_EQ(NodeOf(plan, "flexible"), "launch:g6.xlarge");
    EXPECT_EQ(LaunchedNodes(plan), 1);
    ExpectValid(s, p, plan);
  }
}

TEST(Planner, KeepsFreeRoomForHigherPriorityWorkWhenALimitLeavesSomeUnplaced) {
  // No node may be added: the one free GPU goes to the higher-priority unit
  // even though the other one's alternatives cost more.
  Snapshot s = WithL40s();
  s.nodes.push_back(MakeNode(s, "one-free", "p4de.24xlarge", "us-east-1a", CapacityType::kOnDemand, Units("r", 7, Unit("", 1))));
  DemandUnit scarce = OnDemandOnly(WithModels(Unit("scarce", 1, 2000, 8192), {}, 60000));
  DemandUnit urgent = OnDemandOnly(Unit("urgent", 1, 3000, 12288));
  urgent.priority = 5;
  s.pending = {scarce, urgent};
  Policy p = BasePolicy();
  p.scaling.max_nodes_added_per_tick = 0;
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(NodeOf(plan, "urgent"), "one-free");
  ASSERT_EQ(plan.unplaced.size(), 1u);
  EXPECT_EQ(plan.unplaced[0].unit_id, "scarce");
  EXPECT_EQ(plan.unplaced[0].reason, UnplacedReason::kMaxNodesPerTick);
  ExpectValid(s, p, plan);
}

TEST(Planner, MovesPendingWorkOffARiskySpotNodeIntoRoomANewNodeLeavesFree) {
  // Eight 1-GPU A10G units; an existing spot g5.12xlarge (4 free GPUs, many
  // interruptions) and no room elsewhere. Four go on a new g5.12xlarge
  // whichever way; the risky spot node is kept for what the new one cannot
  // hold, so no pending unit sits on it while the new node has room.
  Snapshot s = BaseSnapshot();
  Offering risky = testing::FindOffering(s, "g5.12xlarge", "us-east-1a", CapacityType::kSpot);
  risky.interruptions_per_hour = 0.5;
  Node n = MakeNode(s, "risky", "g5.12xlarge", "us-east-1a", CapacityType::kSpot);
  n.offering = risky;
  s.nodes.push_back(n);
  for (auto& o : s.offerings)
    if (o.instance_type != "g5.12xlarge" || o.capacity_type != CapacityType::kOnDemand) o.available = false;
  DemandUnit a10g = WithModels(Unit("", 1, 2000, 8192), {"a10g"});
  a10g.checkpoint_interval = Seconds(0);
  a10g.expected_runtime = Seconds(4 * 3600);
  s.pending = Units("u", 6, a10g);
  const Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  int on_risky = 0;
  for (const auto& pl : plan.placements) on_risky += pl.node_id == "risky";
  EXPECT_EQ(LaunchesOf(plan, "g5.12xlarge"), 1);
  EXPECT_EQ(on_risky, 2);  // 6 units: 4 on the new node, only the rest on spot
  ExpectValid(s, p, plan);
}

}  // namespace
}  // namespace gpuscaler::planner_free_room_test
