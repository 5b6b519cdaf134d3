// Trace-driven scenarios: demand series become jobs (SeriesToJobs), a job's
// tolerance of a move follows its policy class (ApplyClassBehaviour), and
// jobs that need no GPU keep off pools with the GPU taint (ApplyPoolTaints).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "gpuscaler/policy/loader.h"
#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/series_jobs.h"
#include "sim/trace_readers.h"

namespace gpuscaler::sim {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(GPUSCALER_SOURCE_DIR) + "/sim/testdata/" + name;
}

Trace OneSeries(std::vector<std::pair<int64_t, double>> points, const std::string& cls = "vc") {
  Trace t;
  DemandSeries s{cls, "gpus", {}};
  for (auto [at, v] : points) s.points.push_back({Seconds(at), v});
  t.series.push_back(s);
  t.span = Seconds(points.back().first);
  return t;
}

struct JobView {
  int64_t submit;
  int64_t duration;
  int gpus;
};

std::vector<JobView> View(const Trace& t) {
  std::vector<JobView> out;
  for (const TraceJob& j : t.jobs) out.push_back({j.submit.count(), j.duration.count(), j.unit.gpus});
  return out;
}

TEST(SeriesToJobs, RisesSubmitNodeSizedJobsAndFallsEndTheNewestFirst) {
  // 0: 10 GPUs (8 + 2), 60: 13 (+3), 120: 9 (-4: the 3 of t=60 and 1 of the 2),
  // 180: 9, last point; open jobs end one step later at 240.
  const Trace t = SeriesToJobs(OneSeries({{0, 10}, {60, 13}, {120, 9}, {180, 9}}));
  ASSERT_TRUE(t.series.empty());
  EXPECT_TRUE(t.behaviour_from_policy);
  const std::vector<JobView> got = View(t);
  // Sorted by submit, then by the order they were closed.
  const std::vector<JobView> want = {
      {0, 120, 1},  // the part of the 2-GPU job that ended at 120
      {0, 240, 8},  // the baseload
      {0, 240, 1},  // the rest of the 2-GPU job
      {60, 60, 3},
  };
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].submit, want[i].submit);
    EXPECT_EQ(got[i].duration, want[i].duration);
    EXPECT_EQ(got[i].gpus, want[i].gpus);
  }
  for (const TraceJob& j : t.jobs) {
    EXPECT_EQ(j.unit.workload_class, "vc");
    EXPECT_TRUE(j.unit.interruptible);
    EXPECT_EQ(j.unit.expected_runtime, j.duration);
  }
  EXPECT_EQ(t.jobs[0].unit.id, "vc/0");
  EXPECT_EQ(t.jobs[3].unit.id, "vc/3");
}

TEST(SeriesToJobs, JobGpuSecondsEqualTheLevelsIntegral) {
  std::vector<std::pair<int64_t, double>> pts;
  // A deterministic zig-zag with big rises and falls to 0.
  int64_t level = 0;
  for (int i = 0; i < 500; ++i) {
    level = (level * 37 + 11 + i) % 41;
    if (i % 97 == 0) level = 0;
    pts.push_back({int64_t{i} * 60, static_cast<double>(level)});
  }
  const Trace t = SeriesToJobs(OneSeries(pts));
  double want = 0;
  for (size_t i = 0; i < pts.size(); ++i) want += pts[i].second * 60;  // the last holds one step
  double got = 0;
  for (const TraceJob& j : t.jobs) {
    EXPECT_GE(j.unit.gpus, 1);
    EXPECT_LE(j.unit.gpus, 8);
    EXPECT_GT(j.duration.count(), 0);
    got += j.unit.gpus * static_cast<double>(j.duration.count());
  }
  EXPECT_DOUBLE_EQ(got, want);
  // Deterministic.
  const Trace again = SeriesToJobs(OneSeries(pts));
  ASSERT_EQ(again.jobs.size(), t.jobs.size());
  for (size_t i = 0; i < t.jobs.size(); ++i) EXPECT_EQ(again.jobs[i].unit.id, t.jobs[i].unit.id);
}

TEST(SeriesToJobs, KeepsSeriesThatAreNotGpus) {
  Trace t = OneSeries({{0, 3}, {60, 0}});
  t.series.push_back({"genai", "jobs", {{Seconds(0), 5}}});
  const Trace out = SeriesToJobs(t);
  ASSERT_EQ(out.series.size(), 1u);
  EXPECT_EQ(out.series[0].unit, "jobs");
  EXPECT_EQ(out.jobs.size(), 1u);
}

// Before: a Helios trace (series only) gave a scenario with no jobs, so
// `gpuscaler sim` refused it ("the trace has no jobs to replay").
TEST(TraceScenario, HeliosMinuteSeriesBecomeJobsThatReplay) {
  Result<Trace> trace = ReadTrace(Fixture("traces/helios_minute.csv"), TraceFormat::kHeliosMinute);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  ASSERT_TRUE(trace->jobs.empty());
  Scenario s = MakeTraceScenario(std::move(trace).value(), {}, BuiltinCatalog(), DefaultPolicy(), 1, 1);
  ASSERT_FALSE(s.trace.jobs.empty());
  std::map<std::string, int> by_class;
  for (const TraceJob& j : s.trace.jobs) by_class[j.unit.workload_class] += 1;
  EXPECT_EQ(by_class.size(), 2u);  // vcA, vcB
  RunSpec spec;
  spec.name = "gpuscaler";
  spec.policy = s.policy;
  RunResult r = RunScenario(s, spec);
  EXPECT_EQ(r.jobs_completed + r.jobs_unfinished, static_cast<int64_t>(s.trace.jobs.size()));
  EXPECT_GT(r.jobs_completed, 0);
}

Policy OpenbLikePolicy() {
  Policy p = DefaultPolicy();
  WorkloadClassPolicy inference;
  inference.name = "inference";
  inference.interruptible = true;
  inference.checkpoint_interval = Seconds(60);
  inference.restart_cost = Seconds(180);
  inference.priority = 10;
  WorkloadClassPolicy batch;
  batch.name = "batch";
  batch.interruptible = false;
  batch.checkpoint_interval = Seconds(900);
  p.classes = {p.classes[0], inference, batch};
  return p;
}

// Before: openb's latency-sensitive pods stayed non-interruptible whatever
// the policy said, so a policy that lets serving replicas use spot behind an
// on-demand floor could not be replayed; and a class the policy marks
// non-interruptible could still be scheduled on spot by the workload.
TEST(TraceScenario, PublicTraceJobsTakeTheirClassBehaviourFromThePolicy) {
  Result<Trace> trace = ReadTrace(Fixture("traces/openb_pods.csv"), TraceFormat::kAlibabaOpenb);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  EXPECT_TRUE(trace->behaviour_from_policy);
  Trace t = *trace;
  ApplyClassBehaviour(OpenbLikePolicy(), &t);
  for (const TraceJob& j : t.jobs) {
    SCOPED_TRACE(j.unit.id);
    if (j.unit.workload_class == "inference") {
      EXPECT_TRUE(j.unit.interruptible);
      EXPECT_EQ(j.unit.checkpoint_interval, Seconds(60));
      EXPECT_EQ(j.unit.restart_cost, Seconds(180));
      EXPECT_EQ(j.unit.priority, 10);
    } else {
      EXPECT_FALSE(j.unit.interruptible);
      EXPECT_EQ(j.unit.checkpoint_interval, Seconds(900));
    }
  }
  // Classes the policy does not name keep the reader's values.
  Trace untouched = *trace;
  ApplyClassBehaviour(DefaultPolicy(), &untouched);
  for (size_t i = 0; i < untouched.jobs.size(); ++i) {
    EXPECT_EQ(untouched.jobs[i].unit.interruptible, trace->jobs[i].unit.interruptible);
    EXPECT_EQ(untouched.jobs[i].unit.priority, trace->jobs[i].unit.priority);
  }
  // An explicit override in the reader's options is the caller's word.
  TraceOptions o;
  o.interruptible = true;
  Result<Trace> overridden = ReadTrace(Fixture("traces/openb_pods.csv"), TraceFormat::kAlibabaOpenb, o);
  ASSERT_TRUE(overridden.ok());
  EXPECT_FALSE(overridden->behaviour_from_policy);
}

TEST(TraceScenario, OurJobFormatKeepsItsRowsButANonInterruptibleClassWins) {
  Result<Trace> trace = ReadTrace(Fixture("traces/jobs.csv"), TraceFormat::kGpuscalerJobs);
  ASSERT_TRUE(trace.ok()) << trace.error().ToString();
  EXPECT_FALSE(trace->behaviour_from_policy);
  Policy p = DefaultPolicy();
  for (const TraceJob& j : trace->jobs) {
    if (p.FindClass(j.unit.workload_class) == nullptr) {
      WorkloadClassPolicy c;
      c.name = j.unit.workload_class;
      c.interruptible = false;
      c.checkpoint_interval = Seconds(7);
      p.classes.push_back(c);
    }
  }
  Trace t = *trace;
  ApplyClassBehaviour(p, &t);
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    SCOPED_TRACE(t.jobs[i].unit.id);
    const bool class_allows = p.FindClass(t.jobs[i].unit.workload_class)->interruptible;
    EXPECT_EQ(t.jobs[i].unit.interruptible, trace->jobs[i].unit.interruptible && class_allows);
    EXPECT_EQ(t.jobs[i].unit.checkpoint_interval, trace->jobs[i].unit.checkpoint_interval);
  }
}

TraceJob CpuOrGpuJob(const std::string& id, const std::string& cls, int gpus,
                     const std::string& pinned = "") {
  TraceJob j;
  j.submit = Seconds(0);
  j.duration = Seconds(600);
  j.unit.id = id;
  j.unit.workload_class = cls;
  j.unit.gpus = gpus;
  j.unit.cpu_milli = 8000;
  j.unit.memory_mib = 32768;
  j.unit.pool = pinned;
  return j;
}

Policy GpuTaintPolicy() {
  Policy p = DefaultPolicy();
  NodePoolPolicy gpu;
  gpu.name = "gpu";
  gpu.taints = {{kGpuTaintKey, "true", "NoSchedule"}};
  NodePoolPolicy soft;  // a preference keeps nothing off
  soft.name = "soft";
  soft.taints = {{kGpuTaintKey, "true", "PreferNoSchedule"}};
  NodePoolPolicy cpu;
  cpu.name = "cpu";
  cpu.families = {"m7i"};
  p.pools = {gpu, soft, cpu};
  WorkloadClassPolicy mixed;
  mixed.name = "mixed";
  mixed.pools = {"gpu", "cpu"};
  WorkloadClassPolicy gpu_only;
  gpu_only.name = "gpu-only";
  gpu_only.pools = {"gpu"};
  WorkloadClassPolicy soft_first;
  soft_first.name = "soft-first";
  soft_first.pools = {"soft", "gpu", "cpu"};
  p.classes = {mixed, gpu_only, soft_first};
  return p;
}

// Before: trace jobs that need no GPU were scheduled first-fit on any node
// with room, GPU nodes included, although the pools' nvidia.com/gpu taint
// keeps CPU pods off them in a cluster; a fixed fleet then lacked the CPU of
// its GPU nodes for GPU work, and a NodePool in file order bought GPU nodes
// for CPU pods.
TEST(TraceScenario, JobsThatNeedNoGpuKeepOffPoolsWithTheGpuTaint) {
  Trace t;
  t.jobs = {CpuOrGpuJob("gpu-work", "mixed", 1),       CpuOrGpuJob("cpu-work", "mixed", 0),
            CpuOrGpuJob("cpu-nowhere", "gpu-only", 0), CpuOrGpuJob("cpu-pinned", "gpu-only", 0, "gpu"),
            CpuOrGpuJob("cpu-soft", "soft-first", 0),  CpuOrGpuJob("cpu-no-class", "unknown", 0)};
  t.span = Seconds(0);
  Scenario s = MakeTraceScenario(t, {}, BuiltinCatalog(), GpuTaintPolicy(), 1, 1);
  std::map<std::string, std::string> pool_of;
  for (const TraceJob& j : s.trace.jobs) pool_of[j.unit.id] = j.unit.pool;
  const std::map<std::string, std::string> want = {
      {"gpu-work", ""},          // needs a GPU: tolerates the taint, any pool of its class
      {"cpu-work", "cpu"},       // only the cpu pool is left to it
      {"cpu-pinned", "gpu"},     // a pin the trace gave is kept
      {"cpu-soft", "soft"},      // the first usable pool: a PreferNoSchedule taint bars nothing
      {"cpu-no-class", "soft"},  // no class: every pool is a candidate
  };
  EXPECT_EQ(pool_of, want);
  ASSERT_EQ(s.trace.stats.warnings.size(), 1u);
  EXPECT_EQ(s.trace.stats.warnings[0],
            "1 jobs need no GPU and every pool they may use carries the nvidia.com/gpu taint; they are not "
            "replayed");

  // Without a pool with the taint nothing changes.
  Policy untainted = GpuTaintPolicy();
  untainted.pools[0].taints.clear();
  Scenario plain = MakeTraceScenario(t, {}, BuiltinCatalog(), untainted, 1, 1);
  ASSERT_EQ(plain.trace.jobs.size(), t.jobs.size());
  for (const TraceJob& j : plain.trace.jobs) {
    SCOPED_TRACE(j.unit.id);
    EXPECT_EQ(j.unit.pool, j.unit.id == "cpu-pinned" ? "gpu" : "");
  }
  EXPECT_TRUE(plain.trace.stats.warnings.empty());
}

}  // namespace
}  // namespace gpuscaler::sim
