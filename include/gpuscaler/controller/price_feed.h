// PriceFeed: the cloud's spot price source as the controller reads it —
// what to ask for at each read, when the source last answered, and whether
// plans may act on what it said.
//
// Every read asks for the prices since the last good read (the first: since
// an hour before now). The provider answers each offering's price in force
// then as well, so on the first answer an offering whose price last changed
// long ago still gets its live price; on later answers those in-force prices
// were applied before and only the changes are passed on. A failed read
// changes nothing: the offerings keep the prices they have (the catalog's
// until the source first answers) and the feed's age keeps growing.
//
// Prices are stale when the source has not answered since the controller
// started (the catalog's estimates stand), or answered last longer ago than
// the policy's signals.max_staleness.prices. Stale prices are published in
// the snapshot (Snapshot::stale_prices), where the planner reads them: it
// then buys no node to take a running node's work (no replacement, no switch
// between spot and on-demand for running work) and says so in the plan's
// notes.
//
// A value; not thread-safe (the loop's thread only).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

class PriceFeed {
 public:
  // `started`: when the controller started (the age of prices never read).
  explicit PriceFeed(WallTime started) : started_(started) {}

  // Reads the source at `now`. The answer's prices are what to apply, in
  // order (the in-force ones first); an Error leaves the feed as it was but
  // for the error it remembers.
  Result<std::vector<SpotPrice>> Read(CloudProvider& cloud, WallTime now);

  // Seconds since the source last answered; since `started` when it has not.
  Seconds Age(WallTime now) const;
  // Why plans may not act on the prices at `now`; empty when they may. The
  // text changes only when the reason does (not with the age), so a replan
  // gate comparing snapshots sees one change per reason.
  std::string Staleness(Seconds max_age, WallTime now) const;
  // The message of the last failed read since the source last answered.
  const std::string& last_error() const { return last_error_; }
  // The source answered at least once.
  bool answered() const { return last_answer_.has_value(); }

 private:
  WallTime started_;
  std::optional<WallTime> last_answer_;
  std::string last_error_;  // of the reads since the last answer
};

}  // namespace gpuscaler
