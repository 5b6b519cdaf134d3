// Helpers for the deployment tests: find and run external tools (kubectl,
// promtool, the gpuscaler binary), render the kustomize tree, and a tiny
// blocking HTTP GET for the daemon's endpoints.
#pragma once

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpuscaler::kube_test {

std::filesystem::path SourceDir();   // the repository
std::filesystem::path SharedDir();   // ../shared beside it (may not exist)

std::string ReadFile(const std::filesystem::path& p);
void WriteFile(const std::filesystem::path& p, const std::string& text);

// A fresh folder under the test temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or not run
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH) with the arguments, no shell involved;
// stdout and stderr captured.
CommandResult RunCommand(const std::vector<std::string>& argv);

// The full path of `tool` in PATH, or nullopt.
std::optional<std::filesystem::path> FindInPath(const std::string& tool);

// True when running under CI (CI=true): a missing tool is then a failure,
// not a skip.
bool InCi();

// `kubectl kustomize DIR`: every rendered object, in order. Fails the
// current test on a kustomize error.
std::vector<YAML::Node> Kustomize(const std::filesystem::path& kubectl, const std::filesystem::path& dir);

// The one object of `kind` whose metadata.name is `name` (or starts with
// `name` + "-" when `hashed`, for generated ConfigMaps); an undefined
// node (false) if none.
YAML::Node FindObject(const std::vector<YAML::Node>& objects, const std::string& kind, const std::string& name,
                      bool hashed = false);

struct HttpResponse {
  int status = 0;  // 0: no answer
  std::string body;
};
// GET http://127.0.0.1:port/path, HTTP/1.0, with a receive timeout; chunked
// bodies are decoded.
HttpResponse HttpGet(int port, const std::string& path);

// Metric names a PromQL expression reads: identifiers that are neither
// functions, keywords, label names (in {…}, by/without/on/ignoring/group_*
// lists) nor literals. A `_bucket`/`_sum`/`_count` suffix is kept.
std::set<std::string> MetricNamesInPromQl(const std::string& expr);

// Every sample name in a Prometheus text exposition ("name{…} value"),
// plus the family names of # TYPE lines.
std::set<std::string> MetricNamesInExposition(const std::string& text);

}  // namespace gpuscaler::kube_test

// Skips the test outside CI and fails it under CI when `tool` is missing.
#define GPUSCALER_REQUIRE_TOOL(var, tool)                                                          \
  std::filesystem::path var;                                                                       \
  do {                                                                                             \
    std::optional<std::filesystem::path> found_ = ::gpuscaler::kube_test::FindInPath(tool);        \
    if (!found_) {                                                                                 \
      if (::gpuscaler::kube_test::InCi()) FAIL() << tool << " is not installed (CI=true)";         \
      GTEST_SKIP() << tool << " is not installed; scripts/setup.sh installs it";                   \
    }                                                                                              \
    var = *found_;                                                                                 \
  } while (0)
