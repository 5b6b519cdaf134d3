// The oracle forecast (`gpuscaler sim --forecast oracle`, the
// gpuscaler-oracle run): the true demand curve of a hand-made trace, the
// controller forecasting from it at every tick (every level the true peak
// within the horizon, where the learned forecast differs), the notes saying
// so, and an end-to-end replay where it waits no longer than reactive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/demand_truth.h"
#include "sim/oracle_share.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {
namespace oracle_forecast_test {
namespace {

const WallTime kStart = FromUnixSeconds(1783296000);  // 2026-07-06 00:00 UTC

TraceJob Job(const std::string& id, const std::string& cls, double gpus, int64_t submit_s,
             int64_t duration_s) {
  TraceJob j;
  j.submit = Seconds(submit_s);
  j.duration = Seconds(duration_s);
  j.unit.id = id;
  j.unit.workload_class = cls;
  if (gpus >= 1) {
    j.unit.gpus = static_cast<int>(gpus);
  } else {
    j.unit.gpu_milli = static_cast<int>(gpus * 1000);
  }
  j.unit.cpu_milli = 1000;
  j.unit.memory_mib = 2048;
  return j;
}

Trace HandMadeTrace() {
  Trace t;
  t.jobs = {
      Job("a", "api", 2, 0, 600),       // [0, 600)
      Job("d", "batch", 8, 100, 1000),  // another class
      Job("b", "api", 4, 300, 600),     // [300, 900)
      Job("c", "api", 0.5, 1200, 60),   // [1200, 1260), half a GPU
      Job("e", "api", 3, 2000, 0),      // runs no time: no demand
  };
  return t;
}

TEST(DemandTruth, IsTheNoWaitDemandOfTheClasssJobs) {
  const TrueDemand truth(HandMadeTrace(), kStart, {"api"});
  const DemandCurve* api = truth.Find("api");
  ASSERT_NE(api, nullptr);
  EXPECT_EQ(truth.Find("batch"), nullptr);
  EXPECT_FALSE(truth.PeakWithin("batch", kStart, Seconds(60)).has_value());
  // 2 from 0, 6 from 300, 4 from 600, 0 from 900, 0.5 from 1200, 0 from 1260.
  const std::vector<double> want_levels = {2, 6, 4, 0, 0.5, 0};
  EXPECT_EQ(api->levels(), want_levels);
  EXPECT_EQ(api->At(kStart - Seconds(1)), 0);
  EXPECT_EQ(api->At(kStart + Seconds(300)), 6);
  EXPECT_EQ(api->At(kStart + Seconds(899)), 4);

  struct Case {
    const char* name;
    int64_t now_s;
    int64_t horizon_s;
    double want;
  };
  const std::vector<Case> cases = {
      {"the level in force when nothing changes", 0, 60, 2},
      {"a rise at the horizon's end is within it", 0, 300, 6},
      {"a rise a second after the horizon is not", 0, 299, 2},
      {"from before the first job", -100, 100, 2},
      {"the peak, not the level at the end", 250, 1000, 6},
      {"a fall only: the present level", 600, 600, 4},
      {"half a GPU is half a GPU", 900, 300, 0.5},
      {"one second short of it", 900, 299, 0},
      {"after the last job", 1300, 3600, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::optional<double> peak =
        truth.PeakWithin("api", kStart + Seconds(c.now_s), Seconds(c.horizon_s));
    ASSERT_TRUE(peak.has_value());
    EXPECT_DOUBLE_EQ(*peak, c.want);
    // The same as the brute-force maximum over every second of the window.
    double brute = api->At(kStart + Seconds(c.now_s));
    for (int64_t s = 1; s <= c.horizon_s; ++s)
      brute = std::max(brute, api->At(kStart + Seconds(c.now_s + s)));
    EXPECT_DOUBLE_EQ(*peak, brute);
  }
}

TEST(DemandTruth, WithoutNamedClassesEveryClassWithJobsAndANamedClassWithoutJobsIsZero) {
  const TrueDemand all(HandMadeTrace(), kStart);
  ASSERT_NE(all.Find("batch"), nullptr);
  EXPECT_EQ(all.PeakWithin("batch", kStart, Seconds(100)), 8.0);
  const TrueDemand idle(HandMadeTrace(), kStart, {"idle"});
  EXPECT_EQ(idle.PeakWithin("idle", kStart, Seconds(3600)), 0.0);
  EXPECT_FALSE(idle.PeakWithin("api", kStart, Seconds(3600)).has_value());
}

// A class `api` of 1-GPU serving work with a forecast, on g6.xlarge
// on-demand: bursts of `burst` jobs every 40 minutes for 8 hours, each job
// 15 minutes long, on an empty cluster between bursts.
Scenario Bursts(int burst) {
  Trace trace;
  int n = 0;
  for (int64_t t = 1200; t < 8 * 3600; t += 2400) {
    for (int i = 0; i < burst; ++i) trace.jobs.push_back(Job("j" + std::to_string(n++), "api", 1, t, 900));
  }
  trace.span = trace.jobs.back().submit;
  Policy policy = DefaultPolicy();
  policy.name = "oracle-bursts";
  NodePoolPolicy pool;
  pool.name = "gpu";
  pool.instance_types = {"g6.xlarge"};
  pool.zones = {"us-east-1a"};
  pool.capacity_types = {CapacityType::kOnDemand};
  policy.pools = {pool};
  WorkloadClassPolicy api;
  api.name = "api";
  api.pools = {"gpu"};
  api.wait_cost_usd_per_hour = 20;
  api.forecast = ForecastPolicy{};
  policy.classes = {api};
  policy.scaling.tick_interval = Seconds(60);
  policy.scaling.scale_down_stabilization = Seconds(120);
  policy.disruption.min_node_age = Seconds(60);
  policy.content_hash = PolicyContentHash(policy);
  Scenario s = MakeTraceScenario(std::move(trace), {}, BuiltinCatalog(), policy, 1, 1);
  s.cloud.hazard_by_family.clear();
  return s;
}

const DemandForecast* ForecastOf(const Controller& c, const std::string& cls) {
  for (const DemandForecast& f : c.snapshot().forecasts) {
    if (f.workload_class == cls) return &f;
  }
  return nullptr;
}

TEST(OracleForecast, EveryLevelIsTheTruePeakWithinTheHorizonWhereTheLearnedOneDiffers) {
  const Scenario s = Bursts(4);
  const TrueDemand truth(s.trace, s.start, {"api"});
  Result<RunSpec> oracle_spec = MakeRunSpec("gpuscaler-oracle", s, nullptr);
  Result<RunSpec> learned_spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(oracle_spec.ok() && learned_spec.ok());
  EXPECT_EQ(oracle_spec->forecast, ForecastSource::kOracle);
  EXPECT_EQ(learned_spec->forecast, ForecastSource::kLearned);
  learned_spec->name = oracle_spec->name;  // the same instance ids
  Replay oracle(s, *oracle_spec);
  Replay learned(s, *learned_spec);
  TickReport to;
  TickReport tl;
  int ticks = 0;
  int ahead_of_demand = 0;  // ticks whose true peak is above the demand now
  int differs = 0;          // ticks where the learned forecast is another
  bool said_on = false;
  bool noted_in_plan = false;
  while (!oracle.done() && oracle.now() < s.start + Seconds(8 * 3600)) {
    const bool stepped = oracle.Step(&to);
    ASSERT_EQ(stepped, learned.Step(&tl));
    if (!stepped) continue;
    ++ticks;
    const DemandForecast* f = ForecastOf(oracle.controller(), "api");
    ASSERT_NE(f, nullptr) << FormatRfc3339(to.time);
    // On from the first tick: the oracle needs no history.
    ASSERT_FALSE(f->levels.empty()) << FormatRfc3339(to.time) << " " << f->fallback;
    const double peak = *truth.PeakWithin("api", to.time, f->horizon);
    for (const ForecastLevel& l : f->levels) EXPECT_DOUBLE_EQ(l.gpus, peak) << FormatRfc3339(to.time);
    EXPECT_TRUE(std::any_of(f->levels.begin(), f->levels.end(),
                            [](const ForecastLevel& l) { return l.quantile == 0.9; }));
    ahead_of_demand += peak > f->demand_gpus + 0.5;
    const DemandForecast* g = ForecastOf(learned.controller(), "api");
    ASSERT_NE(g, nullptr);
    differs += g->levels.size() != f->levels.size() ||
               !std::equal(g->levels.begin(), g->levels.end(), f->levels.begin(),
                           [](const ForecastLevel& a, const ForecastLevel& b) { return a.gpus == b.gpus; });
    for (const std::string& n : to.forecast_notes) {
      said_on = said_on || (n.find("class api: forecast on (horizon ") == 0 &&
                            n.find("; an oracle: the trace's true future demand") != std::string::npos);
    }
    if (to.planned) {
      noted_in_plan =
          noted_in_plan || std::any_of(to.plan.notes.begin(), to.plan.notes.end(), [](const std::string& n) {
            return n.find("class api: the forecast is an oracle: ") == 0;
          });
    }
    // The learned run never says so.
    for (const std::string& n : tl.forecast_notes) EXPECT_EQ(n.find("oracle"), std::string::npos) << n;
    if (tl.planned) {
      for (const std::string& n : tl.plan.notes) EXPECT_EQ(n.find("oracle"), std::string::npos) << n;
    }
  }
  EXPECT_GT(ticks, 400);
  EXPECT_GT(ahead_of_demand, 5);  // each burst is seen before it arrives
  EXPECT_GT(differs, ticks / 2);
  EXPECT_TRUE(said_on);
  EXPECT_TRUE(noted_in_plan);
}

TEST(OracleForecast, WaitsNoLongerThanTheReactiveRunAndItsShareIsMeasured) {
  const Scenario s = Bursts(4);
  Result<std::vector<RunResult>> results =
      RunMany(s, {"gpuscaler", "gpuscaler-reactive", "gpuscaler-oracle"}, RunOptions{});
  ASSERT_TRUE(results.ok()) << results.error().message();
  const auto named = [&](const std::string& name) -> const RunResult& {
    return *std::find_if(results->begin(), results->end(),
                         [&](const RunResult& r) { return r.name == name; });
  };
  const RunResult& reactive = named("gpuscaler-reactive");
  const RunResult& oracle = named("gpuscaler-oracle");
  EXPECT_FALSE(reactive.forecast.has_value());
  EXPECT_EQ(oracle.forecast, ForecastSource::kOracle);
  EXPECT_EQ(named("gpuscaler").forecast, ForecastSource::kLearned);
  // Every burst waits a node's lead time without a forecast.
  ASSERT_GT(reactive.queue_wait_s.p95, 60);
  EXPECT_LE(oracle.queue_wait_s.p95, reactive.queue_wait_s.p95);
  EXPECT_LT(oracle.queue_wait_s.p95, reactive.queue_wait_s.p95 / 2);
  EXPECT_EQ(oracle.jobs_completed, reactive.jobs_completed);

  const std::vector<OracleShare> shares = OracleShares(*results);
  ASSERT_EQ(shares.size(), 1u);
  const OracleShare& share = shares[0];
  EXPECT_EQ(share.run, "gpuscaler");
  ASSERT_TRUE(share.share_pct.has_value());
  const RunResult& learned = named("gpuscaler");
  EXPECT_DOUBLE_EQ(*share.share_pct, 100 * (reactive.queue_wait_s.p95 - learned.queue_wait_s.p95) /
                                         (reactive.queue_wait_s.p95 - oracle.queue_wait_s.p95));
  EXPECT_DOUBLE_EQ(share.cost_difference_usd, learned.total_cost_usd - oracle.total_cost_usd);
}

TEST(OracleShares, NeedBothReferenceRunsAndSayEqualCostOnlyWithinOnePercent) {
  RunResult reactive;
  reactive.name = "gpuscaler-reactive";
  reactive.queue_wait_s.p95 = 200;
  RunResult oracle;
  oracle.name = "gpuscaler-oracle";
  oracle.forecast = ForecastSource::kOracle;
  oracle.queue_wait_s.p95 = 100;
  oracle.total_cost_usd = 100;
  RunResult learned;
  learned.name = "gpuscaler";
  learned.forecast = ForecastSource::kLearned;
  learned.queue_wait_s.p95 = 150;
  learned.total_cost_usd = 100.9;
  EXPECT_TRUE(OracleShares({learned, oracle}).empty());
  EXPECT_TRUE(OracleShares({learned, reactive}).empty());

  std::vector<OracleShare> shares = OracleShares({learned, reactive, oracle});
  ASSERT_EQ(shares.size(), 1u);
  EXPECT_DOUBLE_EQ(*shares[0].share_pct, 50);
  EXPECT_TRUE(shares[0].equal_cost);
  EXPECT_NE(DescribeOracleShare(shares[0]).find("50.0%"), std::string::npos)
      << DescribeOracleShare(shares[0]);
  EXPECT_NE(DescribeOracleShare(shares[0]).find("at equal cost"), std::string::npos);

  learned.total_cost_usd = 101.1;
  shares = OracleShares({learned, reactive, oracle});
  EXPECT_FALSE(shares[0].equal_cost);
  const std::string line = DescribeOracleShare(shares[0]);
  EXPECT_EQ(line.find("equal cost"), std::string::npos) << line;
  EXPECT_NE(line.find("+1.10 (+1.1%)"), std::string::npos) << line;

  // The oracle cut nothing: no share.
  oracle.queue_wait_s.p95 = 200;
  shares = OracleShares({learned, reactive, oracle});
  EXPECT_FALSE(shares[0].share_pct.has_value());
}

}  // namespace
}  // namespace oracle_forecast_test
}  // namespace gpuscaler::sim
