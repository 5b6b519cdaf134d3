// The usage rows a replay writes (`gpuscaler sim --db`): the simulator knows
// when each job held its GPUs, so every row carries measured busy time, the
// rows' busy time adds up to the jobs' GPU time, and busy never exceeds
// allocated (nor allocated the node's GPUs × the row's length).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>

#include "gpuscaler/model/builtin_catalog.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/store/sqlite_audit_store.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/trace_readers.h"

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

}  // namespace
}  // namespace gpuscaler::sim
