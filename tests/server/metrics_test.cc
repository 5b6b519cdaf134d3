// The metrics registry: values, label sets, removal, the exact text of the
// exposition format, and `promtool check metrics` on a registry holding
// every metric type the daemon exports.
#include "gpuscaler/server/metrics.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "support/temp_dir.h"

namespace gpuscaler::server {
namespace {

TEST(Metrics, CounterAndGaugeRenderWithHelpTypeAndSortedLabelSets) {
  MetricsRegistry reg;
  Family& actions = reg.Counter("gpuscaler_actions_total", "Actions by kind and result.", {"kind", "result"});
  actions.With({"launch", "ok"}).Inc();
  actions.With({"launch", "ok"}).Inc(2);
  actions.WithLabels({{"result", "error"}, {"kind", "terminate"}}).Inc();
  actions.With({"drain", "ok"}).Inc();
  Family& leader = reg.Gauge("gpuscaler_leader", "1 while this replica leads.");
  leader.With().Set(1);

  EXPECT_EQ(reg.Render(),
            "# HELP gpuscaler_actions_total Actions by kind and result.\n"
            "# TYPE gpuscaler_actions_total counter\n"
            "gpuscaler_actions_total{kind=\"drain\",result=\"ok\"} 1\n"
            "gpuscaler_actions_total{kind=\"launch\",result=\"ok\"} 3\n"
            "gpuscaler_actions_total{kind=\"terminate\",result=\"error\"} 1\n"
            "# HELP gpuscaler_leader 1 while this replica leads.\n"
            "# TYPE gpuscaler_leader gauge\n"
            "gpuscaler_leader 1\n");
}

TEST(Metrics, UnlabelledMetricIsExportedAtZeroBeforeFirstUpdate) {
  MetricsRegistry reg;
  reg.Gauge("gpuscaler_paused", "1 while paused.");
  reg.Counter("gpuscaler_decisions_total", "Decisions recorded.");
  EXPECT_NE(reg.Render().find("\ngpuscaler_paused 0\n"), std::string::npos);
  EXPECT_NE(reg.Render().find("\ngpuscaler_decisions_total 0\n"), std::string::npos);
}

TEST(Metrics, GaugeGoesBothWaysCounterOnlyUp) {
  MetricsRegistry reg;
  Metric& g = reg.Gauge("g", "g").With();
  g.Inc(5);
  g.Dec(2);
  g.Inc(-1);
  EXPECT_DOUBLE_EQ(g.value(), 2);
  g.Set(-7.5);
  EXPECT_DOUBLE_EQ(g.value(), -7.5);
  Metric& c = reg.Counter("c_total", "c").With();
  c.Inc(0.5);
  c.Inc();
  EXPECT_DOUBLE_EQ(c.value(), 1.5);
#ifdef NDEBUG
  c.Inc(-1);  // a bug; ignored in release builds (asserts in debug)
  EXPECT_DOUBLE_EQ(c.value(), 1.5);
#endif
}

TEST(Metrics, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  MetricsRegistry reg;
  // Unsorted, duplicated and +Inf bounds are cleaned up.
  Family& f = reg.Histogram("gpuscaler_tick_duration_seconds", "Tick duration.",
                            {1, 0.1, 0.5, 0.1, std::numeric_limits<double>::infinity()});
  Metric& h = f.With();
  for (double v : {0.05, 0.1, 0.3, 0.7, 2.0}) h.Observe(v);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.CumulativeCount(0.1), 2u);  // le is inclusive
  EXPECT_EQ(h.CumulativeCount(0.5), 3u);
  EXPECT_EQ(h.CumulativeCount(std::numeric_limits<double>::infinity()), 5u);
  EXPECT_DOUBLE_EQ(h.value(), 3.15);
  EXPECT_EQ(reg.Render(),
            "# HELP gpuscaler_tick_duration_seconds Tick duration.\n"
            "# TYPE gpuscaler_tick_duration_seconds histogram\n"
            "gpuscaler_tick_duration_seconds_bucket{le=\"0.1\"} 2\n"
            "gpuscaler_tick_duration_seconds_bucket{le=\"0.5\"} 3\n"
            "gpuscaler_tick_duration_seconds_bucket{le=\"1\"} 4\n"
            "gpuscaler_tick_duration_seconds_bucket{le=\"+Inf\"} 5\n"
            "gpuscaler_tick_duration_seconds_sum 3.15\n"
            "gpuscaler_tick_duration_seconds_count 5\n");
}

TEST(Metrics, HistogramWithLabelsPutsLeLastAndDefaultsBuckets) {
  MetricsRegistry reg;
  Family& f = reg.Histogram("req_seconds", "Requests.", {}, {"path"});
  f.With({"/metrics"}).Observe(0.002);
  const std::string text = reg.Render();
  EXPECT_NE(text.find("req_seconds_bucket{path=\"/metrics\",le=\"0.005\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("req_seconds_bucket{path=\"/metrics\",le=\"10\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("req_seconds_sum{path=\"/metrics\"} 0.002\n"), std::string::npos) << text;
  EXPECT_EQ(MetricsRegistry::DefaultBuckets().size(), 11u);
  EXPECT_EQ(MetricsRegistry::ExponentialBuckets(0.01, 2, 4), (std::vector<double>{0.01, 0.02, 0.04, 0.08}));
}

TEST(Metrics, LabelValuesAndHelpAreEscaped) {
  MetricsRegistry reg;
  Family& f = reg.Gauge("gpuscaler_policy_info", "Policy in force.\nHash is \\sha256\\ \"quoted\".", {"name", "hash"});
  f.With({"C:\\DIR\\\"x\"", "line1\nline2"}).Set(1);
  EXPECT_EQ(reg.Render(),
            "# HELP gpuscaler_policy_info Policy in force.\\nHash is \\\\sha256\\\\ \"quoted\".\n"
            "# TYPE gpuscaler_policy_info gauge\n"
            "gpuscaler_policy_info{name=\"C:\\\\DIR\\\\\\\"x\\\"\",hash=\"line1\\nline2\"} 1\n");
}

TEST(Metrics, SampleValuesAreShortestRoundTripText) {
  struct Case {
    double v;
    const char* want;
  };
  const std::vector<Case> cases = {
      {0, "0"},
      {-0.0, "0"},
      {1, "1"},
      {-3, "-3"},
      {0.1, "0.1"},
      {2.5, "2.5"},
      {1e-9, "1e-09"},
      {123456789012, "123456789012"},
      {std::numeric_limits<double>::infinity(), "+Inf"},
      {-std::numeric_limits<double>::infinity(), "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    EXPECT_EQ(FormatSampleValue(c.v), c.want);
    if (!std::isnan(c.v) && !std::isinf(c.v)) {
      EXPECT_EQ(std::strtod(FormatSampleValue(c.v).c_str(), nullptr), c.v);
    }
  }
}

TEST(Metrics, RemoveDropsOneLabelSetAndClearResetsTheFamily) {
  MetricsRegistry reg;
  Family& nodes = reg.Gauge("gpuscaler_nodes", "Nodes.", {"pool", "zone"});
  nodes.With({"a", "z1"}).Set(1);
  nodes.With({"a", "z2"}).Set(2);
  nodes.With({"b", "z1"}).Set(3);
  nodes.Remove({"a", "z2"});
  nodes.RemoveLabels({{"pool", "b"}, {"zone", "z1"}});
  nodes.Remove({"nope", "never"});
  EXPECT_EQ(nodes.size(), 1u);
  std::string text = reg.Render();
  EXPECT_NE(text.find("gpuscaler_nodes{pool=\"a\",zone=\"z1\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("z2"), std::string::npos);
  nodes.Clear();
  EXPECT_EQ(nodes.size(), 0u);
  EXPECT_EQ(reg.Render(), "# HELP gpuscaler_nodes Nodes.\n# TYPE gpuscaler_nodes gauge\n");

  // A label-less family keeps its metric (references stay valid), at zero.
  Metric& leader = reg.Gauge("gpuscaler_leader", "Leader.").With();
  leader.Set(1);
  reg.Find("gpuscaler_leader")->Clear();
  EXPECT_DOUBLE_EQ(leader.value(), 0);
  leader.Set(1);
  EXPECT_NE(reg.Render().find("\ngpuscaler_leader 1\n"), std::string::npos);
}

TEST(Metrics, ReplaceSwapsTheWholeFamilyAtOnce) {
  MetricsRegistry reg;
  Family& pending = reg.Gauge("gpuscaler_pending_units", "Pending.", {"class"});
  Metric& train = pending.With({"train"});
  train.Set(5);
  pending.With({"render"}).Set(2);
  pending.Replace({{{"train"}, 7}, {{"batch"}, 1}});
  EXPECT_EQ(pending.size(), 2u);
  EXPECT_DOUBLE_EQ(train.value(), 7) << "a kept label set keeps its identity";
  EXPECT_EQ(reg.Render(),
            "# HELP gpuscaler_pending_units Pending.\n"
            "# TYPE gpuscaler_pending_units gauge\n"
            "gpuscaler_pending_units{class=\"batch\"} 1\n"
            "gpuscaler_pending_units{class=\"train\"} 7\n");
  pending.Replace({});
  EXPECT_EQ(pending.size(), 0u);
}

TEST(Metrics, RegisteringTwiceReturnsTheSameFamily) {
  MetricsRegistry reg;
  Family& a = reg.Counter("x_total", "first", {"k"});
  Family& b = reg.Counter("x_total", "second", {"k"});
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(reg.Find("x_total"), &a);
  EXPECT_EQ(reg.Find("y"), nullptr);
}

TEST(Metrics, NameValidation) {
  EXPECT_TRUE(IsValidMetricName("gpuscaler_nodes"));
  EXPECT_TRUE(IsValidMetricName("job:rate5m"));
  EXPECT_FALSE(IsValidMetricName("0abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("capacity_type"));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(Metrics, ConcurrentUpdatesAndRendersLoseNothing) {
  MetricsRegistry reg;
  Family& c = reg.Counter("gpuscaler_http_requests_total", "Requests.", {"path", "code"});
  Family& h = reg.Histogram("h_seconds", "h", {0.5});
  constexpr int kThreads = 4, kPerThread = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        c.With({"/p" + std::to_string(i % 3), "200"}).Inc();
        h.With().Observe(t % 2 == 0 ? 0.1 : 1.0);
        if (i % 500 == 0) (void)reg.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  double total = 0;
  for (int p = 0; p < 3; ++p) total += c.With({"/p" + std::to_string(p), "200"}).value();
  EXPECT_DOUBLE_EQ(total, kThreads * kPerThread);
  EXPECT_EQ(h.With().count(), static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(h.With().CumulativeCount(0.5), static_cast<uint64_t>(kThreads / 2 * kPerThread));
}

// Every family the daemon exports, filled the way a tick fills it.
void FillDaemonLikeRegistry(MetricsRegistry& reg) {
  reg.Histogram("gpuscaler_tick_duration_seconds", "Duration of one control loop tick.",
                MetricsRegistry::ExponentialBuckets(0.001, 4, 8))
      .With()
      .Observe(0.042);
  reg.Counter("gpuscaler_ticks_total", "Ticks by result.", {"result"}).With({"ok"}).Inc(12);
  reg.Counter("gpuscaler_decisions_total", "Decisions recorded in the audit store.").With().Inc(12);
  reg.Counter("gpuscaler_actions_total", "Actions by kind and result.", {"kind", "result"})
      .WithLabels({{"kind", "launch"}, {"result", "ok"}})
      .Inc(3);
  reg.Counter("gpuscaler_capacity_errors_total", "Capacity errors from the cloud.").With().Inc();
  reg.Gauge("gpuscaler_nodes", "Nodes by pool, zone, capacity type and instance type.",
            {"pool", "zone", "capacity_type", "instance_type"})
      .With({"train", "us-east-1a", "spot", "p4d.24xlarge"})
      .Set(4);
  reg.Gauge("gpuscaler_gpus", "GPUs by pool and capacity type.", {"pool", "capacity_type"})
      .With({"train", "spot"})
      .Set(32);
  reg.Gauge("gpuscaler_cost_usd_per_hour", "Current fleet cost in USD per hour.").With().Set(98.32);
  reg.Gauge("gpuscaler_predicted_cost_usd_per_hour", "Cost after the last plan in USD per hour.").With().Set(87.5);
  reg.Gauge("gpuscaler_pending_units", "Pending work units by class.", {"class"}).With({"render"}).Set(17);
  reg.Gauge("gpuscaler_unplaced_units", "Units the plan could not place.", {"class", "reason"})
      .With({"train", "no offering with 8 \"A100\" GPUs\nin budget"})
      .Set(2);
  reg.Gauge("gpuscaler_signal_age_seconds", "Age of each signal.", {"source", "signal"})
      .With({"prometheus", "queue_depth"})
      .Set(3.5);
  reg.Gauge("gpuscaler_signal_stale", "1 when a signal is stale.", {"source", "signal"})
      .With({"dcgm", "gpu_util"})
      .Set(0);
  reg.Gauge("gpuscaler_scale_down_blocked", "1 when scale-down is blocked.", {"class"}).With({"train"}).Set(1);
  reg.Counter("gpuscaler_policy_reloads_total", "Policy reloads by result.", {"result"}).With({"rejected"}).Inc();
  reg.Gauge("gpuscaler_policy_reload_ok", "1 when the last policy reload succeeded.").With().Set(1);
  reg.Gauge("gpuscaler_policy_info", "The policy in force (value 1).", {"name", "hash"})
      .With({"default", "C:\\policies\\a.yaml"})
      .Set(1);
  reg.Gauge("gpuscaler_leader", "1 while this replica is the leader.").With().Set(1);
  reg.Gauge("gpuscaler_paused", "1 while paused through the API.").With().Set(0);
  reg.Counter("gpuscaler_http_requests_total", "HTTP requests by path and status code.", {"path", "code"})
      .With({"/metrics", "200"})
      .Inc();
  // Edge values promtool must accept.
  reg.Gauge("gpuscaler_test_edge_values", "Help with a backslash \\ and\na newline.", {"v"})
      .With({"inf"})
      .Set(std::numeric_limits<double>::infinity());
  reg.Find("gpuscaler_test_edge_values")->With({"nan"}).Set(std::nan(""));
  reg.Find("gpuscaler_test_edge_values")->With({"tiny"}).Set(1e-300);
  reg.Counter("gpuscaler_test_empty_total", "A labelled family with no label set yet.", {"x"});
}

TEST(Metrics, PromtoolCheckMetricsAcceptsEveryMetricType) {
  const char* ci = std::getenv("CI");
  const bool in_ci = ci != nullptr && std::string(ci) == "true";
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    if (in_ci) FAIL() << "promtool not found (Debian package 'prometheus'; scripts/setup.sh installs it)";
    GTEST_SKIP() << "promtool not found: install Debian 'prometheus' (scripts/setup.sh) to run this check";
  }
  MetricsRegistry reg;
  FillDaemonLikeRegistry(reg);
  const std::string text = reg.Render();
  testing::TempDir dir("gpuscaler-metrics");
  ASSERT_FALSE(dir.path().empty());
  const std::string file = dir.Write("metrics.prom", text);
  const std::string command = "promtool check metrics < '" + file + "' 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  std::array<char, 512> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) output.append(buf.data(), n);
  const int status = ::pclose(p);
  EXPECT_EQ(status, 0) << "promtool check metrics said:\n" << output << "\non:\n" << text;
  EXPECT_EQ(output, "") << text;
}

}  // namespace
}  // namespace gpuscaler::server
