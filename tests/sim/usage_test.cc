// The usage rows a replay writes (`gpuscaler sim --db`): the simulator knows
// when each job held its GPUs, so every row carries measured busy time, the
// rows' busy time adds up to the jobs' GPU time, and busy never exceeds
// allocated (nor allocated the node's GPUs × the row's length). It also
// knows what each interruption lost, and records that.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "gpuscaler/model/builtin_catalog.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"
#include "sim/workload.h"

namespace gpuscaler::sim {
namespace {

class TempDb {
 public:
  TempDb() {
    std::random_device rd;
    path_ = (std::filesystem::path(::testing::TempDir()) /
             ("sim-usage-" + std::to_string(rd()) + "-" + std::to_string(rd()) + ".db"))
                .string();
  }
  ~TempDb() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Replayed {
  RunResult run;
  std::vector<UsageRecord> usage;
  std::map<std::string, int> gpus_by_instance;
};

// Replays `s` with gpuscaler's planner into a fresh store and reads its
// usage rows back.
Replayed ReplayIntoStore(const Scenario& s, const std::string& path) {
  Replayed out;
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.error().ToString();
  if (!store.ok()) return out;
  Result<RunSpec> spec = MakeRunSpec("gpuscaler", s, nullptr);
  EXPECT_TRUE(spec.ok());
  RunOptions options;
  options.store = store->get();
  out.run = RunScenario(s, *spec, options);
  EXPECT_TRUE((*store)->Flush().ok());
  Result<std::vector<UsageRecord>> usage = (*store)->UsageOverlapping(s.start - Seconds(86400),
                                                                      s.start + s.horizon + Seconds(86400));
  EXPECT_TRUE(usage.ok()) << usage.error().ToString();
  if (usage.ok()) out.usage = std::move(*usage);
  for (const InstanceBill& b : out.run.bills) out.gpus_by_instance[b.instance_id] = b.gpu_count;
  return out;
}

// Every row: busy measured, 0 <= busy <= allocated <= GPUs x length.
void CheckRows(const Replayed& r) {
  ASSERT_FALSE(r.usage.empty());
  for (const UsageRecord& u : r.usage) {
    SCOPED_TRACE(u.instance_id + " " + u.workload_class + " " + FormatRfc3339(u.start));
    ASSERT_TRUE(u.gpu_seconds_busy.has_value()) << "busy time not measured";
    EXPECT_GE(*u.gpu_seconds_busy, 0);
    EXPECT_LE(*u.gpu_seconds_busy, u.gpu_seconds_allocated + 1e-9);
    auto gpus = r.gpus_by_instance.find(u.instance_id);
    ASSERT_NE(gpus, r.gpus_by_instance.end()) << "usage of an instance the cloud never billed";
    const double seconds = std::chrono::duration<double>(u.end - u.start).count();
    EXPECT_LE(u.gpu_seconds_allocated, gpus->second * seconds + 1e-6);
  }
}

double SumBusy(const std::vector<UsageRecord>& usage) {
  double sum = 0;
  for (const UsageRecord& u : usage) sum += u.gpu_seconds_busy.value_or(0);
  return sum;
}

// Three on-demand jobs that all finish: the busy time is their GPUs x
// durations, worked out by hand.
TEST(SimUsage, BusyTimeIsTheJobsGpuTimeOnASmallScenario) {
  Trace trace;
  auto job = [&](const char* id, int gpus, int64_t submit_s, int64_t duration_s) {
    TraceJob j;
    j.submit = Seconds(submit_s);
    j.duration = Seconds(duration_s);
    j.unit.id = id;
    j.unit.gpus = gpus;
    j.unit.interruptible = false;  // on-demand only: nothing is interrupted or requeued
    trace.jobs.push_back(j);
  };
  job("one-gpu", 1, 0, 600);
  job("two-gpus", 2, 900, 1800);
  job("four-gpus", 4, 3600, 7200);
  trace.span = Seconds(3600);
  Scenario s = MakeTraceScenario(std::move(trace), {}, BuiltinCatalog(), DefaultPolicy(), 1, 1);
  TempDb db;
  const Replayed r = ReplayIntoStore(s, db.path());
  ASSERT_EQ(r.run.controller_errors, 0);
  ASSERT_EQ(r.run.jobs_completed, 3);
  ASSERT_EQ(r.run.requeues, 0);
  CheckRows(r);
  const double jobs_gpu_seconds = 1 * 600 + 2 * 1800 + 4 * 7200;
  EXPECT_NEAR(SumBusy(r.usage), jobs_gpu_seconds, 1e-6);
  EXPECT_NEAR(r.run.busy_gpu_hours * 3600, jobs_gpu_seconds, 1e-6);
  double allocated = 0;
  for (const UsageRecord& u : r.usage) allocated += u.gpu_seconds_allocated;
  EXPECT_NEAR(allocated, jobs_gpu_seconds, 1e-6);
}

// The committed golden trace with spot interruptions and price moves: jobs
// are evicted and requeued mid-interval, and the rows still add up to the
// GPU time the workload model counted.
TEST(SimUsage, BusyTimeAddsUpToTheWorkloadsGpuTimeThroughInterruptions) {
  Result<Trace> trace = ReadTrace(std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/golden/small_jobs.csv",
                                  TraceFormat::kGpuscalerJobs);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  Scenario s = MakeTraceScenario(std::move(trace).value(), {}, BuiltinCatalog(), DemoPolicy(), 11, 1);
  s.cloud.hazard_by_family = {{"g5", 0.3}, {"g6", 0.3}};
  s.cloud.price_walk.enabled = true;
  TempDb db;
  const Replayed r = ReplayIntoStore(s, db.path());
  ASSERT_EQ(r.run.controller_errors, 0);
  ASSERT_GT(r.run.interruptions, 0) << "the scenario should evict running jobs";
  ASSERT_GT(r.run.requeues, 0);
  CheckRows(r);
  EXPECT_NEAR(SumBusy(r.usage), r.run.busy_gpu_hours * 3600, 1e-6 * r.run.busy_gpu_hours * 3600);
  EXPECT_LE(SumBusy(r.usage), r.run.paid_gpu_hours * 3600);
}

// The workload reports each interruption with the work its jobs lost, per
// class and the job's own team, once measuring has started: what
// WorkloadStats::lost_gpu_seconds adds up.
TEST(SimLostWork, EachInterruptionComesWithTheWorkItsJobsLost) {
  Trace trace;
  auto job = [&](const char* id, const char* cls, const char* team, int gpus, int64_t checkpoint_s) {
    TraceJob j;
    j.duration = Seconds(3 * 3600);
    j.unit.id = id;
    j.unit.workload_class = cls;
    j.unit.team = team;
    j.unit.gpus = gpus;
    j.unit.checkpoint_interval = Seconds(checkpoint_s);
    trace.jobs.push_back(j);
  };
  job("a", "training", "ml", 2, 1800);
  job("b", "eval", "", 1, 0);  // no checkpoints: everything done is lost
  const Catalog catalog = BuiltinCatalog();
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, Policy{}, t0);
  ASSERT_TRUE(w.TakeLostWork().has_value());  // starts measuring
  Instance node;
  node.instance_id = "i-1";
  node.pool = "p";
  node.offering.instance_type = "g5.12xlarge";
  node.offering.zone = "us-east-1a";
  node.offering.capacity_type = CapacityType::kSpot;
  w.OnReady(node, 4);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  ASSERT_EQ(w.running(), 2);
  node.instance_id = "i-empty";
  w.OnReady(node, 4);

  // 50 minutes in: "a" saved 30 and loses 20 on 2 GPUs; "b" loses 50 on 1.
  const WallTime at = t0 + Seconds(50 * 60);
  w.OnGone("i-1", at, /*interrupted=*/true);
  w.OnGone("i-empty", at, /*interrupted=*/true);
  std::optional<std::vector<LostWork>> lost = w.TakeLostWork();
  ASSERT_TRUE(lost.has_value());
  ASSERT_EQ(lost->size(), 2u);
  EXPECT_EQ((*lost)[0].instance_id, "i-1");
  EXPECT_EQ((*lost)[0].time, at);
  const std::map<std::pair<std::string, std::string>, double> want = {{{"training", "ml"}, 2.0 * 20 * 60},
                                                                      {{"eval", ""}, 1.0 * 50 * 60}};
  EXPECT_EQ((*lost)[0].gpu_seconds, want);
  EXPECT_EQ((*lost)[1].instance_id, "i-empty");
  EXPECT_TRUE((*lost)[1].gpu_seconds.empty()) << "a node that lost nothing is reported too";
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 2.0 * 20 * 60 + 50 * 60, 1e-9);
  EXPECT_TRUE(w.TakeLostWork()->empty()) << "each interruption is reported once";
}

// A replay into a store records every interruption's lost work, adding up
// to the GPU-hours lost the simulator prints, and the run's cloud.
TEST(SimLostWork, TheStoresLostWorkAddsUpToTheReplaysAndNamesEveryInterruptedNode) {
  Result<Trace> trace = ReadTrace(std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/golden/small_jobs.csv",
                                  TraceFormat::kGpuscalerJobs);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  Scenario s = MakeTraceScenario(std::move(trace).value(), {}, BuiltinCatalog(), DemoPolicy(), 11, 1);
  s.cloud.hazard_by_family = {{"g5", 0.3}, {"g6", 0.3}};
  TempDb db;
  const Replayed r = ReplayIntoStore(s, db.path());
  ASSERT_EQ(r.run.controller_errors, 0);
  ASSERT_GT(r.run.gpu_hours_lost, 0) << "the scenario should lose work";
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db.path());
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  const WallTime from = s.start - Seconds(86400), to = s.start + s.horizon + Seconds(86400);
  std::vector<LostWorkRecord> lost = std::move((*reader)->LostWork(from, to)).value();
  double gpu_seconds = 0;
  std::set<std::string> noted;
  for (const LostWorkRecord& l : lost) {
    gpu_seconds += l.gpu_seconds;
    noted.insert(l.instance_id);
  }
  EXPECT_NEAR(gpu_seconds, r.run.gpu_hours_lost * 3600, 1e-6);
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(from, to);
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  int interrupted = 0;
  for (const NodeRow& n : *nodes) {
    if (n.cause != "interrupted") continue;
    ++interrupted;
    EXPECT_EQ(noted.count(n.launch.instance_id), 1u) << n.launch.instance_id;
  }
  EXPECT_GT(interrupted, 0);
  std::vector<RunRow> runs = std::move((*reader)->Runs()).value();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].cloud.name, "aws");  // the built-in catalog's
  EXPECT_EQ(runs[0].cloud.pool_tags.count(DemoPolicy().pools.front().name), 1u);
}

}  // namespace
}  // namespace gpuscaler::sim
