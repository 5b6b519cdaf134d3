// What the daemon's /metrics says about lead times, pool limits and the
// scaling schedules in force (DaemonMetrics::ObserveTick, no server).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "src/daemon/daemon_parts.h"

namespace gpuscaler::daemon {
namespace {

Policy TwoPoolsWithANightCap() {
  Policy p;
  NodePoolPolicy gpu;
  gpu.name = "gpu";
  gpu.min_nodes = 1;
  gpu.max_nodes = 20;
  NodePoolPolicy burst = gpu;
  burst.name = "burst";
  burst.min_nodes = 0;
  p.pools = {gpu, burst};
  ScalingSchedule night;
  night.name = "night";
  night.cron = "* 0-5 * * *";
  night.timezone = "Europe/Berlin";
  night.pools = {"burst"};
  night.max_nodes = 0;
  p.scaling.schedules = {night};
  return p;
}

std::string Render(const std::string& when) {
  DaemonMetrics metrics;
  EngineTick tick;
  EXPECT_TRUE(ParseRfc3339(when, &tick.time));
  PublishedState state;
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->time = tick.time;
  snapshot->warmup_seconds_by_family = {{"g6", 140}, {"p5", 610}};
  state.snapshot = snapshot;
  state.policy = std::make_shared<Policy>(TwoPoolsWithANightCap());
  metrics.ObserveTick(tick, 0.01, state);
  return metrics.registry().Render();
}

bool Has(const std::string& text, const std::string& line) { return text.find("\n" + line + "\n") != std::string::npos; }

TEST(DaemonMetrics, ExportsTheLearnedLeadTimeByFamily) {
  const std::string text = Render("2026-07-01T12:00:00Z");
  EXPECT_TRUE(Has(text, "gpuscaler_lead_time_seconds{family=\"g6\"} 140")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_lead_time_seconds{family=\"p5\"} 610")) << text;
}

TEST(DaemonMetrics, ExportsPoolLimitsAfterTheSchedulesInForce) {
  // 01:30 in Berlin (CEST): the night cap holds the burst pool at 0.
  const std::string night = Render("2026-07-01T23:30:00Z");
  EXPECT_TRUE(Has(night, "gpuscaler_schedule_in_force{schedule=\"night\"} 1")) << night;
  EXPECT_TRUE(Has(night, "gpuscaler_pool_node_limit{pool=\"burst\",limit=\"max_nodes\"} 0")) << night;
  EXPECT_TRUE(Has(night, "gpuscaler_pool_node_limit{pool=\"gpu\",limit=\"max_nodes\"} 20")) << night;
  EXPECT_TRUE(Has(night, "gpuscaler_pool_node_limit{pool=\"gpu\",limit=\"min_nodes\"} 1")) << night;
  // 14:00 in Berlin: no schedule, the pools' own limits.
  const std::string day = Render("2026-07-01T12:00:00Z");
  EXPECT_EQ(day.find("gpuscaler_schedule_in_force{"), std::string::npos) << day;
  EXPECT_TRUE(Has(day, "gpuscaler_pool_node_limit{pool=\"burst\",limit=\"max_nodes\"} 20")) << day;
}

// The controller reports each unit whose deadline passed once, by class;
// the counter adds them up tick after tick.
TEST(DaemonMetrics, CountsMissedDeadlinesByClass) {
  DaemonMetrics metrics;
  PublishedState state;
  state.snapshot = std::make_shared<Snapshot>();
  state.policy = std::make_shared<Policy>(TwoPoolsWithANightCap());
  EngineTick tick;
  tick.report.deadlines_missed = {{"train", 2}, {"eval", 1}};
  metrics.ObserveTick(tick, 0.01, state);
  tick.report.deadlines_missed = {{"train", 1}};
  metrics.ObserveTick(tick, 0.01, state);
  const std::string text = metrics.registry().Render();
  EXPECT_TRUE(Has(text, "gpuscaler_deadlines_missed_total{class=\"train\"} 3")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_deadlines_missed_total{class=\"eval\"} 1")) << text;
}

// Failed terminations are counted from the report's count, whatever the
// errors' wording: an error that merely mentions terminating is not one.
TEST(DaemonMetrics, CountsFailedTerminationsFromTheReportsCount) {
  DaemonMetrics metrics;
  PublishedState state;
  state.snapshot = std::make_shared<Snapshot>();
  state.policy = std::make_shared<Policy>(TwoPoolsWithANightCap());
  EngineTick tick;
  tick.report.nodes_terminated = 1;
  tick.report.terminations_failed = 2;
  tick.report.errors = {Error::Auth("terminate i-1: UnauthorizedOperation"), Error::Auth("terminate i-2: denied"),
                        Error::Transient("terminated instances listing: timeout")};
  metrics.ObserveTick(tick, 0.01, state);
  const std::string text = metrics.registry().Render();
  EXPECT_TRUE(Has(text, "gpuscaler_actions_total{kind=\"terminate\",result=\"failed\"} 2")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_actions_total{kind=\"terminate\",result=\"succeeded\"} 1")) << text;
}


// Leadership and the shared store: transitions by direction, the Lease as
// this replica sees it, and the store's commit latency and failures (a
// fenced commit counts under auth).
TEST(DaemonMetrics, ExportsLeadershipAndStoreCommits) {
  DaemonMetrics metrics;
  metrics.SetLeader(false);
  metrics.CountLeaderTransition(true);
  metrics.CountLeaderTransition(false);
  metrics.CountLeaderTransition(true);
  metrics.ObserveLease(LeaseView{12.5, 7, "replica-a"});
  metrics.ObserveStoreCommits({StoreCommit{0.002, std::nullopt}, StoreCommit{0.3, ErrorCategory::kAuth},
                               StoreCommit{0.004, ErrorCategory::kTransient}});
  const std::string text = metrics.registry().Render();
  EXPECT_TRUE(Has(text, "gpuscaler_leader 0")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_leader_transitions_total{to=\"leader\"} 2")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_leader_transitions_total{to=\"standby\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_lease_transitions 7")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_leaderless_seconds 12.5")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_store_commit_seconds_count 3")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_store_commit_seconds_bucket{le=\"0.0025\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_store_commit_errors_total{category=\"auth\"} 1")) << text;
  EXPECT_TRUE(Has(text, "gpuscaler_store_commit_errors_total{category=\"transient\"} 1")) << text;
}

}  // namespace
}  // namespace gpuscaler::daemon
