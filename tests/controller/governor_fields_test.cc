// The scaling policy's damping fields, each shown by the plan the governor
// lets through: scale-up stabilization, and the scale-up and scale-down
// cooldowns, and how the planner's empty nodes left for later ticks enter
// the scale-down recommendation (max_nodes_*_per_tick and scale-down
// stabilization have their own tests in controller_scale_down_test.cc); and
// that a replacement is let through or held whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpuscaler/controller/scaling.h"

namespace gpuscaler {
namespace {

Plan Launch(int count) {
  LaunchAction l;
  l.pool = "gpu";
  l.count = count;
  Plan p;
  p.launches = {l};
  return p;
}

Plan Terminate(int count) {
  TerminationAction t;
  t.pool = "gpu";
  Plan p;
  p.terminations.assign(static_cast<size_t>(count), t);
  return p;
}

ScalingPolicy Undamped() {
  ScalingPolicy s;
  s.scale_up_stabilization = Seconds(0);
  s.scale_down_stabilization = Seconds(0);
  s.scale_up_cooldown = Seconds(0);
  s.scale_down_cooldown = Seconds(0);
  return s;
}

bool Noted(const GovernorResult& r, const std::string& text) {
  for (const std::string& n : r.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// scaling.scale_up_stabilization: a pool grows only to the lowest size
// recommended within the window, so a one-tick spike buys nothing.
TEST(GovernorFields, ScaleUpStabilizationGrowsToTheWindowsLowestRecommendation) {
  ScalingPolicy s = Undamped();
  s.scale_up_stabilization = Seconds(60);
  ScalingGovernor g;
  const WallTime t0 = FromUnixSeconds(1000);
  Plan first = Launch(2);
  g.Apply(s, {{"gpu", 0}}, t0, &first);
  EXPECT_EQ(first.launches[0].count, 2);  // the only recommendation in the window
  Plan spike = Launch(3);
  GovernorResult r = g.Apply(s, {{"gpu", 2}}, t0 + Seconds(10), &spike);
  EXPECT_EQ(spike.launches[0].count, 0);  // the window's lowest is 2 nodes, the pool has them
  EXPECT_TRUE(Noted(r, "scale-up stabilization window"));
  EXPECT_TRUE(g.HasPendingHold());
  Plan sustained = Launch(3);
  g.Apply(s, {{"gpu", 2}}, t0 + Seconds(71), &sustained);
  EXPECT_EQ(sustained.launches[0].count, 3);  // 5 recommended for a whole window

  ScalingGovernor undamped;
  Plan a = Launch(2), b = Launch(3);
  undamped.Apply(Undamped(), {{"gpu", 0}}, t0, &a);
  undamped.Apply(Undamped(), {{"gpu", 2}}, t0 + Seconds(10), &b);
  EXPECT_EQ(b.launches[0].count, 3);
}

// scaling.scale_up_cooldown: no launch in a pool within the cooldown of its
// last scale-up.
TEST(GovernorFields, ScaleUpCooldownHoldsLaunchesAfterTheLastScaleUp) {
  ScalingPolicy s = Undamped();
  s.scale_up_cooldown = Seconds(120);
  ScalingGovernor g;
  const WallTime t0 = FromUnixSeconds(1000);
  g.RecordScaleUp("gpu", t0);
  Plan held = Launch(2);
  GovernorResult r = g.Apply(s, {{"gpu", 1}}, t0 + Seconds(119), &held);
  EXPECT_EQ(held.launches[0].count, 0);
  EXPECT_EQ(r.launches_held, 2);
  EXPECT_TRUE(Noted(r, "pool gpu: scale-up cooldown"));
  Plan sent = Launch(2);
  g.Apply(s, {{"gpu", 1}}, t0 + Seconds(120), &sent);
  EXPECT_EQ(sent.launches[0].count, 2);
}

// scaling.scale_down_cooldown: no removal in a pool within the cooldown of
// its last scale-up or scale-down.
TEST(GovernorFields, ScaleDownCooldownHoldsRemovalsAfterTheLastScaleUpOrDown) {
  ScalingPolicy s = Undamped();
  s.scale_down_cooldown = Seconds(300);
  const WallTime t0 = FromUnixSeconds(1000);
  for (bool after_up : {true, false}) {
    SCOPED_TRACE(after_up ? "after a scale-up" : "after a scale-down");
    ScalingGovernor g;
    if (after_up) {
      g.RecordScaleUp("gpu", t0);
    } else {
      g.RecordScaleDown("gpu", t0);
    }
    Plan held = Terminate(2);
    GovernorResult r = g.Apply(s, {{"gpu", 4}}, t0 + Seconds(299), &held);
    EXPECT_TRUE(held.terminations.empty());
    EXPECT_EQ(r.terminations_held, 2);
    EXPECT_TRUE(Noted(r, "pool gpu: scale-down cooldown"));
    Plan sent = Terminate(2);
    g.Apply(s, {{"gpu", 4}}, t0 + Seconds(300), &sent);
    EXPECT_EQ(sent.terminations.size(), 2u);
  }
}

// The planner removes at most max_nodes_removed_per_tick nodes a tick and
// says how many more empty ones it does not need. The scale-down
// recommendation counts them: the pool needs that few nodes, so the next
// step is not held by a recommendation that was only the last tick's step.
TEST(GovernorFields, EmptyNodesLeftForLaterTicksCountInTheScaleDownRecommendation) {
  ScalingPolicy s = Undamped();
  s.scale_down_stabilization = Seconds(300);
  s.scale_down_cooldown = Seconds(300);
  s.max_nodes_removed_per_tick = 5;
  const WallTime t0 = FromUnixSeconds(1000);
  for (bool counted : {true, false}) {
    SCOPED_TRACE(counted ? "left nodes counted" : "left nodes not reported");
    ScalingGovernor g;
    Plan first = Terminate(5);
    if (counted) first.empty_nodes_left_by_pool["gpu"] = 10;
    g.Apply(s, {{"gpu", 20}}, t0, &first);
    EXPECT_EQ(first.terminations.size(), 5u);
    g.RecordScaleDown("gpu", t0);
    Plan next = Terminate(5);
    if (counted) next.empty_nodes_left_by_pool["gpu"] = 5;
    GovernorResult r = g.Apply(s, {{"gpu", 15}}, t0 + Seconds(300), &next);
    // The first plan's recommendation is still in the window: 5 nodes when
    // it counted the nodes left, 15 (the pool now) when it did not.
    EXPECT_EQ(next.terminations.size(), counted ? 5u : 0u);
    EXPECT_EQ(Noted(r, "scale-down stabilization keeps 15 nodes"), !counted);
  }
}

// Nodes left for later lower only the scale-down recommendation: launches in
// the same pool (for work those nodes cannot hold) are not held back by it.
TEST(GovernorFields, EmptyNodesLeftForLaterDoNotHoldLaunches) {
  ScalingPolicy s = Undamped();
  s.scale_up_stabilization = Seconds(60);
  ScalingGovernor g;
  Plan plan = Launch(2);
  plan.empty_nodes_left_by_pool["gpu"] = 3;
  GovernorResult r = g.Apply(s, {{"gpu", 6}}, FromUnixSeconds(1000), &plan);
  EXPECT_EQ(plan.launches[0].count, 2);
  EXPECT_EQ(r.launches_held, 0);
}


// A replacement: node `node` removed, its units `units` moved onto the
// `ordinal`-th node of the plan's first launch.
void AddReplacement(Plan& p, const std::string& node, const std::vector<std::string>& units, int ordinal) {
  if (p.launches.empty()) {
    LaunchAction l;
    l.pool = "gpu";
    p.launches.push_back(l);
  }
  LaunchAction& l = p.launches[0];
  l.count = std::max(l.count, ordinal + 1);
  l.usd_per_hour = 4.0 * l.count;
  TerminationAction t;
  t.pool = "gpu";
  t.node_id = node;
  t.instance_id = node;
  t.kind = TerminationKind::kReplace;
  t.moved_unit_ids = units;
  p.terminations.push_back(t);
  for (const std::string& u : units) {
    Placement pl;
    pl.unit_id = u;
    pl.launch_index = 0;
    pl.launch_ordinal = ordinal;
    p.placements.push_back(pl);
    l.unit_ids.push_back(u);
  }
}

std::vector<std::string> NodeIds(const Plan& p) {
  std::vector<std::string> ids;
  for (const TerminationAction& t : p.terminations) ids.push_back(t.node_id);
  return ids;
}

// Two nodes replaced by one new node: with room for one removal the governor
// holds both and the new node (alone it would cost more than the two), and
// with room for two it lets all three through.
TEST(GovernorFields, AReplacementIsLetThroughOrHeldWhole) {
  for (int room : {1, 2}) {
    SCOPED_TRACE("removals a tick: " + std::to_string(room));
    ScalingPolicy s = Undamped();
    s.max_nodes_removed_per_tick = room;
    Plan p;
    AddReplacement(p, "a", {"ua"}, 0);
    AddReplacement(p, "b", {"ub"}, 0);
    ScalingGovernor g;
    GovernorResult r = g.Apply(s, {{"gpu", 2}}, FromUnixSeconds(1000), &p);
    if (room == 1) {
      EXPECT_TRUE(p.terminations.empty());
      EXPECT_EQ(p.launches[0].count, 0);
      EXPECT_DOUBLE_EQ(p.launches[0].usd_per_hour, 0.0);
      EXPECT_TRUE(p.placements.empty());
      EXPECT_EQ(r.terminations_held, 2);
      EXPECT_EQ(r.launches_held, 1);
      EXPECT_TRUE(Noted(r, "1 replacement node(s) held with the removals they were for"));
    } else {
      EXPECT_EQ(NodeIds(p), (std::vector<std::string>{"a", "b"}));
      EXPECT_EQ(p.launches[0].count, 1);
      EXPECT_EQ(p.placements.size(), 2u);
      EXPECT_EQ(r.launches_held, 0);
    }
  }
}

// Removals whose new node the governor holds (here the scale-up cooldown)
// are held with it: their work would have nowhere to go.
TEST(GovernorFields, ARemovalWaitsForItsHeldReplacementNode) {
  ScalingPolicy s = Undamped();
  s.scale_up_cooldown = Seconds(120);
  ScalingGovernor g;
  const WallTime t0 = FromUnixSeconds(1000);
  g.RecordScaleUp("gpu", t0);
  Plan p;
  AddReplacement(p, "a", {"ua"}, 0);
  TerminationAction empty;
  empty.pool = "gpu";
  empty.node_id = "idle";
  p.terminations.push_back(empty);  // no work to move: not part of it
  GovernorResult r = g.Apply(s, {{"gpu", 3}}, t0 + Seconds(60), &p);
  EXPECT_EQ(NodeIds(p), std::vector<std::string>{"idle"});
  EXPECT_EQ(p.launches[0].count, 0);
  EXPECT_EQ(r.terminations_held, 1);
}

// One node replaced by one new node: the new node holds all its work, so it
// goes ahead while the scale-down cooldown holds the removal; the next plans
// move the work onto it.
TEST(GovernorFields, ALoneRemovalWaitsWhileItsNewNodeGoesAhead) {
  ScalingPolicy s = Undamped();
  s.scale_down_cooldown = Seconds(300);
  ScalingGovernor g;
  const WallTime t0 = FromUnixSeconds(1000);
  g.RecordScaleDown("gpu", t0);
  Plan p;
  AddReplacement(p, "a", {"ua"}, 0);
  GovernorResult r = g.Apply(s, {{"gpu", 3}}, t0 + Seconds(60), &p);
  EXPECT_TRUE(p.terminations.empty());
  EXPECT_EQ(p.launches[0].count, 1);
  EXPECT_EQ(r.terminations_held, 1);
  EXPECT_EQ(r.launches_held, 0);
}

// Of two replacements onto nodes of one launch, the one held gives up its
// node; the launch's last node takes its place, and the placements onto it
// follow, so the replacement let through keeps its units on a node that is
// launched.
TEST(GovernorFields, AHeldReplacementsNodeLeavesTheLaunchAndTheOthersKeepTheirs) {
  ScalingPolicy s = Undamped();
  s.max_nodes_removed_per_tick = 2;
  Plan p;
  AddReplacement(p, "c", {"uc"}, 1);       // first in plan order: let through
  AddReplacement(p, "a", {"ua"}, 0);       // with b, two more removals: held
  AddReplacement(p, "b", {"ub"}, 0);
  ScalingGovernor g;
  GovernorResult r = g.Apply(s, {{"gpu", 3}}, FromUnixSeconds(1000), &p);
  EXPECT_EQ(NodeIds(p), std::vector<std::string>{"c"});
  ASSERT_EQ(p.launches[0].count, 1);
  EXPECT_DOUBLE_EQ(p.launches[0].usd_per_hour, 4.0);
  ASSERT_EQ(p.placements.size(), 1u);
  EXPECT_EQ(p.placements[0].unit_id, "uc");
  EXPECT_EQ(p.placements[0].launch_ordinal, 0);
  EXPECT_EQ(p.launches[0].unit_ids, std::vector<std::string>{"uc"});
  EXPECT_EQ(r.terminations_held, 2);
  EXPECT_EQ(r.launches_held, 1);
}

// Terminations whose work shares a new node are one replacement, also through
// a termination whose units go to two new nodes: with room for two removals,
// the three are held together, and both new nodes with them.
TEST(GovernorFields, RemovalsJoinedThroughASharedNewNodeAreOneReplacement) {
  ScalingPolicy s = Undamped();
  s.max_nodes_removed_per_tick = 2;
  Plan p;
  AddReplacement(p, "a", {"ua"}, 0);
  AddReplacement(p, "b", {"ub1"}, 0);
  AddReplacement(p, "c", {"uc"}, 1);
  // b's second unit goes to the other new node.
  p.terminations[1].moved_unit_ids.push_back("ub2");
  Placement second;
  second.unit_id = "ub2";
  second.launch_index = 0;
  second.launch_ordinal = 1;
  p.placements.push_back(second);
  ScalingGovernor g;
  GovernorResult r = g.Apply(s, {{"gpu", 3}}, FromUnixSeconds(1000), &p);
  EXPECT_TRUE(p.terminations.empty());
  EXPECT_EQ(p.launches[0].count, 0);
  EXPECT_TRUE(p.placements.empty());
  EXPECT_EQ(r.terminations_held, 3);
  EXPECT_EQ(r.launches_held, 2);
}

// Stale signals on a node replaced by one new node hold its removal only:
// the new node, which holds all its work, goes ahead.
TEST(GovernorFields, StaleSignalsHoldALoneReplacementsRemovalOnly) {
  Policy policy;
  WorkloadClassPolicy serving;
  serving.name = "serving";
  serving.pools = {"gpu"};
  policy.classes = {serving};
  Snapshot snap;
  snap.scale_down_blocked_classes = {"serving"};
  Plan p;
  AddReplacement(p, "a", {"ua"}, 0);
  GovernorResult held;
  HoldBlockedTerminations(snap, policy, &p, &held);
  EXPECT_TRUE(p.terminations.empty());
  EXPECT_EQ(p.launches[0].count, 1);
  EXPECT_EQ(held.terminations_held, 1);
  EXPECT_EQ(held.launches_held, 0);
}

// Stale signals hold a node's removal; the rest of its replacement is held
// with it.
TEST(GovernorFields, StaleSignalsHoldTheWholeReplacement) {
  Policy policy;
  WorkloadClassPolicy serving;
  serving.name = "serving";
  serving.pools = {"gpu"};
  WorkloadClassPolicy other;
  other.name = "other";
  other.pools = {"cpu"};
  policy.classes = {serving, other};
  Snapshot snap;
  snap.scale_down_blocked_classes = {"other"};
  Node a;
  a.instance_id = "a";
  DemandUnit ua;
  ua.id = "ua";
  ua.workload_class = "other";
  a.running = {ua};
  snap.nodes = {a};
  Plan p;
  AddReplacement(p, "a", {"ua"}, 0);
  AddReplacement(p, "b", {"ub"}, 0);
  GovernorResult held;
  HoldBlockedTerminations(snap, policy, &p, &held);
  EXPECT_TRUE(p.terminations.empty());
  EXPECT_EQ(p.launches[0].count, 0);
  EXPECT_EQ(held.terminations_held, 2);
  EXPECT_EQ(held.launches_held, 1);
}

}  // namespace
}  // namespace gpuscaler
