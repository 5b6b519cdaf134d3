// The reservations the policy's pools select, as the cloud last described
// them, and a reserved offering for each (what the planner buys into).
//
// A reserved offering copies its type's on-demand offering in the
// reservation's zone (launch latency, on-demand price), with capacity type
// reserved, the reservation's id, and the slot's hourly cost as its price.
// On a failed read the last reservations stand: the planner keeps using
// the slots it knew of, and a launch into one that has gone fails over to
// the launch's fallbacks.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/controller/offering_book.h"
#include "gpuscaler/controller/tick_report.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

class ReservationBook {
 public:
  // Lists the cloud's reservations when a pool selects any (else forgets
  // them); true when the selected ones or their free slots changed, or one
  // opened or closed (Reservation::OpenAt) since the last read, at `now`:
  // a block's start is news for the plan though the cloud lists the same.
  bool Read(CloudProvider& cloud, const Policy& policy, const OfferingBook& book, WallTime now,
            TickReport* report);
  const std::vector<Reservation>& reservations() const { return reservations_; }
  const std::vector<Offering>& offerings() const { return offerings_; }
  // The reserved offering with key `key` (Offering::Key); null when none.
  const Offering* Find(const std::string& key) const;

 private:
  std::vector<Reservation> reservations_;
  std::optional<WallTime> last_read_;  // `now` of the last Read
  std::vector<Offering> offerings_;
};

}  // namespace gpuscaler
