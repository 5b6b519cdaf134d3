// The offering book and the spot risk learner, each alone: live prices and
// availability marks into the offerings, learned rates written in only when
// they moved enough.
#include "gpuscaler/controller/offering_book.h"

#include <gtest/gtest.h>

#include "fakes/fake_clock.h"
#include "fakes/fake_cloud_provider.h"
#include "fakes/g5_fleet.h"
#include "gpuscaler/controller/spot_risk.h"

namespace gpuscaler {
namespace {

const WallTime kBookT0 = FromUnixSeconds(1'780'000'000);

const Offering& BookOffering(const OfferingBook& book, const std::string& key) {
  const int i = book.Find(key);
  EXPECT_GE(i, 0) << key;
  return book.offerings()[static_cast<size_t>(i)];
}

TEST(OfferingBook, AZonalPriceMovesOneOfferingAndARegionalPriceEveryZone) {
  FakeClock clock(kBookT0);
  FakeCloudProvider cloud(clock);
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  cloud.prices = {{"g5.xlarge", "us-east-1a", CapacityType::kSpot, 0.5, kBookT0}};
  TickReport report;
  std::vector<PriceMove> moves = book.ReadPrices(cloud, kBookT0 + Seconds(60), &report);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(book.key(moves[0].offering), "g5.xlarge/us-east-1a/spot");
  EXPECT_EQ(BookOffering(book, "g5.xlarge/us-east-1a/spot").usd_per_hour, 0.5);
  EXPECT_EQ(BookOffering(book, "g5.xlarge/us-east-1b/spot").usd_per_hour, 0.4);
  EXPECT_TRUE(book.ReadPrices(cloud, kBookT0 + Seconds(120), &report).empty()) << "the same price is no move";

  cloud.prices.push_back({"g5.xlarge", "us-east-1", CapacityType::kSpot, 0.3, kBookT0 + Seconds(150)});
  moves = book.ReadPrices(cloud, kBookT0 + Seconds(180), &report);
  EXPECT_EQ(moves.size(), 2u);
  EXPECT_EQ(BookOffering(book, "g5.xlarge/us-east-1b/spot").usd_per_hour, 0.3);
  EXPECT_TRUE(report.errors.empty());
}

TEST(OfferingBook, AFailedPriceReadKeepsTheLastPricesAndIsReported) {
  FakeClock clock(kBookT0);
  FakeCloudProvider cloud(clock);
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  cloud.prices_error = Error::Transient("throttled");
  TickReport report;
  EXPECT_TRUE(book.ReadPrices(cloud, kBookT0 + Seconds(60), &report).empty());
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].ToString().find("spot prices"), std::string::npos);
  EXPECT_EQ(BookOffering(book, "g5.xlarge/us-east-1a/spot").usd_per_hour, 0.4);
}

TEST(OfferingBook, ACapacityErrorMarksTheOfferingUntilItsMarkExpires) {
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  EXPECT_FALSE(book.RefreshAvailability(kBookT0).any);
  book.availability().RecordCapacityError("g5.xlarge/us-east-1a/spot", kBookT0);
  const OfferingChanges marked = book.RefreshAvailability(kBookT0 + Seconds(1));
  EXPECT_TRUE(marked.any);
  EXPECT_TRUE(marked.structural) << "the planner must stop using it";
  EXPECT_FALSE(BookOffering(book, "g5.xlarge/us-east-1a/spot").available);
  EXPECT_EQ(book.unavailable(), std::vector<std::string>{"g5.xlarge/us-east-1a/spot"});
  EXPECT_FALSE(book.RefreshAvailability(kBookT0 + Seconds(2)).any) << "nothing new";
  EXPECT_TRUE(book.RefreshAvailability(kBookT0 + Seconds(3600)).any);
  EXPECT_TRUE(BookOffering(book, "g5.xlarge/us-east-1a/spot").available);
}

TEST(OfferingBook, AReclaimWaveMarksEverySpotOfferingOfItsFailureDomain) {
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  const int spot = book.Find("g5.xlarge/us-east-1a/spot");
  ASSERT_GE(spot, 0);
  EXPECT_EQ(book.risk_group(static_cast<size_t>(spot)), "g5/us-east-1a");
  book.availability().RecordReclaimNotice("g5/us-east-1a", 1, kBookT0);
  EXPECT_TRUE(book.RefreshAvailability(kBookT0 + Seconds(1)).structural);
  EXPECT_EQ(book.reclaimed_spot_pools(), std::vector<std::string>{"g5.xlarge/us-east-1a/spot"});
}

TEST(SpotRiskLearner, NoticesAgainstExposureRaiseTheRateAndSmallMovesAreNotWritten) {
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  const auto spot = static_cast<size_t>(book.Find("g5.xlarge/us-east-1a/spot"));
  const double prior = book.offerings()[spot].interruptions_per_hour;
  SpotRiskLearner learner(book, {});
  EXPECT_EQ(learner.HoursSinceLastExposure(kBookT0), 0);
  EXPECT_FALSE(learner.Refresh(book, kBookT0).rates) << "no evidence: the prior stands";
  const double hours = learner.HoursSinceLastExposure(kBookT0 + Seconds(2 * 3600));
  EXPECT_DOUBLE_EQ(hours, 2.0);
  learner.AddExposure(spot, hours);
  for (int i = 0; i < 3; ++i) learner.RecordNotice(book, spot, /*group_nodes=*/3, kBookT0 + Seconds(2 * 3600));
  EXPECT_TRUE(learner.Refresh(book, kBookT0 + Seconds(2 * 3600)).rates);
  EXPECT_GT(book.offerings()[spot].interruptions_per_hour, prior);
  EXPECT_FALSE(learner.Refresh(book, kBookT0 + Seconds(2 * 3600 + 60)).rates) << "not due, nothing new";
}

TEST(SpotRiskLearner, OffLeavesTheCatalogsRates) {
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  const auto spot = static_cast<size_t>(book.Find("g5.xlarge/us-east-1a/spot"));
  const double prior = book.offerings()[spot].interruptions_per_hour;
  SpotRiskOptions off;
  off.learn = false;
  SpotRiskLearner learner(book, off);
  learner.RecordNotice(book, spot, /*group_nodes=*/1, kBookT0);
  EXPECT_FALSE(learner.Refresh(book, kBookT0 + Seconds(3600)).rates);
  EXPECT_EQ(book.offerings()[spot].interruptions_per_hour, prior);
}

// Reclaims that take a whole group at once make a gang on spot barely
// riskier than one node; reclaims one node at a time leave the share at 0.
TEST(SpotRiskLearner, BurstsOfNoticesTeachHowMuchReclaimsGoTogether) {
  OfferingBook book(testing::G5XlargeCatalog(), {}, Seconds(180), Seconds(3600), kBookT0);
  const auto spot = static_cast<size_t>(book.Find("g5.xlarge/us-east-1a/spot"));
  const auto other_zone = static_cast<size_t>(book.Find("g5.xlarge/us-east-1b/spot"));
  SpotRiskLearner learner(book, {});
  // One at a time: 1 of 4 nodes, twice, far apart.
  learner.RecordNotice(book, spot, /*group_nodes=*/4, kBookT0);
  learner.RecordNotice(book, spot, /*group_nodes=*/4, kBookT0 + Seconds(3600));
  learner.Refresh(book, kBookT0 + Seconds(7200));
  EXPECT_EQ(learner.CoReclaimShare("g5/us-east-1a"), 0);
  EXPECT_EQ(book.offerings()[spot].co_reclaim_share, 0);

  // Then all four within a minute, twice: 6 of the 12 chances went together.
  for (int wave = 0; wave < 2; ++wave) {
    const WallTime at = kBookT0 + Seconds(3 * 3600 + wave * 3600);
    for (int k = 0; k < 4; ++k) learner.RecordNotice(book, spot, /*group_nodes=*/4, at + Seconds(15 * k));
  }
  EXPECT_TRUE(learner.Refresh(book, kBookT0 + Seconds(5 * 3600 + 600)).shares);
  EXPECT_DOUBLE_EQ(learner.CoReclaimShare("g5/us-east-1a"), 6.0 / 13.0);
  EXPECT_DOUBLE_EQ(book.offerings()[spot].co_reclaim_share, 6.0 / 13.0);
  EXPECT_EQ(book.offerings()[other_zone].co_reclaim_share, 0) << "another failure domain";
}

}  // namespace
}  // namespace gpuscaler
