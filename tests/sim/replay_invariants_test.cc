// Replays through the production controller: invariants on every run,
// determinism, the built-in scenarios' sizes, and why a job that never ran
// stayed queued.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/replay_test_support.h"
#include "sim/report.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim::replay_invariants_test {
namespace {

using testing::CheckInvariants;

Scenario Demo(int days, uint64_t seed = 1) {
  Result<Scenario> s = MakeBuiltinScenario("demo", seed, days, BuiltinCatalog());
  EXPECT_TRUE(s.ok());
  s->catalog_source = "built-in";
  return std::move(s).value();
}

TEST(Replay, EveryRunKeepsTheInvariants) {
  const Scenario s = Demo(1);
  std::vector<std::string> names = {"gpuscaler"};
  for (const std::string& b : BaselineNames()) names.push_back(b);
  Result<std::vector<RunResult>> results = RunMany(s, names, {});
  ASSERT_TRUE(results.ok()) << results.error().ToString();
  ASSERT_EQ(results->size(), 6u);
  for (const RunResult& r : *results) {
    CheckInvariants(s, r);
    if (r.name == "gpuscaler" || r.name == "on-demand") {
      EXPECT_EQ(r.hard_budget_violations, 0) << r.name << ": the planner keeps hard budgets";
    }
  }
  // The replay did real work: nodes were bought and most jobs finished.
  for (const RunResult& r : *results) {
    EXPECT_GT(r.total_cost_usd, 0) << r.name;
    EXPECT_GT(r.jobs_completed, r.jobs_unfinished) << r.name;
  }
}

TEST(Replay, SameInputsGiveIdenticalResults) {
  const Scenario s = Demo(1, 3);
  RunOptions o;
  o.timeseries = true;
  Result<std::vector<RunResult>> a = RunMany(s, {"gpuscaler", "karpenter"}, o);
  Result<std::vector<RunResult>> b = RunMany(s, {"gpuscaler", "karpenter"}, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FormatJson(s, *a), FormatJson(s, *b));
  EXPECT_EQ(FormatTimeseriesCsv(*a), FormatTimeseriesCsv(*b));
  // And another seed gives another load.
  const Scenario other = Demo(1, 4);
  EXPECT_NE(other.trace.jobs.size() == s.trace.jobs.size() ? other.trace.jobs[5].submit : Seconds(-1),
            s.trace.jobs[5].submit);
}

TEST(Replay, BuiltinScenariosHaveTheAdvertisedSize) {
  Result<Scenario> big = MakeBuiltinScenario("scale-30d-100k", 1, std::nullopt, BuiltinCatalog());
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->trace.jobs.size(), 100000u);
  EXPECT_EQ(big->horizon, Seconds(30 * 86400));
  EXPECT_FALSE(MakeBuiltinScenario("nope", 1, std::nullopt, BuiltinCatalog()).ok());
}

// A job no offering can hold never runs, and the result says why, in the
// planner's words; a job that fits runs.
TEST(Replay, SaysWhyEachJobThatNeverRanStayedQueued) {
  Trace trace;
  TraceJob fits;
  fits.duration = Seconds(600);
  fits.unit.id = "fits";
  fits.unit.gpus = 1;
  TraceJob too_big = fits;
  too_big.unit.id = "sixteen-gpus";
  too_big.unit.gpus = 16;  // no node has 16 GPUs
  trace.jobs = {fits, too_big};
  Scenario s = MakeTraceScenario(std::move(trace), {}, BuiltinCatalog(), DefaultPolicy(), 1, 1);
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  const RunResult r = RunScenario(s, *spec);
  EXPECT_EQ(r.jobs_completed, 1);
  ASSERT_EQ(r.never_started.size(), 1u);
  EXPECT_EQ(r.never_started.begin()->second, 1);
  EXPECT_EQ(r.never_started.begin()->first.rfind("no-offering-fits: no allowed instance type holds 16 GPU(s)", 0), 0u) << r.never_started.begin()->first;
  const std::string table = FormatSummaryTable(s, {r});
  EXPECT_NE(table.find("never ran (gpuscaler): 1 x no-offering-fits"), std::string::npos) << table;
}

}  // namespace
}  // namespace gpuscaler::sim::replay_invariants_test
