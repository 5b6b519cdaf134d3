// Every policy field the planner reads, with the plan difference it makes:
// one row per field documented in docs/policy.md, each planning the same
// scene with the field at its base value and set, and checking what must
// change. Class fields that shape demand reach the planner through
// WorkloadClassPolicy::Unit() (the daemon's queue-derived units), so each
// scene builds its pending units from the policy it plans with. Fields whose
// effect lives outside the planner are listed at the end with their tests.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Unit;
using testing::Units;

// --- what a plan did ---

// Pending units placed on new spot nodes.
int UnitsOnSpot(const Plan& p) {
  int n = 0;
  for (const auto& l : p.launches)
    if (l.offering.capacity_type == CapacityType::kSpot) n += int(l.unit_ids.size());
  return n;
}

std::set<std::string> Launches(const Plan& p, std::string (*what)(const LaunchAction&)) {
  std::set<std::string> out;
  for (const auto& l : p.launches) out.insert(what(l));
  return out;
}
std::string TypeOf(const LaunchAction& l) { return l.offering.instance_type; }
std::string ZoneOf(const LaunchAction& l) { return l.offering.zone; }
std::string RegionOf(const LaunchAction& l) { return l.offering.region; }
std::string PoolOf(const LaunchAction& l) { return l.pool; }

int Unplaced(const Plan& p, UnplacedReason reason) {
  int n = 0;
  for (const auto& u : p.unplaced) n += u.reason == reason;
  return n;
}

std::set<std::string> UnplacedClasses(const Plan& p) {
  std::set<std::string> out;
  for (const auto& u : p.unplaced) out.insert(u.workload_class);
  return out;
}

// --- scenes ---

// `n` pending units of class `cls` as the policy shapes them.
void Demand(Snapshot& s, const Policy& p, const std::string& cls, int n) {
  for (auto& u : Units(cls + "-", n, p.FindClass(cls)->Unit())) s.pending.push_back(u);
}

void OnDemandOnly(Policy& p) { p.pools[0].capacity_types = {CapacityType::kOnDemand}; }

void SpotInterruptions(Snapshot& s, double per_hour) {
  for (auto& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot) o.interruptions_per_hour = per_hour;
}

// 4-hour jobs on spot interrupted 0.9 times an hour.
void FourHourWorkOftenInterrupted(Snapshot& s, Policy& p) {
  SpotInterruptions(s, 0.9);
  p.classes[0].expected_runtime = Seconds(4 * 3600);
  Demand(s, p, "inference", 1);
}

// Three empty on-demand nodes, two hours old.
void IdleNodes(Snapshot& s, Policy&) {
  for (const char* id : {"idle-a", "idle-b", "idle-c"})
    s.nodes.push_back(MakeNode(s, id, "g5.xlarge", "us-east-1a", CapacityType::kOnDemand));
}

// One small on-demand unit alone on a g5.48xlarge: a g6.xlarge holds it for
// far less.
void OversizedNode(Snapshot& s, Policy&) {
  DemandUnit u = Unit("w", 1);
  u.interruptible = false;
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
}

// Three such nodes: two of them move their unit onto the third, removals
// that move work and so count against the disruption budget (empty nodes
// do not).
void OversizedNodes(Snapshot& s, Policy&) {
  for (const char* id : {"big-a", "big-b", "big-c"}) {
    DemandUnit u = Unit(std::string("w-") + id, 1);
    u.interruptible = false;
    s.nodes.push_back(MakeNode(s, id, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
}

using Scene = std::function<void(Snapshot&, Policy&)>;
using Expect = std::function<void(const Plan& base, const Plan& set)>;

// `n` units of the inference class.
Scene InferenceUnits(int n) {
  return [n](Snapshot& s, Policy& p) { Demand(s, p, "inference", n); };
}

// `n` inference units of 4 GPUs: one g6.12xlarge each.
Scene FourGpuUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    p.classes[0].gpus_per_job = 4;
    Demand(s, p, "inference", n);
  };
}

// `n` inference units of 8 GPUs: one a node, on any type that holds one,
// so a cap on nodes is a cap on units (with smaller units, a pool short of
// node slots puts several on one larger node).
Scene EightGpuUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    p.classes[0].gpus_per_job = 8;
    Demand(s, p, "inference", n);
  };
}

// `n` inference units in a pool that buys only on-demand.
Scene OnDemandUnits(int n) {
  return [n](Snapshot& s, Policy& p) {
    OnDemandOnly(p);
    Demand(s, p, "inference", n);
  };
}

// The field moves the launches from one instance type to another.
Expect MovesType(std::string from, std::string to) {
  return [from, to](const Plan& base, const Plan& set) {
    EXPECT_EQ(Launches(base, TypeOf), std::set<std::string>{from});
    EXPECT_EQ(Launches(set, TypeOf), std::set<std::string>{to});
  };
}

// The field takes `units` pending units off spot.
Expect KeepsOffSpot(int units) {
  return [units](const Plan& base, const Plan& set) {
    EXPECT_EQ(UnitsOnSpot(base), units);
    EXPECT_EQ(UnitsOnSpot(set), 0);
  };
}

// The field changes the nodes launched (or removed) from `base_n` to `set_n`.
Expect NodesLaunched(int base_n, int set_n) {
  return [base_n, set_n](const Plan& base, const Plan& set) {
    EXPECT_EQ(LaunchedNodes(base), base_n);
    EXPECT_EQ(LaunchedNodes(set), set_n);
  };
}
// NodesLaunched, and what is left out stays unplaced for `why`.
Expect CapsLaunches(int base_n, int set_n, UnplacedReason why) {
  return [=](const Plan& base, const Plan& set) {
    NodesLaunched(base_n, set_n)(base, set);
    EXPECT_EQ(Unplaced(set, why), base_n - set_n);
  };
}
Expect NodesRemoved(size_t base_n, size_t set_n) {
  return [base_n, set_n](const Plan& base, const Plan& set) {
    EXPECT_EQ(base.terminations.size(), base_n);
    EXPECT_EQ(set.terminations.size(), set_n);
  };
}

// The field spreads the class's launches from one zone over two.
Expect SpreadsOverTwoZones() {
  return [](const Plan& base, const Plan& set) {
    EXPECT_EQ(Launches(base, ZoneOf).size(), 1u);
    EXPECT_EQ(Launches(set, ZoneOf).size(), 2u);
  };
}

// --- demand forecasts (classes[].forecast) ---

// GPUs on the plan's new nodes.
int GpusLaunched(const Plan& p) {
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
void ForecastInSnapshot(Snapshot& s, Policy& p) {
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
void ForecastClass(Snapshot& s, Policy& p) {
  if (!p.classes[0].forecast) p.classes[0].forecast = ForecastPolicy{};
  ForecastInSnapshot(s, p);
}

Expect GpusAhead(int base_n, int set_n) {
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
void DeferrableUnits(Snapshot& s, Policy& p) {
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

const std::vector<FieldCase>& Cases() {
  // Without a field set, one inference unit goes on a g6.xlarge (L4, 4 vCPU,
  // 16 GiB), the cheapest type, on spot (40 % of on-demand, 0.05
  // interruptions an hour).
  static const std::vector<FieldCase> cases = {
      // --- pools ---
      {"pools[].instance_types", [](Policy& p) { p.pools[0].instance_types = {"g5.xlarge"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].families", [](Policy& p) { p.pools[0].families = {"g5"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].gpu_models", [](Policy& p) { p.pools[0].gpu_models = {"a10g"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      {"pools[].regions", [](Policy& p) { p.pools[0].regions = {"us-east-1"}; },
       [](Snapshot& s, Policy& p) {
         // The same type for half the price in another region.
         for (const CapacityType c : {CapacityType::kOnDemand, CapacityType::kSpot}) {
           Offering o = testing::FindOffering(s, "g6.xlarge", "us-east-1a", c);
           o.region = "us-west-2";
           o.zone = "us-west-2a";
           o.usd_per_hour /= 2;
           o.on_demand_usd_per_hour /= 2;
           s.offerings.push_back(o);
         }
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Launches(base, RegionOf), std::set<std::string>{"us-west-2"});
         EXPECT_EQ(Launches(set, RegionOf), std::set<std::string>{"us-east-1"});
       }},
      {"pools[].zones", [](Policy& p) { p.pools[0].zones = {"us-east-1b"}; },
       [](Snapshot& s, Policy& p) {
         for (auto& o : s.offerings)
           if (o.zone == "us-east-1b") o.usd_per_hour *= 1.1;
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Launches(base, ZoneOf), std::set<std::string>{"us-east-1a"});
         EXPECT_EQ(Launches(set, ZoneOf), std::set<std::string>{"us-east-1b"});
       }},
      {"pools[].capacity_types", OnDemandOnly, InferenceUnits(2), KeepsOffSpot(2)},
      {"pools[].min_nodes", [](Policy& p) { p.pools[0].min_nodes = 2; }, [](Snapshot&, Policy&) {},
       [](const Plan& base, const Plan& set) {
         NodesLaunched(0, 2)(base, set);
         EXPECT_EQ(Launches(set, ZoneOf), (std::set<std::string>{"us-east-1a", "us-east-1b"}));
       }},
      // A stopped g6.xlarge waits; an on-demand unit is pending: with warm
      // capacity it is woken instead of a cold launch.
      {"pools[].warm",
       [](Policy& p) {
         p.pools[0].warm = WarmPoolPolicy{};
         p.pools[0].warm->size = 1;
       },
       [](Snapshot& s, Policy&) {
         WarmNode w;
         w.instance_id = "i-warmfield";
         w.pool = "gpu";
         w.offering = testing::FindOffering(s, "g6.xlarge", "us-east-1a", CapacityType::kOnDemand);
         w.since = s.time - Seconds(600);
         s.warm_nodes = {w};
         DemandUnit u = Unit("u0", 1);
         u.capacity_type = CapacityType::kOnDemand;
         s.pending = {u};
       },
       [](const Plan& base, const Plan& set) {
         const auto woken = [](const Plan& plan) {
           int n = 0;
           for (const auto& l : plan.launches) n += int(l.wake_instance_ids.size());
           return n;
         };
         EXPECT_EQ(woken(base), 0);
         EXPECT_EQ(woken(set), 1);
       }},
      {"pools[].max_nodes", [](Policy& p) { p.pools[0].max_nodes = 1; }, EightGpuUnits(3),
       CapsLaunches(3, 1, UnplacedReason::kPoolMax)},
      // Two free slots of a g5.12xlarge reservation: selected, they take two
      // of the three 4-GPU units, the third is bought.
      {"pools[].reservations", [](Policy& p) { p.pools[0].reservations = {{"cr-0field", {}}}; },
       [](Snapshot& s, Policy& p) {
         testing::AddReservation(s, "cr-0field", "g5.12xlarge", "us-east-1a", 2, 2);
         FourGpuUnits(3)(s, p);
       },
       [](const Plan& base, const Plan& set) {
         const auto reserved = [](const Plan& plan) {
           int n = 0;
           for (const auto& l : plan.launches)
             if (l.offering.capacity_type == CapacityType::kReserved) n += l.count;
           return n;
         };
         EXPECT_EQ(reserved(base), 0);
         EXPECT_EQ(reserved(set), 2);
         EXPECT_EQ(LaunchedNodes(set), 3);
       }},

      // --- classes ---
      {"classes[].pools", [](Policy& p) { p.classes[0].pools = {"a10g"}; },
       [](Snapshot& s, Policy& p) {
         NodePoolPolicy a10g;
         a10g.name = "a10g";
         a10g.gpu_models = {"a10g"};
         p.pools.push_back(a10g);
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Launches(base, PoolOf), std::set<std::string>{"gpu"});
         EXPECT_EQ(Launches(set, PoolOf), std::set<std::string>{"a10g"});
       }},
      {"classes[].interruptible", [](Policy& p) { p.classes[0].interruptible = false; }, InferenceUnits(2),
       KeepsOffSpot(2)},
      {"classes[].max_spot_share", [](Policy& p) { p.classes[0].max_spot_share = 0.5; }, InferenceUnits(8),
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(UnitsOnSpot(base), 8);
         EXPECT_GT(UnitsOnSpot(set), 0);
         EXPECT_LE(UnitsOnSpot(set), 4);
         EXPECT_TRUE(set.unplaced.empty());
       }},
      // Frequent interruptions of 4-hour work: with 30-minute checkpoints spot
      // still pays; losing the whole run (or a 2-hour restart) does not.
      {"classes[].checkpoint_interval", [](Policy& p) { p.classes[0].checkpoint_interval = Seconds(4 * 3600); },
       FourHourWorkOftenInterrupted, KeepsOffSpot(1)},
      {"classes[].restart_cost", [](Policy& p) { p.classes[0].restart_cost = Seconds(2 * 3600); },
       FourHourWorkOftenInterrupted, KeepsOffSpot(1)},
      // Without checkpoints a 4-hour run loses 2 hours an interruption; saved
      // at the notice, 2 minutes.
      {"classes[].checkpoint_on_notice", [](Policy& p) { p.classes[0].checkpoint_on_notice = true; },
       [](Snapshot& s, Policy& p) {
         p.classes[0].checkpoint_interval = Seconds(4 * 3600);
         FourHourWorkOftenInterrupted(s, p);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(UnitsOnSpot(base), 0);
         EXPECT_EQ(UnitsOnSpot(set), 1);
       }},
      {"classes[].priority", [](Policy& p) { p.classes[0].priority = 10; },
       [](Snapshot& s, Policy& p) {
         OnDemandOnly(p);
         p.budget.global.hourly_usd = 1.7;  // two g6.xlarge
         Demand(s, p, "training", 2);
         Demand(s, p, "inference", 2);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(UnplacedClasses(base), std::set<std::string>{"inference"});
         EXPECT_EQ(UnplacedClasses(set), std::set<std::string>{"training"});
       }},
      {"classes[].zone_spread.max_zone_share", [](Policy& p) { p.classes[0].max_zone_share = 0.5; },
       InferenceUnits(4), SpreadsOverTwoZones()},
      {"classes[].zone_spread.min_zones", [](Policy& p) { p.classes[0].min_zones = 2; }, InferenceUnits(4),
       SpreadsOverTwoZones()},
      {"classes[].shape.gpus", [](Policy& p) { p.classes[0].gpus_per_job = 4; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g6.12xlarge")},
      {"classes[].shape.mig_profile", [](Policy& p) { p.classes[0].mig_profile = "1g.10gb"; }, InferenceUnits(1),
       MovesType("g6.xlarge", "p4de.24xlarge")},
      {"classes[].shape.gpu_models", [](Policy& p) { p.classes[0].gpu_models = {"a10g"}; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g5.xlarge")},
      // L4 has 23034 MiB, A10G 24576.
      {"classes[].shape.min_gpu_memory_mib", [](Policy& p) { p.classes[0].min_gpu_memory_mib = 24000; },
       InferenceUnits(1), MovesType("g6.xlarge", "g5.xlarge")},
      // A g6.12xlarge has 48 vCPU and 192 GiB.
      {"classes[].shape.cpu_milli", [](Policy& p) { p.classes[0].cpu_milli_per_job = 8000; }, InferenceUnits(1),
       MovesType("g6.xlarge", "g6.12xlarge")},
      {"classes[].shape.memory_mib", [](Policy& p) { p.classes[0].memory_mib_per_job = 32768; },
       InferenceUnits(1), MovesType("g6.xlarge", "g6.12xlarge")},
      // Work that ends sooner loses less to an interruption: short enough,
      // spot pays even at 2.5 interruptions an hour.
      {"classes[].shape.expected_runtime", [](Policy& p) { p.classes[0].expected_runtime = Seconds(600); },
       [](Snapshot& s, Policy& p) {
         SpotInterruptions(s, 2.5);
         p.spot.max_interruptions_per_hour = 5;
         Demand(s, p, "inference", 1);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(UnitsOnSpot(base), 0);
         EXPECT_EQ(UnitsOnSpot(set), 1);
       }},

      // --- budget (on-demand g6.xlarge at $0.805/h) ---
      {"budget.global.hourly_usd", [](Policy& p) { p.budget.global.hourly_usd = 2.0; }, OnDemandUnits(4),
       CapsLaunches(4, 2, UnplacedReason::kBudget)},
      {"budget.global.monthly_usd", [](Policy& p) { p.budget.global.monthly_usd = 1000; },
       [](Snapshot& s, Policy& p) {
         s.month_to_date_usd = 900;
         s.hours_left_in_month = 100;  // $1/h left
         OnDemandUnits(4)(s, p);
       },
       NodesLaunched(4, 1)},
      {"budget.global.hard", [](Policy& p) { p.budget.global.hard = false; },
       [](Snapshot& s, Policy& p) {
         p.budget.global.hourly_usd = 1.0;
         OnDemandUnits(4)(s, p);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Unplaced(base, UnplacedReason::kBudget), 3);
         EXPECT_TRUE(set.unplaced.empty());
         EXPECT_NE(set.summary.find("over soft budget $1.00/h"), std::string::npos) << set.summary;
       }},
      {"budget.pools.<pool>.hourly_usd", [](Policy& p) { p.budget.per_pool["gpu"].hourly_usd = 2.0; },
       OnDemandUnits(4), NodesLaunched(4, 2)},
      {"budget.pools.<pool>.monthly_usd", [](Policy& p) { p.budget.per_pool["gpu"].monthly_usd = 1000; },
       [](Snapshot& s, Policy& p) {
         s.month_to_date_usd = 5000;  // the fleet's: not this pool's cap
         s.month_to_date_usd_by_pool["gpu"] = 900;
         s.hours_left_in_month = 100;
         OnDemandUnits(4)(s, p);
       },
       NodesLaunched(4, 1)},
      {"budget.pools.<pool>.hard", [](Policy& p) { p.budget.per_pool["gpu"].hard = false; },
       [](Snapshot& s, Policy& p) {
         p.budget.per_pool["gpu"].hourly_usd = 1.0;
         OnDemandUnits(4)(s, p);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Unplaced(base, UnplacedReason::kBudget), 3);
         EXPECT_TRUE(set.unplaced.empty());
         EXPECT_NE(set.summary.find("pool gpu over soft budget"), std::string::npos) << set.summary;
       }},
      {"budget.teams.<team>.hourly_usd", [](Policy& p) { p.budget.per_team["ml"].hourly_usd = 2.0; },
       [](Snapshot& s, Policy& p) {
         p.classes[0].team = "ml";
         OnDemandUnits(4)(s, p);
       },
       CapsLaunches(4, 2, UnplacedReason::kBudget)},
      {"budget.teams.<team>.monthly_usd", [](Policy& p) { p.budget.per_team["ml"].monthly_usd = 1000; },
       [](Snapshot& s, Policy& p) {
         p.classes[0].team = "ml";
         s.month_to_date_usd = 5000;  // the fleet's: not this team's cap
         s.month_to_date_usd_by_team["ml"] = 900;
         s.hours_left_in_month = 100;  // $1/h left
         OnDemandUnits(4)(s, p);
       },
       NodesLaunched(4, 1)},
      {"budget.teams.<team>.hard", [](Policy& p) { p.budget.per_team["ml"].hard = false; },
       [](Snapshot& s, Policy& p) {
         p.classes[0].team = "ml";
         p.budget.per_team["ml"].hourly_usd = 1.0;
         OnDemandUnits(4)(s, p);
       },
       [](const Plan& base, const Plan& set) {
         EXPECT_EQ(Unplaced(base, UnplacedReason::kBudget), 3);
         EXPECT_TRUE(set.unplaced.empty());
         EXPECT_NE(set.summary.find("team ml over soft budget $1.00/h"), std::string::npos) << set.summary;
       }},
      {"classes[].team", [](Policy& p) { p.classes[0].team = "ml"; },
       [](Snapshot& s, Policy& p) {
         p.budget.per_team["ml"].hourly_usd = 2.0;
         OnDemandUnits(4)(s, p);
       },
       CapsLaunches(4, 2, UnplacedReason::kBudget)},

      // --- spot ---
      {"spot.max_price_fraction_of_on_demand", [](Policy& p) { p.spot.max_price_fraction_of_on_demand = 0.35; },
       InferenceUnits(2), KeepsOffSpot(2)},
      {"spot.max_interruptions_per_hour", [](Policy& p) { p.spot.max_interruptions_per_hour = 0.01; },
       InferenceUnits(2), KeepsOffSpot(2)},
      // Two 1-GPU units: both in the cheapest spot failure domain (family x
      // zone), or one per domain when none may hold more than half of the
      // class's GPUs.
      {"spot.max_pool_share", [](Policy& p) { p.spot.max_pool_share = 0.5; }, InferenceUnits(2),
       [](const Plan& base, const Plan& set) {
         auto pools = [](const Plan& plan) {
           std::set<std::string> out;
           for (const auto& l : plan.launches) {
             if (l.offering.capacity_type != CapacityType::kSpot) continue;
             const std::string& type = l.offering.instance_type;  // AWS names: FAMILY.SIZE
             out.insert(type.substr(0, type.find('.')) + "/" + l.offering.zone);
           }
           return out;
         };
         EXPECT_EQ(UnitsOnSpot(base), 2);
         EXPECT_EQ(pools(base).size(), 1u);
         EXPECT_EQ(UnitsOnSpot(set), 2);
         EXPECT_EQ(pools(set).size(), 2u);
       }},

      // --- demand forecasts ---
      {"classes[].forecast", [](Policy& p) { p.classes[0].forecast = ForecastPolicy{}; }, ForecastInSnapshot,
       GpusAhead(0, 3)},
      {"classes[].forecast.quantile", [](Policy& p) { p.classes[0].forecast = ForecastPolicy{}; p.classes[0].forecast->quantile = 0.7; },
       ForecastClass, GpusAhead(3, 2)},
      // Waiting for a unit is dear: every unit up to the q0.9 forecast pays.
      {"classes[].wait_cost_usd_per_hour", [](Policy& p) { p.classes[0].wait_cost_usd_per_hour = 100; },
       ForecastClass, GpusAhead(3, 4)},
      // An hour's idle capacity against two minutes' wait: nothing pays.
      {"classes[].forecast.horizon", [](Policy& p) { p.classes[0].forecast = ForecastPolicy{}; p.classes[0].forecast->horizon = Seconds(3600); },
       ForecastClass, GpusAhead(3, 0)},
      {"classes[].forecast.max_idle_usd_per_hour",
       [](Policy& p) { p.classes[0].forecast = ForecastPolicy{}; p.classes[0].forecast->max_idle_usd_per_hour = 0.5; }, ForecastClass,
       GpusAhead(3, 1)},

      // --- deferrable work ---
      // Without a deadline both units go to on-demand now; with one they
      // wait for spot, each with its reason.
      {"classes[].deadline", [](Policy& p) { p.classes[0].deadline = DeadlineRule{Seconds(24 * 3600), 0}; }, DeferrableUnits,
       [](const Plan& base, const Plan& set) {
         EXPECT_GT(LaunchedNodes(base), 0);
         EXPECT_TRUE(base.unplaced.empty());
         EXPECT_EQ(LaunchedNodes(set), 0);
         EXPECT_EQ(Unplaced(set, UnplacedReason::kDeadlineHold), 2);
       }},

      // --- scaling ---
      {"scaling.max_nodes_added_per_tick", [](Policy& p) { p.scaling.max_nodes_added_per_tick = 2; },
       FourGpuUnits(5), CapsLaunches(5, 2, UnplacedReason::kMaxNodesPerTick)},
      {"scaling.max_nodes_removed_per_tick", [](Policy& p) { p.scaling.max_nodes_removed_per_tick = 1; },
       IdleNodes, NodesRemoved(3, 1)},
      // A schedule in force at the scene's time (every minute matches): its
      // floor keeps idle nodes, its cap holds launches back.
      {"scaling.schedules[].min_nodes",
       [](Policy& p) { p.scaling.schedules = {{"warm", "* * * * *", "UTC", Seconds(0), {"gpu"}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].max_nodes",
       [](Policy& p) { p.scaling.schedules = {{"night", "* * * * *", "UTC", Seconds(0), {}, std::nullopt, 2}}; },
       EightGpuUnits(5), CapsLaunches(5, 2, UnplacedReason::kPoolMax)},
      // The same schedule outside its hours (the scene is a Thursday at
      // 20:26 UTC) changes nothing; its time zone moves the hours.
      {"scaling.schedules[].cron",
       [](Policy& p) { p.scaling.schedules = {{"warm", "* 8-17 * * *", "UTC", Seconds(0), {}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 3)},
      {"scaling.schedules[].timezone",
       [](Policy& p) {
         p.scaling.schedules = {{"warm", "* 8-17 * * *", "America/Los_Angeles", Seconds(0), {}, 3, std::nullopt}};
       },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].duration",
       [](Policy& p) { p.scaling.schedules = {{"warm", "0 20 * * *", "UTC", Seconds(3600), {}, 3, std::nullopt}}; },
       IdleNodes, NodesRemoved(3, 0)},
      {"scaling.schedules[].pools",
       [](Policy& p) {
         p.pools.push_back(p.pools[0]);
         p.pools.back().name = "other";
         p.scaling.schedules = {{"warm", "* * * * *", "UTC", Seconds(0), {"other"}, 3, std::nullopt}};
       },
       IdleNodes, NodesRemoved(3, 3)},

      // --- disruption (idle nodes are two hours old) ---
      {"disruption.consolidation", [](Policy& p) { p.disruption.consolidation = false; }, IdleNodes,
       NodesRemoved(3, 0)},
      {"disruption.min_node_age", [](Policy& p) { p.disruption.min_node_age = Seconds(3 * 3600); }, IdleNodes,
       NodesRemoved(3, 0)},
      {"disruption.max_disrupted_per_interval", [](Policy& p) { p.disruption.max_disrupted_per_interval = 1; },
       OversizedNodes, NodesRemoved(2, 1)},
      {"disruption.do_not_disrupt_labels",
       [](Policy& p) { p.disruption.do_not_disrupt_labels = {"team.example.com/keep"}; },
       [](Snapshot& s, Policy& p) {
         IdleNodes(s, p);
         for (auto& n : s.nodes) n.labels["team.example.com/keep"] = "true";
       },
       NodesRemoved(3, 0)},
      {"disruption.min_savings_usd_per_hour", [](Policy& p) { p.disruption.min_savings_usd_per_hour = 100; },
       OversizedNode,
       [](const Plan& base, const Plan& set) {
         ASSERT_EQ(base.terminations.size(), 1u);
         EXPECT_EQ(base.terminations[0].kind, TerminationKind::kReplace);
         EXPECT_TRUE(set.terminations.empty());
       }},
      {"disruption.min_savings_fraction", [](Policy& p) { p.disruption.min_savings_fraction = 0.99; },
       OversizedNode, NodesRemoved(1, 0)},
      // A one-second horizon: no saving covers the replacement's warm-up.
      {"disruption.replacement_horizon", [](Policy& p) { p.disruption.replacement_horizon = Seconds(1); },
       OversizedNode,
       [](const Plan& base, const Plan& set) {
         ASSERT_EQ(base.terminations.size(), 1u);
         EXPECT_EQ(base.terminations[0].kind, TerminationKind::kReplace);
         EXPECT_TRUE(set.terminations.empty());
       }},
  };
  return cases;
}

TEST(PolicyFieldEffects, EveryPlannerFieldChangesThePlanAsDocumented) {
  for (const FieldCase& c : Cases()) {
    SCOPED_TRACE(c.field);
    Policy base_policy = BasePolicy();
    Snapshot base_snapshot = BaseSnapshot();
    c.scene(base_snapshot, base_policy);
    Policy set_policy = BasePolicy();
    c.set(set_policy);
    Snapshot set_snapshot = BaseSnapshot();
    c.scene(set_snapshot, set_policy);
    const Plan base = MakePlan(base_snapshot, base_policy);
    const Plan set = MakePlan(set_snapshot, set_policy);
    c.expect(base, set);
  }
}

// Fields whose effect is outside the planner, and the tests that show it:
//
//  pools[].taints                  kube: PodDemand.TheRecordedPendingGpuPodIsOneGpuOfItsLabelClass
//                                  (tests/kube/workload_test.cc: an intolerant pod gets no pool)
//  pools[].labels, pools[].node_template (and pools[].taints on the nodes)
//                                  cloud: NodeTemplateLaunch.* (tests/cloud/aws_provider_templates_test.cc),
//                                  DaemonNodeTemplate.CreatesThePoolsTemplateThatJoinsWithExactlyItsLabelsAndTaints
//                                  (tests/cloud/daemon_node_template_test.cc: the daemon, a reload, the aws CLI)
//  pools[].node_template.subnets   cloud: NodeTemplateLaunch.SubnetsByIdsAndTagsPutEachZonesLaunchesInItsSubnet,
//                                  NodeTemplateLaunch.SubnetErrorsNameThePoolAndZoneAndLaunchNothing; the daemon's
//                                  instances in their zone's tagged subnet, read with the aws CLI in
//                                  DaemonNodeTemplate.CreatesThePoolsTemplateThatJoinsWithExactlyItsLabelsAndTaints
//  pools[].actuation,
//  pools[].auto_scaling_group      DaemonAsg.ScalesTheGroupAndNeverTouchesAnotherInstallation
//                                  (tests/cloud/daemon_asg_test.cc, the daemon against the emulator,
//                                  read back with the aws CLI)
//  pools[].warm (size, refills, retirements, parks, costs)
//                                  solver: WarmPlan.* (tests/solver/warm_plan_test.cc); through the
//                                  controller on the simulated cloud: WarmReplay.* (tests/sim);
//  pools[].warm.state              the stopped or hibernated cost: SimCloudWarm.AHibernatedInstanceAlso*;
//                                  the cloud calls: the providers' warm tests (tests/cloud)
//  pools[].placement_group         controller: Controller.OnlyAGangsLaunchNamesThePoolsPlacementGroup;
//                                  AWS: AwsProviderTest.AGangLaunchGoesIntoThePoolsClusterPlacementGroupMadeOnce,
//                                  AwsProviderTest.AnExistingPlacementGroupIsUsedAndOneOfAnotherStrategyRefused
//                                  (tests/cloud/aws_provider_test.cc), AwsCli.AGangsInstancesAreInItsClusterPlacementGroup
//                                  (the aws CLI reads the group and the instances' Placement.GroupName);
//                                  GCP: GcpProviderTest.AGangsBulkInsertIsAllOrNothingUnderItsCompactPlacementPolicy,
//                                  GcpProviderTest.APlacementGroupThatIsNoCompactPolicyOrOnAGroupPoolIsAConfigError,
//                                  DaemonConfig.AGcpPlacementGroupNeedsABarePool
//  classes[].match.namespaces,
//  classes[].match.labels          kube: PodDemand.*, DemandFromCluster.* (tests/kube/workload_test.cc)
//  classes[].target.*              daemon: SignalWorkSource.TurnsQueueDepthIntoGpusForTheTargetWait
//  classes[].signals.*             daemon: SignalWorkSource.* (tests/daemon/signal_work_source_test.cc)
//  classes[].scale_in_utilization_below
//                                  daemon: SignalWorkSource.AnEmptyQueueEmptiesNodesButABusyNodeKeepsWork
//  pools[].registration_timeout    controller: NodeRepair.AnInstanceThatNeverRegistersIsTerminatedAndItsWorkPlannedElsewhere,
//                                  InFlightLaunch.AcceptedInstancesThatNeverComeAreGivenUpAtTheRegistrationTimeout
//  pools[].repair_after            controller: NodeRepair.ANodeNotReadyPastRepairAfterIsReplacedFirstThenRemoved,
//                                  NodeRepair.RepairIsOffByDefault
//  spot.on_rebalance               controller: Rebalance.* (tests/controller/interruption_test.cc)
//  spot.fallback_to_on_demand      controller: Controller.NoOnDemandFallbackWhenThePolicyForbidsIt
//  classes[].max_lost_work_share   controller: LostWorkBudget.* (tests/controller/class_accounts_test.cc);
//                                  the planner side is
//                                  Planner.AClassWithItsLostWorkBudgetSpentGetsNoNewSpotWork; a replay:
//                                  Replay.ALostWorkBudgetKeepsAClassOffAFlappingSpotPoolAfterItIsSpent
//  classes[].spot_share_window     controller: SpotFloorAccount.* (tests/controller/class_accounts_test.cc);
//                                  the planner side is
//                                  Planner.AClassesCreditOverItsSpotShareWindowMovesTheFloorByOneUnit;
//                                  a replay: Replay.AFloorHeldOnAverageSendsALoneReplicaToSpotAboutSevenTimesInTen
//  spot.fallback_duration          Controller.ASpotCapacityErrorKeepsTheClassOffSpotForTheFallbackDuration;
//                                  the planner side is Planner.KeepsSpotPausedClassesOnOnDemandWithTheReason
//  spot.reclaim_cooldown,
//  spot.reclaim_cooldown_max       Controller.AReclaimWaveKeepsTheDomainMarkedForThePolicysCooldown; the
//                                  doubling up to the longest, flat and 0s:
//                                  OfferingAvailability.TheCooldownsFollowTheirFirstAndLongestDurations
//                                  (tests/controller/availability_test.cc); the planner side is
//                                  Planner.PlacesNoNewSpotWorkInAReclaimedPool
//  scaling.tick_interval           TickInterval.TheLoopRunsOncePerIntervalOfThePolicy (tests/sim)
//  scaling.scale_down_stabilization
//                                  controller: Controller.ScaleDownWaitsForTheStabilizationWindow
//  scaling.scale_up_stabilization,
//  scaling.scale_up_cooldown,
//  scaling.scale_down_cooldown     GovernorFields.* (tests/controller/governor_fields_test.cc)
//  scaling.max_nodes_*_per_tick    also the governor: ScalingGovernor.CapsNodesAddedAndRemovedPerTick
//  scaling.schedules               when each is in force (cron, time zone, DST): ScheduleInForce.*
//                                  (tests/policy/schedule_test.cc); the floor appearing and going at
//                                  the cron times through the controller: Schedules.* (tests/sim)
//  disruption.disruption_interval  Controller.RecentlyDisruptedIsARollingWindowOfTheNodesPlansRemoved; the
//                                  planner side is Planner.RemovesNothingMoreInAPoolWhoseDisruptionWindowIsFull
//  budget.teams.* (actuator)       Controller.AFallbackThatWouldBreakATeamsHardBudgetIsNotSent
//  disruption.do_not_disrupt_labels
//                                  also the kube drain: DrainTest.DoNotDisruptOnAPodOrTheNodeRefusesBeforeCordoning
//                                  shows the built-in keys; a key from the policy there: none yet
//  disruption.drain_timeout        kube drain: DrainTest.ABudgetThatNeverAllowsTimesOutUncordonsAndKeepsThePod
//                                  (the timeout given directly; the policy's value reaches it in
//                                  daemon/kube_setup.cc)
//  classes[].forecast (the forecast itself, horizon auto, no history)
//                                  controller: Forecast.* (tests/controller/forecast_test.cc); replays:
//                                  ForecastReplay.* (tests/sim/forecast_replay_test.cc)
//  signals.max_staleness           SignalReading.JudgesFreshnessAgainstThePolicy (tests/signals),
//                                  Controller.StaleSignalBlocksScaleDownOfTheClassPools

}  // namespace
}  // namespace gpuscaler
