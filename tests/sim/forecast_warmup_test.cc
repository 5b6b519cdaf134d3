// The daemon's live engine warms the demand forecasts' history after its
// first tick from the classes' queue-depth history (Prometheus query_range
// through LiveEngineParts::read_history; the real query_range is tested
// against a real Prometheus in tests/signals), so a restarted daemon
// forecasts at once instead of after an hour. Run on the demo's simulated
// world and virtual clock, as the demo daemon runs.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/policy/loader.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/workload.h"
#include "sim/world.h"

namespace gpuscaler::sim {
namespace {

struct Warmed {
  std::vector<std::string> first_notes;
  bool forecast_on_second_tick = false;
  std::vector<std::pair<WallTime, WallTime>> asked;  // the ranges read
};

Warmed RunTwoTicks(daemon::HistoryReader reader, bool prometheus_signal) {
  Result<Scenario> made = MakeBuiltinScenario("demo", 3, 1, BuiltinCatalog());
  EXPECT_TRUE(made.ok());
  Scenario s = std::move(made).value();
  WorkloadClassPolicy& inference = s.policy.classes[0];
  inference.forecast = ForecastPolicy{};
  inference.queue_depth =
      SignalQuery{prometheus_signal ? SignalSource::kPrometheus : SignalSource::kRabbitMq, "sum(queue_depth)", "/", "q"};
  inference.jobs_per_gpu_per_minute = 2;
  inference.max_queue_wait = Seconds(60);
  s.policy.content_hash = PolicyContentHash(s.policy);
  const ControllerOptions preset = ControllerOptions::ForSimulation(s.policy);
  World world(s, s.policy, RunIdPrefix("gpuscaler"), preset.max_pending_units);
  Warmed out;
  daemon::LiveEngineParts parts;
  parts.clock = &world.clock();
  parts.cloud = &world.cloud();
  parts.catalog = &s.catalog;
  parts.work = &world.work();
  parts.fixed_policy = s.policy;
  parts.before_tick = [&world] { return world.RunUntilTick(); };
  parts.after_tick = [&world] { world.AfterTick(); };
  parts.controller_options = preset;
  parts.controller_options.regions = s.regions;
  if (reader) {
    parts.read_history = [&out, reader](const SignalQuery& q, WallTime start, WallTime end, Seconds step) {
      out.asked.emplace_back(start, end);
      return reader(q, start, end, step);
    };
  }
  std::unique_ptr<daemon::Engine> engine = daemon::MakeLiveEngine(std::move(parts));
  daemon::EngineTick first = engine->Tick();
  out.first_notes = first.report.forecast_notes;
  engine->Tick();
  for (const DemandForecast& f : engine->controller().snapshot().forecasts) {
    if (f.workload_class == "inference") out.forecast_on_second_tick = !f.levels.empty();
  }
  return out;
}

bool Has(const std::vector<std::string>& notes, const std::string& part) {
  for (const std::string& n : notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// Two days of a queue that swings between 0 and 40 jobs with the hour.
daemon::HistoryReader TwoDaysOfQueue() {
  return [](const SignalQuery& q, WallTime start, WallTime end,
            Seconds step) -> Result<std::vector<std::pair<WallTime, double>>> {
    EXPECT_EQ(q.query, "sum(queue_depth)");
    EXPECT_EQ(step, Seconds(60));
    std::vector<std::pair<WallTime, double>> points;
    for (WallTime t = std::max(start, end - Seconds(2 * 86400)); t <= end; t += step) {
      points.emplace_back(t, (ToUnixSeconds(t) / 3600) % 2 == 0 ? 0.0 : 40.0);
    }
    return points;
  };
}

TEST(ForecastWarmUp, TheFirstTickWarmsTheHistoryAndTheForecastIsOnAtOnce) {
  const Warmed w = RunTwoTicks(TwoDaysOfQueue(), true);
  EXPECT_TRUE(
      Has(w.first_notes, "class inference: forecast history warmed from 2881 minutes of its queue depth"))
      << (w.first_notes.empty() ? "" : w.first_notes.front());
  ASSERT_EQ(w.asked.size(), 1u);
  EXPECT_EQ(w.asked[0].second - w.asked[0].first, Seconds(15 * 86400) - Seconds(60));
  EXPECT_TRUE(w.forecast_on_second_tick);
}

TEST(ForecastWarmUp, WithoutHistoryTheClassStartsReactiveAndTheLogSaysWhy) {
  const Warmed none = RunTwoTicks({}, true);
  EXPECT_FALSE(none.forecast_on_second_tick);
  EXPECT_TRUE(
      Has(none.first_notes, "class inference: forecast off (no demand history yet): planned reactively"));

  const Warmed failing = RunTwoTicks(
      [](const SignalQuery&, WallTime, WallTime,
         Seconds) -> Result<std::vector<std::pair<WallTime, double>>> {
        return Error::Transient("prometheus: 127.0.0.1:9: connection refused");
      },
      true);
  EXPECT_FALSE(failing.forecast_on_second_tick);
  EXPECT_TRUE(Has(failing.first_notes, "class inference: forecast history not warmed ("));
  EXPECT_TRUE(Has(failing.first_notes, "connection refused"));

  const Warmed other_source = RunTwoTicks(TwoDaysOfQueue(), false);
  EXPECT_TRUE(other_source.asked.empty());
  EXPECT_FALSE(other_source.forecast_on_second_tick);
  EXPECT_TRUE(Has(other_source.first_notes, "not warmed (its queue depth is not a Prometheus signal)"));
}

}  // namespace
}  // namespace gpuscaler::sim
