#include "gpuscaler/cli/simulated_wiring.h"

#include <algorithm>
#include <memory>

#include "sim/scenario.h"
#include "sim/sim_cloud.h"
#include "sim/workload.h"
#include "sim/world.h"

namespace gpuscaler::cli {
namespace {

// The demo: a scenario and the world it runs in, owned together.
struct DemoWorld {
  sim::Scenario scenario;
  std::unique_ptr<sim::World> world;
};

Status WireDemo(const daemon::DemoOptions& options, const Catalog& catalog, daemon::LiveEngineParts* parts,
                daemon::KeepAlive* keep_alive) {
  Result<sim::Scenario> scenario = sim::MakeBuiltinScenario("demo", options.seed, options.days, catalog);
  if (!scenario) return scenario.error();
  auto demo = std::make_shared<DemoWorld>();
  demo->scenario = std::move(scenario).value();
  demo->world =
      std::make_unique<sim::World>(demo->scenario, demo->scenario.policy, "i-demo",
                                   parts->controller_options.max_pending_units, /*long_running=*/true);
  keep_alive->push_back(demo);
  sim::World* world = demo->world.get();
  parts->clock = &world->clock();
  parts->cloud = &world->cloud();
  parts->work = &world->work();
  parts->fixed_policy = demo->scenario.policy;
  parts->controller_options.regions = demo->scenario.regions;
  parts->before_tick = [world] { return world->RunUntilTick(); };
  parts->after_tick = [world] { world->AfterTick(); };
  parts->spend_rate = [world] { return world->cloud().CurrentUsdPerHour(); };
  parts->describe = [world](daemon::EngineTick* tick) {
    tick->queued_jobs = world->queued_jobs();
    tick->running_jobs = world->running_jobs();
    tick->finished = world->done();
  };
  return Status();
}

// The simulated cloud on the wall clock: its clock is moved to the wall time
// before each tick, and the events due by then (nodes becoming ready,
// interruptions) run first.
struct WallClockCloud {
  SystemClock system;
  const Clock* time;  // the daemon's: the system clock, or a ScaledClock under --speed
  ManualClock clock;
  sim::SpotMarket market;
  std::unique_ptr<sim::SimCloud> cloud;
  explicit WallClockCloud(const Clock* daemon_time)
      : time(daemon_time != nullptr ? daemon_time : &system), clock(time->WallNow()) {}
};

Status WireCloud(const daemon::SimulatedCloudOptions& options, const Catalog& catalog,
                 daemon::LiveEngineParts* parts, daemon::KeepAlive* keep_alive) {
  auto sim_cloud = std::make_shared<WallClockCloud>(options.time);
  sim::SimCloudConfig config;
  config.id_prefix = "i-sim";
  sim::ForLongRunning(config);
  if (options.launch_latency > Seconds(0)) {
    sim::LatencyDistribution latency;
    latency.median = options.launch_latency;
    latency.min = std::min(latency.median, Seconds(1));
    config.default_latency = latency;
  }
  sim_cloud->cloud = std::make_unique<sim::SimCloud>(
      sim_cloud->clock, catalog, catalog.Offerings(options.regions), sim_cloud->market, config);
  keep_alive->push_back(sim_cloud);
  WallClockCloud* raw = sim_cloud.get();
  parts->clock = &raw->clock;
  parts->cloud = raw->cloud.get();
  parts->before_tick = [raw] {
    const WallTime now = raw->time->WallNow();
    raw->clock.AdvanceTo(now);
    raw->cloud->RunEventsUntil(now);
    return true;
  };
  parts->spend_rate = [raw] { return raw->cloud->CurrentUsdPerHour(); };
  return Status();
}

}  // namespace

daemon::SimulatedWiring MakeSimulatedWiring() { return {WireDemo, WireCloud}; }

}  // namespace gpuscaler::cli
