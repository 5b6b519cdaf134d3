// Drains run outside the tick: the tick starts them and closes them when
// they end; it never waits for one.
#include <gtest/gtest.h>

#include "fake_cluster_nodes.h"
#include "gpuscaler/store/audit_reader.h"
#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::FakeClusterNodes;
using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

Policy DrainPolicy() {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.disruption.consolidation = true;  // empty nodes are removed
  p.disruption.min_node_age = Seconds(0);
  p.disruption.drain_timeout = Seconds(1200);
  return p;
}

// One registered node whose work has finished: the next plan removes it.
struct DrainScene : LifecycleScene {
  FakeClusterNodes nodes{clock};
  std::string node;
  explicit DrainScene(Policy p = DrainPolicy()) : LifecycleScene(std::move(p)) {
    controller->SetClusterNodes(&nodes);
    work.SetPending({GpuUnit("a")});
    controller->Tick();
    node = controller->snapshot().nodes.at(0).instance_id;
    nodes.Register(node);
    work.SetPending({});
  }
  std::vector<ActionRow> Actions(int64_t decision) {
    std::unique_ptr<AuditReader> reader = std::move(store->OpenReader()).value();
    return std::move(reader->ActionsForDecision(decision)).value();
  }
};

TEST(DrainOffTick, TheTickStartsTheDrainAndTerminatesOnlyWhenItHasEnded) {
  DrainScene s;
  TickReport start = s.TickAfter(Seconds(30));
  ASSERT_EQ(start.drains_started, 1);
  ASSERT_EQ(s.nodes.begun.size(), 1u);
  EXPECT_EQ(s.nodes.begun[0].instance_id, s.node);
  EXPECT_EQ(s.nodes.begun[0].timeout, Seconds(1200));
  EXPECT_TRUE(s.fake.terminations.empty());
  ASSERT_NE(s.Find(s.node), nullptr);
  EXPECT_EQ(s.Find(s.node)->state, NodeState::kDraining);
  EXPECT_EQ(std::move(s.store->OpenIntents()).value().size(), 1u) << "the terminate intent stays open";

  // Ten minutes of virtual time with the drain held open by a budget: every
  // tick runs on schedule and acts; new demand is served meanwhile.
  for (int i = 0; i < 20; ++i) {
    if (i == 10) s.work.SetPending({GpuUnit("late")});
    TickReport r = s.TickAfter(Seconds(30));
    EXPECT_EQ(r.drains_started, 0);
    if (i == 10) {
      EXPECT_EQ(r.nodes_launched, 1) << "scale-up does not wait for the drain";
    }
  }
  EXPECT_TRUE(s.fake.terminations.empty());
  EXPECT_EQ(s.nodes.begun.size(), 1u);

  s.nodes.EndDrain(s.node, DrainEnd::kDrained, 3);
  TickReport done = s.TickAfter(Seconds(30));
  ASSERT_EQ(done.drains_ended.size(), 1u);
  EXPECT_EQ(done.nodes_terminated, 1);
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.fake.terminations[0], std::vector<std::string>{s.node});
  EXPECT_EQ(s.Find(s.node), nullptr);
  std::vector<ActionRow> rows = s.Actions(start.decision_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].outcome, ActionOutcome::kSucceeded);
  EXPECT_NE(rows[0].detail.find("3 pod(s) evicted"), std::string::npos) << rows[0].detail;
}

TEST(DrainOffTick, ADrainThatTimesOutKeepsTheNodeInService) {
  DrainScene s;
  TickReport start = s.TickAfter(Seconds(30));
  ASSERT_EQ(start.drains_started, 1);
  s.nodes.EndDrain(s.node, DrainEnd::kTimedOut, 0);
  s.work.SetPending({GpuUnit("b")});
  TickReport after = s.TickAfter(Seconds(30));
  EXPECT_TRUE(s.fake.terminations.empty());
  ASSERT_NE(s.Find(s.node), nullptr);
  EXPECT_EQ(s.Find(s.node)->state, NodeState::kReady);
  EXPECT_EQ(after.nodes_launched, 0) << "the kept node takes the new work";
  std::vector<ActionRow> rows = s.Actions(start.decision_id);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].outcome, ActionOutcome::kFailed);
  EXPECT_TRUE(std::move(s.store->OpenIntents()).value().empty());
}

TEST(DrainOffTick, ARestartResumesTheOpenDrainInsteadOfTerminating) {
  DrainScene s;
  ASSERT_EQ(s.TickAfter(Seconds(30)).drains_started, 1);
  // A new controller on the same store and cluster: the intent is open.
  s.controller = std::make_unique<Controller>(s.clock, s.cloud, s.store.get(), s.work, s.catalog, DrainPolicy());
  s.controller->SetClusterNodes(&s.nodes);
  TickReport resumed = s.TickAfter(Seconds(30));
  EXPECT_EQ(resumed.drains_started, 1);
  EXPECT_TRUE(s.fake.terminations.empty());
  ASSERT_NE(s.Find(s.node), nullptr);
  EXPECT_EQ(s.Find(s.node)->state, NodeState::kDraining);
  s.nodes.EndDrain(s.node, DrainEnd::kDrained);
  s.TickAfter(Seconds(30));
  ASSERT_EQ(s.fake.terminations.size(), 1u);
  EXPECT_EQ(s.Find(s.node), nullptr);
}

TEST(DrainOffTick, WithoutANodeTheInstanceIsTerminatedDirectly) {
  DrainScene s;
  s.nodes.health.clear();
  s.nodes.synced = false;  // no registration timeout either
  TickReport r = s.TickAfter(Seconds(30));
  EXPECT_EQ(r.drains_started, 0);
  ASSERT_EQ(s.fake.terminations.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler
