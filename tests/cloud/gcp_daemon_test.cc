// The daemon binary with `cloud.provider: gcp` against `gpuscaler
// cloud-emulator --provider gcp`, both started here as processes, the daemon
// authenticating with a generated service-account key (JWT-bearer grant at
// the emulator's /token), the queue depth from a Prometheus-like fixture:
//  - demand creates instances in the pool's managed instance groups (named
//    by mig_pattern per zone), labelled with the cluster and the pool, and a
//    lower demand deletes exactly the instances the audit says it chose;
//  - with no capacity in one zone, the other zone's group gets the nodes;
//  - a QUOTA_EXCEEDED does not make it retry in a loop;
//  - a Spot preemption produces a replacement;
//  - the Spot price the emulator's Cloud Billing Catalog gives a machine type
//    (set 2 h before the daemon starts) is the first tick's offering price
//    and a price sample in the audit store; with the catalog disabled the
//    static catalog's price stays;
//  - the crash campaign (crash_campaign.h) with the Compute Engine emulator.
#include <gtest/gtest.h>

#include "cli/http_get.h"
#include "cloud/crash_campaign.h"
#include "cloud/gcp_daemon_harness.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;


class GcpDaemon : public CliTest {
 protected:
  void StartCloud(const std::string& scenario) {
    emulator_ = std::make_unique<GcpEmulatorProcess>(dir_, scenario);
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
    emulator_->set_audit_db((dir_ / "audit.db").string());
  }
  void WriteConfig(const std::string& policy, const std::string& gcp_extra) {
    Write("policy.yaml", policy);
    Write("gpuscaler.yaml", GcpDaemonConfigYaml(*emulator_, prometheus_.url(), gcp_extra));
  }
  void Start(const std::string& failpoint = "") {
    daemon_ = StartGcpDaemon(dir_, *emulator_, kTickMs, failpoint, ++runs_);
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
  // Instance ids of the succeeded terminate actions, and the details of
  // every action, from the audit database.
  std::pair<std::set<std::string>, std::string> AuditedActions() {
    std::set<std::string> terminated;
    std::string details;
    Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
    EXPECT_TRUE(reader.ok());
    if (!reader) return {};
    Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 10000);
    EXPECT_TRUE(decisions.ok());
    if (!decisions) return {};
    for (const DecisionRow& d : *decisions) {
      Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
      if (!actions) continue;
      for (const ActionRow& r : *actions) {
        details += r.detail + "\n";
        if (r.action.kind == ActionKind::kTerminate && r.outcome == ActionOutcome::kSucceeded)
          terminated.insert(r.action.instance_ids.begin(), r.action.instance_ids.end());
      }
    }
    return {terminated, details};
  }
  void TearDown() override {
    if (daemon_) Stop();
    emulator_.reset();
    CliTest::TearDown();
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<GcpEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
  int runs_ = 0;
};

TEST_F(GcpDaemon, DemandFillsThePoolsGroupsAndScaleInDeletesTheChosenInstances) {
  StartCloud(
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 1s\nboot_latency: 1s\ndelete_latency: 1s\n" +
      GcpGroupsScenario("STANDARD"));
  WriteConfig(GcpPolicyYaml("[on-demand]", false), kGcpGroupPools);
  Start();
  prometheus_.Set(20);  // 4 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(4); }, 90s)) << DaemonLog() << emulator_->log();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 4) << DaemonLog();
  for (const CloudInstance& i : Live()) {
    SCOPED_TRACE(i.id);
    EXPECT_EQ(i.tags.at("group"), "gke-test-gpu-" + i.zone);  // the zone's own group
    EXPECT_EQ(i.tags.at("gpuscaler-cluster"), "test");
    EXPECT_EQ(i.tags.at("gpuscaler-pool"), "gpu");
    EXPECT_EQ(i.lifecycle, CapacityType::kOnDemand);
    EXPECT_FALSE(i.intent().empty()) << "named after its launch's token";
  }
  const std::vector<CloudInstance> before = Live();
  prometheus_.Set(5);  // 1 GPU
  ASSERT_TRUE(Eventually([&] { return LiveIs(1); }, 90s)) << DaemonLog();
  Stop();
  // Exactly the instances the daemon chose (its succeeded terminate
  // actions) are gone, nothing else.
  const auto [terminated, details] = AuditedActions();
  std::set<std::string> live_after;
  for (const CloudInstance& i : Live()) live_after.insert(i.id);
  std::set<std::string> gone;
  for (const CloudInstance& i : before) {
    if (live_after.count(i.id) == 0) gone.insert(i.id);
  }
  EXPECT_EQ(gone, terminated) << details;
  EXPECT_EQ(gone.size(), 3u);
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(audit.live, 1);
  EXPECT_EQ(
      audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

TEST_F(GcpDaemon, AZoneWithoutCapacityFallsBackToTheOtherZonesGroup) {
  StartCloud(
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\n"
      "capacity:\n  - {zone: us-central1-a, limit: 0}\n" +
      GcpGroupsScenario("STANDARD"));
  WriteConfig(GcpPolicyYaml("[on-demand]", false), kGcpGroupPools);
  Start();
  prometheus_.Set(15);  // 3 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(3); }, 90s)) << DaemonLog();
  for (const CloudInstance& i : Live()) {
    EXPECT_EQ(i.zone, "us-central1-b") << i.id;
    EXPECT_EQ(i.tags.at("group"), "gke-test-gpu-us-central1-b") << i.id;
  }
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 3);
  Stop();
  const auto [terminated, details] = AuditedActions();
  EXPECT_NE(details.find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos) << details;
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(
      audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

TEST_F(GcpDaemon, AQuotaErrorIsNotRetriedInALoop) {
  // One L4 in the region: the first node fits, the others hit the quota.
  StartCloud(
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\n"
      "quotas:\n  - {region: us-central1, metric: NVIDIA_L4_GPUS, limit: 1}\n");
  WriteConfig(GcpPolicyYaml("[on-demand]", false), kGcpBarePools);
  Start();
  prometheus_.Set(15);  // 3 GPUs asked for
  ASSERT_TRUE(Eventually([&] { return LiveIs(1); }, 60s)) << DaemonLog();
  // Many ticks with the demand unmet.
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 50)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 1);
  const int creates = emulator_->CountOperations("us-central1-a", "bulkInsert") +
                      emulator_->CountOperations("us-central1-b", "bulkInsert");
  // The first launch (one zone; the other is skipped, its quota being the
  // same) and nothing while the quota stays as it is.
  EXPECT_GE(creates, 1);
  EXPECT_LE(creates, 2) << DaemonLog();
  Stop();
  const auto [terminated, details] = AuditedActions();
  EXPECT_NE(details.find("QUOTA_EXCEEDED"), std::string::npos) << details;
}

TEST_F(GcpDaemon, APreemptionProducesAReplacement) {
  StartCloud(
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\ndelete_latency: 1s\n"
      "preemptions:\n  - {at: 12s, machine_type: g2-standard-8, count: 1, notice: 2s}\n");
  WriteConfig(GcpPolicyYaml("[spot]", true), kGcpBarePools);
  Start();
  prometheus_.Set(10);  // 2 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(2); }, 60s)) << DaemonLog();
  for (const CloudInstance& i : Live()) EXPECT_EQ(i.lifecycle, CapacityType::kSpot) << i.id;
  // The preemption comes; the pool is back at two live nodes, one of them new.
  auto preempted_and_replaced = [&] {
    std::optional<std::vector<CloudInstance>> all = emulator_->Instances();
    if (!all) return false;
    int live = 0, ended = 0;
    for (const CloudInstance& i : *all) {
      live += i.live() ? 1 : 0;
      ended += i.live() ? 0 : 1;
    }
    return ended >= 1 && live == 2 && all->size() >= 3;
  };
  ASSERT_TRUE(Eventually(preempted_and_replaced, 90s)) << DaemonLog();
  Stop();
}

// The Spot components of g2-standard-8 in us-central1 as the emulator's Cloud
// Billing Catalog lists them, priced 2 h before the emulator starts:
// 8 vCPUs x 0.01 + 32 GiB x 0.001 + 1 L4 x 0.2 = 0.312 USD/h (the static
// catalog says 0.479872).
constexpr const char* kG2SpotSkus =
    "billing_catalog:\n  skus:\n"
    "    - {description: Spot Preemptible G2 Instance Core running in Americas, resource_group: CPU,\n"
    "       regions: [us-central1, us-east1], usd: 0.01, from: -2h}\n"
    "    - {description: Spot Preemptible G2 Instance Ram running in Americas, resource_group: RAM,\n"
    "       regions: [us-central1, us-east1], unit: GiBy.h, usd: 0.001, from: -3h}\n"
    "    - {description: Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas, resource_group: "
    "GPU,\n"
    "       regions: [us-central1, us-east1], usd: 0.2, from: -1d}\n";

// The daemon's first tick (the next is a minute away), as /api/v1/snapshot
// shows it: the price of g2-standard-8's offering in `zone` with `capacity`.
double FirstTickPrice(const std::filesystem::path& dir, const std::string& zone,
                      const std::string& capacity) {
  const uint16_t port = WaitForPortFile(dir / "daemon.port", 60s);
  EXPECT_NE(port, 0);
  nlohmann::json status;
  Eventually(
      [&] {
        status = nlohmann::json::parse(HttpGet(port, "/api/v1/status").body, nullptr, false);
        return status.is_object() && status.value("ticks", 0) >= 1;
      },
      60s);
  EXPECT_EQ(status.value("ticks", 0), 1) << status.dump();
  const nlohmann::json snapshot =
      nlohmann::json::parse(HttpGet(port, "/api/v1/snapshot").body, nullptr, false);
  for (const nlohmann::json& o : snapshot.value("offerings", nlohmann::json::array())) {
    if (o.value("instance_type", "") == "g2-standard-8" && o.value("zone", "") == zone &&
        o.value("capacity_type", "") == capacity)
      return o.value("usd_per_hour", -1.0);
  }
  ADD_FAILURE() << "no g2-standard-8 " << capacity << " offering in " << zone << ": " << snapshot.dump();
  return -1;
}

TEST_F(GcpDaemon, TheFirstTickOffersTheSpotPriceOfTheCloudBillingCatalog) {
  const WallTime before = std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
  StartCloud("zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\n" +
             std::string(kG2SpotSkus));
  const WallTime after = std::chrono::time_point_cast<Seconds>(std::chrono::system_clock::now());
  WriteConfig(GcpPolicyYaml("[spot]", true), kGcpBarePools);  // billing_catalog enabled by default
  daemon_ = StartGcpDaemon(dir_, *emulator_, 60000, "", ++runs_);
  ASSERT_TRUE(daemon_->started());

  EXPECT_NEAR(FirstTickPrice(dir_, "us-central1-a", "spot"), 0.312, 1e-9) << DaemonLog();
  EXPECT_NEAR(FirstTickPrice(dir_, "us-central1-b", "spot"), 0.312, 1e-9);
  EXPECT_NEAR(FirstTickPrice(dir_, "us-central1-a", "on-demand"), 0.853624, 1e-9);  // the catalog's
  EXPECT_NE(DaemonLog().find("Spot prices: Cloud Billing Catalog at " + emulator_->url() + "/v1/"),
            std::string::npos)
      << DaemonLog();

  // The audit store keeps the price from when it took effect (2 h before the
  // emulator started: its core's time, the latest of the three).
  std::vector<PriceSample> samples;
  ASSERT_TRUE(Eventually(
      [&] {
        Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
        if (!reader) return false;
        Result<std::vector<PriceSample>> got =
            (*reader)->PriceSamples(before - Seconds(86400), after + Seconds(3600));
        if (!got) return false;
        samples.clear();
        for (const PriceSample& p : *got) {
          if (p.offering.instance_type == "g2-standard-8" && p.offering.capacity_type == CapacityType::kSpot)
            samples.push_back(p);
        }
        return samples.size() >= 2;
      },
      30s))
      << DaemonLog();
  for (const PriceSample& p : samples) {
    SCOPED_TRACE(p.offering.zone);
    EXPECT_NEAR(p.offering.usd_per_hour, 0.312, 1e-9);
    EXPECT_GE(p.time, before - Seconds(2 * 3600));
    EXPECT_LE(p.time, after - Seconds(2 * 3600));
  }
  const std::optional<nlohmann::json> state = emulator_->State();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ((*state)["stats"]["billing_calls"], 1);  // one page
  Stop();
}

TEST_F(GcpDaemon, WithTheBillingCatalogDisabledTheStaticCatalogsSpotPriceStays) {
  StartCloud("zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\n" +
             std::string(kG2SpotSkus));
  WriteConfig(GcpPolicyYaml("[spot]", true),
              std::string(kGcpBarePools) + "    billing_catalog: {enabled: false}\n");
  daemon_ = StartGcpDaemon(dir_, *emulator_, 60000, "", ++runs_);
  ASSERT_TRUE(daemon_->started());
  EXPECT_NEAR(FirstTickPrice(dir_, "us-central1-a", "spot"), 0.479872, 1e-9) << DaemonLog();
  EXPECT_NE(DaemonLog().find("cloud.gcp.billing_catalog.enabled: false"), std::string::npos) << DaemonLog();
  const std::optional<nlohmann::json> state = emulator_->State();
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ((*state)["stats"]["billing_calls"], 0);
  Stop();
}

// No key file: the token comes from the metadata server at
// GCE_METADATA_HOST (GKE Workload Identity, a GCE VM's service account).
TEST_F(GcpDaemon, TokensFromTheMetadataServerWithoutAKeyFile) {
  StartCloud(std::string("metadata_account: ") + kGcpAccount +
             "\nzones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\n");
  WriteConfig(GcpPolicyYaml("[on-demand]", false), kGcpBarePools);
  ::setenv("GCE_METADATA_HOST", emulator_->url().substr(7).c_str(), 1);  // host:port
  ::setenv("GOOGLE_CLOUD_PROJECT", kGcpProject, 1);
  const char* home = std::getenv("HOME");
  const std::string saved_home = home != nullptr ? home : "";
  ::setenv("HOME", dir_.c_str(), 1);  // no gcloud well-known file
  daemon_ = StartDaemon(dir_, kTickMs, "", ++runs_);
  ::unsetenv("GCE_METADATA_HOST");
  ::unsetenv("GOOGLE_CLOUD_PROJECT");
  if (home != nullptr) ::setenv("HOME", saved_home.c_str(), 1);
  ASSERT_TRUE(daemon_->started());
  prometheus_.Set(10);  // 2 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(2); }, 60s)) << DaemonLog();
  EXPECT_NE(DaemonLog().find("credentials: metadata server 127.0.0.1:"), std::string::npos) << DaemonLog();
  std::optional<nlohmann::json> state = emulator_->State();
  ASSERT_TRUE(state.has_value());
  EXPECT_GE((*state)["stats"]["tokens_issued"].get<int>(), 1);
  Stop();
}

TEST_F(GcpDaemon, CrashCampaignOverTheComputeEngineEmulator) {
  StartCloud(
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\ndelete_latency: 1s\n" +
      GcpGroupsScenario("STANDARD"));
  WriteConfig(GcpPolicyYaml("[on-demand]", false), kGcpGroupPools);
  CrashCampaignSetup setup;
  setup.name = "gcp crash campaign";
  setup.dir = dir_;
  setup.cloud = emulator_.get();
  setup.prometheus = &prometheus_;
  setup.runs = EnvInt("GPUSCALER_GCP_CRASH_RUNS", 100);
  setup.seed = static_cast<uint64_t>(EnvInt("GPUSCALER_CRASH_SEED", 1));
  setup.tick_ms = 100;
  setup.jobs_per_node = 5;
  setup.start = [&](const std::string& failpoint, int run) {
    return StartGcpDaemon(dir_, *emulator_, setup.tick_ms, failpoint, run);
  };
  RunCrashCampaign(setup);
}

}  // namespace
}  // namespace gpuscaler::testing
