// The Compute Engine emulator's managed instance groups, without sockets:
// createInstances of named members (preservedState metadata, lastAttempt
// errors while capacity is short, a retry once it is back), deleteInstances of
// members only, and resize up with generated names and down taking members
// still being created first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/gcp_emulator_fixture.h"

namespace gpuscaler::sim::gcp_emulator_groups_test {
namespace {

using nlohmann::json;
using gcp_emulator_testing::GcpEmulatorTest;

TEST_F(GcpEmulatorTest, ManagedGroupCreatesNamedInstancesAndReportsLastAttemptErrors) {
  Emu("mig_retry_interval: 10s\nboot_latency: 10s\n"
      "managed_instance_groups:\n"
      "  - {name: l4-pool-a, zone: us-central1-a, machine_type: g2-standard-8, provisioning_model: SPOT,\n"
      "     termination_action: DELETE, labels: {gpuscaler-pool: l4}}\n"
      "capacity:\n  - {machine_type: g2-standard-8, zone: us-central1-a, limit: 1, until: 30s}\n");
  auto op = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/createInstances",
                 json::parse(R"({"instances": [{"name": "node-1",
                                                "preservedState": {"metadata": {"gpuscaler-intent": "launch-7"}}},
                                               {"name": "node-2"}]})"));
  ASSERT_EQ(op.status, 200) << op.raw.body;
  EXPECT_EQ(op.body["operationType"], "compute.instanceGroupManagers.createInstances");

  auto list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body["managedInstances"].size(), 2u);
  const json& first = list.body["managedInstances"][0];
  EXPECT_EQ(first["name"], "node-1");
  EXPECT_EQ(first["currentAction"], "CREATING");
  EXPECT_EQ(first["instanceStatus"], "PROVISIONING");
  const json& second = list.body["managedInstances"][1];
  EXPECT_EQ(second["currentAction"], "CREATING");
  EXPECT_FALSE(second.contains("instanceStatus"));
  EXPECT_EQ(second["lastAttempt"]["errors"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED");

  auto group = Get("zones/us-central1-a/instanceGroupManagers/l4-pool-a");
  EXPECT_EQ(group.body["kind"], "compute#instanceGroupManager");
  EXPECT_EQ(group.body["targetSize"], 2);
  EXPECT_EQ(group.body["currentActions"]["creating"], 2);
  EXPECT_EQ(group.body["status"]["isStable"], false);

  // The capacity limit ends at 30 s; the retry after that creates node-2.
  clock_.Advance(std::chrono::seconds(31));
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "NONE");
  EXPECT_EQ(list.body["managedInstances"][0]["instanceStatus"], "RUNNING");
  EXPECT_FALSE(list.body["managedInstances"][1].contains("lastAttempt"));
  EXPECT_EQ(list.body["managedInstances"][1]["instanceStatus"], "PROVISIONING");
  auto inst = Get("zones/us-central1-a/instances/node-1");
  EXPECT_EQ(inst.body["labels"]["gpuscaler-pool"], "l4");
  // preservedState.metadata becomes instance metadata, beside the group's created-by.
  ASSERT_EQ(inst.body["metadata"]["items"].size(), 2u);
  EXPECT_EQ(inst.body["metadata"]["items"][0], (json{{"key", "gpuscaler-intent"}, {"value", "launch-7"}}));
  EXPECT_EQ(inst.body["metadata"]["items"][1]["key"], "created-by");
  EXPECT_EQ(inst.body["scheduling"]["provisioningModel"], "SPOT");

  // Names are unique; deleteInstances takes members only.
  EXPECT_EQ(Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/createInstances",
                 {{"instances", {{{"name", "node-1"}}}}})
                .status,
            409);
  auto stranger = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                       {{"instances", {"zones/us-central1-a/instances/nobody"}}});
  EXPECT_EQ(stranger.status, 400);
  EXPECT_EQ(Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                 {{"instances", {"zones/us-central1-a/instances/nobody"}},
                  {"skipInstancesOnValidationError", true}})
                .status,
            200);

  auto del = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/deleteInstances",
                  {{"instances",
                    {"https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/"
                     "instances/node-1"}}});
  ASSERT_EQ(del.status, 200);
  EXPECT_EQ(del.body["operationType"], "compute.instanceGroupManagers.deleteInstances");
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  EXPECT_EQ(list.body["managedInstances"][0]["currentAction"], "DELETING");
  EXPECT_EQ(Get("zones/us-central1-a/instanceGroupManagers/l4-pool-a").body["targetSize"], 1);
  clock_.Advance(std::chrono::minutes(1));
  list = Post("zones/us-central1-a/instanceGroupManagers/l4-pool-a/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 1u);
  EXPECT_EQ(list.body["managedInstances"][0]["name"], "node-2");
  EXPECT_EQ(Get("zones/us-central1-a/instances/node-1").status, 404);
  EXPECT_EQ(Get("zones/us-central1-a/instanceGroupManagers/nope").status, 404);
}

TEST_F(GcpEmulatorTest, ResizeGrowsWithGeneratedNamesAndShrinksCreatingMembersFirst) {
  Emu("managed_instance_groups:\n  - {name: a100, zone: us-central1-b, machine_type: a2-highgpu-1g, "
      "base_instance_name: gke-a100}\n"
      "capacity:\n  - {machine_type: a2-highgpu-1g, limit: 2}\n");
  auto up = Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=3");
  ASSERT_EQ(up.status, 200) << up.raw.body;
  EXPECT_EQ(up.body["operationType"], "compute.instanceGroupManagers.resize");
  auto list = Post("zones/us-central1-b/instanceGroupManagers/a100/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 3u);
  for (const auto& m : list.body["managedInstances"])
    EXPECT_EQ(m["name"].get<std::string>().rfind("gke-a100-", 0), 0u);
  EXPECT_TRUE(list.body["managedInstances"][2].contains("lastAttempt")) << "the third finds no capacity";
  // Down to 2: the member without a VM goes first, nothing running is deleted.
  Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=2");
  list = Post("zones/us-central1-b/instanceGroupManagers/a100/listManagedInstances");
  ASSERT_EQ(list.body["managedInstances"].size(), 2u);
  for (const auto& m : list.body["managedInstances"]) EXPECT_NE(m["currentAction"], "DELETING");
  EXPECT_EQ(Post("zones/us-central1-b/instanceGroupManagers/a100/resize?size=-1").status, 400);
  EXPECT_EQ(Post("zones/us-central1-b/instanceGroupManagers/a100/resize").status, 400);
}

}  // namespace
}  // namespace gpuscaler::sim::gcp_emulator_groups_test
