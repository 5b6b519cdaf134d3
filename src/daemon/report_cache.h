// ReportCache: the daemon's cost reports rendered once and shared.
//
// The audit data only changes when a tick commits, so a render keyed by the
// tick count is as fresh as a new one: concurrent requests for one report
// (a wall of dashboards, retrying clients, a load test) share one render,
// and later ones get its result. Ticks can come faster than renders (a fast
// demo; a year's HTML report), and a render per tick per URL would queue
// requests on the low-priority report pool without bound. So a render is
// also reused for
// `min_render_interval` of wall time after it started, whatever the tick:
// a report is at most that much older than the last tick.
//
// Thread-safe: reports run on the server's pool, Ready() on the I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>

#include "gpuscaler/server/http.h"

namespace gpuscaler::daemon {

class ReportCache {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ReportCache(std::chrono::milliseconds min_render_interval = std::chrono::seconds(1),
                       std::function<Clock::time_point()> now = Clock::now)
      : min_render_interval_(min_render_interval), now_(std::move(now)) {}

  // The render of `key` for `tick` (or a recent one), rendering it with
  // `render` when there is none. A 5xx answer or an exception is not kept.
  server::HttpResponse Get(const std::string& key, int64_t tick,
                           const std::function<server::HttpResponse()>& render) {
    std::promise<server::HttpResponse> promise;
    std::shared_future<server::HttpResponse> result;
    uint64_t mine = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A render no request can use any more (an older tick, past the
      // interval) goes now, not when the cache is full: a dashboard asking
      // for a moving window ("the last 7 days") names a new URL every day,
      // and up to kMaxEntries of yesterday's reports sat here for nothing
      // (the soak's heap in use rose and fell by ~2 MB with them). Waiters
      // on a dropped render hold their own handle on it.
      for (auto e = entries_.begin(); e != entries_.end();) {
        e = UsableLocked(e->second, tick) ? std::next(e) : entries_.erase(e);
      }
      auto it = entries_.find(key);
      if (it != entries_.end() && UsableLocked(it->second, tick)) {
        result = it->second.result;
      } else {
        if (it == entries_.end() && entries_.size() >= kMaxEntries) entries_.clear();
        mine = ++renders_;
        result = promise.get_future().share();
        // Waiters on a replaced render keep their own handle on it.
        entries_[key] = Entry{mine, tick, now_(), result};
      }
    }
    if (mine == 0) return result.get();
    server::HttpResponse response;
    try {
      response = render();
    } catch (...) {
      Forget(key, mine);
      promise.set_exception(std::current_exception());
      throw;
    }
    if (response.status >= 500) Forget(key, mine);
    promise.set_value(response);
    return response;
  }

  // True when Get(key, tick) would answer from a finished render: a copy,
  // cheap enough for the I/O thread.
  bool Ready(const std::string& key, int64_t tick) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    return it != entries_.end() && UsableLocked(it->second, tick) &&
           it->second.result.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  uint64_t renders() const {
    std::lock_guard<std::mutex> lock(mu_);
    return renders_;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  // Bounds what the cache holds (a year's HTML report is a few MB).
  static constexpr size_t kMaxEntries = 16;
  struct Entry {
    uint64_t id;
    int64_t tick;
    Clock::time_point started;
    std::shared_future<server::HttpResponse> result;
  };

  bool UsableLocked(const Entry& e, int64_t tick) const {
    return e.tick == tick || now_() - e.started < min_render_interval_;
  }

  void Forget(const std::string& key, uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.id == id) entries_.erase(it);
  }

  const std::chrono::milliseconds min_render_interval_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  uint64_t renders_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace gpuscaler::daemon
