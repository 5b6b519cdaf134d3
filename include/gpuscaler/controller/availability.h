// Learned offering unavailability: after a capacity error an offering (type ×
// zone × capacity type) is skipped for a while. The pause starts at
// `base_backoff`, doubles with every further error while it is marked (up to
// `max_backoff`), the error streak halves after each successful launch, and
// it loses one level for every `max_backoff` that passes after a pause ends
// without a new error, so an offering that keeps failing is tried rarely,
// one that recovers soon comes back, and an old shortage is forgotten.
//
// Reclaim waves: spot capacity is reclaimed per pool, most nodes of a pool
// within minutes of each other. The caller names the pool (ClusterState uses
// the failure domain, instance family x zone, since every size of a family
// in a zone goes together) and says how many spot nodes it holds. When a
// pool gets notices for at least 2 of its nodes, or for at least half of
// them, within `kReclaimWaveWindow`, it is marked reclaimed (Reclaimed): the
// planner places no new spot work in it, for a cooldown that starts at
// the caller's `ReclaimCooldown::first` (the policy's spot.reclaim_cooldown),
// doubles with each further wave (up to `ReclaimCooldown::max`) and starts
// over once a whole `kReclaimQuietReset` has passed after the last cooldown
// without a wave. Notices within one
// wave's window count once. A reclaim mark is the planner's choice, not the
// cloud's answer: IsAvailable and Unavailable report capacity errors only,
// so the offering stays available to whatever else reads the snapshot's
// `available` (the baselines of the simulator).
//
// Deterministic; values only; not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpuscaler/model/time.h"

namespace gpuscaler {

struct LearnedStateCodec;

inline constexpr Seconds kReclaimWaveWindow{180};
inline constexpr Seconds kReclaimCooldownBase{1800};
inline constexpr Seconds kReclaimCooldownMax{8 * 3600};
inline constexpr Seconds kReclaimQuietReset{8 * 3600};

// The cooldown of a reclaim wave: `first` for the first wave of a run,
// doubling per consecutive wave up to `max` (never below `first`).
struct ReclaimCooldown {
  Seconds first = kReclaimCooldownBase;
  Seconds max = kReclaimCooldownMax;
};

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

  // An interruption notice at `now` for one node of the spot pool named
  // `offering_key` (ClusterState: a failure domain), which had `pool_nodes`
  // nodes (the noticed one included) when the notice came. True when it
  // makes a new wave (the key is then marked reclaimed).
  bool RecordReclaimNotice(const std::string& offering_key, int pool_nodes, WallTime now,
                           ReclaimCooldown cooldown = {});
  // Keys marked reclaimed at `now`, with the end of their cooldown, sorted.
  std::map<std::string, WallTime> Reclaimed(WallTime now) const;
  // The number of consecutive waves behind the key's mark (0: none).
  int ReclaimWaves(const std::string& offering_key) const;
  // The cooldown of the `wave`-th consecutive wave (1-based).
  static Seconds ReclaimCooldownFor(int wave, ReclaimCooldown cooldown = {});

 private:
  friend struct LearnedStateCodec;  // learned_state.h: saves and restores the fields
  struct Mark {
    int streak = 0;
    WallTime until{};
  };
  struct Reclaim {
    std::vector<WallTime> notices;  // within the wave window, oldest first
    int pool_nodes = 0;             // the pool's size at the window's first notice
    int waves = 0;                  // consecutive waves
    WallTime wave_at{};             // when the current wave was marked
    WallTime until{};               // the cooldown's end
  };
  Seconds base_;
  Seconds max_;
  std::map<std::string, Mark> marks_;
  std::map<std::string, Reclaim> reclaims_;
};

}  // namespace gpuscaler
