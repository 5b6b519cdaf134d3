// The dashboard's parts without a daemon: budgets of every scope against
// their caps, pending waits, time charts, the page before the first tick.
// (tests/cli/dashboard_test.cc checks the whole page of a running demo.)
#include "src/daemon/dashboard.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace gpuscaler::daemon {
namespace {

using namespace std::chrono_literals;

const WallTime kDashboardNow = WallTime(Seconds(1783296000));  // 2026-07-06T00:00:00Z

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

DemandUnit Unit(std::string id, std::string cls, int gpus) {
  DemandUnit u;
  u.id = std::move(id);
  u.workload_class = std::move(cls);
  u.gpus = gpus;
  return u;
}

Node MakeNode(std::string id, std::string pool, double usd, std::vector<DemandUnit> running) {
  Node n;
  n.id = id;
  n.instance_id = id;
  n.pool = std::move(pool);
  n.offering.instance_type = "g5.12xlarge";
  n.offering.zone = "us-east-1a";
  n.offering.capacity_type = CapacityType::kOnDemand;
  n.offering.usd_per_hour = usd;
  n.running = std::move(running);
  return n;
}

// Two pools, one 4-GPU node each; the training node half used by team ml.
PublishedState TwoPools() {
  auto snapshot = std::make_shared<Snapshot>();
  InstanceType t;
  t.name = "g5.12xlarge";
  t.gpu_count = 4;
  snapshot->instance_types.push_back(t);
  snapshot->nodes.push_back(MakeNode("i-inf", "inference", 4.0, {}));
  snapshot->nodes.push_back(MakeNode("i-train", "training", 8.0, {Unit("u1", "train", 2)}));
  snapshot->month_to_date_usd = 500;
  snapshot->month_to_date_usd_by_pool = {{"inference", 100}, {"training", 400}};
  snapshot->month_to_date_usd_by_team = {{"ml", 150}};
  snapshot->hours_left_in_month = 100;
  auto policy = std::make_shared<Policy>();
  policy->name = "test";
  WorkloadClassPolicy cls;
  cls.name = "train";
  cls.team = "ml";
  policy->classes.push_back(cls);
  policy->budget.global.hourly_usd = 20;
  policy->budget.global.hard = true;
  policy->budget.per_pool["training"].monthly_usd = 1000;  // 400 + 8 x 100 = 1200: over
  policy->budget.per_pool["training"].hard = false;
  policy->budget.per_team["ml"].hourly_usd = 3;  // 8 x 2/4 = 4/h: over
  PublishedState s;
  s.mode = "daemon";
  s.snapshot = snapshot;
  s.policy = policy;
  s.last_tick_time = kDashboardNow;
  s.cost_usd_per_hour = 12;
  return s;
}

TEST(DashboardBudgets, EveryBudgetOfThePolicyWithRateMonthToDateProjectionAndStatus) {
  DashboardInputs in;
  in.state = TwoPools();
  const nlohmann::json j = nlohmann::json::parse(DashboardJson(in));
  const nlohmann::json& b = j["budgets"];
  ASSERT_EQ(b.size(), 3u) << b.dump(1);

  EXPECT_EQ(b[0]["scope"], "global");
  EXPECT_DOUBLE_EQ(b[0]["usd_per_hour"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(b[0]["hourly_cap_usd"].get<double>(), 20.0);
  EXPECT_TRUE(b[0]["monthly_cap_usd"].is_null());
  EXPECT_DOUBLE_EQ(b[0]["projected_month_usd"].get<double>(), 500 + 12 * 100.0);
  EXPECT_DOUBLE_EQ(b[0]["allowance_usd_per_hour"].get<double>(), 20.0);
  EXPECT_EQ(b[0]["status"], "within");

  EXPECT_EQ(b[1]["scope"], "pool");
  EXPECT_EQ(b[1]["name"], "training");
  EXPECT_DOUBLE_EQ(b[1]["usd_per_hour"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(b[1]["projected_month_usd"].get<double>(), 1200.0);
  // (1000 - 400) / 100 h left.
  EXPECT_DOUBLE_EQ(b[1]["allowance_usd_per_hour"].get<double>(), 6.0);
  EXPECT_EQ(b[1]["hard"], false);
  EXPECT_EQ(b[1]["status"], "projected over the soft monthly cap");

  EXPECT_EQ(b[2]["scope"], "team");
  EXPECT_EQ(b[2]["name"], "ml");
  EXPECT_DOUBLE_EQ(b[2]["usd_per_hour"].get<double>(), 4.0);  // half the training node's GPUs
  EXPECT_DOUBLE_EQ(b[2]["month_to_date_usd"].get<double>(), 150.0);
  EXPECT_EQ(b[2]["status"], "over the hard hourly cap");

  // On the page: the headline against the global cap, a row per budget, and
  // the hourly cap as a line on the spend chart.
  const std::string page = DashboardPage(in);
  EXPECT_NE(page.find("data-hourly-cap=\"20.00\""), std::string::npos);
  EXPECT_NE(page.find("of the hard cap <b>$20.00/h</b> (60.0 %)"), std::string::npos);
  EXPECT_EQ(Count(page, "<tr class=\"budget\""), 3u);
  EXPECT_NE(page.find("<td class=\"bad\">over the hard hourly cap</td>"), std::string::npos);
  EXPECT_NE(page.find("class=\"level budget-cap hourly-cap\" data-value=\"20.0\""), std::string::npos);
  // Rollups split the training node between class train and idle capacity.
  EXPECT_NE(page.find("<td>train</td><td>1</td><td>2.0</td><td>$4.00</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>(idle capacity)</td><td>2</td><td>6.0</td><td>$8.00</td>"), std::string::npos);
}

TEST(DashboardBudgets, AMonthlyCapDrawsTheAllowanceAndTheBurnDownCap) {
  DashboardInputs in;
  in.state = TwoPools();
  auto policy = std::make_shared<Policy>(*in.state.policy);
  policy->budget.global.monthly_usd = 2000;
  in.state.policy = policy;
  for (int i = 0; i < 3; ++i) {
    SeriesPoint p;
    p.time = kDashboardNow - std::chrono::minutes(10 * (2 - i));
    p.usd_per_hour = 12;
    p.month_to_date_usd = 498 + i;
    p.global_allowance_usd_per_hour = 15;
    in.state.series.push_back(p);
  }
  const std::string page = DashboardPage(in);
  EXPECT_NE(page.find("class=\"level budget-cap monthly-cap\" data-value=\"2000.0\""), std::string::npos);
  EXPECT_NE(page.find("data-label=\"allowed now\""), std::string::npos);
  EXPECT_NE(page.find("data-label=\"projected at the current rate\""), std::string::npos);
  EXPECT_EQ(page.find("No monthly cap is set"), std::string::npos);
}

TEST(DashboardPending, WaitsCountFromFirstSeenAndPercentilesAreNearestRank) {
  Snapshot snap;
  for (int i = 0; i < 10; ++i) snap.pending.push_back(Unit("a" + std::to_string(i), "alpha", 1));
  snap.pending.push_back(Unit("b0", "beta", 2));
  auto before = std::make_shared<std::map<std::string, WallTime>>();
  for (int i = 0; i < 10; ++i) (*before)["a" + std::to_string(i)] = kDashboardNow - Seconds(60 * i);
  (*before)["gone"] = kDashboardNow - 1h;
  const auto since = PendingSince(before, snap, kDashboardNow);
  EXPECT_EQ(since->count("gone"), 0u);
  EXPECT_EQ(since->at("b0"), kDashboardNow);  // first seen now
  EXPECT_EQ(since->at("a9"), kDashboardNow - Seconds(540));

  const std::vector<PendingClassStats> stats = PendingByClass(snap, *since, kDashboardNow);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].workload_class, "alpha");
  EXPECT_EQ(stats[0].units, 10);
  EXPECT_DOUBLE_EQ(stats[0].gpus, 10.0);
  EXPECT_DOUBLE_EQ(stats[0].wait_p50_s, 240.0);  // 5th of 0, 60, ..., 540
  EXPECT_DOUBLE_EQ(stats[0].wait_p90_s, 480.0);
  EXPECT_DOUBLE_EQ(stats[0].wait_p99_s, 540.0);
  EXPECT_DOUBLE_EQ(stats[0].wait_max_s, 540.0);
  EXPECT_EQ(stats[1].workload_class, "beta");
  EXPECT_DOUBLE_EQ(stats[1].wait_max_s, 0.0);

  DashboardInputs in;
  in.state = TwoPools();
  in.state.pending_by_class = stats;
  const nlohmann::json j = nlohmann::json::parse(DashboardJson(in));
  ASSERT_EQ(j["pending_by_class"].size(), 2u);
  EXPECT_EQ(j["pending_by_class"][0]["class"], "alpha");
  EXPECT_EQ(j["pending_by_class"][0]["units"], 10);
  EXPECT_DOUBLE_EQ(j["pending_by_class"][0]["wait_p90_s"].get<double>(), 480.0);
  const std::string page = DashboardPage(in);
  EXPECT_NE(page.find("<tr data-class=\"alpha\"><td>alpha</td><td>10</td><td>10.0</td><td>4.0 min</td><td>8.0 min</td>"),
            std::string::npos);
}

TEST(DashboardGangs, AWaitingGangSaysWhatItWaitsForFromTheLastPlan) {
  Snapshot snap;
  const auto member = [](const std::string& id, const std::string& gang, int size) {
    DemandUnit u = Unit(id, "train", 8);
    u.gang = GangMembership{gang, size, true, false};
    return u;
  };
  // "ml/llama": 3 of 4 members pending and one running, the last plan could
  // not place them whole; "ml/bert": launched; "ml/gpt": 2 of 4 created.
  for (int i = 0; i < 3; ++i) snap.pending.push_back(member("llama-" + std::to_string(i), "ml/llama", 4));
  snap.pending.push_back(member("bert-0", "ml/bert", 2));
  snap.pending.push_back(member("bert-1", "ml/bert", 2));
  snap.pending.push_back(member("gpt-0", "ml/gpt", 4));
  snap.pending.push_back(member("gpt-1", "ml/gpt", 4));
  snap.pending.push_back(Unit("solo", "train", 1));
  Node node;
  node.id = "n1";
  node.running.push_back(member("llama-3", "ml/llama", 4));
  snap.nodes.push_back(node);
  Plan plan;
  for (int i = 0; i < 3; ++i)
    plan.unplaced.push_back({"llama-" + std::to_string(i), "train", UnplacedReason::kGangIncomplete,
                             "only 2 of 3 members fit in us-east-1a"});
  LaunchAction launch;
  launch.count = 2;
  launch.unit_ids = {"bert-0", "bert-1"};
  plan.launches.push_back(launch);
  std::map<std::string, WallTime> since = {{"llama-0", kDashboardNow - Seconds(900)},
                                           {"bert-0", kDashboardNow - Seconds(60)}};

  const std::vector<WaitingGang> gangs = WaitingGangs(snap, plan, since, kDashboardNow);
  ASSERT_EQ(gangs.size(), 3u);
  EXPECT_EQ(gangs[0].name, "ml/llama");  // longest wait first
  EXPECT_EQ(gangs[0].pending, 3);
  EXPECT_EQ(gangs[0].running, 1);
  EXPECT_DOUBLE_EQ(gangs[0].wait_s, 900);
  EXPECT_EQ(gangs[0].waits_for, "gang-incomplete: only 2 of 3 members fit in us-east-1a");
  EXPECT_EQ(gangs[1].name, "ml/bert");
  EXPECT_EQ(gangs[1].waits_for, "its nodes, launched at this decision");
  EXPECT_EQ(gangs[2].name, "ml/gpt");
  EXPECT_EQ(gangs[2].waits_for, "2 member(s) not created yet");

  DashboardInputs in;
  in.state = TwoPools();
  in.state.waiting_gangs = gangs;
  const nlohmann::json j = nlohmann::json::parse(DashboardJson(in));
  ASSERT_EQ(j["waiting_gangs"].size(), 3u);
  EXPECT_EQ(j["waiting_gangs"][0]["waits_for"], "gang-incomplete: only 2 of 3 members fit in us-east-1a");
  EXPECT_EQ(j["waiting_gangs"][0]["size"], 4);
  EXPECT_EQ(nlohmann::json::parse(StatusJson(in.state))["waiting_gangs"], j["waiting_gangs"]);
  const std::string page = DashboardPage(in);
  EXPECT_NE(page.find("<tr data-gang=\"ml/llama\"><td>ml/llama</td><td>train</td><td>3</td><td>1</td><td>4</td>"
                      "<td>15.0 min</td><td>gang-incomplete: only 2 of 3 members fit in us-east-1a</td></tr>"),
            std::string::npos);
  in.state.waiting_gangs.clear();
  EXPECT_EQ(DashboardPage(in).find("Waiting gangs"), std::string::npos) << "no gangs: no table";
}

TEST(DashboardGangs, AGangWhoseMembersHaveRoomOnNodesWaitsForTheScheduler) {
  Snapshot snap;
  for (int i = 0; i < 2; ++i) {
    DemandUnit u = Unit("m" + std::to_string(i), "train", 8);
    u.gang = GangMembership{"ml/placed", 2, true, false};
    snap.pending.push_back(u);
  }
  Plan plan;
  plan.placements = {{"m0", "node-1", -1, -1}, {"m1", "node-2", -1, -1}};
  const std::vector<WaitingGang> gangs = WaitingGangs(snap, plan, {}, kDashboardNow);
  ASSERT_EQ(gangs.size(), 1u);
  EXPECT_EQ(gangs[0].waits_for, "the scheduler: its nodes have room");
  EXPECT_DOUBLE_EQ(gangs[0].wait_s, 0) << "first seen now";
}

TEST(DashboardChart, TimeAxisLabelsAscendAndLevelsAndGapsAreDrawn) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<WallTime> times = {kDashboardNow, kDashboardNow + 1h, kDashboardNow + 2h};
  const std::string svg = TimeChartSvg("c", "a chart", times, {{"x", "#000", {1, nan, 3}, false}}, false,
                                       {{"cap 5", "#f00", 5, "cap"}}, "units");
  EXPECT_NE(svg.find("<svg id=\"c\" class=\"chart\""), std::string::npos);
  EXPECT_NE(svg.find("time (UTC)"), std::string::npos);
  EXPECT_EQ(Count(svg, "class=\"tick-label time-label\""), 5u);
  EXPECT_NE(svg.find("data-time=\"2026-07-06T00:00:00Z\""), std::string::npos);
  EXPECT_NE(svg.find("data-time=\"2026-07-06T01:00:00Z\""), std::string::npos);
  EXPECT_NE(svg.find("data-time=\"2026-07-06T02:00:00Z\""), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"end\">02:00</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"level cap\" data-value=\"5.0\""), std::string::npos);
  // The gap splits the line into two moves.
  const size_t path = svg.find("class=\"series\"");
  ASSERT_NE(path, std::string::npos);
  const std::string d = svg.substr(path, svg.find("/>", path) - path);
  EXPECT_EQ(Count(d, "M"), 2u) << d;
  // Over more than 20 hours the labels carry the date.
  const std::string days = TimeChartSvg("d", "days", {kDashboardNow, kDashboardNow + 48h},
                                        {{"x", "#000", {1, 2}, false}}, false, {}, "");
  EXPECT_NE(days.find(">07-06 00:00<"), std::string::npos);
  EXPECT_NE(days.find(">07-08 00:00<"), std::string::npos);
}

TEST(DashboardPage, BeforeTheFirstTickEveryChartHasItsAxesAndSaysSo) {
  DashboardInputs in;
  in.state.mode = "daemon";
  const std::string page = DashboardPage(in);
  EXPECT_EQ(Count(page, "class=\"chart\""), 4u);
  EXPECT_EQ(Count(page, "class=\"axis x-axis\""), 4u);
  EXPECT_EQ(Count(page, "no data yet"), 4u);
  EXPECT_NE(page.find("waiting for the first tick"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(DashboardJson(in));
  EXPECT_TRUE(j["time"].is_null());
  EXPECT_TRUE(j["budgets"].empty());
  EXPECT_TRUE(j["sections"].contains("fleet"));
}

TEST(DashboardPage, AStoreErrorIsShownNotHidden) {
  DashboardInputs in;
  in.state = TwoPools();
  in.store_error = "cannot open /nope.db";
  EXPECT_NE(DashboardPage(in).find("audit database: cannot open /nope.db"), std::string::npos);
}

// The Signals section says whether plans act on live spot prices.
TEST(DashboardPage, SaysWhetherSpotPricesAreLiveOrStale) {
  DashboardInputs in;
  in.state = TwoPools();
  in.state.price_age = Seconds(42);
  EXPECT_NE(DashboardPage(in).find("spot prices: live, read 42 s ago"), std::string::npos);
  in.state.price_age = Seconds(4000);
  in.state.stale_prices = "spot prices stale: the source has not answered for over 1h (UnauthorizedOperation)";
  const std::string page = DashboardPage(in);
  EXPECT_NE(page.find("spot prices stale: the source has not answered for over 1h (UnauthorizedOperation) "
                      "(source last answered 4000 s ago): no replacements"),
            std::string::npos);
}

// Pool limits as the last tick saw them: the pool's own, or a schedule's
// while it is in force (named, with when it ends).
TEST(DashboardPage, PoolLimitsShowTheScheduleInForce) {
  DashboardInputs in;
  in.state = TwoPools();
  Policy policy = *in.state.policy;
  NodePoolPolicy inference;
  inference.name = "inference";
  inference.max_nodes = 30;
  NodePoolPolicy training = inference;
  training.name = "training";
  policy.pools = {inference, training};
  ScalingSchedule warm;
  warm.name = "night-warm";
  warm.cron = "0 0 * * *";  // kDashboardNow is 00:00 UTC
  warm.duration = Seconds(3600);
  warm.pools = {"training"};
  warm.min_nodes = 4;
  policy.scaling.schedules = {warm};
  in.state.policy = std::make_shared<Policy>(policy);
  const std::string page = DashboardPage(in);
  const size_t at = page.find("<table id=\"pool-limits\"");
  ASSERT_NE(at, std::string::npos);
  const std::string table = page.substr(at, page.find("</table>", at) - at);
  EXPECT_NE(table.find("<tr><td>inference</td><td>0</td><td>30</td><td>the pool</td></tr>"), std::string::npos) << table;
  EXPECT_NE(table.find("<tr><td>training</td><td>4</td><td>30</td><td>schedule night-warm (until "), std::string::npos)
      << table;
  // An hour later it has ended.
  in.state.last_tick_time = kDashboardNow + Seconds(3600);
  const std::string later = DashboardPage(in);
  EXPECT_NE(later.find("<tr><td>training</td><td>0</td><td>30</td><td>the pool</td></tr>"), std::string::npos);
}

}  // namespace
}  // namespace gpuscaler::daemon
