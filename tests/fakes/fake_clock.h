// FakeClock: the production ManualClock with a fixed default start, so a
// test's times are the same on every run. Time moves only through Advance.
#pragma once

#include "gpuscaler/model/clock.h"

namespace gpuscaler::testing {

class FakeClock final : public ManualClock {
 public:
  explicit FakeClock(WallTime start = FromUnixSeconds(1782000000)) : ManualClock(start) {}
};

}  // namespace gpuscaler::testing
