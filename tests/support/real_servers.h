// Real Prometheus and RabbitMQ servers for integration tests, started and
// stopped by the test itself (Debian `prometheus` 2.42 and `rabbitmq-server`
// 3.10 with the management plugin; scripts/setup.sh installs both).
//
// Each server runs as a plain process on free loopback ports, with its own
// temporary folder for configuration, data and logs. Every process it starts
// (RabbitMQ's Erlang VM, its own epmd, helpers) carries a marker in its
// environment, so the handle ends exactly those, by pid, when it goes away.
//
//   auto prom = StartPrometheus(PrometheusScrapeConfig({"127.0.0.1:" + port}));
//   GPUSCALER_REQUIRE_REAL_SERVER(prom);   // skip (fail in CI) when absent
//   ... (*prom)->url() ...
//
// Not thread-safe: one test thread drives a handle.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/net/http_client.h"
#include "gpuscaler/status.h"

namespace gpuscaler::testing {

// True when the environment says we run in CI (CI=true or CI=1): there a
// missing server binary fails the test instead of skipping it.
bool InCi();

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then
// released).
uint16_t FreeTcpPort();

// A server process tree and its folder. Stop() (or the destructor) ends it.
class RealServer {
 public:
  virtual ~RealServer();
  RealServer(const RealServer&) = delete;
  RealServer& operator=(const RealServer&) = delete;

  uint16_t port() const { return port_; }  // the HTTP port
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::filesystem::path& dir() const { return dir_; }
  // The end of the server's output (for failure messages).
  std::string LogTail(size_t bytes = 3000) const;
  // Stops the server and every process it started; returns when they are
  // gone (or were killed after a grace period). Idempotent.
  void Stop();
  bool stopped() const { return stopped_; }

 protected:
  RealServer(std::filesystem::path dir, uint16_t port) : dir_(std::move(dir)), port_(port) {}
  virtual void GracefulStop() = 0;  // ask the main process to exit
  // Ends processes carrying this server's marker; waits up to `grace`, then kills.
  void EndMarkedProcesses(std::chrono::milliseconds grace);
  bool WaitMainExit(std::chrono::milliseconds within);
  std::string marker() const;

  std::filesystem::path dir_;
  uint16_t port_;
  pid_t pid_ = -1;
  std::string log_file_;
  bool stopped_ = false;
  bool owns_dir_ = true;

  friend class ServerLauncher;
};

class PrometheusServer final : public RealServer {
 public:
  ~PrometheusServer() override;
  // Runs `promql` at the server's "now": the parsed-by-nobody answer.
  Result<net::HttpResponse> Query(const std::string& promql) const;

 private:
  PrometheusServer(std::filesystem::path dir, uint16_t port) : RealServer(std::move(dir), port) {}
  void GracefulStop() override;
  friend class ServerLauncher;
};

class RabbitMqServer final : public RealServer {
 public:
  ~RabbitMqServer() override;
  uint16_t amqp_port() const { return amqp_port_; }
  const std::string& node() const { return node_; }
  // The default administrator (allowed from loopback: loopback_users = none).
  static constexpr const char* kUser = "guest";
  static constexpr const char* kPassword = "guest";

  // A management API call as the administrator: `path` like
  // "/api/queues/%2F/celery", `body` JSON (may be empty).
  Result<net::HttpResponse> Api(const std::string& method, const std::string& path,
                                const std::string& body = "") const;
  // Creates a vhost (the name is percent-encoded here) and gives the
  // administrator full permissions on it.
  Status AddVhost(const std::string& vhost) const;
  // Declares a classic, non-durable queue.
  Status DeclareQueue(const std::string& vhost, const std::string& queue) const;
  // Publishes `count` messages to the queue through the default exchange.
  Status Publish(const std::string& vhost, const std::string& queue, int count) const;

 private:
  RabbitMqServer(std::filesystem::path dir, uint16_t port) : RealServer(std::move(dir), port) {}
  void GracefulStop() override;
  // Runs rabbitmqctl with the server's environment; its exit status.
  int Ctl(const std::vector<std::string>& args, std::chrono::milliseconds within) const;

  uint16_t amqp_port_ = 0;
  std::string node_;
  std::vector<std::string> env_;  // the server's environment (for rabbitmqctl)
  std::string bin_dir_;
  bool drop_to_rabbitmq_user_ = false;
  friend class ServerLauncher;
};

// Starts Prometheus with `config_yaml` as prometheus.yml on a free loopback
// port; returns once GET /-/ready answers 200. kNotFound when the binary is
// absent (GPUSCALER_PROMETHEUS overrides the path), kTransient with the log
// tail when it does not become ready within `ready_within`.
Result<std::unique_ptr<PrometheusServer>> StartPrometheus(const std::string& config_yaml,
                                                          std::chrono::seconds ready_within = std::chrono::seconds(30));

// Starts RabbitMQ with the management plugin on free loopback ports (AMQP,
// management HTTP, Erlang distribution, its own epmd); returns once
// GET /api/overview answers 200. Statistics are emitted every 500 ms so
// queue counters show up quickly. kNotFound when absent
// (GPUSCALER_RABBITMQ_BIN_DIR overrides /usr/lib/rabbitmq/bin).
Result<std::unique_ptr<RabbitMqServer>> StartRabbitMq(std::chrono::seconds ready_within = std::chrono::seconds(60));

// prometheus.yml that scrapes `targets` ("127.0.0.1:PORT") at `metrics_path`
// every `interval` as job `job`.
std::string PrometheusScrapeConfig(const std::vector<std::string>& targets, std::string_view job = "fixture",
                                   std::string_view metrics_path = "/metrics",
                                   std::chrono::milliseconds interval = std::chrono::seconds(1));

}  // namespace gpuscaler::testing

// In a test (or SetUp): when `result` (a Result<...> from StartPrometheus or
// StartRabbitMq) failed because the server binary is absent, skip with the
// reason, or fail when InCi(); any other failure fails the test.
#define GPUSCALER_REQUIRE_REAL_SERVER(result)                                                              \
  do {                                                                                                     \
    if (!(result).ok()) {                                                                                  \
      if ((result).error().category() == ::gpuscaler::ErrorCategory::kNotFound &&                         \
          !::gpuscaler::testing::InCi()) {                                                                 \
        GTEST_SKIP() << (result).error().message() << " (set CI=true to make this a failure)";            \
      }                                                                                                    \
      FAIL() << (result).error().ToString();                                                               \
    }                                                                                                      \
  } while (0)
