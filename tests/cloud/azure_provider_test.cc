// AzureProvider, both drivers, against FakeArm (tests/cloud/azure_fake_arm.h):
// launches and their replays, capacity fallback, termination, listing,
// ownership, the refusal of AKS-managed scale sets, and Spot evictions.
#include "gpuscaler/cloud/azure_provider.h"

#include <gtest/gtest.h>

#include "gpuscaler/model/clock.h"
#include "tests/cloud/azure_fake_arm.h"

namespace gpuscaler::cloud::azure_provider_test {
namespace {

using azure_testing::AzureTestData;
using azure_testing::FakeArm;
using azure_testing::LroStyle;
using nlohmann::json;

constexpr const char* kCluster = "prod-east";
constexpr const char* kA100 = "Standard_NC24ads_A100_v4";

class TestToken final : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) override { return AccessToken{"arm-test-token", now + Seconds(3600)}; }
  std::string Name() const override { return "test"; }
};

std::map<std::string, std::string> Ours() { return {{kAzureClusterTag, kCluster}, {"team", "ml"}}; }

Offering A100(CapacityType type, const std::string& zone = "eastus-1") {
  Offering o;
  o.instance_type = kA100;
  o.region = "eastus";
  o.zone = zone;
  o.capacity_type = type;
  return o;
}

struct Rig {
  FakeArm arm;
  TestToken tokens;
  ManualClock clock{FromUnixSeconds(1765108800)};
  AzureClient client;
  AzureProviderOptions options;

  explicit Rig(AzureDriver driver)
      : arm(driver),
        client(ClientOptions(), arm.transport, tokens, clock,
               [this](std::chrono::milliseconds d) { clock.Advance(std::chrono::duration_cast<Seconds>(d)); }) {
    options.cluster_name = kCluster;
    options.subscription_id = azure_testing::kSub;
    options.resource_group = driver == AzureDriver::kAks ? "rg1" : "rg-k8s";
    options.aks_cluster = "clustername1";
    options.location = "eastus";
    options.driver = driver;
  }
  static AzureClientOptions ClientOptions() {
    AzureClientOptions o;
    o.endpoint = azure_testing::kArmTestEndpoint;
    return o;
  }
  // A fresh provider over the same cloud: what a restarted process sees.
  AzureProvider Provider() const { return AzureProvider(options, const_cast<AzureClient&>(client)); }
  std::vector<TransportRequest> Requests(const std::string& method, const std::string& suffix) const {
    std::vector<TransportRequest> out;
    for (const TransportRequest& r : arm.transport.requests) {
      const std::string path = r.url.substr(0, r.url.find('?'));
      if (r.method == method && path.size() >= suffix.size() &&
          path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
        out.push_back(r);
    }
    return out;
  }
};

LaunchRequest Request(const std::string& token, int count, std::vector<Offering> offerings) {
  LaunchRequest r;
  r.pool = "a100";
  r.count = count;
  r.offerings = std::move(offerings);
  r.idempotency_token = token;
  r.tags = {{kClusterTag, kCluster}};
  return r;
}

std::vector<std::string> Ids(const std::vector<Instance>& instances) {
  std::vector<std::string> out;
  for (const Instance& i : instances) out.push_back(i.instance_id);
  return out;
}

TEST(AzureProviderAks, ALaunchRaisesTheSpotAgentPoolAndReturnsItsNewMachines) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("prod-east-i1-7", 2, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  EXPECT_TRUE(launched->errors.empty());
  EXPECT_EQ(Ids(launched->instances),
            (std::vector<std::string>{"aks-gpuspot-25481572-vmss000000", "aks-gpuspot-25481572-vmss000001"}));
  EXPECT_EQ(launched->instances[0].tags.at(kIntentTag), "prod-east-i1-7");
  EXPECT_EQ(rig.arm.Count("gpuspot"), 2);

  const auto puts = rig.Requests("PUT", "/agentPools/gpuspot");
  ASSERT_EQ(puts.size(), 1u);
  EXPECT_NE(puts[0].url.find("api-version=2026-06-01"), std::string::npos);
  EXPECT_EQ(HeaderValue(puts[0].headers, "If-Match"), "3b1d7cf2-6a1d-4f36-9f3a-7b7d8f0d2c11");
  const json body = json::parse(puts[0].body);
  EXPECT_EQ(body["properties"]["count"], 2);
  EXPECT_EQ(body["properties"]["scaleSetPriority"], "Spot");  // the pool as read goes back
  EXPECT_FALSE(body["properties"].contains("provisioningState"));
  EXPECT_EQ(body["properties"]["tags"]["team"], "ml");
  EXPECT_EQ(body["properties"]["tags"][kAzureIntentsTag],
            AzureProvider::IntentHash("prod-east-i1-7") + ":-1:2");
  EXPECT_FALSE(rig.Requests("GET", "/operations/op1").empty());  // the LRO was followed
}

TEST(AzureProviderAks, AReplayAfterACrashRaisesNothingAndReturnsTheSameMachines) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider first = rig.Provider();
  auto a = first.Launch(Request("tok-a", 2, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(a.ok());
  auto b = first.Launch(Request("tok-b", 1, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(Ids(b->instances), std::vector<std::string>{"aks-gpuspot-25481572-vmss000002"});
  ASSERT_EQ(rig.arm.writes, 2);

  AzureProvider restarted = rig.Provider();
  auto replay_a = restarted.Launch(Request("tok-a", 2, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(replay_a.ok()) << replay_a.error().ToString();
  EXPECT_EQ(Ids(replay_a->instances), Ids(a->instances));
  auto replay_b = restarted.Launch(Request("tok-b", 1, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(replay_b.ok());
  EXPECT_EQ(Ids(replay_b->instances), Ids(b->instances));
  EXPECT_EQ(rig.arm.writes, 2);
  EXPECT_EQ(rig.arm.Count("gpuspot"), 3);
}

TEST(AzureProviderAks, ACapacityFailureGivesTheCountBackAndTheNextOfferingIsTried) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.arm.AddGroup("gpuod", kA100, false, Ours());
  rig.options.pools["a100"].groups = {"gpuspot", "gpuod"};
  rig.arm.fail_next_scale = AzureTestData("error_aks_scale_failed.json");
  rig.arm.grant = 0;
  AzureProvider provider = rig.Provider();
  auto launched =
      provider.Launch(Request("tok-c", 2, {A100(CapacityType::kSpot), A100(CapacityType::kOnDemand)}));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].offering_key, A100(CapacityType::kSpot).Key());
  EXPECT_EQ(launched->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(launched->errors[0].error.message().find("OverconstrainedAllocationRequest"), std::string::npos);
  EXPECT_EQ(rig.arm.Count("gpuspot"), 0);  // given back
  EXPECT_EQ(launched->instances.size(), 2u);
  EXPECT_EQ(rig.arm.Count("gpuod"), 2);
  for (const Instance& i : launched->instances) EXPECT_EQ(i.offering.capacity_type, CapacityType::kOnDemand);

  // The replay lands once: neither pool is raised again.
  const int writes = rig.arm.writes;
  AzureProvider restarted = rig.Provider();
  auto replay = restarted.Launch(Request("tok-c", 2, {A100(CapacityType::kSpot), A100(CapacityType::kOnDemand)}));
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(Ids(replay->instances), Ids(launched->instances));
  EXPECT_EQ(rig.arm.writes, writes);
}

TEST(AzureProviderAks, TerminateDeletesTheChosenMachinesAndSkipsUnknownOnes) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider provider = rig.Provider();
  ASSERT_TRUE(provider.Launch(Request("tok-d", 3, {A100(CapacityType::kSpot)})).ok());
  Status s = provider.Terminate({"aks-gpuspot-25481572-vmss000001", "aks-gone-00000000-vmss000009"});
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  const auto posts = rig.Requests("POST", "/agentPools/gpuspot/deleteMachines");
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(json::parse(posts[0].body)["machineNames"], json::array({"aks-gpuspot-25481572-vmss000001"}));
  EXPECT_EQ(rig.arm.Count("gpuspot"), 2);
  auto listed = provider.ListInstances();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(Ids(*listed),
            (std::vector<std::string>{"aks-gpuspot-25481572-vmss000000", "aks-gpuspot-25481572-vmss000002"}));
  EXPECT_EQ((*listed)[0].pool, "a100");
  EXPECT_EQ((*listed)[0].offering.zone, "eastus-1");
  EXPECT_EQ((*listed)[0].offering.capacity_type, CapacityType::kSpot);
  EXPECT_EQ((*listed)[0].tags.at(kClusterTag), kCluster);
}

TEST(AzureProviderAks, AnotherInstallationsPoolIsNeitherListedNorTouched) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, {{kAzureClusterTag, "other-cluster"}});
  rig.options.pools["a100"].groups = {"gpuspot"};
  // The other installation's node.
  {
    AzureProviderOptions theirs = rig.options;
    theirs.cluster_name = "other-cluster";
    AzureProvider other(theirs, rig.client);
    ASSERT_TRUE(other.Launch(Request("their-token", 1, {A100(CapacityType::kSpot)})).ok());
  }
  const int writes = rig.arm.writes;
  AzureProvider provider = rig.Provider();
  auto listed = provider.ListInstances();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  ASSERT_TRUE(provider.Terminate({"aks-gpuspot-25481572-vmss000000"}).ok());
  EXPECT_EQ(rig.arm.deletes, 0);
  auto launched = provider.Launch(Request("tok-e", 1, {A100(CapacityType::kSpot)}));
  ASSERT_FALSE(launched.ok());
  EXPECT_EQ(launched.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(launched.error().message().find(std::string(kAzureClusterTag) + "=" + kCluster), std::string::npos);
  EXPECT_EQ(rig.arm.writes, writes);
}

TEST(AzureProviderAks, AnAutoscaledPoolIsRefused) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.arm.groups["gpuspot"].resource["properties"]["enableAutoScaling"] = true;
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-f", 1, {A100(CapacityType::kSpot)}));
  ASSERT_FALSE(launched.ok());
  EXPECT_EQ(launched.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(launched.error().message().find("enableAutoScaling"), std::string::npos);
  EXPECT_EQ(rig.arm.writes, 0);
}

TEST(AzureProviderAks, EvictionsShowAsNoticesOnceFromTheNodeResourceGroupsScaleSet) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider provider = rig.Provider();
  ASSERT_TRUE(provider.Launch(Request("tok-g", 3, {A100(CapacityType::kSpot)})).ok());
  auto none = provider.PollInterruptions();
  ASSERT_TRUE(none.ok()) << none.error().ToString();
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(rig.Requests("GET", std::string(azure_testing::kNodeGroup) +
                                       "/providers/Microsoft.Compute/virtualMachineScaleSets/"
                                       "aks-gpuspot-25481572-vmss/virtualMachines")
                   .empty());

  rig.arm.Evict("gpuspot", "aks-gpuspot-25481572-vmss000000", /*gone=*/false);
  rig.arm.Evict("gpuspot", "aks-gpuspot-25481572-vmss000001", /*gone=*/true);
  ASSERT_TRUE(provider.Terminate({"aks-gpuspot-25481572-vmss000002"}).ok());  // ours: not an eviction
  const WallTime now = rig.clock.WallNow();
  auto notices = provider.PollInterruptions();
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 2u);
  std::map<std::string, InterruptionNotice> by_id;
  for (const InterruptionNotice& n : *notices) by_id[n.instance_id] = n;
  EXPECT_EQ(by_id.at("aks-gpuspot-25481572-vmss000000").deadline, now + Seconds(30));
  EXPECT_EQ(by_id.at("aks-gpuspot-25481572-vmss000001").deadline, now);
  auto again = provider.PollInterruptions();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->empty());
}

// The controller polls for notices, then lists: a Spot VM evicted in
// between is listed once more (shutting down), so the next poll's notice
// finds it; one gpuscaler deleted is not.
TEST(AzureProviderAks, ASpotVmEvictedBeforeItsNoticeIsListedOnceMoreShuttingDown) {
  Rig rig(AzureDriver::kAks);
  rig.arm.AddGroup("gpuspot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpuspot"};
  AzureProvider provider = rig.Provider();
  ASSERT_TRUE(provider.Launch(Request("tok-n", 2, {A100(CapacityType::kSpot)})).ok());
  ASSERT_TRUE(provider.PollInterruptions().ok());
  ASSERT_EQ(provider.ListInstances()->size(), 2u);

  rig.arm.Evict("gpuspot", "aks-gpuspot-25481572-vmss000000", /*gone=*/true);
  ASSERT_TRUE(provider.Terminate({"aks-gpuspot-25481572-vmss000001"}).ok());  // ours
  auto listed = provider.ListInstances();
  ASSERT_TRUE(listed.ok());
  std::map<std::string, InstanceState> state;
  for (const Instance& i : *listed) state[i.instance_id] = i.state;
  ASSERT_EQ(state.count("aks-gpuspot-25481572-vmss000000"), 1u);
  EXPECT_EQ(state.at("aks-gpuspot-25481572-vmss000000"), InstanceState::kShuttingDown);

  auto notices = provider.PollInterruptions();
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_EQ((*notices)[0].instance_id, "aks-gpuspot-25481572-vmss000000");
  // Reported: gone from the next listing.
  auto after = provider.ListInstances();
  ASSERT_TRUE(after.ok());
  for (const Instance& i : *after) EXPECT_NE(i.instance_id, "aks-gpuspot-25481572-vmss000000");
}

TEST(AzureProviderVmss, ALaunchPatchesTheCapacityUnderIfMatchAndRetriesA412) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100-spot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpu-a100-spot"};
  rig.arm.precondition_next = 1;  // another writer moves the etag once
  rig.arm.lro = LroStyle::kLocation;
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-h", 2, {A100(CapacityType::kSpot, "eastus-2")}));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  EXPECT_EQ(Ids(launched->instances), (std::vector<std::string>{"gpu-a100-spot-000000", "gpu-a100-spot-000001"}));
  const auto patches = rig.Requests("PATCH", "/virtualMachineScaleSets/gpu-a100-spot");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(HeaderValue(patches[0].headers, "If-Match"), "\"5\"");
  EXPECT_EQ(HeaderValue(patches[1].headers, "If-Match"), "\"5\"+");  // read again after the 412
  const json body = json::parse(patches[1].body);
  EXPECT_EQ(body["sku"]["capacity"], 2);
  EXPECT_EQ(body["sku"]["name"], kA100);
  EXPECT_EQ(body["tags"][kAzureClusterTag], kCluster);
  EXPECT_NE(patches[1].url.find("api-version=2026-04-01"), std::string::npos);
  EXPECT_EQ(rig.arm.Count("gpu-a100-spot"), 2);

  // A restarted process replaying the launch patches nothing.
  AzureProvider restarted = rig.Provider();
  auto replay = restarted.Launch(Request("tok-h", 2, {A100(CapacityType::kSpot, "eastus-2")}));
  ASSERT_TRUE(replay.ok()) << replay.error().ToString();
  EXPECT_EQ(Ids(replay->instances), Ids(launched->instances));
  EXPECT_EQ(rig.Requests("PATCH", "/virtualMachineScaleSets/gpu-a100-spot").size(), 2u);
}

TEST(AzureProviderVmss, AScaleSetInAnAksManagedResourceGroupIsRefusedNamingTheAgentPoolDriver) {
  Rig rig(AzureDriver::kVmss);
  auto tags = Ours();
  tags["aks-managed-poolName"] = "gpuspot";
  rig.arm.AddGroup("aks-gpuspot-25481572-vmss", kA100, true, tags);
  rig.options.pools["a100"].groups = {"aks-gpuspot-25481572-vmss"};
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-i", 1, {A100(CapacityType::kSpot)}));
  ASSERT_FALSE(launched.ok());
  EXPECT_EQ(launched.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(launched.error().message().find("driver: aks"), std::string::npos) << launched.error().message();
  EXPECT_EQ(rig.arm.writes, 0);
}

TEST(AzureProviderVmss, FailedInstancesOfAnAllocationFailureAreDeletedAndTheRestKept) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100-spot", kA100, true, Ours());
  rig.options.pools["a100"].groups = {"gpu-a100-spot"};
  rig.arm.fail_next_scale = AzureTestData("operation_failed_allocation.json")["error"];
  rig.arm.grant = 1;
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-j", 3, {A100(CapacityType::kSpot)}));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  EXPECT_EQ(Ids(launched->instances), std::vector<std::string>{"gpu-a100-spot-000000"});
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].error.category(), ErrorCategory::kCapacity);
  const auto deletes = rig.Requests("POST", "/virtualMachineScaleSets/gpu-a100-spot/delete");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(json::parse(deletes[0].body)["instanceIds"], json::array({"1", "2"}));
  EXPECT_EQ(rig.arm.Count("gpu-a100-spot"), 1);
  EXPECT_EQ(rig.arm.MemberNames("gpu-a100-spot"), std::vector<std::string>{"gpu-a100-spot-000000"});
}

TEST(AzureProviderVmss, TerminateDeletesInstancesByIdWithForceDeletionWhenAsked) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100", kA100, false, Ours());
  rig.options.pools["a100"].groups = {"gpu-a100"};
  rig.options.force_deletion = true;
  rig.arm.lro = LroStyle::kSynchronous;
  AzureProvider provider = rig.Provider();
  ASSERT_TRUE(provider.Launch(Request("tok-k", 2, {A100(CapacityType::kOnDemand)})).ok());
  ASSERT_TRUE(provider.Terminate({"gpu-a100-000001"}).ok());
  const auto deletes = rig.Requests("POST", "/virtualMachineScaleSets/gpu-a100/delete");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_NE(deletes[0].url.find("forceDeletion=true"), std::string::npos);
  EXPECT_EQ(json::parse(deletes[0].body)["instanceIds"], json::array({"1"}));
  EXPECT_EQ(rig.arm.MemberNames("gpu-a100"), std::vector<std::string>{"gpu-a100-000000"});

  rig.arm.groups["gpu-a100"].members[0]["properties"]["instanceView"]["statuses"][1]["code"] = "PowerState/starting";
  auto listed = provider.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 1u);
  const Instance& only = listed->front();
  EXPECT_EQ(only.instance_id, "gpu-a100-000000");
  EXPECT_EQ(only.state, InstanceState::kPending);
  EXPECT_EQ(only.offering.instance_type, kA100);
  EXPECT_EQ(only.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(only.offering.zone, "eastus-1");
  EXPECT_EQ(FormatRfc3339(only.launch_time), "2026-12-07T10:00:00Z");  // the VM's timeCreated
  EXPECT_EQ(only.tags.at(kIntentTag), "tok-k");
  EXPECT_FALSE(rig.Requests("GET", "/virtualMachineScaleSets/gpu-a100/virtualMachines").empty());
  EXPECT_NE(rig.Requests("GET", "/virtualMachineScaleSets/gpu-a100/virtualMachines")
                .back()
                .url.find("$expand=instanceView"),
            std::string::npos);
}

TEST(AzureProviderVmss, ADeallocateSpotScaleSetIsRefused) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100-spot", kA100, true, Ours());
  rig.arm.groups["gpu-a100-spot"].resource["properties"]["virtualMachineProfile"]["evictionPolicy"] = "Deallocate";
  rig.options.pools["a100"].groups = {"gpu-a100-spot"};
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-l", 1, {A100(CapacityType::kSpot)}));
  ASSERT_FALSE(launched.ok());
  EXPECT_EQ(launched.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(launched.error().message().find("Deallocate"), std::string::npos);
}

TEST(AzureProviderVmss, AnOfferingNoScaleSetMatchesIsAConfigErrorForThatOffering) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100", kA100, false, Ours(), {"1"});
  rig.options.pools["a100"].groups = {"gpu-a100"};
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(
      Request("tok-m", 1, {A100(CapacityType::kSpot), A100(CapacityType::kOnDemand, "eastus-3"),
                           A100(CapacityType::kOnDemand, "eastus-1")}));
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  EXPECT_EQ(launched->instances.size(), 1u);
  ASSERT_EQ(launched->errors.size(), 2u);
  EXPECT_EQ(launched->errors[0].error.category(), ErrorCategory::kConfig);
  EXPECT_NE(launched->errors[1].error.message().find("zone eastus-3"), std::string::npos);
}

TEST(AzureProviderVmss, AGroupThatCannotBeReadFailsTheLaunchWithItsCategory) {
  Rig rig(AzureDriver::kVmss);
  rig.arm.AddGroup("gpu-a100", kA100, false, Ours());
  rig.options.pools["a100"].groups = {"gpu-a100"};
  auto inner = rig.arm.transport.handler;
  rig.arm.transport.handler = [inner](const TransportRequest& r) -> Result<TransportResponse> {
    if (r.method == "GET") return azure_testing::ArmJson(403, AzureTestData("error_authorization_failed.json"));
    return inner(r);
  };
  AzureProvider provider = rig.Provider();
  auto launched = provider.Launch(Request("tok-n", 1, {A100(CapacityType::kOnDemand)}));
  ASSERT_FALSE(launched.ok());
  EXPECT_EQ(launched.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(launched.error().message().find("AuthorizationFailed"), std::string::npos);
  EXPECT_EQ(rig.arm.writes, 0);
}

TEST(AzureProviderNames, IntentsRoundTripAndKeepTheNewestEight) {
  std::vector<AzureProvider::Intent> intents;
  for (int i = 0; i < 10; ++i) intents.push_back({AzureProvider::IntentHash("t" + std::to_string(i)), i * 2 - 1, i + 1});
  const std::string tag = AzureProvider::FormatIntents(intents);
  EXPECT_LE(tag.size(), 256u);  // Azure's tag value limit
  const auto parsed = AzureProvider::ParseIntents(tag);
  ASSERT_EQ(parsed.size(), 8u);
  EXPECT_EQ(parsed.front().hash, intents[2].hash);
  EXPECT_EQ(parsed.back().mark, 17);
  EXPECT_EQ(parsed.back().count, 10);
  EXPECT_EQ(AzureProvider::MachineOrdinal("aks-nodepool1-42263519-vmss00000a"), 10);
  EXPECT_EQ(AzureProvider::MachineOrdinal("aks-nodepool1-42263519-vmss0000zz"), 36 * 35 + 35);
  EXPECT_FALSE(AzureProvider::MachineOrdinal("node_1").has_value());
}

}  // namespace
}  // namespace gpuscaler::cloud::azure_provider_test
