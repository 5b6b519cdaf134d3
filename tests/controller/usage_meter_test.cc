// The usage meter's attribution: teams (the unit's, else its class's), busy
// GPU time from measured utilisation (never a copy of allocated) or from the
// GPU time a work source measured (the simulator), and this
// month's spend by team, restored from the store after a restart; open
// intervals written as they grow and replaced by their final rows.
#include "gpuscaler/controller/usage_meter.h"

#include <gtest/gtest.h>

#include <memory>

#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler {
namespace {

Catalog FourGpuCatalog() {
  Catalog c;
  InstanceType t;
  t.name = "g5.12xlarge";
  t.gpu_count = 4;
  c.instance_types = {t};
  return c;
}

Policy TeamPolicy() {
  Policy p;
  WorkloadClassPolicy search;
  search.name = "inference";
  search.team = "search";
  WorkloadClassPolicy batch;
  batch.name = "batch";  // no team
  p.classes = {search, batch};
  return p;
}

Node FourGpuNode(const std::string& id) {
  Node n;
  n.id = n.instance_id = id;
  n.pool = "gpu";
  n.offering.instance_type = "g5.12xlarge";
  n.offering.usd_per_hour = 4.0;
  return n;
}

DemandUnit Unit(const std::string& cls, int gpus, const std::string& team = "") {
  DemandUnit u;
  u.id = cls + std::to_string(gpus) + team;
  u.workload_class = cls;
  u.gpus = gpus;
  u.team = team;
  return u;
}

const WallTime kStart = FromUnixSeconds(1'793'491'200);  // 2026-11-01T00:00:00Z

struct Meter {
  Catalog catalog = FourGpuCatalog();
  std::unique_ptr<SqliteAuditStore> store = std::move(SqliteAuditStore::Open(":memory:")).value();
  UsageMeter meter{store.get(), catalog, Seconds(3600)};
  Node node = FourGpuNode("i-1");

  // One node: 2 GPUs of inference (team search, from its class), 1 GPU of a
  // unit labelled team vision, 1 GPU of batch (no team); one hour.
  void RunAnHour(std::optional<double> utilization) {
    meter.SetClassTeams(TeamPolicy());
    meter.AddNode("i-1", kStart);
    meter.SetRunning("i-1", {Unit("inference", 2), Unit("inference", 1, "vision"), Unit("batch", 1)});
    meter.SetUtilization("i-1", utilization);
    ASSERT_TRUE(meter.Accumulate(kStart, {node}).ok());
    ASSERT_TRUE(meter.Accumulate(kStart + Seconds(3600), {node}).ok());
  }
  std::vector<UsageRow> Rows() {
    std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
    return std::move(reader->UsageOverlapping(kStart, kStart + Seconds(86400))).value();
  }
};

TEST(UsageMeter, RowsCarryTheUnitsTeamElseTheClasssAndSpendSplitsByTeam) {
  Meter m;
  m.RunAnHour(std::nullopt);
  std::map<std::pair<std::string, std::string>, double> allocated;
  for (const UsageRow& r : m.Rows()) allocated[{r.usage.workload_class, r.usage.team}] = r.usage.gpu_seconds_allocated;
  const std::map<std::pair<std::string, std::string>, double> want = {
      {{"inference", "search"}, 7200}, {{"inference", "vision"}, 3600}, {{"batch", ""}, 3600}};
  EXPECT_EQ(allocated, want);
  EXPECT_DOUBLE_EQ(m.meter.month_to_date_usd(), 4.0);
  const std::map<std::string, double> by_team = m.meter.month_to_date_usd_by_team();
  ASSERT_EQ(by_team.size(), 2u);  // batch has no team: no team's spend
  EXPECT_DOUBLE_EQ(by_team.at("search"), 2.0);
  EXPECT_DOUBLE_EQ(by_team.at("vision"), 1.0);
}

TEST(UsageMeter, OpenIntervalsAreWrittenAtTheCadenceAndReplacedByTheirFinalRows) {
  // Intervals end on whole hours (kStart is one).
  Meter m;
  m.meter.SetOpenIntervalCadence(Seconds(300));
  m.meter.SetClassTeams(TeamPolicy());
  m.meter.AddNode("i-1", kStart);
  m.meter.SetRunning("i-1", {Unit("inference", 2)});
  ASSERT_TRUE(m.meter.Accumulate(kStart, {m.node}).ok());
  auto inference_rows = [&m] {
    std::vector<UsageRecord> out;
    for (const UsageRow& r : m.Rows()) out.push_back(r.usage);
    return out;
  };
  // At ten minutes: one open row [start, +10 min) of 2 GPUs.
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(600), {m.node}).ok());
  ASSERT_TRUE(m.meter.WriteOpenIntervals(kStart + Seconds(600), {m.node}).ok());
  std::vector<UsageRecord> rows = inference_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].start, kStart);
  EXPECT_EQ(rows[0].end, kStart + Seconds(600));
  EXPECT_DOUBLE_EQ(rows[0].gpu_seconds_allocated, 1200);
  // Two minutes later is within the cadence: nothing written.
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(720), {m.node}).ok());
  ASSERT_TRUE(m.meter.WriteOpenIntervals(kStart + Seconds(720), {m.node}).ok());
  rows = inference_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].end, kStart + Seconds(600));
  // At fifteen minutes the stretch since the last write is a row of its own
  // (the current rate: one GPU held from ten minutes on).
  m.meter.SetRunning("i-1", {Unit("inference", 1)});
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(900), {m.node}).ok());
  ASSERT_TRUE(m.meter.WriteOpenIntervals(kStart + Seconds(900), {m.node}).ok());
  rows = inference_rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].start, kStart + Seconds(600));
  EXPECT_EQ(rows[1].end, kStart + Seconds(900));
  EXPECT_DOUBLE_EQ(rows[1].gpu_seconds_allocated, 2 * 120 + 1 * 180);
  // The full hour's row replaces the open ones: one row, the whole hour.
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(3600), {m.node}).ok());
  rows = inference_rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].start, kStart);
  EXPECT_EQ(rows[0].end, kStart + Seconds(3600));
  EXPECT_DOUBLE_EQ(rows[0].gpu_seconds_allocated, 2 * 720 + 1 * (3600 - 720));
  // The next interval's open row is a row of its own; the node's end
  // replaces it with its final row.
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(4200), {m.node}).ok());
  ASSERT_TRUE(m.meter.WriteOpenIntervals(kStart + Seconds(4200), {m.node}).ok());
  ASSERT_EQ(inference_rows().size(), 2u);
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(4500), {m.node}).ok());
  ASSERT_TRUE(m.meter.EndNode(m.node, kStart + Seconds(4500)).ok());
  rows = inference_rows();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].start, kStart + Seconds(3600));
  EXPECT_EQ(rows[1].end, kStart + Seconds(4500));
  EXPECT_DOUBLE_EQ(rows[1].gpu_seconds_allocated, 900);
}

TEST(UsageMeter, WithoutACadenceNoOpenIntervalIsWritten) {
  Meter m;
  m.meter.AddNode("i-1", kStart);
  m.meter.SetRunning("i-1", {Unit("inference", 2)});
  ASSERT_TRUE(m.meter.Accumulate(kStart, {m.node}).ok());
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(1800), {m.node}).ok());
  ASSERT_TRUE(m.meter.WriteOpenIntervals(kStart + Seconds(1800), {m.node}).ok());
  EXPECT_TRUE(m.Rows().empty());
}

TEST(UsageMeter, BusyTimeIsAllocatedTimesMeasuredUtilisationAndNotMeasuredWithout) {
  struct Case {
    std::string name;
    std::optional<double> utilization;
    std::optional<double> busy_of_7200;  // inference/search's busy GPU-seconds
  };
  const std::vector<Case> cases = {
      {"measured", 0.25, 1800.0},
      {"above one is capped", 1.7, 7200.0},
      {"not measured", std::nullopt, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Meter m;
    m.RunAnHour(c.utilization);
    bool found = false;
    for (const UsageRow& r : m.Rows()) {
      if (r.usage.team != "search") continue;
      found = true;
      EXPECT_EQ(r.usage.gpu_seconds_busy, c.busy_of_7200);
    }
    EXPECT_TRUE(found);
  }
}

TEST(UsageMeter, AnIntervalMeasuredOnlyInPartHasNoBusyTime) {
  Meter m;
  m.meter.AddNode("i-1", kStart);
  m.meter.SetRunning("i-1", {Unit("batch", 4)});
  ASSERT_TRUE(m.meter.Accumulate(kStart, {m.node}).ok());
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(1800), {m.node}).ok());  // not measured
  m.meter.SetUtilization("i-1", 0.9);
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(3600), {m.node}).ok());
  std::vector<UsageRow> rows = m.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].usage.gpu_seconds_busy.has_value());
}

// A work source that knows when each unit held its GPUs (the simulator):
// its GPU-seconds are the rows' allocated and busy time, not the running
// work sampled at Accumulate, and the team comes from the unit, else its class.
TEST(UsageMeter, HeldGpuTimeFromTheWorkSourceIsAllocatedAndBusyInsteadOfSampling) {
  Meter m;
  m.meter.SetClassTeams(TeamPolicy());
  m.meter.AddNode("i-1", kStart);
  // Sampled at Accumulate this would be 4 GPUs × 1 h of batch.
  m.meter.SetRunning("i-1", {Unit("batch", 4)});
  ASSERT_TRUE(m.meter.Accumulate(kStart, {m.node}).ok());
  HeldGpuSeconds first;
  first["i-1"][{"inference", ""}] = 1000;
  first["i-1"][{"inference", "vision"}] = 500;
  ASSERT_TRUE(m.meter.AddHeld(first).ok());
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(1800), {m.node}).ok());
  HeldGpuSeconds second;
  second["i-1"][{"inference", ""}] = 2000;
  ASSERT_TRUE(m.meter.AddHeld(second).ok());
  ASSERT_TRUE(m.meter.Accumulate(kStart + Seconds(3600), {m.node}).ok());
  EXPECT_TRUE(m.Rows().empty()) << "with held time the full interval is written after the tick's node ends";
  ASSERT_TRUE(m.meter.FlushFullIntervals(kStart + Seconds(3600), {m.node}).ok());
  std::map<std::pair<std::string, std::string>, std::pair<double, std::optional<double>>> got;
  for (const UsageRow& r : m.Rows()) {
    got[{r.usage.workload_class, r.usage.team}] = {r.usage.gpu_seconds_allocated, r.usage.gpu_seconds_busy};
  }
  const std::map<std::pair<std::string, std::string>, std::pair<double, std::optional<double>>> want = {
      {{"inference", "search"}, {3000.0, 3000.0}}, {{"inference", "vision"}, {500.0, 500.0}}};
  EXPECT_EQ(got, want);
}

// A node that ended between two ticks, seen gone at the second one: its last
// row ends at its end, where its held time ends, not at the tick.
TEST(UsageMeter, HeldGpuTimeOfANodeThatEndedBetweenTicksEndsAtItsEnd) {
  Meter m;
  m.meter.AddNode("i-1", kStart);
  ASSERT_TRUE(m.meter.AddHeld({}).ok());
  ASSERT_TRUE(m.meter.Accumulate(kStart, {m.node}).ok());
  HeldGpuSeconds held;
  held["i-1"][{"batch", ""}] = 4 * 3000.0;  // 4 GPUs until the node ended at 50 min
  ASSERT_TRUE(m.meter.AddHeld(held).ok());
  const WallTime tick = kStart + Seconds(3600), end = kStart + Seconds(3000);
  ASSERT_TRUE(m.meter.Accumulate(tick, {m.node}).ok());
  ASSERT_TRUE(m.meter.EndNode(m.node, end).ok());
  ASSERT_TRUE(m.meter.FlushFullIntervals(tick, {}).ok());
  std::vector<UsageRow> rows = m.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].usage.end, end);
  EXPECT_DOUBLE_EQ(rows[0].usage.gpu_seconds_allocated, 12000);
  EXPECT_EQ(rows[0].usage.gpu_seconds_busy, 12000.0);
}

TEST(UsageMeter, HeldGpuTimeOnANodeItDoesNotMeterIsAnErrorNamingIt) {
  Meter m;
  m.meter.AddNode("i-1", kStart);
  HeldGpuSeconds held;
  held["i-1"][{"batch", ""}] = 100;
  held["i-gone"][{"batch", ""}] = 100;
  Status s = m.meter.AddHeld(held);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("i-gone"), std::string::npos) << s.error().message();
  // The metered node's time is kept.
  ASSERT_TRUE(m.meter.Flush(kStart + Seconds(600), {m.node}).ok());
  std::vector<UsageRow> rows = m.Rows();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].usage.gpu_seconds_allocated, 100);
}

TEST(UsageMeter, SpendByTeamIsRestoredFromThisMonthsUsageRows) {
  Meter m;
  m.RunAnHour(std::nullopt);
  NodeLaunchRecord launch;
  launch.instance_id = "i-1";
  launch.node_id = "i-1";
  launch.pool = "gpu";
  launch.offering = m.node.offering;
  launch.gpu_count = 4;
  launch.launch_time = kStart;
  ASSERT_TRUE(m.store->RecordNodeLaunch(launch).ok());
  const WallTime now = kStart + Seconds(3600);
  Result<std::vector<NodeLifecycle>> history = m.store->NodeLifecycles(UsageMeter::MonthStart(now), now);
  ASSERT_TRUE(history.ok());

  UsageMeter restarted(m.store.get(), m.catalog, Seconds(3600));
  ASSERT_TRUE(restarted.RestoreMonth(*history, now).ok());
  EXPECT_DOUBLE_EQ(restarted.month_to_date_usd(), 4.0);
  EXPECT_EQ(restarted.month_to_date_usd_by_team(), m.meter.month_to_date_usd_by_team());
}

}  // namespace
}  // namespace gpuscaler
