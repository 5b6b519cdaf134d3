// The demand forecaster (controller/forecast.h): seasonality, the recent
// level, quantiles, the fallback without history, and that it never reads
// past the present.
#include "gpuscaler/controller/forecast.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpuscaler {
namespace {

constexpr int64_t kDay = 24 * 3600;
// 2026-01-05 00:00 UTC, a Monday.
const WallTime kStart = FromUnixSeconds(1767571200);

WallTime At(int day, int hour, int minute) {
  return kStart + Seconds(day * kDay + hour * 3600 + minute * 60);
}

// Office-hours demand: 10 GPUs, 30 from 08:00 to 17:59 every day.
double Office(int hour) { return hour >= 8 && hour < 18 ? 30 : 10; }

// Every minute of `days` days of office demand, sampled twice a minute (as
// 30 s ticks would).
DemandHistory OfficeHistory(int days) {
  DemandHistory h;
  for (int d = 0; d < days; ++d)
    for (int m = 0; m < 24 * 60; ++m)
      for (int s : {0, 30}) h.Record(At(d, 0, m) + Seconds(s), Office(m / 60));
  return h;
}

double Level(const ForecastResult& r, double q) {
  for (const ForecastLevel& l : r.levels)
    if (l.quantile == q) return l.gpus;
  ADD_FAILURE() << "no level " << q;
  return -1;
}

const std::vector<double> kQuantiles = {0.5, 0.8, 0.9};

TEST(Forecast, DailySeasonalityForeseesTheMorningRiseBeforeItHappens) {
  // Seven days of history, up to 07:58 on day 8 (demand 10 so far today).
  DemandHistory h = OfficeHistory(7);
  for (int m = 0; m <= 7 * 60 + 58; ++m) h.Record(At(7, 0, m), 10);
  // Ten minutes ahead of 07:58: on past days the demand rose by 20 within
  // ten minutes from 07:50-07:59, 10 of the 61 minutes around now's time of
  // day (the weekly day counted twice), and the last hour was flat.
  const ForecastResult r = ForecastPeak(h, At(7, 7, 58), 10, Seconds(600), kQuantiles);
  ASSERT_TRUE(r.fallback.empty()) << r.fallback;
  EXPECT_EQ(Level(r, 0.5), 10);  // most windows at this time of day stay flat
  EXPECT_EQ(Level(r, 0.9), 30);  // the rise is within the top decile
  // At noon nothing changes on any past day: every quantile is the level.
  DemandHistory noon = OfficeHistory(7);
  for (int m = 0; m <= 12 * 60; ++m) noon.Record(At(7, 0, m), Office(m / 60));
  const ForecastResult flat = ForecastPeak(noon, At(7, 12, 0), 30, Seconds(600), kQuantiles);
  EXPECT_EQ(Level(flat, 0.5), 30);
  EXPECT_EQ(Level(flat, 0.9), 30);
}

TEST(Forecast, StartsFromTheRecentLevelNotTheSeasonalMean) {
  // Days at 10 GPUs, then today at 45 from 06:00: the forecast moves with
  // today's level (it reads changes, not levels).
  DemandHistory h;
  for (int m = 0; m < 7 * 24 * 60; ++m) h.Record(At(0, 0, m), 10);
  for (int m = 0; m <= 9 * 60; ++m) h.Record(At(7, 0, m), m >= 6 * 60 ? 45 : 10);
  const ForecastResult r = ForecastPeak(h, At(7, 9, 0), 45, Seconds(300), kQuantiles);
  ASSERT_TRUE(r.fallback.empty()) << r.fallback;
  EXPECT_EQ(Level(r, 0.5), 45);
  EXPECT_EQ(Level(r, 0.9), 45);
}

TEST(Forecast, QuantilesFollowTheEmpiricalDistributionOfRises) {
  // Three hours of a sawtooth 0, 1, ..., 9, 0, ... one step a minute: over
  // one minute demand rises by 1 nine times in ten and falls by 9 once.
  DemandHistory h;
  for (int m = 0; m < 180; ++m) h.Record(At(0, 0, m), m % 10);
  const ForecastResult r = ForecastPeak(h, At(0, 2, 59), 9, Seconds(60), {0.05, 0.5, 0.9});
  ASSERT_TRUE(r.fallback.empty()) << r.fallback;
  EXPECT_EQ(r.samples, 61);      // the last hour only: no past day yet
  EXPECT_EQ(Level(r, 0.05), 0);  // 9 - 9
  EXPECT_EQ(Level(r, 0.5), 10);  // 9 + 1
  EXPECT_EQ(Level(r, 0.9), 10);
  // Levels never go below zero and rise with the quantile.
  for (size_t i = 1; i < r.levels.size(); ++i) EXPECT_GE(r.levels[i].gpus, r.levels[i - 1].gpus);
}

TEST(Forecast, TooLittleHistoryGivesNoForecastAndSaysWhy) {
  DemandHistory h;
  for (int m = 0; m < 30; ++m) h.Record(At(0, 0, m), 5);
  const ForecastResult r = ForecastPeak(h, At(0, 0, 29), 5, Seconds(120), kQuantiles);
  EXPECT_TRUE(r.levels.empty());
  EXPECT_NE(r.fallback.find("needs 60"), std::string::npos) << r.fallback;

  DemandForecaster f;
  const ForecastResult none = f.Forecast("unknown", At(0, 0, 0), 3, Seconds(120), kQuantiles);
  EXPECT_TRUE(none.levels.empty());
  EXPECT_EQ(none.fallback, "no demand history yet");
}

TEST(Forecast, NeverReadsMinutesAfterNow) {
  // The same past, then one history goes on with a burst: a forecast made at
  // `now` is the same from both.
  DemandHistory past = OfficeHistory(3);
  DemandHistory with_future = OfficeHistory(3);
  for (int m = 0; m < 120; ++m) with_future.Record(At(3, 0, m), 500);
  for (int d = 0; d < 3; ++d) {
    const WallTime now = At(d, 17, 55);
    const ForecastResult a = ForecastPeak(past, now, 30, Seconds(900), ForecastQuantileGrid());
    const ForecastResult b = ForecastPeak(with_future, now, 30, Seconds(900), ForecastQuantileGrid());
    ASSERT_EQ(a.levels.size(), b.levels.size());
    EXPECT_EQ(a.samples, b.samples);
    for (size_t i = 0; i < a.levels.size(); ++i) EXPECT_EQ(a.levels[i].gpus, b.levels[i].gpus);
  }
}

TEST(Forecast, HistoryIsBoundedAndKeepsTheMinutesPeak) {
  DemandHistory h(Seconds(2 * 3600));  // two hours
  for (int m = 0; m < 600; ++m) h.Record(At(0, 0, m), m);
  EXPECT_EQ(h.filled(), 120);
  EXPECT_FALSE(h.At(At(0, 0, 479).time_since_epoch().count() / 60).has_value());
  EXPECT_EQ(h.At(ToUnixSeconds(At(0, 0, 599)) / 60), 599);
  h.Record(At(0, 0, 599) + Seconds(10), 1000);
  h.Record(At(0, 0, 599) + Seconds(20), 3);
  EXPECT_EQ(h.At(ToUnixSeconds(At(0, 0, 599)) / 60), 1000);
  // A sample older than the history is dropped.
  h.Record(At(0, 0, 10), 7);
  EXPECT_FALSE(h.At(ToUnixSeconds(At(0, 0, 10)) / 60).has_value());
  EXPECT_EQ(h.filled(), 120);
}

// Knows class "api": its peak is the horizon in minutes (so the horizon
// asked for shows in the answer); records what it was asked.
class MinutesOracle final : public DemandOracle {
 public:
  mutable std::vector<std::pair<WallTime, Seconds>> asked;
  std::optional<double> PeakWithin(const std::string& workload_class, WallTime now, Seconds horizon) const override {
    if (workload_class != "api") return std::nullopt;
    asked.emplace_back(now, horizon);
    return static_cast<double>(horizon.count()) / 60;
  }
  std::string Description() const override { return "minutes"; }
};

TEST(Forecast, AnOracleGivesEveryQuantileItsPeakWithoutHistoryAndOtherClassesStayLearned) {
  DemandForecaster f;
  for (int d = 0; d < 7; ++d)
    for (int m = 0; m < 24 * 60; ++m) f.Record("batch", At(d, 0, m), Office(m / 60));
  const ForecastResult learned_before = f.Forecast("batch", At(7, 7, 58), 10, Seconds(600), kQuantiles);
  MinutesOracle oracle;
  f.SetOracle(&oracle);
  // No history at all for api: the oracle's point forecast at every level.
  const ForecastResult api = f.Forecast("api", At(7, 7, 58), 3, Seconds(900), kQuantiles);
  EXPECT_TRUE(api.oracle);
  EXPECT_TRUE(api.fallback.empty());
  ASSERT_EQ(api.levels.size(), kQuantiles.size());
  for (size_t i = 0; i < kQuantiles.size(); ++i) {
    EXPECT_EQ(api.levels[i].quantile, kQuantiles[i]);
    EXPECT_EQ(api.levels[i].gpus, 15);
  }
  ASSERT_EQ(oracle.asked.size(), 1u);
  EXPECT_EQ(oracle.asked[0].first, At(7, 7, 58));
  EXPECT_EQ(oracle.asked[0].second, Seconds(900));
  // A class the oracle does not know: the learned forecast, unchanged.
  const ForecastResult batch = f.Forecast("batch", At(7, 7, 58), 10, Seconds(600), kQuantiles);
  EXPECT_FALSE(batch.oracle);
  ASSERT_EQ(batch.levels.size(), learned_before.levels.size());
  for (size_t i = 0; i < batch.levels.size(); ++i) EXPECT_EQ(batch.levels[i].gpus, learned_before.levels[i].gpus);
  // Unset again: api has no history, so no forecast.
  f.SetOracle(nullptr);
  EXPECT_TRUE(f.Forecast("api", At(7, 7, 58), 3, Seconds(900), kQuantiles).levels.empty());
}

}  // namespace
}  // namespace gpuscaler
