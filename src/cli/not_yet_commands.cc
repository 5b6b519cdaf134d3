// Subcommands whose issues have not landed yet. Each says so plainly and
// exits 1, rather than pretending to work.
#include <iostream>

#include "commands.h"

namespace gpuscaler::cli {

namespace {

void RegisterNotYet(CLI::App& app, const char* name, const char* description, const char* issue,
                    int* exit_code) {
  auto* cmd = app.add_subcommand(name, description);
  cmd->allow_extras();
  cmd->callback([=] {
    std::cerr << "gpuscaler " << name << ": not available in this build yet (" << issue
              << "). Try `gpuscaler sim --scenario demo`.\n";
    *exit_code = 1;
  });
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  RegisterNotYet(app, "run", "Run the controller daemon (coming: issue 5)", "issue 5, the daemon", exit_code);
}

}  // namespace gpuscaler::cli
