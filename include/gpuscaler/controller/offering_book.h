// The catalog's offerings as the planner prices them: live spot prices
// (PriceFeed), capacity-error marks and reclaimed failure domains
// (OfferingAvailability), and the learned interruption rates that
// SpotRiskLearner writes in.
//
// An offering's failure domain, which is also its risk group, is
// "<family>/<zone>": spot capacity of one family in one zone goes at once,
// every size together.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/price_feed.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

// A spot price that differs from the offering's current one.
struct PriceMove {
  size_t offering = 0;
  double usd_per_hour = 0;
  WallTime at{};  // the price's own time
};

struct OfferingChanges {
  bool any = false;
  bool structural = false;  // a new mark: the planner must not use the offering
};

class OfferingBook {
 public:
  // The catalog's offerings in `regions` (empty: all; `catalog` must
  // outlive the book); marks last from
  // `unavailable_base` up to `unavailable_max` (OfferingAvailability).
  OfferingBook(const Catalog& catalog, const std::vector<std::string>& regions, Seconds unavailable_base,
               Seconds unavailable_max, WallTime start);

  const Catalog& catalog() const { return catalog_; }
  const std::vector<Offering>& offerings() const { return offerings_; }
  // The index of the offering whose Offering::Key is `key`, or -1.
  int Find(const std::string& key) const;
  const std::string& key(size_t offering) const { return key_[offering]; }
  const std::string& risk_group(size_t offering) const { return risk_group_[offering]; }
  OfferingAvailability& availability() { return availability_; }
  const OfferingAvailability& availability() const { return availability_; }

  // Reads the spot prices, applies those that moved and returns them (the
  // caller reprices the nodes on them). On a failed read the last known
  // (or catalog) prices stay in force and the error is reported.
  std::vector<PriceMove> ReadPrices(CloudProvider& cloud, WallTime now, TickReport* report);
  // The price feed's age and staleness into the report; true when the
  // staleness text for the snapshot (stale_prices) changed.
  bool RefreshStaleness(const Policy& policy, WallTime now, TickReport* report);
  const std::string& stale_prices() const { return stale_prices_; }
  // Applies the availability marks as of `now` to the offerings and to the
  // reclaimed spot pools.
  OfferingChanges RefreshAvailability(WallTime now);
  // Every spot offering of a reclaimed failure domain, sorted
  // (Snapshot::reclaimed_spot_pools).
  const std::vector<std::string>& reclaimed_spot_pools() const { return reclaimed_; }
  const std::vector<std::string>& unavailable() const { return unavailable_; }
  void SetInterruptionRate(size_t offering, double per_hour) { offerings_[offering].interruptions_per_hour = per_hour; }
  void SetCoReclaimShare(size_t offering, double share) { offerings_[offering].co_reclaim_share = share; }

 private:
  const Catalog& catalog_;
  std::vector<Offering> offerings_;
  std::unordered_map<std::string, size_t> index_;  // Offering::Key -> index
  std::vector<std::string> key_;                   // parallel to offerings_
  std::vector<std::string> risk_group_;            // parallel to offerings_
  OfferingAvailability availability_;
  PriceFeed price_feed_;
  std::vector<std::string> unavailable_;  // marked at the last RefreshAvailability
  std::vector<std::string> reclaimed_;
  std::string stale_prices_;
};

}  // namespace gpuscaler
