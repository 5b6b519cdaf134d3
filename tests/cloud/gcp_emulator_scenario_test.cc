// The Compute Engine emulator's scenario, without sockets: capacity errors
// with details and time windows, regional GPU quotas (Spot counted apart, a
// limit raised later), scheduled preemptions, throttling and server errors in
// Google's shapes, the scenario file's errors, and the GPUs of each machine
// series.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>
#include <utility>

#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/gcp_emulator_fixture.h"

namespace gpuscaler::sim::gcp_emulator_scenario_test {
namespace {

using nlohmann::json;
using gcp_emulator_testing::GcpEmulatorTest;
using gcp_emulator_testing::Reason;

TEST_F(GcpEmulatorTest, CapacityErrorsWithDetailsAndTimeWindows) {
  Emu("capacity:\n"
      "  - {machine_type: a3-highgpu-8g, zone: us-central1-a, limit: 0, error: "
      "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS}\n"
      "  - {machine_type: g2-standard-4, zone: us-central1-a, provisioning_model: SPOT, limit: 0, until: "
      "1m}\n");
  auto a3 = BulkInsert("us-central1-a", {"h100-1"}, "a3-highgpu-8g");
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(a3);
  ASSERT_TRUE(op.body.contains("error")) << op.body.dump();
  const json& e = op.body["error"]["errors"][0];
  EXPECT_EQ(e["code"], "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS");
  EXPECT_NE(e["message"].get<std::string>().find("does not have enough resources"), std::string::npos);
  EXPECT_EQ(e["errorDetails"][0]["errorInfo"]["reason"], "resource_availability");

  // Spot is short for a minute; on-demand of the same type is not.
  op = Operation(BulkInsert("us-central1-a", {"l4-spot"}, "g2-standard-4", "SPOT"));
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Get("zones/us-central1-a/instances/l4-spot").status, 404);
  auto od = BulkInsert("us-central1-a", {"l4-od"}, "g2-standard-4", "STANDARD");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(od).body.contains("error"));
  clock_.Advance(std::chrono::minutes(1));
  auto later = BulkInsert("us-central1-a", {"l4-spot"}, "g2-standard-4", "SPOT");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(later).body.contains("error")) << "the limit ended at `until`";
}

TEST_F(GcpEmulatorTest, RegionalGpuQuotaCountsGpusAndSpotSeparately) {
  Emu("quotas:\n  - {region: us-central1, metric: NVIDIA_L4_GPUS, limit: 3}\n"
      "  - {region: us-central1, metric: PREEMPTIBLE_NVIDIA_L4_GPUS, limit: 8}\n");
  auto two = BulkInsert("us-central1-a", {"l4-a"}, "g2-standard-24");  // 2 L4
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(two).body.contains("error"));
  auto over = BulkInsert("us-central1-b", {"l4-b"}, "g2-standard-24");  // 2 more in the same region
  clock_.Advance(std::chrono::seconds(2));
  auto op = Operation(over);
  ASSERT_TRUE(op.body.contains("error"));
  EXPECT_EQ(op.body["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
  EXPECT_EQ(op.body["error"]["errors"][0]["message"],
            "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 3.0 in region us-central1.");
  EXPECT_EQ(op.body["error"]["errors"][0]["errorDetails"][0]["quotaInfo"]["dimensions"]["region"],
            "us-central1");
  auto one = BulkInsert("us-central1-b", {"l4-c"}, "g2-standard-8");  // 1 fits
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(one).body.contains("error"));
  auto spot = BulkInsert("us-central1-b", {"l4-spot"}, "g2-standard-48", "SPOT");  // 4, preemptible quota
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(spot).body.contains("error"));

  // regions.get shows limit and usage per metric.
  auto region = Get("regions/us-central1");
  ASSERT_EQ(region.status, 200) << region.raw.body;
  EXPECT_EQ(region.body["kind"], "compute#region");
  bool seen = false;
  for (const auto& q : region.body["quotas"]) {
    if (q["metric"] != "NVIDIA_L4_GPUS") continue;
    seen = true;
    EXPECT_EQ(q["limit"], 3.0);
    EXPECT_EQ(q["usage"], 3.0);
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(Get("regions/europe-west4").status, 404);
}

TEST_F(GcpEmulatorTest, AQuotaRaisedLaterLetsCreationsThrough) {
  Emu("quotas:\n  - {region: us-central1, metric: NVIDIA_A100_GPUS, limit: 0}\n"
      "  - {region: us-central1, metric: NVIDIA_A100_GPUS, limit: 8, from: 5m}\n");
  auto early = BulkInsert("us-central1-a", {"a-1"}, "a2-highgpu-4g");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(Operation(early).body["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
  EXPECT_EQ(Get("regions/us-central1").body["quotas"][0]["limit"], 0.0);
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(Get("regions/us-central1").body["quotas"][0]["limit"], 8.0);
  auto later = BulkInsert("us-central1-a", {"a-1"}, "a2-highgpu-4g");
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_FALSE(Operation(later).body.contains("error"));
}

TEST_F(GcpEmulatorTest, ScheduledPreemptionStopsDeletesAndLogsAnOperation) {
  Emu("boot_latency: 10s\n"
      "preemptions:\n  - {at: 5m, machine_type: g2-standard-4, count: 2, notice: 30s}\n"
      "managed_instance_groups:\n  - {name: mig, zone: us-central1-c, machine_type: g2-standard-4, "
      "provisioning_model: SPOT,\n"
      "     termination_action: STOP}\n");
  BulkInsert("us-central1-a", {"spot-del"}, "g2-standard-4", "SPOT");  // action DELETE
  json stop = {{"count", 1},
               {"perInstanceProperties", {{"spot-stop", json::object()}}},
               {"instanceProperties",
                {{"machineType", "g2-standard-4"},
                 {"scheduling", {{"provisioningModel", "SPOT"}, {"instanceTerminationAction", "STOP"}}}}}};
  Post("zones/us-central1-b/instances/bulkInsert", stop);
  BulkInsert("us-central1-a", {"standard"}, "g2-standard-4", "STANDARD");
  clock_.Advance(std::chrono::minutes(5));
  EXPECT_EQ(Get("zones/us-central1-a/instances/spot-del").body["status"], "STOPPING");
  EXPECT_EQ(Get("zones/us-central1-b/instances/spot-stop").body["status"], "STOPPING");
  EXPECT_EQ(Get("zones/us-central1-a/instances/standard").body["status"], "RUNNING");

  auto ops = Get("zones/us-central1-a/operations?filter=operationType%3D%22compute.instances.preempted%22");
  ASSERT_EQ(ops.status, 200) << ops.raw.body;
  ASSERT_EQ(ops.body["items"].size(), 1u);
  EXPECT_EQ(ops.body["items"][0]["status"], "DONE");
  EXPECT_EQ(
      ops.body["items"][0]["targetLink"],
      "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/instances/spot-del");
  EXPECT_EQ(Get("zones/us-central1-c/operations?filter=operationType%3D%22compute.instances.preempted%22")
                .body.contains("items"),
            false);

  clock_.Advance(std::chrono::seconds(30));
  EXPECT_EQ(Get("zones/us-central1-a/instances/spot-del").status, 404) << "instanceTerminationAction DELETE";
  EXPECT_EQ(Get("zones/us-central1-b/instances/spot-stop").body["status"], "TERMINATED");
  EXPECT_EQ(emu_->stats().preempted, 2);

  // A group member is preempted and recreated under its name.
  Post("zones/us-central1-c/instanceGroupManagers/mig/createInstances", {{"instances", {{{"name", "m-1"}}}}});
  clock_.Advance(std::chrono::minutes(1));
  ASSERT_TRUE(emu_->Preempt("us-central1-c", "m-1").ok());
  EXPECT_FALSE(emu_->Preempt("us-central1-a", "standard").ok()) << "only Spot VMs are preempted";
  clock_.Advance(std::chrono::seconds(31));
  auto list = Post("zones/us-central1-c/instanceGroupManagers/mig/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 1u);
  EXPECT_EQ(list.body["managedInstances"][0]["name"], "m-1");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "RECREATING");
}

TEST_F(GcpEmulatorTest, ThrottlingAndServerErrorsUseGoogleErrorShapes) {
  Emu("throttle: {every: 2}\n");
  EXPECT_EQ(Get("aggregated/instances").status, 200);
  auto limited = Get("aggregated/instances");
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(Reason(limited.body), "rateLimitExceeded");
  EXPECT_EQ(limited.body["error"]["errors"][0]["domain"], "usageLimits");
  EXPECT_EQ(emu_->stats().throttled, 1);
  Emu("server_error_rate: 1\n");
  auto unavailable = Get("aggregated/instances");
  EXPECT_EQ(unavailable.status, 503);
  EXPECT_EQ(Reason(unavailable.body), "backendError");
}

TEST(GcpScenarioTest, ErrorsNameTheKeyAndLine) {
  auto unknown = ParseGcpScenario("project: p\nzonez: [a]\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("line 2"), std::string::npos) << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("zonez"), std::string::npos);
  auto model = ParseGcpScenario(
      "managed_instance_groups:\n  - {name: m, zone: us-central1-a, provisioning_model: spot}\n");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message().find("managed_instance_groups[0]"), std::string::npos)
      << model.error().message();
  auto zone = ParseGcpScenario("capacity:\n  - {zone: europe-west4-a, limit: 1}\n");
  ASSERT_FALSE(zone.ok());
  EXPECT_NE(zone.error().message().find("not one of `zones`"), std::string::npos);
  auto key = ParseGcpScenario("service_accounts:\n  - {email: a@b, public_key: nope}\n");
  ASSERT_FALSE(key.ok());
  auto error = ParseGcpScenario("capacity:\n  - {limit: 1, error: InsufficientInstanceCapacity}\n");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(*EmulatorScenarioProvider("provider: gcp\n"), "gcp");
  EXPECT_EQ(*EmulatorScenarioProvider("region: us-east-1\n"), "");
  EXPECT_EQ(*EmulatorScenarioProvider("provider: azure\n"), "azure");
  EXPECT_FALSE(EmulatorScenarioProvider("provider: openstack\n").ok());
}

TEST(GcpMachineGpusTest, KnowsTheAcceleratorOptimizedSeries) {
  GcpScenario s;
  EXPECT_EQ(GcpMachineGpus(s, "a2-highgpu-4g"), (std::pair<std::string, int>{"NVIDIA_A100_GPUS", 4}));
  EXPECT_EQ(GcpMachineGpus(s, "a2-ultragpu-8g"), (std::pair<std::string, int>{"NVIDIA_A100_80GB_GPUS", 8}));
  EXPECT_EQ(GcpMachineGpus(s, "a3-highgpu-8g"), (std::pair<std::string, int>{"NVIDIA_H100_GPUS", 8}));
  EXPECT_EQ(GcpMachineGpus(s, "g2-standard-24"), (std::pair<std::string, int>{"NVIDIA_L4_GPUS", 2}));
  EXPECT_EQ(GcpMachineGpus(s, "g2-standard-32"), (std::pair<std::string, int>{"NVIDIA_L4_GPUS", 1}));
  EXPECT_EQ(GcpMachineGpus(s, "n1-standard-8").second, 0);
  s.machine_gpus["n1-custom"] = {"NVIDIA_T4_GPUS", 2};
  EXPECT_EQ(GcpMachineGpus(s, "n1-custom").second, 2);
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_emulator_scenario_test
