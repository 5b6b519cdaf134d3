// One money rule everywhere: an oversubscribed node (8 GPUs, $16/h, with 6 +
// 6 GPUs held by two teams) charges each team the same $8/h (price x 6/12,
// nothing idle) in the planner's team budgets, the actuator's budget guard,
// the usage meter's month to date, the dashboard and the cost report. Each
// part once charged its own way (6/8 of the node to each team in the
// planner, the guard and the dashboard; 6/8 per usage row in the report).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

#include "gpuscaler/controller/actuator.h"
#include "gpuscaler/controller/usage_meter.h"
#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/solver/planner.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "src/daemon/dashboard.h"
#include "tests/solver/fixtures.h"

namespace gpuscaler {
namespace {

constexpr double kNodeUsdPerHour = 16.0;
constexpr double kEachTeamUsdPerHour = kNodeUsdPerHour * 6 / 12;
const WallTime kHourStart = FromUnixSeconds(1'793'491'200);  // 2026-11-01T00:00:00Z

DemandUnit Holding(const std::string& id, const std::string& cls, const std::string& team, int gpus) {
  DemandUnit u = testing::Unit(id, gpus, 2000, 8192, cls);
  u.team = team;
  return u;
}

// A g5.48xlarge (8 GPUs) at $16/h holding 6 GPUs of team ml and 6 of team
// search: more than it has.
Snapshot OversubscribedNode() {
  Snapshot s = testing::BaseSnapshot();
  s.nodes.push_back(testing::MakeNode(s, "n1", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand,
                                      {Holding("a", "inference", "ml", 6), Holding("b", "training", "search", 6)}));
  s.nodes.back().offering.usd_per_hour = kNodeUsdPerHour;
  s.time = kHourStart;
  s.hours_left_in_month = 100;
  return s;
}

Policy TeamCaps(double ml_hourly_usd, bool hard) {
  Policy p = testing::BasePolicy();
  for (const char* team : {"ml", "search"}) {
    p.budget.per_team[team].hourly_usd = ml_hourly_usd;
    p.budget.per_team[team].hard = hard;
  }
  return p;
}

TEST(OneMoneyRule, ThePlannersTeamSpendIsPriceTimesHeldOverAllHeld) {
  const Snapshot s = OversubscribedNode();
  // The soft cap note appears just above the team's spend and not just below.
  const Plan under = MakePlan(s, TeamCaps(kEachTeamUsdPerHour - 0.01, false));
  EXPECT_TRUE(testing::HasNote(under, "team ml over soft budget")) << under.summary;
  EXPECT_TRUE(testing::HasNote(under, "team search over soft budget")) << under.summary;
  const Plan over = MakePlan(s, TeamCaps(kEachTeamUsdPerHour + 0.01, false));
  EXPECT_FALSE(testing::HasNote(over, "over soft budget")) << over.summary;
}

TEST(OneMoneyRule, TheBudgetGuardChargesEachTeamTheSame) {
  Snapshot s = OversubscribedNode();
  s.pending.push_back(Holding("p", "inference", "ml", 8));
  const BudgetGuard guard(s, Plan{}, TeamCaps(20, true));
  LaunchAction launch;
  launch.pool = "gpu";
  launch.count = 1;
  launch.unit_ids = {"p"};
  const Offering& offering = testing::FindOffering(s, "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand);
  const std::string why = guard.Breach(launch, offering, 1);
  // $20/h less the $8/h team ml runs on the node.
  EXPECT_NE(why.find("hard team ml budget ($12.00/h left of $20.00/h)"), std::string::npos) << why;
}

struct MeteredHour {
  Catalog catalog;
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  std::unique_ptr<UsageMeter> meter;

  // The node held as above for one hour, metered and recorded.
  void Run() {
    const Snapshot s = OversubscribedNode();
    catalog.instance_types = s.instance_types;
    meter = std::make_unique<UsageMeter>(store.get(), catalog, Seconds(3600));
    ASSERT_TRUE(store->BeginRun({"money", "daemon", "h", kHourStart}).ok());
    const Node& node = s.nodes.front();
    NodeLaunchRecord launch;
    launch.instance_id = node.instance_id;
    launch.node_id = node.id;
    launch.pool = node.pool;
    launch.offering = node.offering;
    launch.gpu_count = 8;
    launch.launch_time = kHourStart;
    ASSERT_TRUE(store->RecordNodeLaunch(launch).ok());
    meter->AddNode(node.instance_id, kHourStart);
    meter->SetRunning(node.instance_id, node.running);
    ASSERT_TRUE(meter->Accumulate(kHourStart, s.nodes).ok());
    ASSERT_TRUE(meter->Accumulate(kHourStart + Seconds(3600), s.nodes).ok());
    ASSERT_TRUE(store->RecordNodeEnd({node.instance_id, kHourStart + Seconds(3600), "terminated"}).ok());
  }
};

TEST(OneMoneyRule, TheUsageMetersMonthToDateChargesEachTeamTheSame) {
  MeteredHour hour;
  hour.Run();
  EXPECT_DOUBLE_EQ(hour.meter->month_to_date_usd_by_team().at("ml"), kEachTeamUsdPerHour);
  EXPECT_DOUBLE_EQ(hour.meter->month_to_date_usd_by_team().at("search"), kEachTeamUsdPerHour);
  // A restart restores the same figures from the usage rows.
  UsageMeter restarted(hour.store.get(), hour.catalog, Seconds(3600));
  NodeLifecycle life;
  life.instance_id = "i-n1";
  life.offering = OversubscribedNode().nodes.front().offering;
  life.launch_time = kHourStart;
  life.end_time = kHourStart + Seconds(3600);
  ASSERT_TRUE(restarted.RestoreMonth({life}, kHourStart + Seconds(3600)).ok());
  EXPECT_DOUBLE_EQ(restarted.month_to_date_usd_by_team().at("ml"), kEachTeamUsdPerHour);
  EXPECT_DOUBLE_EQ(restarted.month_to_date_usd_by_team().at("search"), kEachTeamUsdPerHour);
}

TEST(OneMoneyRule, TheDashboardChargesEachTeamTheSameAndShowsNoIdle) {
  daemon::DashboardInputs in;
  in.state.mode = "daemon";
  in.state.snapshot = std::make_shared<const Snapshot>(OversubscribedNode());
  in.state.policy = std::make_shared<const Policy>(TeamCaps(20, true));
  in.state.last_tick_time = kHourStart;
  const nlohmann::json j = nlohmann::json::parse(daemon::DashboardJson(in));
  std::map<std::string, double> by_team;
  for (const nlohmann::json& b : j["budgets"]) {
    if (b["scope"] == "team") by_team[b["name"].get<std::string>()] = b["usd_per_hour"].get<double>();
  }
  EXPECT_DOUBLE_EQ(by_team["ml"], kEachTeamUsdPerHour);
  EXPECT_DOUBLE_EQ(by_team["search"], kEachTeamUsdPerHour);
  const std::string page = daemon::DashboardPage(in);
  EXPECT_NE(page.find("<td>inference</td><td>1</td><td>6.0</td><td>$8.00</td>"), std::string::npos);
  EXPECT_EQ(page.find("(idle capacity)"), std::string::npos);
}

TEST(OneMoneyRule, TheCostReportChargesEachTeamTheSameAndNothingIdle) {
  MeteredHour hour;
  hour.Run();
  std::unique_ptr<AuditReader> reader = std::move(hour.store->OpenReader()).value();
  report::ReportQuery query;
  query.from = kHourStart;
  query.to = kHourStart + Seconds(3600);
  query.as_of = query.to;
  query.min_billed = Seconds(0);
  Result<report::CostFacts> facts = report::BuildCostFacts(*reader, query);
  ASSERT_TRUE(facts.ok()) << facts.error().ToString();
  std::map<std::string, double> by_team;
  double idle = 0;
  for (const report::CostLine& line : facts->lines) {
    if (line.allocation < 0) {
      idle += line.m.cost_usd;
    } else {
      by_team[facts->allocations[static_cast<size_t>(line.allocation)].team] += line.m.cost_usd;
    }
  }
  EXPECT_NEAR(by_team["ml"], kEachTeamUsdPerHour, 1e-9);
  EXPECT_NEAR(by_team["search"], kEachTeamUsdPerHour, 1e-9);
  EXPECT_NEAR(idle, 0, 1e-9);
  EXPECT_NEAR(facts->total.cost_usd, kNodeUsdPerHour, 1e-9);
}

}  // namespace
}  // namespace gpuscaler
