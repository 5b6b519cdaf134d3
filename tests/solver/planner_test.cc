#include "gpuscaler/solver/planner.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "solver/consolidation_scenes.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::AddOnDemandType;
using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::CheckPlan;
using testing::ConsolidationSnapshot;
using testing::ExpectValid;
using testing::LaunchedNodes;
using testing::LaunchesOf;
using testing::FourSingleGpuNodesSnapshot;
using testing::MakeNode;
using testing::Milli;
using testing::OnDemandOnly;
using testing::PartlyIntoFreeRoomPolicy;
using testing::PartlyIntoFreeRoomSnapshot;
using testing::SplitSnapshot;
using testing::TwoNodesOneNodeHoldsSnapshot;
using testing::Unit;
using testing::Units;

std::map<UnplacedReason, int> ReasonCounts(const Plan& p) {
  std::map<UnplacedReason, int> m;
  for (const auto& u : p.unplaced) m[u.reason]++;
  return m;
}

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

DemandUnit WithModels(DemandUnit u, std::vector<std::string> models, int64_t min_mem = 0) {
  u.gpu_models = std::move(models);
  u.min_gpu_memory_mib = min_mem;
  return u;
}
DemandUnit Mig(const std::string& id, const std::string& profile) {
  DemandUnit u = Unit(id, 0, 1000, 4096, "training");
  u.mig_profile = profile;
  return u;
}

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

TEST(Planner, KeepsHighPriorityDemandUnderAHardBudget) {
  Snapshot s = BaseSnapshot();
  DemandUnit hi = OnDemandOnly(Unit("", 1));
  hi.priority = 10;
  DemandUnit lo = OnDemandOnly(Unit("", 1));
  lo.priority = 1;
  for (auto& u : Units("lo", 3, lo)) s.pending.push_back(u);
  for (auto& u : Units("hi", 2, hi)) s.pending.push_back(u);
  Policy p = BasePolicy();
  p.budget.global.hourly_usd = 2.0;  // two g6.xlarge at $0.805
  const Plan plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 2.0 + 1e-9);
  std::set<std::string> placed;
  for (const auto& pl : plan.placements) placed.insert(pl.unit_id);
  EXPECT_TRUE(placed.count("hi0") && placed.count("hi1"));
  ASSERT_EQ(plan.unplaced.size(), 3u);
  for (const auto& u : plan.unplaced) {
    EXPECT_EQ(u.unit_id.substr(0, 2), "lo");
    EXPECT_EQ(u.reason, UnplacedReason::kBudget);
  }
  ExpectValid(s, p, plan);
}

TEST(Planner, PlansPastASoftBudgetWithANote) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 3, OnDemandOnly(Unit("", 1)));
  Policy p = BasePolicy();
  p.budget.global.hourly_usd = 1.0;
  p.budget.global.hard = false;
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty());
  EXPECT_NE(plan.summary.find("soft budget"), std::string::npos) << plan.summary;
}

TEST(Planner, TurnsAMonthlyCapIntoAnHourlyAllowance) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, OnDemandOnly(Unit("", 1)));
  s.month_to_date_usd = 900;
  s.hours_left_in_month = 100;  // (1000 - 900) / 100 = $1/h
  Policy p = BasePolicy();
  p.budget.global.monthly_usd = 1000;
  const Plan plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 1.0 + 1e-9);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3);
}

TEST(Planner, ChargesAPoolsMonthlyCapWithThatPoolsSpendOnly) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("u", 4, OnDemandOnly(Unit("", 1)));
  s.month_to_date_usd = 900;  // the fleet's, mostly other pools
  s.hours_left_in_month = 100;
  Policy p = BasePolicy();
  p.budget.per_pool["gpu"].monthly_usd = 1000;
  // The pool spent nothing yet: $10/h, room for all four g6.xlarge.
  Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  // The pool spent $900 of its $1000: $1/h, one node.
  s.month_to_date_usd_by_pool["gpu"] = 900;
  plan = MakePlan(s, p);
  EXPECT_LE(plan.cost_after_usd_per_hour, 1.0 + 1e-9);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3);
}

TEST(Planner, ATeamCapCutsOnlyThatTeamsWorkAndSaysWhose) {
  Snapshot s = BaseSnapshot();
  s.pending = Units("ml-", 4, OnDemandOnly(Unit("", 1)));
  for (const auto& u : Units("research-", 4, OnDemandOnly(Unit("", 1, 2000, 8192, "training")))) s.pending.push_back(u);
  Policy p = BasePolicy();
  p.classes[0].team = "ml";
  p.classes[1].team = "research";
  p.budget.per_team["ml"].hourly_usd = 2.0;  // two g6.xlarge at $0.805/h
  const Plan plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  ASSERT_EQ(plan.unplaced.size(), 2u) << plan.summary;
  for (const auto& u : plan.unplaced) {
    EXPECT_EQ(u.workload_class, "inference");
    EXPECT_EQ(u.reason, UnplacedReason::kBudget);
    EXPECT_NE(u.detail.find("team ml"), std::string::npos) << u.detail;
  }
}

TEST(Planner, ATeamIsChargedItsShareOfANodeLikeTheCostReport) {
  Snapshot s = BaseSnapshot();
  DemandUnit big_node_only = OnDemandOnly(Unit("", 1));
  big_node_only.instance_types = {"g6.12xlarge"};  // 4 L4 at $4.602/h: $1.1505 per GPU
  s.pending = Units("u", 4, big_node_only);
  Policy p = BasePolicy();
  p.classes[0].team = "ml";
  p.budget.per_team["ml"].hourly_usd = 2.5;  // two GPUs' worth
  Plan plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  EXPECT_EQ(LaunchedNodes(plan), 1);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 2) << plan.summary;
  // Work already running on such a node counts against the same cap.
  s.nodes.push_back(MakeNode(s, "n1", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand));
  s.nodes.back().running = {Unit("running", 1)};
  plan = MakePlan(s, p);
  ExpectValid(s, p, plan);
  EXPECT_EQ(ReasonCounts(plan)[UnplacedReason::kBudget], 3) << plan.summary;
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

// --- consolidation ---

TEST(Planner, TerminatesEmptyNodesAndConsolidatesWorkThatFitsElsewhere) {
  Snapshot s = ConsolidationSnapshot();
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  std::map<std::string, TerminationKind> kinds;
  for (const auto& t : plan.terminations) kinds[t.node_id] = t.kind;
  EXPECT_EQ(kinds.count("empty"), 1u);
  EXPECT_EQ(kinds["empty"], TerminationKind::kEmpty);
  ASSERT_EQ(kinds.count("small"), 1u);
  EXPECT_EQ(kinds["small"], TerminationKind::kConsolidate);
  EXPECT_EQ(kinds.count("big"), 0u);
  bool moved = false;
  for (const auto& pl : plan.placements) moved = moved || (pl.unit_id == "s1" && pl.node_id == "big");
  EXPECT_TRUE(moved);
  EXPECT_LT(plan.cost_after_usd_per_hour, plan.cost_before_usd_per_hour);
  ExpectValid(s, p, plan);
}

struct KeepCase {
  std::string name;
  std::function<void(Snapshot&, Policy&)> setup;
};

TEST(Planner, KeepsNodesThatMustNotBeDisrupted) {
  std::vector<KeepCase> cases = {
      {"do_not_disrupt flag", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.do_not_disrupt = true; }},
      {"do-not-disrupt label",
       [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.labels["gpuscaler.io/do-not-disrupt"] = "true"; }},
      {"younger than min_node_age", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.launch_time = s.time - Seconds(60); }},
      {"class with stale signals", [](Snapshot& s, Policy&) { s.scale_down_blocked_classes = {"inference"}; }},
      {"disruption budget used up (the empty node aside, which it does not hold)", [](Snapshot& s, Policy& p) {
         p.disruption.max_disrupted_per_interval = 2;
         s.recently_disrupted["gpu"] = 2;
         s.nodes.pop_back();
       }},
      {"consolidation off", [](Snapshot&, Policy& p) { p.disruption.consolidation = false; }},
      {"no removals per tick", [](Snapshot&, Policy& p) { p.scaling.max_nodes_removed_per_tick = 0; }},
      {"pool at min_nodes", [](Snapshot&, Policy& p) { p.pools[0].min_nodes = 3; }},
      {"node still launching", [](Snapshot& s, Policy&) { for (auto& n : s.nodes) n.state = NodeState::kLaunching; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot s = ConsolidationSnapshot();
    Policy p = BasePolicy();
    c.setup(s, p);
    const Plan plan = MakePlan(s, p);
    EXPECT_TRUE(plan.terminations.empty()) << plan.terminations[0].node_id;
  }
}

// Six nodes, each with one small on-demand unit on a g5.48xlarge: each is
// worth replacing by a g6.xlarge, a removal that moves work.
Snapshot OversizedNodesSnapshot(int n) {
  Snapshot s = BaseSnapshot();
  for (int i = 0; i < n; ++i) {
    const std::string id = "big" + std::to_string(i);
    s.nodes.push_back(MakeNode(s, id, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w-" + id, 1))}));
  }
  return s;
}

TEST(Planner, LimitsRemovalsToTheTickAndDisruptionBudgets) {
  Snapshot s = OversizedNodesSnapshot(6);
  Policy p = BasePolicy();
  p.scaling.max_nodes_removed_per_tick = 4;
  p.disruption.max_disrupted_per_interval = 3;
  s.recently_disrupted["gpu"] = 1;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  s.recently_disrupted.clear();
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 3u);
  p.disruption.max_disrupted_per_interval = 10;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 4u);
}

// Removing an empty node moves no work: the disruption budget does not hold
// it back (the tick's removals and min_nodes still do), and it leaves the
// budget to the removals that move work.
TEST(Planner, EmptyNodesAreRemovedWhateverTheDisruptionBudgetLeaves) {
  Snapshot s = OversizedNodesSnapshot(2);
  for (int i = 0; i < 3; ++i) s.nodes.push_back(MakeNode(s, "e" + std::to_string(i), "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 1;
  auto removed = [&] {
    std::pair<int, int> empty_and_moved{0, 0};
    for (const auto& t : MakePlan(s, p).terminations)
      ++(t.kind == TerminationKind::kEmpty ? empty_and_moved.first : empty_and_moved.second);
    return empty_and_moved;
  };
  EXPECT_EQ(removed(), std::make_pair(3, 1));
  s.recently_disrupted["gpu"] = 5;  // past the budget: only the empty nodes go
  EXPECT_EQ(removed(), std::make_pair(3, 0));

  p.scaling.max_nodes_removed_per_tick = 2;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  p.scaling.max_nodes_removed_per_tick = 5;
  p.pools[0].min_nodes = 4;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 1u);
}

// Empty nodes past the tick's removals are not actions, but the plan says how
// many it does not need (for the governor's scale-down recommendation), per
// pool, within min_nodes and only empty ones.
TEST(Planner, CountsTheEmptyNodesLeftForLaterTicks) {
  Snapshot s = OversizedNodesSnapshot(1);
  for (int i = 0; i < 5; ++i) s.nodes.push_back(MakeNode(s, "e" + std::to_string(i), "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
  Policy p = BasePolicy();
  p.scaling.max_nodes_removed_per_tick = 2;
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 2u);
  for (const auto& t : plan.terminations) EXPECT_EQ(t.kind, TerminationKind::kEmpty);
  EXPECT_EQ(plan.empty_nodes_left_by_pool, (std::map<std::string, int>{{"gpu", 3}}));
  EXPECT_NE(plan.summary.find("pool gpu: 3 more empty node(s) not needed, left for later ticks"), std::string::npos)
      << plan.summary;

  p.pools[0].min_nodes = 4;  // 6 nodes: 2 may go, both this tick
  plan = MakePlan(s, p);
  EXPECT_EQ(plan.terminations.size(), 2u);
  EXPECT_TRUE(plan.empty_nodes_left_by_pool.empty());
  p.pools[0].min_nodes = 3;  // one more may go later
  EXPECT_EQ(MakePlan(s, p).empty_nodes_left_by_pool, (std::map<std::string, int>{{"gpu", 1}}));

  p.pools[0].min_nodes = 0;
  p.scaling.max_nodes_removed_per_tick = 10;  // room for every empty node: none left
  plan = MakePlan(s, p);
  EXPECT_GE(plan.terminations.size(), 5u);
  EXPECT_TRUE(plan.empty_nodes_left_by_pool.empty());
}

TEST(Planner, RemovesNothingMoreInAPoolWhoseDisruptionWindowIsFull) {
  Snapshot s = BaseSnapshot();
  Policy p = BasePolicy();
  p.pools[0].name = "full";
  NodePoolPolicy other = p.pools[0];
  other.name = "other";
  p.pools.push_back(other);
  p.disruption.max_disrupted_per_interval = 2;
  for (const char* pool : {"full", "other"})
    for (const char* n : {"-0", "-1"})
      s.nodes.push_back(MakeNode(s, std::string(pool) + n, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand,
                                 {OnDemandOnly(Unit(std::string("w-") + pool + n, 1))}, pool));
  s.recently_disrupted["full"] = 2;  // at the limit within the interval
  s.recently_disrupted["other"] = 1;
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].pool, "other");
}

TEST(Planner, ReplacesANodeWithACheaperOne) {
  Snapshot s = BaseSnapshot();
  // One small unit on a big on-demand node: a g6.xlarge holds it for far less.
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w", 1))}));
  Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.xlarge");
  EXPECT_GT(plan.terminations[0].saves_usd_per_hour, p.disruption.min_savings_usd_per_hour);
  ExpectValid(s, p, plan);
  // Below the savings threshold nothing moves.
  p.disruption.min_savings_usd_per_hour = 100;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, ReplacesTwoNodesWithOneCheaperNodeThatHoldsBoth) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;  // the two save 1.61 - 1.323 = 0.287 $/h
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 2u);
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_EQ(t.moved_unit_ids, std::vector<std::string>{"w-" + t.node_id});
  }
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].count, 1);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.4xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids.size(), 2u);
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 1.323, 1e-9);
  ExpectValid(s, p, plan);

  // Each removal moves work: a disruption budget of one allows neither.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.max_disrupted_per_interval = 100;
  // Below the savings threshold, or with a node that must not be disrupted,
  // nothing moves.
  p.disruption.min_savings_usd_per_hour = 0.3;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_usd_per_hour = 0.2;
  s.nodes[1].do_not_disrupt = true;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

std::vector<std::string> TerminatedNodes(const Plan& plan) {
  std::vector<std::string> ids;
  for (const auto& t : plan.terminations) ids.push_back(t.node_id);
  return ids;
}

// For two nodes replaced by one, min_savings_fraction is a share of both
// nodes' prices: 1.61 - 1.323 $/h less the moved work's restart cost (two
// 5-minute restarts of 0.4 of a 0.805 $/h node, 0.054 $ once) spread over
// the 24-hour replacement horizon saves 0.285 $/h, 17.7 % of 1.61.
TEST(Planner, TwoNodesReplacedByOneMustSaveTheFractionOfBothPrices) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;
  p.disruption.min_savings_fraction = 0.17;
  EXPECT_EQ(MakePlan(s, p).terminations.size(), 2u);
  p.disruption.min_savings_fraction = 0.18;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// The restart cost of the work a consolidation moves is paid once; it is
// spread over replacement_horizon, the hours the move has to pay for itself.
// Over one hour the same two restarts cost 0.054 $/h: 0.233 $/h saved, 14.5 %.
TEST(Planner, TheMovedWorksRestartCostIsSpreadOverTheReplacementHorizon) {
  Snapshot s = TwoNodesOneNodeHoldsSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.2;
  p.disruption.min_savings_fraction = 0.15;
  const Plan over_a_day = MakePlan(s, p);
  ASSERT_EQ(over_a_day.terminations.size(), 2u);
  EXPECT_NE(over_a_day.terminations[0].reason.find("save $0.28/h after $0.00/h disruption cost"), std::string::npos)
      << over_a_day.terminations[0].reason;
  p.disruption.replacement_horizon = Seconds(3600);
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_fraction = 0.14;
  const Plan over_an_hour = MakePlan(s, p);
  ASSERT_EQ(over_an_hour.terminations.size(), 2u);
  EXPECT_NE(over_an_hour.terminations[0].reason.find("save $0.23/h after $0.05/h disruption cost"), std::string::npos)
      << over_an_hour.terminations[0].reason;
}

TEST(Planner, SplitsTwoLongRunningNodesWorkOntoTwoCheaperNewNodes) {
  Snapshot s = SplitSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.3;

  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b"})) << plan.summary;
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_NE(t.reason.find("the two save $0.5"), std::string::npos) << t.reason;
  }
  std::map<std::string, std::set<std::string>> units_by_type;
  for (const auto& l : plan.launches) {
    EXPECT_EQ(l.count, 1) << l.offering.instance_type;
    units_by_type[l.offering.instance_type].insert(l.unit_ids.begin(), l.unit_ids.end());
  }
  EXPECT_EQ(units_by_type, (std::map<std::string, std::set<std::string>>{
                               {"g6.8xlarge", {"cpu-heavy", "replica"}}, {"g6.xlarge", {"small"}}}));
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 2.014 + 0.805, 1e-9);
  ExpectValid(s, p, plan);

  // Both removals move work: a disruption budget of one allows neither; a
  // saving under the threshold moves nothing either.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.max_disrupted_per_interval = 100;
  p.disruption.min_savings_usd_per_hour = 0.6;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  // Only placements that have lasted six hours are split.
  p.disruption.min_savings_usd_per_hour = 0.3;
  s.nodes[1].launch_time = s.time - Seconds(5 * 3600);
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// A split's reason names the other node and both new types, and a split
// whose saving over replacement_horizon does not cover the new nodes'
// warm-up (both paid while they warm up) is not made.
TEST(Planner, ASplitSaysWhatReplacesWhatAndMustPayBackTheWarmUp) {
  Snapshot s = SplitSnapshot();
  Policy p = BasePolicy();
  p.disruption.min_savings_usd_per_hour = 0.3;
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b"})) << plan.summary;
  const std::string& reason = plan.terminations[0].reason;
  EXPECT_EQ(reason.rfind("replaced, with b, by ", 0), 0u) << reason;
  EXPECT_NE(reason.find("g6.8xlarge"), std::string::npos) << reason;
  EXPECT_NE(reason.find("g6.xlarge"), std::string::npos) << reason;
  EXPECT_NE(reason.find("at $2.82/h: the two save"), std::string::npos) << reason;

  // About 0.51 $/h saved over 24 hours (12 $) against a day's warm-up of
  // both new nodes (2.819 $/h x 24 h): not made.
  s.warmup_seconds_by_family["g6"] = 24 * 3600;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, ReplacesANodeByACheaperOneForTheUnitsThatDoNotFitOtherNodesFreeRoom) {
  Snapshot s = PartlyIntoFreeRoomSnapshot();
  Policy p = PartlyIntoFreeRoomPolicy();

  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), std::vector<std::string>{"a"}) << plan.summary;
  const TerminationAction& t = plan.terminations[0];
  EXPECT_EQ(t.kind, TerminationKind::kReplace);
  EXPECT_EQ(std::set<std::string>(t.moved_unit_ids.begin(), t.moved_unit_ids.end()),
            (std::set<std::string>{"cpu-heavy", "small"}));
  EXPECT_EQ(t.reason.rfind("replaced by m5.8xlarge", 0), 0u) << t.reason;
  EXPECT_NE(t.reason.find("(1 of its units to other nodes' free room): saves $0.4"), std::string::npos)
      << t.reason;
  std::map<std::string, std::string> node_of;
  for (const auto& pl : plan.placements)
    node_of[pl.unit_id] = pl.launch_index >= 0 ? "launch " + std::to_string(pl.launch_index) : pl.node_id;
  EXPECT_EQ(node_of, (std::map<std::string, std::string>{{"small", "r"}, {"cpu-heavy", "launch 0"}}));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.8xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids, std::vector<std::string>{"cpu-heavy"});
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 4.602 + 1.536, 1e-9);
  ExpectValid(s, p, plan);

  // Under the savings threshold, nothing moves.
  p.disruption.min_savings_usd_per_hour = 0.5;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
  p.disruption.min_savings_usd_per_hour = 0.3;
  // Without the free L4, no node holds both units for less.
  s.nodes[0].running.push_back(OnDemandOnly(Unit("fourth", 1, 4000, 16384)));
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// Where one new node also holds both units, the replacement that saves more
// is made: a 1-L4, 24-vCPU node at 1.70 $/h saves 0.31 $/h against the
// partial move's 0.48; at 1.20 $/h it saves 0.81 and takes both units.
TEST(Planner, MakesWhicheverReplacementSavesMoreTheWholeNodesWorkOrPartOfIt) {
  const Policy p = PartlyIntoFreeRoomPolicy();
  for (double price : {1.70, 1.20}) {
    SCOPED_TRACE(price);
    Snapshot s = PartlyIntoFreeRoomSnapshot();
    AddOnDemandType(s, testing::Type("g6.6xlarge", "g6", "NVIDIA-L4", 1, 23034, 24, 96), price);
    const Plan plan = MakePlan(s, p);
    ASSERT_EQ(TerminatedNodes(plan), std::vector<std::string>{"a"}) << plan.summary;
    ASSERT_EQ(plan.launches.size(), 1u);
    if (price > 1.5) {
      EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.8xlarge");
      EXPECT_EQ(plan.launches[0].unit_ids, std::vector<std::string>{"cpu-heavy"});
    } else {
      EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.6xlarge");
      EXPECT_EQ(plan.launches[0].unit_ids.size(), 2u);
      EXPECT_EQ(plan.terminations[0].reason.find("free room"), std::string::npos)
          << plan.terminations[0].reason;
    }
    ExpectValid(s, p, plan);
  }
}

// Only lasting placements on on-demand nodes are split this way: a node
// younger than six hours, or a spot node (whose work its pool's next reclaim
// places afresh anyway), keeps its work.
TEST(Planner, SendsPartOfANodesWorkToFreeRoomOnlyFromLastingOnDemandNodes) {
  const Policy p = PartlyIntoFreeRoomPolicy();
  Snapshot young = PartlyIntoFreeRoomSnapshot();
  young.nodes[1].launch_time = young.time - Seconds(5 * 3600);
  EXPECT_TRUE(MakePlan(young, p).terminations.empty()) << MakePlan(young, p).summary;

  // On spot at 90 % of on-demand, with an m5.8xlarge at 40 %: a saving of
  // more than 1 $/h the partial move would make from an on-demand node.
  Snapshot spot = PartlyIntoFreeRoomSnapshot();
  spot.offerings.push_back(
      testing::MakeOffering("g6.8xlarge", "us-east-1a", CapacityType::kSpot, 2.014, 0.9));
  spot.offerings.push_back(testing::MakeOffering("m5.8xlarge", "us-east-1a", CapacityType::kSpot, 1.536));
  spot.nodes[1] = MakeNode(spot, "a", "g6.8xlarge", "us-east-1a", CapacityType::kSpot,
                           {Unit("cpu-heavy", 0, 20000, 65536), Unit("small", 1, 4000, 16384)});
  spot.nodes[1].launch_time = spot.time - Seconds(7 * 3600);
  const Plan plan = MakePlan(spot, p);
  EXPECT_TRUE(plan.terminations.empty()) << plan.summary;
}

TEST(Planner, ReplacesFourNodesWithOneLargerNodeWhenTheDisruptionBudgetAllowsFour) {
  Snapshot s = FourSingleGpuNodesSnapshot();
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 4;
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(plan), (std::vector<std::string>{"a", "b", "c", "d"})) << plan.summary;
  for (const auto& t : plan.terminations) {
    EXPECT_EQ(t.kind, TerminationKind::kReplace) << t.node_id;
    EXPECT_EQ(t.moved_unit_ids, std::vector<std::string>{"w-" + t.node_id});
    EXPECT_NE(t.reason.find("the 4 save"), std::string::npos) << t.reason;
    EXPECT_EQ(t.reason.find("to follow"), std::string::npos) << t.reason;
  }
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].count, 1);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.12xlarge");
  EXPECT_EQ(plan.launches[0].unit_ids.size(), 4u);
  EXPECT_NEAR(plan.cost_after_usd_per_hour, 4.602, 1e-9);
  ExpectValid(s, p, plan);

  // A node that must not be disrupted leaves three, which no cheaper node holds.
  s.nodes[2].do_not_disrupt = true;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

// With a budget of two, the group is staged: the new node is sized for all
// four, the budget's two move now (the bill is higher until the rest follow),
// and the next plan moves the other two into its free room, each a
// single-node move that saves its whole price.
TEST(Planner, StagesAGroupLargerThanTheDisruptionBudgetAndTheRestFollow) {
  Snapshot s = FourSingleGpuNodesSnapshot();
  Policy p = BasePolicy();
  p.disruption.max_disrupted_per_interval = 2;
  const Plan first = MakePlan(s, p);
  ASSERT_EQ(TerminatedNodes(first), (std::vector<std::string>{"a", "b"})) << first.summary;
  for (const auto& t : first.terminations)
    EXPECT_NE(t.reason.find("the 4 (2 to follow into its free room) save"), std::string::npos) << t.reason;
  ASSERT_EQ(first.launches.size(), 1u);
  EXPECT_EQ(first.launches[0].offering.instance_type, "g6.12xlarge");
  EXPECT_EQ(first.launches[0].unit_ids, (std::vector<std::string>{"w-a", "w-b"}));
  EXPECT_NEAR(first.cost_after_usd_per_hour, 4.602 + 2 * 1.323, 1e-9);
  ExpectValid(s, p, first);

  // The new node is up, holding the two; the budget's window has passed.
  Snapshot next = s;
  next.nodes.erase(next.nodes.begin(), next.nodes.begin() + 2);
  next.nodes.push_back(MakeNode(next, "new", "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand,
                                {s.nodes[0].running[0], s.nodes[1].running[0]}));
  next.nodes.back().launch_time = next.time - Seconds(900);
  const Plan second = MakePlan(next, p);
  ASSERT_EQ(TerminatedNodes(second), (std::vector<std::string>{"c", "d"})) << second.summary;
  for (const auto& t : second.terminations) EXPECT_EQ(t.kind, TerminationKind::kConsolidate) << t.node_id;
  EXPECT_TRUE(second.launches.empty());
  EXPECT_NEAR(second.cost_after_usd_per_hour, 4.602, 1e-9);
  ExpectValid(next, p, second);

  // A budget of one stages nothing: one node moved into a larger one alone
  // would be undone by the next plan's single-node replacement.
  p.disruption.max_disrupted_per_interval = 1;
  EXPECT_TRUE(MakePlan(s, p).terminations.empty());
}

TEST(Planner, AReplacementWhoseSavingOverTheHorizonDoesNotCoverTheWarmUpOverlapIsNotMade) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w", 1))}));
  Policy p = BasePolicy();
  // A one-minute horizon: the saving of a minute against the new node's
  // price over its warm-up.
  p.disruption.replacement_horizon = Seconds(60);
  s.warmup_seconds_by_family = {{"g6", 120}};
  Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "g6.xlarge");
  ExpectValid(s, p, plan);

  // g6 nodes learned to take half an hour: the g6 move no longer pays; the
  // next offering whose warm-up (the catalog's) it covers is taken.
  s.warmup_seconds_by_family = {{"g6", 1800}};
  plan = MakePlan(s, p);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_NE(plan.launches[0].offering.instance_type.rfind("g6.", 0), 0u) << plan.launches[0].offering.instance_type;
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);

  // Every family that slow: no replacement at all.
  for (const InstanceType& t : s.instance_types) s.warmup_seconds_by_family[t.family.empty() ? t.name : t.family] = 1800;
  plan = MakePlan(s, p);
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
}

TEST(Planner, ReplacesAGpuNodeThatOnlyHoldsCpuWork) {
  Snapshot s = BaseSnapshot();
  s.nodes.push_back(MakeNode(s, "gpu", "g5.12xlarge", "us-east-1a", CapacityType::kOnDemand, {Unit("cpu-only", 0, 2000, 4096)}));
  Policy p = BasePolicy();
  p.pools[0].families = {"g5", "g6", "p4de", "m5"};
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].offering.instance_type, "m5.xlarge");
  ExpectValid(s, p, plan);
}

// --- free room by scarcity ---

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

// --- determinism and properties ---

Snapshot RandomSnapshot(uint32_t seed, Policy* policy) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  Snapshot s = BaseSnapshot();
  for (auto& o : s.offerings) {
    if (pick(10) == 0) o.available = false;
    if (o.capacity_type == CapacityType::kSpot) {
      o.usd_per_hour = o.on_demand_usd_per_hour * (0.3 + 0.5 * pick(100) / 100.0);
      o.interruptions_per_hour = 0.01 * pick(30);
    }
  }
  *policy = BasePolicy();
  policy->classes[0].max_spot_share = pick(3) == 0 ? 0.5 : 1.0;
  policy->classes[1].max_zone_share = pick(3) == 0 ? 0.6 : 1.0;
  // From the seed, not the generator, so the other draws stay as they were.
  policy->spot.max_pool_share = seed % 3 == 0 ? 0.3 : 1.0;
  if (seed % 5 == 0) {
    for (const auto& o : s.offerings) {
      if (o.capacity_type != CapacityType::kSpot) continue;
      s.reclaimed_spot_pools = {o.Key()};
      break;
    }
  }
  policy->pools[0].max_nodes = 5 + pick(30);
  policy->scaling.max_nodes_added_per_tick = 3 + pick(20);
  if (pick(3) == 0) policy->budget.global.hourly_usd = 5.0 + pick(60);
  const int nodes = pick(6);
  for (int i = 0; i < nodes; ++i) {
    const auto& o = s.offerings[pick(int(s.offerings.size()))];
    if (o.instance_type == "m5.xlarge") continue;
    Node n = MakeNode(s, "n" + std::to_string(i), o.instance_type, o.zone, o.capacity_type);
    if (pick(2)) n.running.push_back(Unit("r" + std::to_string(i), 1));
    s.nodes.push_back(n);
  }
  const int units = 1 + pick(40);
  for (int i = 0; i < units; ++i) {
    DemandUnit u;
    switch (pick(5)) {
      case 0: u = Unit("", 1 + pick(4), 1000 * (1 + pick(8)), 1024 * (2 + pick(30))); break;
      case 1: u = Milli("", 100 * (1 + pick(9))); break;
      case 2: u = Mig("", pick(2) ? "1g.10gb" : "3g.40gb"); break;
      case 3: u = Unit("", 0, 1000 * (1 + pick(3)), 2048); break;
      default: u = Unit("", 8, 90000, 500000, "training"); break;
    }
    u.id = "u" + std::to_string(i);
    u.priority = pick(3);
    u.interruptible = pick(4) != 0;
    if (pick(8) == 0) u.zones = {"us-east-1b"};
    if (pick(5) == 0) u.workload_class = "training";
    s.pending.push_back(u);
  }
  return s;
}

TEST(Planner, GivesTheSamePlanForTheSameInput) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    const Snapshot s = RandomSnapshot(seed, &p);
    const std::string a = testing::CanonicalPlan(MakePlan(s, p));
    const Snapshot copy = s;
    const Policy pcopy = p;
    EXPECT_EQ(a, testing::CanonicalPlan(MakePlan(copy, pcopy)));
  }
}

TEST(Planner, RandomInstancesGiveValidPlans) {
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    const Snapshot s = RandomSnapshot(seed, &p);
    const Plan plan = MakePlan(s, p);
    for (const auto& v : CheckPlan(s, p, plan)) ADD_FAILURE() << v << "\n" << plan.summary;
    // Reported interruption cost equals the sum over launches plus existing work.
    double launches = 0;
    for (const auto& l : plan.launches) launches += l.expected_interruption_usd_per_hour;
    EXPECT_LE(launches, plan.expected_interruption_usd_per_hour + 1e-9);
  }
}

TEST(Planner, RandomInstancesWithFreeRoomAndPinsGiveValidPlans) {
  // More existing nodes than RandomSnapshot, and GPU-model, zone and GPU
  // memory pins, so that the scarcity order and the free-room repairs move
  // work between existing and new nodes.
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Policy p;
    Snapshot s = RandomSnapshot(seed, &p);
    // The added nodes can put the fleet over a budget or pool max that
    // RandomSnapshot drew for fewer nodes: those limits stay off here.
    p.budget.global.hourly_usd.reset();
    p.pools[0].max_nodes = 1000;
    std::mt19937 rng(seed * 31u + 7u);
    auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
    for (int i = 0; i < 6; ++i) {
      const auto& o = s.offerings[size_t(pick(int(s.offerings.size())))];
      if (o.instance_type == "m5.xlarge") continue;
      Node n = MakeNode(s, "x" + std::to_string(i), o.instance_type, o.zone, o.capacity_type);
      int gpus = 0;
      for (const auto& t : s.instance_types)
        if (t.name == o.instance_type) gpus = t.gpu_count;
      n.running = Units(n.id + "-r", pick(gpus), Unit("", 1));  // at least one GPU stays free
      s.nodes.push_back(n);
    }
    for (auto& u : s.pending) {
      if (u.gpus == 0) continue;
      if (pick(4) == 0) u.gpu_models = {pick(2) ? "a10g" : "l4"};
      if (pick(6) == 0) u.min_gpu_memory_mib = 40000;
      if (pick(5) == 0) u.zones = {"us-east-1a"};
    }
    const Plan plan = MakePlan(s, p);
    for (const auto& v : CheckPlan(s, p, plan)) ADD_FAILURE() << v << "\n" << plan.summary;
    EXPECT_EQ(testing::CanonicalPlan(plan), testing::CanonicalPlan(MakePlan(s, p)));
  }
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
}  // namespace gpuscaler
