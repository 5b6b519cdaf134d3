// `gpuscaler sim --db` then `gpuscaler report`, as an operator runs them: each
// policy or baseline is its own run, and a run's report equals what the
// simulator billed for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "cli/process.h"
#include "report/focus_conformance.h"

namespace gpuscaler::testing {
namespace {

class SimReport : public CliTest {};

double SimulatedCost(const nlohmann::json& sim, const std::string& name) {
  for (const nlohmann::json& r : sim["results"]) {
    if (r["name"] == name) return r["total_cost_usd"].get<double>();
  }
  ADD_FAILURE() << "no run " << name << " in the simulator's output";
  return -1;
}

TEST_F(SimReport, EachRunOfTheDemoReportsWhatTheSimulatorBilledForIt) {
  const std::string db = (dir_ / "audit.db").string();
  ProcessResult sim = Gpuscaler({"sim", "--scenario", "demo", "--days", "2", "--json", "--db", db});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const nlohmann::json simulated = nlohmann::json::parse(sim.out);

  // The file holds gpuscaler's run and the on-demand baseline's: without
  // --run the report refuses, naming both.
  ProcessResult ambiguous = Gpuscaler({"report", "--db", db, "--format", "json"});
  EXPECT_EQ(ambiguous.exit_code, 2);
  EXPECT_NE(ambiguous.err.find("'gpuscaler' (id"), std::string::npos) << ambiguous.err;
  EXPECT_NE(ambiguous.err.find("'on-demand' (id"), std::string::npos) << ambiguous.err;

  for (const std::string name : {"gpuscaler", "on-demand"}) {
    SCOPED_TRACE(name);
    ProcessResult report = Gpuscaler({"report", "--db", db, "--run", name, "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const nlohmann::json j = nlohmann::json::parse(report.out);
    const double want = SimulatedCost(simulated, name);
    ASSERT_GT(want, 0);
    EXPECT_NEAR(j["totals"]["cost_usd"].get<double>(), want, want * 1e-4) << "simulated " << want;
    EXPECT_NE(j["query"]["scope"].get<std::string>().find("the whole run"), std::string::npos);
  }

  // Busy time is measured (the jobs' GPU time): the report's busy GPU-hours
  // are the simulator's.
  {
    ProcessResult report = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--format", "json"});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    const nlohmann::json j = nlohmann::json::parse(report.out);
    double busy = -1;
    for (const nlohmann::json& r : simulated["results"]) {
      if (r["name"] == "gpuscaler") busy = r["busy_gpu_hours"].get<double>();
    }
    ASSERT_GT(busy, 0);
    ASSERT_FALSE(j["totals"]["gpu_hours_busy"].is_null()) << "busy time not measured";
    EXPECT_NEAR(j["totals"]["gpu_hours_busy"].get<double>(), busy, 0.001 + busy * 1e-6);
    EXPECT_EQ(report.err.find("not measured"), std::string::npos) << report.err;

    // The predictions as CSV views: a row per decision of the JSON's
    // predictions, and a summary whose totals are theirs.
    ProcessResult per_decision = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--view", "predictions"});
    ASSERT_EQ(per_decision.exit_code, 0) << per_decision.err;
    const size_t lines = static_cast<size_t>(std::count(per_decision.out.begin(), per_decision.out.end(), '\n'));
    ASSERT_GT(j["predictions"].size(), 0u);
    EXPECT_EQ(lines, j["predictions"].size() + 1) << per_decision.out.substr(0, 400);
    EXPECT_EQ(per_decision.out.rfind("decision_id,decided_at,", 0), 0u) << per_decision.out.substr(0, 200);
    ProcessResult summary =
        Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--view", "prediction_summary", "--top", "3"});
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    const std::string row = summary.out.substr(summary.out.find("\r\n") + 2);
    EXPECT_EQ(row.rfind(std::to_string(j["predictions"].size()) + ",", 0), 0u) << summary.out;
    const std::string worst = row.substr(row.rfind(',') + 1);
    EXPECT_LE(std::count(worst.begin(), worst.end(), ' '), 2) << "--top 3 lists at most 3 ids: " << worst;
  }

  // CSV has no header: the scope goes to stderr.
  ProcessResult csv = Gpuscaler({"report", "--db", db, "--run", "gpuscaler"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.err.find("covers run 'gpuscaler'"), std::string::npos) << csv.err;
  // -o writes the same report to a file instead.
  const std::string out = (dir_ / "costs.csv").string();
  ProcessResult to_file = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "-o", out});
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_TRUE(to_file.out.empty()) << to_file.out.substr(0, 200);
  std::ifstream written(out, std::ios::binary);
  const std::string body((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  EXPECT_EQ(body, csv.out);

  // A second replay into the same file would reuse the runs' names and ids.
  ProcessResult again = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--db", db});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds a run named"), std::string::npos) << again.err;
}

// --runtime-knowledge: the planner is told its class's shape.expected_runtime
// (class, the default: what the daemon knows) or what is left of each job's
// real duration (exact). The demo's snapshot at 15 h shows it: by class, the
// units carry at most one runtime per class (the demo has three); exact,
// many. Without the flag the snapshot is class's. A value other than exact
// or class is refused, naming the flag.
TEST_F(SimReport, RuntimeKnowledgeSetsTheRuntimeThePlannerIsTold) {
  auto runtimes = [&](const std::string& knowledge) {
    const std::string snap = (dir_ / ("snap-" + knowledge + ".json")).string();
    std::vector<std::string> args = {"sim", "--scenario", "demo", "--days", "1", "--snapshot-at", "15h",
                                     "--snapshot-out", snap};
    if (!knowledge.empty()) args.insert(args.end(), {"--runtime-knowledge", knowledge});
    ProcessResult sim = Gpuscaler(args);
    EXPECT_EQ(sim.exit_code, 0) << sim.err;
    const nlohmann::json j = nlohmann::json::parse(ReadAll(snap));
    std::set<int64_t> seen;
    for (const nlohmann::json& u : j["pending"]) seen.insert(u["expected_runtime_s"].get<int64_t>());
    for (const nlohmann::json& n : j["nodes"])
      for (const nlohmann::json& u : n["running"]) seen.insert(u["expected_runtime_s"].get<int64_t>());
    return seen;
  };
  EXPECT_GT(runtimes("exact").size(), 3u);
  const std::set<int64_t> by_class = runtimes("class");
  EXPECT_GE(by_class.size(), 1u);
  EXPECT_LE(by_class.size(), 3u);
  EXPECT_EQ(runtimes(""), by_class);

  ProcessResult bad =
      Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--runtime-knowledge", "oracle"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--runtime-knowledge must be exact or class, not 'oracle'"), std::string::npos)
      << bad.err;
}

// --multi-node: a Philly job on two machines is a gang (started whole: one
// gang start in gpuscaler's row) by default, two lone jobs with `split` (no
// gang at all), one 16-GPU job with `whole` (no node holds it: unfinished).
// Any other value is refused, naming the flag.
TEST_F(SimReport, MultiNodeSetsWhatAMultiMachineJobBecomes) {
  const std::string trace = Write("philly.csv",
                                  "jobid,submitted_time,runtime_min,num_gpus,num_machines\n"
                                  "app_1,2017-10-01 00:00:00,120,16,2\n"
                                  "app_2,2017-10-01 00:05:00,60,4,1\n")
                                .string();
  auto gpuscaler_row = [&](const std::string& multi_node) {
    std::vector<std::string> args = {"sim", "--trace", trace, "--trace-format", "philly-jobs", "--json"};
    if (!multi_node.empty()) args.insert(args.end(), {"--multi-node", multi_node});
    ProcessResult sim = Gpuscaler(args);
    EXPECT_EQ(sim.exit_code, 0) << sim.err;
    const nlohmann::json out = nlohmann::json::parse(sim.out);
    for (const nlohmann::json& r : out["results"])
      if (r["name"] == "gpuscaler") return r;
    ADD_FAILURE() << "no gpuscaler row";
    return nlohmann::json::object();
  };
  const nlohmann::json gang = gpuscaler_row("");
  EXPECT_EQ(gang["gang_starts"], 1);
  EXPECT_EQ(gang["jobs_completed"], 3);
  EXPECT_EQ(gang["partial_gang_idle_gpu_hours"], 0.0);
  const nlohmann::json split = gpuscaler_row("split");
  EXPECT_EQ(split["gang_starts"], 0);
  EXPECT_EQ(split["jobs_completed"], 3);
  const nlohmann::json whole = gpuscaler_row("whole");
  EXPECT_EQ(whole["jobs_completed"], 1);
  EXPECT_EQ(whole["jobs_unfinished"], 1);

  ProcessResult bad = Gpuscaler({"sim", "--trace", trace, "--trace-format", "philly-jobs", "--multi-node", "apart"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--multi-node must be gang, split or whole, not 'apart'"), std::string::npos) << bad.err;
}

TEST_F(SimReport, ARangeWithoutDataSaysSoOnStderr) {
  const std::string db = (dir_ / "audit.db").string();
  ASSERT_EQ(Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--db", db}).exit_code, 0);
  ProcessResult r =
      Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--from", "2030-01-01", "--to", "2030-01-02"});
  // Wholly outside the data: the (empty) report is written, the warning
  // names the window and the data's time range, and the exit code is 3.
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("period_start"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("no nodes or usage recorded in run 'gpuscaler'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2030-01-01T00:00:00Z to 2030-01-02T00:00:00Z"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the data covers 2026-"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wholly outside the range"), std::string::npos) << r.err;
}

// The lost work the report shows is the one the simulator measured and
// printed for the same run (the store records it per interruption), not an
// estimate from a fixed window.
TEST_F(SimReport, TheReportsLostGpuHoursAreTheSimulatorsForTheSameDatabase) {
  const std::string db = (dir_ / "lost.db").string();
  ProcessResult sim = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--json", "--db", db});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  double simulated = -1;
  const nlohmann::json results = nlohmann::json::parse(sim.out);
  for (const nlohmann::json& r : results["results"]) {
    if (r["name"] == "gpuscaler") simulated = r["gpu_hours_lost"].get<double>();
  }
  ASSERT_GT(simulated, 0) << "the demo day should interrupt spot nodes running work";
  ProcessResult report = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const double reported = nlohmann::json::parse(report.out)["totals"]["gpu_hours_lost"].get<double>();
  EXPECT_NEAR(reported, simulated, 0.0005 + 1e-9) << "the report rounds to 1/1000 GPU-hour";
}

// FOCUS 1.2 from a replay on each cloud's catalog: the export conforms to
// the spec's column table and every row names the run's cloud.
TEST_F(SimReport, FocusExportsOfAnAwsAGcpAndAnAzureReplayConformAndNameTheirCloud) {
  std::optional<report::testing::FocusSpec> spec = report::testing::LoadFocusSpec();
  if (!spec) GTEST_SKIP() << "FOCUS column table not found at " << report::testing::FocusSpecPath();
  const std::string source = GPUSCALER_SOURCE_DIR;
  struct Case {
    std::string name;
    std::vector<std::string> sim;
    std::string provider, service;
    std::set<std::string> region_names;
  };
  const std::vector<Case> cases = {
      {"aws", {"--scenario", "demo", "--days", "1"}, "Amazon Web Services", "Amazon Elastic Compute Cloud",
       {"US East (N. Virginia)"}},
      {"gcp",
       {"--trace", source + "/sim/testdata/traces/openb_pods.csv", "--trace-format", "alibaba-openb", "--policy",
        source + "/sim/testdata/policies/openb-gcp.yaml", "--catalog", source + "/config/catalogs/gcp.yaml"},
       "Google Cloud", "Compute Engine", {"Iowa"}},
      {"azure",
       {"--trace", source + "/sim/testdata/traces/openb_pods.csv", "--trace-format", "alibaba-openb", "--policy",
        source + "/sim/testdata/policies/openb-azure.yaml", "--catalog", source + "/config/catalogs/azure.yaml"},
       "Microsoft", "Virtual Machines", {"East US"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string db = (dir_ / (c.name + ".db")).string();
    std::vector<std::string> args = {"sim", "--db", db};
    args.insert(args.end(), c.sim.begin(), c.sim.end());
    ProcessResult sim = Gpuscaler(args);
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
    ProcessResult focus = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--format", "focus"});
    ASSERT_EQ(focus.exit_code, 0) << focus.err;
    EXPECT_EQ(focus.err.find("recorded no cloud"), std::string::npos) << focus.err;
    EXPECT_EQ(focus.err.find("RegionName repeats"), std::string::npos) << focus.err;
    const auto rows = report::testing::ExpectFocusConforms(*spec, focus.out);
    ASSERT_FALSE(rows.empty());
    std::set<std::string> region_names;
    for (const auto& row : rows) {
      EXPECT_EQ(row.at("ProviderName"), c.provider);
      EXPECT_EQ(row.at("PublisherName"), c.provider);
      EXPECT_EQ(row.at("InvoiceIssuerName"), c.provider);
      EXPECT_EQ(row.at("ServiceName"), c.service);
      region_names.insert(row.at("RegionName"));
    }
    EXPECT_EQ(region_names, c.region_names);
  }
}

}  // namespace
}  // namespace gpuscaler::testing
