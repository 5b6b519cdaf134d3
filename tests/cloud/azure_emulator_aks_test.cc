// The Azure emulator over real HTTPS (azure_https_harness.h): AKS agent
// pools and machines, the node resource group's scale sets, capacity errors
// (in the operation's final status, or at once), and Spot evictions with
// IMDS scheduled events.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cloud/azure_https_harness.h"

namespace gpuscaler::azure_emulator_aks_test {
namespace {

using azure_https_testing::AzureHttpsTest;
using nlohmann::json;
using namespace std::chrono_literals;

std::string AksTestPathOf(const std::string& url) {
  const size_t scheme = url.find("://");
  return scheme == std::string::npos ? url : url.substr(url.find('/', scheme + 3));
}

constexpr const char* kAksCluster =
    "operation_latency: 10s\n"
    "clusters:\n"
    "  - resource_group: rg-aks\n"
    "    name: prod\n"
    "    tags: {gpuscaler-owned: 'true'}\n"
    "    pools:\n"
    "      - {name: system, vm_size: Standard_D4s_v5, count: 1, mode: System}\n"
    "      - {name: spot, vm_size: Standard_NC4as_T4_v3, count: 2, priority: Spot, zones: ['1']}\n";

class AzureAksTest : public AzureHttpsTest {};

TEST_F(AzureAksTest, AgentPoolCreateScaleAndDeleteMachines) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(kAksCluster));
  Answer cluster = Get(std::string("/subscriptions/") + kSub +
                       "/resourceGroups/rg-aks/providers/Microsoft.ContainerService/managedClusters/prod"
                       "?api-version=2026-06-01");
  ASSERT_EQ(cluster.status, 200) << cluster.raw.body;
  EXPECT_EQ(cluster.body["tags"].value("gpuscaler-owned", ""), "true");
  EXPECT_EQ(cluster.body["properties"].value("nodeResourceGroup", ""), "MC_rg-aks_prod_eastus");
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "")).body["value"].size(), 2u);

  json body = {{"properties",
                {{"count", 2},
                 {"vmSize", "Standard_NC24ads_A100_v4"},
                 {"mode", "User"},
                 {"scaleSetPriority", "Regular"},
                 {"availabilityZones", {"1", "2"}},
                 {"nodeLabels", {{"gpu", "a100"}}},
                 {"nodeTaints", {"nvidia.com/gpu=present:NoSchedule"}},
                 {"tags", {{"gpuscaler-pool", "a100"}}}}}};
  Answer put = Call("PUT", Pool("rg-aks", "prod", "/a100"), body.dump());
  ASSERT_EQ(put.status, 201) << put.raw.body;
  EXPECT_EQ(put.body["properties"].value("provisioningState", ""), "Creating");
  EXPECT_EQ(put.body["properties"]["nodeTaints"][0], "nvidia.com/gpu=present:NoSchedule");
  const std::string async = put.raw.Header("Azure-AsyncOperation");
  ASSERT_NE(async.find("/providers/Microsoft.ContainerService/locations/eastus/operations/"), std::string::npos);
  EXPECT_EQ(Get(AksTestPathOf(async)).body.value("status", ""), "InProgress");
  clock_.Advance(10s);
  EXPECT_EQ(Get(AksTestPathOf(async)).body.value("status", ""), "Succeeded");
  Answer pool = Get(Pool("rg-aks", "prod", "/a100"));
  EXPECT_EQ(pool.body["properties"].value("provisioningState", ""), "Succeeded");
  EXPECT_EQ(pool.body["properties"].value("count", 0), 2);
  EXPECT_EQ(pool.body["properties"]["tags"].value("gpuscaler-pool", ""), "a100");

  Answer machines = Get(Pool("rg-aks", "prod", "/a100/machines"));
  ASSERT_EQ(machines.body["value"].size(), 2u);
  const json first = machines.body["value"][0];
  const std::string node = first.value("name", "");
  EXPECT_EQ(node.rfind("aks-a100-", 0), 0u) << node;
  EXPECT_EQ(first["properties"]["network"]["ipAddresses"][0].value("family", ""), "IPv4");
  const std::string vm_id = first["properties"].value("resourceId", "");
  EXPECT_NE(vm_id.find("/resourceGroups/MC_rg-aks_prod_eastus/providers/Microsoft.Compute/virtualMachineScaleSets/"),
            std::string::npos);
  // The pool's scale set is visible to Compute, in the AKS-managed group.
  Answer vm = Get(vm_id + "?api-version=2026-04-01");
  ASSERT_EQ(vm.status, 200) << vm.raw.body;
  EXPECT_EQ(vm.body["properties"]["osProfile"].value("computerName", ""), node);
  const std::string vmss_name = vm_id.substr(vm_id.find("virtualMachineScaleSets/") + 24);
  Answer vmss = Get(Vmss("MC_rg-aks_prod_eastus", vmss_name.substr(0, vmss_name.find('/'))));
  EXPECT_EQ(vmss.body["tags"].value("aks-managed-poolName", ""), "a100");
  Answer group = Get(std::string("/subscriptions/") + kSub + "/resourceGroups/MC_rg-aks_prod_eastus?api-version=2024-03-01");
  EXPECT_EQ(group.body["tags"].value("aks-managed-cluster-name", ""), "prod");

  // properties.eTag guards a PUT (If-Match), as the provider writes the pool back.
  const std::string pool_etag = pool.body["properties"].value("eTag", "");
  ASSERT_FALSE(pool_etag.empty());
  Answer stale = Call("PUT", Pool("rg-aks", "prod", "/a100"), json{{"properties", {{"count", 5}}}}.dump(), kToken,
                      {{"If-Match", "stale"}});
  EXPECT_EQ(stale.status, 412);
  EXPECT_EQ(stale.Code(), "PreconditionFailed");
  Answer scale = Call("PUT", Pool("rg-aks", "prod", "/a100"), json{{"properties", {{"count", 3}}}}.dump(), kToken,
                      {{"If-Match", pool_etag}});
  ASSERT_EQ(scale.status, 200) << scale.raw.body;
  EXPECT_EQ(scale.body["properties"].value("provisioningState", ""), "Scaling");
  EXPECT_NE(scale.body["properties"].value("eTag", ""), pool_etag);
  // One operation at a time on a pool.
  Answer busy = Call("POST", Pool("rg-aks", "prod", "/a100/deleteMachines"), json{{"machineNames", {node}}}.dump());
  EXPECT_EQ(busy.status, 409);
  EXPECT_EQ(busy.Code(), "OperationNotAllowed");
  clock_.Advance(10s);
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "/a100/machines")).body["value"].size(), 3u);

  Answer del = Call("POST", Pool("rg-aks", "prod", "/a100/deleteMachines"), json{{"machineNames", {node}}}.dump());
  ASSERT_EQ(del.status, 202) << del.raw.body;
  EXPECT_FALSE(del.raw.Header("Location").empty());
  clock_.Advance(10s);
  Answer left = Get(Pool("rg-aks", "prod", "/a100/machines"));
  ASSERT_EQ(left.body["value"].size(), 2u);
  for (const json& m : left.body["value"]) EXPECT_NE(m.value("name", ""), node);
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "/a100")).body["properties"].value("count", 0), 2);
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "/a100/machines/" + node)).status, 404);
  EXPECT_EQ(Call("POST", Pool("rg-aks", "prod", "/a100/deleteMachines"), json{{"machineNames", {node}}}.dump()).status,
            400);

  Answer gone = Call("DELETE", Pool("rg-aks", "prod", "/a100"));
  ASSERT_EQ(gone.status, 202);
  clock_.Advance(10s);
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "/a100")).status, 404);
}

TEST_F(AzureAksTest, CapacityErrorsEndTheOperationOrRefuseAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      std::string(kAksCluster) +
      "scale_sets:\n  - {resource_group: rg, name: spotty, vm_size: Standard_ND96asr_v4, priority: Spot, "
      "zones: ['1'], capacity: 1}\n"
      "  - {resource_group: rg, name: rare, vm_size: Standard_NC80adis_H100_v5, capacity: 0}\n"
      "capacity:\n"
      "  - {vm_size: Standard_ND96asr_v4, zone: '1', priority: Spot, limit: 2, error: AllocationFailed}\n"
      "  - {vm_size: Standard_NC80adis_H100_v5, limit: 0, error: SkuNotAvailable}\n"
      "  - {vm_size: Standard_NC40ads_H100_v5, limit: 1, error: QuotaExceeded}\n"));
  Answer patch = Call("PATCH", Vmss("rg", "spotty"), json{{"sku", {{"capacity", 4}}}}.dump());
  ASSERT_EQ(patch.status, 200) << patch.raw.body;
  clock_.Advance(10s);
  Answer op = Get(AksTestPathOf(patch.raw.Header("Azure-AsyncOperation")));
  EXPECT_EQ(op.body.value("status", ""), "Failed");
  EXPECT_EQ(op.body["error"].value("code", ""), "AllocationFailed");
  Answer after = Get(Vmss("rg", "spotty"));
  EXPECT_EQ(after.body["properties"].value("provisioningState", ""), "Failed");
  EXPECT_EQ(after.body["sku"].value("capacity", 0), 2);

  Answer sku = Call("PATCH", Vmss("rg", "rare"), json{{"sku", {{"capacity", 1}}}}.dump());
  EXPECT_EQ(sku.status, 409);
  EXPECT_EQ(sku.Code(), "SkuNotAvailable");
  EXPECT_EQ(Get(Vmss("rg", "rare")).body["sku"].value("capacity", -1), 0);
  EXPECT_TRUE(Get(VmssSub("rg", "rare", "virtualMachines")).body["value"].empty());

  json pool = {{"properties", {{"count", 3}, {"vmSize", "Standard_NC40ads_H100_v5"}}}};
  Answer put = Call("PUT", Pool("rg-aks", "prod", "/h100"), pool.dump());
  ASSERT_EQ(put.status, 201) << put.raw.body;
  clock_.Advance(10s);
  Answer pool_op = Get(AksTestPathOf(put.raw.Header("Azure-AsyncOperation")));
  EXPECT_EQ(pool_op.body.value("status", ""), "Failed");
  EXPECT_EQ(pool_op.body["error"].value("code", ""), "QuotaExceeded");
  Answer h100 = Get(Pool("rg-aks", "prod", "/h100"));
  EXPECT_EQ(h100.body["properties"].value("provisioningState", ""), "Failed");
  EXPECT_EQ(h100.body["properties"].value("count", 0), 1);
  EXPECT_EQ(h100.body["properties"]["status"]["provisioningError"].value("code", ""), "QuotaExceeded");
}

TEST_F(AzureAksTest, SpotEvictionIsAnnouncedThenDeletesOrDeallocates) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      std::string(kAksCluster) +
      "scale_sets:\n  - {resource_group: rg, name: spotty, vm_size: Standard_NC4as_T4_v3, priority: Spot, "
      "eviction_policy: Deallocate, capacity: 2}\n"
      "evictions:\n"
      "  - {at: 2m, cluster: prod, pool: spot}\n"
      "  - {at: 3m, scale_set: spotty, instance_id: '1', notice: 40s}\n"));
  const std::string events = "/metadata/scheduledevents?api-version=2020-07-01";
  EXPECT_EQ(Call("GET", events, "", "").status, 400);
  clock_.Advance(89s);
  Answer quiet = Call("GET", events, "", "", {{"Metadata", "true"}});
  ASSERT_EQ(quiet.status, 200) << quiet.raw.body;
  EXPECT_TRUE(quiet.body["Events"].empty());

  clock_.Advance(2s);
  Answer machines = Get(Pool("rg-aks", "prod", "/spot/machines"));
  ASSERT_EQ(machines.body["value"].size(), 2u);
  const std::string node = machines.body["value"][0].value("name", "");
  const std::string vm_id = machines.body["value"][0]["properties"].value("resourceId", "");
  const std::string vm_name = Get(vm_id + "?api-version=2026-04-01").body.value("name", "");
  Answer notice = Call("GET", events + "&vm=" + node, "", "", {{"Metadata", "true"}});
  ASSERT_EQ(notice.body["Events"].size(), 1u) << notice.raw.body;
  const json e = notice.body["Events"][0];
  EXPECT_EQ(e.value("EventType", ""), "Preempt");
  EXPECT_EQ(e.value("ResourceType", ""), "VirtualMachine");
  EXPECT_EQ(e.value("EventStatus", ""), "Scheduled");
  EXPECT_EQ(e["Resources"][0], vm_name);
  EXPECT_EQ(e.value("NotBefore", ""), "Mon, 07 Dec 2026 10:02:00 GMT");
  EXPECT_GT(notice.body.value("DocumentIncarnation", 0), quiet.body.value("DocumentIncarnation", 0));
  const std::string other = machines.body["value"][1].value("name", "");
  EXPECT_TRUE(Call("GET", events, "", "", {{"Metadata", "true"}, {"X-Emulator-Vm", other}}).body["Events"].empty());

  clock_.Advance(30s);  // 2m01: evicted with the pool's Delete policy
  Answer left = Get(Pool("rg-aks", "prod", "/spot/machines"));
  ASSERT_EQ(left.body["value"].size(), 1u);
  EXPECT_EQ(left.body["value"][0].value("name", ""), other);
  EXPECT_EQ(Get(Pool("rg-aks", "prod", "/spot")).body["properties"].value("count", 0), 1);
  EXPECT_TRUE(Call("GET", events + "&vm=" + node, "", "", {{"Metadata", "true"}}).body["Events"].empty());

  clock_.Advance(30s);  // 2m31: instance 1 of the Deallocate scale set is announced
  Answer second = Call("GET", events + "&vm=spotty_1", "", "", {{"Metadata", "true"}});
  ASSERT_EQ(second.body["Events"].size(), 1u) << second.raw.body;
  clock_.Advance(30s);  // 3m01: deallocated, still a member
  Answer view = Get(VmssSub("rg", "spotty", "virtualMachines/1/instanceView"));
  EXPECT_EQ(view.body["statuses"][1].value("code", ""), "PowerState/deallocated");
  EXPECT_EQ(Get(Vmss("rg", "spotty")).body["sku"].value("capacity", 0), 2);
  Answer started = Call("GET", events + "&vm=spotty_1", "", "", {{"Metadata", "true"}});
  ASSERT_EQ(started.body["Events"].size(), 1u);
  EXPECT_EQ(started.body["Events"][0].value("EventStatus", ""), "Started");
  EXPECT_EQ(emu_->stats().evicted, 2);
}

TEST_F(AzureAksTest, EvictionsOnDemandAndTheStateDump) {
  ASSERT_NO_FATAL_FAILURE(StartEmulator(kAksCluster));
  // The emulator's own endpoints need no token.
  Answer none = Call("POST", "/_emulator/evictions", json{{"cluster", "prod"}, {"pool", "system"}}.dump(), "");
  EXPECT_EQ(none.status, 404) << "a Regular pool has no Spot VM to evict";
  Answer made = Call("POST", "/_emulator/evictions",
                     json{{"cluster", "prod"}, {"pool", "spot"}, {"instance_id", "1"}, {"notice_seconds", 30}}.dump(),
                     "");
  ASSERT_EQ(made.status, 201) << made.raw.body;
  EXPECT_EQ(made.body.value("at", ""), "2026-12-07T10:00:30.0000000Z");
  Answer events = Call("GET", "/metadata/scheduledevents?api-version=2020-07-01", "", "", {{"Metadata", "true"}});
  ASSERT_EQ(events.body["Events"].size(), 1u) << events.raw.body;
  const std::string vm = events.body["Events"][0]["Resources"][0];
  EXPECT_EQ(vm.substr(vm.size() - 2), "_1");

  clock_.Advance(31s);
  Answer state = Call("GET", "/_emulator/state", "", "");
  ASSERT_EQ(state.status, 200);
  int evicted = 0, running = 0;
  for (const json& v : state.body["vms"]) {
    if (v.value("scale_set", "").find("aks-spot-") != 0) continue;
    evicted += v.value("evicted", false) ? 1 : 0;
    running += v.value("state", "") == "Running" ? 1 : 0;
    if (v.value("evicted", false)) {
      EXPECT_EQ(v.value("instance_id", ""), "1");
      EXPECT_EQ(v.value("state", ""), "Deleted");
    }
  }
  EXPECT_EQ(evicted, 1);
  EXPECT_EQ(running, 1);
  EXPECT_EQ(state.body["stats"].value("evicted", 0), 1);
}

}  // namespace
}  // namespace gpuscaler::azure_emulator_aks_test
