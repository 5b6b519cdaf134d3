// The workload model in a replay: the work an interruption loses and the
// requeue, the runtime the planner is told, checkpoints on notice, no
// non-interruptible work on spot, and the floor split's domains.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/runner.h"
#include "sim/scenario.h"
#include "sim/workload.h"

namespace gpuscaler::sim::replay_workload_test {
namespace {

// Job "train" of class "training", submitted at 0, for the workload tests.
TraceJob TrainJob(Seconds duration, int gpus) {
  TraceJob j;
  j.submit = Seconds(0);
  j.duration = duration;
  j.unit.id = "train";
  j.unit.workload_class = "training";
  j.unit.gpus = gpus;
  return j;
}

// A g5.12xlarge (4 GPUs) in us-east-1a of pool "p", for the workload tests.
Instance G5Node(const std::string& id, CapacityType capacity_type) {
  Instance node;
  node.instance_id = id;
  node.pool = "p";
  node.offering.instance_type = "g5.12xlarge";
  node.offering.zone = "us-east-1a";
  node.offering.capacity_type = capacity_type;
  return node;
}

// One job, one node, an interruption: the work since the last checkpoint is
// lost and the job is requeued with the rest.
TEST(Workload, InterruptionLosesWorkSinceTheLastCheckpointAndRequeues) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(3 * 3600), 4);
  j.unit.checkpoint_interval = Seconds(1800);
  j.unit.restart_cost = Seconds(600);
  trace.jobs = {j};
  Policy policy;
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, policy, t0);

  Instance node = G5Node("i-1", CapacityType::kSpot);
  w.OnReady(node, 4);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  ASSERT_EQ(w.running(), 1);
  ASSERT_EQ(w.RunningOn("i-1").size(), 1u);

  // 70 minutes in: two checkpoints (60 min) saved, 10 minutes lost.
  w.OnNotice("i-1", t0 + Seconds(70 * 60));
  w.OnGone("i-1", t0 + Seconds(70 * 60), /*interrupted=*/true);
  EXPECT_EQ(w.running(), 0);
  EXPECT_EQ(w.queued(), 1);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * 600, 1e-9);
  EXPECT_EQ(w.stats().requeues, 1);

  // On a new node it needs the restart cost plus the 120 minutes left.
  node.instance_id = "i-2";
  w.OnReady(node, 4);
  const WallTime t1 = t0 + Seconds(80 * 60);
  w.Schedule(t1);
  ASSERT_EQ(w.running(), 1);
  EXPECT_EQ(*w.NextEventTime(), t1 + Seconds(600 + 120 * 60));
  w.RunEventsUntil(*w.NextEventTime());
  EXPECT_EQ(w.stats().jobs_completed, 1);
  const auto classes = w.ClassResults(t1 + Seconds(10 * 3600));
  EXPECT_EQ(classes.at("training").waits_s, std::vector<int64_t>{10 * 60});
}

// The planner is told what is left of a job's real duration, or, with
// UseClassRuntimes (sim --runtime-knowledge class), its class's
// shape.expected_runtime, as the daemon tells it; the job still runs its
// real duration either way.
TEST(Workload, UnitsCarryTheJobsRemainingRuntimeOrTheirClasssExpectedRuntime) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(5 * 3600), 1);
  trace.jobs = {j};
  j.unit.id = "other";
  j.unit.workload_class = "unnamed";
  trace.jobs.push_back(j);
  Policy policy;
  WorkloadClassPolicy training;
  training.name = "training";
  training.expected_runtime = Seconds(2 * 3600);
  policy.classes = {training};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Instance node = G5Node("i-1", CapacityType::kOnDemand);

  for (bool class_runtimes : {false, true}) {
    SCOPED_TRACE(class_runtimes ? "class" : "exact");
    Workload w(trace, catalog, policy, t0);
    if (class_runtimes) w.UseClassRuntimes(policy);
    w.RunEventsUntil(t0);
    w.Schedule(t0);
    ASSERT_EQ(w.Pending().size(), 2u);
    const Seconds training_runtime = class_runtimes ? Seconds(2 * 3600) : Seconds(5 * 3600);
    const Seconds unnamed_runtime = class_runtimes ? Seconds(3600) : Seconds(5 * 3600);
    for (const DemandUnit& u : w.Pending())
      EXPECT_EQ(u.expected_runtime, u.id == "train" ? training_runtime : unnamed_runtime) << u.id;

    w.OnReady(node, 4);
    w.Schedule(t0);
    ASSERT_EQ(w.RunningOn("i-1").size(), 2u);
    for (const DemandUnit& u : w.RunningOn("i-1"))
      EXPECT_EQ(u.expected_runtime, u.id == "train" ? training_runtime : unnamed_runtime) << u.id;
    EXPECT_EQ(*w.NextEventTime(), t0 + Seconds(5 * 3600));
  }
}

// A job that checkpoints on notice keeps its progress at the notice: only
// the two minutes between notice and reclaim are lost, where the periodic
// checkpoint alone would lose 40 minutes.
TEST(Workload, AJobThatCheckpointsOnNoticeLosesOnlyTheNoticeWindow) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j = TrainJob(Seconds(3 * 3600), 4);
  j.unit.checkpoint_interval = Seconds(3600);
  j.unit.checkpoint_on_notice = true;
  j.unit.restart_cost = Seconds(600);
  trace.jobs = {j};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, Policy{}, t0);
  Instance node = G5Node("i-1", CapacityType::kSpot);
  w.OnReady(node, 4);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  ASSERT_EQ(w.running(), 1);

  // Notice at 98 minutes (saved: 98), reclaimed at 100 (lost: 2).
  w.OnNotice("i-1", t0 + Seconds(98 * 60));
  w.OnGone("i-1", t0 + Seconds(100 * 60), /*interrupted=*/true);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * 120, 1e-9);

  // The next run needs its restart cost plus the 82 minutes after the notice.
  node.instance_id = "i-2";
  w.OnReady(node, 4);
  const WallTime t1 = t0 + Seconds(110 * 60);
  w.Schedule(t1);
  ASSERT_EQ(w.running(), 1);
  EXPECT_EQ(*w.NextEventTime(), t1 + Seconds(600 + 82 * 60));

  // A later interruption without a notice first (the node vanishes) falls
  // back to the periodic checkpoint of that run: nothing saved at 30 min.
  w.OnGone("i-2", t1 + Seconds(600 + 30 * 60), /*interrupted=*/true);
  EXPECT_NEAR(w.stats().lost_gpu_seconds, 4.0 * (120 + 30 * 60), 1e-9);
}

TEST(Workload, NonInterruptibleWorkNeverLandsOnSpot) {
  const Catalog catalog = BuiltinCatalog();
  Trace trace;
  TraceJob j;
  j.duration = Seconds(600);
  j.unit.id = "eval";
  j.unit.gpus = 1;
  j.unit.interruptible = false;
  trace.jobs = {j};
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, Policy{}, t0);
  Instance spot;
  spot.instance_id = "i-spot";
  spot.offering.instance_type = "g5.xlarge";
  spot.offering.capacity_type = CapacityType::kSpot;
  w.OnReady(spot, 1);
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  EXPECT_EQ(w.running(), 0);
  Instance od = spot;
  od.instance_id = "i-od";
  od.offering.capacity_type = CapacityType::kOnDemand;
  w.OnReady(od, 1);
  w.Schedule(t0 + Seconds(60));
  EXPECT_EQ(w.running(), 1);
  EXPECT_EQ(w.RunningOn("i-od").size(), 1u);
}

// With the floor split on (the greedy and karpenter runs), a job of a split
// class binds only to a node labelled with one of its class's domains, in a
// domain with the fewest of the class's jobs among those that have nodes:
// 0.5 → domains "1" (on-demand) and "2" (spot), so three jobs go 2 / 1 and
// none to the unlabelled node listed first; a job of an interruptible class
// with max_spot_share 0 goes on on-demand only.
TEST(Workload, SplitFloorClassesBindsAJobOnlyInADomainWithTheFewestOfItsClass) {
  const Catalog catalog = BuiltinCatalog();
  Policy policy;
  WorkloadClassPolicy inference;
  inference.name = "inference";
  inference.max_spot_share = 0.5;
  WorkloadClassPolicy batch;
  batch.name = "batch";
  batch.max_spot_share = 0;
  policy.classes = {inference, batch};
  Trace trace;
  for (int i = 0; i < 3; ++i) {
    TraceJob j;
    j.duration = Seconds(3600);
    j.unit.id = "inf" + std::to_string(i);
    j.unit.workload_class = "inference";
    j.unit.gpus = 1;
    trace.jobs.push_back(j);
  }
  TraceJob b = trace.jobs[0];
  b.unit.id = "batch";
  b.unit.workload_class = "batch";
  trace.jobs.push_back(b);
  const WallTime t0 = FromUnixSeconds(1782000000);
  Workload w(trace, catalog, policy, t0);
  w.SplitFloorClasses(policy);
  auto ready = [&](const std::string& id, CapacityType cap, const std::string& domain) {
    Instance n;
    n.instance_id = id;
    n.offering.instance_type = "g5.12xlarge";
    n.offering.capacity_type = cap;
    if (!domain.empty()) n.tags["capacity-spread/inference"] = domain;
    w.OnReady(n, 4);
  };
  ready("i-none", CapacityType::kSpot, "");
  ready("i-od", CapacityType::kOnDemand, "1");
  ready("i-spot", CapacityType::kSpot, "2");
  w.RunEventsUntil(t0);
  w.Schedule(t0);
  EXPECT_EQ(w.running(), 4);
  std::map<std::string, std::vector<std::string>> on;
  for (const std::string id : {"i-none", "i-od", "i-spot"}) {
    for (const DemandUnit& u : w.RunningOn(id)) on[id].push_back(u.id);
  }
  EXPECT_EQ(on["i-none"], std::vector<std::string>{});
  EXPECT_EQ(on["i-od"], (std::vector<std::string>{"inf0", "inf2", "batch"}));
  EXPECT_EQ(on["i-spot"], (std::vector<std::string>{"inf1"}));
}

}  // namespace
}  // namespace gpuscaler::sim::replay_workload_test
