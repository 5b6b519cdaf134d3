#include "gpuscaler/controller/offering_book.h"

#include <algorithm>
#include <utility>

namespace gpuscaler {

OfferingBook::OfferingBook(const Catalog& catalog, const std::vector<std::string>& regions, Seconds unavailable_base,
                           Seconds unavailable_max, WallTime start)
    : catalog_(catalog),
      offerings_(catalog.Offerings(regions)),
      availability_(unavailable_base, unavailable_max),
      price_feed_(start) {
  key_.resize(offerings_.size());
  risk_group_.resize(offerings_.size());
  for (size_t i = 0; i < offerings_.size(); ++i) {
    const Offering& o = offerings_[i];
    key_[i] = o.Key();
    index_[key_[i]] = i;
    const InstanceType* t = catalog.FindInstanceType(o.instance_type);
    risk_group_[i] = (t != nullptr ? t->FamilyOrName() : o.instance_type) + "/" + o.zone;
  }
}

int OfferingBook::Find(const std::string& key) const {
  auto it = index_.find(key);
  return it == index_.end() ? -1 : static_cast<int>(it->second);
}

std::vector<PriceMove> OfferingBook::ReadPrices(CloudProvider& cloud, WallTime now, TickReport* report) {
  std::vector<PriceMove> moves;
  Result<std::vector<SpotPrice>> prices = price_feed_.Read(cloud, now);
  if (!prices) {
    report->errors.push_back(prices.error().WithContext("spot prices"));
    return moves;
  }
  std::string key;
  const auto apply = [&moves, this](size_t i, const SpotPrice& p) {
    Offering& o = offerings_[i];
    if (o.usd_per_hour == p.usd_per_hour) return;
    o.usd_per_hour = p.usd_per_hour;
    moves.push_back({i, p.usd_per_hour, p.time});
  };
  for (const SpotPrice& p : *prices) {
    key.assign(p.instance_type).append("/").append(p.zone).append("/").append(ToString(p.capacity_type));
    auto it = index_.find(key);
    if (it != index_.end()) {
      apply(it->second, p);
      continue;
    }
    // A regional price (zone names the region): every zone's offering.
    for (size_t i = 0; i < offerings_.size(); ++i) {
      const Offering& o = offerings_[i];
      if (o.instance_type == p.instance_type && o.region == p.zone && o.capacity_type == p.capacity_type) apply(i, p);
    }
  }
  return moves;
}

bool OfferingBook::RefreshStaleness(const Policy& policy, WallTime now, TickReport* report) {
  auto it = policy.signals.max_staleness.find("prices");
  const Seconds max_age = it == policy.signals.max_staleness.end() ? Seconds(3600) : it->second;
  std::string stale = price_feed_.Staleness(max_age, now);
  report->price_age = price_feed_.Age(now);
  report->stale_prices = stale.empty() || price_feed_.last_error().empty() ? stale
                                                                          : stale + " (" + price_feed_.last_error() + ")";
  if (stale == stale_prices_) return false;
  stale_prices_ = std::move(stale);
  return true;
}

OfferingChanges OfferingBook::RefreshAvailability(WallTime now) {
  OfferingChanges changes;
  // Marks are per failure domain; the snapshot names every spot offering
  // of a marked domain (sorted, as the planner and the JSON expect).
  std::vector<std::string> reclaimed;
  const std::map<std::string, WallTime> domains = availability_.Reclaimed(now);
  if (!domains.empty()) {
    for (size_t i = 0; i < offerings_.size(); ++i) {
      if (offerings_[i].capacity_type == CapacityType::kSpot && domains.count(risk_group_[i]) > 0)
        reclaimed.push_back(key_[i]);
    }
    std::sort(reclaimed.begin(), reclaimed.end());
  }
  if (reclaimed != reclaimed_) {
    // A new mark comes with its notices (already structural); a cooldown
    // ending only lets later plans use the pool again, it asks for none.
    const bool added = std::any_of(reclaimed.begin(), reclaimed.end(), [&](const std::string& k) {
      return std::find(reclaimed_.begin(), reclaimed_.end(), k) == reclaimed_.end();
    });
    reclaimed_ = std::move(reclaimed);
    changes.any = true;
    changes.structural = added;
  }
  std::vector<std::string> unavailable = availability_.Unavailable(now);
  if (unavailable == unavailable_) return changes;
  for (const std::string& key : unavailable_) {
    if (int i = Find(key); i >= 0) offerings_[static_cast<size_t>(i)].available = true;
  }
  for (const std::string& key : unavailable) {
    if (int i = Find(key); i >= 0) offerings_[static_cast<size_t>(i)].available = false;
  }
  unavailable_ = std::move(unavailable);
  changes.any = changes.structural = true;
  return changes;
}

}  // namespace gpuscaler
