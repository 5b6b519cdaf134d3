// `gpuscaler run --config F --speed 60` as a process, on the simulated cloud,
// with the fake Kubernetes API server of this test as its cluster: the
// daemon launches nodes for pending GPU pods, this test registers them as
// a kubelet would, and a consolidation drain that a PodDisruptionBudget
// refuses (429) stays open for ten minutes of the daemon's time while ticks
// keep their schedule and /healthz answers 200 throughout; once the budget
// allows it, the drain completes and the node is terminated.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "cli/http_get.h"
#include "cli/process.h"
#include "gpuscaler/model/time.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr double kSpeed = 60;  // virtual seconds per real second
constexpr const char* kNamespace = "default";

WallTime TimeOf(const nlohmann::json& status) {
  WallTime t{};
  if (status.contains("time") && status["time"].is_string()) ParseRfc3339(status["time"].get<std::string>(), &t);
  return t;
}

template <typename F>
bool PollFor(F cond, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(50ms);  // polling another process: nothing to await
  }
  return cond();
}

// The sample `name{labels}` (labels as printed, "" for none) of a text
// exposition; nullopt when absent.
std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const size_t at = exposition.find(needle);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(exposition.substr(at + needle.size()));
}

class DaemonProcessDrain : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::optional<std::string> pods = ReadReference("examples/podlist-pending-gpu.assembled.json");
    std::optional<std::string> nodes = ReadReference("examples/nodelist-gpu.assembled.json");
    if (!pods || !nodes) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    pod_shape_ = json::parse(*pods)["items"][0];
    node_shape_ = json::parse(*nodes)["items"][0];
    Write("kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                        "clusters: [{name: fake, cluster: {server: '" +
                            server_.url() +
                            "'}}]\n"
                            "users: [{name: u, user: {token: t0ken}}]\n"
                            "contexts: [{name: test, context: {cluster: fake, user: u, namespace: gpuscaler}}]\n");
    Write("policy.yaml",
          "apiVersion: gpuscaler/v1\nkind: Policy\nname: drain-off-tick\n"
          "pools:\n"
          "  - name: gpu\n"
          "    instance_types: [g5.xlarge]\n"
          "    regions: [us-east-1]\n"
          "    zones: [us-east-1a]\n"
          "    capacity_types: [on-demand]\n"
          "    max_nodes: 4\n"
          "classes:\n"
          "  - name: inference\n"
          "    pools: [gpu]\n"
          "    match: {labels: {app: triton-inference-server}}\n"
          "scaling: {tick_interval: 10s, scale_down_stabilization: 0s, scale_down_cooldown: 0s}\n"
          "disruption: {min_node_age: 0s, max_disrupted_per_interval: 10, disruption_interval: 10s,\n"
          "             min_savings_usd_per_hour: 0, drain_timeout: 30m}\n");
    Write("gpuscaler.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\n"
                            "catalog: " +
                                std::string(GPUSCALER_SOURCE_DIR) +
                                "/config/catalogs/aws.yaml\nregions: [us-east-1]\ndb: audit.db\n"
                                "listen: 127.0.0.1:0\n"
                                "cloud: {provider: simulated, simulated_launch_latency: 60s}\n"
                                "kubernetes: {enabled: true, kubeconfig: kubeconfig}\n");
  }

  uint16_t Start() {
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "--log-level", "debug", "run", "--config",
                                 (dir_ / "gpuscaler.yaml").string(), "--port-file", (dir_ / "port").string(),
                                 "--speed", std::to_string(static_cast<int>(kSpeed))},
        dir_ / "out.log", dir_ / "err.log");
    EXPECT_TRUE(daemon_->started());
    return WaitForPortFile(dir_ / "port", 30s);
  }

  json Status(uint16_t port) {
    HttpReply r = HttpGet(port, "/api/v1/status");
    if (r.status != 200) return json::object();
    return json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  }

  json Pod(const std::string& name, bool gpu) {
    json pod = pod_shape_;
    pod["metadata"]["name"] = name;
    pod["metadata"]["uid"] = "uid-" + name;
    pod["metadata"]["namespace"] = kNamespace;
    if (!gpu) pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "100m"}}}};
    return pod;
  }
  json BoundPod(const std::string& name, bool gpu, const std::string& node) {
    json pod = Pod(name, gpu);
    pod["spec"]["nodeName"] = node;
    pod["status"] = {{"phase", "Running"}};
    return pod;
  }
  // The Node a kubelet registers for `instance_id`: Ready, one GPU allocatable.
  json NodeFor(const std::string& name, const std::string& instance_id, const std::string& zone) {
    json node = node_shape_;
    node["metadata"]["name"] = name;
    node["metadata"]["uid"] = "uid-" + name;
    json& labels = node["metadata"]["labels"];
    labels = {{"kubernetes.io/hostname", name},
              {"node.kubernetes.io/instance-type", "g5.xlarge"},
              {"topology.kubernetes.io/region", "us-east-1"},
              {"topology.kubernetes.io/zone", zone},
              {"gpuscaler.io/pool", "gpu"},
              {"gpuscaler.io/cluster", "test"}};
    node["spec"] = {{"providerID", "aws:///" + zone + "/" + instance_id}};
    for (const char* field : {"capacity", "allocatable"})
      node["status"][field] = {{"cpu", "4"}, {"memory", "16000000Ki"}, {"pods", "58"}, {"nvidia.com/gpu", "1"}};
    return node;
  }

  FakeApiServer server_;
  json pod_shape_, node_shape_;
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(DaemonProcessDrain, ADrainABudgetHoldsForTenMinutesNeverDelaysATickNorFailsHealthz) {
  server_.Put("pods", Pod("p1", true));
  server_.Put("pods", Pod("p2", true));
  const uint16_t port = Start();
  ASSERT_NE(port, 0) << ReadAll(dir_ / "err.log");

  // Two pending one-GPU pods: two g5.xlarge launched on the simulated cloud.
  json status;
  ASSERT_TRUE(PollFor(
      [&] {
        status = Status(port);
        return status.contains("nodes") && status["nodes"].size() == 2;
      },
      60s))
      << status.dump() << "\n" << ReadAll(dir_ / "err.log");
  const std::string id_a = status["nodes"][0]["id"], id_b = status["nodes"][1]["id"];
  const std::string zone_a = status["nodes"][0]["zone"], zone_b = status["nodes"][1]["zone"];

  // The kubelets join and the scheduler binds: p1 runs on b, p2 has ended,
  // and a small CPU pod runs on a. One node's work fits on the other, so
  // one of them is consolidated away; a budget guards both pods, so that
  // drain is refused (429) whichever node it is.
  server_.Put("pods", BoundPod("p1", true, "node-b"));
  server_.Delete("pods", std::string(kNamespace) + "/p2");
  server_.Put("pods", BoundPod("small", false, "node-a"));
  for (const char* pod : {"p1", "small"}) server_.SetBudget(std::string(kNamespace) + "/" + pod, -1);
  server_.Put("nodes", NodeFor("node-a", id_a, zone_a));
  server_.Put("nodes", NodeFor("node-b", id_b, zone_b));

  auto cordoned = [&](const std::string& node) {
    std::optional<json> n = server_.Get("nodes", node);
    return n && (*n)["spec"].value("unschedulable", false);
  };
  ASSERT_TRUE(PollFor([&] { return cordoned("node-a") || cordoned("node-b"); }, 60s)) << ReadAll(dir_ / "err.log");
  const bool drains_a = cordoned("node-a");
  const std::string drained = drains_a ? "node-a" : "node-b", kept = drains_a ? "node-b" : "node-a";
  const std::string drained_id = drains_a ? id_a : id_b, guarded = drains_a ? "small" : "p1";
  const std::string eviction = std::string("/api/v1/namespaces/") + kNamespace + "/pods/" + guarded + "/eviction";
  ASSERT_TRUE(PollFor([&] { return server_.Count("POST", eviction) > 0; }, 60s)) << ReadAll(dir_ / "err.log");

  // Ten minutes of the daemon's time with the drain held open.
  HttpReply metrics = HttpGet(port, "/metrics");
  const double ticks_before = Sample(metrics.body, "gpuscaler_ticks_total{result=\"ok\"}").value_or(0);
  const WallTime virtual_start = TimeOf(Status(port));
  ASSERT_NE(virtual_start, WallTime{});
  int healthz_checks = 0;
  WallTime virtual_now = virtual_start;
  while (virtual_now - virtual_start < Seconds(600)) {
    HttpReply healthz = HttpGet(port, "/healthz");
    ASSERT_EQ(healthz.status, 200) << "after " << (virtual_now - virtual_start).count() << " s: " << healthz.body;
    ++healthz_checks;
    const json s = Status(port);
    virtual_now = std::max(virtual_now, TimeOf(s));
    bool still_there = false;
    for (const json& n : s.value("nodes", json::array())) still_there |= n["id"] == drained_id;
    ASSERT_TRUE(still_there) << drained << " was removed while its pod could not be evicted";
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_GT(healthz_checks, 50);
  metrics = HttpGet(port, "/metrics");
  const double ticks_after = Sample(metrics.body, "gpuscaler_ticks_total{result=\"ok\"}").value_or(0);
  // A tick every 10 s of the daemon's time: 60 in ten minutes (at least
  // three quarters of them on a loaded machine; a tick that waited for the
  // drain would have stopped them all).
  EXPECT_GE(ticks_after - ticks_before, 45) << "ticks were delayed while the drain was open";
  // Every tick of the run took under a second of real time (ten minutes of
  // the daemon's time is ten seconds of real time).
  const double count = Sample(metrics.body, "gpuscaler_tick_duration_seconds_count").value_or(-1);
  EXPECT_EQ(Sample(metrics.body, "gpuscaler_tick_duration_seconds_bucket{le=\"1\"}").value_or(-2), count);
  // The drainer kept retrying on its own thread: a retry every 5 s of the
  // daemon's time.
  EXPECT_GE(server_.Count("POST", eviction), 20);
  EXPECT_TRUE(server_.Get("pods", std::string(kNamespace) + "/" + guarded).has_value());
  EXPECT_TRUE(cordoned(drained));
  EXPECT_FALSE(cordoned(kept));

  // The budget allows it: the pod is evicted, the drain ends, the node goes.
  server_.SetBudget(std::string(kNamespace) + "/" + guarded, 0);
  ASSERT_TRUE(PollFor(
      [&] {
        const json s = Status(port);
        if (!s.contains("nodes")) return false;
        for (const json& n : s["nodes"])
          if (n["id"] == drained_id) return false;
        return true;
      },
      60s))
      << ReadAll(dir_ / "err.log");
  EXPECT_FALSE(server_.Get("pods", std::string(kNamespace) + "/" + guarded).has_value());
  EXPECT_EQ(HttpGet(port, "/healthz").status, 200);
  metrics = HttpGet(port, "/metrics");
  EXPECT_EQ(Sample(metrics.body, "gpuscaler_drain_duration_seconds_count{result=\"drained\"}").value_or(0), 1)
      << metrics.body;
  // Drained after the ten minutes it was held.
  EXPECT_EQ(Sample(metrics.body, "gpuscaler_drain_duration_seconds_bucket{result=\"drained\",le=\"300\"}").value_or(-1),
            0);

  daemon_->Signal(SIGTERM);
  std::optional<int> code = daemon_->Wait(30s);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << ReadAll(dir_ / "err.log");
}

TEST_F(DaemonProcessDrain, SpeedIsOnlyForTheSimulatedCloud) {
  Write("aws.yaml", "apiVersion: gpuscaler/v1\nkind: DaemonConfig\ncluster_name: test\npolicy: policy.yaml\n"
                    "regions: [us-east-1]\ndb: audit.db\ncloud: {provider: aws, region: us-east-1, launch_template: gpu-nodes}\n");
  ProcessResult r = Gpuscaler({"run", "--config", (dir_ / "aws.yaml").string(), "--speed", "60"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--speed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cloud.provider simulated"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpuscaler::testing
