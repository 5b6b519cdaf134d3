// One control loop for every caller: the same trace through the simulator
// (sim::Replay) and through the daemon's live engine in a simulated world
// on a virtual clock (as the demo runs it) gives the same decisions, tick by
// tick.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/model/json.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/workload.h"
#include "sim/world.h"

namespace gpuscaler::sim {
namespace {

struct Decision {
  int64_t time = 0;
  std::string plan_json;
  bool operator==(const Decision&) const = default;
};

Scenario TwoDemoDays() {
  Result<Scenario> s = MakeBuiltinScenario("demo", 7, 2, BuiltinCatalog());
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

std::vector<Decision> ThroughTheSimulator(const Scenario& s) {
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  EXPECT_TRUE(spec.ok());
  Replay replay(s, *spec);
  std::vector<Decision> out;
  TickReport tick;
  while (!replay.done()) {
    if (replay.Step(&tick) && tick.planned)
      out.push_back({ToUnixSeconds(tick.time), FormatPlanJsonLine(tick.plan)});
  }
  return out;
}

std::vector<Decision> ThroughTheLiveEngine(const Scenario& s) {
  const ControllerOptions preset = ControllerOptions::ForSimulation(s.policy);
  World world(s, s.policy, RunIdPrefix("gpuscaler"), preset.max_pending_units);
  daemon::LiveEngineParts parts;
  parts.clock = &world.clock();
  parts.cloud = &world.cloud();
  parts.catalog = &s.catalog;
  parts.work = &world.work();
  parts.fixed_policy = s.policy;
  parts.before_tick = [&world] { return world.RunUntilTick(); };
  parts.after_tick = [&world] { world.AfterTick(); };
  parts.controller_options = preset;
  parts.controller_options.source = "sim:gpuscaler";
  parts.controller_options.regions = s.regions;
  std::unique_ptr<daemon::Engine> engine = daemon::MakeLiveEngine(std::move(parts));
  std::vector<Decision> out;
  while (true) {
    daemon::EngineTick tick = engine->Tick();
    if (tick.finished) break;
    if (tick.report.planned) out.push_back({ToUnixSeconds(tick.time), FormatPlanJsonLine(tick.report.plan)});
  }
  return out;
}

TEST(OneLoop, SimulatorAndLiveEngineOnAVirtualClockMakeTheSameDecisions) {
  const Scenario s = TwoDemoDays();
  const std::vector<Decision> simulated = ThroughTheSimulator(s);
  const std::vector<Decision> live = ThroughTheLiveEngine(s);
  ASSERT_GT(simulated.size(), 10u);
  int launches = 0;
  for (const Decision& d : simulated) launches += d.plan_json.find("\"launches\":[{") != std::string::npos;
  EXPECT_GT(launches, 0) << "a comparison of plans that launch nothing shows nothing";
  ASSERT_EQ(simulated.size(), live.size());
  for (size_t i = 0; i < simulated.size(); ++i) {
    SCOPED_TRACE("decision " + std::to_string(i));
    EXPECT_EQ(simulated[i].time, live[i].time);
    EXPECT_EQ(simulated[i].plan_json, live[i].plan_json);
    if (!(simulated[i] == live[i])) break;
  }
}

}  // namespace
}  // namespace gpuscaler::sim
