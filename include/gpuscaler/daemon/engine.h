// The daemon's engine: what one control-loop tick does, without the I/O
// loop around it (daemon.h runs the engine on its worker thread, on a
// timer, and serves its state over HTTP).
//
// One engine for every mode. Each tick it re-reads the policy file (hot
// reload), lets the world it runs in catch up (`before_tick`), turns the
// signals of every class into demand (SignalWorkSource) unless the parts
// bring their own WorkSource, and runs the control loop (Controller::Tick)
// against the configured CloudProvider:
//  - live: the real cloud, real signals, the wall clock;
//  - dry-run: the same, never calling Launch or Terminate;
//  - `provider: simulated`: the simulated cloud on the wall clock;
//  - demo (`gpuscaler run --demo`): the built-in demo load (its own
//    WorkSource) against the simulated cloud on a virtual clock that moves
//    one tick per engine tick; the daemon calls Tick `speed` times faster
//    than the tick interval. The CLI wires the simulated parts
//    (SimulatedWiring), since src/daemon does not link the simulator.
// Not thread-safe: one thread (the daemon's worker) calls Tick() and reads
// the accessors between ticks.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/controller/work_source.h"
#include "gpuscaler/daemon/policy_watcher.h"
#include "gpuscaler/daemon/signal_work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler::daemon {

// What one tick did, for the loop, the metrics and the HTTP state.
struct EngineTick {
  TickReport report;
  WallTime time{};
  PolicyReload reload;                        // the policy file's state this tick
  double cost_usd_per_hour = 0;               // fleet spend rate after the tick
  std::vector<ClassSignal> signals;           // as judged this tick (signal-driven demand)
  std::map<std::string, double> queue_depth;  // by class: last usable value
  int64_t queued_jobs = -1;                   // demo: the workload's queue; -1 unknown
  int64_t running_jobs = -1;
  bool finished = false;  // demo: the load's horizon is reached (no tick ran)
  bool standby = false;   // a standby's tick (Engine::Standby): no plan, no act, no write
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string mode() const = 0;  // "demo" | "live" | "dry-run"
  virtual EngineTick Tick() = 0;
  // What a replica that does not hold the Lease does instead of a tick:
  // it keeps what a takeover needs current (the policy file re-read and
  // validated, the signals and the Kubernetes view read into demand) and
  // never plans, calls a cloud or writes to the store.
  virtual EngineTick Standby() = 0;
  // Leadership was lost: what the controller holds in memory may be stale by
  // the time this replica leads again (another replica acted meanwhile), so
  // it is dropped, and the next Tick restores from the store as a restart
  // does (month-to-date, open intents and their tokens, drains, learned
  // risk).
  virtual void Resign() = 0;
  // Virtual time between ticks (the policy's tick interval).
  virtual Seconds tick_interval() const = 0;
  // Virtual seconds per real second (1 but for the demo).
  virtual double speed() const { return 1.0; }
  virtual const Controller& controller() const = 0;
  virtual const Catalog& catalog() const = 0;
  virtual WallTime now() const = 0;
  // Flushes usage and whatever the store holds back; call once, at the end.
  virtual Status Shutdown() = 0;
};

// Reads every class's signals at `now`, judged for freshness against the policy.
using SignalReader = std::function<std::vector<ClassSignal>(const Policy& policy, WallTime now)>;

// A signal's history from `start` to `end` every `step` (Prometheus
// query_range): (time, value) in time order.
using HistoryReader = std::function<Result<std::vector<std::pair<WallTime, double>>>(
    const SignalQuery& query, WallTime start, WallTime end, Seconds step)>;

struct LiveEngineParts {
  const Clock* clock = nullptr;      // required
  CloudProvider* cloud = nullptr;    // required
  AuditStore* store = nullptr;       // may be null (nothing recorded)
  const Catalog* catalog = nullptr;  // required
  // The policy: a watched file (LoadInitial() already called), or, without
  // one, `fixed_policy` (the demo's built-in policy).
  std::unique_ptr<PolicyWatcher> watcher;
  std::optional<Policy> fixed_policy;
  // Demand: signals (required unless `work` is set), and Kubernetes
  // (kube_setup.cc: pending and bound pods, read each tick; may be empty).
  SignalReader read_signals;
  std::function<ClusterWork(const Policy& policy, WallTime now)> read_cluster;
  // Warms the demand forecasts (classes[].forecast) after the first tick:
  // each such class's queue depth over the forecaster's history, turned into
  // GPUs as the signal work source turns a depth into units (the queue's
  // changes; running work, not in the signal, is taken as it is at start).
  // May be empty (no warm-up: histories build up from the first tick).
  HistoryReader read_history;
  // A WorkSource of its own (the demo's workload) instead of signals.
  WorkSource* work = nullptr;
  // Kubernetes nodes: registration, repair and drains off the tick
  // (kube_setup.cc); null without Kubernetes.
  ClusterNodes* cluster_nodes = nullptr;
  // Called before each tick: the world catches up with the clock (the
  // simulated cloud's events run; the demo's clock moves to its next tick).
  // Returning false ends the run: no tick, EngineTick::finished. May be empty.
  std::function<bool()> before_tick;
  // Called after each tick (the demo's workload places work). May be empty.
  std::function<void()> after_tick;
  // Given each tick's report, after the tick (Kubernetes: the conditions of
  // ProvisioningRequests follow the plan). May be empty.
  std::function<void(const TickReport&)> observe_tick;
  // The fleet's spend rate; may be empty (then: sum of node prices).
  std::function<double()> spend_rate;
  // Fills what only the world knows (the demo's job counts). May be empty.
  std::function<void(EngineTick*)> describe;
  // At Shutdown, after the usage flush (the demo's store flush). May be empty.
  std::function<Status()> shutdown;
  std::string mode;  // empty: "live", or "dry-run" with controller_options.dry_run
  double speed = 1;  // virtual seconds per real second
  ControllerOptions controller_options = ControllerOptions::ForDaemon();
  PlannerFn planner;  // empty: MakePlan
};

std::unique_ptr<Engine> MakeLiveEngine(LiveEngineParts parts);

struct DemoOptions {
  uint64_t seed = 1;
  int days = 30;
  double speed = 60;
  std::string source_dir;  // where config/catalogs/aws.yaml is searched from
};

// The settings of `cloud.provider: simulated`.
struct SimulatedCloudOptions {
  std::vector<std::string> regions;
  Seconds launch_latency{0};  // 0: the simulated cloud's default
  // The time the simulated cloud follows (thread-safe, outliving the
  // engine): the daemon's ScaledClock under --speed; null: the system clock.
  const Clock* time = nullptr;
};

using KeepAlive = std::vector<std::shared_ptr<void>>;

// The parts only the CLI can build (it links the simulator). Each fills
// `parts` (clock, cloud and, for the demo, policy, work and hooks) and puts
// what they point to in `keep_alive`. Either may be empty: that mode is
// then a configuration error.
struct SimulatedWiring {
  std::function<Status(const DemoOptions&, const Catalog&, LiveEngineParts*, KeepAlive*)> demo;
  std::function<Status(const SimulatedCloudOptions&, const Catalog&, LiveEngineParts*, KeepAlive*)> cloud;
};

}  // namespace gpuscaler::daemon
