// A Spot eviction on Azure, end to end with processes: the daemon (provider
// azure, driver aks) against `gpuscaler cloud-emulator --provider azure`
// over HTTPS, with the fake Kubernetes API server of this test as its
// cluster. The daemon grows a Spot agent pool for queued work; this test
// registers the machines as a kubelet would (node name = machine name,
// providerID azure://…) and binds a pod to one; the emulator evicts that
// machine (POST /_emulator/evictions). The daemon sees the eviction as an
// interruption: the node is cordoned and its pod evicted, a replacement
// machine comes up, the node's row in the audit store ends "interrupted",
// and the pool's learned Spot risk (the snapshot's interruptions_per_hour
// for the offering) goes up.
//
// With `gpuscaler node-agent` on each node (as the AKS overlay's DaemonSet
// runs it) the eviction's 30-second notice in IMDS scheduled events becomes
// the condition gpuscaler.io/SpotPreempted on the victim's Node (and on no
// other), and the cordon, the drain and the replacement all happen before
// Azure evicts the VM.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/http_get.h"
#include "cloud/azure_daemon_harness.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::azure_eviction_process_test {
namespace {

using namespace gpuscaler::testing;
using nlohmann::json;

constexpr int kEvictionTickMs = 200;

class AzureEvictionProcess : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    std::optional<std::string> nodes = ReadReference("examples/nodelist-gpu.assembled.json");
    std::optional<std::string> pods = ReadReference("examples/podlist-pending-gpu.assembled.json");
    if (!nodes || !pods) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    node_shape_ = json::parse(*nodes)["items"][0];
    pod_shape_ = json::parse(*pods)["items"][0];
    Write("kubeconfig",
          "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
          "clusters: [{name: fake, cluster: {server: '" +
              server_.url() +
              "'}}]\n"
              "users: [{name: u, user: {token: t0ken}}]\n"
              "contexts: [{name: test, context: {cluster: fake, user: u, namespace: gpuscaler}}]\n");
  }
  void TearDown() override {
    for (size_t i = 0; i < agents_.size(); ++i) {
      agents_[i]->Signal(SIGTERM);
      EXPECT_EQ(agents_[i]->Wait(30s).value_or(-1), 0)
          << ReadAll(dir_ / ("agent" + std::to_string(i) + ".err"));
    }
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
    }
    emulator_.reset();
    CliTest::TearDown();
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }

  // The Node an AKS kubelet registers for machine `name`: Ready, one T4.
  json AksNode(const CloudInstance& vm) {
    json node = node_shape_;
    node["metadata"]["name"] = vm.id;
    node["metadata"]["uid"] = "uid-" + vm.id;
    node["metadata"]["labels"] = {{"kubernetes.io/hostname", vm.id},
                                  {"node.kubernetes.io/instance-type", "Standard_NC4as_T4_v3"},
                                  {"topology.kubernetes.io/region", "eastus"},
                                  {"topology.kubernetes.io/zone", vm.zone},
                                  {"kubernetes.azure.com/agentpool", "gpuspot"},
                                  {"kubernetes.azure.com/scalesetpriority", "spot"},
                                  {"gpuscaler.io/pool", "gpu"}};
    node["spec"] = {{"providerID", std::string("azure:///subscriptions/") + kAzureSubscription +
                                       "/resourceGroups/mc_rg-aks_prod_eastus/providers/Microsoft.Compute/"
                                       "virtualMachineScaleSets/" +
                                       vm.tags.at("group") + "/virtualMachines/" +
                                       vm.tags.at("instance_id")}};
    for (const char* field : {"capacity", "allocatable"})
      node["status"][field] = {
          {"cpu", "4"}, {"memory", "28000000Ki"}, {"pods", "110"}, {"nvidia.com/gpu", "1"}};
    return node;
  }
  // A small CPU pod bound to `node` (the queued work keeps both GPUs asked for).
  json BoundPod(const std::string& name, const std::string& node) {
    json pod = pod_shape_;
    pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", "100m"}}}};
    pod["metadata"]["name"] = name;
    pod["metadata"]["uid"] = "uid-" + name;
    pod["metadata"]["namespace"] = "default";
    pod["spec"]["nodeName"] = node;
    pod["status"] = {{"phase", "Running"}};
    return pod;
  }
  // The snapshot's Spot T4 offerings' interruptions_per_hour, highest of the zones.
  double SpotRisk(uint16_t port) {
    const json snapshot = json::parse(HttpGet(port, "/api/v1/snapshot").body, nullptr, false);
    double risk = -1;
    for (const json& o : snapshot.value("offerings", json::array())) {
      if (o.value("instance_type", "") == "Standard_NC4as_T4_v3" && o.value("capacity_type", "") == "spot")
        risk = std::max(risk, o.value("interruptions_per_hour", -1.0));
    }
    return risk;
  }

  // The emulator with a Spot agent pool, the daemon (with Kubernetes) asked
  // for two nodes, and their Nodes registered; `*live` gets the machines.
  void StartWithTwoSpotNodes(std::vector<CloudInstance>* live) {
    emulator_ = std::make_unique<AzureEmulatorProcess>(
        dir_,
        "operation_latency: 1s\nretry_after: 1s\n" + AzureClusterYaml(AzureAgentPoolYaml("gpuspot", "Spot")));
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
    emulator_->set_audit_db((dir_ / "audit.db").string());
    Write("policy.yaml", AzurePolicyYaml("[spot]", true));
    Write("gpuscaler.yaml",
          AzureDaemonConfigYaml(*emulator_, prometheus_.url(), AzureAksDriverYaml("gpuspot"), "test",
                                "kubernetes: {enabled: true, kubeconfig: kubeconfig}\n"));
    prometheus_.Set(10);  // 2 GPUs
    daemon_ = StartAzureDaemon(dir_, kEvictionTickMs, "", 1);
    ASSERT_TRUE(daemon_->started());
    ASSERT_TRUE(Eventually([&] { return emulator_->LiveCount() == 2; }, 90s))
        << DaemonLog() << emulator_->log();
    *live = LiveVms();
    ASSERT_EQ(live->size(), 2u);
    for (const CloudInstance& vm : *live) server_.Put("nodes", AksNode(vm));
  }
  std::vector<CloudInstance> LiveVms() {
    std::vector<CloudInstance> out;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
      if (i.live() && i.ours()) out.push_back(i);
    }
    return out;
  }
  bool Cordoned(const std::string& node) {
    std::optional<json> n = server_.Get("nodes", node);
    return n && (*n)["spec"].value("unschedulable", false);
  }
  // The node's gpuscaler.io/SpotPreempted condition, or null.
  json SpotCondition(const std::string& node) {
    std::optional<json> n = server_.Get("nodes", node);
    if (!n) return json();
    for (const json& c : (*n)["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "gpuscaler.io/SpotPreempted") return c;
    }
    return json();
  }

  FakeApiServer server_;
  json node_shape_, pod_shape_;
  QueueDepthServer prometheus_{0};
  std::unique_ptr<AzureEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
};

TEST_F(AzureEvictionProcess, AnEvictedSpotMachineIsCordonedDrainedReplacedRecordedAndLearned) {
  // The kubelets join; a pod runs on the first machine.
  std::vector<CloudInstance> live;
  ASSERT_NO_FATAL_FAILURE(StartWithTwoSpotNodes(&live));
  const CloudInstance victim = live[0];
  server_.Put("pods", BoundPod("render-1", victim.id));
  const uint16_t port = DaemonPort(dir_);
  ASSERT_NE(port, 0);
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  const double risk_before = SpotRisk(port);
  ASSERT_GT(risk_before, 0) << HttpGet(port, "/api/v1/snapshot").body;

  // Azure evicts it (2 s' notice: the API side sees it once it is going).
  ASSERT_EQ(emulator_->Evict({{"cluster", "prod"},
                              {"pool", "gpuspot"},
                              {"instance_id", victim.tags.at("instance_id")},
                              {"notice_seconds", 2}}),
            201)
      << emulator_->log();

  ASSERT_TRUE(Eventually([&] { return Cordoned(victim.id); }, 60s)) << DaemonLog();
  EXPECT_FALSE(Cordoned(live[1].id));
  ASSERT_TRUE(Eventually([&] { return !server_.Get("pods", "default/render-1").has_value(); }, 60s))
      << "the evicted node's pod was not evicted\n"
      << DaemonLog();
  EXPECT_GE(server_.Count("POST", "/api/v1/namespaces/default/pods/render-1/eviction"), 1);

  // A replacement: two live machines again, one of them new.
  auto replaced = [&] {
    std::optional<std::vector<CloudInstance>> all = emulator_->Instances();
    if (!all) return false;
    int live_now = 0;
    bool victim_gone = false;
    for (const CloudInstance& i : *all) {
      live_now += i.live() && i.ours() ? 1 : 0;
      if (i.id == victim.id) victim_gone = !i.live() && i.tags.at("evicted") == "true";
    }
    return victim_gone && live_now == 2 && all->size() >= 3;
  };
  ASSERT_TRUE(Eventually(replaced, 90s)) << DaemonLog();

  // Recorded as an interruption, and learned.
  ASSERT_TRUE(Eventually(
      [&] {
        Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
        if (!reader) return false;
        Result<std::vector<NodeRow>> nodes =
            (*reader)->NodesOverlapping(WallTime{}, FromUnixSeconds(4102444800));
        if (!nodes) return false;
        for (const NodeRow& n : *nodes) {
          if (n.launch.instance_id == victim.id) return n.cause == "interrupted";
        }
        return false;
      },
      60s))
      << DaemonLog();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 3)) << DaemonLog();
  EXPECT_GT(SpotRisk(port), risk_before) << HttpGet(port, "/api/v1/snapshot").body;
}

TEST_F(AzureEvictionProcess, TheNodeAgentsNoticeCordonsDrainsAndReplacesBeforeAzureEvicts) {
  std::vector<CloudInstance> live;
  ASSERT_NO_FATAL_FAILURE(StartWithTwoSpotNodes(&live));
  const CloudInstance victim = live[0], other = live[1];
  server_.Put("pods", BoundPod("render-1", victim.id));
  // One agent per node, as the DaemonSet runs them; the emulator's IMDS
  // shows every VM's events to each (as a placement group's VMs see each
  // other's), so the other node's agent must leave the victim's alone.
  for (const CloudInstance& vm : live) {
    const std::string n = std::to_string(agents_.size());
    agents_.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "node-agent", "--node-name", vm.id, "--imds-endpoint",
                                 emulator_->url(), "--ca-file", emulator_->ca_file().string(), "--kubeconfig",
                                 (dir_ / "kubeconfig").string(), "--interval-ms", "200"},
        dir_ / ("agent" + n + ".out"), dir_ / ("agent" + n + ".err")));
    ASSERT_TRUE(agents_.back()->started());
  }
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 3)) << DaemonLog();
  EXPECT_TRUE(SpotCondition(victim.id).is_null());

  // Azure's 30 seconds' notice.
  json answer;
  ASSERT_EQ(emulator_->Evict(
                {{"cluster", "prod"}, {"pool", "gpuspot"}, {"instance_id", victim.tags.at("instance_id")}},
                &answer),
            201)
      << emulator_->log();
  const auto goes = std::chrono::steady_clock::now() + 30s;
  WallTime at;
  ASSERT_TRUE(ParseRfc3339(answer.value("at", ""), &at)) << answer.dump();

  // The victim's agent sets the condition, with the eviction's NotBefore.
  ASSERT_TRUE(Eventually([&] { return !SpotCondition(victim.id).is_null(); }, 15s))
      << ReadAll(dir_ / "agent0.err");
  const json condition = SpotCondition(victim.id);
  EXPECT_EQ(condition["status"], "True");
  EXPECT_EQ(condition["reason"], "Preempt");
  EXPECT_EQ(condition["message"].get<std::string>().rfind("NotBefore=" + FormatRfc3339(at) + " EventId=", 0),
            0u)
      << condition.dump();
  std::optional<json> node = server_.Get("nodes", victim.id);
  ASSERT_TRUE(node.has_value());
  bool ready_kept = false;
  for (const json& c : (*node)["status"]["conditions"]) ready_kept |= c.value("type", "") == "Ready";
  EXPECT_TRUE(ready_kept) << "the status patch merged by type: " << node->dump();

  // The daemon acts on it at once: cordon, drain and a replacement, all
  // before Azure evicts the VM (the cloud API would show nothing until then).
  ASSERT_TRUE(Eventually([&] { return Cordoned(victim.id); }, 15s)) << DaemonLog();
  ASSERT_TRUE(Eventually([&] { return !server_.Get("pods", "default/render-1").has_value(); }, 15s))
      << DaemonLog();
  // A replacement is up (the daemon may meanwhile remove the drained
  // victim itself), before Azure evicted anything.
  auto replaced = [&] {
    for (const CloudInstance& i : LiveVms()) {
      if (i.id != victim.id && i.id != other.id) return true;
    }
    return false;
  };
  ASSERT_TRUE(Eventually(replaced, 15s)) << DaemonLog();
  EXPECT_LT(std::chrono::steady_clock::now(), goes) << "the notice came no earlier than the eviction";
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
    if (i.id != victim.id) continue;
    EXPECT_EQ(i.tags.at("evicted"), "false") << "Azure had already evicted it";
  }
  EXPECT_FALSE(Cordoned(other.id));
  EXPECT_TRUE(SpotCondition(other.id).is_null()) << "the other node's agent reported the victim's event";
  EXPECT_NE(ReadAll(dir_ / "agent0.err").find("Preempt event"), std::string::npos)
      << ReadAll(dir_ / "agent0.err");
}

}  // namespace
}  // namespace gpuscaler::azure_eviction_process_test
