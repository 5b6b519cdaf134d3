// The money rule (a node's price split by GPU share, the rest idle) and the
// dollar formatter's styles.
#include "gpuscaler/model/money.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace gpuscaler {
namespace {

double SumOf(const NodePriceSplit& split) {
  double sum = split.idle_usd;
  for (double usd : split.usd) sum += usd;
  return sum;
}

TEST(SplitNodePrice, ANodeNotFullyUsedChargesEachHoldingItsGpusAtThePerGpuRateAndTheRestIsIdle) {
  const std::vector<GpuHolding> holdings = {{"train", "ml", 2}, {"infer", "search", 1}};
  const NodePriceSplit split = SplitNodePrice(16.0, 8, holdings);
  ASSERT_EQ(split.usd.size(), 2u);
  EXPECT_DOUBLE_EQ(split.usd[0], 4.0);  // 2 of 8 GPUs of $16
  EXPECT_DOUBLE_EQ(split.usd[1], 2.0);
  EXPECT_DOUBLE_EQ(split.paid_gpus[0], 2.0);
  EXPECT_DOUBLE_EQ(split.usd_by_team.at("ml"), 4.0);
  EXPECT_DOUBLE_EQ(split.usd_by_class.at("infer"), 2.0);
  EXPECT_DOUBLE_EQ(split.idle_gpus, 5.0);
  EXPECT_DOUBLE_EQ(split.idle_usd, 10.0);
  EXPECT_DOUBLE_EQ(SumOf(split), 16.0);
}

TEST(SplitNodePrice, AFullyUsedNodeHasNoIdle) {
  const std::vector<GpuHolding> holdings = {{"train", "ml", 4}, {"train", "ml", 4}};
  const NodePriceSplit split = SplitNodePrice(16.0, 8, holdings);
  EXPECT_DOUBLE_EQ(split.usd_by_team.at("ml"), 16.0);
  EXPECT_EQ(split.idle_gpus, 0.0);
  EXPECT_EQ(split.idle_usd, 0.0);
}

TEST(SplitNodePrice, AnEmptyNodeIsAllIdle) {
  const NodePriceSplit split = SplitNodePrice(16.0, 8, {});
  EXPECT_TRUE(split.usd.empty());
  EXPECT_TRUE(split.usd_by_team.empty());
  EXPECT_DOUBLE_EQ(split.idle_gpus, 8.0);
  EXPECT_DOUBLE_EQ(split.idle_usd, 16.0);
}

TEST(SplitNodePrice, AnOversubscribedNodeIsPaidForInProportionToWhatEachHoldsAndNothingIsIdle) {
  // 12 GPUs held on an 8-GPU node: each team pays 6/12 of the price, not
  // 6/8 (which would bill the node one and a half times).
  const std::vector<GpuHolding> holdings = {{"train", "ml", 6}, {"infer", "search", 6}};
  const NodePriceSplit split = SplitNodePrice(16.0, 8, holdings);
  EXPECT_DOUBLE_EQ(split.usd_by_team.at("ml"), 8.0);
  EXPECT_DOUBLE_EQ(split.usd_by_team.at("search"), 8.0);
  EXPECT_DOUBLE_EQ(split.paid_gpus[0], 4.0);
  EXPECT_EQ(split.idle_gpus, 0.0);
  EXPECT_EQ(split.idle_usd, 0.0);
  EXPECT_DOUBLE_EQ(SumOf(split), 16.0);
}

TEST(SplitNodePrice, ANodeWithoutGpusChargesNobodyAndIsAllIdle) {
  const std::vector<GpuHolding> holdings = {{"cpu", "ml", 0}, {"train", "ml", 2}};
  const NodePriceSplit split = SplitNodePrice(3.0, 0, holdings);
  ASSERT_EQ(split.usd.size(), 2u);
  EXPECT_EQ(split.usd[0], 0.0);
  EXPECT_EQ(split.usd[1], 0.0);
  EXPECT_TRUE(split.usd_by_team.empty());
  EXPECT_EQ(split.idle_gpus, 0.0);
  EXPECT_EQ(split.idle_usd, 3.0);
}

TEST(SplitNodePrice, WorkWithoutGpusPaysNothingAndHoldsNothing) {
  const std::vector<GpuHolding> holdings = {{"cpu", "ml", 0}, {"train", "", 4}};
  const NodePriceSplit split = SplitNodePrice(8.0, 4, holdings);
  EXPECT_EQ(split.usd[0], 0.0);
  EXPECT_DOUBLE_EQ(split.usd[1], 8.0);
  EXPECT_EQ(split.usd_by_class.count("cpu"), 0u);
  EXPECT_TRUE(split.usd_by_team.empty());  // the GPU work has no team
  EXPECT_EQ(split.idle_usd, 0.0);
}

TEST(SplitNodePrice, TheChargesAndIdleAddUpToThePriceWhateverIsHeld) {
  for (double held : {0.0, 0.5, 1.0, 3.25, 7.0, 8.0, 9.0, 30.0}) {
    SCOPED_TRACE(held);
    const std::vector<GpuHolding> holdings = {{"a", "x", held}, {"b", "y", 1.5}, {"c", "", 0.25}};
    EXPECT_NEAR(SumOf(SplitNodePrice(12.34, 8, holdings)), 12.34, 1e-12);
  }
}

TEST(PaidGpuShare, IsOneUpToTheNodesGpusThenScalesDownAndZeroWithoutGpus) {
  EXPECT_EQ(PaidGpuShare(8, 0), 1.0);
  EXPECT_EQ(PaidGpuShare(8, 8), 1.0);
  EXPECT_DOUBLE_EQ(PaidGpuShare(8, 12), 8.0 / 12);
  EXPECT_EQ(PaidGpuShare(0, 2), 0.0);
  EXPECT_EQ(PricePerGpu(16, 8), 2.0);
  EXPECT_EQ(PricePerGpu(16, 0), 0.0);
}

TEST(FormatUsd, EachStylePrintsAsItsTextAlwaysHas) {
  struct Case {
    double usd;
    MoneyStyle style;
    std::string want;
  };
  const std::vector<Case> cases = {
      {12.345, MoneyStyle::kCents, "$12.35"},
      {-1.5, MoneyStyle::kCents, "$-1.50"},
      {0, MoneyStyle::kCents, "$0.00"},
      {3.5, MoneyStyle::kCentsPerHour, "$3.50/h"},
      {0.042, MoneyStyle::kCentsPerHour, "$0.04/h"},
      {0.04236, MoneyStyle::kFourDecimals, "$0.0424"},
      {0.042, MoneyStyle::kRatePerHour, "$0.0420/h"},
      {-0.042, MoneyStyle::kRatePerHour, "$-0.0420/h"},
      {0, MoneyStyle::kRatePerHour, "$0.00/h"},
      {0.1, MoneyStyle::kRatePerHour, "$0.10/h"},
      {1234.5, MoneyStyle::kRatePerHour, "$1234.50/h"},
      {2.5e6, MoneyStyle::kCompact, "$2.5M"},
      {12345, MoneyStyle::kCompact, "$12.3k"},
      {123.4, MoneyStyle::kCompact, "$123"},
      {1.234, MoneyStyle::kCompact, "$1.23"},
      {-0.001, MoneyStyle::kCompact, "$0.00"},
      {0, MoneyStyle::kAxisTick, "$0.0"},
      {2.5, MoneyStyle::kAxisTick, "$2.5"},
      {10, MoneyStyle::kAxisTick, "$10"},
      {1200, MoneyStyle::kAxisTick, "$1200"},
      {1234.567, MoneyStyle::kBareCents, "1234.57"},
      {-0.5, MoneyStyle::kBareCents, "-0.50"},
      {std::numeric_limits<double>::infinity(), MoneyStyle::kCents, "–"},
      {std::nan(""), MoneyStyle::kCompact, "–"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(FormatUsd(c.usd, c.style), c.want);
  }
}

}  // namespace
}  // namespace gpuscaler
