// The controller's inputs from the cloud: spot prices (the price in force
// from the first tick, staleness) and interruption notices (acknowledged
// only once committed, never lost at a restart).
#include <gtest/gtest.h>

#include "lifecycle_harness.h"

namespace gpuscaler {
namespace {

using testing::GpuUnit;
using testing::LifecyclePolicy;
using testing::LifecycleScene;

double SpotPriceOf(const Snapshot& s, const std::string& zone) {
  for (const Offering& o : s.offerings)
    if (o.capacity_type == CapacityType::kSpot && o.zone == zone) return o.usd_per_hour;
  return -1;
}

bool NotesContain(const Plan& plan, const std::string& text) {
  for (const std::string& n : plan.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

TEST(SpotPriceFeed, APriceSetLongBeforeTheStartIsInForceFromTheFirstTick) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/false));
  s.fake.prices = {{"g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.1234, s.clock.WallNow() - Seconds(7200)},
                   {"g5.xlarge", "us-east-1b", CapacityType::kSpot, 0.2345, s.clock.WallNow() - Seconds(600)}};
  const TickReport r = s.controller->Tick();
  EXPECT_DOUBLE_EQ(SpotPriceOf(s.controller->snapshot(), "us-east-1a"), 0.1234);
  EXPECT_DOUBLE_EQ(SpotPriceOf(s.controller->snapshot(), "us-east-1b"), 0.2345);
  EXPECT_TRUE(s.controller->snapshot().stale_prices.empty());
  EXPECT_TRUE(r.stale_prices.empty());
  EXPECT_EQ(r.price_age, Seconds(0));
}

TEST(SpotPriceFeed, PricesNeverReadAreTheCatalogsAndStaleAndThePlanSaysSo) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/false));
  s.fake.prices = {{"g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.1234, s.clock.WallNow() - Seconds(7200)}};
  s.fake.prices_error = Error::Auth("UnauthorizedOperation: not authorized to perform ec2:DescribeSpotPriceHistory");
  s.work.SetPending({GpuUnit("u1")});
  const TickReport r = s.controller->Tick();
  EXPECT_DOUBLE_EQ(SpotPriceOf(s.controller->snapshot(), "us-east-1a"), 0.4);  // the catalog's
  EXPECT_EQ(s.controller->snapshot().stale_prices,
            "catalog prices: the spot price source has not answered since start");
  EXPECT_NE(r.stale_prices.find("DescribeSpotPriceHistory"), std::string::npos) << r.stale_prices;
  EXPECT_TRUE(r.planned);
  EXPECT_TRUE(NotesContain(r.plan, "catalog prices")) << r.plan.summary;
  EXPECT_NE(r.plan.summary.find("no replacements"), std::string::npos) << r.plan.summary;
}

TEST(SpotPriceFeed, PricesGoStaleAfterMaxStalenessWithoutAnAnswerAndFreshOnTheNext) {
  Policy p = LifecyclePolicy(/*asg=*/false);
  p.signals.max_staleness["prices"] = Seconds(600);
  LifecycleScene s(p);
  s.controller->Tick();
  EXPECT_TRUE(s.controller->snapshot().stale_prices.empty());
  s.fake.prices_error = Error::Transient("503");
  EXPECT_TRUE(s.TickAfter(Seconds(300)).stale_prices.empty());  // 5 minutes: within the limit
  const TickReport stale = s.TickAfter(Seconds(301));
  EXPECT_EQ(stale.price_age, Seconds(601));
  EXPECT_EQ(s.controller->snapshot().stale_prices, "spot prices stale: the source has not answered for over 10m");
  s.fake.prices_error.reset();
  const TickReport fresh = s.TickAfter(Seconds(30));
  EXPECT_EQ(fresh.price_age, Seconds(0));
  EXPECT_TRUE(s.controller->snapshot().stale_prices.empty());
}

TEST(InterruptionNotices, AreAcknowledgedByTheTickThatAppliedThemAndARepeatIsTheSameNotice) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/false));
  s.AddRunningNode("i-spot", "g5.xlarge/us-east-1a/spot", {GpuUnit("a")});
  s.controller->Tick();
  s.clock.Advance(Seconds(30));
  InterruptionNotice n{"i-spot", s.clock.WallNow(), s.clock.WallNow() + Seconds(120)};
  n.receipt = "receipt-1";
  s.fake.notices.push_back(n);
  s.controller->Tick();
  ASSERT_EQ(s.fake.acknowledged.size(), 1u);
  EXPECT_EQ(s.fake.acknowledged[0].receipt, "receipt-1");
  EXPECT_EQ(s.Find("i-spot")->state, NodeState::kDraining);
  // Seen again (an acknowledgement that did not reach the queue): the same
  // notice, applied once.
  s.fake.notices.push_back(n);
  const TickReport again = s.TickAfter(Seconds(5));
  EXPECT_EQ(s.Find("i-spot")->state, NodeState::kDraining);
  EXPECT_EQ(again.nodes_launched, 0) << "its replacement was planned once";
  EXPECT_EQ(s.fake.acknowledged.size(), 2u);
}

TEST(InterruptionNotices, ANoticeReadOnTheFirstTickAfterARestartFindsItsNode) {
  LifecycleScene s(LifecyclePolicy(/*asg=*/false));
  s.AddRunningNode("i-spot", "g5.xlarge/us-east-1a/spot", {GpuUnit("a")});
  s.controller->Tick();
  s.Restart();
  s.clock.Advance(Seconds(60));
  // Issued while the process was down (within the provider's look-back).
  s.fake.notices.push_back({"i-spot", s.clock.WallNow() - Seconds(50), s.clock.WallNow() + Seconds(70)});
  const TickReport r = s.controller->Tick();
  EXPECT_EQ(r.interruption_notices, 1);
  ASSERT_NE(s.Find("i-spot"), nullptr);
  EXPECT_EQ(s.Find("i-spot")->state, NodeState::kDraining);
  // The deadline passes: the node ends as interrupted, not as vanished.
  s.fake.instances.erase("i-spot");
  s.TickAfter(Seconds(80));
  EXPECT_EQ(s.Find("i-spot"), nullptr);
}

}  // namespace
}  // namespace gpuscaler
