// The simulation sweep as a Kubernetes Indexed Job (config/kubernetes/sweep):
// one `gpuscaler sim sweep --shard I/N` per completion index, and the N shards
// of its grid covering every cell exactly once.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kube/manifests_fixture.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test::sweep_job_test {
namespace {

namespace fs = std::filesystem;
using manifests_testing::Str;

// The sweep as an Indexed Job: one `gpuscaler sim sweep --shard I/N` per
// completion index, N equal to the Job's completions, and the N shards of its
// grid (with the volume's paths pointed at ../shared and this repository)
// covering every cell exactly once.
TEST(SweepJob, IsAnIndexedJobWhoseShardsCoverTheGridOnce) {
  GPUSCALER_REQUIRE_TOOL(kubectl, "kubectl");
  const std::vector<YAML::Node> objects = Kustomize(kubectl, SourceDir() / "config/kubernetes/sweep");
  const YAML::Node job = FindObject(objects, "Job", "gpuscaler-sweep");
  ASSERT_TRUE(job);
  EXPECT_EQ(Str(job["metadata"]["namespace"]), "gpuscaler-sweeps");
  const YAML::Node spec = job["spec"];
  EXPECT_EQ(Str(spec["completionMode"]), "Indexed");
  const int shards = spec["completions"].as<int>();
  EXPECT_EQ(spec["parallelism"].as<int>(), shards);
  EXPECT_GE(spec["backoffLimitPerIndex"].as<int>(), 1);
  const YAML::Node pod = spec["template"]["spec"];
  EXPECT_EQ(Str(pod["restartPolicy"]), "Never");  // what backoffLimitPerIndex requires
  const YAML::Node c = pod["containers"][0];
  const std::vector<std::string> args = c["args"].as<std::vector<std::string>>();
  const auto arg_after = [&](const std::string& flag) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it != args.end() && it + 1 != args.end() ? *(it + 1) : std::string();
  };
  EXPECT_EQ(arg_after("--shard"), "$(SHARD_INDEX)/" + std::to_string(shards));
  bool index_from_annotation = false;
  for (const YAML::Node& e : c["env"]) {
    index_from_annotation |= Str(e["name"]) == "SHARD_INDEX" &&
                             Str(e["valueFrom"]["fieldRef"]["fieldPath"]) ==
                                 "metadata.annotations['batch.kubernetes.io/job-completion-index']";
  }
  EXPECT_TRUE(index_from_annotation);
  EXPECT_EQ(Str(c["securityContext"]["allowPrivilegeEscalation"]), "false");
  EXPECT_EQ(Str(pod["securityContext"]["runAsNonRoot"]), "true");

  const YAML::Node cm = FindObject(objects, "ConfigMap", "sweep-grid", /*hashed=*/true);
  ASSERT_TRUE(cm);
  EXPECT_EQ(fs::path(arg_after("--grid")).filename(), "grid.yaml");
  std::string grid = Str(cm["data"]["grid.yaml"]);
  if (!fs::is_directory(SharedDir() / "data")) GTEST_SKIP() << "no ../shared/data for the grid's inputs";
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = grid.find(from); at != std::string::npos; at = grid.find(from, at + to.size())) {
      grid.replace(at, from.size(), to);
    }
  };
  replace_all("/data/traces/", (SharedDir() / "data/traces").string() + "/");
  replace_all("/data/prices/", (SharedDir() / "data/prices").string() + "/");
  replace_all("/data/catalogs/aws.yaml", (SourceDir() / "config/catalogs/aws.yaml").string());
  replace_all("/data/policies/sweep.yaml", (SourceDir() / "sim/testdata/policies/openb.yaml").string());
  TempDir dir;
  WriteFile(dir.path() / "grid.yaml", grid);
  std::multiset<std::string> cells;
  for (int i = 0; i < shards; ++i) {
    const CommandResult r = RunCommand({GPUSCALER_BINARY, "sim", "sweep", "--grid", (dir.path() / "grid.yaml").string(),
                                        "--out", (dir.path() / "out").string(), "--shard",
                                        std::to_string(i) + "/" + std::to_string(shards), "--list"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NE(line.find(" to run"), std::string::npos) << line;
      cells.insert(line.substr(0, line.find(' ')));
    }
  }
  EXPECT_EQ(cells.size(), 12u);  // 2 traces x 1 market x 3 policies x 2 seeds
  EXPECT_EQ(std::set<std::string>(cells.begin(), cells.end()).size(), cells.size()) << "a cell in two shards";
}

}  // namespace
}  // namespace gpuscaler::kube_test::sweep_job_test
