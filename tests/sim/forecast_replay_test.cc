// classes[].forecast through the controller, in replays of the demo's
// diurnal inference load (the loop the daemon runs): the forecast reads the
// trace's past only, a class without history is planned reactively with the
// reason said, capacity is launched ahead with its reason, and
// gpuscaler-reactive is the policy without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/policy/loader.h"
#include "sim/baselines.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/series_jobs.h"

namespace gpuscaler::sim {
namespace {

// Two demo days with a forecast for the inference class, waiting valued high
// enough that capacity is launched ahead.
Scenario ForecastDemo() {
  Result<Scenario> s = MakeBuiltinScenario("demo", 11, 2, BuiltinCatalog());
  EXPECT_TRUE(s.ok()) << s.error().ToString();
  WorkloadClassPolicy& inference = s->policy.classes[0];
  EXPECT_EQ(inference.name, "inference");
  inference.forecast = ForecastPolicy{};
  inference.wait_cost_usd_per_hour = 20;
  s->policy.content_hash = PolicyContentHash(s->policy);
  return std::move(s).value();
}

// What a tick decided and what its forecasts were, as text.
std::string Decided(const TickReport& tick, const Controller& c) {
  std::string out = FormatRfc3339(tick.time);
  if (tick.planned) {
    out.append(" planned ");
    out.append(FormatPlanJsonLine(tick.plan));
  } else {
    out.append(" reused");
  }
  for (const DemandForecast& f : c.snapshot().forecasts) {
    out.append(" | ");
    out.append(f.workload_class);
    out.append(" ");
    out.append(std::to_string(f.demand_gpus));
    out.append(" ");
    out.append(f.fallback);
    for (const ForecastLevel& l : f.levels) {
      out.append(" ");
      out.append(std::to_string(l.gpus));
    }
  }
  return out;
}

std::vector<std::string> DecisionsBefore(const Scenario& s, WallTime until) {
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  EXPECT_TRUE(spec.ok());
  Replay replay(s, *spec);
  std::vector<std::string> out;
  TickReport tick;
  while (!replay.done() && replay.now() < until) {
    if (replay.Step(&tick) && tick.time < until) out.push_back(Decided(tick, replay.controller()));
  }
  return out;
}

TEST(ForecastReplay, NeverSeesTheTracesFuture) {
  const Scenario original = ForecastDemo();
  // From T on, another future: every later job runs three times as long and
  // a burst of 80 inference jobs arrives ten minutes after T.
  const Seconds cut = Seconds(26 * 3600);
  Scenario changed = original;
  TraceJob proto;
  for (TraceJob& j : changed.trace.jobs) {
    if (j.unit.workload_class == "inference") proto = j;
    if (j.submit >= cut) j.duration = j.duration * 3;
  }
  for (int i = 0; i < 80; ++i) {
    TraceJob j = proto;
    j.submit = cut + Seconds(600);
    j.duration = Seconds(3600);
    j.unit.id = "burst-" + std::to_string(i);
    changed.trace.jobs.push_back(j);
  }
  std::stable_sort(changed.trace.jobs.begin(), changed.trace.jobs.end(),
                   [](const TraceJob& a, const TraceJob& b) {
                     return std::tie(a.submit, a.unit.id) < std::tie(b.submit, b.unit.id);
                   });
  const WallTime until = original.start + cut;
  const std::vector<std::string> a = DecisionsBefore(original, until);
  const std::vector<std::string> b = DecisionsBefore(changed, until);
  ASSERT_GT(a.size(), 1000u);
  ASSERT_EQ(a.size(), b.size());
  int with_forecast = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i], b[i]) << "tick " << i;
    with_forecast += a[i].find("ahead of class inference's demand forecast") != std::string::npos;
  }
  // Capacity was launched ahead of the forecast before T (so the check
  // covers what the forecast decides).
  EXPECT_GT(with_forecast, 0);
}

TEST(ForecastReplay, WithoutHistoryTheClassIsPlannedReactivelyAndTheReasonIsSaid) {
  const Scenario s = ForecastDemo();
  Result<RunSpec> ahead = MakeRunSpec("gpuscaler", s, nullptr);
  Result<RunSpec> reactive = MakeRunSpec("gpuscaler-reactive", s, nullptr);
  ASSERT_TRUE(ahead.ok() && reactive.ok());
  // The same run name: the same instance ids, so plans compare byte for byte.
  reactive->name = ahead->name;
  Replay a(s, *ahead);
  Replay r(s, *reactive);
  // The first 50 minutes: under an hour of history, so no forecast.
  const WallTime until = s.start + Seconds(50 * 60);
  TickReport ta;
  TickReport tr;
  bool said_off = false;
  int planned = 0;
  while (!a.done() && a.now() < until) {
    const bool stepped_a = a.Step(&ta);
    const bool stepped_r = r.Step(&tr);
    ASSERT_EQ(stepped_a, stepped_r);
    if (!stepped_a) continue;
    ASSERT_EQ(ta.time, tr.time);
    for (const std::string& n : ta.forecast_notes) {
      said_off = said_off || (n.find("class inference: forecast off (") == 0 &&
                              n.find("planned reactively") != std::string::npos);
    }
    ASSERT_EQ(ta.planned, tr.planned) << FormatRfc3339(ta.time);
    if (!ta.planned) continue;
    ++planned;
    // The same decision as the reactive run; only the plan's note differs.
    Plan plan = ta.plan;
    const auto note = std::find_if(plan.notes.begin(), plan.notes.end(), [](const std::string& n) {
      return n.find("class inference: forecast off") == 0;
    });
    ASSERT_NE(note, plan.notes.end()) << plan.summary;
    plan.notes.erase(note);
    plan.summary.clear();
    Plan other = tr.plan;
    other.summary.clear();
    EXPECT_EQ(FormatPlanJsonLine(plan), FormatPlanJsonLine(other)) << FormatRfc3339(ta.time);
  }
  EXPECT_TRUE(said_off);
  EXPECT_GT(planned, 0);
  // Later the forecast is on, and that is said too.
  bool said_on = false;
  while (!a.done() && a.now() < s.start + Seconds(3 * 3600) && !said_on) {
    if (!a.Step(&ta)) continue;
    for (const std::string& n : ta.forecast_notes)
      said_on = said_on || n.find("class inference: forecast on") == 0;
  }
  EXPECT_TRUE(said_on);
}

TEST(ForecastReplay, TheReactiveRunIsThePolicyWithoutForecasts) {
  const Scenario s = ForecastDemo();
  ASSERT_TRUE(PlansAhead(s.policy));
  Result<RunSpec> reactive = MakeRunSpec("gpuscaler-reactive", s, nullptr);
  ASSERT_TRUE(reactive.ok());
  for (const WorkloadClassPolicy& c : reactive->policy.classes)
    EXPECT_FALSE(c.forecast.has_value()) << c.name;
  EXPECT_FALSE(PlansAhead(reactive->policy));
  EXPECT_NE(reactive->policy.content_hash, s.policy.content_hash);
  // The other baselines never run the forecast either; gpuscaler does.
  for (const std::string name : {"on-demand", "karpenter", "greedy", "cluster-autoscaler"}) {
    Result<RunSpec> spec = MakeRunSpec(name, s, nullptr);
    ASSERT_TRUE(spec.ok()) << name;
    for (const WorkloadClassPolicy& c : spec->policy.classes) EXPECT_FALSE(c.forecast.has_value()) << name;
  }
  Result<RunSpec> planner = MakeRunSpec("gpuscaler", s, nullptr);
  ASSERT_TRUE(planner.ok());
  EXPECT_TRUE(planner->policy.classes[0].forecast.has_value());
}

// The GenAI series the forecast is measured on (bench/RESULTS.md) become
// GPU jobs by the class's target: requests per second x 60 / jobs per GPU
// per minute, a queue / (jobs per GPU per minute x max_queue_wait), each
// rounded up; classes without a target keep their series.
TEST(SeriesToJobs, RequestRatesAndQueuesBecomeGpusByTheClassTarget) {
  Policy policy;
  WorkloadClassPolicy genai;
  genai.name = "genai";
  genai.jobs_per_gpu_per_minute = 2;
  genai.max_queue_wait = Seconds(120);
  policy.classes = {genai};
  Trace t;
  t.series.push_back({"genai", "qps", {{Seconds(0), 0.1}, {Seconds(60), 0.5}, {Seconds(120), 0.0}}});
  t.series.push_back({"genai", "jobs", {{Seconds(0), 9}, {Seconds(60), 0}}});
  t.series.push_back({"other", "qps", {{Seconds(0), 3}, {Seconds(60), 0}}});
  SeriesJobOptions options;
  options.policy = &policy;
  const Trace jobs = SeriesToJobs(t, options);
  // qps 0.1 -> 3 GPUs, 0.5 -> 15 (3 + 8 + 4 in jobs of at most 8): 3 for
  // 120 s, 12 for 60 s; a queue of 9 -> 3 GPUs (9 / (2 x 2)) for 60 s.
  int64_t gpu_seconds = 0;
  for (const TraceJob& j : jobs.jobs) gpu_seconds += j.unit.gpus * j.duration.count();
  EXPECT_EQ(gpu_seconds, 3 * 120 + 12 * 60 + 3 * 60);
  ASSERT_EQ(jobs.series.size(), 1u);
  EXPECT_EQ(jobs.series[0].workload_class, "other");
  // Without a policy nothing but GPU series is converted.
  EXPECT_TRUE(SeriesToJobs(t).jobs.empty());
}

}  // namespace
}  // namespace gpuscaler::sim
