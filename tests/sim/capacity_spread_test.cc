// The greedy and karpenter baselines hold a class's on-demand floor
// (max_spot_share < 1) as a Karpenter user does, by the capacity-spread
// split (sim/capacity_spread.h); a class without a floor plans as before.
#include "sim/capacity_spread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
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

TEST(CapacitySpread, TheSmallestSplitThatMeetsTheFloor) {
  struct Case {
    double share;
    std::optional<std::pair<int, int>> want;  // (domains, on-demand domains)
  };
  const std::vector<Case> cases = {
      {0.6, std::pair{5, 2}},   {0.7, std::pair{10, 3}},    {0.5, std::pair{2, 1}},
      {0.75, std::pair{4, 1}},  {2.0 / 3, std::pair{3, 1}}, {0.9, std::pair{10, 1}},
      {0.95, std::pair{10, 1}}, {0.05, std::pair{10, 10}},  {0.0, std::nullopt},
      {1.0, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.share);
    std::optional<CapacitySpread> got = SpreadForShare(c.share);
    ASSERT_EQ(got.has_value(), c.want.has_value());
    if (!got) continue;
    EXPECT_EQ(got->domains, c.want->first);
    EXPECT_EQ(got->on_demand, c.want->second);
    EXPECT_GE(static_cast<double>(got->on_demand) / got->domains, 1.0 - c.share - 1e-9) << "below the floor";
  }
}

// Among domains with equally few pods the pick is by a hash of the pod's
// id: the same pod always gets the same domain, and over many pods each of
// the ten domains of a 0.7 class is picked about as often (Karpenter picks
// any at random), so a third of the picks are not all on-demand.
TEST(CapacitySpread, TiesArePickedByThePodsIdUniformlyAndReproducibly) {
  Policy p = BasePolicy();
  p.classes[0].max_spot_share = 0.7;
  const SpreadClasses classes(p);
  const SpreadClasses::Counts none(classes);
  std::vector<int> picks(10, 0);
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "pod-" + std::to_string(i);
    const int d = none.Next("inference", id);
    ASSERT_GE(d, 0);
    ASSERT_LT(d, 10);
    EXPECT_EQ(none.Next("inference", id), d);
    ++picks[static_cast<size_t>(d)];
  }
  for (int d = 0; d < 10; ++d) {
    EXPECT_GT(picks[static_cast<size_t>(d)], 140) << "domain " << d;
    EXPECT_LT(picks[static_cast<size_t>(d)], 260) << "domain " << d;
  }
  SpreadClasses::Counts some(classes);
  for (int d = 0; d < 10; ++d)
    if (d != 7) some.Add("inference", d);
  EXPECT_EQ(some.Next("inference", "any"), 7) << "the one domain with fewer pods";
  EXPECT_EQ(none.Next("training", "any"), -1) << "not split";
}

// One pool of g6.xlarge (one GPU: one pod per node), class `inference` with
// the given spot share.
Policy OneGpuNodes(double max_spot_share) {
  Policy p = BasePolicy();
  p.pools[0].instance_types = {"g6.xlarge"};
  p.classes[0].max_spot_share = max_spot_share;
  return p;
}

class FloorSplit : public ::testing::TestWithParam<std::string> {
 protected:
  Plan Run(const Snapshot& s, const Policy& p) const {
    return (GetParam() == "greedy" ? CheapestNodeGreedyPlanner() : KarpenterLikePlanner())(s, p);
  }
};

// Units launched per capacity type, and per capacity-spread value of class
// `inference`.
struct Launched {
  std::map<CapacityType, int> units;
  std::map<CapacityType, std::vector<std::string>> domains;
};

Launched Count(const Plan& plan) {
  Launched out;
  for (const LaunchAction& l : plan.launches) {
    out.units[l.offering.capacity_type] += static_cast<int>(l.unit_ids.size());
    auto label = l.node_labels.find("capacity-spread/inference");
    for (int i = 0; i < l.count; ++i)
      out.domains[l.offering.capacity_type].push_back(label == l.node_labels.end() ? "" : label->second);
  }
  return out;
}

// 0.6 → five domains, two on-demand: ten pods, two per domain (whichever
// domain a tie picks), four on on-demand nodes labelled "1" and "2", six on
// spot nodes "3" to "5".
TEST_P(FloorSplit, TenPodsOfASixtyPercentSpotClassPutFourOnOnDemand) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 10, Unit("", 1));
  const Plan plan = Run(s, OneGpuNodes(0.6));
  EXPECT_TRUE(plan.unplaced.empty());
  Launched got = Count(plan);
  EXPECT_EQ(got.units.at(CapacityType::kOnDemand), 4);
  EXPECT_EQ(got.units.at(CapacityType::kSpot), 6);
  std::vector<std::string> od = got.domains.at(CapacityType::kOnDemand);
  std::vector<std::string> spot = got.domains.at(CapacityType::kSpot);
  std::sort(od.begin(), od.end());
  std::sort(spot.begin(), spot.end());
  EXPECT_EQ(od, (std::vector<std::string>{"1", "1", "2", "2"}));
  EXPECT_EQ(spot, (std::vector<std::string>{"3", "3", "4", "4", "5", "5"}));
  for (const LaunchAction& l : plan.launches) {
    for (const Offering& f : l.fallbacks) {
      EXPECT_EQ(f.capacity_type, l.offering.capacity_type) << "a domain's node never changes capacity type";
    }
  }
}

// Running pods count in the domain of their node's label: with three pods
// in domain "1" and one in "3", the next three go to "2", "4" and "5", so
// none takes the free GPU of the on-demand node in domain "1".
TEST_P(FloorSplit, RunningPodsCountInTheDomainOfTheirNode) {
  Snapshot s = BaseSnapshot();
  Node od =
      MakeNode(s, "od1", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand, Units("r", 3, Unit("", 1)));
  od.labels["capacity-spread/inference"] = "1";
  Node spot = MakeNode(s, "spot3", "g6.xlarge", "us-east-1a", CapacityType::kSpot, {Unit("r3", 1)});
  spot.labels["capacity-spread/inference"] = "3";
  s.nodes = {od, spot};
  s.pending = Units("u", 3, Unit("", 1));
  Policy p = OneGpuNodes(0.6);
  p.pools[0].instance_types = {"g6.xlarge", "g6.12xlarge"};
  const Plan plan = Run(s, p);
  for (const Placement& pl : plan.placements) EXPECT_NE(pl.node_id, "od1") << pl.unit_id;
  Launched got = Count(plan);
  EXPECT_EQ(got.domains.at(CapacityType::kOnDemand), (std::vector<std::string>{"2"}));
  std::vector<std::string> spot_domains = got.domains.at(CapacityType::kSpot);
  std::sort(spot_domains.begin(), spot_domains.end());
  EXPECT_EQ(spot_domains, (std::vector<std::string>{"4", "5"}));
}

// Spot has no capacity: the pods of the on-demand domains get nodes, those
// of a spot domain wait (a spot NodePool does not fall back to on-demand).
// A waiting pod is not counted, so the on-demand domains get one pod each
// and the other pods all wait.
TEST_P(FloorSplit, ASpotDomainPodWaitsWhenSpotHasNoCapacity) {
  Snapshot s = BaseSnapshot();
  for (Offering& o : s.offerings) o.available = o.capacity_type != CapacityType::kSpot;
  s.pending = Units("u", 5, Unit("", 1));
  const Plan plan = Run(s, OneGpuNodes(0.6));
  Launched got = Count(plan);
  EXPECT_EQ(got.units[CapacityType::kSpot], 0);
  EXPECT_LE(got.units[CapacityType::kOnDemand], 2);
  EXPECT_EQ(got.units[CapacityType::kOnDemand] + static_cast<int>(plan.unplaced.size()), 5);
  EXPECT_GE(plan.unplaced.size(), 3u);
  for (const UnplacedUnit& u : plan.unplaced) {
    EXPECT_NE(u.detail.find("of 5 (spot only)"), std::string::npos) << u.detail;
  }
}

// Without a floor nothing is split: no labels, and the greedy's spot launch
// keeps its on-demand fallbacks.
TEST_P(FloorSplit, AClassWithoutAFloorIsNotSplit) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 10, Unit("", 1));
  const Plan plan = Run(s, OneGpuNodes(1.0));
  Launched got = Count(plan);
  EXPECT_EQ(got.units[CapacityType::kSpot], 10);
  EXPECT_EQ(got.units[CapacityType::kOnDemand], 0);
  for (const LaunchAction& l : plan.launches) EXPECT_TRUE(l.node_labels.empty());
  if (GetParam() == "greedy") {
    ASSERT_FALSE(plan.launches.empty());
    bool on_demand_fallback = false;
    for (const Offering& f : plan.launches[0].fallbacks)
      on_demand_fallback |= f.capacity_type == CapacityType::kOnDemand;
    EXPECT_TRUE(on_demand_fallback);
  }
}

// max_spot_share 0 on an interruptible class: on-demand only, unsplit.
TEST_P(FloorSplit, AnInterruptibleClassWithNoSpotShareRunsOnOnDemandOnly) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, Unit("", 1));
  const Plan plan = Run(s, OneGpuNodes(0.0));
  Launched got = Count(plan);
  EXPECT_EQ(got.units[CapacityType::kOnDemand], 4);
  EXPECT_EQ(got.units[CapacityType::kSpot], 0);
  for (const LaunchAction& l : plan.launches) EXPECT_TRUE(l.node_labels.empty());
}

// Another class in a split class's pool gets nodes labelled with the split
// class's first domain of the node's capacity type, so the split pods may
// use their room (the blueprint's NodePools label every node).
TEST_P(FloorSplit, OtherClassesNodesInTheSplitPoolCarryTheFirstDomainOfTheirType) {
  Snapshot s = BaseSnapshot();
  s.pending = {Unit("t", 1, 2000, 8192, "training")};
  const Plan plan = Run(s, OneGpuNodes(0.6));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.capacity_type, CapacityType::kSpot);
  EXPECT_EQ(plan.launches[0].node_labels,
            (std::map<std::string, std::string>{{"capacity-spread/inference", "3"}}));
}

// Karpenter's consolidation keeps the spread: a split pod moves only within
// its domain, and a node of a domain is replaced by a cheaper node of the
// same capacity type and labels. The underutilized on-demand node of domain
// "1" would fit its pod on the nodes of domains "2" and "3"; instead it is
// replaced by a smaller on-demand node of domain "1", not by spot.
TEST(FloorSplitKarpenter, ConsolidationKeepsAPodInItsDomainAndANodeInItsNodePool) {
  Snapshot s = BaseSnapshot();
  auto node = [&](const std::string& id, CapacityType cap, const std::string& domain) {
    Node n = MakeNode(s, id, "g6.12xlarge", "us-east-1a", cap, {Unit("on-" + id, 1)});
    n.labels["capacity-spread/inference"] = domain;
    return n;
  };
  s.nodes = {node("n1", CapacityType::kOnDemand, "1"), node("n2", CapacityType::kSpot, "3"),
             node("n3", CapacityType::kOnDemand, "2")};
  Policy p = OneGpuNodes(0.6);
  p.pools[0].instance_types = {"g6.xlarge", "g6.12xlarge"};
  const Plan plan = KarpenterLikePlanner()(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].node_id, "n1");
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.xlarge");
  EXPECT_EQ(plan.launches[0].offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(plan.launches[0].node_labels,
            (std::map<std::string, std::string>{{"capacity-spread/inference", "1"}}));
}

INSTANTIATE_TEST_SUITE_P(Baselines, FloorSplit, ::testing::Values("greedy", "karpenter"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace gpuscaler::sim
