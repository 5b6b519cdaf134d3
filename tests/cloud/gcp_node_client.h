// Running Google's Node.js client (googleapis, pinned in
// tests/cloud/gcp_node_client/package-lock.json and installed by
// scripts/setup.sh outside the source and build trees) from a test: where
// node and the packages are, and one script run whose stdout is JSON.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/process.h"

namespace gpuscaler::testing {

// $GPUSCALER_NODE_CACHE/node_modules, else
// ~/.cache/gpuscaler/gcp_node_client/node_modules.
inline std::filesystem::path NodeModules() {
  if (const char* c = std::getenv("GPUSCALER_NODE_CACHE"); c != nullptr && *c != '\0') {
    return std::filesystem::path(c) / "node_modules";
  }
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home != nullptr ? home : "/root") /
         ".cache/gpuscaler/gcp_node_client/node_modules";
}

// Why the client cannot run here ("" when it can): node not on PATH, or
// googleapis not installed.
inline std::string NodeClientMissing() {
  if (FindOnPath("node").empty()) return "node is not on PATH (scripts/setup.sh installs it)";
  if (!std::filesystem::exists(NodeModules() / "googleapis" / "package.json"))
    return "googleapis is not installed in " + NodeModules().string() + ": run scripts/setup.sh";
  return "";
}

inline bool RequireNodeClientUnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

struct NodeRun {
  int exit_code = -1;
  nlohmann::json out;  // stdout parsed; discarded when not JSON
  std::string stdout_text;
  std::string stderr_text;
};

// Runs tests/cloud/gcp_node_client/<script> with `args`; its output goes to
// files in `dir` (named after the script).
inline NodeRun RunNodeScript(const std::filesystem::path& dir, const std::string& script,
                             const std::vector<std::string>& args) {
  const std::string path = std::string(GPUSCALER_SOURCE_DIR) + "/tests/cloud/gcp_node_client/" + script;
  const std::filesystem::path out = dir / (script + ".out"), err = dir / (script + ".err");
  std::string cmd = "NODE_PATH=" + ShellQuote(NodeModules().string()) + " " + ShellQuote(FindOnPath("node")) +
                    " " + ShellQuote(path);
  for (const std::string& a : args) cmd += " " + ShellQuote(a);
  cmd += " >" + ShellQuote(out.string()) + " 2>" + ShellQuote(err.string());
  const int status = std::system(cmd.c_str());
  NodeRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.stdout_text = ReadAll(out);
  r.stderr_text = ReadAll(err);
  r.out = nlohmann::json::parse(r.stdout_text, nullptr, false);
  if (!r.out.is_object()) r.out = nlohmann::json::object();
  return r;
}

}  // namespace gpuscaler::testing
