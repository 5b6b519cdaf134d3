#include "gpuscaler/daemon/signal_work_source.h"

#include <gtest/gtest.h>

namespace gpuscaler::daemon {
namespace {

constexpr WallTime kNow = WallTime(Seconds(1790000000));

Catalog TestCatalog() {
  Catalog c;
  InstanceType g4;
  g4.name = "g5.12xlarge";
  g4.family = "g5";
  g4.gpu_model = "NVIDIA-A10G";
  g4.gpu_count = 4;
  g4.vcpus = 48;
  g4.memory_mib = 196608;
  c.instance_types.push_back(g4);
  return c;
}

Policy TestPolicy() {
  Policy p;
  p.pools.push_back(NodePoolPolicy{});
  p.pools[0].name = "gpu";
  WorkloadClassPolicy render;
  render.name = "render";
  render.pools = {"gpu"};
  render.jobs_per_gpu_per_minute = 2.0;
  render.max_queue_wait = Seconds(300);  // 5 min: one GPU drains 10 jobs in time
  render.cpu_milli_per_job = 4000;
  render.memory_mib_per_job = 16384;
  render.queue_depth = SignalQuery{SignalSource::kRabbitMq, "", "/", "render"};
  render.scale_in_utilization_below = 0.2;
  p.classes.push_back(render);
  return p;
}

Node MakeNode(const std::string& id, int64_t launched_s) {
  Node n;
  n.id = id;
  n.instance_id = id;
  n.pool = "gpu";
  n.offering.instance_type = "g5.12xlarge";
  n.launch_time = WallTime(Seconds(launched_s));
  n.state = NodeState::kReady;
  return n;
}

ClassSignal Depth(double v, bool fresh = true) {
  ClassSignal s;
  s.workload_class = "render";
  s.kind = ClassSignal::Kind::kQueueDepth;
  s.reading = signals::MakeReading("rabbitmq", "//render", v, kNow - Seconds(5));
  if (!fresh) s.reading.state = signals::SignalState::kStale;
  return s;
}

ClassSignal Missing() {
  ClassSignal s;
  s.workload_class = "render";
  s.reading = signals::MakeMissingReading("rabbitmq", "//render", "connection refused");
  return s;
}

TEST(SignalWorkSource, TurnsQueueDepthIntoGpusForTheTargetWait) {
  struct Case {
    double depth;
    int want_units;
  };
  const WorkloadClassPolicy cls = TestPolicy().classes[0];
  for (const Case& c : std::vector<Case>{{0, 0}, {1, 1}, {10, 1}, {11, 2}, {95, 10}, {-3, 0}}) {
    SCOPED_TRACE(c.depth);
    EXPECT_EQ(UnitsForQueueDepth(cls, c.depth), c.want_units);
  }
  WorkloadClassPolicy no_target = cls;
  no_target.jobs_per_gpu_per_minute.reset();
  EXPECT_EQ(UnitsForQueueDepth(no_target, 7), 7);  // one unit per queued job
}

TEST(SignalWorkSource, FillsExistingNodesFirstAndLeavesTheRestPending) {
  Catalog catalog = TestCatalog();
  SignalWorkSource w(catalog);
  std::vector<Node> nodes = {MakeNode("i-2", 200), MakeNode("i-1", 100)};
  w.Update(TestPolicy(), {Depth(95)}, nodes, kNow);  // 10 one-GPU units
  EXPECT_EQ(w.RunningOn("i-1").size(), 4u);  // oldest first
  EXPECT_EQ(w.RunningOn("i-2").size(), 4u);
  ASSERT_EQ(w.Pending().size(), 2u);
  EXPECT_EQ(w.Pending()[0].workload_class, "render");
  EXPECT_EQ(w.Pending()[0].gpus, 1);
  EXPECT_EQ(w.DesiredUnits("render"), 10);
}

TEST(SignalWorkSource, AnEmptyQueueEmptiesNodesButABusyNodeKeepsWork) {
  Catalog catalog = TestCatalog();
  SignalWorkSource w(catalog);
  std::vector<Node> nodes = {MakeNode("i-1", 100), MakeNode("i-2", 200)};
  ClassSignal util;
  util.workload_class = "render";
  util.kind = ClassSignal::Kind::kGpuUtilization;
  util.reading = signals::MakeReading("prometheus", "util", 0.5, kNow);
  util.by_host = {{"i-1", 0.05}, {"i-2", 0.9}};
  w.Update(TestPolicy(), {Depth(0), util}, nodes, kNow);
  EXPECT_TRUE(w.RunningOn("i-1").empty());   // idle: a removal candidate
  EXPECT_EQ(w.RunningOn("i-2").size(), 1u);  // busy: kept
  EXPECT_TRUE(w.Pending().empty());
}

TEST(SignalWorkSource, AMissingOrStaleSignalHoldsTheLastGoodDemandNeverZero) {
  Catalog catalog = TestCatalog();
  SignalWorkSource w(catalog);
  std::vector<Node> nodes = {MakeNode("i-1", 100)};
  w.Update(TestPolicy(), {Depth(55)}, nodes, kNow);  // 6 units: 4 placed, 2 pending
  EXPECT_EQ(w.Pending().size(), 2u);
  const uint64_t v = w.PendingVersion();

  w.Update(TestPolicy(), {Missing()}, nodes, kNow + Seconds(30));
  EXPECT_EQ(w.Pending().size(), 2u);
  EXPECT_EQ(w.RunningOn("i-1").size(), 4u);
  EXPECT_EQ(w.PendingVersion(), v);  // nothing changed
  std::vector<SignalStatus> st = w.Signals();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_FALSE(st[0].sampled_at.has_value());  // the controller blocks scale-down on it
  EXPECT_EQ(st[0].classes, std::vector<std::string>{"render"});

  w.Update(TestPolicy(), {Depth(0, /*fresh=*/false)}, nodes, kNow + Seconds(60));
  EXPECT_EQ(w.RunningOn("i-1").size(), 4u);  // a stale zero is not a zero
  ASSERT_EQ(w.Signals().size(), 1u);
  EXPECT_TRUE(w.Signals()[0].sampled_at.has_value());  // kept: the controller judges its age
}

TEST(SignalWorkSource, BeforeAnyGoodReadingAClassHasNoDemand) {
  Catalog catalog = TestCatalog();
  SignalWorkSource w(catalog);
  w.Update(TestPolicy(), {Missing()}, {}, kNow);
  EXPECT_TRUE(w.Pending().empty());
  EXPECT_EQ(w.DesiredUnits("render"), 0);
}

TEST(SignalWorkSource, VersionsChangeOnlyWithContent) {
  Catalog catalog = TestCatalog();
  SignalWorkSource w(catalog);
  std::vector<Node> nodes = {MakeNode("i-1", 100)};
  w.Update(TestPolicy(), {Depth(20)}, nodes, kNow);
  const uint64_t pv = w.PendingVersion();
  const uint64_t rv = w.RunningVersion("i-1");
  w.Update(TestPolicy(), {Depth(20)}, nodes, kNow + Seconds(30));
  EXPECT_EQ(w.PendingVersion(), pv);
  EXPECT_EQ(w.RunningVersion("i-1"), rv);
  w.Update(TestPolicy(), {Depth(30)}, nodes, kNow + Seconds(60));
  EXPECT_NE(w.RunningVersion("i-1"), rv);
}

}  // namespace
}  // namespace gpuscaler::daemon
