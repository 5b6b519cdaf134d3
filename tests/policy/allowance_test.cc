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

}  // namespace
}  // namespace gpuscaler
