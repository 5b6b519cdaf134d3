// Deferrable work held by its slack (solver/deadline_hold.h,
// DeadlineStrategy::kHoldPending): a unit with a deadline waits for spot
// while its slack lasts, goes to on-demand exactly when the slack
// reaches the safety margin, runs on spot at once when spot can take it,
// says why it waits, and travels in the snapshot's JSON so a decision
// replays.
#include "gpuscaler/solver/deadline_hold.h"

#include <gtest/gtest.h>

#include <string>

#include "fixtures.h"
#include "gpuscaler/model/json.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::LaunchedNodes;
using testing::Unit;

constexpr Seconds kRuntime{2 * 3600};
constexpr Seconds kLaunchLatency{120};
constexpr Seconds kRestartCost{300};

// One pending 1-GPU training unit submitted at the snapshot's time with a
// deadline `deadline` later; every offering takes kLaunchLatency to warm
// up; spot is available or not.
Snapshot DeadlineHoldScene(bool spot_available, Seconds deadline) {
  Snapshot s = BaseSnapshot();
  for (Offering& o : s.offerings) {
    o.launch_latency = kLaunchLatency;
    if (o.capacity_type == CapacityType::kSpot) o.available = spot_available;
  }
  DemandUnit u = Unit("job", 1, 2000, 8192, "training");
  u.interruptible = true;
  u.expected_runtime = kRuntime;
  u.restart_cost = kRestartCost;
  u.deadline = s.time + deadline;
  s.pending.push_back(u);
  return s;
}

bool AllOf(const Plan& p, CapacityType cap) {
  for (const LaunchAction& l : p.launches)
    if (l.count > 0 && l.offering.capacity_type != cap) return false;
  return LaunchedNodes(p) > 0;
}

using testing::HasNote;

// The earlier rule, kept for comparison (DeadlineStrategy::kHoldPending):
// what this file pins down. Uniform Progress is in uniform_progress_test.cc.
Plan HoldPlan(const Snapshot& s, const Policy& policy) {
  return MakePlanWithDeadlineStrategy(s, policy, DeadlineStrategy::kHoldPending);
}

TEST(DeadlineHold, LaunchesOnDemandExactlyWhenTheSlackRunsOut) {
  const Policy policy = BasePolicy();
  Snapshot s = DeadlineHoldScene(/*spot_available=*/false, Seconds(6 * 3600));
  const WallTime deadline = *s.pending[0].deadline;
  EXPECT_EQ(RestartAllowance(s, s.pending[0]), kLaunchLatency + kRestartCost);
  // The unit checkpoints every 30 minutes: one interruption on spot may
  // lose that much.
  EXPECT_EQ(SpotLossAllowance(s.pending[0]), Seconds(1800));
  const WallTime switch_at =
      deadline - kRuntime - kLaunchLatency - kRestartCost - kDeadlineSafetyMargin - Seconds(1800);

  // At submission and one second before the switch: held, nothing bought,
  // the reason on the unit and in a note, the planner asks to be called again
  // at the switch time.
  for (WallTime now : {s.time, switch_at - Seconds(1)}) {
    s.time = now;
    const Plan held = HoldPlan(s, policy);
    EXPECT_EQ(LaunchedNodes(held), 0) << held.summary;
    ASSERT_EQ(held.unplaced.size(), 1u);
    EXPECT_EQ(held.unplaced[0].reason, UnplacedReason::kDeadlineHold);
    EXPECT_NE(held.unplaced[0].detail.find("held for spot"), std::string::npos) << held.unplaced[0].detail;
    EXPECT_NE(held.unplaced[0].detail.find("(spot: "), std::string::npos) << held.unplaced[0].detail;
    EXPECT_TRUE(HasNote(held, "class training: 1 unit held for spot by deadline")) << held.summary;
    ASSERT_TRUE(held.replan_by.has_value());
    EXPECT_EQ(*held.replan_by, switch_at);
    EXPECT_NE(held.summary.find("deadline-hold=1"), std::string::npos) << held.summary;
  }

  // At the switch: on-demand, nothing held.
  s.time = switch_at;
  const Plan switched = HoldPlan(s, policy);
  EXPECT_TRUE(AllOf(switched, CapacityType::kOnDemand)) << switched.summary;
  EXPECT_TRUE(switched.unplaced.empty());
  EXPECT_FALSE(switched.replan_by.has_value());
}

TEST(DeadlineHold, RunsOnSpotAtOnceWhenSpotIsAvailable) {
  const Policy policy = BasePolicy();
  const Snapshot s = DeadlineHoldScene(/*spot_available=*/true, Seconds(24 * 3600));
  const Plan plan = HoldPlan(s, policy);
  EXPECT_TRUE(AllOf(plan, CapacityType::kSpot)) << plan.summary;
  EXPECT_TRUE(plan.unplaced.empty());
}

TEST(DeadlineHold, AHeldUnitTakesSpotWhileItsClassSpotIsPaused) {
  // The pause after a spot capacity error keeps the class's work on
  // on-demand; a held unit may not go there, so it still takes spot.
  const Policy policy = BasePolicy();
  Snapshot s = DeadlineHoldScene(/*spot_available=*/true, Seconds(24 * 3600));
  s.spot_paused_classes = {"training"};
  EXPECT_TRUE(AllOf(HoldPlan(s, policy), CapacityType::kSpot));
  // The same unit without a deadline follows the pause.
  s.pending[0].deadline.reset();
  EXPECT_TRUE(AllOf(HoldPlan(s, policy), CapacityType::kOnDemand));
}

TEST(DeadlineHold, WorkThatCannotRunOnSpotOrHasNoSlackIsNotHeld) {
  Policy policy = BasePolicy();
  const Snapshot base = DeadlineHoldScene(/*spot_available=*/false, Seconds(24 * 3600));

  Snapshot not_interruptible = base;
  not_interruptible.pending[0].interruptible = false;
  EXPECT_TRUE(AllOf(HoldPlan(not_interruptible, policy), CapacityType::kOnDemand));

  Snapshot pinned = base;
  pinned.pending[0].capacity_type = CapacityType::kOnDemand;
  EXPECT_TRUE(FindDeadlineHolds(pinned, policy).empty());

  Policy no_spot = policy;
  no_spot.classes[1].max_spot_share = 0;
  EXPECT_TRUE(FindDeadlineHolds(base, no_spot).empty());
  EXPECT_TRUE(AllOf(HoldPlan(base, no_spot), CapacityType::kOnDemand));

  // A deadline closer than the work plus the allowances and margin: no slack.
  const Snapshot tight =
      DeadlineHoldScene(false, kRuntime + kLaunchLatency + kRestartCost + kDeadlineSafetyMargin + Seconds(1800));
  EXPECT_TRUE(FindDeadlineHolds(tight, policy).empty());
  EXPECT_TRUE(AllOf(HoldPlan(tight, policy), CapacityType::kOnDemand));

  // No deadline: runs at once.
  Snapshot undeadlined = base;
  undeadlined.pending[0].deadline.reset();
  EXPECT_TRUE(AllOf(HoldPlan(undeadlined, policy), CapacityType::kOnDemand));
}

TEST(DeadlineHold, RemainingWorkIsWhatIsLeftOfTheUnit) {
  // An interrupted unit with 30 minutes left holds longer than a fresh one.
  const Policy policy = BasePolicy();
  Snapshot s = DeadlineHoldScene(false, Seconds(4 * 3600));
  EXPECT_EQ(FindDeadlineHolds(s, policy).size(), 1u);
  s.time += Seconds(3600);  // 3 h left: 2 h of work, the allowances and margin do not fit
  EXPECT_TRUE(FindDeadlineHolds(s, policy).empty());
  s.pending[0].expected_runtime = Seconds(1800);
  const auto held = FindDeadlineHolds(s, policy);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].slack, Seconds(3 * 3600) - Seconds(1800) - kLaunchLatency - kRestartCost);
}

TEST(DeadlineHold, SpotLossAllowanceFollowsHowTheUnitCheckpoints) {
  DemandUnit u = Unit("u", 1);
  u.expected_runtime = Seconds(7200);
  u.checkpoint_interval = Seconds(1800);
  EXPECT_EQ(SpotLossAllowance(u), Seconds(1800));
  u.checkpoint_on_notice = true;
  EXPECT_EQ(SpotLossAllowance(u), kSpotNoticeWindow);
  u.checkpoint_on_notice = false;
  u.checkpoint_interval = Seconds(0);
  EXPECT_EQ(SpotLossAllowance(u), Seconds(7200));
  u.checkpoint_interval = Seconds(3 * 3600);
  EXPECT_EQ(SpotLossAllowance(u), Seconds(7200));
}

TEST(DeadlineHold, TheDeadlineTravelsInTheSnapshotJson) {
  const Snapshot s = DeadlineHoldScene(false, Seconds(6 * 3600));
  Result<Snapshot> back = ParseSnapshotJson(FormatSnapshotJson(s), "snap.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->pending[0].deadline.has_value());
  EXPECT_EQ(*back->pending[0].deadline, *s.pending[0].deadline);
  const Policy policy = BasePolicy();
  EXPECT_EQ(FormatPlanJsonLine(HoldPlan(*back, policy)), FormatPlanJsonLine(HoldPlan(s, policy)));

  Result<Snapshot> bad =
      ParseSnapshotJson(R"({"pending": [{"id": "u", "deadline": "tomorrow"}]})", "snap.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pending[0].deadline"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace gpuscaler
