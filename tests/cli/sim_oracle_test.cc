// `gpuscaler sim --forecast learned|oracle` and the gpuscaler-oracle run:
// the flag is checked, --compare adds the oracle run for a policy with
// forecasts (and not without), --runs and --baseline select it, and the
// comparison gives each forecast run its share of the oracle's p95 cut.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace sim_oracle_test {
namespace {

class SimOracle : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Bursts of four 1-GPU jobs of 15 minutes every 40 minutes for 6 hours.
    std::string jobs = "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class\n";
    int n = 0;
    for (int t = 1200; t < 6 * 3600; t += 2400) {
      for (int i = 0; i < 4; ++i)
        jobs += "j" + std::to_string(n++) + "," + std::to_string(t) + ",900,1,1000,2048,api\n";
    }
    trace_ = Write("jobs.csv", jobs).string();
    forecast_policy_ = WritePolicy("forecast.yaml", "    forecast: {quantile: 0.9, horizon: auto}\n");
    plain_policy_ = WritePolicy("plain.yaml", "");
    catalog_ = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml";
  }

  std::string WritePolicy(const std::string& name, const std::string& forecast_line) {
    return Write(name,
                 "apiVersion: gpuscaler/v1\nkind: Policy\nname: oracle-cli\n"
                 "pools:\n  - name: gpu\n    instance_types: [g6.xlarge]\n    regions: [us-east-1]\n"
                 "    zones: [us-east-1a]\n    capacity_types: [on-demand]\n"
                 "classes:\n  - name: api\n    pools: [gpu]\n    wait_cost_usd_per_hour: 20\n" +
                     forecast_line +
                     "scaling:\n  tick_interval: 60s\n  scale_down_stabilization: 2m\n"
                     "disruption:\n  min_node_age: 1m\n")
        .string();
  }

  ProcessResult Sim(const std::string& policy, std::vector<std::string> extra) {
    std::vector<std::string> args = {"sim",       "--trace", trace_,     "--trace-format", "gpuscaler-jobs",
                                     "--catalog", catalog_,  "--policy", policy,           "--days",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Gpuscaler(args);
  }

  static std::vector<std::string> Names(const nlohmann::json& doc) {
    std::vector<std::string> names;
    for (const nlohmann::json& r : doc.at("results")) names.push_back(r.at("name").get<std::string>());
    return names;
  }

  static const nlohmann::json& Run(const nlohmann::json& doc, const std::string& name) {
    for (const nlohmann::json& r : doc.at("results"))
      if (r.at("name") == name) return r;
    ADD_FAILURE() << "no run " << name;
    static const nlohmann::json none;
    return none;
  }

  std::string trace_;
  std::string forecast_policy_;
  std::string plain_policy_;
  std::string catalog_;
};

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_F(SimOracle, TheForecastFlagTakesLearnedOrOracleAndRejectsAnythingElse) {
  ProcessResult bad = Sim(forecast_policy_, {"--forecast", "psychic"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--forecast must be learned or oracle, not 'psychic'"), std::string::npos)
      << bad.err;
  EXPECT_TRUE(bad.out.empty());

  // An oracle for a policy that forecasts nothing is a mistake, said.
  ProcessResult nothing = Sim(plain_policy_, {"--forecast", "oracle"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("--forecast oracle: policy 'oracle-cli'"), std::string::npos) << nothing.err;
  EXPECT_NE(nothing.err.find("has no class with a demand forecast"), std::string::npos) << nothing.err;

  ProcessResult learned = Sim(forecast_policy_, {"--json"});
  ProcessResult oracle = Sim(forecast_policy_, {"--forecast", "oracle", "--json"});
  ASSERT_EQ(learned.exit_code, 0) << learned.err;
  ASSERT_EQ(oracle.exit_code, 0) << oracle.err;
  const nlohmann::json l = nlohmann::json::parse(learned.out);
  const nlohmann::json o = nlohmann::json::parse(oracle.out);
  EXPECT_EQ(l["scenario"]["forecast"], "learned");
  EXPECT_EQ(o["scenario"]["forecast"], "oracle");
  EXPECT_EQ(Run(l, "gpuscaler")["forecast"], "learned");
  EXPECT_EQ(Run(o, "gpuscaler")["forecast"], "oracle");
  EXPECT_TRUE(Run(o, "on-demand")["forecast"].is_null());
  // The oracle changes what gpuscaler does; the baseline does not move.
  EXPECT_NE(Run(l, "gpuscaler")["queue_wait_s"], Run(o, "gpuscaler")["queue_wait_s"]);
  EXPECT_EQ(Run(l, "on-demand")["total_cost_usd"], Run(o, "on-demand")["total_cost_usd"]);

  // --forecast oracle makes gpuscaler the gpuscaler-oracle run.
  ProcessResult named = Sim(forecast_policy_, {"--baseline", "gpuscaler-oracle", "--json"});
  ASSERT_EQ(named.exit_code, 0) << named.err;
  const nlohmann::json n = nlohmann::json::parse(named.out);
  EXPECT_EQ(Run(n, "gpuscaler-oracle")["forecast"], "oracle");
  EXPECT_EQ(Run(n, "gpuscaler-oracle")["total_cost_usd"], Run(o, "gpuscaler")["total_cost_usd"]);
  EXPECT_EQ(Run(n, "gpuscaler-oracle")["queue_wait_s"], Run(o, "gpuscaler")["queue_wait_s"]);
}

TEST_F(SimOracle, CompareAddsTheOracleRunForAForecastPolicyAndGivesTheShareOfItsCut) {
  ProcessResult with = Sim(forecast_policy_, {"--compare", "--json"});
  ASSERT_EQ(with.exit_code, 0) << with.err;
  const nlohmann::json w = nlohmann::json::parse(with.out);
  const std::vector<std::string> names = Names(w);
  EXPECT_TRUE(Has(names, "gpuscaler-oracle"));
  EXPECT_TRUE(Has(names, "gpuscaler-reactive"));
  EXPECT_TRUE(Has(names, "karpenter"));
  const nlohmann::json& gpuscaler = Run(w, "gpuscaler");
  const nlohmann::json& reactive = Run(w, "gpuscaler-reactive");
  const nlohmann::json& oracle = Run(w, "gpuscaler-oracle");
  ASSERT_TRUE(gpuscaler.contains("oracle_p95_cut")) << gpuscaler.dump();
  EXPECT_FALSE(oracle.contains("oracle_p95_cut"));
  EXPECT_FALSE(reactive.contains("oracle_p95_cut"));
  const nlohmann::json& cut = gpuscaler["oracle_p95_cut"];
  const double r95 = reactive["queue_wait_s"]["p95"].get<double>();
  const double o95 = oracle["queue_wait_s"]["p95"].get<double>();
  const double g95 = gpuscaler["queue_wait_s"]["p95"].get<double>();
  EXPECT_LE(o95, r95);
  ASSERT_LT(o95, r95) << "the oracle cut nothing on this trace";
  EXPECT_NEAR(cut["share_pct"].get<double>(), 100 * (r95 - g95) / (r95 - o95), 1e-9);
  EXPECT_EQ(cut["oracle_cost_usd"], oracle["total_cost_usd"]);
  EXPECT_EQ(cut["cost_usd"], gpuscaler["total_cost_usd"]);
  const double diff = gpuscaler["total_cost_usd"].get<double>() - oracle["total_cost_usd"].get<double>();
  EXPECT_NEAR(cut["cost_difference_usd"].get<double>(), diff, 1e-9);
  EXPECT_EQ(cut["equal_cost"].get<bool>(), std::abs(diff) <= 0.01 * oracle["total_cost_usd"].get<double>());

  // The table says it in a line below the runs.
  ProcessResult table = Sim(forecast_policy_, {"--runs", "gpuscaler,gpuscaler-reactive,gpuscaler-oracle"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("share of the oracle's p95 cut (gpuscaler): "), std::string::npos) << table.out;

  ProcessResult without = Sim(plain_policy_, {"--compare", "--json"});
  ASSERT_EQ(without.exit_code, 0) << without.err;
  const nlohmann::json wo = nlohmann::json::parse(without.out);
  EXPECT_FALSE(Has(Names(wo), "gpuscaler-oracle"));
  EXPECT_TRUE(Has(Names(wo), "karpenter"));
  for (const nlohmann::json& r : wo["results"]) {
    EXPECT_FALSE(r.contains("oracle_p95_cut")) << r["name"];
    EXPECT_TRUE(r["forecast"].is_null()) << r["name"];
  }
}

TEST_F(SimOracle, RunsSelectsRunsByNameAndRejectsUnknownOnesAndOtherSelections) {
  ProcessResult runs = Sim(forecast_policy_, {"--runs", "gpuscaler-oracle,gpuscaler", "--json"});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  // on-demand first, as always; then in the order given.
  EXPECT_EQ(Names(nlohmann::json::parse(runs.out)),
            (std::vector<std::string>{"on-demand", "gpuscaler-oracle", "gpuscaler"}));

  ProcessResult unknown = Sim(forecast_policy_, {"--runs", "gpuscaler,psychic"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown baseline 'psychic'"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("gpuscaler-oracle"), std::string::npos) << unknown.err;

  ProcessResult empty = Sim(forecast_policy_, {"--runs", "gpuscaler,,karpenter"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("an empty run name"), std::string::npos) << empty.err;

  ProcessResult both = Sim(forecast_policy_, {"--runs", "gpuscaler", "--compare"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--runs excludes --baseline and --compare"), std::string::npos) << both.err;

  // The oracle run needs a forecast to replace.
  ProcessResult plain = Sim(plain_policy_, {"--baseline", "gpuscaler-oracle"});
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_NE(plain.err.find("gpuscaler-oracle: policy 'oracle-cli' has no class with a demand forecast"),
            std::string::npos)
      << plain.err;
}

}  // namespace
}  // namespace sim_oracle_test
}  // namespace gpuscaler::testing
