// The planner-facing policy fields' table (field_effects_test.cc), shared by
// the files that hold its rows (field_effects_fleet_cases.cc,
// field_effects_work_cases.cc): what a plan did, the scenes both plans of a
// row run on, the expectations that compare them, and the row type.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"

namespace gpuscaler::field_effects_testing {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Unit;
using testing::Units;

// --- what a plan did ---

// Pending units placed on new spot nodes.
inline int UnitsOnSpot(const Plan& p) {
  int n = 0;
  for (const auto& l : p.launches)
    if (l.offering.capacity_type == CapacityType::kSpot) n += int(l.unit_ids.size());
  return n;
}

inline std::set<std::string> Launches(const Plan& p, std::string (*what)(const LaunchAction&)) {
  std::set<std::string> out;
  for (const auto& l : p.launches) out.insert(what(l));
  return out;
}
inline std::string TypeOf(const LaunchAction& l) { return l.offering.instance_type; }
inline std::string ZoneOf(const LaunchAction& l) { return l.offering.zone; }
inline std::string RegionOf(const LaunchAction& l) { return l.offering.region; }
inline std::string PoolOf(const LaunchAction& l) { return l.pool; }

inline int Unplaced(const Plan& p, UnplacedReason reason) {
  int n = 0;
  for (const auto& u : p.unplaced) n += u.reason == reason;
  return n;
}

inline std::set<std::string> UnplacedClasses(const Plan& p) {
  std::set<std::string> out;
  for (const auto& u : p.unplaced) out.insert(u.workload_class);
  return out;
}

// --- scenes ---

// `n` pending units of class `cls` as the policy shapes them.
inline void Demand(Snapshot& s, const Policy& p, const std::string& cls, int n) {
  for (auto& u : Units(cls + "-", n, p.FindClass(cls)->Unit())) s.pending.push_back(u);
}

inline void OnDemandOnly(Policy& p) { p.pools[0].capacity_types = {CapacityType::kOnDemand}; }

inline void SpotInterruptions(Snapshot& s, double per_hour) {
  for (auto& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot) o.interruptions_per_hour = per_hour;
}

// 4-hour jobs on spot interrupted 0.9 times an hour.
inline void FourHourWorkOftenInterrupted(Snapshot& s, Policy& p) {
  SpotInterruptions(s, 0.9);
  p.classes[0].expected_runtime = Seconds(4 * 3600);
  Demand(s, p, "inference", 1);
}

// Three empty on-demand nodes, two hours old.
inline void IdleNodes(Snapshot& s, Policy&) {
  for (const char* id : {"idle-a", "idle-b", "idle-c"})
    s.nodes.push_back(MakeNode(s, id, "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
}

// One small on-demand unit alone on a g5.48xlarge: a g6.xlarge holds it for
// far less.
inline void OversizedNode(Snapshot& s, Policy&) {
  DemandUnit u = Unit("w", 1);
  u.interruptible = false;
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
}

// Three such nodes: two of them move their unit onto the third, removals
// that move work and so count against the disruption budget (empty nodes
// do not).
inline void OversizedNodes(Snapshot& s, Policy&) {
  for (const char* id : {"big-a", "big-b", "big-c"}) {
    DemandUnit u = Unit(std::string("w-") + id, 1);
    u.interruptible = false;
    s.nodes.push_back(MakeNode(s, id, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
}

using Scene = std::function<void(Snapshot&, Policy&)>;
using Expect = std::function<void(const Plan& base, const Plan& set)>;

// `n` units of the inference class.
inline Scene InferenceUnits(int n) {
  return [n](Snapshot& s, Policy& p) { Demand(s, p, "inference", n); };
}

// `n` inference units of 4 GPUs: one g6.12xlarge each.
inline Scene FourGpuUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    p.classes[0].gpus_per_job = 4;
    Demand(s, p, "inference", n);
  };
}

// `n` inference units of 8 GPUs: one a node, on any type that holds one,
// so a cap on nodes is a cap on units (with smaller units, a pool short of
// node slots puts several on one larger node).
inline Scene EightGpuUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    p.classes[0].gpus_per_job = 8;
    Demand(s, p, "inference", n);
  };
}

// `n` inference units in a pool that buys only on-demand.
inline Scene OnDemandUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    OnDemandOnly(p);
    Demand(s, p, "inference", n);
  };
}

// The field moves the launches from one instance type to another.
inline Expect MovesType(std::string from, std::string to) {
  return [from, to](const Plan& base, const Plan& set) {
    EXPECT_EQ(Launches(base, TypeOf), std::set<std::string>{from});
    EXPECT_EQ(Launches(set, TypeOf), std::set<std::string>{to});
  };
}

// The field takes `units` pending units off spot.
inline Expect KeepsOffSpot(int units) {
  return [units](const Plan& base, const Plan& set) {
    EXPECT_EQ(UnitsOnSpot(base), units);
    EXPECT_EQ(UnitsOnSpot(set), 0);
  };
}

// The field changes the nodes launched (or removed) from `base_n` to `set_n`.
inline Expect NodesLaunched(int base_n, int set_n) {
  return [base_n, set_n](const Plan& base, const Plan& set) {
    EXPECT_EQ(LaunchedNodes(base), base_n);
    EXPECT_EQ(LaunchedNodes(set), set_n);
  };
}
// NodesLaunched, and what is left out stays unplaced for `why`.
inline Expect CapsLaunches(int base_n, int set_n, UnplacedReason why) {
  return [=](const Plan& base, const Plan& set) {
    NodesLaunched(base_n, set_n)(base, set);
    EXPECT_EQ(Unplaced(set, why), base_n - set_n);
  };
}
inline Expect NodesRemoved(size_t base_n, size_t set_n) {
  return [base_n, set_n](const Plan& base, const Plan& set) {
    EXPECT_EQ(base.terminations.size(), base_n);
    EXPECT_EQ(set.terminations.size(), set_n);
  };
}

// The field spreads the class's launches from one zone over two.
inline Expect SpreadsOverTwoZones() {
  return [](const Plan& base, const Plan& set) {
    EXPECT_EQ(Launches(base, ZoneOf).size(), 1u);
    EXPECT_EQ(Launches(set, ZoneOf).size(), 2u);
  };
}

// --- demand forecasts (classes[].forecast) ---

// GPUs on the plan's new nodes.
inline int GpusLaunched(const Plan& p) {
  int n = 0;
  for (const auto& l : p.launches)
    for (const auto& pt : testing::Catalog())
      if (pt.type.name == l.offering.instance_type) n += l.count * pt.type.gpu_count;
  return n;
}

// The controller's forecast of the inference class, as the snapshot carries
// it: nothing pending or running now; peak demand within the horizon 0 GPUs
// up to the median, then 1, 2, 3, 4 GPUs at q0.6 to q0.9, 5 at q0.95, 8 at
// q0.99. The lead time is two minutes, and so is the horizon unless the
// policy sets one (what the controller does).
inline void ForecastInSnapshot(Snapshot& s, Policy& p) {
  DemandForecast f;
  f.workload_class = "inference";
  f.lead_time = Seconds(120);
  const WorkloadClassPolicy* c = p.FindClass("inference");
  f.horizon = c->forecast && c->forecast->horizon ? *c->forecast->horizon : f.lead_time;
  f.levels = {{0.1, 0}, {0.2, 0}, {0.3, 0}, {0.4, 0}, {0.5, 0}, {0.6, 1},
              {0.7, 2}, {0.8, 3}, {0.9, 4}, {0.95, 5}, {0.99, 8}};
  s.forecasts.push_back(f);
}

// The same with classes[].forecast set to its defaults when the field did
// not set it. With them one L4 spot unit costs $0.32/h against a wait valued
// at its on-demand $0.81/h: a unit is worth launching ahead while the chance
// it is needed is at least 0.29, which holds for 3 GPUs (P 0.5, 0.4, 0.3).
inline void ForecastClass(Snapshot& s, Policy& p) {
  if (!p.classes[0].forecast) p.classes[0].forecast = ForecastPolicy{};
  ForecastInSnapshot(s, p);
}

inline Expect GpusAhead(int base_n, int set_n) {
  return [base_n, set_n](const Plan& base, const Plan& set) {
    EXPECT_EQ(GpusLaunched(base), base_n);
    EXPECT_EQ(GpusLaunched(set), set_n);
    // Forecast units are never in what the plan places or leaves unplaced.
    for (const Plan* plan : {&base, &set}) {
      EXPECT_TRUE(plan->placements.empty());
      EXPECT_TRUE(plan->unplaced.empty());
    }
  };
}

// --- deferrable work (classes[].deadline) ---

// Two 1-GPU inference units submitted now, with no spot capacity anywhere;
// each carries its class's deadline when the class has one (what the work
// sources do).
inline void DeferrableUnits(Snapshot& s, Policy& p) {
  for (Offering& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot) o.available = false;
  const WorkloadClassPolicy* c = p.FindClass("inference");
  for (DemandUnit& u : testing::Units("d", 2, testing::Unit("", 1))) {
    u.expected_runtime = Seconds(3600);
    if (c->deadline) u.deadline = s.time + c->deadline->Allowed(u.expected_runtime);
    s.pending.push_back(u);
  }
}

struct FieldCase {
  std::string field;                                   // as docs/policy.md names it
  std::function<void(Policy&)> set;                    // the field set
  Scene scene;                                         // both plans; runs after `set`
  Expect expect;
};

// The rows of each part of the table, in the order of docs/policy.md. Without
// a field set, one inference unit goes on a g6.xlarge (L4, 4 vCPU, 16 GiB),
// the cheapest type, on spot (40 % of on-demand, 0.05 interruptions an hour).
std::vector<FieldCase> PoolFieldCases();
std::vector<FieldCase> ClassFieldCases();
std::vector<FieldCase> BudgetFieldCases();
std::vector<FieldCase> SpotFieldCases();
std::vector<FieldCase> ForecastFieldCases();
std::vector<FieldCase> DeferrableFieldCases();
std::vector<FieldCase> ScalingFieldCases();
std::vector<FieldCase> DisruptionFieldCases();

}  // namespace gpuscaler::field_effects_testing
