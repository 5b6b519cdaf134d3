// `gpuscaler run (--config FILE | --demo) [--listen HOST:PORT] [--db FILE] [--dry-run] [--speed N]
//  [--days N] [--seed N] [--port-file FILE] [--api-token-file FILE] [--max-ticks N] [--grace-period S]`:
// the long-running controller (docs/daemon.md).
#include "commands.h"
#include "gpuscaler/cli/simulated_wiring.h"
#include "gpuscaler/daemon/daemon.h"

namespace gpuscaler::cli {

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<daemon::RunCommandOptions>();
  auto grace_s = std::make_shared<int64_t>(30);
  auto* cmd = app.add_subcommand("run", "Run the controller daemon (or --demo: against the simulated cloud)");
  cmd->add_option("--config", o->config_file, "Daemon configuration file (config/gpuscaler.yaml)");
  cmd->add_flag("--demo", o->demo,
                "Run the built-in demo load through the controller against the simulated cloud, with the "
                "dashboard on --listen");
  cmd->add_option("--listen", o->listen, "HTTP listen address HOST:PORT (port 0: any free port)");
  cmd->add_option("--db", o->db_file, "Audit database (SQLite); overrides the configuration");
  cmd->add_flag("--dry-run", o->dry_run, "Plan and audit, never call the cloud");
  auto* speed = cmd->add_option("--speed", o->speed,
                                "Virtual seconds per real second: the demo's, or a --config daemon's on "
                                "cloud.provider simulated (its clock runs that much faster)")
                    ->default_val(60);
  cmd->add_option("--days", o->demo_days, "Demo: length of the generated load, in days")->default_val(30);
  cmd->add_option("--seed", o->seed, "Demo: random seed")->default_val(1);
  cmd->add_option("--port-file", o->port_file, "Write the bound HTTP port to this file once listening");
  cmd->add_option("--api-token-file", o->api_token_file,
                  "File holding the bearer token for mutating endpoints (pause/resume)");
  cmd->add_option("--max-ticks", o->max_ticks, "Stop after this many ticks (0: run until SIGTERM)");
  auto tick_ms = std::make_shared<int64_t>(0);
  cmd->add_option("--tick-interval-ms", *tick_ms,
                  "Tests and benchmarks: milliseconds between ticks instead of the policy's tick_interval")
      ->check(CLI::Range(int64_t{10}, int64_t{3600000}));
  cmd->add_option("--grace-period", *grace_s, "Seconds to finish the current tick after SIGTERM")->default_val(30);
  cmd->callback([o, grace_s, tick_ms, speed, exit_code] {
    if (o->demo == !o->config_file.empty()) {
      std::cerr << "gpuscaler run: give exactly one of --config FILE or --demo\n";
      *exit_code = 2;
      return;
    }
    o->grace = Seconds(*grace_s);
    o->speed_set = speed->count() > 0;
    o->tick_interval_override = std::chrono::milliseconds(*tick_ms);
    *exit_code = daemon::RunDaemon(*o, MakeSimulatedWiring());
  });
}

}  // namespace gpuscaler::cli
