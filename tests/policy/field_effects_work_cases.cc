// Rows of the policy field effects table for the work's fields: classes[]
// (with their forecasts and deadlines) and budget, each with the plan
// difference it makes.
#include <vector>

#include "policy/field_effects_cases.h"

namespace gpuscaler::field_effects_testing {

std::vector<FieldCase> ClassFieldCases() {
  return {
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
  };
}

std::vector<FieldCase> BudgetFieldCases() {
  return {
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
  };
}

std::vector<FieldCase> ForecastFieldCases() {
  return {
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
  };
}

std::vector<FieldCase> DeferrableFieldCases() {
  return {
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
  };
}

}  // namespace gpuscaler::field_effects_testing
