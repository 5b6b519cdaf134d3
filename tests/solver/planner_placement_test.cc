// The planner's placement of pending work: free room on existing nodes first,
// the cheapest type for each shape (GPU model, memory, MIG, fractions), the
// reasons for what stays unplaced, unavailable offerings, zone spread, pools
// and pins, and the pools' min and max nodes.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/consolidation_scenes.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"
#include "solver/planner_test_support.h"

namespace gpuscaler::planner_placement_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Mig;
using testing::Milli;
using testing::OnDemandOnly;
using testing::ReasonCounts;
using testing::Unit;
using testing::Units;
using testing::WithModels;

TEST(Planner, PlacesPendingWorkOnExistingFreeCapacityFirst) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "n1", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r1", 1)}));
  s.pending = Units("p", 3, Unit("", 1));
  const Plan plan = MakePlan(s, BasePolicy());
  EXPECT_TRUE(plan.launches.empty());
  ASSERT_EQ(plan.placements.size(), 3u);
  for (const auto& pl : plan.placements) EXPECT_EQ(pl.node_id, "n1");
  EXPECT_TRUE(plan.terminations.empty());
  ExpectValid(s, BasePolicy(), plan);
}

struct ShapeCase {
  std::string name;
  std::vector<DemandUnit> units;
  std::string want_type;  // every launch uses this type
  int want_nodes;
};

TEST(Planner, ChoosesTheCheapestTypeThatHoldsEachShape) {
  std::vector<ShapeCase> cases = {
      {"a 4-GPU unit stays on one node", {OnDemandOnly(Unit("a", 4))}, "g6.12xlarge", 1},
      {"GPU model by short name", {OnDemandOnly(WithModels(Unit("a", 1), {"a10g"}))}, "g5.xlarge", 1},
      {"GPU model by canonical name", {OnDemandOnly(WithModels(Unit("a", 1), {"NVIDIA-A10G"}))}, "g5.xlarge", 1},
      {"minimum GPU memory", {OnDemandOnly(WithModels(Unit("a", 1, 2000, 8192), {}, 40000))}, "p4de.24xlarge", 1},
      {"vCPU beyond an xlarge", {OnDemandOnly(Unit("a", 1, 8000, 8192))}, "g6.12xlarge", 1},
      {"four quarter GPUs share one GPU",
       {OnDemandOnly(Milli("a", 250)), OnDemandOnly(Milli("b", 250)), OnDemandOnly(Milli("c", 250)), OnDemandOnly(Milli("d", 250))},
       "g6.xlarge", 1},
      {"seven 1g.10gb fill one A100 node",
       {OnDemandOnly(Mig("a", "1g.10gb")), OnDemandOnly(Mig("b", "1g.10gb")), OnDemandOnly(Mig("c", "1g.10gb")),
        OnDemandOnly(Mig("d", "1g.10gb")), OnDemandOnly(Mig("e", "1g.10gb")), OnDemandOnly(Mig("f", "1g.10gb")),
        OnDemandOnly(Mig("g", "1g.10gb"))},
       "p4de.24xlarge", 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = BaseSnapshot();
    s.pending = c.units;
    const Plan plan = MakePlan(s, BasePolicy());
    EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
    EXPECT_EQ(LaunchedNodes(plan), c.want_nodes);
    for (const auto& l : plan.launches) EXPECT_EQ(l.offering.instance_type, c.want_type);
    ExpectValid(s, BasePolicy(), plan);
  }
}

TEST(Planner, PacksMixedMigProfilesIntoOneValidGpuLayout) {
  // 3g + 2g + 1g + 1g fit one A100 only with the 3g at slice 4.
  Snapshot s = BaseSnapshot();
  s.pending = {OnDemandOnly(Mig("a", "3g.40gb")), OnDemandOnly(Mig("b", "2g.20gb")), OnDemandOnly(Mig("c", "1g.10gb")),
               OnDemandOnly(Mig("d", "1g.10gb"))};
  const Plan plan = MakePlan(s, BasePolicy());
  ASSERT_EQ(LaunchedNodes(plan), 1);
  ExpectValid(s, BasePolicy(), plan);
}

TEST(Planner, JudgesAMigUnitsMemoryByItsMigInstanceNotTheWholeGpu) {
  // The policy loader rejects the same class (tests/policy): the A100's
  // 1g.10gb instance has 9728 MiB, less than the 20000 MiB asked.
  Policy p = BasePolicy();
  WorkloadClassPolicy& training = p.classes[1];
  training.mig_profile = "1g.10gb";
  training.min_gpu_memory_mib = 20000;
  training.cpu_milli_per_job = 1000;
  training.memory_mib_per_job = 4096;
  DemandUnit too_small = training.Unit();
  too_small.id = "too-small";
  DemandUnit enough = too_small;
  enough.id = "enough";
  enough.min_gpu_memory_mib = 9728;
  DemandUnit wider = too_small;
  wider.id = "wider";
  wider.mig_profile = "3g.40gb";
  Snapshot s = BaseSnapshot();
  s.pending = {too_small, enough, wider};
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.unplaced.size(), 1u);
  EXPECT_EQ(plan.unplaced[0].unit_id, "too-small");
  EXPECT_EQ(plan.unplaced[0].reason, UnplacedReason::kNoOfferingFits);
  EXPECT_EQ(plan.placements.size(), 2u);
  ExpectValid(s, p, plan);
}

TEST(Planner, FractionalUnitsNeverShareAGpuBeyondOneThousandMilli) {
  Snapshot s = BaseSnapshot();
  for (int i = 0; i < 3; ++i) s.pending.push_back(OnDemandOnly(Milli("f" + std::to_string(i), 600)));
  const Plan plan = MakePlan(s, BasePolicy());
  EXPECT_TRUE(plan.unplaced.empty());
  int gpus = 0;
  for (const auto& l : plan.launches)
    for (const auto& t : s.instance_types)
      if (t.name == l.offering.instance_type) gpus += t.gpu_count * l.count;
  EXPECT_GE(gpus, 3);
  ExpectValid(s, BasePolicy(), plan);
}

struct ReasonCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> setup;
  UnplacedReason want;
};

TEST(Planner, ReportsWhyUnitsStayUnplaced) {
  std::vector<ReasonCase> cases = {
      {"MIG profile on a GPU without MIG",
       [](Snapshot& s, Policy&) {
         DemandUnit u = Mig("m", "1g.10gb");
         u.gpu_models = {"a10g"};
         s.pending = {u};
       },
       UnplacedReason::kNoOfferingFits},
      {"more GPUs than any type has", [](Snapshot& s, Policy&) { s.pending = {Unit("u", 16)}; },
       UnplacedReason::kNoOfferingFits},
      {"class restricted to a pool that does not exist",
       [](Snapshot& s, Policy& p) {
         p.classes[0].pools = {"nowhere"};
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kNoPool},
      {"every fitting offering unavailable",
       [](Snapshot& s, Policy&) {
         for (auto& o : s.offerings) o.available = false;
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kCapacityUnavailable},
      {"spot pin above the spot price ceiling",
       [](Snapshot& s, Policy& p) {
         p.spot.max_price_fraction_of_on_demand = 0.3;
         DemandUnit u = Unit("u", 1);
         u.capacity_type = CapacityType::kSpot;
         s.pending = {u};
       },
       UnplacedReason::kSpotPriceCeiling},
      {"spot pin above the interruption ceiling",
       [](Snapshot& s, Policy& p) {
         p.spot.max_interruptions_per_hour = 0.01;
         DemandUnit u = Unit("u", 1);
         u.capacity_type = CapacityType::kSpot;
         s.pending = {u};
       },
       UnplacedReason::kSpotPriceCeiling},
      {"pool at max_nodes",
       [](Snapshot& s, Policy& p) {
         p.pools[0].max_nodes = 1;
         s.nodes.push_back(MakeNode(s, "full", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r", 1)}));
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kPoolMax},
      {"max nodes added per tick",
       [](Snapshot& s, Policy& p) {
         p.scaling.max_nodes_added_per_tick = 0;
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kMaxNodesPerTick},
      {"hard budget",
       [](Snapshot& s, Policy& p) {
         p.budget.global.hourly_usd = 0.1;
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kBudget},
      {"per-pool hard budget",
       [](Snapshot& s, Policy& p) {
         BudgetCap cap;
         cap.hourly_usd = 0.1;
         p.budget.per_pool["gpu"] = cap;
         s.pending = {Unit("u", 1)};
       },
       UnplacedReason::kBudget},
      {"spot-only unit with no spot share left",
       [](Snapshot& s, Policy& p) {
         p.classes[0].max_spot_share = 0;
         DemandUnit u = Unit("u", 1);
         u.capacity_type = CapacityType::kSpot;
         s.pending = {u};
       },
       UnplacedReason::kSpotShare},
      {"zone spread with one zone allowed",
       [](Snapshot& s, Policy& p) {
         p.classes[0].max_zone_share = 0.5;
         p.pools[0].zones = {"us-east-1a"};
         s.nodes.push_back(MakeNode(s, "n", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r", 1)}));
         s.nodes.back().do_not_disrupt = true;
         s.pending = Units("u", 3, Unit("", 1));
       },
       UnplacedReason::kZoneSpread},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = BaseSnapshot();
    Policy p = BasePolicy();
    c.setup(s, p);
    const Plan plan = MakePlan(s, p);
    ASSERT_FALSE(plan.unplaced.empty()) << plan.summary;
    EXPECT_EQ(ToString(plan.unplaced.back().reason), ToString(c.want)) << plan.unplaced.back().detail;
    EXPECT_FALSE(plan.unplaced.back().detail.empty());
    ExpectValid(s, p, plan);
  }
}

TEST(Planner, SkipsUnavailableOfferingsAndFallsBackToOthers) {
  Snapshot s = BaseSnapshot();
  for (auto& o : s.offerings)
    if (o.zone == "us-east-1a") o.available = false;
  s.pending = Units("u", 2, Unit("", 1));
  const Plan plan = MakePlan(s, BasePolicy());
  ASSERT_FALSE(plan.launches.empty());
  for (const auto& l : plan.launches) {
    EXPECT_EQ(l.offering.zone, "us-east-1b");
    for (const auto& f : l.fallbacks) {
      EXPECT_TRUE(f.available);
      EXPECT_NE(f.Key(), l.offering.Key());
    }
    EXPECT_FALSE(l.fallbacks.empty());
  }
}

TEST(Planner, SpreadsAClassAcrossZones) {
  struct Case {
    std::string name;
    double max_zone_share;
    int min_zones;
  };
  for (const Case& c : std::vector<Case>{{"min_zones 2", 1.0, 2}, {"max_zone_share 0.5", 0.5, 1}}) {
    SCOPED_TRACE(c.name);
    Snapshot s = BaseSnapshot();
    s.pending = Units("u", 8, Unit("", 1));
    Policy p = BasePolicy();
    p.classes[0].max_zone_share = c.max_zone_share;
    p.classes[0].min_zones = c.min_zones;
    const Plan plan = MakePlan(s, p);
    EXPECT_TRUE(plan.unplaced.empty());
    std::map<std::string, int> per_zone;
    for (const auto& l : plan.launches) per_zone[l.offering.zone] += int(l.unit_ids.size());
    EXPECT_EQ(per_zone.size(), 2u);
    for (const auto& [z, n] : per_zone) EXPECT_LE(n, 4) << z;
  }
}

TEST(Planner, HonoursPoolsAndPins) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  NodePoolPolicy a100;
  a100.name = "a100";
  a100.gpu_models = {"a100-80gb"};
  a100.capacity_types = {CapacityType::kOnDemand};
  p.pools.push_back(a100);
  p.classes[1].pools = {"a100"};  // training
  DemandUnit t = Unit("t", 1, 2000, 8192, "training");
  DemandUnit z = Unit("z", 1);
  z.zones = {"us-east-1b"};
  DemandUnit ty = Unit("ty", 1);
  ty.instance_types = {"g5.xlarge"};
  DemandUnit od = Unit("od", 1);
  od.capacity_type = CapacityType::kOnDemand;
  DemandUnit pinned = Unit("pinned", 1);
  pinned.pool = "a100";
  s.pending = {t, z, ty, od, pinned};
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  std::map<std::string, const LaunchAction*> by_unit;
  for (const auto& l : plan.launches)
    for (const auto& id : l.unit_ids) by_unit[id] = &l;
  ASSERT_EQ(by_unit.size(), 5u);
  EXPECT_EQ(by_unit["t"]->pool, "a100");
  EXPECT_EQ(by_unit["t"]->offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(by_unit["pinned"]->pool, "a100");
  EXPECT_EQ(by_unit["z"]->offering.zone, "us-east-1b");
  EXPECT_EQ(by_unit["ty"]->offering.instance_type, "g5.xlarge");
  EXPECT_EQ(by_unit["od"]->offering.capacity_type, CapacityType::kOnDemand);
  ExpectValid(s, p, plan);
}

TEST(Planner, LaunchesToReachPoolMinNodes) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  p.pools[0].min_nodes = 2;
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(LaunchedNodes(plan), 2);
  EXPECT_TRUE(plan.terminations.empty());
}

TEST(Planner, SpreadsAPoolsMinNodesAcrossItsZones) {
  struct Case {
    std::string name;
    int min_nodes;
    int min_zones;           // of the class the pool serves
    bool idle_node_in_a;     // an on-demand node already in us-east-1a
    std::map<std::string, int> want;  // new nodes per zone
  };
  const std::vector<Case> cases = {
      {"one node per zone", 3, 1, false, {{"us-east-1a", 1}, {"us-east-1b", 1}, {"us-east-1c", 1}}},
      {"min_zones 2: two zones", 2, 2, false, {{"us-east-1a", 1}, {"us-east-1b", 1}}},
      {"existing nodes count in their zone", 3, 1, true, {{"us-east-1b", 1}, {"us-east-1c", 1}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = BaseSnapshot({"us-east-1a", "us-east-1b", "us-east-1c"});
    if (c.idle_node_in_a) s.nodes.push_back(MakeNode(s, "idle", "g6.xlarge", "us-east-1a", CapacityType::kOnDemand));
    Policy p = BasePolicy();
    p.pools[0].zones = {"us-east-1a", "us-east-1b", "us-east-1c"};
    p.pools[0].min_nodes = c.min_nodes;
    p.classes[0].min_zones = c.min_zones;
    const Plan plan = MakePlan(s, p);
    std::map<std::string, int> per_zone;
    for (const auto& l : plan.launches) {
      EXPECT_EQ(l.offering.capacity_type, CapacityType::kOnDemand);
      EXPECT_EQ(l.offering.instance_type, "g6.xlarge");  // the cheapest in every zone
      per_zone[l.offering.zone] += l.count;
    }
    EXPECT_EQ(per_zone, c.want);
    EXPECT_TRUE(plan.terminations.empty());
  }
}

TEST(Planner, StopsAtMaxNodesAddedPerTick) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 5, OnDemandOnly(Unit("", 4, 40000, 100000)));
  Policy p = BasePolicy();
  p.scaling.max_nodes_added_per_tick = 2;
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(LaunchedNodes(plan), 2);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kMaxNodesPerTick], 3);
  ExpectValid(s, p, plan);
}

TEST(Planner, CountsExistingNodesTowardPoolMax) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  p.pools[0].max_nodes = 3;
  for (int i = 0; i < 2; ++i)
    s.nodes.push_back(MakeNode(s, "n" + std::to_string(i), "g6.xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("r" + std::to_string(i), 1)}));
  s.nodes.back().state = NodeState::kLaunching;
  // 8-GPU units: one a node whatever the type (see NodeSlots for smaller).
  s.pending = Units("u", 3, OnDemandOnly(Unit("", 8, 40000, 100000)));
  const Plan plan = MakePlan(s, p);
  EXPECT_EQ(LaunchedNodes(plan), 1);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kPoolMax], 2);
}

}  // namespace
}  // namespace gpuscaler::planner_placement_test
