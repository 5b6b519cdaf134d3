// The simulated world one replay runs in: a virtual clock, the simulated
// cloud and the workload of a scenario, advanced from event to event.
//
// Time moves from event to event: job arrivals and finishes, launches
// becoming Ready, interruption notices and interruptions, price and
// availability changes, and the controller's ticks (the policy's
// tick_interval). RunUntilTick processes every event before the next tick
// and the events due at it, in time order, then stops for the caller to
// run the control loop (Controller::Tick) against cloud() and work(); then
// AfterTick lets the workload place what the tick made room for.
//
// Both the simulator (sim::Replay) and the daemon's demo (the live engine
// against the simulated cloud) drive the loop through a World, so they see
// the same events at the same virtual times. `scenario` must outlive the
// world. Deterministic; not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/policy/policy.h"
#include "sim/scenario.h"
#include "sim/sim_cloud.h"

namespace gpuscaler::sim {

class Workload;

class World {
 public:
  // `policy` decides the tick interval and how the workload reads classes;
  // `id_prefix` starts every instance id (runs sharing an audit store must
  // not reuse ids); the workload keeps at most `max_pending_units` units in
  // its pending list (the controller's limit). `long_running`: the cloud
  // forgets ended instances (a daemon that runs for months).
  World(const Scenario& scenario, const Policy& policy, const std::string& id_prefix,
        size_t max_pending_units, bool long_running = false);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // The virtual time of the next event or tick; at or past end(): done.
  WallTime next_time() const;
  WallTime end() const { return end_; }
  bool done() const { return next_time() >= end_; }
  // Runs events up to the next tick (and those due at it). True when a tick
  // is due at now(); false once done() (nothing run past end()).
  bool RunUntilTick();
  // After the tick at now(): the workload places work on what it made room
  // for, and the next tick is scheduled.
  void AfterTick();
  // Ends the world at `end`: the workload's accounting closes there.
  void Close(WallTime end);

  WallTime now() const { return clock_.WallNow(); }
  Seconds tick() const { return tick_; }
  ManualClock& clock() { return clock_; }
  const Clock& clock() const { return clock_; }
  SimCloud& cloud() { return *cloud_; }
  const SimCloud& cloud() const { return *cloud_; }
  Workload& work() { return *work_; }
  const Workload& work() const { return *work_; }
  int64_t queued_jobs() const;
  int64_t running_jobs() const;

 private:
  ManualClock clock_;
  std::unique_ptr<SimCloud> cloud_;
  std::unique_ptr<Workload> work_;
  WallTime end_{};
  Seconds tick_{60};
  WallTime next_tick_{};
};

}  // namespace gpuscaler::sim
