// The Clock seam: the only way code below main() learns the time.
//
// SteadyTime measures intervals and deadlines; WallTime (model/time.h, UTC,
// one-second resolution) stamps audit rows, billing and snapshots. The daemon
// uses SystemClock; the simulator a ManualClock that it advances itself, so a
// month of virtual time passes in seconds; tests use tests/fakes/fake_clock.h.
// SystemClock is thread-safe; ManualClock is not (one driver thread).
#pragma once

#include <chrono>

#include "gpuscaler/model/time.h"

namespace gpuscaler {

using SteadyTime = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime Now() const = 0;    // intervals, deadlines
  virtual WallTime WallNow() const = 0;  // audit rows, reports
};

// The process's steady and system clocks.
class SystemClock final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override {
    return std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
  }
};

// A clock that moves only when told to. Its steady time is the steady epoch
// plus the wall time elapsed since `start`, so both advance together.
class ManualClock : public Clock {
 public:
  explicit ManualClock(WallTime start) : start_(start), now_(start) {}
  SteadyTime Now() const override { return SteadyTime() + (now_ - start_); }
  WallTime WallNow() const override { return now_; }
  // Moves to `t`; a `t` in the past is ignored (time never goes backwards).
  void AdvanceTo(WallTime t) {
    if (t > now_) now_ = t;
  }
  void Advance(Seconds d) { AdvanceTo(now_ + d); }

 private:
  WallTime start_;
  WallTime now_;
};

}  // namespace gpuscaler
