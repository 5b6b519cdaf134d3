// The daemon (the real binary, live mode, simulated cloud) against real
// Prometheus and RabbitMQ servers started here (tests/support/real_servers.h):
//  - Prometheus scrapes a DCGM-style fixture exporter and gpuscaler's own
//    /metrics (up == 1; promtool accepts our exposition); the daemon's
//    PromQL queue depth drives a scale-up; Prometheus stopped mid-run blocks
//    scale-down (stale metric set) and a restarted one lets it happen.
//  - RabbitMQ: N published messages become the daemon's queue depth N and a
//    scale-up; the broker stopped mid-run holds the fleet.
//  - An invalid policy pushed mid-run is rejected and the old one kept.
#include "support/real_servers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "cli/daemon_ticks.h"
#include "cli/http_get.h"
#include "cli/process.h"
#include "support/fixture_http_server.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

// The value of the first sample of `name` whose line contains `label_text`,
// or nullopt.
std::optional<double> MetricValue(const std::string& exposition, const std::string& name,
                                  const std::string& label_text = "") {
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0 || line.find(label_text) == std::string::npos) continue;
    const char next = line.size() > name.size() ? line[name.size()] : ' ';
    if (next != '{' && next != ' ') continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

int Nodes(uint16_t port) {
  HttpReply r = HttpGet(port, "/api/v1/status");
  if (r.status != 200) return -1;
  return static_cast<int>(nlohmann::json::parse(r.body)["nodes"].size());
}

// How long a wait for something that must happen may take: generous, for a
// loaded CI machine (Prometheus's first scrapes, the daemon's first ticks);
// Eventually returns as soon as it happens.
constexpr auto kPatience = 60s;

// Polls `cond` every 100 ms for up to `within`.
template <typename F>
bool Eventually(F cond, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(100ms);
  }
  return cond();
}

// A policy for one class whose queue depth comes from `queue_signal` (YAML
// flow map), with no damping at all: if a stale signal read as zero, the
// fleet would be removed on the next tick.
std::string Policy(const std::string& name, const std::string& queue_signal) {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: " + name +
         "\n"
         "pools:\n"
         "  - name: gpu\n"
         "    families: [g6]\n"
         "    regions: [us-east-1]\n"
         "    capacity_types: [on-demand]\n"
         "    max_nodes: 20\n"
         "classes:\n"
         "  - name: render\n"
         "    pools: [gpu]\n"
         "    interruptible: false\n"
         "    target: {max_queue_wait: 5m, jobs_per_gpu_per_minute: 1}\n"
         "    shape: {gpus: 1, cpu_milli: 2000, memory_mib: 8000}\n"
         "    signals:\n"
         "      queue_depth: " +
         queue_signal +
         "\n"
         "scaling: {tick_interval: 1s, scale_down_stabilization: 0s, scale_down_cooldown: 0s}\n"
         "disruption: {min_node_age: 0s, max_disrupted_per_interval: 100, min_savings_usd_per_hour: 0}\n"
         "signals:\n"
         "  max_staleness: {prometheus: 5s, rabbitmq: 5s}\n";
}

class DaemonRealServers : public CliTest {
 protected:
  // Starts the daemon with `signals_yaml` under `signals:` on `port`.
  void StartDaemon(uint16_t port, const std::string& policy_text, const std::string& signals_yaml) {
    Write("policy.yaml", policy_text);
    Write("gpuscaler.yaml",
          "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\ncatalog: " +
              std::string(GPUSCALER_SOURCE_DIR) +
              "/config/catalogs/aws.yaml\nregions: [us-east-1]\ndb: audit.db\nlisten: 127.0.0.1:" +
              std::to_string(port) +
              "\ncloud: {provider: simulated, simulated_launch_latency: 2s}\nsignals:\n" + signals_yaml);
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "run", "--config", (dir_ / "gpuscaler.yaml").string(),
                                 "--port-file", (dir_ / "port").string()},
        dir_ / "out.log", dir_ / "err.log");
    ASSERT_TRUE(daemon_->started());
    ASSERT_EQ(WaitForPortFile(dir_ / "port", 30s), port) << ReadAll(dir_ / "err.log");
  }
  std::string DaemonLog() { return ReadAll(dir_ / "err.log"); }
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      std::optional<int> code = daemon_->Wait(20s);
      EXPECT_EQ(code.value_or(-1), 0) << DaemonLog();
    }
    CliTest::TearDown();
  }
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(DaemonRealServers, PrometheusScrapesTheDaemonAndItsQueueDepthDrivesTheFleet) {
  // A DCGM exporter's real output plus the queue depth a worker would export.
  const std::string dcgm = ReadAll(std::string(GPUSCALER_SHARED_DIR) +
                                   "/reference/dcgm/samples/gpu-operator-v25.10-rtx4000ada-k8s.prom");
  std::atomic<int> depth{25};
  FixtureHttpServer exporter([&](const FixtureRequest&) {
    FixtureResponse r;
    r.body = (dcgm.empty() ? std::string() : dcgm) + "# TYPE render_queue_depth gauge\nrender_queue_depth " +
             std::to_string(depth.load()) + "\n";
    return r;
  });
  const uint16_t port = FreeTcpPort();
  const std::string prom_config =
      "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n"
      "  - job_name: fixture\n    static_configs: [{targets: ['127.0.0.1:" +
      std::to_string(exporter.port()) +
      "']}]\n  - job_name: gpuscaler\n    static_configs: [{targets: ['127.0.0.1:" + std::to_string(port) +
      "']}]\n";
  auto prom = StartPrometheus(prom_config);
  GPUSCALER_REQUIRE_REAL_SERVER(prom);

  // The daemon reaches Prometheus through a pass-through, so the test can
  // stop the real server and later put a new one (on another port) behind
  // the same address.
  std::mutex backend_mu;
  std::string backend = (*prom)->url();
  FixtureHttpServer proxy([&](const FixtureRequest& req) {
    std::string url;
    {
      std::lock_guard<std::mutex> lock(backend_mu);
      url = backend + req.target;
    }
    net::HttpRequest forward;
    forward.url = url;
    net::HttpClientOptions o;
    o.timeout = 2s;
    Result<net::HttpResponse> a = net::Fetch(forward, o);
    FixtureResponse r;
    if (!a) {
      r.status = 502;
      r.body = "prometheus is down: " + a.error().message();
      return r;
    }
    r.status = a->status;
    r.content_type = a->Header("Content-Type");
    r.body = a->body;
    return r;
  });

  StartDaemon(port, Policy("prom", "{source: prometheus, query: \"sum(render_queue_depth)\"}"),
              "  prometheus: {url: \"" + proxy.url() + "\"}\n  timeout: 2s\n");

  // Prometheus sees the daemon up, and promtool accepts its exposition.
  ASSERT_TRUE(Eventually(
      [&] {
        Result<net::HttpResponse> up = (*prom)->Query("up{job=\"gpuscaler\"}");
        return up.ok() && up->body.find("\"value\":[") != std::string::npos &&
               up->body.find(",\"1\"]") != std::string::npos;
      },
      kPatience))
      << DaemonLog();
  const std::string exposition = HttpGet(port, "/metrics").body;
  Write("metrics.prom", exposition);
  const int promtool =
      std::system(("promtool check metrics < " + ShellQuote((dir_ / "metrics.prom").string()) + " > " +
                   ShellQuote((dir_ / "promtool.out").string()) + " 2>&1")
                      .c_str());
  EXPECT_EQ(promtool, 0) << ReadAll(dir_ / "promtool.out");

  // 25 jobs, 1 job per GPU-minute, 5 minutes: 5 GPUs.
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_queue_depth", "render") == 25.0; },
      kPatience))
      << DaemonLog();
  ASSERT_TRUE(Eventually([&] { return Nodes(port) > 0; }, kPatience)) << DaemonLog();
  const int fleet = Nodes(port);

  // Prometheus goes away, and the backlog empties meanwhile: a daemon that
  // read the missing signal as zero would now remove every node.
  depth = 0;
  (*prom)->Stop();
  ASSERT_TRUE(Eventually(
      [&] {
        return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_signal_stale", "render/queue_depth") ==
               1.0;
      },
      kPatience))
      << DaemonLog();
  for (int i = 0; i < 6; ++i) {  // after each of six ticks
    ASSERT_TRUE(WaitForMoreTicks(port, 1, kPatience)) << DaemonLog();
    EXPECT_GE(Nodes(port), fleet) << "scale-down on a missing signal";
  }
  EXPECT_EQ(MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_scale_down_blocked", "render"), 1.0);
  EXPECT_NE(DaemonLog().find("scale-down held"), std::string::npos);

  // A new Prometheus behind the same address: the zero is fresh now, so the
  // idle fleet goes.
  auto prom2 = StartPrometheus(prom_config);
  GPUSCALER_REQUIRE_REAL_SERVER(prom2);
  {
    std::lock_guard<std::mutex> lock(backend_mu);
    backend = (*prom2)->url();
  }
  EXPECT_TRUE(Eventually(
      [&] {
        return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_signal_stale", "render/queue_depth") ==
               0.0;
      },
      kPatience))
      << DaemonLog();
  EXPECT_TRUE(Eventually([&] { return Nodes(port) == 0; }, kPatience)) << DaemonLog();
}

TEST_F(DaemonRealServers, RabbitMqBacklogBecomesQueueDepthAndAScaleUpAndAnOutageHoldsTheFleet) {
  auto rabbit = StartRabbitMq();
  GPUSCALER_REQUIRE_REAL_SERVER(rabbit);
  ASSERT_TRUE((*rabbit)->DeclareQueue("/", "render").ok());
  ::setenv("GPUSCALER_TEST_RABBIT_USER", RabbitMqServer::kUser, 1);
  Write("rabbit-password", std::string(RabbitMqServer::kPassword) + "\n");
  const uint16_t port = FreeTcpPort();
  StartDaemon(
      port, Policy("rabbit", "{source: rabbitmq, vhost: /, queue: render}"),
      "  rabbitmq: {url: \"" + (*rabbit)->url() +
          "\", username_env: GPUSCALER_TEST_RABBIT_USER, password_file: rabbit-password}\n  timeout: 2s\n");
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_queue_depth", "render") == 0.0; },
      kPatience))
      << DaemonLog();
  EXPECT_EQ(Nodes(port), 0);

  constexpr int kMessages = 40;  // 40 jobs → 8 GPUs
  ASSERT_TRUE((*rabbit)->Publish("/", "render", kMessages).ok());
  ASSERT_TRUE(Eventually(
      [&] {
        return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_queue_depth", "render") ==
               static_cast<double>(kMessages);
      },
      kPatience))
      << DaemonLog();
  ASSERT_TRUE(Eventually([&] { return Nodes(port) > 0; }, kPatience)) << DaemonLog();
  nlohmann::json status = nlohmann::json::parse(HttpGet(port, "/api/v1/status").body);
  int gpus = 0;
  for (const auto& n : status["nodes"]) gpus += n["gpus"].get<int>();
  EXPECT_GE(gpus, 8);
  const int fleet = Nodes(port);

  (*rabbit)->Stop();
  ASSERT_TRUE(Eventually(
      [&] {
        return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_signal_stale", "render/queue_depth") ==
               1.0;
      },
      15s))
      << DaemonLog();
  for (int i = 0; i < 5; ++i) {  // after each of five ticks
    ASSERT_TRUE(WaitForMoreTicks(port, 1, kPatience)) << DaemonLog();
    EXPECT_GE(Nodes(port), fleet);
  }
  EXPECT_EQ(DaemonLog().find(RabbitMqServer::kPassword + std::string("\n")), std::string::npos);
}

TEST_F(DaemonRealServers, AnInvalidPolicyPushedMidRunIsRejectedAndTheOldOneKept) {
  const uint16_t port = FreeTcpPort();
  StartDaemon(port, Policy("first", "{source: rabbitmq, vhost: /, queue: render}"), "  timeout: 1s\n");
  ASSERT_TRUE(Eventually([&] { return HttpGet(port, "/readyz").status == 200; }, kPatience)) << DaemonLog();
  const std::string hash = nlohmann::json::parse(HttpGet(port, "/api/v1/policy").body)["hash"];

  Write("policy.yaml",
        "apiVersion: gpuscaler/v1\nkind: Policy\nname: broken\npools:\n  - name: gpu\n    max_nodes: -3\n");
  ASSERT_TRUE(Eventually(
      [&] { return MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_policy_reload_ok") == 0.0; },
      kPatience))
      << DaemonLog();
  nlohmann::json policy = nlohmann::json::parse(HttpGet(port, "/api/v1/policy").body);
  EXPECT_EQ(policy["name"], "first");
  EXPECT_EQ(policy["hash"], hash);
  EXPECT_NE(policy["last_rejection"].get<std::string>().find("policy.yaml:6:"), std::string::npos)
      << policy.dump();
  EXPECT_NE(DaemonLog().find("policy reload rejected"), std::string::npos);

  Write("policy.yaml", Policy("second", "{source: rabbitmq, vhost: /, queue: render}"));
  ASSERT_TRUE(Eventually(
      [&] { return nlohmann::json::parse(HttpGet(port, "/api/v1/policy").body)["name"] == "second"; },
      kPatience))
      << DaemonLog();
  EXPECT_EQ(MetricValue(HttpGet(port, "/metrics").body, "gpuscaler_policy_reload_ok"), 1.0);
}

}  // namespace
}  // namespace gpuscaler::testing
