// Placeholder until this command lands (being written now).
#include "commands.h"
namespace gpuscaler::cli {
void RegisterSimCommand(CLI::App& app, int* exit_code) { app.add_subcommand("sim", "(not built yet)")->allow_extras()->callback([=] { *exit_code = 1; }); }
}
