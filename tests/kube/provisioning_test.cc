// ProvisioningRequests through their life: the members as demand, the
// conditions each class gets tick by tick (the Cluster Autoscaler's types and
// reasons), the booking; then the cache lists them, and leaves custom
// resources the server does not serve empty.
#include "gpuscaler/kube/provisioning.h"

#include <gtest/gtest.h>

#include "../fakes/fake_clock.h"
#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/gangs.h"
#include "gpuscaler/kube/workload.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;
using Where = MemberPlacement::Where;

WallTime At(const std::string& rfc3339) {
  WallTime t{};
  EXPECT_TRUE(ParseRfc3339(rfc3339, &t));
  return t;
}

// A ready g5.12xlarge with room for one member (4 GPUs, 40 CPUs, 160 GiB).
NodeInfo ReadyNode(const std::string& name) {
  NodeInfo n;
  n.name = name;
  n.ready = true;
  n.labels = {{kLabelInstanceType, "g5.12xlarge"}};
  n.allocatable_milli = {
      {"nvidia.com/gpu", 4000}, {"cpu", 47000}, {"memory", 180LL * 1024 * 1024 * 1024 * 1000}};
  return n;
}

class ProvisioningTest : public ::testing::Test {
 protected:
  ProvisioningTest()
      : request_(testing::KubeTestData("provisioningrequest.json")),
        template_(testing::KubeTestData("podtemplate.json")) {}

  ProvisioningInputs Inputs(const std::vector<PodInfo>& pods = {}) {
    ProvisioningInputs in = ReadProvisioningInputs({request_}, {template_}, pods);
    // What the cache would show once the conditions written so far are in.
    for (ProvisioningRequestInfo& r : in.requests) r.conditions = conditions_;
    return in;
  }
  // Reconciles, keeps the new conditions, returns the one update (or none).
  std::optional<RequestStatusUpdate> Tick(
      const std::optional<std::map<std::string, MemberPlacement>>& placements, WallTime now,
      const std::vector<NodeInfo>& nodes = {}, const std::vector<PodInfo>& pods = {}) {
    const std::vector<RequestStatusUpdate> updates =
        reconciler_.Reconcile(Inputs(pods), placements, nodes, pods, now);
    EXPECT_LE(updates.size(), 1u);
    if (updates.empty()) return std::nullopt;
    conditions_ = updates[0].conditions;
    return updates[0];
  }
  std::vector<DemandUnit> Demand(WallTime now, const std::vector<PodInfo>& pods = {}) {
    std::vector<std::string> skipped;
    std::vector<DemandUnit> units =
        reconciler_.Demand(Inputs(pods), testing::TrainingPolicy(), Catalog{}, now, &skipped);
    EXPECT_TRUE(skipped.empty()) << skipped[0];
    return units;
  }
  const RequestCondition* Condition(const std::string& type) const {
    for (const RequestCondition& c : conditions_) {
      if (c.type == type) return &c;
    }
    return nullptr;
  }
  std::string StatusOf(const std::string& type) const {
    const RequestCondition* c = Condition(type);
    return c == nullptr ? "" : c->status + "/" + c->reason;
  }
  static std::map<std::string, MemberPlacement> All(const std::vector<DemandUnit>& units, Where where,
                                                    const std::string& why = "") {
    std::map<std::string, MemberPlacement> out;
    for (const DemandUnit& u : units) out[u.id] = {where, why};
    return out;
  }

  json request_;
  json template_;
  std::vector<RequestCondition> conditions_;
  ProvisioningReconciler reconciler_;
  const WallTime created_ = At("2026-12-06T09:00:00Z");
};

TEST_F(ProvisioningTest, AnAtomicRequestsMembersAreOneGangShapedByTheirTemplate) {
  const std::vector<DemandUnit> units = Demand(created_);
  ASSERT_EQ(units.size(), 4u);
  for (size_t i = 0; i < units.size(); ++i) {
    EXPECT_EQ(units[i].id,
              "provisioningrequest:ml-training/llama-train-5f2c1-provision-1/0/" + std::to_string(i));
    EXPECT_EQ(units[i].gpus, 4);
    EXPECT_EQ(units[i].workload_class, "training");
    EXPECT_EQ(units[i].instance_types, std::vector<std::string>{"g5.12xlarge"});
    EXPECT_EQ(units[i].labels.count("pod"), 0u);
    EXPECT_EQ(units[i].labels.at("provisioning-request"), "ml-training/llama-train-5f2c1-provision-1");
    ASSERT_TRUE(units[i].gang);
    EXPECT_EQ(*units[i].gang, (GangMembership{"provisioningrequest:ml-training/llama-train-5f2c1-provision-1",
                                              4, true, false}));
  }
}

TEST_F(ProvisioningTest, AnAtomicRequestIsProvisionedOnceEveryMemberHasANodeAndIsBookedForTenMinutes) {
  std::vector<DemandUnit> units = Demand(created_);
  std::optional<RequestStatusUpdate> u = Tick(All(units, Where::kNewLaunch), created_ + Seconds(10));
  ASSERT_TRUE(u);
  EXPECT_EQ(StatusOf("Accepted"), "True/Accepted");
  EXPECT_EQ(StatusOf("Provisioned"), "") << "a launch under way is not capacity yet";
  EXPECT_FALSE(Tick(std::nullopt, created_ + Seconds(20))) << "a reused plan changes nothing";

  const WallTime provisioned_at = created_ + Seconds(30);
  u = Tick(All(units, Where::kOnNode), provisioned_at);
  ASSERT_TRUE(u);
  EXPECT_EQ(StatusOf("Provisioned"), "True/CapacityIsProvisioned");
  EXPECT_EQ(Condition("Provisioned")->last_transition, provisioned_at);
  EXPECT_NE(u->summary.find("Provisioned=True (CapacityIsProvisioned)"), std::string::npos) << u->summary;

  // Booked: the members stay demand so their nodes stay.
  units = Demand(provisioned_at + Seconds(60));
  EXPECT_EQ(units.size(), 4u);
  EXPECT_FALSE(Tick(All(units, Where::kOnNode), provisioned_at + Seconds(60)));
  EXPECT_TRUE(Demand(provisioned_at + kBookingPeriod).empty());
  ASSERT_TRUE(Tick(All(units, Where::kOnNode), provisioned_at + kBookingPeriod));
  EXPECT_EQ(StatusOf("BookingExpired"), "True/CapacityReservationTimeExpired");
  EXPECT_TRUE(Demand(provisioned_at + kBookingPeriod + Seconds(1)).empty()) << "finished";
}

TEST_F(ProvisioningTest, PodsConsumingTheRequestTakeOverItsDemandAndEndTheBooking) {
  std::vector<DemandUnit> units = Demand(created_);
  Tick(All(units, Where::kOnNode), created_ + Seconds(10));
  EXPECT_EQ(StatusOf("Provisioned"), "True/CapacityIsFound") << "room was there without a launch";
  PodInfo consumer;
  consumer.name = "llama-train-worker-0";
  consumer.namespace_name = "ml-training";
  consumer.annotations[kAnnotationConsumeProvisioningRequest] = "llama-train-5f2c1-provision-1";
  EXPECT_TRUE(Demand(created_ + Seconds(20), {consumer}).empty());
  EXPECT_FALSE(Tick(std::nullopt, created_ + Seconds(20) + kBookingPeriod, {}, {consumer}))
      << "a consumed booking does not expire";
}

TEST_F(ProvisioningTest, AnAtomicRequestThatCannotBePlacedSaysWhyAndFailsWhenItsValidityEnds) {
  const std::vector<DemandUnit> units = Demand(created_);
  std::optional<RequestStatusUpdate> u =
      Tick(All(units, Where::kUnplaced, "gang-incomplete: 3 of 4 members fit in us-east-1a"),
           created_ + Seconds(10));
  ASSERT_TRUE(u);
  EXPECT_EQ(StatusOf("Provisioned"), "False/CapacityIsNotFound");
  EXPECT_NE(Condition("Provisioned")->message.find("gang-incomplete: 3 of 4 members fit"), std::string::npos);
  EXPECT_FALSE(Tick(All(units, Where::kUnplaced, "gang-incomplete: 3 of 4 members fit in us-east-1a"),
                    created_ + Seconds(20)))
      << "the same reason is not written again";
  // ValidUntilSeconds is 3600 in the recorded request.
  ASSERT_TRUE(Tick(All(units, Where::kUnplaced, "x"), created_ + Seconds(3600)));
  EXPECT_EQ(StatusOf("Failed"), "True/Expired");
  EXPECT_TRUE(Demand(created_ + Seconds(3601)).empty());
}

TEST_F(ProvisioningTest, ARequestThatWaitedForCapacityIsProvisionedWhenTheCapacityReturns) {
  const std::vector<DemandUnit> units = Demand(created_);
  Tick(All(units, Where::kNewLaunch), created_ + Seconds(10));  // refused by the cloud: planned again
  Tick(All(units, Where::kUnplaced, "no-offering-fits: every offering is backing off"),
       created_ + Seconds(20));
  ASSERT_EQ(StatusOf("Provisioned"), "False/CapacityIsNotFound");
  EXPECT_EQ(Demand(created_ + Seconds(30)).size(), 4u) << "still demand: tried again every tick";
  Tick(All(units, Where::kNewLaunch), created_ + Seconds(300));
  ASSERT_TRUE(Tick(All(units, Where::kOnNode), created_ + Seconds(310)));
  EXPECT_EQ(StatusOf("Provisioned"), "True/CapacityIsProvisioned");
  EXPECT_EQ(Condition("Provisioned")->last_transition, created_ + Seconds(310));
  EXPECT_EQ(StatusOf("Failed"), "");
}

TEST_F(ProvisioningTest, BookedCapacityLostBeforeItIsUsedIsRevoked) {
  const std::vector<DemandUnit> units = Demand(created_);
  Tick(All(units, Where::kOnNode), created_ + Seconds(10));
  ASSERT_EQ(StatusOf("Provisioned"), "True/CapacityIsFound");
  ASSERT_TRUE(Tick(All(units, Where::kNewLaunch), created_ + Seconds(40)));
  EXPECT_EQ(StatusOf("CapacityRevoked"), "True/CapacityIsNotFound");
  EXPECT_TRUE(Demand(created_ + Seconds(50)).empty());
}

TEST_F(ProvisioningTest, CheckCapacityLaunchesNothingAndIsProvisionedOnlyWhenTheReadyNodesHoldEveryMember) {
  request_["spec"]["provisioningClassName"] = kClassCheckCapacity;
  EXPECT_TRUE(Demand(created_).empty()) << "check-capacity is never demand before it is booked";
  std::vector<NodeInfo> nodes = {ReadyNode("a"), ReadyNode("b"), ReadyNode("c")};
  NodeInfo cordoned = ReadyNode("d");
  cordoned.unschedulable = true;
  NodeInfo other_type = ReadyNode("e");
  other_type.labels[kLabelInstanceType] = "p4d.24xlarge";
  nodes.push_back(cordoned);
  nodes.push_back(other_type);
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(10), nodes));
  EXPECT_EQ(StatusOf("Provisioned"), "False/CapacityIsNotFound");
  EXPECT_NE(Condition("Provisioned")->message.find("3 of 4 pods fit"), std::string::npos)
      << Condition("Provisioned")->message;

  nodes.push_back(ReadyNode("f"));
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(20), nodes));
  EXPECT_EQ(StatusOf("Provisioned"), "True/CapacityIsFound");
  EXPECT_EQ(Demand(created_ + Seconds(30)).size(), 4u) << "booked: held as demand";
}

TEST_F(ProvisioningTest, CheckCapacityCountsOnlyTheNodesWhoseTaintsTheMembersTolerate) {
  // The template tolerates nvidia.com/gpu:NoSchedule (Exists), nothing else.
  request_["spec"]["provisioningClassName"] = kClassCheckCapacity;
  auto tainted = [](const std::string& name, const std::string& key, const std::string& effect) {
    NodeInfo n = ReadyNode(name);
    n.taints.push_back({key, "x", effect});
    return n;
  };
  std::vector<NodeInfo> nodes = {ReadyNode("a"), ReadyNode("b"), tainted("c", "dedicated", "NoSchedule"),
                                 tainted("d", "dedicated", "NoExecute")};
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(10), nodes));
  EXPECT_EQ(StatusOf("Provisioned"), "False/CapacityIsNotFound");
  EXPECT_NE(Condition("Provisioned")->message.find("2 of 4 pods fit"), std::string::npos)
      << Condition("Provisioned")->message;

  // A taint the members tolerate, and one that only asks the scheduler to avoid the node.
  nodes.push_back(tainted("e", "nvidia.com/gpu", "NoSchedule"));
  nodes.push_back(tainted("f", "dedicated", "PreferNoSchedule"));
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(20), nodes));
  EXPECT_EQ(StatusOf("Provisioned"), "True/CapacityIsFound");
}

TEST_F(ProvisioningTest, ABookedCheckCapacityRequestTakesItsRoomBeforeANewOneIsChecked) {
  request_["spec"]["provisioningClassName"] = kClassCheckCapacity;
  const std::vector<NodeInfo> nodes = {ReadyNode("a"), ReadyNode("b"), ReadyNode("c"), ReadyNode("d")};
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(10), nodes));
  ASSERT_EQ(StatusOf("Provisioned"), "True/CapacityIsFound");
  // A second request for the same four pods, created earlier but seen only
  // now: the four nodes are booked by the first, so nothing is left for it.
  json second = request_;
  second["metadata"]["name"] = "second";
  second["metadata"]["creationTimestamp"] = "2026-12-06T08:59:00Z";
  ProvisioningInputs in = ReadProvisioningInputs({second, request_}, {template_}, {});
  for (ProvisioningRequestInfo& r : in.requests) {
    if (r.name != "second") r.conditions = conditions_;
  }
  const std::vector<RequestStatusUpdate> updates =
      reconciler_.Reconcile(in, std::nullopt, nodes, {}, created_ + Seconds(90));
  ASSERT_EQ(updates.size(), 1u);
  EXPECT_EQ(updates[0].name, "second");
  ASSERT_EQ(updates[0].conditions.size(), 2u);
  EXPECT_EQ(updates[0].conditions[1].reason, "CapacityIsNotFound");
  EXPECT_NE(updates[0].conditions[1].message.find("0 of 4 pods fit"), std::string::npos)
      << updates[0].conditions[1].message;
}

TEST_F(ProvisioningTest, ARequestWithoutValidUntilSecondsFailsWhenNotProvisionedInSevenDays) {
  request_["spec"]["parameters"] = json::object();
  const std::vector<DemandUnit> units = Demand(created_);
  EXPECT_TRUE(Tick(All(units, Where::kUnplaced, "no-offering-fits"), created_ + kRequestExpiry - Seconds(1)));
  EXPECT_EQ(StatusOf("Failed"), "");
  ASSERT_TRUE(Tick(All(units, Where::kUnplaced, "no-offering-fits"), created_ + kRequestExpiry));
  EXPECT_EQ(StatusOf("Failed"), "True/Expired");
  EXPECT_EQ(Condition("Failed")->message, "ProvisioningRequest is expired: not provisioned within 168h");
}

TEST_F(ProvisioningTest, CheckCapacityWithNoRetryFailsAtOnce) {
  request_["spec"]["provisioningClassName"] = kClassCheckCapacity;
  request_["spec"]["parameters"]["noRetry"] = "true";
  ASSERT_TRUE(Tick(std::nullopt, created_ + Seconds(10), {ReadyNode("a")}));
  EXPECT_EQ(StatusOf("Failed"), "True/CapacityIsNotFound");
}

TEST_F(ProvisioningTest, AMissingTemplateFailsTheRequestAfterAGracePeriod) {
  template_["metadata"]["name"] = "another";
  std::vector<std::string> skipped;
  EXPECT_TRUE(reconciler_.Demand(Inputs(), testing::TrainingPolicy(), Catalog{}, created_, &skipped).empty());
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("PodTemplate ppt-llama-train-5f2c1-provision-1-worker not found"),
            std::string::npos);
  Tick(std::nullopt, created_ + Seconds(5));
  EXPECT_EQ(StatusOf("Failed"), "") << "Kueue writes the template first; a late one gets a moment";
  Tick(std::nullopt, created_ + Seconds(31));
  EXPECT_EQ(StatusOf("Failed"), "True/FailedToCreatePods");
}

TEST_F(ProvisioningTest, OtherClassesAreLeftAlone) {
  request_["spec"]["provisioningClassName"] = "queued-provisioning.gke.io";
  EXPECT_TRUE(Demand(created_).empty());
  EXPECT_FALSE(Tick(std::nullopt, created_ + Seconds(10)));
}

TEST_F(ProvisioningTest, TheStatusPatchCarriesEveryConditionInTheApisForm) {
  Tick(All(Demand(created_), Where::kOnNode), created_ + Seconds(10));
  RequestStatusUpdate u{"ml-training", "llama-train-5f2c1-provision-1", "48211", conditions_, ""};
  EXPECT_EQ(StatusPath(u),
            "/apis/autoscaling.x-k8s.io/v1/namespaces/ml-training/provisioningrequests/"
            "llama-train-5f2c1-provision-1/"
            "status");
  const json patch = ConditionsPatch(u);
  ASSERT_EQ(patch["status"]["conditions"].size(), 2u);
  const json& provisioned = patch["status"]["conditions"][1];
  EXPECT_EQ(provisioned["type"], "Provisioned");
  EXPECT_EQ(provisioned["status"], "True");
  EXPECT_EQ(provisioned["reason"], "CapacityIsFound");
  EXPECT_EQ(provisioned["lastTransitionTime"], "2026-12-06T09:00:10Z");
  EXPECT_EQ(provisioned["observedGeneration"], 1);
}

constexpr std::chrono::seconds kCacheWait{20};

TEST(ClusterCacheGangSources, ListsServedCustomResourcesAndLeavesTheOthersEmpty) {
  testing::FakeApiServer server;
  server.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
  server.ServeCustomResource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup");
  server.RefuseLists("/apis/scheduling.volcano.sh/", 403);
  server.Put("provisioningrequests", testing::KubeTestData("provisioningrequest.json"));
  server.Put("podtemplates", testing::KubeTestData("podtemplate.json"));
  ApiClient client(testing::FakeClusterConfig(server));
  testing::FakeClock clock;
  ClusterCache cache(client, clock);
  cache.Start();
  ASSERT_TRUE(
      cache.WaitUntil([](const ClusterView& v) { return v.synced && v.gang_sources_synced; }, kCacheWait));
  ClusterView v = cache.View();
  EXPECT_EQ(v.provisioning_requests.size(), 1u);
  EXPECT_EQ(v.pod_templates.size(), 1u);
  EXPECT_TRUE(v.pod_groups.empty());
  EXPECT_FALSE(cache.Stats(CachedKind::kPodGroups).served) << "404: the coscheduling CRD is not installed";
  EXPECT_FALSE(cache.Stats(CachedKind::kVolcanoPodGroups).served) << "403: not allowed";
  EXPECT_NE(cache.Stats(CachedKind::kVolcanoPodGroups).last_error.find("403"), std::string::npos)
      << cache.Stats(CachedKind::kVolcanoPodGroups).last_error;
  EXPECT_TRUE(cache.FreshAt().has_value()) << "absent kinds do not make the cluster stale";

  // Changes arrive by the watch.
  json second = testing::KubeTestData("provisioningrequest.json");
  second["metadata"]["name"] = "second";
  server.Put("provisioningrequests", second);
  ASSERT_TRUE(
      cache.WaitUntil([](const ClusterView& v) { return v.provisioning_requests.size() == 2; }, kCacheWait));
  server.Delete("provisioningrequests", "ml-training/second");
  ASSERT_TRUE(
      cache.WaitUntil([](const ClusterView& v) { return v.provisioning_requests.size() == 1; }, kCacheWait));
  cache.Stop();
}

// A custom resource installed after gpuscaler started is found at the next
// recheck of the kinds the server did not serve (every 5 minutes by default).
TEST(ClusterCacheGangSources, ACustomResourceInstalledLaterIsFoundAtTheNextRecheck) {
  testing::FakeApiServer server;
  ApiClient client(testing::FakeClusterConfig(server));
  testing::FakeClock clock;
  ClusterCacheOptions options;
  options.absent_kind_recheck = std::chrono::milliseconds(100);
  ClusterCache cache(client, clock, options);
  cache.Start();
  ASSERT_TRUE(
      cache.WaitUntil([](const ClusterView& v) { return v.synced && v.gang_sources_synced; }, kCacheWait));
  EXPECT_FALSE(cache.Stats(CachedKind::kProvisioningRequests).served);
  const int64_t lists = cache.Stats(CachedKind::kProvisioningRequests).lists;

  server.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
  server.Put("provisioningrequests", testing::KubeTestData("provisioningrequest.json"));
  ASSERT_TRUE(
      cache.WaitUntil([](const ClusterView& v) { return v.provisioning_requests.size() == 1; }, kCacheWait));
  EXPECT_TRUE(cache.Stats(CachedKind::kProvisioningRequests).served);
  EXPECT_GT(cache.Stats(CachedKind::kProvisioningRequests).lists, lists);
  cache.Stop();
}

// A gang source the server fails to list (a broken conversion webhook, an
// aggregated API down) never holds back the pods and nodes: the cluster is
// known and fresh, and only the gang sources wait.
TEST(ClusterCacheGangSources, AGangSourceThatFailsToListHoldsNothingElseBack) {
  testing::FakeApiServer server;
  server.ServeCustomResource("autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest");
  server.RefuseLists("/apis/autoscaling.x-k8s.io/", 503);
  ApiClient client(testing::FakeClusterConfig(server));
  testing::FakeClock clock;
  ClusterCacheOptions options;
  options.initial_backoff = std::chrono::milliseconds(20);
  options.max_backoff = std::chrono::milliseconds(50);
  ClusterCache cache(client, clock, options);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kCacheWait));
  ASSERT_TRUE(cache.WaitUntil(
      [&](const ClusterView&) { return cache.Stats(CachedKind::kProvisioningRequests).failures >= 2; },
      kCacheWait));
  const ClusterView v = cache.View();
  EXPECT_TRUE(v.synced);
  EXPECT_FALSE(v.gang_sources_synced);
  EXPECT_TRUE(cache.FreshAt().has_value());
  EXPECT_TRUE(cache.Stats(CachedKind::kProvisioningRequests).served) << "a 503 is a failure, not an absence";
  cache.Stop();
}

}  // namespace
}  // namespace gpuscaler::kube
