// Placeholder until this command lands (being written now).
#include "commands.h"
namespace gpuscaler::cli {
void RegisterExplainCommand(CLI::App& app, int* exit_code) { app.add_subcommand("explain", "(not built yet)")->allow_extras()->callback([=] { *exit_code = 1; }); }
}
