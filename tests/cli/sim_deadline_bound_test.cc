// `gpuscaler sim --deadline-bound`: beside the runs of a replay, the offline
// bound on what meeting every meetable deadline could cost
// (sim/deadline_bound.h), set against the same work run at once
// (gpuscaler-reactive), with the bill of that run split on a labelled replay.
// The figures the binary prints are those the library computes for the same
// scenario, and each run's share of the bound's saving is its saving against
// the at-once run over that saving.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/process.h"
#include "gpuscaler/policy/loader.h"
#include "sim/deadline_bound.h"
#include "sim/runner.h"
#include "src/cli/sim_deadline_bound.h"
#include "src/cli/sim_inputs.h"

namespace gpuscaler::testing {
namespace {

constexpr double kEps = 1e-6;
// Every p3 size follows the market's one column.
constexpr const char* kTypes = "p3.2xlarge,p3.8xlarge,p3.16xlarge";

class SimDeadlineBound : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Six 1-GPU jobs of 2 h in the first 5 h; spot (p3, us-east-1a) is down
    // for the first 4 h, then up. Under `deadline: 3x` each job has 6 h, so
    // every one can wait for spot; one `eval` job has no deadline.
    trace_ = Write("jobs.csv",
                   "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class\n"
                   "a,0,7200,1,1000,4096,batch\n"
                   "b,600,7200,1,1000,4096,batch\n"
                   "c,3600,7200,1,1000,4096,batch\n"
                   "d,7200,7200,1,1000,4096,batch\n"
                   "e,10800,7200,1,1000,4096,batch\n"
                   "f,3600,7200,1,1000,4096,eval\n")
                 .string();
    market_ = Write("market.csv",
                    "tick,elapsed_s,us-east-1a\n"
                    "0,0,0\n"
                    "1,14400,1\n")
                  .string();
    policy_ = WritePolicy("policy.yaml", "deadline: 3x");
    catalog_ = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml";
  }

  // The test policy with `deadline_line` in class batch ("" for none).
  std::string WritePolicy(const std::string& name, const std::string& deadline_line) {
    return Write(name,
                 "apiVersion: gpuscaler/v1\nkind: Policy\nname: bound-cli\n"
                 "pools:\n  - name: v100\n    families: [p3]\n    regions: [us-east-1]\n"
                 "    zones: [us-east-1a]\n    capacity_types: [on-demand, spot]\n"
                 "classes:\n"
                 "  - {name: batch, pools: [v100], interruptible: true" +
                     (deadline_line.empty() ? "" : ", " + deadline_line) +
                     "}\n"
                     "  - {name: eval, pools: [v100], interruptible: true}\n")
        .string();
  }

  std::vector<std::string> Args(const std::string& policy) const {
    return {"sim",      "--trace",       trace_,  "--trace-format", "gpuscaler-jobs", "--prices", market_,
            "--prices-format", "cbl-availability", "--cbl-instance-types", kTypes, "--cbl-nodes-when-up", "10",
            "--catalog", catalog_,
            "--policy", policy,          "--days", "1"};
  }

  ProcessResult Sim(std::vector<std::string> extra) {
    std::vector<std::string> args = Args(policy_);
    args.insert(args.end(), extra.begin(), extra.end());
    return Gpuscaler(args);
  }

  // The same scenario built in this process, as the command builds it.
  sim::Scenario BuiltScenario() const {
    cli::SimInputs in;
    in.trace_file = trace_;
    in.trace_format = "gpuscaler-jobs";
    in.prices_file = market_;
    in.prices_format = "cbl-availability";
    in.cbl_instance_types = kTypes;
    in.cbl_nodes_when_up = 10;
    in.catalog_file = catalog_;
    in.days = 1;
    std::string source;
    Result<Catalog> catalog = cli::LoadSimCatalog(in, &source);
    EXPECT_TRUE(catalog.ok());
    PolicyLoadResult policy = LoadPolicyFile(policy_, &*catalog);
    EXPECT_TRUE(policy.ok());
    std::vector<std::string> warnings;
    Result<sim::Scenario> s = cli::BuildSimScenario(in, *catalog, source, policy.policy, policy_, &warnings);
    EXPECT_TRUE(s.ok()) << s.error().message();
    return *s;
  }

  static const nlohmann::json& Run(const nlohmann::json& doc, const std::string& name) {
    for (const nlohmann::json& r : doc.at("results"))
      if (r.at("name") == name) return r;
    ADD_FAILURE() << "no run " << name;
    return doc;
  }

  std::string trace_, market_, policy_, catalog_;
};

TEST_F(SimDeadlineBound, TheBoundSitsBesideTheCompareRowsWithTheLibrarysFigures) {
  ProcessResult r = Sim({"--compare", "--deadline-bound", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("deadline_bound")) << r.out.substr(0, 500);
  const nlohmann::json& b = doc.at("deadline_bound");

  // The library on the same scenario: the bound, the at-once run and its
  // labelled replay's split.
  const sim::Scenario scenario = BuiltScenario();
  Result<sim::DeadlineBound> bound = sim::BoundDeadlines(scenario);
  ASSERT_TRUE(bound.ok()) << bound.error().message();
  Result<std::vector<sim::RunResult>> runs = sim::RunMany(scenario, {"gpuscaler-reactive"}, {});
  ASSERT_TRUE(runs.ok());
  Result<sim::BoundComparison> want = cli::MeasureBound(scenario, *bound, *runs);
  ASSERT_TRUE(want.ok()) << want.error().ToString();

  EXPECT_EQ(b.at("at_once_run"), "gpuscaler-reactive");
  const double at_once = Run(doc, "gpuscaler-reactive").at("total_cost_usd").get<double>();
  EXPECT_NEAR(b.at("at_once_usd").get<double>(), at_once, kEps);
  EXPECT_NEAR(at_once, want->at_once_usd, kEps);
  EXPECT_NEAR(b.at("labelled_at_once_usd").get<double>(), *want->labelled_at_once_usd, kEps);
  EXPECT_EQ(b.at("meetable").at("jobs"), 5);
  EXPECT_EQ(b.at("no_deadline").at("jobs"), 1);
  EXPECT_NEAR(b.at("meetable").at("deferred_usd").get<double>(), want->bound.meetable.deferred_usd, kEps);
  EXPECT_NEAR(b.at("meetable").at("at_once_usd").get<double>(), want->bound.meetable.at_once_usd, kEps);
  EXPECT_NEAR(b.at("meetable").at("on_demand_usd").get<double>(), want->bound.meetable.on_demand_usd, kEps);
  // Spot is down while the jobs arrive: the bound waits for it.
  EXPECT_LT(want->bound.meetable.deferred_usd, want->bound.meetable.at_once_usd - 1.0);

  const nlohmann::json& splits = b.at("splits");
  ASSERT_EQ(splits.size(), want->splits.size());
  ASSERT_EQ(splits.size(), 3u);
  for (size_t i = 0; i < splits.size(); ++i) {
    SCOPED_TRACE(want->splits[i].name);
    EXPECT_EQ(splits[i].at("name"), want->splits[i].name);
    EXPECT_NEAR(splits[i].at("meetable_usd").get<double>(), want->splits[i].meetable_usd, kEps);
    EXPECT_NEAR(splits[i].at("best_deferred_usd").get<double>(), want->splits[i].best_deferred_usd, kEps);
    EXPECT_NEAR(splits[i].at("saving_usd").get<double>(), want->splits[i].saving_usd, kEps);
  }
  // The headline is the most generous split: the largest saving.
  EXPECT_EQ(b.at("split"), want->Best().name);
  double most = splits[0].at("saving_usd").get<double>();
  for (const nlohmann::json& s : splits) most = std::max(most, s.at("saving_usd").get<double>());
  const double saving = b.at("saving_usd").get<double>();
  EXPECT_NEAR(saving, most, kEps);
  ASSERT_GT(saving, 0);
  EXPECT_NEAR(b.at("best_deferred_usd").get<double>(), at_once - saving, kEps);
  EXPECT_NEAR(b.at("saving_pct").get<double>(), 100 * saving / at_once, kEps);

  // Every run's saving against the at-once run, and that as a share of the
  // bound's saving.
  ASSERT_EQ(doc.at("results").size(), 8u) << "gpuscaler, gpuscaler-held, gpuscaler-reactive and the five baselines";
  for (const nlohmann::json& run : doc.at("results")) {
    SCOPED_TRACE(run.at("name").get<std::string>());
    const double own = at_once - run.at("total_cost_usd").get<double>();
    EXPECT_NEAR(run.at("saving_vs_at_once_usd").get<double>(), own, kEps);
    EXPECT_NEAR(run.at("saving_vs_at_once_pct").get<double>(), 100 * own / at_once, kEps);
    EXPECT_NEAR(run.at("share_of_bound_saving_pct").get<double>(), 100 * own / saving, kEps);
  }
  EXPECT_NEAR(Run(doc, "gpuscaler-reactive").at("share_of_bound_saving_pct").get<double>(), 0, kEps);
}

TEST_F(SimDeadlineBound, WithoutCompareItRunsThePlannerAndTheAtOnceRunAndPrintsTheRows) {
  ProcessResult r = Sim({"--deadline-bound"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gpuscaler-reactive"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("saving vs at once (gpuscaler-reactive)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("share of the most any schedule could save"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Deadline bound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<- most generous"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("karpenter"), std::string::npos) << "no baselines without --compare";

  ProcessResult json = Sim({"--deadline-bound", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  std::vector<std::string> names;
  for (const nlohmann::json& run : doc.at("results")) names.push_back(run.at("name").get<std::string>());
  EXPECT_EQ(names, (std::vector<std::string>{"on-demand", "gpuscaler", "gpuscaler-reactive"}));
}

TEST_F(SimDeadlineBound, WithoutTheFlagThereIsNoBound) {
  ProcessResult r = Sim({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_FALSE(doc.contains("deadline_bound"));
  EXPECT_FALSE(Run(doc, "gpuscaler").contains("share_of_bound_saving_pct"));
  ProcessResult table = Sim({});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.find("share of the most any schedule could save"), std::string::npos);
}

TEST_F(SimDeadlineBound, APolicyWithoutDeadlinesIsRefusedBeforeAnyReplay) {
  policy_ = WritePolicy("no-deadline.yaml", "");
  ProcessResult r = Sim({"--deadline-bound"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--deadline-bound: policy 'bound-cli'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no-deadline.yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("has no class with a deadline"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 200);
}

}  // namespace
}  // namespace gpuscaler::testing
