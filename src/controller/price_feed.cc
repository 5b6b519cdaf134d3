#include "gpuscaler/controller/price_feed.h"

#include <algorithm>

namespace gpuscaler {

namespace {

// How far back the first read looks. The provider answers each offering's
// price in force at that instant too, so this only decides which changes
// within the window become price samples.
constexpr Seconds kFirstReadLookBack{3600};

std::string DurationText(Seconds s) {
  const int64_t total = std::max<int64_t>(0, s.count());
  if (total >= 3600) return std::to_string(total / 3600) + "h" + (total % 3600 >= 60 ? std::to_string(total % 3600 / 60) + "m" : "");
  if (total >= 60) return std::to_string(total / 60) + "m";
  return std::to_string(total) + "s";
}

}  // namespace

Result<std::vector<SpotPrice>> PriceFeed::Read(CloudProvider& cloud, WallTime now) {
  const WallTime since = last_answer_ ? *last_answer_ + Seconds(1) : now - kFirstReadLookBack;
  Result<std::vector<SpotPrice>> prices = cloud.SpotPrices(since);
  if (!prices) {
    last_error_ = prices.error().message();
    return prices;
  }
  // After the first answer, a price in force before `since` was in force at
  // the previous answer too, and applied then: only the changes are new.
  const bool first = !last_answer_;
  last_answer_ = now;
  last_error_.clear();
  std::erase_if(*prices, [&](const SpotPrice& p) { return p.time > now || (!first && p.time < since); });
  return prices;
}

Seconds PriceFeed::Age(WallTime now) const {
  return std::chrono::duration_cast<Seconds>(now - last_answer_.value_or(started_));
}

std::string PriceFeed::Staleness(Seconds max_age, WallTime now) const {
  if (!last_answer_) return "catalog prices: the spot price source has not answered since start";
  if (Age(now) <= max_age) return "";
  return "spot prices stale: the source has not answered for over " + DurationText(max_age);
}

}  // namespace gpuscaler
