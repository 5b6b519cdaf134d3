// `gpuscaler run --demo`, run as a process: the daemon's loop against the
// simulated cloud, every HTTP endpoint, the bearer token on mutations, and a
// clean SIGTERM.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "cli/http_get.h"
#include "cli/process.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

class RunDemo : public CliTest {
 protected:
  // Starts the demo at 3600x (a tick per 1/60 s of real time) and waits until
  // it answers /readyz.
  uint16_t Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {GPUSCALER_BINARY, "--log-level", "debug", "run", "--demo", "--listen",
                                     "127.0.0.1:0", "--port-file", (dir_ / "port").string(), "--db",
                                     (dir_ / "audit.db").string(), "--speed", "3600", "--days", "2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<ChildProcess>(argv, dir_ / "out.log", dir_ / "err.log");
    EXPECT_TRUE(daemon_->started());
    const uint16_t port = WaitForPortFile(dir_ / "port", 30s);
    EXPECT_NE(port, 0) << ReadAll(dir_ / "err.log");
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (HttpGet(port, "/readyz").status != 200 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(50ms);
    return port;
  }
  // A reply's JSON body, or a failure that carries the reply and the
  // daemon's last log lines (a slow or failing daemon says why).
  nlohmann::json GetJson(uint16_t port, const std::string& target) {
    const HttpReply reply = HttpGet(port, target);
    nlohmann::json body = nlohmann::json::parse(reply.body, nullptr, false);
    EXPECT_FALSE(body.is_discarded()) << target << ": HTTP " << reply.status << " " << reply.body.substr(0, 300)
                                      << "\ndaemon log, last lines:\n" << LogTail();
    return body.is_discarded() ? nlohmann::json::object() : body;
  }
  std::string LogTail() const {
    const std::string log = ReadAll(dir_ / "err.log");
    return log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
  }
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(RunDemo, ServesItsEndpointsWhileTickingAndStopsCleanlyOnSigterm) {
  const uint16_t port = Start();
  ASSERT_NE(port, 0);
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  EXPECT_EQ(HttpGet(port, "/readyz").status, 200);

  // Every family once the first tick's figures are in (they are observed on
  // the I/O thread just after the tick that made the daemon ready), and the
  // memory gauges, set every tick: a daemon of a few MB at least.
  const std::vector<std::string> families = {
      "gpuscaler_tick_duration_seconds_bucket", "gpuscaler_ticks_total", "gpuscaler_nodes",
      "gpuscaler_cost_usd_per_hour", "gpuscaler_predicted_cost_usd_per_hour", "gpuscaler_policy_reload_ok",
      "gpuscaler_leader", "gpuscaler_decisions_total", "\nprocess_resident_memory_bytes "};
  HttpReply metrics;
  auto missing = [&] {
    for (const std::string& name : families)
      if (metrics.body.find(name) == std::string::npos) return name;
    return std::string();
  };
  for (const auto deadline = std::chrono::steady_clock::now() + 30s; std::chrono::steady_clock::now() < deadline;) {
    metrics = HttpGet(port, "/metrics");
    if (metrics.status == 200 && missing().empty()) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(metrics.status, 200) << LogTail();
  EXPECT_EQ(missing(), "") << LogTail();
  auto gauge = [&](const std::string& name) {
    const size_t at = metrics.body.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name;
    return at == std::string::npos ? -1.0 : std::stod(metrics.body.substr(at + name.size() + 2));
  };
  EXPECT_GT(gauge("process_resident_memory_bytes"), 1e6);
  EXPECT_GT(gauge("gpuscaler_heap_in_use_bytes"), 1e5);

  // The demo moves: after a while there are nodes and decisions.
  // (A deadline, not a count: a loaded CI machine ticks slower.)
  nlohmann::json status;
  for (const auto deadline = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < deadline;) {
    status = GetJson(port, "/api/v1/status");
    if (!status.value("nodes", nlohmann::json::array()).empty() && status.value("ticks", 0) > 30) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(status.value("mode", ""), "demo") << status.dump() << LogTail();
  EXPECT_FALSE(status.value("nodes", nlohmann::json::array()).empty()) << status.dump() << LogTail();
  EXPECT_GT(status.value("cost_usd_per_hour", 0.0), 0) << status.dump();
  EXPECT_FALSE(status.value("series", nlohmann::json::array()).empty()) << status.dump();

  nlohmann::json decisions = GetJson(port, "/api/v1/decisions?limit=5");
  ASSERT_TRUE(decisions.contains("decisions")) << decisions.dump();
  EXPECT_FALSE(decisions["decisions"].empty()) << decisions.dump() << LogTail();
  EXPECT_EQ(HttpGet(port, "/api/v1/decisions?since=yesterday").status, 400);

  HttpReply plan = HttpGet(port, "/api/v1/plan");
  ASSERT_EQ(plan.status, 200);
  EXPECT_NE(plan.body.find("predicted_cost_usd_per_hour"), std::string::npos);
  HttpReply snapshot = HttpGet(port, "/api/v1/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  EXPECT_NE(snapshot.body.find("\"kind\": \"Snapshot\""), std::string::npos);
  HttpReply policy = HttpGet(port, "/api/v1/policy");
  ASSERT_EQ(policy.status, 200);
  EXPECT_NE(policy.body.find("\"hash\""), std::string::npos);

  HttpReply page = HttpGet(port, "/");
  ASSERT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<svg id=\"chart-nodes\""), std::string::npos);
  EXPECT_EQ(HttpGet(port, "/no/such/page").status, 404);

  // Mutations are disabled without a token.
  EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/pause").status, 403);

  daemon_->Signal(SIGTERM);
  std::optional<int> code = daemon_->Wait(20s);
  ASSERT_TRUE(code.has_value()) << "still running 20 s after SIGTERM\n" << LogTail();
  EXPECT_EQ(*code, 0) << LogTail();
}

TEST_F(RunDemo, PauseAndResumeNeedTheBearerToken) {
  Write("token", "s3cret-token\n");
  const uint16_t port = Start({"--api-token-file", (dir_ / "token").string()});
  ASSERT_NE(port, 0);
  EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/pause").status, 401);
  EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/pause", "Authorization: Bearer wrong\r\n").status, 401);
  EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/pause", "Authorization: Bearer s3cret-token\r\n").status, 200);
  const int ticks = nlohmann::json::parse(HttpGet(port, "/api/v1/status").body)["ticks"].get<int>();
  std::this_thread::sleep_for(300ms);
  nlohmann::json paused = nlohmann::json::parse(HttpGet(port, "/api/v1/status").body);
  EXPECT_TRUE(paused["paused"].get<bool>());
  EXPECT_LE(paused["ticks"].get<int>(), ticks + 1);
  EXPECT_EQ(HttpRequestTo(port, "POST", "/api/v1/resume", "Authorization: Bearer s3cret-token\r\n").status, 200);
  EXPECT_FALSE(nlohmann::json::parse(HttpGet(port, "/api/v1/status").body)["paused"].get<bool>());
  // The token never reaches the logs.
  daemon_->Signal(SIGTERM);
  ASSERT_TRUE(daemon_->Wait(20s).has_value());
  EXPECT_EQ(ReadAll(dir_ / "err.log").find("s3cret-token"), std::string::npos);
  EXPECT_EQ(ReadAll(dir_ / "out.log").find("s3cret-token"), std::string::npos);
}

TEST_F(RunDemo, ABadConfigurationExitsWithCode2AndSaysWhere) {
  Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: nope.yaml\nlisten: nowhere\n");
  ProcessResult r = Gpuscaler({"run", "--config", (dir_ / "gpuscaler.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpuscaler.yaml:5:"), std::string::npos) << r.err;
  r = Gpuscaler({"run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--config"), std::string::npos) << r.err;
}

TEST_F(RunDemo, AMissingApiTokenFileNamesTheFileAndWhereItWasSet) {
  Write("policy.yaml", "apiVersion: gpuscaler/v1\nkind: Policy\nname: p\n");
  Write("gpuscaler.yaml",
        "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\n"
        "cloud: {provider: simulated}\napi_token_file: secrets/token\n");
  ProcessResult r = Gpuscaler({"run", "--config", (dir_ / "gpuscaler.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gpuscaler.yaml:6:17: api_token_file: " + (dir_ / "secrets/token").string() +
                       ": No such file or directory"),
            std::string::npos)
      << r.err;
  r = Gpuscaler({"run", "--config", (dir_ / "gpuscaler.yaml").string(), "--api-token-file", "/nonexistent/token"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--api-token-file: /nonexistent/token: No such file or directory"), std::string::npos) << r.err;
}

// The live daemon saves its learned state under its cluster name (a new
// leader or a restart starts from it); a dry run, which may share the
// live daemon's store, neither reads nor writes it.
TEST_F(RunDemo, ALiveDaemonSavesItsLearnedStateUnderItsClusterNameAndADryRunDoesNot) {
  Write("policy.yaml",
        "apiVersion: gpuscaler/v1\nkind: Policy\nname: p\npools:\n  - name: gpu\n    instance_types: [g5.xlarge]\n"
        "    regions: [us-east-1]\nclasses:\n  - {name: batch, pools: [gpu]}\n");
  for (const bool dry_run : {false, true}) {
    SCOPED_TRACE(dry_run ? "dry run" : "live");
    const std::string db = (dir_ / (dry_run ? "dry.db" : "live.db")).string();
    Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: lab-7\npolicy: policy.yaml\n"
                            "cloud: {provider: simulated}\nlisten: 127.0.0.1:0\ndb: " + db +
                                "\ndry_run: " + (dry_run ? "true" : "false") + "\n");
    ProcessResult r = Gpuscaler({"run", "--config", (dir_ / "gpuscaler.yaml").string(), "--max-ticks", "3",
                                 "--tick-interval-ms", "10"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open(db);
    ASSERT_TRUE(store.ok()) << store.error().ToString();
    Result<std::optional<std::string>> saved = (*store)->LearnedState("lab-7");
    ASSERT_TRUE(saved.ok()) << saved.error().ToString();
    if (dry_run) {
      EXPECT_FALSE(saved->has_value()) << **saved;
    } else {
      ASSERT_TRUE(saved->has_value());
      const nlohmann::json document = nlohmann::json::parse(**saved);
      EXPECT_EQ(document["version"], 1);
      EXPECT_TRUE(document.contains("capacity_errors")) << document.dump();
    }
  }
}

// Credentials the daemon cannot use are something to fix before starting
// again, as a bad configuration is: exit 2, naming the file.
TEST_F(RunDemo, UnusableCredentialsExitWithCode2LikeEveryConfigurationError) {
  Write("policy.yaml",
        "apiVersion: gpuscaler/v1\nkind: Policy\nname: p\npools:\n  - name: gpu\n    instance_types: [g2-standard-8]\n"
        "    regions: [us-central1]\nclasses:\n  - {name: batch, pools: [gpu]}\n");
  Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\n"
                          "catalog: " + std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/gcp.yaml\n"
                          "cloud:\n  provider: gcp\n  gcp: {project: my-project-1, region: us-central1, zones: [us-central1-a], instance_template: gpu-node}\n");
  Write("creds.json", "[\"not a credentials file\"]\n");
  ::setenv("GOOGLE_APPLICATION_CREDENTIALS", (dir_ / "creds.json").c_str(), 1);
  ProcessResult r = Gpuscaler({"run", "--config", (dir_ / "gpuscaler.yaml").string()});
  ::unsetenv("GOOGLE_APPLICATION_CREDENTIALS");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("creds.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscaler::testing
