// Waiting on a running daemon's control loop by counting its ticks: the
// `ticks` field of GET /api/v1/status, one more after each tick, published
// together with that tick's state. A test that needs "a few more ticks" (to
// see that nothing changes, or that something held) waits for them here
// instead of sleeping for what they probably take: on a loaded machine the
// wait grows, and the check never runs after fewer ticks than it names.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/http_get.h"

namespace gpuscaler::testing {

// The daemon's tick count, or nullopt when it does not answer on `port` (not
// serving yet, or gone) or its status has no count.
inline std::optional<int64_t> DaemonTicks(uint16_t port) {
  const HttpReply r = HttpGet(port, "/api/v1/status");
  if (r.status != 200) return std::nullopt;
  const nlohmann::json status = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || !status.contains("ticks") || !status["ticks"].is_number_integer()) return std::nullopt;
  return status["ticks"].get<int64_t>();
}

// Waits until the daemon on `port` has finished `target` ticks in all,
// polling every 20 ms. False when `within` passes first: the daemon is
// stuck, gone, or never answered.
inline bool WaitForTicks(uint16_t port, int64_t target, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (DaemonTicks(port).value_or(-1) >= target) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Waits until the daemon on `port` has finished `n` more ticks than it had
// when called (so at least n - 1 whole ticks began after the call). False
// when it does not answer at the call, or `within` passes first.
inline bool WaitForMoreTicks(uint16_t port, int64_t n, std::chrono::milliseconds within) {
  const std::optional<int64_t> from = DaemonTicks(port);
  return from.has_value() && WaitForTicks(port, *from + n, within);
}

}  // namespace gpuscaler::testing
