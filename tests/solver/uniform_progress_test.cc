// Uniform Progress (solver/deadline_hold.h): a deadline unit is held for spot
// while it keeps up with the line from its submission to its deadline, goes
// to on-demand when it falls behind, and running work moves between spot and
// on-demand as its line says: to on-demand when a spot run falls behind, to
// spot when an on-demand run is ahead and spot is up.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/deadline_hold.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler::uniform_progress_test {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::HasNote;
using testing::LaunchedNodes;
using testing::MakeNode;
using testing::Unit;

constexpr Seconds kWork{10 * 3600};  // the whole job
constexpr Seconds kSpan{15 * 3600};  // deadline 1.5x its runtime
constexpr Seconds kLaunchLatency{120};
constexpr Seconds kRestartCost{300};
// Launch latency + restart cost + the policy's 30 s tick.
constexpr Seconds kMargin{kLaunchLatency + kRestartCost + Seconds(30)};
constexpr Seconds kLoss{1800};  // its checkpoint interval

void SetSpot(Snapshot& s, bool available) {
  for (Offering& o : s.offerings) {
    o.launch_latency = kLaunchLatency;
    if (o.capacity_type == CapacityType::kSpot) o.available = available;
  }
}

// A 1-GPU training unit submitted at `submitted`, its deadline kSpan later,
// kWork in all of which `left` is left (as of its run's start when running).
DemandUnit DeadlineUnit(const std::string& id, WallTime submitted, Seconds left) {
  DemandUnit u = Unit(id, 1, 2000, 8192, "training");
  u.interruptible = true;
  u.restart_cost = kRestartCost;
  u.checkpoint_interval = kLoss;
  u.expected_runtime = left;
  u.total_work = kWork;
  u.submitted = submitted;
  u.deadline = submitted + kSpan;
  return u;
}

Snapshot PendingScene(bool spot, Seconds since_submission, Seconds left = kWork) {
  Snapshot s = BaseSnapshot();
  SetSpot(s, spot);
  s.pending.push_back(DeadlineUnit("job", s.time - since_submission, left));
  return s;
}

// One node of g6.xlarge (`on`) running the unit, submitted 6 h ago, which
// has run for an hour with `left_at_start` left when it started.
Snapshot RunningScene(CapacityType on, bool spot, Seconds left_at_start) {
  Snapshot s = BaseSnapshot();
  SetSpot(s, spot);
  DemandUnit u = DeadlineUnit("job", s.time - Seconds(6 * 3600), left_at_start);
  u.progressing_since = s.time - Seconds(3600);
  s.nodes.push_back(MakeNode(s, "n1", "g6.xlarge", "us-east-1a", on, {u}));
  return s;
}

bool AllOf(const Plan& p, CapacityType cap) {
  for (const LaunchAction& l : p.launches)
    if (l.count > 0 && l.offering.capacity_type != cap) return false;
  return LaunchedNodes(p) > 0;
}

// The capacity type of the new node `unit` is placed on, if any.
std::optional<CapacityType> LaunchedFor(const Plan& p, const std::string& unit) {
  for (const Placement& pl : p.placements)
    if (pl.unit_id == unit && pl.launch_index >= 0)
      return p.launches[size_t(pl.launch_index)].offering.capacity_type;
  return std::nullopt;
}

TEST(UniformProgress, StandingIsMeasuredAgainstTheLine) {
  const Policy policy = BasePolicy();
  const Snapshot s = RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600));
  const DemandUnit& u = s.nodes[0].running[0];
  const DeadlineStanding st = StandingOf(s, policy, u, RestartAllowance(s, u));
  // 9 h left when it started an hour ago: 8 h left, 2 h done; the line asks
  // 10 h x 6/15 = 4 h by now.
  EXPECT_EQ(st.left, Seconds(8 * 3600));
  EXPECT_EQ(st.lead, Seconds(-2 * 3600));
  EXPECT_EQ(st.restart, kLaunchLatency + kRestartCost);
  EXPECT_EQ(st.margin, kMargin);
  EXPECT_EQ(st.loss, kLoss);
  EXPECT_EQ(st.slack, Seconds(9 * 3600) - Seconds(8 * 3600) - kLaunchLatency - kRestartCost);
  EXPECT_TRUE(st.has_line);
}

TEST(UniformProgress, APendingUnitIsHeldUntilItFallsBehindByTheMargin) {
  const Policy policy = BasePolicy();
  Snapshot s = PendingScene(/*spot=*/false, Seconds(0));
  const Plan held = MakePlan(s, policy);
  EXPECT_EQ(LaunchedNodes(held), 0) << held.summary;
  ASSERT_EQ(held.unplaced.size(), 1u);
  EXPECT_EQ(held.unplaced[0].reason, UnplacedReason::kDeadlineHold);
  EXPECT_TRUE(HasNote(held, "class training: 1 unit held for spot by deadline")) << held.summary;
  // Idle, it falls behind at 10/15 of a second a second: the margin in
  // 1.5 x kMargin.
  ASSERT_TRUE(held.replan_by.has_value());
  EXPECT_NEAR(std::chrono::duration<double>(*held.replan_by - s.time).count(), 1.5 * kMargin.count(), 1.0);

  // Behind by more than the margin: on-demand, though its slack (5 h) is
  // far from spent.
  s.time += Seconds(int64_t(1.5 * double(kMargin.count())) + 30);
  const Plan behind = MakePlan(s, policy);
  EXPECT_TRUE(AllOf(behind, CapacityType::kOnDemand)) << behind.summary;
  EXPECT_TRUE(behind.unplaced.empty());

  // The earlier rule holds it as long as its slack lasts.
  const Plan old = MakePlanWithDeadlineStrategy(s, policy, DeadlineStrategy::kHoldPending);
  EXPECT_EQ(LaunchedNodes(old), 0) << old.summary;

  // Ahead of the line (an interrupted unit with work done): held again.
  s.pending[0].expected_runtime = Seconds(8 * 3600);
  EXPECT_EQ(LaunchedNodes(MakePlan(s, policy)), 0);
}

TEST(UniformProgress, APendingUnitOnItsLineTakesSpotWhenSpotIsUp) {
  const Policy policy = BasePolicy();
  const Plan plan = MakePlan(PendingScene(/*spot=*/true, Seconds(0)), policy);
  EXPECT_TRUE(AllOf(plan, CapacityType::kSpot)) << plan.summary;
}

TEST(UniformProgress, ACommittedUnitGoesToOnDemandEvenWhenSpotIsUp) {
  // Ahead of its line but with slack for no more than the margin and one
  // interruption's loss: an interruption on spot could cost its deadline.
  const Policy policy = BasePolicy();
  Snapshot s = PendingScene(/*spot=*/true, Seconds(0), Seconds(3600));
  s.pending[0].deadline = s.time + Seconds(3600) + kLaunchLatency + kRestartCost + kMargin + kLoss;
  const Plan plan = MakePlan(s, policy);
  EXPECT_TRUE(AllOf(plan, CapacityType::kOnDemand)) << plan.summary;
  // One second more of slack: spot.
  s.pending[0].deadline = *s.pending[0].deadline + Seconds(1);
  EXPECT_TRUE(AllOf(MakePlan(s, policy), CapacityType::kSpot));
}

TEST(UniformProgress, AUnitThatCannotMeetItsDeadlineIsReportedAtOnce) {
  const Policy policy = BasePolicy();
  Snapshot s = PendingScene(/*spot=*/true, Seconds(12 * 3600));  // 3 h left for 10 h of work
  const Plan plan = MakePlan(s, policy);
  EXPECT_TRUE(HasNote(plan, "class training: unit job cannot meet its deadline")) << plan.summary;
  // Planned as any other work: spot is up and cheaper.
  EXPECT_TRUE(AllOf(plan, CapacityType::kSpot)) << plan.summary;
  EXPECT_TRUE(plan.unplaced.empty());
}

TEST(UniformProgress, ARunningSpotUnitBehindItsLineMovesToOnDemand) {
  const Policy policy = BasePolicy();
  // 2 h behind its line on spot: replaced by an on-demand node, which comes
  // first (kReplace), its work moving there.
  const Plan plan = MakePlan(RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600)), policy);
  ASSERT_EQ(plan.terminations.size(), 1u) << plan.summary;
  const TerminationAction& t = plan.terminations[0];
  EXPECT_EQ(t.node_id, "n1");
  EXPECT_EQ(t.kind, TerminationKind::kReplace);
  EXPECT_EQ(t.moved_unit_ids, std::vector<std::string>{"job"});
  EXPECT_NE(t.reason.find("behind its deadline's line"), std::string::npos) << t.reason;
  EXPECT_EQ(LaunchedFor(plan, "job"), CapacityType::kOnDemand) << plan.summary;
  EXPECT_TRUE(HasNote(plan, "deadlines: 1 node(s) move their work to on-demand, 0 to spot")) << plan.summary;

  // Moves come first among the plan's removals: the scaling rules let
  // removals through in plan order.
  Snapshot with_empty = RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600));
  with_empty.nodes.insert(with_empty.nodes.begin(),
                          MakeNode(with_empty, "idle", "m5.xlarge", "us-east-1a", CapacityType::kOnDemand));
  const Plan both = MakePlan(with_empty, policy);
  ASSERT_EQ(both.terminations.size(), 2u) << both.summary;
  EXPECT_EQ(both.terminations[0].node_id, "n1");
  EXPECT_EQ(both.terminations[1].node_id, "idle");

  // On its line (4 h done of the 4 h asked): it stays.
  const Plan on_line = MakePlan(RunningScene(CapacityType::kSpot, true, Seconds(7 * 3600)), policy);
  EXPECT_TRUE(on_line.terminations.empty()) << on_line.summary;
  // The earlier rule never moves running work.
  const Plan old = MakePlanWithDeadlineStrategy(RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600)),
                                                policy, DeadlineStrategy::kHoldPending);
  EXPECT_TRUE(old.terminations.empty()) << old.summary;
}

TEST(UniformProgress, ARunningOnDemandUnitAheadOfItsLineMovesToSpotWhenSpotIsUp) {
  const Policy policy = BasePolicy();
  // 5 h left an hour ago: 6 h done against the line's 4 h.
  const Plan plan = MakePlan(RunningScene(CapacityType::kOnDemand, true, Seconds(5 * 3600)), policy);
  ASSERT_EQ(plan.terminations.size(), 1u) << plan.summary;
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kReplace);
  EXPECT_NE(plan.terminations[0].reason.find("ahead of its deadlines' lines"), std::string::npos)
      << plan.terminations[0].reason;
  EXPECT_EQ(LaunchedFor(plan, "job"), CapacityType::kSpot) << plan.summary;

  // Spot down: it stays on on-demand.
  EXPECT_TRUE(
      MakePlan(RunningScene(CapacityType::kOnDemand, false, Seconds(5 * 3600)), policy).terminations.empty());
  // Ahead by less than the margin: it stays, and consolidation does not move
  // it to a cheaper spot node either.
  const Plan close =
      MakePlan(RunningScene(CapacityType::kOnDemand, true, Seconds(7 * 3600) - kMargin + Seconds(5)), policy);
  EXPECT_TRUE(close.terminations.empty()) << close.summary;
  // A node that must not be disrupted stays.
  Snapshot kept = RunningScene(CapacityType::kOnDemand, true, Seconds(5 * 3600));
  kept.nodes[0].do_not_disrupt = true;
  EXPECT_TRUE(MakePlan(kept, policy).terminations.empty());
}

TEST(UniformProgress, HeldUnitsQueuedBeforeAUnitSentToOnDemandAreReleasedWhenTheyFitItsRoom) {
  const Policy policy = BasePolicy();
  // Spot down. Queued first: "ahead", 2 GPUs, half done, held. Then
  // "behind", 4 GPUs, an hour past submission with nothing done: it goes
  // to on-demand, and the scheduler would give its node's room to "ahead"
  // first, so "ahead" is planned as any other work too.
  Snapshot s = BaseSnapshot();
  SetSpot(s, false);
  DemandUnit ahead = DeadlineUnit("ahead", s.time - Seconds(3600), Seconds(5 * 3600));
  ahead.gpus = 2;
  DemandUnit behind = DeadlineUnit("behind", s.time - Seconds(3600), kWork);
  behind.gpus = 4;
  s.pending = {ahead, behind};
  const PendingDeadlineCalls calls = FindPendingDeadlineCalls(s, policy);
  EXPECT_TRUE(calls.held.empty());
  EXPECT_EQ(calls.on_demand, std::vector<size_t>{1});
  EXPECT_EQ(calls.released, std::vector<size_t>{0});
  const Plan plan = MakePlan(s, policy);
  EXPECT_TRUE(plan.unplaced.empty()) << plan.summary;
  EXPECT_EQ(LaunchedFor(plan, "ahead"), CapacityType::kOnDemand) << plan.summary;

  // Larger than the room launched for "behind": it could not take it, and
  // stays held.
  s.pending[0].gpus = 8;
  EXPECT_EQ(FindPendingDeadlineCalls(s, policy).held.size(), 1u);
  // Queued after it: the scheduler serves "behind" first; held too.
  s.pending = {behind, ahead};
  const PendingDeadlineCalls after = FindPendingDeadlineCalls(s, policy);
  ASSERT_EQ(after.held.size(), 1u);
  EXPECT_EQ(after.held[0].pending_index, 1u);
  EXPECT_TRUE(after.released.empty());
}

TEST(UniformProgress, NoMoveToOnDemandWhereAnotherSpotNodesRoomWouldTakeTheWorkBack) {
  const Policy policy = BasePolicy();
  Snapshot s = RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600));  // 2 h behind
  ASSERT_EQ(FindDeadlineMoves(s, policy).size(), 1u);
  // Another spot node with a free GPU: the scheduler may put the moved work
  // there, so the move would only cost a restart.
  s.nodes.push_back(MakeNode(s, "n2", "g6.xlarge", "us-east-1b", CapacityType::kSpot));
  EXPECT_TRUE(FindDeadlineMoves(s, policy).empty());
}

TEST(UniformProgress, ConsolidationLeavesDeadlineWorkThatCannotAffordARestart) {
  const Policy policy = BasePolicy();
  // Two on-demand g6.12xlarge nodes, one deadline unit each: consolidation
  // would empty one into the other's free room.
  Snapshot s = BaseSnapshot();
  SetSpot(s, false);
  for (const char* id : {"a", "b"}) {
    DemandUnit u = DeadlineUnit(std::string("job-") + id, s.time - Seconds(6 * 3600), Seconds(9 * 3600));
    u.progressing_since = s.time - Seconds(3600);  // on its line less 2 h: behind
    s.nodes.push_back(
        MakeNode(s, std::string("n-") + id, "g6.12xlarge", "us-east-1a", CapacityType::kOnDemand, {u}));
  }
  EXPECT_TRUE(MakePlan(s, policy).terminations.empty()) << MakePlan(s, policy).summary;
  // The same work without deadlines is consolidated.
  for (Node& n : s.nodes) n.running[0].deadline.reset();
  EXPECT_FALSE(MakePlan(s, policy).terminations.empty());
}

TEST(UniformProgress, MovesToSpotStayWithinThePoolsDisruptionAllowance) {
  Policy policy = BasePolicy();
  // Two on-demand nodes, each with a unit 2 h ahead of its line.
  Snapshot s = RunningScene(CapacityType::kOnDemand, true, Seconds(5 * 3600));
  Node second = s.nodes[0];
  second.id = second.instance_id = "n2";
  second.running[0].id = "job-2";
  s.nodes.push_back(second);
  EXPECT_EQ(FindDeadlineMoves(s, policy).size(), 2u);
  policy.disruption.max_disrupted_per_interval = 1;
  EXPECT_EQ(FindDeadlineMoves(s, policy).size(), 1u);
  s.recently_disrupted["gpu"] = 1;
  EXPECT_TRUE(FindDeadlineMoves(s, policy).empty());
}

TEST(UniformProgress, HeldWorkRidesOutASpotPoolsReclaimCooldown) {
  const Policy policy = BasePolicy();
  Snapshot s = PendingScene(/*spot=*/true, Seconds(0));
  // Every spot offering in its reclaim cooldown: held work still takes spot.
  for (const Offering& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot) s.reclaimed_spot_pools.push_back(o.Key());
  std::sort(s.reclaimed_spot_pools.begin(), s.reclaimed_spot_pools.end());
  EXPECT_TRUE(AllOf(MakePlan(s, policy), CapacityType::kSpot));
  // Work without a deadline stays out of the cooled pools.
  s.pending[0].deadline.reset();
  EXPECT_TRUE(AllOf(MakePlan(s, policy), CapacityType::kOnDemand));
}

TEST(UniformProgress, WorkWithoutARuntimeOfItsOwnHasNoLine) {
  const Policy policy = BasePolicy();
  // Behind where a line would put it, but no runtime stated: held by its
  // slack alone (5 h of it).
  Snapshot pending = PendingScene(/*spot=*/false, Seconds(3600));
  pending.pending[0].total_work = Seconds(0);
  const DeadlineStanding st =
      StandingOf(pending, policy, pending.pending[0], RestartAllowance(pending, pending.pending[0]));
  EXPECT_FALSE(st.has_line);
  EXPECT_EQ(LaunchedNodes(MakePlan(pending, policy)), 0);
  // Far ahead on on-demand, but no line to be ahead of: it stays.
  Snapshot running = RunningScene(CapacityType::kOnDemand, true, Seconds(5 * 3600));
  running.nodes[0].running[0].total_work = Seconds(0);
  EXPECT_TRUE(MakePlan(running, policy).terminations.empty());
}

TEST(UniformProgress, TheLineTermsTravelInTheSnapshotJson) {
  const Snapshot s = RunningScene(CapacityType::kSpot, true, Seconds(9 * 3600));
  Result<Snapshot> back = ParseSnapshotJson(FormatSnapshotJson(s), "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  const DemandUnit& u = back->nodes[0].running[0];
  EXPECT_EQ(u.submitted, s.nodes[0].running[0].submitted);
  EXPECT_EQ(u.total_work, kWork);
  EXPECT_EQ(u.progressing_since, s.nodes[0].running[0].progressing_since);
  const Policy policy = BasePolicy();
  EXPECT_EQ(FormatPlanJsonLine(MakePlan(*back, policy)), FormatPlanJsonLine(MakePlan(s, policy)));
}

}  // namespace
}  // namespace gpuscaler::uniform_progress_test
