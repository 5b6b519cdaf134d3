// `gpuscaler sim --db` then `gpuscaler report`, as an operator runs them: each
// policy or baseline is its own run, and a run's report equals what the
// simulator billed for it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "cli/process.h"

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

  // CSV has no header: the scope goes to stderr.
  ProcessResult csv = Gpuscaler({"report", "--db", db, "--run", "gpuscaler"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.err.find("covers run 'gpuscaler'"), std::string::npos) << csv.err;

  // A second replay into the same file would reuse the runs' names and ids.
  ProcessResult again = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--db", db});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds a run named"), std::string::npos) << again.err;
}

TEST_F(SimReport, ARangeWithoutDataSaysSoOnStderr) {
  const std::string db = (dir_ / "audit.db").string();
  ASSERT_EQ(Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--db", db}).exit_code, 0);
  ProcessResult r =
      Gpuscaler({"report", "--db", db, "--run", "gpuscaler", "--from", "2030-01-01", "--to", "2030-01-02"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no nodes or usage recorded"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscaler::testing
