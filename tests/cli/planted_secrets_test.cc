// Planted secrets: the daemon (the real binary, live mode,
// simulated cloud, debug logging) runs with a RabbitMQ password file, a
// Prometheus bearer token file, an AWS secret key in its environment and an
// API bearer token. Both signal servers are hostile fixtures that reject the
// credentials and echo them back in their error bodies, so every error path
// that formats an answer is exercised. Afterwards no secret — raw, or as the
// base64 of basic auth — may appear in the daemon's logs, in any file of the
// audit database, or in any HTTP answer (/api/v1/*, /metrics, /reports, the
// dashboard), whether or not the request carried the token. A second run
// does the same for provider gcp: a service-account key file and a hostile
// Google that echoes the JWT assertion and the access token back.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/http_get.h"
#include "cloud/gcp_test_key.h"
#include "cli/process.h"
#include "gpuscaler/net/http_client.h"
#include "support/fixture_http_server.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kRabbitPassword[] = "planted-rabbit-pw-7f3a9c";
constexpr char kPromToken[] = "planted-prom-token-2b8e51";
constexpr char kAwsSecret[] = "planted-aws-secret-9d4c06";
constexpr char kApiToken[] = "planted-api-token-5e1f77";

std::string Policy() {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: secrets\n"
         "pools:\n"
         "  - {name: gpu, families: [g6], regions: [us-east-1], capacity_types: [on-demand], max_nodes: 5}\n"
         "classes:\n"
         "  - name: render\n"
         "    pools: [gpu]\n"
         "    target: {max_queue_wait: 5m, jobs_per_gpu_per_minute: 1}\n"
         "    shape: {gpus: 1, cpu_milli: 2000, memory_mib: 8000}\n"
         "    signals:\n"
         "      queue_depth: {source: rabbitmq, vhost: /, queue: render}\n"
         "  - name: train\n"
         "    pools: [gpu]\n"
         "    target: {max_queue_wait: 5m, jobs_per_gpu_per_minute: 1}\n"
         "    shape: {gpus: 1, cpu_milli: 2000, memory_mib: 8000}\n"
         "    signals:\n"
         "      queue_depth: {source: prometheus, query: 'sum(train_queue)'}\n"
         "scaling: {tick_interval: 1s}\n";
}

class PlantedSecrets : public CliTest {
 protected:
  void TearDown() override {
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    ::unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
    ::unsetenv("NO_GCE_CHECK");
    CliTest::TearDown();
  }
};

TEST_F(PlantedSecrets, NeverReachLogsTheAuditFileOrHttpAnswers) {
  // Hostile servers: reject, and echo whatever credentials came.
  FixtureHttpServer signals([](const FixtureRequest& req) {
    FixtureResponse r;
    r.status = req.Path().rfind("/api/", 0) == 0 && req.Path() != "/api/v1/query" ? 401 : 500;
    r.content_type = "application/json";
    r.body = "{\"error\":\"not_authorized\",\"reason\":\"bad credentials " + req.Header("Authorization") + " " +
             kRabbitPassword + " " + kPromToken + "\"}";
    return r;
  });
  Write("policy.yaml", Policy());
  Write("rabbit-pw", std::string(kRabbitPassword) + "\n");
  Write("prom-token", std::string(kPromToken) + "\n");
  Write("api-token", std::string(kApiToken) + "\n");
  Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\ncatalog: " +
                              std::string(GPUSCALER_SOURCE_DIR) +
                              "/config/catalogs/aws.yaml\nregions: [us-east-1]\ndb: audit.db\nlisten: 127.0.0.1:0\n"
                              "api_token_file: api-token\n"
                              "cloud: {provider: simulated, simulated_launch_latency: 2s}\n"
                              "signals:\n"
                              "  prometheus: {url: \"" + signals.url() + "\", bearer_token_file: prom-token}\n"
                              "  rabbitmq: {url: \"" + signals.url() + "\", username: guest, password_file: rabbit-pw}\n"
                              "  timeout: 2s\n");
  // The AWS SDK-style variables reach the daemon's environment as they would
  // in a pod; nothing may print them.
  ::setenv("AWS_ACCESS_KEY_ID", "AKIAPLANTED0000000001", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kAwsSecret, 1);
  auto daemon = std::make_unique<ChildProcess>(
      std::vector<std::string>{GPUSCALER_BINARY, "--log-level", "debug", "run", "--config",
                               (dir_ / "gpuscaler.yaml").string(), "--port-file", (dir_ / "port").string()},
      dir_ / "out.log", dir_ / "err.log");
  ASSERT_TRUE(daemon->started());
  const uint16_t port = WaitForPortFile(dir_ / "port", 30s);
  ASSERT_NE(port, 0) << ReadAll(dir_ / "err.log");

  // Wait until both sources have been asked (with the credentials) a few
  // times and ticks have been recorded.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline &&
         (signals.requests() < 6 || HttpGet(port, "/api/v1/decisions").body.find("\"id\"") == std::string::npos)) {
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_GE(signals.requests(), 6) << ReadAll(dir_ / "err.log");

  std::vector<std::pair<std::string, std::string>> answers;  // what, body (+ headers)
  const std::string bearer = std::string("Authorization: Bearer ") + kApiToken + "\r\n";
  for (const char* path : {"/", "/api/v1/dashboard", "/healthz", "/readyz", "/metrics", "/api/v1/status",
                           "/api/v1/decisions?detail=1", "/decisions/1", "/api/v1/decisions/1/explain",
                           "/api/v1/plan", "/api/v1/snapshot", "/api/v1/policy", "/reports/report.json",
                           "/reports/report.csv", "/reports/report.focus.csv", "/reports/report.html"}) {
    for (const std::string& auth : {std::string(), bearer}) {
      HttpReply r = HttpRequestTo(port, "GET", path, auth);
      EXPECT_GT(r.status, 0) << path;
      answers.emplace_back(path, r.headers + r.body);
    }
  }
  // The mutating endpoints, with the token (accepted) and with the token in
  // the query string, where a careless access log would print it.
  HttpReply paused = HttpRequestTo(port, "POST", "/api/v1/pause", bearer);
  EXPECT_EQ(paused.status, 200) << paused.body;
  answers.emplace_back("pause", paused.headers + paused.body);
  HttpReply query = HttpRequestTo(port, "POST", std::string("/api/v1/resume?token=") + kApiToken);
  EXPECT_EQ(query.status, 401);
  answers.emplace_back("resume?token", query.headers + query.body);
  HttpReply resumed = HttpRequestTo(port, "POST", "/api/v1/resume", bearer);
  EXPECT_EQ(resumed.status, 200) << resumed.body;
  answers.emplace_back("resume", resumed.headers + resumed.body);
  // /metrics once more, after the failures have been counted.
  answers.emplace_back("/metrics (after)", HttpGet(port, "/metrics").body);

  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(30s).value_or(-1), 0);

  const std::string log = ReadAll(dir_ / "err.log") + ReadAll(dir_ / "out.log");
  // The error paths ran: the sources' failures and the HTTP requests are in
  // the log (else this test would prove nothing).
  EXPECT_NE(log.find("rabbitmq"), std::string::npos) << log;
  EXPECT_NE(log.find("prometheus"), std::string::npos) << log;
  EXPECT_NE(log.find("/api/v1/resume"), std::string::npos) << "no access log at debug level";
  // The servers' echo of the credentials reached the log (scrubbed): the
  // redaction, not the lack of a message, keeps the secrets out.
  EXPECT_NE(log.find("bad credentials"), std::string::npos) << log;

  std::string audit;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("audit.db", 0) == 0) audit += ReadAll(entry.path());
  }
  ASSERT_GT(audit.size(), 0u);

  const std::vector<std::string> secrets = {
      kRabbitPassword, kPromToken, kAwsSecret, kApiToken,
      // Basic auth as it went over the wire: base64 of "guest:<password>".
      net::BasicAuthorization("guest", kRabbitPassword).substr(6)};
  for (const std::string& secret : secrets) {
    SCOPED_TRACE(secret);
    EXPECT_EQ(log.find(secret), std::string::npos) << "in the log";
    EXPECT_EQ(audit.find(secret), std::string::npos) << "in the audit database";
    for (const auto& [what, text] : answers) EXPECT_EQ(text.find(secret), std::string::npos) << "in " << what;
  }
}

// provider gcp: a service-account key file, and a hostile Google. Its token
// endpoint first rejects the JWT assertion and echoes it (and its parts) in
// the error description, then issues a planted access token; its Compute
// Engine API rejects every call and echoes the Authorization header. Neither
// the private key, nor an assertion, nor the token may appear in the logs,
// the audit database or any HTTP answer.
TEST_F(PlantedSecrets, GcpKeysAssertionsAndTokensNeverReachLogsTheAuditFileOrHttpAnswers) {
  constexpr char kGcpToken[] = "ya29.planted-gcp-access-token-4c7d2e";
  std::mutex mu;
  std::vector<std::string> assertions;
  int token_requests = 0, compute_requests = 0;
  FixtureHttpServer google([&](const FixtureRequest& req) {
    FixtureResponse r;
    r.content_type = "application/json";
    std::lock_guard<std::mutex> lock(mu);
    if (req.Path() == "/token") {
      std::string assertion = req.body.substr(req.body.find("assertion=") + 10);
      assertion = assertion.substr(0, assertion.find('&'));
      assertions.push_back(assertion);
      if (++token_requests <= 3) {
        const std::string signature = assertion.substr(assertion.rfind('.') + 1);
        r.status = 400;
        r.body = "{\"error\":\"invalid_grant\",\"error_description\":\"bad assertion " + assertion + " sig " +
                 signature + "\"}";
      } else {
        r.body = std::string("{\"access_token\":\"") + kGcpToken + "\",\"expires_in\":3599,\"token_type\":\"Bearer\"}";
      }
      return r;
    }
    ++compute_requests;
    r.status = 403;
    r.body = "{\"error\":{\"code\":403,\"message\":\"Request had invalid authentication credentials: " +
             req.Header("Authorization") + "\",\"errors\":[{\"reason\":\"forbidden\",\"message\":\"" +
             req.Header("Authorization") + "\"}],\"status\":\"PERMISSION_DENIED\"}}";
    return r;
  });
  const cloud::testing::TestRsaKey& key = cloud::testing::SharedTestRsaKey();
  Write("sa-key.json", cloud::testing::ServiceAccountKeyJson(google.url() + "/token", key.PrivatePem()));
  Write("policy.yaml",
        "apiVersion: gpuscaler/v1\nkind: Policy\nname: secrets-gcp\n"
        "pools:\n  - {name: gpu, instance_types: [g2-standard-8], regions: [us-central1], capacity_types: [on-demand], "
        "max_nodes: 5}\n"
        "classes:\n  - name: render\n    pools: [gpu]\n    target: {max_queue_wait: 5m, jobs_per_gpu_per_minute: 1}\n"
        "    shape: {gpus: 1, cpu_milli: 2000, memory_mib: 8000}\n"
        "scaling: {tick_interval: 1s}\n");
  Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\ncatalog: " +
                              std::string(GPUSCALER_SOURCE_DIR) +
                              "/config/catalogs/gcp.yaml\nregions: [us-central1]\ndb: audit.db\nlisten: 127.0.0.1:0\n"
                              "cloud:\n  provider: gcp\n  max_attempts: 1\n  gcp:\n    region: us-central1\n"
                              "    zones: [us-central1-a]\n    endpoint: " + google.url() + "/compute/v1/\n"
                              "    instance_template: global/instanceTemplates/gpu\n");
  ::setenv("GOOGLE_APPLICATION_CREDENTIALS", (dir_ / "sa-key.json").c_str(), 1);
  ::setenv("NO_GCE_CHECK", "true", 1);
  auto daemon = std::make_unique<ChildProcess>(
      std::vector<std::string>{GPUSCALER_BINARY, "--log-level", "debug", "run", "--config",
                               (dir_ / "gpuscaler.yaml").string(), "--port-file", (dir_ / "port").string()},
      dir_ / "out.log", dir_ / "err.log");
  ASSERT_TRUE(daemon->started());
  const uint16_t port = WaitForPortFile(dir_ / "port", 30s);
  ASSERT_NE(port, 0) << ReadAll(dir_ / "err.log");
  // Until the rejections, the token and the rejected Compute calls all happened.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  auto progressed = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return token_requests > 3 && compute_requests >= 3;
  };
  while (std::chrono::steady_clock::now() < deadline && !progressed()) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(progressed()) << ReadAll(dir_ / "err.log");

  std::vector<std::pair<std::string, std::string>> answers;
  for (const char* path : {"/", "/api/v1/dashboard", "/readyz", "/metrics", "/api/v1/status",
                           "/api/v1/decisions?detail=1", "/api/v1/plan", "/api/v1/snapshot"}) {
    HttpReply r = HttpRequestTo(port, "GET", path, "");
    answers.emplace_back(path, r.headers + r.body);
  }
  daemon->Signal(SIGTERM);
  EXPECT_EQ(daemon->Wait(30s).value_or(-1), 0);

  const std::string log = ReadAll(dir_ / "err.log") + ReadAll(dir_ / "out.log");
  // The echoing paths ran and were logged (scrubbed), so the checks below
  // are not vacuous.
  EXPECT_NE(log.find("invalid_grant"), std::string::npos) << log;
  EXPECT_NE(log.find("HTTP 403: forbidden: Bearer [redacted]"), std::string::npos) << log;
  EXPECT_NE(log.find("[redacted]"), std::string::npos) << log;
  std::string audit;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("audit.db", 0) == 0) audit += ReadAll(entry.path());
  }
  ASSERT_GT(audit.size(), 0u);

  std::vector<std::string> secrets = {kGcpToken};
  // Lines of the private key's PEM body.
  std::istringstream pem(key.PrivatePem());
  for (std::string line; std::getline(pem, line);) {
    if (line.size() >= 32 && line.find("-----") == std::string::npos) secrets.push_back(line);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& a : assertions) {
      secrets.push_back(a);
      secrets.push_back(a.substr(a.rfind('.') + 1));  // the signature alone
    }
  }
  ASSERT_GT(secrets.size(), 10u);
  for (const std::string& secret : secrets) {
    SCOPED_TRACE(secret);
    EXPECT_EQ(log.find(secret), std::string::npos) << "in the log";
    EXPECT_EQ(audit.find(secret), std::string::npos) << "in the audit database";
    for (const auto& [what, text] : answers) EXPECT_EQ(text.find(secret), std::string::npos) << "in " << what;
  }
}

}  // namespace
}  // namespace gpuscaler::testing
