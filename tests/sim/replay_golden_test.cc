// Golden replays of the small committed trace (sim/testdata/golden/): the
// baselines' totals with and without the on-demand floor, the greedy
// baselines' floor over the replay, and every decision of gpuscaler's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/replay_test_support.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"

namespace gpuscaler::sim::replay_golden_test {
namespace {

using testing::CheckInvariants;

std::string GoldenDir() { return std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/golden/"; }

// small_jobs.csv, DemoPolicy, built-in catalog, seed 11, 1 day, g5/g6 spot
// hazard 0.3 per node-hour, price walk on.
Scenario GoldenScenario() {
  Result<Trace> trace = ReadTrace(GoldenDir() + "small_jobs.csv", TraceFormat::kGpuscalerJobs);
  EXPECT_TRUE(trace.ok()) << trace.error().ToString();
  Scenario s = MakeTraceScenario(std::move(trace).value(), {}, BuiltinCatalog(), DemoPolicy(), 11, 1);
  s.cloud.hazard_by_family = {{"g5", 0.3}, {"g6", 0.3}};
  s.cloud.price_walk.enabled = true;
  return s;
}

// Checks the greedy baselines' totals on `s` against `file` (lines "name
// cost completed unfinished interruptions").
void CheckGoldenTotals(const Scenario& s, const std::string& file) {
  Result<std::vector<RunResult>> results = RunMany(s, {"karpenter", "greedy", "cluster-autoscaler"}, {});
  ASSERT_TRUE(results.ok());

  std::map<std::string, std::vector<double>> want;
  std::ifstream in(file);
  ASSERT_TRUE(in.good()) << "missing " << file;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    std::string name;
    double cost, completed, unfinished, interruptions;
    row >> name >> cost >> completed >> unfinished >> interruptions;
    want[name] = {cost, completed, unfinished, interruptions};
  }
  std::ostringstream actual;
  for (const RunResult& r : *results) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%s %.4f %lld %lld %d\n", r.name.c_str(), r.total_cost_usd,
                  static_cast<long long>(r.jobs_completed), static_cast<long long>(r.jobs_unfinished),
                  r.interruptions);
    actual << buf;
  }
  for (const RunResult& r : *results) {
    CheckInvariants(s, r);
    if (r.name == "on-demand") continue;
    ASSERT_EQ(want.count(r.name), 1u) << "actual:\n" << actual.str();
    EXPECT_NEAR(r.total_cost_usd, want[r.name][0], 1e-3) << "actual:\n" << actual.str();
    EXPECT_EQ(r.jobs_completed, static_cast<int64_t>(want[r.name][1])) << "actual:\n" << actual.str();
    EXPECT_EQ(r.jobs_unfinished, static_cast<int64_t>(want[r.name][2])) << "actual:\n" << actual.str();
    EXPECT_EQ(r.interruptions, static_cast<int>(want[r.name][3])) << "actual:\n" << actual.str();
  }
}

// Golden totals for the baselines whose code lives in sim/ (the demo
// policy's inference class has an on-demand floor, which the greedy and
// karpenter baselines split).
TEST(Replay, GoldenTotalsOnTheSmallCommittedTrace) {
  CheckGoldenTotals(GoldenScenario(), GoldenDir() + "expected.txt");
}

// Without a floor the baselines run as they did before they split floors:
// expected_no_floor.txt holds the totals of the demo policy from before
// (which ignored its floor, so they are those of the policy without), the
// karpenter line since its replace is carried out.
TEST(Replay, GoldenTotalsWithoutAFloorAreThoseOfTheBaselinesBeforeTheSplit) {
  Scenario s = GoldenScenario();
  for (WorkloadClassPolicy& c : s.policy.classes) {
    if (c.interruptible) c.max_spot_share = 1.0;
  }
  s.policy.content_hash = PolicyContentHash(s.policy);
  CheckGoldenTotals(s, GoldenDir() + "expected_no_floor.txt");
}

// The greedy and karpenter baselines keep the demo policy's 40 % on-demand
// floor for `inference` over a replay: GPUs of the class's running units on
// on-demand nodes, summed over the ticks, against all of its GPUs.
TEST(Replay, GreedyBaselinesHoldTheOnDemandFloorOverAReplay) {
  const Scenario s = GoldenScenario();
  for (const std::string name : {"greedy", "karpenter"}) {
    SCOPED_TRACE(name);
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok());
    Replay replay(s, *spec);
    double on_demand = 0, all = 0;
    while (!replay.done()) {
      if (!replay.Step()) continue;
      for (const Node& n : replay.controller().snapshot().nodes) {
        for (const DemandUnit& u : n.running) {
          if (u.workload_class != "inference") continue;
          all += GpuShare(u);
          if (n.offering.capacity_type == CapacityType::kOnDemand) on_demand += GpuShare(u);
        }
      }
    }
    replay.Finish();
    ASSERT_GT(all, 0);
    EXPECT_GE(on_demand / all, 0.4) << on_demand << " of " << all;
  }
}

// One line per decision that asked for something: its virtual time, each
// launch (count, pool, offering) and termination (instance, kind), and the
// fleet's hourly cost after it.
std::string DescribeDecision(WallTime t, const Plan& plan) {
  std::ostringstream out;
  out << ToUnixSeconds(t);
  for (const LaunchAction& l : plan.launches) {
    if (l.count > 0) out << " +" << l.count << " " << l.pool << " " << l.offering.Key();
  }
  for (const TerminationAction& term : plan.terminations) {
    out << " -" << term.instance_id << " " << static_cast<int>(term.kind);
  }
  char cost[40];
  std::snprintf(cost, sizeof(cost), " cost_after=%.4f", plan.cost_after_usd_per_hour);
  out << cost;
  return out.str();
}

// Pins gpuscaler's own plans: every decision of a replay of the committed
// trace, and its totals. A planner or controller change that alters a
// decision fails here; when the change is intended, regenerate the file with
// GPUSCALER_UPDATE_GOLDEN=1 and review the difference.
TEST(Replay, GoldenDecisionsOfGpuscalerOnTheSmallCommittedTrace) {
  const std::string dir = GoldenDir();
  Scenario s = GoldenScenario();
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(spec.ok());
  Replay replay(s, *spec);
  std::string actual;
  TickReport tick;
  while (!replay.done()) {
    if (!replay.Step(&tick) || !tick.planned) continue;
    const bool acts = !tick.plan.terminations.empty() ||
                      std::any_of(tick.plan.launches.begin(), tick.plan.launches.end(),
                                  [](const LaunchAction& l) { return l.count > 0; });
    if (acts) actual += DescribeDecision(tick.time, tick.plan) + "\n";
  }
  const RunResult r = replay.Finish();
  CheckInvariants(s, r);
  char total[200];
  std::snprintf(total, sizeof(total), "total %.4f %lld %lld %d\n", r.total_cost_usd,
                static_cast<long long>(r.jobs_completed), static_cast<long long>(r.jobs_unfinished), r.interruptions);
  actual += total;

  const std::string path = dir + "gpuscaler_decisions.txt";
  if (const char* update = std::getenv("GPUSCALER_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing " << path << " (GPUSCALER_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_GT(std::count(actual.begin(), actual.end(), '+'), 0) << "the replay launched nothing: the pin pins nothing";
  EXPECT_EQ(actual, want.str());
}

}  // namespace
}  // namespace gpuscaler::sim::replay_golden_test
