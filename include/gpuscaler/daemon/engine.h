// The daemon's engines: what one control-loop tick does, without the I/O
// loop around it (daemon.h runs an engine on its worker thread, on a timer,
// and serves its state over HTTP).
//
//  - DemoEngine: the built-in demo load (sim scenario "demo") through the
//    production Controller against the simulated cloud, on a virtual clock
//    that runs `speed` times faster than real time (`gpuscaler run --demo`).
//  - LiveEngine: the real thing. Each tick re-reads the policy file (hot
//    reload), collects the signals of every class, turns them into demand
//    (SignalWorkSource), and calls Controller::Tick against the configured
//    CloudProvider.
// Both record into the same SQLite audit schema. Not thread-safe: one thread
// (the daemon's worker) calls Tick() and reads the accessors between ticks.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/controller/controller.h"
#include "gpuscaler/daemon/policy_watcher.h"
#include "gpuscaler/daemon/signal_work_source.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler::sim {
class Replay;
struct Scenario;
}  // namespace gpuscaler::sim

namespace gpuscaler::daemon {

// What one tick did, for the loop, the metrics and the HTTP state.
struct EngineTick {
  TickReport report;
  WallTime time{};
  PolicyReload reload;       // live: the policy file's state this tick
  double cost_usd_per_hour = 0;  // fleet spend rate after the tick
  std::vector<ClassSignal> signals;  // as judged this tick (live)
  std::map<std::string, double> queue_depth;  // by class: last usable value
  int64_t queued_jobs = -1;   // demo: the workload's queue; -1 unknown
  int64_t running_jobs = -1;
  bool finished = false;      // demo: the scenario's horizon is reached
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string mode() const = 0;  // "demo" | "live" | "dry-run"
  virtual EngineTick Tick() = 0;
  // Virtual time between ticks (the policy's tick interval).
  virtual Seconds tick_interval() const = 0;
  // Virtual seconds per real second (1 for the live engine).
  virtual double speed() const { return 1.0; }
  virtual const Controller& controller() const = 0;
  virtual const Catalog& catalog() const = 0;
  virtual WallTime now() const = 0;
  // Flushes usage and whatever the store holds back; call once, at the end.
  virtual Status Shutdown() = 0;
};

struct DemoOptions {
  uint64_t seed = 1;
  int days = 30;
  double speed = 60;
  std::string db_file;  // empty: an in-memory audit store
  std::string source_dir;  // where config/catalogs/aws.yaml is searched from
};

// The built-in demo load; kConfig when the audit file cannot be opened.
Result<std::unique_ptr<Engine>> MakeDemoEngine(const DemoOptions& options);

// Reads every class's signals at `now`, judged for freshness against the policy.
using SignalReader = std::function<std::vector<ClassSignal>(const Policy& policy, WallTime now)>;

struct LiveEngineParts {
  const Clock* clock = nullptr;            // required
  CloudProvider* cloud = nullptr;          // required
  AuditStore* store = nullptr;             // may be null (nothing recorded)
  const Catalog* catalog = nullptr;        // required
  std::unique_ptr<PolicyWatcher> watcher;  // required, LoadInitial() already called
  SignalReader read_signals;               // required
  // Called before each tick with the wall time (the simulated provider's
  // clock and event queue catch up here); may be empty.
  std::function<void(WallTime)> before_tick;
  // The fleet's spend rate; may be empty (then: sum of node prices).
  std::function<double()> spend_rate;
  // Kubernetes (kube_setup.cc): pending and bound pods as demand, read each
  // tick; empty without Kubernetes.
  std::function<ClusterWork(const Policy& policy, WallTime now)> read_cluster;
  ControllerOptions controller_options;
};

std::unique_ptr<Engine> MakeLiveEngine(LiveEngineParts parts);

}  // namespace gpuscaler::daemon
