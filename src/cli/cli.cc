#include "gpuscaler/cli/cli.h"

#include <spdlog/spdlog.h>

#include <iostream>

#include "commands.h"
#include "gpuscaler/cli/logging.h"

#ifndef GPUSCALER_VERSION
#define GPUSCALER_VERSION "dev"
#endif

namespace gpuscaler {

int RunCli(int argc, char** argv) {
  CLI::App app{"gpuscaler: a cost-aware autoscaler for GPU node pools"};
  app.require_subcommand(1);
  std::string log_format = "auto";
  std::string log_level = "info";
  app.add_option("--log-format", log_format, "Log format: text or json (JSON lines for log collectors)")
      ->check(CLI::IsMember({"auto", "text", "json"}));
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.set_version_flag("--version", GPUSCALER_VERSION);

  int exit_code = 0;
  auto* version = app.add_subcommand("version", "Print the version and exit");
  version->callback([] { std::cout << "gpuscaler " << GPUSCALER_VERSION << "\n"; });

  cli::RegisterRunCommand(app, &exit_code);
  cli::RegisterSimCommand(app, &exit_code);
  cli::RegisterReportCommand(app, &exit_code);
  cli::RegisterDbCommand(app, &exit_code);
  cli::RegisterPolicyCommand(app, &exit_code);
  cli::RegisterExplainCommand(app, &exit_code);
  cli::RegisterCloudEmulatorCommand(app, &exit_code);
  cli::RegisterNodeAgentCommand(app, &exit_code);

  // Logging must be set up before any subcommand callback runs.
  app.parse_complete_callback([&] {
    if (Status s = SetupLogging(log_format, log_level); !s.ok()) {
      std::cerr << "gpuscaler: " << s.error().message() << "\n";
      std::exit(2);
    }
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the parse error
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace gpuscaler
