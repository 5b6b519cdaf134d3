// The daemon binary with `cloud.provider: aws` against `gpuscaler
// cloud-emulator`, both started here as processes, with the queue depth from
// a Prometheus-like fixture:
//  - the pool scales up to the demand and back down to zero (the emulator's
//    DescribeInstances is the truth);
//  - with no capacity in one zone it converges on the other zone, and with
//    no spot capacity at all on on-demand;
//  - with throttling it backs off (capped exponential backoff with full
//    jitter, seen from the emulator's request log) and still converges;
//  - killed with SIGKILL at each failpoint of a launch and of a termination,
//    then restarted, it ends with exactly the planned instances, none
//    duplicated, none untracked, no audit row lost.
#include <gtest/gtest.h>

#include "cli/http_get.h"
#include "cloud/daemon_harness.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;

class DaemonEmulator : public CliTest {
 protected:
  void StartCloud(const std::string& scenario) {
    emulator_ = std::make_unique<EmulatorProcess>(dir_, scenario);
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
  }
  void WriteConfig(const std::string& policy, const std::string& extra_cloud = "") {
    Write("policy.yaml", policy);
    Write("gpuscaler.yaml", DaemonConfigYaml(emulator_->url(), prometheus_.url(), extra_cloud));
  }
  void Start(const std::string& failpoint = "") {
    daemon_ = StartDaemon(dir_, kTickMs, failpoint, ++runs_);
    ASSERT_TRUE(daemon_->started());
  }
  std::string DaemonLog() const { return ReadAll(dir_ / ("daemon" + std::to_string(runs_) + ".err")); }
  // Stops the daemon with SIGTERM; it must exit 0.
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
  void TearDown() override {
    if (daemon_) Stop();
    emulator_.reset();
    CliTest::TearDown();
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<EmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
  int runs_ = 0;
};

TEST_F(DaemonEmulator, ScalesUpToTheDemandAndBackDownToZero) {
  StartCloud("zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\n");
  WriteConfig(PolicyYaml("[on-demand]", false));
  Start();
  prometheus_.Set(20);  // 4 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(4); }, 60s)) << DaemonLog();
  // No overshoot: a few more ticks change nothing.
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 4) << DaemonLog();
  for (const CloudInstance& i : Live()) {
    EXPECT_EQ(i.lifecycle, CapacityType::kOnDemand) << i.id;
    EXPECT_EQ(i.tags.at(kOwnerTag), "gpu");
  }

  prometheus_.Set(0);
  ASSERT_TRUE(Eventually([&] { return LiveIs(0); }, 60s)) << DaemonLog();
  Stop();
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

TEST_F(DaemonEmulator, ConvergesOnTheOtherZoneWhenOneHasNoCapacity) {
  // Spot in 1a is cheaper, so the planner asks for it first; 1a has none.
  StartCloud(
      "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
      "capacity:\n  - {zone: us-east-1a, limit: 0}\n"
      "spot_prices:\n"
      "  - {instance_type: g5.xlarge, zone: us-east-1a, price: 0.30, at: -1h}\n"
      "  - {instance_type: g5.xlarge, zone: us-east-1b, price: 0.45, at: -1h}\n");
  WriteConfig(PolicyYaml("[spot, on-demand]", true));
  Start();
  prometheus_.Set(15);  // 3 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(3); }, 60s)) << DaemonLog();
  for (const CloudInstance& i : Live()) {
    EXPECT_EQ(i.zone, "us-east-1b") << i.id;
    EXPECT_EQ(i.lifecycle, CapacityType::kSpot) << i.id;
  }
  // The shortage was met, recorded and learned: the first launch names it.
  Stop();
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  bool saw_shortage = false;
  Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 1000);
  ASSERT_TRUE(decisions.ok()) << decisions.error().ToString();
  for (const DecisionRow& d : *decisions) {
    Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
    ASSERT_TRUE(actions.ok()) << actions.error().ToString();
    for (const ActionRow& r : *actions) {
      if (r.detail.find("InsufficientInstanceCapacity") != std::string::npos) saw_shortage = true;
    }
  }
  EXPECT_TRUE(saw_shortage) << DaemonLog();
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(audit.live, 3);
  EXPECT_EQ(audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

// The emulator's g5.xlarge spot price in us-east-1a was set two hours before
// the daemon starts and never changed since; 1b's ten minutes before. From
// the first tick both are in force: 1a (0.1234, cheaper than the catalog's
// and than 1b's) gets the launch, the snapshot shows it, and the store keeps
// it as a price sample at the time it was set.
TEST_F(DaemonEmulator, PlansFromTheFirstTickWithASpotPriceSetHoursBeforeItStarted) {
  StartCloud(
      "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
      "spot_prices:\n"
      "  - {instance_type: g5.xlarge, zone: us-east-1a, price: 0.1234, at: -2h}\n"
      "  - {instance_type: g5.xlarge, zone: us-east-1b, price: 0.2345, at: -10m}\n");
  WriteConfig(PolicyYaml("[spot]", true));
  prometheus_.Set(5);  // 1 GPU
  const WallTime started = SystemClock().WallNow();
  Start();
  const uint16_t port = WaitForPortFile(dir_ / "daemon.port", 30s);
  ASSERT_NE(port, 0) << DaemonLog();
  ASSERT_TRUE(Eventually([&] { return LiveIs(1); }, 60s)) << DaemonLog();
  EXPECT_EQ(Live()[0].zone, "us-east-1a");
  const HttpReply snapshot = HttpGet(port, "/api/v1/snapshot");
  ASSERT_EQ(snapshot.status, 200);
  std::map<std::string, double> spot;
  const nlohmann::json published = nlohmann::json::parse(snapshot.body);
  for (const nlohmann::json& o : published["offerings"]) {
    if (o.value("instance_type", "") == "g5.xlarge" && o.value("capacity_type", "") == "spot")
      spot[o.value("zone", "")] = o.value("usd_per_hour", 0.0);
  }
  EXPECT_DOUBLE_EQ(spot["us-east-1a"], 0.1234);
  EXPECT_DOUBLE_EQ(spot["us-east-1b"], 0.2345);
  Stop();

  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 1000);
  ASSERT_TRUE(decisions.ok() && !decisions->empty());
  // The first decision launched, at the live price.
  const nlohmann::json plan = nlohmann::json::parse(decisions->front().decision.plan_json);
  ASSERT_EQ(plan["launches"].size(), 1u) << plan.dump();
  EXPECT_EQ(plan["launches"][0]["offering"]["zone"], "us-east-1a");
  EXPECT_DOUBLE_EQ(plan["launches"][0]["usd_per_hour"].get<double>(), 0.1234);
  Result<std::vector<PriceSample>> samples = (*reader)->PriceSamples(started - Seconds(3 * 3600), started + Seconds(3600));
  ASSERT_TRUE(samples.ok()) << samples.error().ToString();
  bool kept = false;
  for (const PriceSample& p : *samples) {
    kept = kept || (p.offering.zone == "us-east-1a" && p.offering.usd_per_hour == 0.1234 &&
                    p.time < started - Seconds(3600));
  }
  EXPECT_TRUE(kept) << samples->size() << " samples";
}

TEST_F(DaemonEmulator, FallsBackToOnDemandWhenNoZoneHasSpot) {
  StartCloud(
      "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
      "capacity:\n  - {capacity_type: spot, limit: 0, error: InsufficientInstanceCapacity}\n");
  WriteConfig(PolicyYaml("[spot, on-demand]", true));
  Start();
  prometheus_.Set(10);  // 2 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveIs(2); }, 60s)) << DaemonLog();
  for (const CloudInstance& i : Live()) EXPECT_EQ(i.lifecycle, CapacityType::kOnDemand) << i.id;
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(emulator_->LiveCount(), 2) << DaemonLog();
  Stop();
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

TEST_F(DaemonEmulator, BacksOffWhenThrottledAndStillConverges) {
  // Every other EC2 call is refused with RequestLimitExceeded.
  StartCloud("zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\nthrottle: {every: 2}\n");
  WriteConfig(PolicyYaml("[on-demand]", false));
  Start();
  prometheus_.Set(15);
  ASSERT_TRUE(Eventually([&] { return LiveIs(3); }, 90s)) << DaemonLog();
  prometheus_.Set(5);
  ASSERT_TRUE(Eventually([&] { return LiveIs(1); }, 90s)) << DaemonLog();
  Stop();

  // From outside: every throttled call is followed by the same call again
  // after a pause drawn from [0, ceiling] (full jitter; the first ceiling
  // after a throttle is 1 s, the cap 20 s), never by a burst.
  const nlohmann::json requests = emulator_->Requests();
  std::vector<int64_t> gaps_ms;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i]["error_code"] != "RequestLimitExceeded") continue;
    for (size_t j = i + 1; j < requests.size(); ++j) {
      if (requests[j]["action"] != requests[i]["action"]) continue;
      gaps_ms.push_back(requests[j]["steady_ms"].get<int64_t>() - requests[i]["steady_ms"].get<int64_t>());
      break;
    }
  }
  ASSERT_GE(gaps_ms.size(), 10u) << requests.dump();
  int64_t sum = 0, longest = 0;
  for (int64_t g : gaps_ms) {
    sum += g;
    longest = std::max(longest, g);
  }
  const double mean = static_cast<double>(sum) / static_cast<double>(gaps_ms.size());
  // Uniform on [0, 1000 ms] has mean 500 ms; no backoff would be ~1 ms.
  EXPECT_GT(mean, 150.0) << gaps_ms.size() << " retries";
  EXPECT_LE(longest, 20000 + 5000) << "a pause longer than the cap";
  const CrashAudit audit = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
  EXPECT_EQ(audit.duplicate_launches + audit.untracked_instances + audit.lost_audit_rows + audit.pending_actions, 0)
      << audit.Summary();
}

TEST_F(DaemonEmulator, ARestartAfterASigkillAtEachFailpointLeavesExactlyThePlannedInstances) {
  // For each point: a fresh cloud and database, demand for 3 nodes (then 1,
  // for the terminations), the daemon killed there, restarted without the
  // failpoint, and the fleet checked against the store.
  for (const std::string point : {"launch.before_call", "launch.after_call", "launch.after_outcome",
                                   "tick.before_commit", "tick.after_commit", "terminate.before_call",
                                   "terminate.after_call", "terminate.after_outcome"}) {
    SCOPED_TRACE(point);
    const bool terminate = point.rfind("terminate.", 0) == 0;
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    StartCloud("zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\n");
    WriteConfig(PolicyYaml("[on-demand]", false));
    prometheus_.Set(15);
    if (terminate) {
      Start();
      ASSERT_TRUE(Eventually([&] { return LiveIs(3); }, 60s)) << DaemonLog();
      Stop();
      prometheus_.Set(5);
    }
    Start(point);
    // tick.* points come every tick: the first ones that matter are those of
    // the tick that acts, which is the first tick after a start.
    ASSERT_EQ(daemon_->Wait(60s).value_or(-1), 128 + SIGKILL) << "the daemon did not die at " << point << "\n"
                                                              << DaemonLog();
    daemon_.reset();
    if (point == "launch.after_call" || point == "terminate.after_call") {
      // Before the restart the damage is there, and the audit sees it: the
      // check below is not vacuous.
      const CrashAudit before = AuditCloudAgainstStore(*emulator_->Instances(), (dir_ / "audit.db").string());
      EXPECT_GT(before.pending_actions, 0) << before.Summary();
      EXPECT_GT(before.untracked_instances + before.lost_audit_rows, 0) << before.Summary();
    }
    const int expected = terminate ? 1 : 3;
    Start();
    ASSERT_TRUE(Eventually([&] { return LiveIs(expected); }, 60s)) << DaemonLog();
    // Settled: a few more ticks, the count stays.
    ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
    Stop();
    std::optional<std::vector<CloudInstance>> cloud = emulator_->Instances();
    ASSERT_TRUE(cloud.has_value());
    const CrashAudit audit = AuditCloudAgainstStore(*cloud, (dir_ / "audit.db").string());
    EXPECT_EQ(audit.live, expected) << audit.Summary();
    EXPECT_EQ(audit.duplicate_launches, 0) << audit.Summary();
    EXPECT_EQ(audit.untracked_instances, 0) << audit.Summary();
    EXPECT_EQ(audit.lost_audit_rows, 0) << audit.Summary();
    EXPECT_EQ(audit.pending_actions, 0) << audit.Summary();
    emulator_.reset();
  }
}

TEST_F(DaemonEmulator, AnUnknownFailpointIsAConfigurationError) {
  StartCloud("zones: [us-east-1a]\n");
  WriteConfig(PolicyYaml("[on-demand]", false));
  Start("launch.befor_call");
  EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 2);
  EXPECT_NE(DaemonLog().find("unknown failpoint 'launch.befor_call'"), std::string::npos) << DaemonLog();
  daemon_.reset();
}

}  // namespace
}  // namespace gpuscaler::testing
