// The daemon (`gpuscaler run`, provider aws) against `gpuscaler cloud-emulator`,
// both as child processes of the test, with a Prometheus-like fixture server
// answering the queue-depth query. Shared by daemon_emulator_test.cc (scale
// up/down, capacity errors, throttling, a SIGKILL at each failpoint) and
// crash_campaign_test.cc (hundreds of random kills).
//
// The truth about the fleet is the emulator's DescribeInstances, read here
// over HTTP with our own signed client (every state, terminated included);
// the truth about what the daemon did is its audit database, read with
// AuditReader once the daemon is dead (or concurrently: WAL readers see
// committed data only).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli/daemon_ticks.h"
#include "cli/process.h"
#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/net_transport.h"
#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/store/audit_reader.h"
#include "support/fixture_http_server.h"

namespace gpuscaler::testing {

using namespace std::chrono_literals;

inline constexpr const char* kAccessKey = "AKIDEXAMPLE";
inline constexpr const char* kSecretKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

// Polls `cond` every 50 ms for up to `within` (generous: CI is a loaded
// 2-core machine running sanitizer builds).
template <typename F>
bool Eventually(F cond, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return cond();
}

// A Prometheus stand-in: every /api/v1/query answers `depth` as a vector
// sample stamped now.
class QueueDepthServer {
 public:
  explicit QueueDepthServer(int depth)
      : depth_(depth), server_([this](const FixtureRequest& r) {
          FixtureResponse out;
          if (r.Path() != "/api/v1/query") {
            out.status = 404;
            return out;
          }
          const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
          out.content_type = "application/json";
          out.body = R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[)" +
                     std::to_string(now) + ",\"" + std::to_string(depth_.load()) + "\"]}]}}";
          return out;
        }) {}
  void Set(int depth) { depth_ = depth; }
  std::string url() const { return server_.url(); }

 private:
  std::atomic<int> depth_;
  FixtureHttpServer server_;
};

// 5 jobs per GPU (1 job per GPU-minute, 5 minutes of queue): depth 5n asks
// for n one-GPU g5.xlarge nodes.
inline std::string PolicyYaml(const std::string& capacity_types, bool interruptible) {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: emulator-e2e\n"
         "pools:\n"
         "  - name: gpu\n"
         "    instance_types: [g5.xlarge]\n"
         "    regions: [us-east-1]\n"
         "    zones: [us-east-1a, us-east-1b]\n"
         "    capacity_types: " +
         capacity_types +
         "\n"
         "    max_nodes: 20\n"
         "classes:\n"
         "  - name: render\n"
         "    pools: [gpu]\n"
         "    interruptible: " +
         std::string(interruptible ? "true" : "false") +
         "\n"
         "    target: {max_queue_wait: 5m, jobs_per_gpu_per_minute: 1}\n"
         "    shape: {gpus: 1, cpu_milli: 2000, memory_mib: 8000}\n"
         "    signals:\n"
         "      queue_depth: {source: prometheus, query: \"sum(render_queue_depth)\"}\n"
         "scaling: {tick_interval: 1s, scale_down_stabilization: 0s, scale_down_cooldown: 0s}\n"
         "disruption: {min_node_age: 0s, max_disrupted_per_interval: 100, disruption_interval: 1s, min_savings_usd_per_hour: 0}\n"
         "signals:\n"
         "  max_staleness: {prometheus: 60s}\n";
}

// One EC2 instance as DescribeInstances tells it.
struct CloudInstance {
  std::string id;
  std::string zone;
  CapacityType lifecycle = CapacityType::kOnDemand;
  std::string state;
  std::map<std::string, std::string> tags;
  bool live() const { return state == "pending" || state == "running"; }
  bool ours() const { return tags.count(kOwnerTag) != 0; }
  std::string intent() const {
    auto it = tags.find(kIntentTag);
    return it == tags.end() ? "" : it->second;
  }
};

// An emulated cloud as the tests read it: every instance it knows, as a
// CloudInstance (EmulatorProcess for AWS, GcpEmulatorProcess in
// gcp_daemon_harness.h), so the checks below and the crash campaign
// (crash_campaign.h) run against either.
class EmulatedCloud {
 public:
  virtual ~EmulatedCloud() = default;
  // Every instance the emulator knows (ended ones included), or nullopt
  // when it cannot be read (the reason in `error`).
  virtual std::optional<std::vector<CloudInstance>> Instances(std::string* error = nullptr) = 0;
  virtual std::string log() const = 0;
  // Live (pending or running) instances with our owner tag; -1 when unreadable.
  int LiveCount() {
    auto all = Instances();
    if (!all) return -1;
    int n = 0;
    for (const CloudInstance& i : *all) n += i.live() && i.ours() ? 1 : 0;
    return n;
  }
};

// `gpuscaler cloud-emulator` on a free port, with a scenario file.
class EmulatorProcess : public EmulatedCloud {
 public:
  EmulatorProcess(const std::filesystem::path& dir, const std::string& scenario_yaml) : dir_(dir) {
    std::ofstream(dir / "scenario.yaml") << scenario_yaml;
    std::filesystem::remove(dir / "emulator.port");
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "cloud-emulator", "--listen", "127.0.0.1:0", "--scenario",
                                 (dir / "scenario.yaml").string(), "--port-file", (dir / "emulator.port").string()},
        dir / "emulator.out", dir / "emulator.err");
    port_ = WaitForPortFile(dir / "emulator.port", 60s);
    transport_ = std::make_unique<cloud::NetTransport>();
    cloud::Credentials c;
    c.access_key_id = kAccessKey;
    c.secret_access_key = kSecretKey;
    credentials_ = std::make_unique<cloud::StaticCredentialsProvider>(c, "test");
    cloud::AwsClientOptions o;
    o.region = "us-east-1";
    o.endpoint_url = url();
    client_ = std::make_unique<cloud::AwsClient>(o, *transport_, *credentials_, clock_,
                                                 [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); });
  }
  ~EmulatorProcess() {
    if (process_ && process_->started()) {
      process_->Signal(SIGTERM);
      process_->Wait(20s);
    }
  }
  bool ok() const { return port_ != 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // A signed client for the emulator (test credentials, region us-east-1).
  cloud::AwsClient& client() { return *client_; }
  std::string log() const override { return ReadAll(dir_ / "emulator.err"); }

  std::optional<std::vector<CloudInstance>> Instances(std::string* error = nullptr) override {
    std::vector<CloudInstance> out;
    cloud::DescribeInstancesRequest req;
    req.max_results = 1000;
    for (int page = 0; page < 1000; ++page) {
      Result<std::string> body = client_->Query("ec2", cloud::DescribeInstancesQuery(req));
      if (!body) {
        if (error) *error = body.error().ToString();
        return std::nullopt;
      }
      Result<cloud::DescribeInstancesPage> parsed = cloud::ParseDescribeInstances(*body);
      if (!parsed) {
        if (error) *error = parsed.error().ToString();
        return std::nullopt;
      }
      for (const cloud::Ec2Instance& e : parsed->instances) {
        out.push_back({e.instance_id, e.availability_zone, e.lifecycle, e.state, e.tags});
      }
      if (parsed->next_token.empty()) return out;
      req.next_token = parsed->next_token;
    }
    return out;
  }
  // GET /_emulator/requests: every API request the emulator answered.
  nlohmann::json Requests() {
    net::HttpRequest r;
    r.url = url() + "/_emulator/requests";
    Result<net::HttpResponse> a = net::Fetch(r);
    if (!a || a->status != 200) return nlohmann::json::array();
    return nlohmann::json::parse(a->body);
  }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<ChildProcess> process_;
  uint16_t port_ = 0;
  SystemClock clock_;
  std::unique_ptr<cloud::Transport> transport_;
  std::unique_ptr<cloud::CredentialsProvider> credentials_;
  std::unique_ptr<cloud::AwsClient> client_;
};

// A count or seed from the environment (campaign sizes): `fallback` when
// unset or empty.
inline int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// The daemon's configuration: provider aws at the emulator, signals from the
// fixture, audit database audit.db in `dir`.
inline std::string DaemonConfigYaml(const std::string& emulator_url, const std::string& prometheus_url,
                                    const std::string& extra_cloud = "") {
  return "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\ncatalog: " +
         std::string(GPUSCALER_SOURCE_DIR) +
         "/config/catalogs/aws.yaml\nregions: [us-east-1]\ndb: audit.db\nlisten: 127.0.0.1:0\n"
         "cloud:\n  provider: aws\n  region: us-east-1\n  endpoint_url: " +
         emulator_url +
         "\n  launch_template: gpu-nodes\n"
         "  interruption_queue_url: " +
         emulator_url + "/123456789012/gpuscaler-interruptions\n" + extra_cloud +
         "signals:\n  prometheus: {url: \"" + prometheus_url + "\"}\n  timeout: 5s\n";
}

// Starts `gpuscaler run --config dir/gpuscaler.yaml` with dummy static
// credentials in its environment (and GPUSCALER_FAILPOINT when given), at
// `log_level` ("debug", …; empty: the daemon's default).
inline std::unique_ptr<ChildProcess> StartDaemon(const std::filesystem::path& dir, int tick_ms,
                                                 const std::string& failpoint = "", int run = 0,
                                                 const std::string& log_level = "") {
  // posix_spawn copies this process's environment: set what the child needs,
  // spawn, then put ours back.
  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecretKey, 1);
  ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  ::unsetenv("AWS_PROFILE");
  ::unsetenv("AWS_SESSION_TOKEN");
  if (failpoint.empty()) {
    ::unsetenv("GPUSCALER_FAILPOINT");
  } else {
    ::setenv("GPUSCALER_FAILPOINT", failpoint.c_str(), 1);
  }
  const std::string suffix = std::to_string(run);
  std::filesystem::remove(dir / "daemon.port");
  std::vector<std::string> argv{GPUSCALER_BINARY};
  if (!log_level.empty()) argv.insert(argv.end(), {"--log-level", log_level});
  argv.insert(argv.end(), {"run", "--config", (dir / "gpuscaler.yaml").string(), "--port-file",
                           (dir / "daemon.port").string(), "--tick-interval-ms", std::to_string(tick_ms),
                           "--grace-period", "60"});
  auto p = std::make_unique<ChildProcess>(argv, dir / ("daemon" + suffix + ".out"),
                                          dir / ("daemon" + suffix + ".err"));
  ::unsetenv("GPUSCALER_FAILPOINT");
  return p;
}

// Waits (up to 30 s) until a daemon StartDaemon started in `dir` writes its
// port file; its exit code if it exited first instead.
inline std::optional<int> WaitUntilServing(ChildProcess& daemon, const std::filesystem::path& dir) {
  std::optional<int> exited;
  Eventually([&] { return (exited = daemon.Wait(0ms)) || std::filesystem::exists(dir / "daemon.port"); }, 30s);
  return exited;
}

// The port of the daemon StartDaemon started in `dir` (its port file), or 0
// when it has not written one within 30 s.
inline uint16_t DaemonPort(const std::filesystem::path& dir) { return WaitForPortFile(dir / "daemon.port", 30s); }

// Waits until the daemon StartDaemon started in `dir` has finished `n` more
// ticks (daemon_ticks.h), for up to 60 s: "a few more ticks" counted, not
// slept for. False when it has not (no port, stuck, or gone).
inline bool WaitForMoreDaemonTicks(const std::filesystem::path& dir, int64_t n) {
  const uint16_t port = DaemonPort(dir);
  return port != 0 && WaitForMoreTicks(port, n, 60s);
}

// Idempotency token by `intent_hash` of it, from the launch rows of the
// audit database at `db` (empty when it cannot be read): how the GCP and
// Azure emulators' intent marks map back to launches.
inline std::map<std::string, std::string> LaunchTokensByHash(
    const std::string& db, const std::function<std::string(const std::string&)>& intent_hash) {
  std::map<std::string, std::string> out;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db);
  if (!reader) return out;
  for (int64_t after = 0;;) {
    Result<std::vector<DecisionRow>> page = (*reader)->DecisionsAfterId(after, 500);
    if (!page || page->empty()) break;
    for (const DecisionRow& d : *page) {
      after = d.id;
      Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
      if (!actions) continue;
      for (const ActionRow& r : *actions) {
        if (r.action.kind == ActionKind::kLaunch) out[intent_hash(r.action.idempotency_token)] = r.action.idempotency_token;
      }
    }
  }
  return out;
}

// What the crash checks count (docs/reliability.md "Crash safety").
struct CrashAudit {
  int live = 0;                 // live instances with our owner tag
  int duplicate_launches = 0;   // instances beyond what their launch intent asked for
  int untracked_instances = 0;  // live, ours, but no audit node row or no action listing them
  int lost_audit_rows = 0;      // cloud effects (launch, termination) without an action row recording them
  int pending_actions = 0;      // intents still without an outcome
  std::vector<std::string> problems;  // one line per finding, for the failure message

  std::string Summary() const {
    std::string s = "live=" + std::to_string(live) + " duplicate_launches=" + std::to_string(duplicate_launches) +
                    " untracked_instances=" + std::to_string(untracked_instances) +
                    " lost_audit_rows=" + std::to_string(lost_audit_rows) +
                    " pending_actions=" + std::to_string(pending_actions);
    for (const std::string& p : problems) s += "\n  " + p;
    return s;
  }
};

// Compares the emulator's instances with the audit database at `db`.
// `settled`: a clean daemon has run since the last crash (its restart
// recovery finished). Unsettled, only what must hold at every instant is
// checked: no instance without a durable intent, none beyond its intent's
// count, none listed by two launches.
inline CrashAudit AuditCloudAgainstStore(const std::vector<CloudInstance>& cloud, const std::string& db,
                                         bool settled = true) {
  CrashAudit a;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db);
  if (!reader) {
    a.problems.push_back("audit database: " + reader.error().ToString());
    a.lost_audit_rows = static_cast<int>(cloud.size());
    return a;
  }
  std::map<std::string, ActionRow> launches;  // by idempotency token
  std::map<std::string, std::vector<std::string>> launched_by;  // instance -> tokens listing it
  std::set<std::string> terminated_by_action;
  for (int64_t after = 0;;) {
    Result<std::vector<DecisionRow>> page = (*reader)->DecisionsAfterId(after, 500);
    if (!page) {
      a.problems.push_back("decisions: " + page.error().ToString());
      break;
    }
    if (page->empty()) break;
    for (const DecisionRow& d : *page) {
      after = d.id;
      Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
      if (!actions) {
        a.problems.push_back("actions: " + actions.error().ToString());
        continue;
      }
      for (const ActionRow& r : *actions) {
        if (settled && r.outcome == ActionOutcome::kPending) {
          ++a.pending_actions;
          a.problems.push_back("pending action " + r.action.idempotency_token);
        }
        if (r.action.kind == ActionKind::kLaunch) {
          launches[r.action.idempotency_token] = r;
          for (const std::string& id : r.result_instance_ids) launched_by[id].push_back(r.action.idempotency_token);
        } else if (r.outcome == ActionOutcome::kSucceeded) {
          terminated_by_action.insert(r.action.instance_ids.begin(), r.action.instance_ids.end());
        }
      }
    }
  }
  std::set<std::string> node_rows;
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(WallTime{}, FromUnixSeconds(4102444800));
  if (nodes) {
    for (const NodeRow& n : *nodes) node_rows.insert(n.launch.instance_id);
  } else {
    a.problems.push_back("nodes: " + nodes.error().ToString());
  }

  std::map<std::string, int> per_intent;
  for (const CloudInstance& i : cloud) {
    if (!i.ours()) continue;
    if (i.live()) ++a.live;
    const std::string token = i.intent();
    auto launch = launches.find(token);
    if (token.empty() || launch == launches.end()) {
      // Launched with no durable intent: the audit trail lost a launch.
      ++a.lost_audit_rows;
      a.problems.push_back(i.id + ": intent '" + token + "' has no action row");
      continue;
    }
    ++per_intent[token];
    auto by = launched_by.find(i.id);
    if (by == launched_by.end() && !settled) {
      // Recovery attributes it at the next start.
    } else if (by == launched_by.end()) {
      if (i.live()) {
        ++a.untracked_instances;
        a.problems.push_back(i.id + " (" + i.state + "): not in the result of its launch " + token);
      } else if (launch->second.outcome != ActionOutcome::kPending) {
        ++a.lost_audit_rows;
        a.problems.push_back(i.id + " (" + i.state + "): its launch " + token + " does not list it");
      }
    } else if (by->second.size() > 1) {
      ++a.duplicate_launches;
      a.problems.push_back(i.id + ": listed by " + std::to_string(by->second.size()) + " launches");
    }
    if (settled && i.live() && node_rows.count(i.id) == 0) {
      ++a.untracked_instances;
      a.problems.push_back(i.id + ": live, no node row");
    }
    if (settled && !i.live() && terminated_by_action.count(i.id) == 0) {
      ++a.lost_audit_rows;
      a.problems.push_back(i.id + " (" + i.state + "): ended, no succeeded terminate action names it");
    }
  }
  for (const auto& [token, n] : per_intent) {
    const int asked = launches[token].action.count;
    if (n > asked) {
      a.duplicate_launches += n - asked;
      a.problems.push_back("launch " + token + " asked for " + std::to_string(asked) + ", made " + std::to_string(n));
    }
  }
  return a;
}

}  // namespace gpuscaler::testing
