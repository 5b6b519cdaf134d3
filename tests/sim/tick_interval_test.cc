// scaling.tick_interval: the control loop runs once per interval of the
// policy, in the simulator as in the daemon (both drive sim::World's or the
// engine's clock by Engine::tick_interval / World::tick).
#include <gtest/gtest.h>

#include <vector>

#include "sim/runner.h"
#include "sim/scenario.h"

namespace gpuscaler::sim {
namespace {

TEST(TickInterval, TheLoopRunsOncePerIntervalOfThePolicy) {
  for (int interval_s : {60, 300}) {
    SCOPED_TRACE(interval_s);
    Result<Scenario> s = MakeBuiltinScenario("demo", 7, 1, BuiltinCatalog());
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    s->policy.scaling.tick_interval = Seconds(interval_s);
    Result<RunSpec> spec = MakeRunSpec("gpuscaler", *s, nullptr);
    ASSERT_TRUE(spec.ok()) << spec.error().ToString();
    Replay replay(*s, *spec);
    std::vector<int64_t> times;
    TickReport tick;
    while (!replay.done()) {
      if (replay.Step(&tick)) times.push_back(ToUnixSeconds(tick.time));
    }
    ASSERT_GE(times.size(), 2u);
    for (size_t i = 1; i < times.size(); ++i) ASSERT_EQ(times[i] - times[i - 1], interval_s) << "tick " << i;
    EXPECT_NEAR(double(times.size()), 86400.0 / interval_s, 1.0);
  }
}

}  // namespace
}  // namespace gpuscaler::sim
