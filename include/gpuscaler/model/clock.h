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
  // Seconds of this clock per real second: 1 for the system clock, the
  // speed of a ScaledClock. Code that sleeps in real time until a deadline
  // of this clock divides the wait by it. Meaningless for a ManualClock,
  // which nothing sleeps on.
  virtual double rate() const { return 1.0; }
};

// The process's steady and system clocks.
class SystemClock final : public Clock {
 public:
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override {
    return std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
  }
};

// The system clock run `speed` times faster from the moment it is made: a
// daemon on the simulated cloud lives through an hour of drains, timeouts
// and ticks in a minute (`gpuscaler run --config F --speed N`).
// Thread-safe.
class ScaledClock final : public Clock {
 public:
  explicit ScaledClock(double speed)
      : speed_(speed),
        start_steady_(std::chrono::steady_clock::now()),
        start_wall_(std::chrono::system_clock::now()) {}
  SteadyTime Now() const override {
    return start_steady_ + std::chrono::duration_cast<SteadyTime::duration>(Scaled());
  }
  WallTime WallNow() const override {
    return std::chrono::floor<Seconds>(start_wall_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(Scaled()));
  }
  double rate() const override { return speed_; }

 private:
  std::chrono::duration<double> Scaled() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_steady_) * speed_;
  }
  double speed_;
  SteadyTime start_steady_;
  std::chrono::system_clock::time_point start_wall_;
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
