// Learned offering unavailability: after a capacity error an offering (type ×
// zone × capacity type) is skipped for a while. The pause starts at
// `base_backoff`, doubles with every further error while it is marked (up to
// `max_backoff`), the error streak halves after each successful launch, and
// it loses one level for every `max_backoff` that passes after a pause ends
// without a new error, so an offering that keeps failing is tried rarely,
// one that recovers soon comes back, and an old shortage is forgotten.
// Deterministic; values only; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"

namespace gpuscaler {

class OfferingAvailability {
 public:
  explicit OfferingAvailability(Seconds base_backoff = Seconds(180), Seconds max_backoff = Seconds(3600))
      : base_(base_backoff), max_(max_backoff) {}

  void RecordCapacityError(const std::string& offering_key, WallTime now);
  void RecordSuccess(const std::string& offering_key);
  bool IsAvailable(const std::string& offering_key, WallTime now) const;
  // The streak of capacity errors (0: none remembered).
  int ErrorStreak(const std::string& offering_key) const;
  // Keys marked unavailable at `now`, sorted.
  std::vector<std::string> Unavailable(WallTime now) const;
  // The backoff the next error would set for a key with this streak.
  Seconds BackoffFor(int streak) const;

 private:
  struct Mark {
    int streak = 0;
    WallTime until{};
  };
  Seconds base_;
  Seconds max_;
  std::map<std::string, Mark> marks_;
};

}  // namespace gpuscaler
