// The Karpenter baseline follows Karpenter v1's rules and defaults, one test
// per rule (docs/simulator.md lists them with their sources).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/baselines.h"
#include "solver/fixtures.h"

namespace gpuscaler::sim {
namespace {

using gpuscaler::testing::BasePolicy;
using gpuscaler::testing::BaseSnapshot;
using gpuscaler::testing::MakeNode;
using gpuscaler::testing::Unit;
using gpuscaler::testing::Units;

Plan Karpenter(const Snapshot& s, const Policy& p) { return KarpenterLikePlanner()(s, p); }

Policy OnDemandPool() {
  Policy p = BasePolicy();
  p.pools[0].capacity_types = {CapacityType::kOnDemand};
  p.pools[0].instance_types = {"g6.xlarge", "g6.12xlarge"};
  return p;
}

// A NodeClaim keeps every type that holds all its pods and launches the
// cheapest of them: three 1-GPU pods share one 4-GPU node, though three
// 1-GPU nodes would cost less (Karpenter compares prices per node, not per pod).
TEST(KarpenterBaseline, PendingPodsShareOneNewNodeOfTheCheapestTypeThatHoldsThemAll) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 3, Unit("", 1));
  const Plan plan = Karpenter(s, OnDemandPool());
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].count, 1);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.12xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids.size(), 3u);
  EXPECT_TRUE(plan.unplaced.empty());
}

// The scheduling queue pops pods largest CPU request first, then largest
// memory, whatever order they were listed in: a NodeClaim records its pods
// in the order they joined it.
TEST(KarpenterBaseline, PodsAreScheduledLargestCpuFirstThenLargestMemory) {
  Snapshot s = BaseSnapshot();
  s.pending = {Unit("small", 1, 2000, 8192), Unit("big-memory", 1, 8000, 32768), Unit("biggest", 1, 16000, 8192),
               Unit("big", 1, 8000, 16384)};
  const Plan plan = Karpenter(s, OnDemandPool());
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].unit_ids, (std::vector<std::string>{"biggest", "big-memory", "big", "small"}));
}

// A pod no existing node can take joins the in-flight NodeClaim with the
// fewest pods that can still hold it, not the first one. Two NodePools of
// g6.12xlarge (4 GPUs, 48 vCPUs), the first capped at one node, so each claim
// is its own launch: "last" fits both claims and joins the one with one pod;
// first-fit would have put it with "a" and "c".
TEST(KarpenterBaseline, APodJoinsTheInFlightNodeClaimWithTheFewestPods) {
  Snapshot s = BaseSnapshot();
  Policy p = OnDemandPool();
  p.pools[0].name = "first";
  p.pools[0].instance_types = {"g6.12xlarge"};
  p.pools[0].max_nodes = 1;
  p.pools.push_back(p.pools[0]);
  p.pools[1].name = "second";
  p.pools[1].max_nodes = 10;
  for (WorkloadClassPolicy& c : p.classes) c.pools = {"first", "second"};
  s.pending = {Unit("a", 1, 30000), Unit("b", 1, 20000), Unit("c", 1, 10000), Unit("last", 1, 1000)};
  const Plan plan = Karpenter(s, p);
  std::map<std::string, std::vector<std::string>> units_by_pool;
  for (const LaunchAction& l : plan.launches) {
    EXPECT_EQ(l.count, 1);
    units_by_pool[l.pool] = l.unit_ids;
  }
  // a + b (50 vCPUs) do not fit one node; c ties and takes the first claim.
  EXPECT_EQ(units_by_pool["first"], (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(units_by_pool["second"], (std::vector<std::string>{"b", "last"}));
}

// Spot when the NodePool allows it, chosen price-capacity-optimized: the
// cheapest of the pools in the best capacity band, not the cheapest pool.
TEST(KarpenterBaseline, SpotByPriceCapacityOptimizedNotByPriceAlone) {
  Snapshot s = BaseSnapshot();
  for (Offering& o : s.offerings) {
    if (o.capacity_type != CapacityType::kSpot || o.instance_type != "g6.xlarge") continue;
    // us-east-1a is cheaper but reclaimed often (> 20 % a month); 1b is in the best band.
    o.interruptions_per_hour = o.zone == "us-east-1a" ? 0.01 : 0.00001;
    if (o.zone == "us-east-1a") o.usd_per_hour *= 0.5;
  }
  Policy p = BasePolicy();
  p.pools[0].instance_types = {"g6.xlarge"};
  s.pending = {Unit("u", 1)};
  const Plan plan = Karpenter(s, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.Key(), "g6.xlarge/us-east-1b/spot");
  ASSERT_FALSE(plan.launches[0].fallbacks.empty());
  for (const Offering& f : plan.launches[0].fallbacks) EXPECT_EQ(f.capacity_type, CapacityType::kSpot);
}

// consolidateAfter 0s: an empty node goes at once, whatever its age.
TEST(KarpenterBaseline, AnEmptyNodeIsDeletedAtOnce) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "n1", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.back().launch_time = s.time - Seconds(60);
  const Plan plan = Karpenter(s, OnDemandPool());
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kEmpty);
}

// WhenEmptyOrUnderutilized: a node whose pods fit on the other nodes is
// deleted, one per tick (single-node consolidation runs one command at a time).
TEST(KarpenterBaseline, AnUnderutilizedNodeWhosePodsFitElsewhereIsDeletedOnePerTick) {
  Snapshot s = BaseSnapshot();
  for (const char* id : {"a", "b", "c"}) {
    s.nodes.push_back(MakeNode(s, id, "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit(std::string(id) + "-pod", 1)}));
  }
  for (int i = 0; i < 7; ++i) s.nodes.push_back(MakeNode(s, "busy" + std::to_string(i), "g6.12xlarge", "us-east-1b",
                                                         CapacityType::kOnDemand, Units("x", 4, Unit("", 1))));
  const Plan plan = Karpenter(s, OnDemandPool());
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kConsolidate);
  EXPECT_TRUE(plan.launches.empty());
}

// An on-demand node is replaced by one cheaper node (spot when the pool
// allows both); a spot node is never replaced by spot
// (SpotToSpotConsolidation is off by default).
TEST(KarpenterBaseline, OnDemandIsReplacedByCheaperSpotButSpotNeverBySpot) {
  Policy p = BasePolicy();
  p.pools[0].instance_types = {"g6.xlarge", "g6.12xlarge"};
  for (CapacityType cap : {CapacityType::kOnDemand, CapacityType::kSpot}) {
    SCOPED_TRACE(std::string(ToString(cap)));
    Snapshot s = BaseSnapshot();
    s.nodes.push_back(MakeNode(s, "big", "g6.12xlarge", "us-east-1a", cap, {Unit("pod", 1)}));
    const Plan plan = Karpenter(s, p);
    if (cap == CapacityType::kSpot) {
      EXPECT_TRUE(plan.terminations.empty());
      EXPECT_TRUE(plan.launches.empty());
      continue;
    }
    ASSERT_EQ(plan.terminations.size(), 1u);
    EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
    EXPECT_EQ(plan.terminations[0].moved_unit_ids, std::vector<std::string>{"pod"});
    ASSERT_EQ(plan.launches.size(), 1u);
    EXPECT_EQ(plan.launches[0].offering.capacity_type, CapacityType::kSpot);
    EXPECT_LT(plan.launches[0].offering.usd_per_hour, s.nodes[0].offering.usd_per_hour);
    // The moved pod is placed on the new node: the controller keeps the old
    // node until that node can take it.
    ASSERT_EQ(plan.placements.size(), 1u);
    EXPECT_EQ(plan.placements[0].unit_id, "pod");
    EXPECT_EQ(plan.placements[0].launch_index, 0);
    EXPECT_EQ(plan.placements[0].launch_ordinal, 0);
  }
}

// The scheduling simulation puts a candidate's pods on the other nodes
// first; the replacement need only hold the rest. A g6.12xlarge (4.602 $/h)
// holds a 1-GPU pod and a 40-vCPU pod; a g6.xlarge that stays has room for
// the 1-GPU pod. Among g6 types only a g6.12xlarge holds the 40-vCPU pod (no
// cheaper replacement); once the pool allows m5, an m5.12xlarge (2.304 $/h)
// does.
TEST(KarpenterBaseline, AReplacementHoldsOnlyThePodsTheOtherNodesCannotTake) {
  Policy p = BasePolicy();
  p.pools[0].capacity_types = {CapacityType::kOnDemand};
  p.pools[0].instance_types = {"g6.xlarge", "g6.12xlarge"};
  Snapshot s = BaseSnapshot();
  s.instance_types.push_back(gpuscaler::testing::Type("m5.12xlarge", "m5", "", 0, 0, 48, 192));
  s.offerings.push_back(
      gpuscaler::testing::MakeOffering("m5.12xlarge", "us-east-1a", CapacityType::kOnDemand, 2.304));
  s.nodes.push_back(MakeNode(s, "big", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                             {Unit("gpu-pod", 1), Unit("cpu-pod", 0, 40000, 65536)}));
  s.nodes.push_back(MakeNode(s, "small", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.back().do_not_disrupt = true;
  EXPECT_TRUE(Karpenter(s, p).terminations.empty());

  p.pools[0].instance_types.push_back("m5.12xlarge");
  const Plan plan = Karpenter(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].node_id, "big");
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
  EXPECT_EQ(plan.terminations[0].moved_unit_ids, (std::vector<std::string>{"gpu-pod", "cpu-pod"}));
  EXPECT_NE(plan.terminations[0].reason.find("(1 of its pods to other nodes)"), std::string::npos)
      << plan.terminations[0].reason;
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.12xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids, std::vector<std::string>{"cpu-pod"});
  ASSERT_EQ(plan.placements.size(), 1u);
  EXPECT_EQ(plan.placements[0].unit_id, "cpu-pod");
  EXPECT_EQ(plan.placements[0].launch_index, 0);
}

// The NodePool's default disruption budget: 10 % of its nodes, rounded up.
TEST(KarpenterBaseline, DisruptsAtMostTenPercentOfAPoolsNodesRoundedUp) {
  Snapshot s = BaseSnapshot();
  for (int i = 0; i < 11; ++i)
    s.nodes.push_back(MakeNode(s, "n" + std::to_string(i), "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Plan plan = Karpenter(s, OnDemandPool());
  EXPECT_EQ(plan.terminations.size(), 2u);
  s.nodes[0].state = NodeState::kTerminating;  // one disruption already under way
  plan = Karpenter(s, OnDemandPool());
  EXPECT_EQ(plan.terminations.size(), 1u);
}

// Nodes nominated for pending pods are not disrupted in the same pass.
TEST(KarpenterBaseline, ANodeThatReceivesPendingPodsIsNotDisrupted) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "n1", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.pending = {Unit("u", 1)};
  const Plan plan = Karpenter(s, OnDemandPool());
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
}

}  // namespace
}  // namespace gpuscaler::sim
