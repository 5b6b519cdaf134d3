// The daemon binary (`cluster_name: prod-a`, provider aws) against `gpuscaler
// cloud-emulator`, with a pool of `actuation: asg`, on an account another
// installation ("other") also uses:
//  - demand scales the Auto Scaling group's desired capacity up and back
//    down, through SetDesiredCapacity and TerminateInstanceInAutoScalingGroup
//    (no CreateFleet, no TerminateInstances);
//  - the other installation's instances, in a pool of the same name and in
//    a group of its own, are never counted, listed or terminated.
#include <gtest/gtest.h>

#include "cloud/daemon_harness.h"
#include "cloud/emulated_aws.h"
#include "gpuscaler/cloud/aws_provider.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;

constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1s
terminate_latency: 1s
auto_scaling_groups:
  - {name: gpu-a, min: 0, max: 6, desired: 0, instance_type: g5.xlarge, tags: {gpuscaler.io/cluster: prod-a}}
  - {name: gpu-other, min: 0, max: 6, desired: 2, instance_type: g5.xlarge,
     tags: {gpuscaler.io/cluster: other, gpuscaler.io/pool: gpu}}
)";

// The policy of daemon_harness.h with its pool bought through group gpu-a.
std::string AsgPolicy() {
  std::string policy = PolicyYaml("[on-demand]", false);
  const std::string at = "    max_nodes: 20\n";
  policy.insert(policy.find(at) + at.size(), "    actuation: asg\n    auto_scaling_group: gpu-a\n");
  return policy;
}

class DaemonAsg : public CliTest {
 protected:
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      daemon_->Wait(60s);
    }
    daemon_.reset();
    emulator_.reset();
    CliTest::TearDown();
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }

  // Live instances of the emulator, by Auto Scaling group ("" for none).
  std::map<std::string, std::vector<CloudInstance>> LiveByGroup() {
    std::map<std::string, std::vector<CloudInstance>> out;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
      if (!i.live()) continue;
      auto g = i.tags.find(cloud::kAsgGroupNameTag);
      out[g == i.tags.end() ? "" : g->second].push_back(i);
    }
    return out;
  }
  int Calls(const std::string& action) {
    int n = 0;
    for (const nlohmann::json& r : emulator_->Requests()) n += r["action"] == action && r["status"] == 200;
    return n;
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<EmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(DaemonAsg, ScalesTheGroupAndNeverTouchesAnotherInstallation) {
  emulator_ = std::make_unique<EmulatorProcess>(dir_, kScenario);
  ASSERT_TRUE(emulator_->ok()) << emulator_->log();

  // The other installation's fleet instances, in a pool also named "gpu".
  SystemClock clock;
  cloud::AwsProvider other(cloud::emulated::ProviderOptions("other"), emulator_->client(), clock);
  LaunchRequest r = cloud::emulated::TrainRequest("", 2, "other-1-0");
  r.pool = "gpu";
  ASSERT_TRUE(other.Launch(r).ok());
  std::set<std::string> foreign;
  for (const auto& [group, instances] : LiveByGroup()) {
    for (const CloudInstance& i : instances) foreign.insert(i.id);
  }
  ASSERT_EQ(foreign.size(), 4u);

  Write("policy.yaml", AsgPolicy());
  std::string config = DaemonConfigYaml(emulator_->url(), prometheus_.url());
  config.replace(config.find("cluster_name: test"), std::string("cluster_name: test").size(), "cluster_name: prod-a");
  Write("gpuscaler.yaml", config);
  daemon_ = StartDaemon(dir_, kTickMs, "", 1);
  ASSERT_TRUE(daemon_->started());
  if (std::optional<int> exited = WaitUntilServing(*daemon_, dir_)) {
    daemon_.reset();
    FAIL() << "the daemon exited with " << *exited << ":\n" << DaemonLog();
  }

  prometheus_.Set(15);  // 3 GPUs
  ASSERT_TRUE(Eventually([&] { return LiveByGroup()["gpu-a"].size() == 3; }, 60s)) << DaemonLog();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(LiveByGroup()["gpu-a"].size(), 3u) << DaemonLog();  // no overshoot

  prometheus_.Set(5);  // 1 GPU
  ASSERT_TRUE(Eventually([&] { return LiveByGroup()["gpu-a"].size() == 1; }, 60s)) << DaemonLog();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  daemon_->Signal(SIGTERM);
  EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
  daemon_.reset();

  std::map<std::string, std::vector<CloudInstance>> live = LiveByGroup();
  EXPECT_EQ(live["gpu-a"].size(), 1u);
  std::set<std::string> still;
  for (const std::string group : {"", "gpu-other"}) {
    for (const CloudInstance& i : live[group]) still.insert(i.id);
  }
  EXPECT_EQ(still, foreign) << DaemonLog();
  EXPECT_EQ(Calls("CreateFleet"), 1);  // the other installation's
  EXPECT_EQ(Calls("TerminateInstances"), 0);
  EXPECT_GE(Calls("SetDesiredCapacity"), 1);
  EXPECT_EQ(Calls("TerminateInstanceInAutoScalingGroup"), 2);
}

}  // namespace
}  // namespace gpuscaler::testing
