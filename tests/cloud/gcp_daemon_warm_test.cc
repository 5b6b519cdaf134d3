// Warm capacity end to end on Google Cloud: the daemon (`cloud.provider:
// gcp`) against `gpuscaler cloud-emulator --provider gcp`, both child
// processes. With no demand the pool's managed instance group gets one
// member that is stopped once it runs (stopInstances); pending work starts
// that member again (startInstances), the same VM, instead of growing the
// group, and the pool is refilled with a new stopped member.
#include <gtest/gtest.h>

#include "cli/http_get.h"
#include "cloud/gcp_daemon_harness.h"

namespace gpuscaler::testing::gcp_daemon_warm_test {
namespace {

constexpr int kWarmTickMs = 200;

class GcpDaemonWarm : public CliTest {
 protected:
  void StartCloud(const std::string& scenario) {
    emulator_ = std::make_unique<GcpEmulatorProcess>(dir_, scenario);
    ASSERT_TRUE(emulator_->ok()) << emulator_->log();
    emulator_->set_audit_db((dir_ / "audit.db").string());
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }
  std::vector<CloudInstance> Ours(const std::string& state) {
    std::vector<CloudInstance> out;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
      if (i.ours() && i.state == state) out.push_back(i);
    }
    return out;
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
    }
    daemon_.reset();
    emulator_.reset();
    CliTest::TearDown();
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<GcpEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(GcpDaemonWarm, PendingWorkStartsTheStoppedMemberAndThePoolIsRefilled) {
  StartCloud("zones: [us-central1-a, us-central1-b]\noperation_latency: 0s\nboot_latency: 1s\ndelete_latency: 1s\n"
             "stop_latency: 1s\nstart_latency: 1s\n" +
             GcpGroupsScenario("STANDARD"));
  std::string policy = GcpPolicyYaml("[on-demand]", false);
  const std::string at = "    max_nodes: 20\n";
  policy.insert(policy.find(at) + at.size(), "    warm: {size: 1}\n");
  Write("policy.yaml", policy);
  Write("gpuscaler.yaml", GcpDaemonConfigYaml(*emulator_, prometheus_.url(), kGcpGroupPools));
  daemon_ = StartGcpDaemon(dir_, *emulator_, kWarmTickMs, "", 1);
  ASSERT_TRUE(daemon_->started());
  ASSERT_TRUE(Eventually([&] { return Ours("stopped").size() == 1; }, 90s)) << DaemonLog() << emulator_->log();
  const CloudInstance warm = Ours("stopped")[0];
  EXPECT_TRUE(Ours("running").empty());

  prometheus_.Set(5);  // one GPU of work
  ASSERT_TRUE(Eventually(
      [&] {
        const std::vector<CloudInstance> running = Ours("running");
        const std::vector<CloudInstance> stopped = Ours("stopped");
        return running.size() == 1 && running[0].id == warm.id && stopped.size() == 1 && stopped[0].id != warm.id;
      },
      90s))
      << DaemonLog() << emulator_->log();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  size_t ours = 0;
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{}))
    ours += i.ours() && i.state != "terminated";
  EXPECT_EQ(ours, 2u) << "one woken, one refill: the group grew for nothing else";
}

}  // namespace
}  // namespace gpuscaler::testing::gcp_daemon_warm_test
