// Warm capacity end to end on AWS: the daemon (`gpuscaler run`, provider
// aws) against `gpuscaler cloud-emulator`, both child processes. With no
// demand the pool's warm capacity is filled (a refill launched, then
// stopped once it runs); pending work wakes that stopped instance, the same
// id, instead of a launch, and the pool is refilled; the audit store holds
// the wake with the instance it started, and nothing is launched twice.
// The same with spot warm capacity (a persistent Spot request that stops).
#include "cli/http_get.h"
#include "cloud/daemon_harness.h"

namespace gpuscaler::testing::daemon_warm_test {
namespace {

constexpr int kWarmTickMs = 200;

class DaemonWarm : public CliTest {
 protected:
  void StartCloud(const std::string& scenario) {
    emulator_ = std::make_unique<EmulatorProcess>(dir_, scenario);
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
  }
  void Start() {
    daemon_ = StartDaemon(dir_, kWarmTickMs, "", 1);
    ASSERT_TRUE(daemon_->started());
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }
  void Stop() {
    if (!daemon_) return;
    daemon_->Signal(SIGTERM);
    EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
    daemon_.reset();
  }
  std::vector<CloudInstance> Ours(const std::string& state) {
    std::vector<CloudInstance> out;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
      if (i.ours() && i.state == state) out.push_back(i);
    }
    return out;
  }
  void TearDown() override {
    Stop();
    emulator_.reset();
    CliTest::TearDown();
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<EmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
};

std::string WarmPolicy() {
  std::string policy = PolicyYaml("[on-demand]", false);
  const std::string at = "    max_nodes: 20\n";
  policy.insert(policy.find(at) + at.size(), "    warm: {size: 1}\n");
  return policy;
}

TEST_F(DaemonWarm, PendingWorkWakesTheStoppedNodeAndThePoolIsRefilled) {
  StartCloud("zones: [us-east-1a, us-east-1b]\nlaunch_latency: 2s\nstart_latency: 1s\nstop_latency: 1s\n"
             "terminate_latency: 1s\n");
  Write("policy.yaml", WarmPolicy());
  Write("gpuscaler.yaml", DaemonConfigYaml(emulator_->url(), prometheus_.url()));
  prometheus_.Set(0);
  Start();
  // No demand: one refill, launched with the warm tag and stopped once it ran.
  ASSERT_TRUE(Eventually([&] { return Ours("stopped").size() == 1; }, 60s)) << DaemonLog();
  const CloudInstance warm = Ours("stopped")[0];
  EXPECT_EQ(warm.tags.count(kWarmTag), 1u);
  EXPECT_TRUE(Ours("running").empty());

  prometheus_.Set(5);  // one GPU of work
  // The stopped instance is started, the same id; the pool refills with a new one.
  ASSERT_TRUE(Eventually(
      [&] {
        const std::vector<CloudInstance> running = Ours("running");
        const std::vector<CloudInstance> stopped = Ours("stopped");
        return running.size() == 1 && running[0].id == warm.id && stopped.size() == 1 && stopped[0].id != warm.id;
      },
      60s))
      << DaemonLog();
  const std::string refill = Ours("stopped")[0].id;
  // Steady: a few more ticks launch nothing more.
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  size_t ours = 0;
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) ours += i.ours();
  EXPECT_EQ(ours, 2u) << "one woken, one refill: no launch for the work itself";
  Stop();

  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open((dir_ / "audit.db").string());
  ASSERT_TRUE(reader.ok()) << reader.error().ToString();
  Result<std::vector<DecisionRow>> decisions = (*reader)->DecisionsAfterId(0, 100000);
  ASSERT_TRUE(decisions.ok()) << decisions.error().ToString();
  int wakes = 0;
  for (const DecisionRow& d : *decisions) {
    Result<std::vector<ActionRow>> actions = (*reader)->ActionsForDecision(d.id);
    ASSERT_TRUE(actions.ok()) << actions.error().ToString();
    for (const ActionRow& r : *actions) {
      if (r.action.kind != ActionKind::kLaunch || r.action.instance_ids.empty()) continue;
      ++wakes;
      EXPECT_EQ(r.action.instance_ids, std::vector<std::string>{warm.id});
      EXPECT_EQ(r.outcome, ActionOutcome::kSucceeded) << r.detail;
      EXPECT_EQ(r.result_instance_ids, std::vector<std::string>{warm.id});
    }
  }
  EXPECT_EQ(wakes, 1);
  EXPECT_NE(refill, warm.id);
}

// A pool buying spot and on-demand whose warm capacity is spot (its nodes
// stop on interruption); on-demand too, as the warm type of an empty pool
// is the cheapest on-demand type for its classes' shape.
std::string SpotWarmPolicy() {
  std::string policy = PolicyYaml("[spot, on-demand]", true);
  const std::string at = "    max_nodes: 20\n";
  policy.insert(policy.find(at) + at.size(), "    warm: {size: 1, capacity_type: spot}\n");
  return policy;
}

int SpotWarmCalls(EmulatorProcess& emulator, const std::string& action) {
  int n = 0;
  for (const nlohmann::json& r : emulator.Requests()) n += r.value("action", "") == action && r.value("status", 0) == 200;
  return n;
}

// Spot warm capacity on AWS: the refill is a persistent Spot request that
// stops on interruption (RunInstances, not a one-time fleet), stopped once
// it runs; pending work starts it (the same id) instead of a launch; once
// the work is gone, the node the pool has no room for is terminated with its
// Spot request cancelled first, so EC2 launches no replacement.
TEST_F(DaemonWarm, SpotWarmCapacityFillsAStoppableSpotNodeThatPendingWorkWakes) {
  StartCloud("zones: [us-east-1a, us-east-1b]\nlaunch_latency: 2s\nstart_latency: 1s\nstop_latency: 1s\n"
             "terminate_latency: 1s\n"
             "spot_prices:\n"
             "  - {instance_type: g5.xlarge, zone: us-east-1a, price: 0.30, at: -1h}\n"
             "  - {instance_type: g5.xlarge, zone: us-east-1b, price: 0.45, at: -1h}\n");
  Write("policy.yaml", SpotWarmPolicy());
  Write("gpuscaler.yaml", DaemonConfigYaml(emulator_->url(), prometheus_.url()));
  prometheus_.Set(0);
  Start();
  ASSERT_TRUE(Eventually([&] { return Ours("stopped").size() == 1; }, 60s)) << DaemonLog();
  const CloudInstance warm = Ours("stopped")[0];
  EXPECT_EQ(warm.lifecycle, CapacityType::kSpot);
  EXPECT_EQ(warm.tags.count(kWarmTag), 1u);
  EXPECT_EQ(warm.tags.count("gpuscaler.io/interruption-behavior"), 1u);
  EXPECT_GE(SpotWarmCalls(*emulator_, "RunInstances"), 1) << emulator_->Requests().dump();
  EXPECT_EQ(SpotWarmCalls(*emulator_, "CreateFleet"), 0) << "a one-time spot fleet cannot be stopped";
  EXPECT_GE(SpotWarmCalls(*emulator_, "StopInstances"), 1);

  prometheus_.Set(5);  // one GPU of work
  ASSERT_TRUE(Eventually(
      [&] {
        const std::vector<CloudInstance> running = Ours("running");
        const std::vector<CloudInstance> stopped = Ours("stopped");
        return running.size() == 1 && running[0].id == warm.id && stopped.size() == 1 && stopped[0].id != warm.id;
      },
      60s))
      << DaemonLog();
  EXPECT_GE(SpotWarmCalls(*emulator_, "StartInstances"), 1);
  const std::string refill = Ours("stopped")[0].id;
  EXPECT_EQ(Ours("stopped")[0].lifecycle, CapacityType::kSpot);

  // No more work: the woken node is not needed, and the pool is full.
  prometheus_.Set(0);
  ASSERT_TRUE(Eventually([&] { return Ours("running").empty() && Ours("pending").empty(); }, 60s)) << DaemonLog();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  size_t ours = 0, live = 0;
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
    ours += i.ours();
    live += i.ours() && i.live();
  }
  EXPECT_EQ(live, 0u) << "a persistent request replaced a terminated node: " << DaemonLog();
  EXPECT_EQ(ours, 2u) << "one woken, one refill: no launch for the work itself, no replacement";
  ASSERT_EQ(Ours("stopped").size(), 1u) << DaemonLog();
  EXPECT_EQ(Ours("stopped")[0].id, refill);
  EXPECT_GE(SpotWarmCalls(*emulator_, "CancelSpotInstanceRequests"), 1) << DaemonLog();
}

}  // namespace
}  // namespace gpuscaler::testing::daemon_warm_test
