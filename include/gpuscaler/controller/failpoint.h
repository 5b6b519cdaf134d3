// Failpoints: a TEST-ONLY crash hook for the actuation path.
//
// The daemon arms at most one failpoint at start from the environment
// variable GPUSCALER_FAILPOINT=<name>[:<nth>] (nth >= 1, default 1). When the
// armed point is reached for the nth time in this process, the process kills
// itself with SIGKILL: no destructor, no flush, no SQLite rollback — exactly
// what a power cut of the process (OOM kill, node loss) does. The crash tests
// (tests/cloud/daemon_emulator_test.cc, crash_campaign_test.cc) use it to
// prove that a restart leaves no launch duplicated and no instance
// untracked; docs/reliability.md "Crash safety".
//
// Points (kFailpointNames): launch.before_call (the intent is durable, the
// cloud not called yet), launch.after_call (the cloud answered, the outcome
// not recorded), launch.after_outcome (the outcome recorded in the tick's
// batch, not committed), the same three for terminate.*, tick.before_commit,
// tick.after_commit, and recover.launch.after_call /
// recover.terminate.after_call (a crash while a restart reconciles).
//
// Cost when unarmed: one relaxed atomic load per point. Thread-safe.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::failpoint {

inline constexpr const char* kEnvironmentVariable = "GPUSCALER_FAILPOINT";

// Every point the code checks, in the order an action reaches them.
const std::vector<std::string>& Names();

namespace internal {
inline std::atomic<bool> armed{false};
// Out of line: counts the hit and raises SIGKILL on the nth.
void Hit(std::string_view name);
}  // namespace internal

// Parses "<name>[:<nth>]" and arms it. kConfig for an unknown name or a bad
// count (a typo must not silently disarm a crash test). Replaces an armed one.
Status Arm(std::string_view spec);
// Arms from GPUSCALER_FAILPOINT when it is set and not empty (main / daemon
// setup only: nothing below the seams reads the environment).
Status ArmFromEnvironment();
void Disarm();

// The hook: a no-op unless armed.
inline void Check(std::string_view name) {
  if (internal::armed.load(std::memory_order_relaxed)) [[unlikely]]
    internal::Hit(name);
}

}  // namespace gpuscaler::failpoint
