// The gpuscaler command line: run, sim, report, policy check, explain, version.
#pragma once

namespace gpuscaler {

// Parses argv and runs the chosen subcommand. Returns the process exit code:
// 0 success, 1 runtime failure, 2 bad input (usage, invalid policy or catalog).
int RunCli(int argc, char** argv);

}  // namespace gpuscaler
