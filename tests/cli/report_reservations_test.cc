// `gpuscaler sim --reservations --db` then `gpuscaler report`: the report of
// the database splits the reservation's cost as the sim printed it, and the
// report's block flags reach the buy_block view.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace {

class ReportReservations : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    // Four 8-GPU on-demand jobs of 4 hours at once; two p5.48xlarge slots
    // reserved for the whole day.
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
    db_ = (Write("placeholder", "").parent_path() / "run.db").string();
  }
  std::string trace_, policy_, reservations_, db_;
};

int64_t Cents(const nlohmann::json& v) { return std::llround(v.get<double>() * 100.0); }

TEST_F(ReportReservations, TheReportOfASimDatabaseSplitsTheReservationAsTheSimDid) {
  ProcessResult sim =
      Gpuscaler({"sim", "--trace", trace_, "--trace-format", "gpuscaler-jobs", "--policy", policy_, "--days",
                 "1", "--reservations", reservations_, "--json", "--db", db_});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  nlohmann::json truth;
  const nlohmann::json doc = nlohmann::json::parse(sim.out);  // alive while `truth` is looked for
  for (const nlohmann::json& r : doc.at("results")) {
    if (r.at("name") == "gpuscaler") truth = r.at("reservations").at(0);
  }
  ASSERT_FALSE(truth.is_null()) << sim.out.substr(0, 500);

  ProcessResult report = Gpuscaler({"report", "--db", db_, "--run", "gpuscaler", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json res = nlohmann::json::parse(report.out).at("reservations").at("by_reservation").at(0);
  EXPECT_EQ(res.at("id"), "cr-test");
  EXPECT_EQ(Cents(res.at("cost_usd")), Cents(truth.at("cost_usd")));
  EXPECT_EQ(Cents(res.at("used_usd")), Cents(truth.at("used_usd")));
  EXPECT_EQ(Cents(res.at("unused_usd")), Cents(truth.at("cost_usd")) - Cents(truth.at("used_usd")));

  ProcessResult block =
      Gpuscaler({"report", "--db", db_, "--run", "gpuscaler", "--view", "buy_block", "--block-type",
                 "p5.48xlarge", "--block-count", "1", "--block-upfront-usd", "500"});
  ASSERT_EQ(block.exit_code, 0) << block.err;
  EXPECT_NE(block.out.find("p5.48xlarge,1,500.00,"), std::string::npos) << block.out;
  ProcessResult missing = Gpuscaler({"report", "--db", db_, "--run", "gpuscaler", "--view", "buy_block"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("block_type"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpuscaler::testing
