// `gpuscaler run`: the long-running controller.
//
// One I/O thread (Boost.Asio, C++20 coroutines) serves HTTP and runs the
// control loop's timer; each tick runs on one worker thread (it blocks on
// the cloud and on signal sources) and its result is published back for the
// HTTP handlers (src/daemon/state.h). SIGTERM/SIGINT: no new tick starts, the
// tick in flight finishes, usage is flushed, the server stops, exit 0 — or
// exit 1 if that takes longer than the grace period.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "gpuscaler/model/time.h"

namespace gpuscaler::daemon {

struct SimulatedWiring;

struct RunCommandOptions {
  std::string config_file;  // required unless demo
  bool demo = false;        // built-in demo load against the simulated cloud
  std::string listen;       // overrides the config's; demo default 127.0.0.1:8080
  std::string db_file;      // overrides the config's; demo default: a fresh file in the temp dir
  double speed = 60;        // demo: virtual seconds per real second
  // --speed given with --config: the daemon's clock runs `speed` times
  // faster than real time (cloud.provider simulated only).
  bool speed_set = false;
  int demo_days = 30;
  uint64_t seed = 1;
  bool dry_run = false;     // plan and audit, never call the cloud
  std::string port_file;    // written with the bound port once listening
  std::string api_token_file;  // overrides the config's
  int64_t max_ticks = 0;    // stop after this many ticks (tests); 0: run until a signal
  // Real time between live ticks instead of the policy's scaling.tick_interval
  // (whole seconds): for tests and benchmarks that need sub-second ticks.
  // 0: the policy's.
  std::chrono::milliseconds tick_interval_override{0};
  Seconds grace{30};
  std::string source_dir;   // where config/catalogs/aws.yaml is looked for
};

// Runs until SIGTERM/SIGINT (or max_ticks). Returns the process exit code:
// 0 clean stop, 1 runtime failure, 2 bad configuration (message on stderr).
// `wiring` builds the demo and the simulated cloud (the CLI's, which links
// the simulator); a mode it leaves empty is a configuration error.
int RunDaemon(const RunCommandOptions& options, const SimulatedWiring& wiring);

}  // namespace gpuscaler::daemon
