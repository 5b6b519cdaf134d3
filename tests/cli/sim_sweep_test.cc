// `gpuscaler sim sweep` and `gpuscaler sim merge`, run as an operator would:
// cells equal the single `gpuscaler sim` runs, a sweep resumes where it was
// killed, overrides and shards, and the merged table with its Pareto front.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/process.h"
#include "support/chromium.h"

namespace gpuscaler::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::chrono_literals;

class SimSweep : public CliTest {
 protected:
  std::string Grid(const std::string& body) {
    return Write("grid.yaml", "catalog: " + std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml\n" + body)
        .string();
  }
  std::string Out() const { return (dir_ / "out").string(); }
  std::vector<std::string> CellIds() const {
    std::vector<std::string> ids;
    if (!fs::is_directory(dir_ / "out" / "cells")) return ids;
    for (const auto& e : fs::directory_iterator(dir_ / "out" / "cells")) {
      if (fs::exists(e.path() / "summary.json")) ids.push_back(e.path().filename().string());
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

constexpr const char* kDemoGrid = R"(days: 1
traces:
  - name: demo
    scenario: demo
policies:
  - name: own
  - name: karpenter
    baseline: karpenter
seeds: [1, 2]
)";

TEST_F(SimSweep, EachCellIsTheSingleRunsJsonByteForByte) {
  const std::string grid = Grid(kDemoGrid);
  ProcessResult sweep = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--workers", "2"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  ASSERT_EQ(CellIds(), (std::vector<std::string>{"demo.none.karpenter.base.s1", "demo.none.karpenter.base.s2",
                                                 "demo.none.own.base.s1", "demo.none.own.base.s2"}));
  for (const std::string seed : {"1", "2"}) {
    for (const std::string policy : {"own", "karpenter"}) {
      std::vector<std::string> args = {"sim", "--scenario", "demo", "--days", "1", "--seed", seed, "--json",
                                       "--catalog", std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml"};
      if (policy == "karpenter") {
        args.push_back("--baseline");
        args.push_back("karpenter");
      }
      ProcessResult single = Gpuscaler(args);
      ASSERT_EQ(single.exit_code, 0) << single.err;
      EXPECT_EQ(ReadAll(dir_ / "out/cells" / ("demo.none." + policy + ".base.s" + seed) / "result.json"), single.out)
          << policy << " seed " << seed;
    }
  }
}

TEST_F(SimSweep, AKilledSweepFinishesOnlyTheMissingCellsWhenRunAgain) {
  const std::string grid = Grid(R"(days: 1
traces:
  - name: demo
    scenario: demo
policies:
  - name: own
seeds: [1, 2, 3, 4, 5, 6]
)");
  {
    ChildProcess sweep({GPUSCALER_BINARY, "sim", "sweep", "--grid", grid, "--out", Out(), "--workers", "1"},
                       dir_ / "first.out", dir_ / "first.err");
    ASSERT_TRUE(sweep.started());
    // A cell takes well under a second in a release build, many under a
    // sanitizer on a loaded machine: wait for the first as long as it takes.
    for (int i = 0; i < 12000 && CellIds().empty(); ++i) std::this_thread::sleep_for(10ms);
    sweep.Signal(SIGKILL);
    EXPECT_EQ(sweep.Wait(10s), 128 + SIGKILL);
  }
  std::this_thread::sleep_for(200ms);  // the worker follows its parent
  const std::vector<std::string> before = CellIds();
  ASSERT_GE(before.size(), 1u);
  ASSERT_LT(before.size(), 6u) << "the sweep finished before it was killed; nothing to resume";
  std::map<std::string, fs::file_time_type> written;
  for (const std::string& id : before) written[id] = fs::last_write_time(dir_ / "out/cells" / id / "summary.json");

  ProcessResult again = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--workers", "2"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("6 cell(s), " + std::to_string(before.size()) + " done already"), std::string::npos)
      << again.err;
  EXPECT_EQ(CellIds().size(), 6u);
  for (const auto& [id, time] : written) {
    EXPECT_EQ(fs::last_write_time(dir_ / "out/cells" / id / "summary.json"), time) << id << " was replayed again";
  }
  // A third run has nothing to do.
  ProcessResult third = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out()});
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(third.err.find("6 cell(s), 6 done already"), std::string::npos) << third.err;
}

TEST_F(SimSweep, OverridesMakeVariantsAndShardsPartitionTheCells) {
  const fs::path policy = Write("policy.yaml", R"(apiVersion: gpuscaler/v1
kind: Policy
name: small
pools:
  - name: gpu
    families: [g5, g6]
    regions: [us-east-1]
    max_nodes: 40
classes:
  - name: inference
    pools: [gpu]
  - name: training
    pools: [gpu]
  - name: eval
    pools: [gpu]
)");
  const std::string grid = Grid("days: 1\ntraces:\n  - name: demo\n    scenario: demo\npolicies:\n  - name: small\n"
                                "    file: " + policy.string() + "\noverrides:\n  pools[0].max_nodes: [2, 40]\n");
  for (const char* shard : {"0/2", "1/2"}) {
    ProcessResult r = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--shard", shard});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("1 cell(s) in shard " + std::string(shard) + " of 2"), std::string::npos) << r.err;
  }
  const std::vector<std::string> ids = CellIds();
  ASSERT_EQ(ids, (std::vector<std::string>{"demo.none.small.pools_0_.max_nodes=2.s1",
                                           "demo.none.small.pools_0_.max_nodes=40.s1"}));
  const Json two = Json::parse(ReadAll(dir_ / "out/cells" / ids[0] / "summary.json"));
  const Json forty = Json::parse(ReadAll(dir_ / "out/cells" / ids[1] / "summary.json"));
  EXPECT_EQ(two["inputs"]["overrides"]["pools[0].max_nodes"], "2");
  // Two nodes cannot carry the demo's day: jobs are left unfinished.
  EXPECT_GT(two["sim"]["results"][1]["jobs_unfinished"].get<int>(),
            forty["sim"]["results"][1]["jobs_unfinished"].get<int>());

  // A path the policy does not have is an error naming it.
  const std::string bad = Grid("traces:\n  - name: demo\n    scenario: demo\npolicies:\n  - name: small\n"
                               "    file: " + policy.string() + "\noverrides:\n  pools[3].max_nodes: [1]\n");
  ProcessResult r = Gpuscaler({"sim", "sweep", "--grid", bad, "--out", (dir_ / "bad").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("override pools[3].max_nodes: no item [3] in 'pools' (it has 1)"), std::string::npos) << r.err;
}

TEST_F(SimSweep, GridMistakesAreReportedAtTheirLine) {
  const std::string grid = Grid(R"(traces:
  - name: demo
    scenario: demo
    dayz: 2
policies:
  - name: k
    baseline: karpentr
)");
  ProcessResult r = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("grid.yaml:5:5: traces[0].dayz: unknown field 'dayz' (did you mean 'days'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("grid.yaml:8:15: policies[0].baseline: unknown baseline 'karpentr'"), std::string::npos)
      << r.err;
}

TEST_F(SimSweep, MergeTabulatesEveryCellAndMarksTheParetoFront) {
  const std::string grid = Grid(kDemoGrid);
  ASSERT_EQ(Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out()}).exit_code, 0);
  ProcessResult csv = Gpuscaler({"sim", "merge", Out()});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5) << csv.out;
  EXPECT_EQ(csv.out.rfind("cell,trace,market,policy,run,overrides,seed,total_cost_usd,", 0), 0u) << csv.out;

  ProcessResult json = Gpuscaler({"sim", "merge", Out(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const Json merged = Json::parse(json.out);
  ASSERT_EQ(merged["cells"].size(), 4u);
  // The front is over each policy's mean across the seeds; no point on it is
  // beaten on all of cost, GPU-hours lost and p95 wait by another.
  std::map<std::string, std::array<double, 3>> mean;
  for (const Json& c : merged["cells"]) {
    auto& m = mean[c["inputs"]["policy"]];
    m[0] += c["result"]["total_cost_usd"].get<double>() / 2;
    m[1] += c["result"]["gpu_hours_lost"].get<double>() / 2;
    m[2] += c["result"]["queue_wait_s"]["p95"].get<double>() / 2;
  }
  std::set<std::string> expected;
  for (const auto& [p, v] : mean) {
    bool dominated = false;
    for (const auto& [q, w] : mean) {
      dominated |= w[0] <= v[0] && w[1] <= v[1] && w[2] <= v[2] && (w[0] < v[0] || w[1] < v[1] || w[2] < v[2]);
    }
    if (!dominated) expected.insert(p);
  }
  std::set<std::string> front;
  for (const Json& f : merged["pareto_front"]) {
    front.insert(f["policy"]);
    EXPECT_NEAR(f["mean_total_cost_usd"].get<double>(), mean[f["policy"]][0], 1e-6);
  }
  EXPECT_EQ(front, expected);
  EXPECT_FALSE(front.empty());
}

// The merged page: self-contained, drawn by headless Chromium without a
// console error, one circle per (policy, parameters) point, the front joined,
// the best point per trade-off named and the parameter effects tabulated.
TEST_F(SimSweep, MergeDrawsAnHtmlPageWithTheFrontThatChromiumRenders) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    if (InCi()) FAIL() << "chromium is not installed (scripts/setup.sh installs it)";
    GTEST_SKIP() << "chromium not installed";
  }
  const std::string grid = Grid(R"(days: 1
traces:
  - name: demo
    scenario: demo
policies:
  - name: demo-policy
    file: )" + std::string(GPUSCALER_SOURCE_DIR) + R"(/sim/testdata/policies/openb.yaml
  - name: karpenter
    baseline: karpenter
overrides:
  spot.max_price_fraction_of_on_demand: [0.3, 1.0]
)");
  ProcessResult sweep = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out()});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  ProcessResult html = Gpuscaler({"sim", "merge", Out(), "--format", "html"});
  ASSERT_EQ(html.exit_code, 0) << html.err;
  for (const char* ref : {"src=\"http", "href=\"http", "<script src", "<link", "<img", "url("}) {
    EXPECT_EQ(html.out.find(ref), std::string::npos) << ref;
  }
  const fs::path page = Write("merge.html", html.out);
  const ChromiumRun dom = RunChromium(chromium, page, "--dump-dom", dir_);
  ASSERT_EQ(dom.exit_code, 0) << dom.log;
  EXPECT_TRUE(ConsoleErrors(dom.log).empty()) << dom.log;
  // Three points: the policy file with each of the override's values, and
  // the baseline (no file, so no overrides) once.
  const auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = dom.output.find(what); at != std::string::npos; at = dom.output.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<circle class=\"point"), 3u) << dom.output;
  EXPECT_GE(count("class=\"point on-front\""), 1u);
  EXPECT_EQ(count("<svg id=\"chart-"), 1u);
  EXPECT_NE(dom.output.find("mean total cost (USD)"), std::string::npos);
  EXPECT_NE(dom.output.find("<b>cheapest:</b>"), std::string::npos);
  EXPECT_NE(dom.output.find("<b>spot.max_price_fraction_of_on_demand</b>"), std::string::npos);
  EXPECT_NE(dom.output.find("<table id=\"t-cells\""), std::string::npos);

  const fs::path png = dir_ / "merge.png";
  const ChromiumRun shot = RunChromium(chromium, page, "--window-size=1280,1600 --screenshot=" + png.string(), dir_);
  ASSERT_EQ(shot.exit_code, 0) << shot.log;
  EXPECT_TRUE(ConsoleErrors(shot.log).empty()) << shot.log;
  EXPECT_EQ(PngSize(ReadAll(png)), (std::pair<uint32_t, uint32_t>{1280, 1600}));
}

// Progress without a terminal (the test's stderr is a file): no bar, only
// the header line and JSON lines, each one object with the cells done and
// the total, the last one saying all are done.
TEST_F(SimSweep, WithoutATerminalProgressIsOneJsonObjectPerLine) {
  const std::string grid = Grid(R"(days: 1
traces:
  - name: demo
    scenario: demo
policies:
  - name: own
seeds: [1, 2]
)");
  ProcessResult sweep = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--workers", "1"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_EQ(sweep.err.find('\r'), std::string::npos) << "a terminal's progress bar in a file: " << sweep.err;
  std::istringstream lines(sweep.err);
  std::string line;
  std::vector<Json> progress;
  while (std::getline(lines, line)) {
    if (line.rfind("gpuscaler sim sweep: 2 cell(s)", 0) == 0) continue;  // the header
    ASSERT_FALSE(line.empty());
    ASSERT_EQ(line.front(), '{') << "not a JSON progress line: " << line;
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(j.is_object()) << line;
    ASSERT_TRUE(j.contains("cells_done") && j["cells_done"].is_number_unsigned()) << line;
    ASSERT_TRUE(j.contains("cells") && j["cells"].is_number_unsigned()) << line;
    ASSERT_TRUE(j.contains("elapsed_s") && j["elapsed_s"].is_number()) << line;
    EXPECT_EQ(j["cells"].get<int>(), 2) << line;
    EXPECT_LE(j["cells_done"].get<int>(), 2) << line;
    progress.push_back(std::move(j));
  }
  ASSERT_FALSE(progress.empty()) << "no JSON progress line: " << sweep.err;
  EXPECT_EQ(progress.back()["cells_done"].get<int>(), 2) << progress.back().dump();
  EXPECT_FALSE(progress.back().contains("eta_s")) << "the last line has nothing left to estimate";
}

// An Indexed Job's pod has JOB_COMPLETION_INDEX; a sweep started there
// without --shard would run every cell in every pod: it says so, and runs
// them all (as documented), which --list shows.
TEST_F(SimSweep, JobCompletionIndexWithoutShardWarnsAndRunsEveryCell) {
  const std::string grid = Grid(kDemoGrid);
  const std::string warning = "JOB_COMPLETION_INDEX is set but --shard is not: running every cell";
  ASSERT_EQ(::setenv("JOB_COMPLETION_INDEX", "1", 1), 0);
  ProcessResult unsharded = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--list"});
  ProcessResult sharded =
      Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--list", "--shard", "1/2"});
  ASSERT_EQ(::unsetenv("JOB_COMPLETION_INDEX"), 0);
  ProcessResult plain = Gpuscaler({"sim", "sweep", "--grid", grid, "--out", Out(), "--list"});

  ASSERT_EQ(unsharded.exit_code, 0) << unsharded.err;
  EXPECT_NE(unsharded.err.find(warning), std::string::npos) << unsharded.err;
  EXPECT_EQ(std::count(unsharded.out.begin(), unsharded.out.end(), '\n'), 4)
      << "every cell: " << unsharded.out;
  ASSERT_EQ(sharded.exit_code, 0) << sharded.err;
  EXPECT_EQ(sharded.err.find("JOB_COMPLETION_INDEX"), std::string::npos) << sharded.err;
  EXPECT_EQ(std::count(sharded.out.begin(), sharded.out.end(), '\n'), 2) << "shard 1/2: " << sharded.out;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err.find("JOB_COMPLETION_INDEX"), std::string::npos) << plain.err;
  EXPECT_EQ(plain.out, unsharded.out);
}

}  // namespace
}  // namespace gpuscaler::testing
