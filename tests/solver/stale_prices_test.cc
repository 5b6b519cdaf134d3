// Prices that cannot be trusted (Snapshot::stale_prices): the planner buys
// no node to take a running node's work, and says why in the plan's notes;
// work still moves into free room, and pending work is still placed.
#include <gtest/gtest.h>

#include "gpuscaler/solver/planner.h"
#include "solver/fixtures.h"
#include "solver/plan_checker.h"

namespace gpuscaler {
namespace {

using testing::BasePolicy;
using testing::BaseSnapshot;
using testing::ExpectValid;
using testing::MakeNode;
using testing::OnDemandOnly;
using testing::Unit;

bool HasNoteContaining(const Plan& plan, const std::string& text) {
  for (const std::string& n : plan.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(StalePrices, NoReplacementIsMadeOnStalePricesAndTheNotesSayWhy) {
  Snapshot s = BaseSnapshot();
  // One small unit on a big on-demand node: a g6.xlarge would hold it for
  // far less (a replacement with live prices).
  s.nodes.push_back(MakeNode(s, "big", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("w", 1))}));
  const Policy p = BasePolicy();
  ASSERT_EQ(MakePlan(s, p).terminations.size(), 1u);

  s.stale_prices = "catalog prices: the spot price source has not answered since start";
  const Plan plan = MakePlan(s, p);
  EXPECT_TRUE(plan.terminations.empty());
  EXPECT_TRUE(plan.launches.empty());
  EXPECT_TRUE(HasNoteContaining(plan, "catalog prices: the spot price source has not answered since start: no replacements"));
  EXPECT_NE(plan.summary.find("no replacements"), std::string::npos) << plan.summary;
  ExpectValid(s, p, plan);
}

TEST(StalePrices, WorkStillMovesIntoFreeRoomAndPendingWorkIsStillPlaced) {
  Snapshot s = BaseSnapshot();
  // Two on-demand g5.48xlarge with one unit each: one node's unit fits on
  // the other, which saves a whole node whatever the spot prices say.
  s.nodes.push_back(MakeNode(s, "a", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("wa", 1))}));
  s.nodes.push_back(MakeNode(s, "b", "g5.48xlarge", "us-east-1a", CapacityType::kOnDemand, {OnDemandOnly(Unit("wb", 1))}));
  s.pending.push_back(Unit("new", 1));
  s.stale_prices = "spot prices stale: the source has not answered for over 1h";
  const Policy p = BasePolicy();
  const Plan plan = MakePlan(s, p);
  ASSERT_EQ(plan.terminations.size(), 1u);
  EXPECT_EQ(plan.terminations[0].kind, TerminationKind::kConsolidate);
  EXPECT_TRUE(plan.unplaced.empty());
  EXPECT_TRUE(HasNoteContaining(plan, "spot prices stale"));
  ExpectValid(s, p, plan);
}

}  // namespace
}  // namespace gpuscaler
