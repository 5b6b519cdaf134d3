// The controller's scale-down: the disruption window, stale signals that block
// it, failed instance lists and terminations, the stabilization window, the
// governor's caps per tick, and the decision summary of the governed plan.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller_harness.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::controller_scale_down_test {
namespace {

using Harness = testing::ControllerHarness;
using testing::TestPolicy;

// disruption.disruption_interval: a rolling window, per pool, of the nodes
// plans removed; interruptions do not count.
TEST(Controller, RecentlyDisruptedIsARollingWindowOfTheNodesPlansRemoved) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 3)};
  h.controller->Tick();
  const std::vector<Node> nodes = h.controller->snapshot().nodes;
  ASSERT_EQ(nodes.size(), 3u);
  h.clock.Advance(Seconds(60));
  h.next_plan.terminations = {h.Terminate(nodes[0].instance_id), h.Terminate(nodes[1].instance_id)};
  h.controller->Tick();
  h.clock.Advance(Seconds(60));
  h.controller->Tick();
  EXPECT_EQ(h.seen.back().recently_disrupted.at("gpu"), 2);
  h.clock.Advance(Seconds(600));  // the policy's default interval
  h.controller->Tick();
  EXPECT_TRUE(h.seen.back().recently_disrupted.empty());
}

TEST(Controller, StaleSignalBlocksScaleDownOfTheClassPools) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;

  struct Case {
    std::string name;
    std::optional<Seconds> age;  // unset: missing
    bool terminated;
  };
  const std::vector<Case> cases = {{"missing", std::nullopt, false},
                                   {"stale", Seconds(600), false},
                                   {"fresh", Seconds(10), true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    h.clock.Advance(Seconds(60));
    SignalStatus s{"queue", "prometheus", {"batch"}, std::nullopt, 3};
    if (c.age) s.sampled_at = h.clock.WallNow() - *c.age;
    h.work.signals = {s};
    h.next_plan.terminations = {h.Terminate(id)};
    TickReport r = h.controller->Tick();
    EXPECT_EQ(r.nodes_terminated, c.terminated ? 1 : 0);
    if (!c.terminated) {
      EXPECT_EQ(r.blocked_classes, std::vector<std::string>{"batch"});
      EXPECT_EQ(h.seen.back().scale_down_blocked_classes, std::vector<std::string>{"batch"});
    }
  }
  EXPECT_EQ(h.cloud.terminations.size(), 1u);
}

// Empty nodes a plan leaves for later ticks lower the pool's scale-down
// recommendation only where removals are allowed: while a class's signals
// are stale its pools' recommendation stays the pool as it is, so the first
// removal after the signals come back still waits for the stabilization
// window.
TEST(Controller, EmptyNodesLeftForLaterDoNotLowerARecommendationWhileSignalsAreStale) {
  Policy p = TestPolicy();
  p.scaling.scale_down_stabilization = Seconds(300);
  p.scaling.scale_down_cooldown = Seconds(0);
  for (bool stale_first : {true, false}) {
    SCOPED_TRACE(stale_first ? "stale, then fresh" : "fresh throughout");
    Harness h(p);
    h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
    h.controller->Tick();
    const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
    h.clock.Advance(Seconds(600));  // the launch's recommendation has left the window
    SignalStatus s{"queue", "prometheus", {"batch"}, h.clock.WallNow() - Seconds(stale_first ? 600 : 10), 3};
    h.work.signals = {s};
    h.next_plan.empty_nodes_left_by_pool["gpu"] = 2;
    EXPECT_EQ(h.controller->Tick().nodes_terminated, 0);
    h.clock.Advance(Seconds(60));
    h.work.signals[0].sampled_at = h.clock.WallNow() - Seconds(10);
    h.next_plan.terminations = {h.Terminate(id)};
    h.next_plan.empty_nodes_left_by_pool["gpu"] = 1;
    // After the stale tick the window holds a 2-node recommendation; after a
    // fresh one it holds 0 nodes (the plan did not need either).
    EXPECT_EQ(h.controller->Tick().nodes_terminated, stale_first ? 0 : 1);
  }
}

TEST(Controller, NoTerminationsWhenTheInstanceListFails) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  h.clock.Advance(Seconds(60));
  h.cloud.next_list_error = Error::Transient("timeout");
  h.next_plan.terminations = {h.Terminate(id)};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(r.nodes_terminated, 0);
  EXPECT_TRUE(h.cloud.terminations.empty());
}

TEST(Controller, AFailedTerminationIsCountedAndTheNodeKept) {
  Harness h;
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  h.clock.Advance(Seconds(60));
  h.cloud.next_terminate_error = Error::Auth("UnauthorizedOperation: not allowed to terminate");
  h.next_plan.terminations = {h.Terminate(id)};
  TickReport r = h.controller->Tick();
  EXPECT_EQ(r.nodes_terminated, 0);
  EXPECT_EQ(r.terminations_failed, 1);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message().rfind("terminate " + id, 0), 0u) << r.errors[0].ToString();
  EXPECT_EQ(h.cloud.instances.count(id), 1u);
}

TEST(Controller, ScaleDownWaitsForTheStabilizationWindow) {
  Policy p = TestPolicy();
  p.scaling.scale_down_stabilization = Seconds(300);
  Harness h(p);
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 1)};
  h.controller->Tick();  // recommendation: 1 node
  const std::string id = h.controller->snapshot().nodes.at(0).instance_id;
  int terminated_at = -1;
  for (int minute = 1; minute <= 8 && terminated_at < 0; ++minute) {
    h.clock.Advance(Seconds(60));
    h.next_plan.terminations = {h.Terminate(id)};  // recommendation: 0 nodes
    if (h.controller->Tick().nodes_terminated == 1) terminated_at = minute;
  }
  // The 1-node recommendation of minute 0 must leave the 300 s window first.
  EXPECT_EQ(terminated_at, 6);
}

TEST(ScalingGovernor, CapsNodesAddedAndRemovedPerTick) {
  ScalingPolicy s;
  s.scale_down_stabilization = Seconds(0);
  s.scale_down_cooldown = Seconds(0);
  s.max_nodes_added_per_tick = 3;
  s.max_nodes_removed_per_tick = 1;
  ScalingGovernor g;
  Plan plan;
  LaunchAction l;
  l.pool = "gpu";
  l.count = 5;
  plan.launches = {l};
  TerminationAction t;
  t.pool = "other";
  plan.terminations = {t, t};
  GovernorResult r = g.Apply(s, {{"gpu", 0}, {"other", 4}}, FromUnixSeconds(0), &plan);
  EXPECT_EQ(plan.launches[0].count, 3);
  EXPECT_EQ(r.launches_held, 2);
  EXPECT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(r.terminations_held, 1);
}

// The summary recorded with a decision describes the plan as governed, the
// one stored as plan_json and acted on, not the planner's proposal.
TEST(Controller, RecordedSummaryDescribesThePlanTheGovernorTrimmed) {
  Policy policy = TestPolicy();
  policy.scaling.max_nodes_removed_per_tick = 0;
  Harness h(policy);
  h.next_plan.launches = {h.Launch("g5.xlarge/us-east-1a/on-demand", 2)};
  ASSERT_EQ(h.controller->Tick().nodes_launched, 2);
  ASSERT_EQ(h.controller->snapshot().nodes.size(), 2u);
  h.clock.Advance(Seconds(60));
  Plan proposal;
  for (const Node& n : h.controller->snapshot().nodes) {
    TerminationAction t = h.Terminate(n.instance_id);
    t.offering = n.offering;
    proposal.terminations.push_back(t);
  }
  proposal.cost_before_usd_per_hour = 2.0;
  proposal.cost_after_usd_per_hour = 0.0;
  proposal.summary = "launch 0 node(s), terminate 2";  // the proposal's own words
  h.next_plan = proposal;

  const TickReport r = h.controller->Tick();
  ASSERT_TRUE(r.planned);
  EXPECT_EQ(r.governor.terminations_held, 2);
  EXPECT_TRUE(r.plan.terminations.empty());
  EXPECT_EQ(r.nodes_terminated, 0);
  std::unique_ptr<AuditReader> reader = std::move(h.store->OpenReader()).value();
  Result<DecisionRow> d = reader->Decision(r.decision_id);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_NE(d->decision.summary.find("terminate 0"), std::string::npos) << d->decision.summary;
  EXPECT_EQ(d->decision.summary.find("terminate 2"), std::string::npos) << d->decision.summary;
  EXPECT_NE(d->decision.summary.find("max_nodes_removed_per_tick"), std::string::npos) << d->decision.summary;
  EXPECT_EQ(d->decision.plan_json.find("\"instance_id\""), std::string::npos) << d->decision.plan_json;
  EXPECT_EQ(d->decision.summary, r.plan.summary);
  EXPECT_DOUBLE_EQ(d->decision.cost_after_usd_per_hour, d->decision.cost_before_usd_per_hour);
  EXPECT_TRUE(std::move(reader->ActionsForDecision(r.decision_id)).value().empty());
}

}  // namespace
}  // namespace gpuscaler::controller_scale_down_test
