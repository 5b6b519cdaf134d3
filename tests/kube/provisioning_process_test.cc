// `gpuscaler run` as a process with the AWS provider against
// `gpuscaler cloud-emulator`, and the fake Kubernetes API server of this test
// as its cluster, serving ProvisioningRequests as Kueue writes them. What
// the daemon launched is read back with the real aws CLI.
//  - best-effort-atomic-scale-up for 4 × g5.12xlarge: one CreateFleet call
//    launches all four in one zone, and only then is Provisioned=True
//    written to the request's status;
//  - with room for three g5.12xlarge in every zone, nothing is launched and
//    the request says why (Provisioned=False, CapacityIsNotFound);
//  - check-capacity launches nothing and answers from the nodes there are.
#include <gtest/gtest.h>

#include <set>

#include "cloud/aws_cli_harness.h"
#include "gpuscaler/model/time.h"
#include "kube/fake_api_server.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::testing {
namespace {

constexpr const char* kRequestKey = "ml-training/llama-train-5f2c1-provision-1";

class ProvisioningProcess : public AwsCliTest {
 protected:
  std::string Scenario() const override { return scenario_; }

  void SetUp() override {
    server_.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
    AwsCliTest::SetUp();
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      EXPECT_EQ(daemon_->Wait(60s).value_or(-1), 0) << DaemonLog();
      daemon_.reset();
    }
    AwsCliTest::TearDown();
  }

  void StartDaemonWith(const std::string& provisioning_class) {
    Write("kubeconfig",
          "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
          "clusters: [{name: fake, cluster: {server: '" +
              server_.url() +
              "'}}]\nusers: [{name: u, user: {token: t0ken}}]\n"
              "contexts: [{name: test, context: {cluster: fake, user: u, namespace: gpuscaler}}]\n");
    Write("policy.yaml",
          "apiVersion: gpuscaler/v1\nkind: Policy\nname: gangs\n"
          "pools:\n"
          "  - name: gpu\n"
          "    instance_types: [g5.12xlarge]\n"
          "    regions: [us-east-1]\n"
          "    zones: [us-east-1a, us-east-1b, us-east-1c]\n"
          "    capacity_types: [on-demand]\n"
          "    max_nodes: 8\n"
          "classes:\n"
          "  - name: training\n"
          "    pools: [gpu]\n"
          "    interruptible: false\n"
          "    match: {namespaces: [ml-training]}\n"
          "scaling: {tick_interval: 1s}\n");
    Write("gpuscaler.yaml", DaemonConfigYaml(emulator_->url(), prometheus_.url()) +
                                "kubernetes: {enabled: true, kubeconfig: kubeconfig}\n");
    nlohmann::json request = KubeTestData("provisioningrequest.json");
    request["metadata"]["creationTimestamp"] = FormatRfc3339(SystemClock().WallNow());
    request["spec"]["provisioningClassName"] = provisioning_class;
    server_.Put("podtemplates", KubeTestData("podtemplate.json"));
    server_.Put("provisioningrequests", request);
    daemon_ = StartDaemon(dir_, 300);
    ASSERT_TRUE(daemon_->started());
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon0.err"); }

  // "<status>/<reason>" of the request's condition `type`; "" when absent.
  std::string Condition(const std::string& type, std::string* message = nullptr) {
    std::optional<nlohmann::json> r = server_.Get("provisioningrequests", kRequestKey);
    if (!r) return "";
    for (const nlohmann::json& c : (*r)["status"].value("conditions", nlohmann::json::array())) {
      if (c.value("type", "") != type) continue;
      if (message != nullptr) *message = c.value("message", "");
      return c.value("status", "") + "/" + c.value("reason", "");
    }
    return "";
  }
  int FleetCalls() {
    int n = 0;
    for (const nlohmann::json& r : emulator_->Requests()) n += r["action"] == "CreateFleet";
    return n;
  }
  // Our instances the aws CLI lists as pending or running.
  std::vector<nlohmann::json> LiveInstances() {
    Run r =
        Aws({"ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=pending,running"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& reservation : r.out.value("Reservations", nlohmann::json::array())) {
      for (const nlohmann::json& i : reservation["Instances"]) out.push_back(i);
    }
    return out;
  }

  std::string scenario_ = "zones: [us-east-1a, us-east-1b, us-east-1c]\nlaunch_latency: 1s\n";
  FakeApiServer server_;
  QueueDepthServer prometheus_{0};
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(ProvisioningProcess, AnAtomicRequestIsProvisionedAfterOneFleetCallLaunchedAllFourInOneZone) {
  StartDaemonWith("best-effort-atomic-scale-up.autoscaling.x-k8s.io");
  int fleet_calls_when_provisioned = -1;
  ASSERT_TRUE(Eventually(
      [&] {
        const int calls = FleetCalls();  // read first: the condition follows the call
        if (Condition("Provisioned") != "True/CapacityIsProvisioned") return false;
        fleet_calls_when_provisioned = calls;
        return true;
      },
      90s))
      << Condition("Provisioned") << "\n"
      << DaemonLog();
  EXPECT_EQ(fleet_calls_when_provisioned, 1);
  EXPECT_EQ(Condition("Accepted"), "True/Accepted");

  const std::vector<nlohmann::json> live = LiveInstances();
  ASSERT_EQ(live.size(), 4u) << DaemonLog();
  std::set<std::string> zones;
  for (const nlohmann::json& i : live) {
    EXPECT_EQ(i["InstanceType"], "g5.12xlarge");
    zones.insert(i["Placement"]["AvailabilityZone"].get<std::string>());
  }
  EXPECT_EQ(zones.size(), 1u) << "a gang is launched in one zone";
  // Booked: a few more ticks launch nothing more and keep the four.
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(FleetCalls(), 1);
  EXPECT_EQ(LiveInstances().size(), 4u);
}

TEST_F(ProvisioningProcess, WithRoomForThreeInEveryZoneNothingIsLaunchedAndTheRequestSaysWhy) {
  scenario_ += "capacity:\n  - {instance_type: g5.12xlarge, limit: 3, error: InsufficientInstanceCapacity}\n";
  emulator_ = std::make_unique<EmulatorProcess>(dir_, scenario_);
  ASSERT_TRUE(emulator_->ok()) << emulator_->log();
  StartDaemonWith("best-effort-atomic-scale-up.autoscaling.x-k8s.io");
  std::string message;
  ASSERT_TRUE(
      Eventually([&] { return Condition("Provisioned", &message) == "False/CapacityIsNotFound"; }, 90s))
      << Condition("Provisioned") << "\n"
      << DaemonLog();
  EXPECT_NE(message.find("Capacity is not found, gpuscaler will try again: "), std::string::npos) << message;
  EXPECT_GE(FleetCalls(), 1) << "the cloud was asked";
  EXPECT_TRUE(LiveInstances().empty()) << "a partial gang was launched";
  EXPECT_EQ(Condition("Failed"), "");
}

TEST_F(ProvisioningProcess, CheckCapacityLaunchesNothing) {
  StartDaemonWith("check-capacity.autoscaling.x-k8s.io");
  std::string message;
  ASSERT_TRUE(
      Eventually([&] { return Condition("Provisioned", &message) == "False/CapacityIsNotFound"; }, 60s))
      << DaemonLog();
  EXPECT_NE(message.find("0 of 4 pods fit"), std::string::npos) << message;
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  EXPECT_EQ(FleetCalls(), 0);
  EXPECT_TRUE(LiveInstances().empty());
}

}  // namespace
}  // namespace gpuscaler::testing
