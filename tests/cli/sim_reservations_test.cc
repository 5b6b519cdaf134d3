// `gpuscaler sim --reservations`: the file's reservations are what the
// simulated cloud holds, the policy's pools select them, and the outputs
// split their cost into used and unused; `gpuscaler report` of the run's
// database splits it the same way, and its block flags reach the buy_block
// view.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace {

class SimReservations : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Four 8-GPU jobs that may not run on spot, 4 hours each, all at once;
    // two p5.48xlarge slots reserved for the whole day.
    trace_ = Write("jobs.csv",
                   "id,submit_s,duration_s,gpus,cpu_milli,memory_mib,class,interruptible\n"
                   "a,0,14400,8,8000,65536,training,false\n"
                   "b,0,14400,8,8000,65536,training,false\n"
                   "c,0,14400,8,8000,65536,training,false\n"
                   "d,0,14400,8,8000,65536,training,false\n")
                 .string();
    policy_ = Write("policy.yaml",
                    "apiVersion: gpuscaler/v1\nkind: Policy\n"
                    "pools:\n  - name: h100\n    instance_types: [p5.48xlarge]\n    zones: [us-east-1a]\n"
                    "    reservations: [cr-test]\n"
                    "classes:\n  - name: training\n    interruptible: false\n")
                  .string();
    reservations_ = Write("reservations.yaml",
                          "reservations:\n"
                          "  - {id: cr-test, instance_type: p5.48xlarge, zone: us-east-1a, count: 2}\n")
                        .string();
  }
  ProcessResult Sim(std::vector<std::string> extra) {
    std::vector<std::string> args = {"sim",      "--trace",        trace_,        "--trace-format", "gpuscaler-jobs",
                                     "--policy", policy_,          "--days",      "1",
                                     "--reservations", reservations_};
    args.insert(args.end(), extra.begin(), extra.end());
    return Gpuscaler(args);
  }
  // The run named `name` of a --json answer.
  static nlohmann::json Run(const std::string& out, const std::string& name) {
    const nlohmann::json doc = nlohmann::json::parse(out);
    for (const nlohmann::json& r : doc.at("results"))
      if (r.at("name") == name) return r;
    ADD_FAILURE() << "no run " << name;
    return nlohmann::json::object();
  }
  std::string trace_, policy_, reservations_;
};

TEST_F(SimReservations, SlotsAreFilledFirstAndTheirCostSplitsIntoUsedAndUnused) {
  ProcessResult r = Sim({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json run = Run(r.out, "gpuscaler");
  ASSERT_EQ(run.at("reservations").size(), 1u);
  const nlohmann::json& res = run.at("reservations")[0];
  EXPECT_EQ(res.at("id"), "cr-test");
  // Two slots over the day the replay covers (to its last tick).
  EXPECT_NEAR(res.at("slot_hours").get<double>(), 48.0, 0.05);
  EXPECT_NEAR(res.at("used_usd").get<double>() + res.at("unused_usd").get<double>(), res.at("cost_usd").get<double>(),
              0.005);
  EXPECT_GT(res.at("used_hours").get<double>(), 2 * 3.9) << "both slots held a job for its 4 hours";
  // Two jobs ran on the slots, the other two on bought nodes; the idle
  // slots' cost is in the total too.
  const nlohmann::json& by_type = run.at("cost_by_capacity_type");
  EXPECT_GT(by_type.at("on-demand").get<double>(), 0);
  EXPECT_NEAR(by_type.at("reserved").get<double>(), res.at("used_usd").get<double>(), 0.005);
  EXPECT_NEAR(run.at("total_cost_usd").get<double>(),
              by_type.at("on-demand").get<double>() + by_type.at("spot").get<double>() +
                  by_type.at("reserved").get<double>() + res.at("unused_usd").get<double>(),
              0.005);
  // While the four jobs ran (32 GPUs wanted, 16 reserved) the slots were in use.
  const double open = run.at("reserved_slot_hours_when_demand_exceeds").get<double>();
  EXPECT_GT(open, 2 * 3.5);
  EXPECT_GE(run.at("reserved_used_hours_when_demand_exceeds").get<double>(), 0.95 * open);
}

TEST_F(SimReservations, TheTableShowsTheSplitAndKarpenterUsesTheSlotsToo) {
  ProcessResult table = Sim({});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("reserved, used"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("reserved, unused"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("reserved in use while demand exceeds it"), std::string::npos) << table.out;
  ProcessResult karpenter = Sim({"--baseline", "karpenter", "--json"});
  ASSERT_EQ(karpenter.exit_code, 0) << karpenter.err;
  EXPECT_GT(Run(karpenter.out, "karpenter").at("cost_by_capacity_type").at("reserved").get<double>(), 0);
}

TEST_F(SimReservations, AProblemInTheFileNamesItsLineAndNothingRuns) {
  reservations_ = Write("bad.yaml",
                        "reservations:\n"
                        "  - {id: cr-test, instance_type: p5.48xlarge, zone: us-east-1a, count: 2}\n"
                        "  - {id: cr-test, instance_type: p5.48xlarge, zone: us-east-1a, count: 1}\n")
                      .string();
  ProcessResult r = Sim({"--json"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.yaml:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("duplicate reservation id 'cr-test'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 200);
}

int64_t Cents(const nlohmann::json& v) { return std::llround(v.get<double>() * 100.0); }

TEST_F(SimReservations, TheReportOfTheRunsDatabaseSplitsTheReservationAsTheSimDid) {
  const std::string db = (Write("placeholder", "").parent_path() / "run.db").string();
  ProcessResult sim = Sim({"--json", "--db", db});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const nlohmann::json truth = Run(sim.out, "gpuscaler").at("reservations").at(0);

  ProcessResult report = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json res = nlohmann::json::parse(report.out).at("reservations").at("by_reservation").at(0);
  EXPECT_EQ(res.at("id"), "cr-test");
  EXPECT_EQ(Cents(res.at("cost_usd")), Cents(truth.at("cost_usd")));
  EXPECT_EQ(Cents(res.at("used_usd")), Cents(truth.at("used_usd")));
  EXPECT_EQ(Cents(res.at("unused_usd")), Cents(truth.at("cost_usd")) - Cents(truth.at("used_usd")));

  // A fleet report of two clusters lists each one's reservations as its own
  // report does.
  ProcessResult fleet = Gpuscaler({"report", "--db", "east=" + db, "--db", "west=" + db, "--run", "gpuscaler",
                                   "--format", "json"});
  ASSERT_EQ(fleet.exit_code, 0) << fleet.err;
  const nlohmann::json by_cluster = nlohmann::json::parse(fleet.out).at("reservations");
  ASSERT_EQ(by_cluster.size(), 2u) << fleet.out.substr(0, 500);
  EXPECT_EQ(by_cluster[0].at("cluster"), "east");
  EXPECT_EQ(by_cluster[1].at("cluster"), "west");
  for (const nlohmann::json& c : by_cluster) {
    EXPECT_EQ(Cents(c.at("by_reservation").at(0).at("used_usd")), Cents(truth.at("used_usd")));
    EXPECT_EQ(Cents(c.at("unused_usd")), Cents(truth.at("cost_usd")) - Cents(truth.at("used_usd")));
  }

  ProcessResult page = Gpuscaler({"report", "--db", "east=" + db, "--db", "west=" + db, "--run", "gpuscaler",
                                  "--format", "html"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const size_t table = page.out.find("Reserved capacity: used and unused");
  ASSERT_NE(table, std::string::npos) << "the fleet page has each cluster's reservations";
  EXPECT_NE(page.out.find("west", table), std::string::npos);

  ProcessResult block =
      Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--view", "buy_block", "--block-type",
                 "p5.48xlarge", "--block-count", "1", "--block-upfront-usd", "500"});
  ASSERT_EQ(block.exit_code, 0) << block.err;
  EXPECT_NE(block.out.find("p5.48xlarge,1,500.00,"), std::string::npos) << block.out;
  ProcessResult missing = Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--view", "buy_block"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("block_type"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpuscaler::testing
