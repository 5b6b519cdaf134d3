#include "gpuscaler/controller/forecast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace gpuscaler {
namespace {

constexpr int64_t kMinutesPerDay = 24 * 60;

int64_t MinuteOf(WallTime t) {
  const int64_t s = ToUnixSeconds(t);
  return s >= 0 ? s / 60 : (s - 59) / 60;
}

int64_t HorizonMinutes(Seconds horizon) { return std::max<int64_t>(1, (horizon.count() + 59) / 60); }

// The increments the forecast is read from, sorted. Every minute read is at
// most `now_minute`.
std::vector<double> Increments(const DemandHistory& history, int64_t now_minute, int64_t h,
                               const ForecastOptions& o) {
  std::vector<double> out;
  std::vector<double> values;  // minutes from .. to + h of one window; NaN: gap
  const double gap = std::numeric_limits<double>::quiet_NaN();
  // The rise from each minute s in [from, to] to its peak within (s, s + h],
  // skipping s when it or its whole window is a gap. Each minute is read
  // once per window.
  const auto add_window = [&](int64_t from, int64_t to, int copies) {
    to = std::min(to, now_minute - h);
    if (to < from) return;
    values.clear();
    for (int64_t m = from; m <= to + h; ++m) values.push_back(history.At(m).value_or(gap));
    for (int64_t s = from; s <= to; ++s) {
      const size_t i = static_cast<size_t>(s - from);
      if (std::isnan(values[i])) continue;
      double peak = gap;
      for (int64_t j = 1; j <= h; ++j) {
        const double v = values[i + static_cast<size_t>(j)];
        if (!std::isnan(v) && (std::isnan(peak) || v > peak)) peak = v;
      }
      if (std::isnan(peak)) continue;
      for (int c = 0; c < copies; ++c) out.push_back(peak - values[i]);
    }
  };
  // The last hour: the current regime.
  add_window(now_minute - h - 60, now_minute - h, 1);
  // The same time of day on past days; the same time of week twice.
  const int64_t half = std::max<int64_t>(0, o.seasonal_window.count() / 60);
  for (int d = 1; d <= o.days_back; ++d) {
    const int64_t centre = now_minute - d * kMinutesPerDay;
    add_window(centre - half, centre + half, d % 7 == 0 ? 2 : 1);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ForecastResult FromIncrements(const std::vector<double>& rises, double demand_now,
                              const std::vector<double>& quantiles, const ForecastOptions& o) {
  ForecastResult r;
  r.demand_gpus = demand_now;
  r.samples = static_cast<int>(rises.size());
  if (rises.empty() || r.samples < o.min_samples) {
    r.fallback = std::to_string(r.samples) + " demand changes in the history, the forecast needs " +
                 std::to_string(o.min_samples);
    return r;
  }
  for (double q : quantiles) {
    // Nearest rank.
    const size_t n = rises.size();
    size_t idx = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
    idx = std::clamp<size_t>(idx, 1, n) - 1;
    r.levels.push_back({q, std::max(0.0, demand_now + rises[idx])});
  }
  return r;
}

}  // namespace

const std::vector<double>& ForecastQuantileGrid() {
  static const std::vector<double> grid = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};
  return grid;
}

DemandHistory::DemandHistory(Seconds history)
    : values_(static_cast<size_t>(std::max<int64_t>(60, history.count() / 60)),
              std::numeric_limits<float>::quiet_NaN()) {}

void DemandHistory::Record(WallTime t, double gpus) {
  if (!std::isfinite(gpus)) return;
  const int64_t m = MinuteOf(t);
  const int64_t size = static_cast<int64_t>(values_.size());
  const auto slot = [&](int64_t minute) -> float& {
    return values_[static_cast<size_t>(((minute % size) + size) % size)];
  };
  if (newest_ && m <= *newest_ - size) return;  // older than the history
  if (!newest_ || m > *newest_) {
    // Minutes between the newest and m become gaps (what they held is older
    // than the history now).
    const int64_t from = newest_ ? std::max(*newest_ + 1, m - size + 1) : m;
    for (int64_t k = from; k <= m; ++k) {
      float& v = slot(k);
      if (!std::isnan(v)) --filled_;
      v = std::numeric_limits<float>::quiet_NaN();
    }
    newest_ = m;
  }
  float& v = slot(m);
  if (std::isnan(v)) {
    v = static_cast<float>(gpus);
    ++filled_;
  } else {
    v = std::max(v, static_cast<float>(gpus));
  }
}

std::optional<double> DemandHistory::At(int64_t minute) const {
  const int64_t size = static_cast<int64_t>(values_.size());
  if (!newest_ || minute > *newest_ || minute <= *newest_ - size) return std::nullopt;
  const float v = values_[static_cast<size_t>(((minute % size) + size) % size)];
  if (std::isnan(v)) return std::nullopt;
  return v;
}

ForecastResult ForecastPeak(const DemandHistory& history, WallTime now, double demand_now, Seconds horizon,
                            const std::vector<double>& quantiles, const ForecastOptions& options) {
  return FromIncrements(Increments(history, MinuteOf(now), HorizonMinutes(horizon), options), demand_now,
                        quantiles, options);
}

void DemandForecaster::Record(const std::string& workload_class, WallTime t, double gpus) {
  auto it = histories_.find(workload_class);
  if (it == histories_.end()) it = histories_.emplace(workload_class, DemandHistory(options_.history)).first;
  it->second.Record(t, gpus);
}

void DemandForecaster::Retain(const std::vector<std::string>& keep) {
  std::erase_if(histories_, [&](const auto& entry) {
    return std::find(keep.begin(), keep.end(), entry.first) == keep.end();
  });
}

const DemandHistory* DemandForecaster::Find(const std::string& workload_class) const {
  auto it = histories_.find(workload_class);
  return it == histories_.end() ? nullptr : &it->second;
}

ForecastResult DemandForecaster::Forecast(const std::string& workload_class, WallTime now, double demand_now,
                                          Seconds horizon, const std::vector<double>& quantiles) const {
  if (oracle_ != nullptr) {
    if (const std::optional<double> peak = oracle_->PeakWithin(workload_class, now, horizon)) {
      ForecastResult r;
      r.demand_gpus = demand_now;
      r.oracle = true;
      for (double q : quantiles) r.levels.push_back({q, std::max(0.0, *peak)});
      return r;
    }
  }
  const DemandHistory* h = Find(workload_class);
  if (h == nullptr) {
    ForecastResult r;
    r.demand_gpus = demand_now;
    r.fallback = "no demand history yet";
    return r;
  }
  return ForecastPeak(*h, now, demand_now, horizon, quantiles, options_);
}

}  // namespace gpuscaler
