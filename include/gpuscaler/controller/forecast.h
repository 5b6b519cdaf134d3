// The demand forecaster behind classes[].forecast: each class's own demand
// history (GPUs of its pending and running work, sampled every tick) and,
// from it, the distribution of the class's peak demand within a horizon.
//
// The method: the recent level plus the empirical distribution of how much
// demand rose over a window as long as the horizon, at the same time of day
// on past days (daily seasonality), with the same time of week counted
// again (weekly seasonality), and over the last hour (the current regime):
//
//   peak(now + (0, h]) at quantile q
//     = demand(now) + quantile_q{ max_{0<j<=h} d(s + j) - d(s) : s in S }
//
// where S holds the minutes within 30 minutes of now's time of day on each
// of the last 14 days (the days 7 and 14 back twice) and the last hour.
// Why this and not a fitted model (Holt-Winters, ARIMA): it has no
// parameters to fit or to diverge, a level shift does not bias it (it uses
// changes, not levels), its quantiles are read straight from what happened,
// so a bursty class gets a wide forecast without a distributional
// assumption, and it costs a few thousand operations per class and tick
// over a bounded history (one value per minute, 15 days).
//
// Deterministic; values only; not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

struct ForecastOptions {
  // History kept per class, one value (the minute's peak) per minute.
  Seconds history{15 * 24 * 3600};
  // Fewer increments than this (an hour's worth): no forecast, the class is
  // planned reactively.
  int min_samples = 60;
  // Half-width of the time-of-day window on past days.
  Seconds seasonal_window{30 * 60};
  int days_back = 14;
};

// The quantile levels a forecast reports, besides the policy's own.
const std::vector<double>& ForecastQuantileGrid();

// One class's demand history: a ring of per-minute peaks. Minutes with no
// sample are gaps (never zeros).
class DemandHistory {
 public:
  explicit DemandHistory(Seconds history = ForecastOptions{}.history);

  // Demand `gpus` at `t`; the minute keeps the highest. Samples older than
  // the history, or older than the newest by more than the history, are
  // dropped.
  void Record(WallTime t, double gpus);
  // The minute's peak (nullopt: a gap or outside the history).
  std::optional<double> At(int64_t minute) const;
  // The newest minute recorded (unix minutes), nullopt when empty.
  std::optional<int64_t> newest() const { return newest_; }
  // Minutes with a sample.
  int64_t filled() const { return filled_; }

 private:
  std::vector<float> values_;  // NaN: gap
  std::optional<int64_t> newest_;
  int64_t filled_ = 0;
};

struct ForecastResult {
  // Peak demand within the horizon by quantile (ascending); empty when
  // there is no forecast, then `fallback` says why.
  std::vector<ForecastLevel> levels;
  std::string fallback;
  double demand_gpus = 0;  // the level the forecast starts from
  int samples = 0;         // increments it was read from
  // Set when the levels are a DemandOracle's (every level its peak), not
  // learned from the history.
  bool oracle = false;
};

// A source of a class's true future demand: what a perfect forecast would
// know. The simulator's oracle forecast (sim/demand_truth.h) implements it
// from the trace ahead of the clock, to measure how far the learned forecast
// is from the best any forecast could do; the daemon never sets one.
// Implementations must be deterministic; called from the loop's thread.
class DemandOracle {
 public:
  virtual ~DemandOracle() = default;
  // The class's peak demand in GPUs at any instant of (now, now + horizon];
  // nullopt when the oracle does not know the class (its forecast is then
  // the learned one).
  virtual std::optional<double> PeakWithin(const std::string& workload_class, WallTime now,
                                           Seconds horizon) const = 0;
  // What the oracle knows, for notes ("the trace's true future demand").
  virtual std::string Description() const = 0;
};

// Forecast of one class's peak demand within (now, now + horizon], from
// `history` up to `now` only: minutes after `now` are never read.
// `quantiles` are the levels to report (sorted, each in (0, 1)).
ForecastResult ForecastPeak(const DemandHistory& history, WallTime now, double demand_now, Seconds horizon,
                            const std::vector<double>& quantiles, const ForecastOptions& options = {});

// The histories of all classes, fed each tick by the controller.
class DemandForecaster {
 public:
  explicit DemandForecaster(ForecastOptions options = {}) : options_(options) {}
  void Record(const std::string& workload_class, WallTime t, double gpus);
  // Drops the histories of classes not in `keep`.
  void Retain(const std::vector<std::string>& keep);
  // The forecast of a class the oracle knows (SetOracle) is the oracle's:
  // every quantile at its peak within the horizon (a point distribution),
  // whatever the history; of other classes, ForecastPeak of the history.
  ForecastResult Forecast(const std::string& workload_class, WallTime now, double demand_now, Seconds horizon,
                          const std::vector<double>& quantiles) const;
  const DemandHistory* Find(const std::string& workload_class) const;
  const ForecastOptions& options() const { return options_; }
  // Replaces learned forecasts by `oracle`'s for the classes it knows; null
  // (the default, and always in the daemon): learned forecasts only. Not
  // owned; must outlive the forecaster or be unset first. Histories are
  // still recorded.
  void SetOracle(const DemandOracle* oracle) { oracle_ = oracle; }
  const DemandOracle* oracle() const { return oracle_; }

 private:
  ForecastOptions options_;
  std::map<std::string, DemandHistory> histories_;
  const DemandOracle* oracle_ = nullptr;
};

}  // namespace gpuscaler
