// Learned spot interruption rates: the notices seen per node-hour of spot
// exposure, per offering and per risk group (family x zone), with the
// catalog's rate as the prior (InterruptionRiskEstimator). Rates reach the
// offerings at once after a notice, else at most every refresh interval,
// and only when one moved by more than 5 % and 0.001 per node-hour.
//
// Also learned per risk group: how much reclaims go together
// (Offering::co_reclaim_share). Notices in one group within
// kReclaimWaveWindow of the first are one burst, the window the availability
// marks use for a reclaim wave (availability.h); a burst that took n of the
// N spot nodes the group had (N >= 2) counts n - 1 co-reclaims out of N - 1
// chances, and the share is co-reclaims / (1 + chances): 0 (independent, the
// safe side for a gang) until bursts show otherwise. A burst is counted at
// the first refresh after its window; the share is written when it moved by
// more than 0.05. Only a gang's risk depends on it.
//
// Not thread-safe: the loop's thread only.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/controller/availability.h"
#include "gpuscaler/controller/interruption_risk.h"
#include "gpuscaler/controller/offering_book.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler {

struct SpotRiskOptions {
  bool learn = true;  // off: the offerings keep the catalog's rates
  InterruptionRiskOptions estimator;
  Seconds refresh_interval{600};
};

class SpotRiskLearner {
 public:
  // The book's offerings' rates at construction are the priors.
  SpotRiskLearner(const OfferingBook& book, SpotRiskOptions options);

  // Hours since the previous call (0 at the first): the caller adds each
  // spot node's exposure with AddExposure.
  double HoursSinceLastExposure(WallTime now);
  void AddExposure(size_t offering, double node_hours) { unflushed_exposure_h_[offering] += node_hours; }
  // A notice on a spot node of `offering` at `now` (the exposure up to now
  // is weighed first); its risk group had `group_nodes` spot nodes, the
  // noticed one included.
  void RecordNotice(const OfferingBook& book, size_t offering, int group_nodes, WallTime now);
  // A past spot node of `offering` over [from, to), reclaimed at `to` when
  // `interrupted` (rebuilding after a restart).
  void AddHistory(const OfferingBook& book, size_t offering, WallTime from, WallTime to, bool interrupted,
                  WallTime now);
  // What Refresh wrote into the book.
  struct Moves {
    bool rates = false;   // a learned interruption rate
    bool shares = false;  // a co-reclaim share
  };
  // Writes the rates and shares that moved enough into the book.
  Moves Refresh(OfferingBook& book, WallTime now);

  const InterruptionRiskEstimator& estimator() const { return estimator_; }
  // The learned co-reclaim share of `risk_group` (bursts closed so far).
  double CoReclaimShare(const std::string& risk_group) const;

  bool learning() const { return options_.learn; }

 private:
  struct ReclaimBurst {
    WallTime start{};
    int group_nodes = 0;
    int noticed = 0;
  };
  struct CoReclaims {
    double together = 0;  // other nodes reclaimed in the same burst
    double chances = 0;   // other nodes there were
  };

  void FlushExposure(const OfferingBook& book, WallTime now);
  // Counts every open burst that started more than the window before `now`.
  void CloseBursts(WallTime now);

  SpotRiskOptions options_;
  InterruptionRiskEstimator estimator_;
  std::vector<double> prior_rate_;            // per offering: the catalog's
  std::vector<double> unflushed_exposure_h_;  // per offering: not yet given to the estimator
  std::optional<WallTime> last_exposure_;
  std::optional<WallTime> last_refresh_;
  bool dirty_ = false;  // evidence came since the last refresh
  std::map<std::string, ReclaimBurst> open_bursts_;  // by risk group
  std::map<std::string, CoReclaims> co_reclaims_;    // by risk group
};

}  // namespace gpuscaler
