#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "gpuscaler/policy/policy.h"

namespace gpuscaler {
namespace {

TEST(HourlyAllowance, IsTheLowerOfTheHourlyCapAndTheMonthLeftSpreadOverItsHours) {
  constexpr double kNone = std::numeric_limits<double>::infinity();
  struct Case {
    std::string name;
    std::optional<double> hourly_usd;
    std::optional<double> monthly_usd;
    double month_to_date_usd;
    double hours_left;
    double want;
  };
  const std::vector<Case> cases = {
      {"no cap", std::nullopt, std::nullopt, 500, 100, kNone},
      {"hourly only", 12, std::nullopt, 500, 100, 12},
      {"monthly: what is left over the hours left", std::nullopt, 1000, 400, 200, 3},
      {"both: the lower", 2, 1000, 400, 200, 2},
      {"month overspent: nothing", 50, 1000, 1200, 200, 0},
      {"hours left unknown: the monthly part waits", 7, 1000, 999, 0, 7},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BudgetCap cap;
    cap.hourly_usd = c.hourly_usd;
    cap.monthly_usd = c.monthly_usd;
    EXPECT_DOUBLE_EQ(HourlyAllowanceUsd(cap, c.month_to_date_usd, c.hours_left), c.want);
  }
}

TEST(NodePoolPolicy, AllowsTheOfferingsOfItsRegionsAndZonesOnly) {
  Offering east_a;
  east_a.region = "us-east-1";
  east_a.zone = "us-east-1a";
  Offering west_a = east_a;
  west_a.region = "us-west-2";
  west_a.zone = "us-west-2a";
  NodePoolPolicy pool;
  EXPECT_TRUE(pool.AllowsLocation(east_a) && pool.AllowsLocation(west_a)) << "no lists: anywhere";
  pool.regions = {"us-east-1"};
  EXPECT_TRUE(pool.AllowsLocation(east_a));
  EXPECT_FALSE(pool.AllowsLocation(west_a)) << "another region, though no zone is listed";
  pool.regions.clear();
  pool.zones = {"us-west-2a"};
  EXPECT_FALSE(pool.AllowsLocation(east_a));
  EXPECT_TRUE(pool.AllowsLocation(west_a));
}

}  // namespace
}  // namespace gpuscaler
