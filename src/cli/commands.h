// Subcommand registration. Each subcommand lives in its own file and adds
// itself to the CLI11 app; its callback stores the process exit code in
// `*exit_code` (0 ok, 1 runtime failure, 2 bad input). Private to src/cli.
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <string_view>

namespace gpuscaler::cli {

void RegisterPolicyCommand(CLI::App& app, int* exit_code);   // policy_command.cc
void RegisterExplainCommand(CLI::App& app, int* exit_code);  // explain_command.cc
void RegisterSimCommand(CLI::App& app, int* exit_code);      // sim_command.cc
void RegisterSweepCommands(CLI::App& sim, int* exit_code);   // sim_sweep.cc: `sim sweep`, and `sim merge`:
void RegisterMergeCommand(CLI::App& sim, int* exit_code);    // sim_merge.cc
void RegisterRunCommand(CLI::App& app, int* exit_code);      // run_command.cc
void RegisterReportCommand(CLI::App& app, int* exit_code);   // report_command.cc
void RegisterDbCommand(CLI::App& app, int* exit_code);       // db_command.cc
void RegisterCloudEmulatorCommand(CLI::App& app, int* exit_code);  // cloud_emulator_command.cc
void RegisterNodeAgentCommand(CLI::App& app, int* exit_code);      // node_agent_command.cc

// Prints "COMMAND: MESSAGE" on stderr and returns `code`: a subcommand's
// `return ...Fail(message, code)` on bad input (2) or a failed step (1).
inline int FailCommand(std::string_view command, const std::string& message, int code) {
  std::cerr << command << ": " << message << "\n";
  return code;
}

}  // namespace gpuscaler::cli
