// The daemon binary with `cloud.provider: azure` against `gpuscaler
// cloud-emulator --provider azure`, both started here as processes, the
// emulator over HTTPS with a test CA the daemon trusts (cloud.azure.ca_file),
// the daemon authenticating with a client secret at the emulator's Entra ID
// endpoint, the queue depth from a Prometheus-like fixture:
//  - with the AKS driver a Spot agent pool grows for demand (one PUT of its
//    count, the launch's intent on the pool) and a lower demand removes
//    exactly the machines the audit says it chose (deleteMachines); the same
//    with the scale-set driver (PATCH of sku.capacity, POST …/delete);
//  - AllocationFailed for Spot falls back to the Regular pool, as far as
//    the hard budget allows;
//  - a second installation (its own cluster_name and database, same
//    resource group, its configuration naming the first's scale set too)
//    lists, launches and removes nothing of the first's;
//  - the crash campaign (crash_campaign.h) with the Azure emulator.
#include <gtest/gtest.h>

#include "cloud/azure_daemon_harness.h"
#include "cloud/crash_campaign.h"

namespace gpuscaler::azure_daemon_test {
namespace {

using namespace gpuscaler::testing;

constexpr int kAzureTickMs = 200;


class AzureDaemon : public CliTest {
 protected:
  void StartCloud(const std::string& scenario) {
    emulator_ = std::make_unique<AzureEmulatorProcess>(dir_, scenario);
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
    emulator_->set_audit_db((dir_ / "audit.db").string());
  }
  void WriteConfig(const std::string& policy, const std::string& driver_yaml) {
    Write("policy.yaml", policy);
    Write("gpuscaler.yaml", AzureDaemonConfigYaml(*emulator_, prometheus_.url(), driver_yaml));
  }
  void Start(const std::string& failpoint = "") {
    daemon_ = StartAzureDaemon(dir_, kAzureTickMs, failpoint, ++runs_);
    ASSERT_TRUE(daemon_->started());
  }
  std::string DaemonLog() const { return ReadAll(dir_ / ("daemon" + std::to_string(runs_) + ".err")); }
  void Stop() {
    if (!daemon_) return;
    daemon_->Signal(SIGTERM);
    EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
    daemon_.reset();
  }
  std::vector<CloudInstance> Live() {
    std::vector<CloudInstance> out;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
      if (i.live() && i.ours()) out.push_back(i);
    }
    return out;
  }
  bool LiveIs(int n) { return emulator_->LiveCount() == n; }
  // Instance ids of the succeeded terminate actions, and every action's
  // reason and detail, from the audit database at `db`.
  static std::pair<std::set<std::string>, std::string> AuditedActions(const std::filesystem::path& db) {
    std::set<std::string> terminated;
    std::string details;
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db.string());
    EXPECT_TRUE(reader.ok());
    if (!reader) return {};
    Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 10000);
    EXPECT_TRUE(decisions.ok());
    if (!decisions) return {};
    for (const DecisionRow& d : *decisions) {
      Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
      if (!actions) continue;
      for (const ActionRow& r : *actions) {
        details += r.action.reason + " | " + r.detail + "\n";
        if (r.action.kind == ActionKind::kTerminate && r.outcome == ActionOutcome::kSucceeded)
          terminated.insert(r.action.instance_ids.begin(), r.action.instance_ids.end());
      }
    }
    return {terminated, details};
  }
  void CheckAuditClean(int live) {
    const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
    EXPECT_EQ(audit.live, live);
    EXPECT_EQ(
        audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions,
        0)
        << audit.Summary();
  }
  // Scales the pool to 4 nodes and back to 1, checking what went.
  void ScaleUpAndDown(const std::string& group_prefix) {
    Start();
    prometheus_.Set(20);  // 4 GPUs
    ASSERT_TRUE(Eventually([&] { return LiveIs(4); }, 90s)) << DaemonLog() << emulator_->log();
    ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
    EXPECT_EQ(emulator_->LiveCount(), 4) << DaemonLog();
    for (const CloudInstance& i : Live()) {
      SCOPED_TRACE(i.id);
      EXPECT_EQ(i.tags.at("group").rfind(group_prefix, 0), 0u) << i.tags.at("group");
      EXPECT_EQ(i.tags.at(cloud::kAzureClusterTag), "test");
      EXPECT_EQ(i.lifecycle, CapacityType::kSpot);
      EXPECT_FALSE(i.intent().empty()) << "numbered above its launch's mark";
    }
    const std::vector<CloudInstance> before = Live();
    prometheus_.Set(5);  // 1 GPU
    ASSERT_TRUE(Eventually([&] { return LiveIs(1); }, 90s)) << DaemonLog();
    Stop();
    // Exactly the machines the daemon chose are gone, nothing else.
    const auto [terminated, details] = AuditedActions(dir_ / "audit.db");
    std::set<std::string> live_after;
    for (const CloudInstance& i : Live()) live_after.insert(i.id);
    std::set<std::string> gone;
    for (const CloudInstance& i : before) {
      if (live_after.count(i.id) == 0) gone.insert(i.id);
    }
    EXPECT_EQ(gone, terminated) << details;
    EXPECT_EQ(gone.size(), 3u);
    CheckAuditClean(1);
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<AzureEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
  int runs_ = 0;
  void TearDown() override {
    if (daemon_) Stop();
    emulator_.reset();
    CliTest::TearDown();
  }
};

TEST_F(AzureDaemon, AksSpotAgentPoolGrowsForDemandAndDeleteMachinesRemovesTheChosenNodes) {
  StartCloud("operation_latency: 1s\nretry_after: 1s\n" +
             AzureClusterYaml(AzureAgentPoolYaml("gpuspot", "Spot")));
  WriteConfig(AzurePolicyYaml("[spot]", true), AzureAksDriverYaml("gpuspot"));
  ScaleUpAndDown("aks-gpuspot-");
}

TEST_F(AzureDaemon, SpotScaleSetGrowsForDemandAndDeleteRemovesTheChosenInstances) {
  StartCloud("operation_latency: 1s\nretry_after: 1s\nscale_sets:\n" + AzureScaleSetYaml("gpuspot", "Spot"));
  WriteConfig(AzurePolicyYaml("[spot]", true), AzureVmssDriverYaml("gpuspot"));
  ScaleUpAndDown("gpuspot");
}

// Spot T4s ($0.0627/h) cannot be had (AllocationFailed); Regular ones cost
// $0.526/h and the hard cap is $1.20/h: of the 3 nodes asked for, 2 come
// up on the Regular pool and the third is never launched.
TEST_F(AzureDaemon, SpotAllocationFailedFallsBackToRegularWithinTheHardBudget) {
  StartCloud(
      "operation_latency: 1s\nretry_after: 1s\n"
      "capacity:\n  - {priority: Spot, limit: 0, error: AllocationFailed}\n" +
      AzureClusterYaml(AzureAgentPoolYaml("gpuspot", "Spot") + AzureAgentPoolYaml("gpuod", "Regular")));
  WriteConfig(
      AzurePolicyYaml("[spot, on-demand]", true) + "budget:\n  global: {hourly_usd: 1.2, hard: true}\n",
      AzureAksDriverYaml("gpuspot, gpuod"));
  Start();
  prometheus_.Set(15);  // 3 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(2); }, 90s)) << DaemonLog() << emulator_->log();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 15)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 2) << "a launch went past the hard budget";
  for (const CloudInstance& i : Live()) {
    EXPECT_EQ(i.lifecycle, CapacityType::kOnDemand) << i.id;
    EXPECT_EQ(i.tags.at("group").rfind("aks-gpuod-", 0), 0u) << i.tags.at("group");
  }
  Stop();
  const auto [terminated, details] = AuditedActions(dir_ / "audit.db");
  EXPECT_NE(details.find("AllocationFailed"), std::string::npos) << details;
  // The Spot pool's raise was given back: no Spot VM is live or counted.
  const std::optional<nlohmann::json> state = emulator_->State();
  ASSERT_TRUE(state.has_value());
  for (const nlohmann::json& s : (*state)["scale_sets"]) {
    if (s.value("pool", "") == "gpuspot") {
      EXPECT_EQ(s["capacity"], 0) << s.dump();
    }
  }
  CheckAuditClean(2);
}

// Installation B (cluster_name other) names its own scale set and A's; A's
// is not tagged for it, so B lists, launches on and removes nothing there.
TEST_F(AzureDaemon, ASecondInstallationListsLaunchesAndRemovesNothingOfTheFirst) {
  StartCloud("operation_latency: 1s\nretry_after: 1s\nscale_sets:\n" +
             AzureScaleSetYaml("gpua", "Spot", "test") + AzureScaleSetYaml("gpub", "Spot", "other"));
  WriteConfig(AzurePolicyYaml("[spot]", true), AzureVmssDriverYaml("gpua"));
  const std::filesystem::path b = dir_ / "b";
  std::filesystem::create_directories(b);
  QueueDepthServer demand_b(10);  // 2 nodes
  std::ofstream(b / "policy.yaml") << AzurePolicyYaml("[spot]", true);
  std::ofstream(b / "gpuscaler.yaml")
      << AzureDaemonConfigYaml(*emulator_, demand_b.url(), AzureVmssDriverYaml("gpub, gpua"), "other");
  emulator_->add_audit_db((b / "audit.db").string());
  AzureEmulatorProcess& cloud = *emulator_;
  auto live_in = [&](const std::string& group) {
    std::set<std::string> out;
    for (const CloudInstance& i : cloud.Instances().value_or(std::vector<CloudInstance>{})) {
      if (i.live() && i.tags.at("group") == group) out.insert(i.id);
    }
    return out;
  };
  prometheus_.Set(15);  // A: 3 nodes
  Start();
  std::unique_ptr<ChildProcess> daemon_b = StartAzureDaemon(b, kAzureTickMs, "", 1);
  ASSERT_TRUE(Eventually([&] { return live_in("gpua").size() == 3 && live_in("gpub").size() == 2; }, 90s))
      << DaemonLog() << ReadAll(b / "daemon1.err");
  const std::set<std::string> a_nodes = live_in("gpua");

  // B's demand goes: B removes its own two and nothing of A's.
  demand_b.Set(0);
  ASSERT_TRUE(Eventually([&] { return live_in("gpub").empty(); }, 90s)) << ReadAll(b / "daemon1.err");
  ASSERT_TRUE(WaitForMoreDaemonTicks(b, 10)) << ReadAll(b / "daemon1.err");
  EXPECT_EQ(live_in("gpua"), a_nodes);
  daemon_b->Signal(SIGTERM);
  EXPECT_EQ(daemon_b->Wait(60s).value_or(-1), 0) << ReadAll(b / "daemon1.err");

  // B's audit store never saw one of A's nodes, and B's launches all went to gpub.
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((b / "audit.db").string());
  ASSERT_TRUE(reader.ok());
  Result<std::vector<NodeRow>> nodes = (*reader)->NodesOverlapping(WallTime{}, FromUnixSeconds(4102444800));
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->size(), 2u);
  for (const NodeRow& n : *nodes) {
    EXPECT_EQ(a_nodes.count(n.launch.instance_id), 0u) << n.launch.instance_id;
    EXPECT_EQ(n.launch.instance_id.rfind("gpub", 0), 0u) << n.launch.instance_id;
  }
  const std::optional<nlohmann::json> state = emulator_->State();
  ASSERT_TRUE(state.has_value());
  for (const nlohmann::json& s : (*state)["scale_sets"]) {
    if (s.value("name", "") != "gpua") continue;
    EXPECT_EQ(s["capacity"], 3) << s.dump();
    EXPECT_EQ(s["tags"].value(cloud::kAzureClusterTag, ""), "test");
  }
  Stop();
  CheckAuditClean(3);
}

TEST_F(AzureDaemon, CrashCampaignOverTheAzureEmulator) {
  StartCloud("operation_latency: 0s\nretry_after: 1s\n" +
             AzureClusterYaml(AzureAgentPoolYaml("gpu", "Regular")));
  WriteConfig(AzurePolicyYaml("[on-demand]", false), AzureAksDriverYaml("gpu"));
  CrashCampaignSetup setup;
  setup.name = "azure crash campaign";
  setup.dir = dir_;
  setup.cloud = emulator_.get();
  setup.prometheus = &prometheus_;
  setup.runs = EnvInt("GPUSCALER_AZURE_CRASH_RUNS", 50);
  setup.seed = static_cast<uint64_t>(EnvInt("GPUSCALER_CRASH_SEED", 1));
  setup.tick_ms = 100;
  setup.jobs_per_node = 5;
  setup.start = [&](const std::string& failpoint, int run) {
    return StartAzureDaemon(dir_, setup.tick_ms, failpoint, run);
  };
  RunCrashCampaign(setup);
}

}  // namespace
}  // namespace gpuscaler::azure_daemon_test
