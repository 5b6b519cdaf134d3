#include "src/daemon/report_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpuscaler::daemon {
namespace {

using server::HttpResponse;
using namespace std::chrono_literals;

struct FakeTime {
  ReportCache::Clock::time_point t{};
  std::function<ReportCache::Clock::time_point()> fn() {
    return [this] { return t; };
  }
};

HttpResponse Body(const std::string& text) { return HttpResponse::Text(text); }

TEST(ReportCache, OneRenderPerTickAndUrl) {
  FakeTime time;
  ReportCache cache(1s, time.fn());
  int renders = 0;
  auto render = [&] {
    std::string body = "r";
    body += std::to_string(++renders);
    return Body(body);
  };
  EXPECT_FALSE(cache.Ready("/reports/a", 1));
  EXPECT_EQ(cache.Get("/reports/a", 1, render).body, "r1");
  EXPECT_TRUE(cache.Ready("/reports/a", 1));
  EXPECT_EQ(cache.Get("/reports/a", 1, render).body, "r1");
  EXPECT_EQ(cache.Get("/reports/b", 1, render).body, "r2");  // another URL
  // The next tick, a second later: rendered again.
  time.t += 1s;
  EXPECT_FALSE(cache.Ready("/reports/a", 2));
  EXPECT_EQ(cache.Get("/reports/a", 2, render).body, "r3");
  EXPECT_EQ(renders, 3);
}

// Ticks faster than renders (the demo at --speed 1200): within the minimum
// interval the last render serves the new ticks too.
TEST(ReportCache, TicksFasterThanTheIntervalReuseTheLastRender) {
  FakeTime time;
  ReportCache cache(1s, time.fn());
  int renders = 0;
  auto render = [&] {
    std::string body = "r";
    body += std::to_string(++renders);
    return Body(body);
  };
  for (int tick = 1; tick <= 21; ++tick) {
    time.t += 50ms;  // 20 ticks a second
    (void)cache.Get("/reports/a", tick, render);
  }
  EXPECT_EQ(renders, 2);  // at 50 ms (tick 1) and 1,050 ms (tick 21)
  EXPECT_TRUE(cache.Ready("/reports/a", 21));
  EXPECT_TRUE(cache.Ready("/reports/a", 22));  // within the interval
  time.t += 1s;
  EXPECT_FALSE(cache.Ready("/reports/a", 22));
  EXPECT_TRUE(cache.Ready("/reports/a", 21));  // its own tick
}

// A moving window ("the last 7 days") is a new URL every day: yesterday's
// renders, which no request can use any more, are not kept.
TEST(ReportCache, RendersNoRequestCanUseAreDropped) {
  FakeTime time;
  ReportCache cache(1s, time.fn());
  auto render = [] { return Body("report"); };
  for (int day = 0; day < 40; ++day) {
    cache.Get("/reports/report.json?from=day" + std::to_string(day), day, render);
    cache.Get("/metrics-like/" + std::to_string(day % 2), day, render);
    EXPECT_LE(cache.size(), 2u) << "day " << day;
    time.t += 2s;
  }
  // Within the interval a render of an older tick is still served, so kept.
  cache.Get("/reports/a", 100, render);
  time.t += 500ms;
  cache.Get("/reports/b", 101, render);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Ready("/reports/a", 101));
}

TEST(ReportCache, FailuresAreNotKept) {
  FakeTime time;
  ReportCache cache(1s, time.fn());
  EXPECT_EQ(cache.Get("/r", 1, [] { return HttpResponse::Error(503, "locked"); }).status, 503);
  EXPECT_FALSE(cache.Ready("/r", 1));
  EXPECT_THROW((void)cache.Get("/r", 1, []() -> HttpResponse { throw std::runtime_error("x"); }), std::runtime_error);
  EXPECT_EQ(cache.Get("/r", 1, [] { return Body("ok"); }).body, "ok");
  EXPECT_EQ(cache.renders(), 3u);
}

TEST(ReportCache, ConcurrentRequestsShareOneRender) {
  ReportCache cache;
  std::atomic<int> renders{0};
  std::vector<std::thread> threads;
  std::vector<std::string> bodies(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      bodies[i] = cache.Get("/reports/a", 7, [&] {
                         ++renders;
                         std::this_thread::sleep_for(50ms);
                         return Body("shared");
                       }).body;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(renders.load(), 1);
  for (const std::string& b : bodies) EXPECT_EQ(b, "shared");
}

}  // namespace
}  // namespace gpuscaler::daemon
