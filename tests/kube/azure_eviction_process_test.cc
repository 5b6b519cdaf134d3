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
    Write("kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                        "clusters: [{name: fake, cluster: {server: '" +
                            server_.url() +
                            "'}}]\n"
                            "users: [{name: u, user: {token: t0ken}}]\n"
                            "contexts: [{name: test, context: {cluster: fake, user: u, namespace: gpuscaler}}]\n");
  }
  void TearDown() override {
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
                                       vm.tags.at("group") + "/virtualMachines/" + vm.tags.at("instance_id")}};
    for (const char* field : {"capacity", "allocatable"})
      node["status"][field] = {{"cpu", "4"}, {"memory", "28000000Ki"}, {"pods", "110"}, {"nvidia.com/gpu", "1"}};
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

  FakeApiServer server_;
  json node_shape_, pod_shape_;
  QueueDepthServer prometheus_{0};
  std::unique_ptr<AzureEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(AzureEvictionProcess, AnEvictedSpotMachineIsCordonedDrainedReplacedRecordedAndLearned) {
  emulator_ = std::make_unique<AzureEmulatorProcess>(
      dir_, "operation_latency: 1s\nretry_after: 1s\n" + AzureClusterYaml(AzureAgentPoolYaml("gpuspot", "Spot")));
  ASSERT_TRUE(emulator_->ok()) << emulator_->log();
  emulator_->set_audit_db((dir_ / "audit.db").string());
  Write("policy.yaml", AzurePolicyYaml("[spot]", true));
  Write("gpuscaler.yaml", AzureDaemonConfigYaml(*emulator_, prometheus_.url(), AzureAksDriverYaml("gpuspot"), "test",
                                                "kubernetes: {enabled: true, kubeconfig: kubeconfig}\n"));
  prometheus_.Set(10);  // 2 GPUs
  daemon_ = StartAzureDaemon(dir_, kEvictionTickMs, "", 1);
  ASSERT_TRUE(daemon_->started());
  ASSERT_TRUE(Eventually([&] { return emulator_->LiveCount() == 2; }, 90s)) << DaemonLog() << emulator_->log();

  // The kubelets join; a pod runs on the first machine.
  std::vector<CloudInstance> live;
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
    if (i.live() && i.ours()) live.push_back(i);
  }
  ASSERT_EQ(live.size(), 2u);
  for (const CloudInstance& vm : live) server_.Put("nodes", AksNode(vm));
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

  auto cordoned = [&](const std::string& node) {
    std::optional<json> n = server_.Get("nodes", node);
    return n && (*n)["spec"].value("unschedulable", false);
  };
  ASSERT_TRUE(Eventually([&] { return cordoned(victim.id); }, 60s)) << DaemonLog();
  EXPECT_FALSE(cordoned(live[1].id));
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
        Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(WallTime{}, FromUnixSeconds(4102444800));
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

}  // namespace
}  // namespace gpuscaler::azure_eviction_process_test
