// FakeClock: test time that moves only through Advance.
#pragma once

#include "gpuscaler/controller/clock.h"

namespace gpuscaler::testing {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime start = FromUnixSeconds(1782000000)) : start_(start), now_(start) {}
  SteadyTime Now() const override { return SteadyTime() + (now_ - start_); }
  WallTime WallNow() const override { return now_; }
  void Advance(Seconds d) { now_ += d; }

 private:
  WallTime start_;
  WallTime now_;
};

}  // namespace gpuscaler::testing
