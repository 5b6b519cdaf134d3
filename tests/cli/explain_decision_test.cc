// `gpuscaler explain --db F --decision ID` over a whole demo daemon run:
// every decision the daemon recorded replays to the plan its planner made
// (the decision's plan_json, or the planner's plan stored beside it when the
// governor edited it), through the library and through the binary.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cli/http_get.h"
#include "cli/process.h"
#include "gpuscaler/daemon/decision_replay.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::testing {
namespace {

class ExplainDecision : public CliTest {
 protected:
  // The demo daemon for `ticks` ticks (a virtual minute each), writing
  // audit.db; returns the database path.
  std::string RunDemo(int ticks) {
    const std::string db = (dir_ / "audit.db").string();
    ProcessResult run = Gpuscaler({"run", "--demo", "--listen", "127.0.0.1:0", "--db", db, "--speed", "3600",
                                   "--days", "2", "--max-ticks", std::to_string(ticks), "--tick-interval-ms", "10"});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return db;
  }
};

TEST_F(ExplainDecision, EveryDecisionOfADemoRunReplaysToThePlanItsPlannerMade) {
  const std::string db = RunDemo(300);
  auto reader = std::move(AuditReader::Open(db)).value();
  Result<std::vector<DecisionRow>> rows = reader->DecisionsAfterId(0, 1000);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_GE(rows->size(), 100u) << "the demo should plan on most ticks";

  int edited = 0;
  int with_launches = 0;
  for (const DecisionRow& row : *rows) {
    SCOPED_TRACE("decision " + std::to_string(row.id));
    Result<DecisionReplay> replay = ReplayDecision(*reader, row.id);
    ASSERT_TRUE(replay.ok()) << replay.error().message();
    EXPECT_TRUE(replay->matches_recorded);
    EXPECT_EQ(replay->plan_json, replay->planner_plan_json);
    if (replay->governor_edited) {
      ++edited;
    } else {
      EXPECT_EQ(replay->plan_json, row.decision.plan_json);
    }
    if (!replay->plan.launches.empty()) ++with_launches;
  }
  // The run exercises both paths: plans kept as made, and plans the
  // governor held back (cooldowns, stabilization).
  EXPECT_GT(edited, 0);
  EXPECT_LT(edited, static_cast<int>(rows->size()));
  EXPECT_GT(with_launches, 0);

  // The binary prints the same plan: --format json parses to the recorded plan.
  for (const DecisionRow& row : {rows->front(), (*rows)[rows->size() / 2], rows->back()}) {
    SCOPED_TRACE("decision " + std::to_string(row.id));
    ProcessResult r = Gpuscaler({"explain", "--db", db, "--decision", std::to_string(row.id), "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Result<DecisionReplay> replay = ReplayDecision(*reader, row.id);
    ASSERT_TRUE(replay.ok());
    EXPECT_EQ(nlohmann::ordered_json::parse(r.out), nlohmann::ordered_json::parse(replay->planner_plan_json));
  }
}

// The simulator records inputs too, for its own planner and for the
// on-demand baseline (the scenario's policy, edited); a baseline with a
// planner of its own records none, and explain says why.
TEST_F(ExplainDecision, EveryDecisionOfASimulatedDayReplays) {
  const std::string db = (dir_ / "sim.db").string();
  ProcessResult sim = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--db", db});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  auto reader = std::move(AuditReader::Open(db)).value();
  Result<std::vector<DecisionRow>> rows = reader->DecisionsAfterId(0, 5000);
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  std::map<std::string, int> replayed;
  for (const DecisionRow& row : *rows) {
    SCOPED_TRACE("decision " + std::to_string(row.id) + " " + row.decision.source);
    Result<DecisionReplay> replay = ReplayDecision(*reader, row.id);
    ASSERT_TRUE(replay.ok()) << replay.error().message();
    EXPECT_TRUE(replay->matches_recorded);
    replayed[row.decision.source] += 1;
  }
  EXPECT_GT(replayed["sim:gpuscaler"], 100);
  EXPECT_GT(replayed["sim:on-demand"], 100);

  const std::string baseline_db = (dir_ / "karpenter.db").string();
  ProcessResult karpenter =
      Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--baseline", "karpenter", "--db", baseline_db});
  ASSERT_EQ(karpenter.exit_code, 0) << karpenter.err;
  auto baseline_reader = std::move(AuditReader::Open(baseline_db)).value();
  Result<std::vector<DecisionRow>> baseline_rows = baseline_reader->DecisionsAfterId(0, 5000);
  ASSERT_TRUE(baseline_rows.ok());
  bool checked = false;
  for (const DecisionRow& row : *baseline_rows) {
    if (row.decision.source.rfind("sim:karpenter", 0) != 0) continue;
    ProcessResult r = Gpuscaler({"explain", "--db", baseline_db, "--decision", std::to_string(row.id)});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("recorded without its planner input"), std::string::npos) << r.err;
    checked = true;
    break;
  }
  EXPECT_TRUE(checked) << "no karpenter decision recorded";
}

TEST_F(ExplainDecision, ShowsWhatAnotherPolicyWouldHaveDoneAndNamesBadIds) {
  const std::string db = RunDemo(40);
  // A decision that launched something.
  std::string id;
  {
    auto reader = std::move(AuditReader::Open(db)).value();
    Result<std::vector<DecisionRow>> rows = reader->DecisionsAfterId(0, 100);
    ASSERT_TRUE(rows.ok()) << rows.error().message();
    for (const DecisionRow& row : *rows) {
      if (id.empty() && row.decision.plan_json.find(R"("launches":[{)") != std::string::npos) {
        id = std::to_string(row.id);
      }
    }
  }
  ASSERT_FALSE(id.empty());
  ProcessResult text = Gpuscaler({"explain", "--db", db, "--decision", id});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Decision " + id + " at "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(as recorded)"), std::string::npos) << text.out;

  // A policy whose only pool cannot hold the demo's GPUs: its plan differs.
  const auto policy = Write("tiny.yaml", R"(apiVersion: gpuscaler/v1
kind: Policy
name: tiny
pools: [{name: gpu, max_nodes: 0}]
classes: [{name: default}]
)");
  ProcessResult what_if = Gpuscaler({"explain", "--db", db, "--decision", id, "--policy", policy.string()});
  ASSERT_EQ(what_if.exit_code, 0) << what_if.err;
  EXPECT_NE(what_if.out.find("(what-if; the decision used demo"), std::string::npos) << what_if.out;
  ProcessResult recorded = Gpuscaler({"explain", "--db", db, "--decision", id, "--format", "json"});
  ProcessResult other = Gpuscaler({"explain", "--db", db, "--decision", id, "--format", "json", "--policy",
                                   policy.string()});
  EXPECT_NE(recorded.out.find(R"("launches": [)" "\n"), std::string::npos) << recorded.out;
  EXPECT_NE(other.out.find(R"("launches": [],)"), std::string::npos) << other.out;

  ProcessResult unknown = Gpuscaler({"explain", "--db", db, "--decision", "99999"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("decision 99999 is not in the audit store; decisions stored: 1.."), std::string::npos)
      << unknown.err;

  ProcessResult missing = Gpuscaler({"explain", "--db", (dir_ / "nope.db").string(), "--decision", "1"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nope.db"), std::string::npos) << missing.err;

  ProcessResult neither = Gpuscaler({"explain"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("--db FILE --decision ID"), std::string::npos) << neither.err;
}

// The dashboard links each decision to /decisions/ID, a page with the
// decision replayed; /api/v1/decisions/ID/explain serves the replay as JSON.
TEST_F(ExplainDecision, TheDaemonServesEachDecisionsReplay) {
  using namespace std::chrono_literals;
  ChildProcess daemon({GPUSCALER_BINARY, "run", "--demo", "--listen", "127.0.0.1:0", "--port-file",
                       (dir_ / "port").string(), "--db", (dir_ / "audit.db").string(), "--speed", "3600", "--days",
                       "2"},
                      dir_ / "out.log", dir_ / "err.log");
  ASSERT_TRUE(daemon.started());
  const uint16_t port = WaitForPortFile(dir_ / "port", 30s);
  ASSERT_NE(port, 0) << ReadAll(dir_ / "err.log");
  nlohmann::json decisions;
  for (int i = 0; i < 200; ++i) {
    HttpReply r = HttpGet(port, "/api/v1/decisions?limit=5");
    if (r.status == 200) decisions = nlohmann::json::parse(r.body);
    if (decisions.contains("decisions") && decisions["decisions"].size() >= 3) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_GE(decisions["decisions"].size(), 3u);
  const int64_t id = decisions["decisions"][0]["id"].get<int64_t>();

  HttpReply replay = HttpGet(port, "/api/v1/decisions/" + std::to_string(id) + "/explain");
  ASSERT_EQ(replay.status, 200) << replay.body;
  const nlohmann::json j = nlohmann::json::parse(replay.body);
  EXPECT_EQ(j["decision_id"], id);
  EXPECT_EQ(j["recorded_policy"], true);
  EXPECT_EQ(j["matches_recorded"], true) << replay.body;
  EXPECT_TRUE(j["plan"].contains("launches"));

  HttpReply page = HttpGet(port, "/decisions/" + std::to_string(id));
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("<h1>decision #" + std::to_string(id) + "</h1>"), std::string::npos);
  EXPECT_NE(page.body.find("The planner, run again on the stored snapshot and policy, makes the plan it recorded."),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("href=\"../api/v1/decisions/" + std::to_string(id) + "/explain\""), std::string::npos);

  for (const std::string path : {"/decisions/999999999", "/api/v1/decisions/999999999/explain"}) {
    HttpReply unknown = HttpGet(port, path);
    EXPECT_EQ(unknown.status, 404) << path;
    EXPECT_NE(unknown.body.find("decisions stored: 1.."), std::string::npos) << unknown.body;
  }
  EXPECT_EQ(HttpGet(port, "/decisions/abc").status, 400);
  EXPECT_EQ(HttpGet(port, "/api/v1/decisions/abc/explain").status, 400);
  EXPECT_EQ(HttpGet(port, "/api/v1/decisions/1/other").status, 400);

  HttpReply dashboard = HttpGet(port, "/");
  ASSERT_EQ(dashboard.status, 200);
  EXPECT_NE(dashboard.body.find("href=\"decisions/"), std::string::npos);

  daemon.Signal(SIGTERM);
  std::optional<int> code = daemon.Wait(20s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << ReadAll(dir_ / "err.log");
}

}  // namespace
}  // namespace gpuscaler::testing
