// SignalCollector against a real Prometheus 2.42 scraping DCGM-exporter-shaped
// fixture endpoints (built from the real capture in
// ../shared/reference/dcgm/samples, read at run time), started by the test
// harness (support/real_servers.h).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_clock.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/signals/collector.h"
#include "signals/test_files.h"
#include "support/fixture_http_server.h"
#include "support/real_servers.h"

namespace gpuscaler::signals {
namespace {

using gpuscaler::testing::FixtureHttpServer;
using gpuscaler::testing::FixtureRequest;
using gpuscaler::testing::FixtureResponse;
using gpuscaler::testing::PrometheusServer;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr char kCapture[] = "dcgm/samples/gpu-operator-v25.10-rtx4000ada-k8s.prom";
constexpr char kUtilByHost[] = "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)";

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The captured exporter page as node `hostname` would serve it, its GPU
// utilisation line repeated once per value in `gpu_util_percent` (GPU 0, 1, ...).
std::string ExporterPage(const std::string& capture, const std::string& hostname,
                         const std::vector<int>& gpu_util_percent) {
  const std::string key = "Hostname=\"";
  const size_t at = capture.find(key);
  const std::string original = capture.substr(at + key.size(), capture.find('"', at + key.size()) - at - key.size());
  std::string out;
  size_t pos = 0;
  while (pos < capture.size()) {
    size_t end = capture.find('\n', pos);
    if (end == std::string::npos) end = capture.size();
    const std::string line = capture.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("DCGM_FI_DEV_GPU_UTIL{", 0) != 0) {
      out += line + "\n";
      continue;
    }
    const std::string series = line.substr(0, line.rfind('}') + 1);
    for (size_t gpu = 0; gpu < gpu_util_percent.size(); ++gpu) {
      // GPU 0 keeps the captured identity (its other fields refer to it);
      // further GPUs get their own index, device and UUID.
      std::string s = series;
      if (gpu > 0) {
        s = ReplaceAll(s, "gpu=\"0\"", "gpu=\"" + std::to_string(gpu) + "\"");
        s = ReplaceAll(s, "device=\"nvidia0\"", "device=\"nvidia" + std::to_string(gpu) + "\"");
        s = ReplaceAll(s, "UUID=\"GPU-", "UUID=\"GPU-" + std::to_string(gpu));
      }
      out += s + " " + std::to_string(gpu_util_percent[gpu]) + "\n";
    }
  }
  return ReplaceAll(out, original, hostname);
}

class Exporter {
 public:
  explicit Exporter(std::string page)
      : page_(std::move(page)), server_([this](const FixtureRequest& req) {
          FixtureResponse r;
          if (req.Path() != "/metrics") {
            r.status = 404;
            return r;
          }
          r.content_type = "text/plain; version=0.0.4; charset=utf-8";
          r.body = page_;
          return r;
        }) {}
  std::string target() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::string metrics_url() const { return server_.url() + "/metrics"; }

 private:
  std::string page_;
  FixtureHttpServer server_;
};

class PrometheusIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    GPUSCALER_READ_REFERENCE_OR_SKIP(capture, kCapture);
    node_a_ = std::make_unique<Exporter>(ExporterPage(capture, "gpu-node-a", {30}));
    node_b_ = std::make_unique<Exporter>(ExporterPage(capture, "gpu-node-b", {60, 100}));
  }

  std::unique_ptr<Exporter> node_a_;
  std::unique_ptr<Exporter> node_b_;
  SystemClock clock_;
};

TEST_F(PrometheusIntegration, ReadsPerHostUtilisationOfDcgmSeriesThatPrometheusScraped) {
  auto prom = gpuscaler::testing::StartPrometheus(
      gpuscaler::testing::PrometheusScrapeConfig({node_a_->target(), node_b_->target()}, "dcgm"));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  SignalCollector collector(ep, clock_);
  const SignalQuery q{.source = SignalSource::kPrometheus, .query = kUtilByHost, .queue = ""};

  // Both targets are in once each has been scraped (1 s interval).
  CollectedSignal c = collector.Collect({q})[0];
  const auto deadline = steady_clock::now() + std::chrono::seconds(20);
  while (c.by_host.size() < 2 && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
    c = collector.Collect({q})[0];
  }
  ASSERT_TRUE(c.total.ok()) << c.total.error << "\n" << (*prom)->LogTail();
  EXPECT_EQ(c.by_host, (std::map<std::string, double>{{"gpu-node-a", 30.0}, {"gpu-node-b", 80.0}}));
  // Several series: the total is their mean (docs/signals.md).
  EXPECT_DOUBLE_EQ(*c.total.value, 55.0);
  EXPECT_EQ(c.total.key, kUtilByHost);
  // Observed when Prometheus evaluated it, which is about now.
  ASSERT_TRUE(c.total.observed_at.has_value());
  const auto skew = clock_.WallNow() - *c.total.observed_at;
  EXPECT_LE(std::chrono::abs(skew), Seconds(30));
}

TEST_F(PrometheusIntegration, ABadQueryIsAConfigErrorCarryingPrometheusMessage) {
  auto prom = gpuscaler::testing::StartPrometheus(gpuscaler::testing::PrometheusScrapeConfig({node_a_->target()}));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  SignalCollector collector(ep, clock_);
  CollectedSignal c =
      collector.Collect({{.source = SignalSource::kPrometheus, .query = "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL", .queue = ""}})[0];
  EXPECT_EQ(c.total.state, SignalState::kMissing);
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(c.error->category(), ErrorCategory::kConfig) << c.error->ToString();
  EXPECT_NE(c.error->message().find("bad_data"), std::string::npos) << c.error->message();
  EXPECT_NE(c.error->message().find("parse error"), std::string::npos) << c.error->message();
}

TEST_F(PrometheusIntegration, AQueryThatMatchesNothingIsMissingNotZero) {
  auto prom = gpuscaler::testing::StartPrometheus(gpuscaler::testing::PrometheusScrapeConfig({}));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  SignalCollector collector(ep, clock_);
  CollectedSignal c = collector.Collect({{.source = SignalSource::kPrometheus, .query = "sum(no_such_metric)", .queue = ""}})[0];
  EXPECT_EQ(c.total.state, SignalState::kMissing);
  EXPECT_FALSE(c.total.value.has_value());
  ASSERT_TRUE(c.error.has_value());
  EXPECT_EQ(c.error->category(), ErrorCategory::kNotFound) << c.error->ToString();
}

TEST_F(PrometheusIntegration, PrometheusDownGivesAMissingTransientReading) {
  auto prom = gpuscaler::testing::StartPrometheus(gpuscaler::testing::PrometheusScrapeConfig({}));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  ep.timeout = milliseconds(1000);
  SignalCollector collector(ep, clock_);
  const SignalQuery q{.source = SignalSource::kPrometheus, .query = "vector(4)", .queue = ""};
  CollectedSignal up = collector.Collect({q})[0];
  ASSERT_TRUE(up.total.ok()) << up.total.error;
  EXPECT_EQ(*up.total.value, 4);

  (*prom)->Stop();
  CollectedSignal down = collector.Collect({q})[0];
  EXPECT_EQ(down.total.state, SignalState::kMissing);
  EXPECT_FALSE(down.total.value.has_value());
  ASSERT_TRUE(down.error.has_value());
  EXPECT_EQ(down.error->category(), ErrorCategory::kTransient) << down.error->ToString();
  EXPECT_NE(down.total.error.find("prometheus: 127.0.0.1:" + std::to_string((*prom)->port())), std::string::npos)
      << down.total.error;
}

// query_range, which warms the demand forecasts' history at start: long
// ranges in requests Prometheus accepts, a scraped series' history, and
// Prometheus' own errors.
TEST_F(PrometheusIntegration, QueryRangeReadsALongHistoryInRequestsPrometheusAccepts) {
  auto prom = gpuscaler::testing::StartPrometheus(gpuscaler::testing::PrometheusScrapeConfig({}));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  SignalCollector collector(ep, clock_);
  // Six hours every second: 21,601 points, past Prometheus' 11,000 per query.
  const WallTime end = FromUnixSeconds(ToUnixSeconds(clock_.WallNow()));
  Result<std::vector<PromPoint>> points = collector.QueryRange("vector(4)", end - Seconds(6 * 3600), end, Seconds(1));
  ASSERT_TRUE(points.ok()) << points.error().ToString() << "\n" << (*prom)->LogTail();
  ASSERT_EQ(points->size(), 21601u);
  EXPECT_EQ(points->front().timestamp_s, static_cast<double>(ToUnixSeconds(end) - 6 * 3600));
  EXPECT_EQ(points->back().timestamp_s, static_cast<double>(ToUnixSeconds(end)));
  for (size_t i = 1; i < points->size(); ++i) {
    ASSERT_EQ(points->at(i).timestamp_s, points->at(i - 1).timestamp_s + 1) << i;
    ASSERT_EQ(points->at(i).value, 4);
  }
}

TEST_F(PrometheusIntegration, QueryRangeReadsTheHistoryOfAScrapedSeriesAndPrometheusErrors) {
  auto prom = gpuscaler::testing::StartPrometheus(
      gpuscaler::testing::PrometheusScrapeConfig({node_a_->target(), node_b_->target()}, "dcgm"));
  GPUSCALER_REQUIRE_REAL_SERVER(prom);
  SignalEndpoints ep;
  ep.prometheus.url = (*prom)->url();
  SignalCollector collector(ep, clock_);
  const std::string query = "sum(DCGM_FI_DEV_GPU_UTIL)";
  // Both targets scraped: the sum of the three GPUs, 30 + 60 + 100.
  const auto deadline = steady_clock::now() + std::chrono::seconds(20);
  Result<std::vector<PromPoint>> points = std::vector<PromPoint>{};
  while (steady_clock::now() < deadline) {
    const WallTime now = clock_.WallNow();
    points = collector.QueryRange(query, now - Seconds(60), now, Seconds(1));
    if (points.ok() && !points->empty() && points->back().value == 190) break;
    std::this_thread::sleep_for(milliseconds(300));
  }
  ASSERT_TRUE(points.ok()) << points.error().ToString() << "\n" << (*prom)->LogTail();
  ASSERT_FALSE(points->empty());
  EXPECT_EQ(points->back().value, 190);
  for (size_t i = 1; i < points->size(); ++i) EXPECT_GT(points->at(i).timestamp_s, points->at(i - 1).timestamp_s);

  const WallTime now = clock_.WallNow();
  Result<std::vector<PromPoint>> bad = collector.QueryRange("sum(DCGM_FI_DEV_GPU_UTIL", now - Seconds(60), now, Seconds(1));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().category(), ErrorCategory::kConfig) << bad.error().ToString();
  EXPECT_NE(bad.error().message().find("bad_data"), std::string::npos) << bad.error().message();
  Result<std::vector<PromPoint>> several = collector.QueryRange("DCGM_FI_DEV_GPU_UTIL", now - Seconds(60), now, Seconds(1));
  ASSERT_FALSE(several.ok());
  EXPECT_EQ(several.error().category(), ErrorCategory::kInvalidInput) << several.error().ToString();
  EXPECT_NE(several.error().message().find("aggregate it to one"), std::string::npos) << several.error().message();
  // Nothing matched over the whole range: an empty history, not an error.
  Result<std::vector<PromPoint>> none = collector.QueryRange("sum(no_such_metric)", now - Seconds(60), now, Seconds(1));
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_TRUE(none->empty());
}

// The same exporters scraped directly (source "dcgm"), no Prometheus in
// between: per-host means in [0,1], the total over all GPUs.
TEST_F(PrometheusIntegration, TheDcgmSourceReadsTheSameExportersDirectly) {
  SignalEndpoints ep;
  ep.dcgm.urls = {node_a_->metrics_url(), node_b_->metrics_url()};
  SignalCollector collector(ep, clock_);
  CollectedSignal c = collector.Collect({{.source = SignalSource::kDcgm, .query = "", .queue = ""}})[0];
  ASSERT_TRUE(c.total.ok()) << c.total.error;
  ASSERT_EQ(c.by_host.size(), 2u);
  EXPECT_DOUBLE_EQ(c.by_host.at("gpu-node-a"), 0.30);
  EXPECT_DOUBLE_EQ(c.by_host.at("gpu-node-b"), 0.80);
  EXPECT_NEAR(*c.total.value, (0.30 + 0.60 + 1.00) / 3, 1e-12);
  ASSERT_TRUE(c.total.observed_at.has_value());
  EXPECT_LE(std::chrono::abs(clock_.WallNow() - *c.total.observed_at), Seconds(1));
}

}  // namespace
}  // namespace gpuscaler::signals
