// Time types used across gpuscaler.
//
// WallTime is a UTC instant with one-second resolution: audit rows, billing,
// node launch times, snapshots. It is a value, never read from a clock below
// a seam; the Clock seam (controller/clock.h) supplies it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gpuscaler {

using Seconds = std::chrono::seconds;
using WallTime = std::chrono::sys_seconds;

inline int64_t ToUnixSeconds(WallTime t) { return t.time_since_epoch().count(); }
inline WallTime FromUnixSeconds(int64_t s) { return WallTime(Seconds(s)); }

// "2026-12-02T13:04:05Z".
std::string FormatRfc3339(WallTime t);
// Parses "2026-12-02T13:04:05Z", "2026-12-02T13:04:05+01:00", "2026-12-02 13:04:05"
// (taken as UTC) and "2026-12-02" (midnight UTC). False on anything else.
bool ParseRfc3339(const std::string& text, WallTime* out);

// Parses a duration as operators write it: "90s", "5m", "1h30m", "2d", "250ms"
// (rounded down to seconds) or a bare integer of seconds. False on anything else.
bool ParseDuration(const std::string& text, Seconds* out);
// "1h30m", "45s", "0s".
std::string FormatDuration(Seconds d);

}  // namespace gpuscaler
