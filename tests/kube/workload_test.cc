// Pending pods become demand and nodes become capacity: first on the
// recorded object shapes, then through the list/watch cache against the
// fake API server.
#include "gpuscaler/kube/workload.h"

#include <gtest/gtest.h>

#include "../fakes/fake_clock.h"
#include "gpuscaler/kube/cluster_cache.h"
#include "gpuscaler/kube/objects.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;
using testing::FakeApiServer;

Policy TwoClassPolicy() {
  Policy p;
  NodePoolPolicy gpu;
  gpu.name = "gpu";
  gpu.taints = {{"nvidia.com/gpu", "true", "NoSchedule"}};
  NodePoolPolicy open;
  open.name = "open";
  p.pools = {gpu, open};
  WorkloadClassPolicy training;
  training.name = "training";
  training.match_namespaces = {"ml-training"};
  training.interruptible = false;
  training.priority = 50;
  WorkloadClassPolicy inference;
  inference.name = "inference";
  inference.match_labels = {{"app", "triton-inference-server"}};
  inference.checkpoint_interval = Seconds(0);
  WorkloadClassPolicy rest;
  rest.name = "rest";  // no match conditions: every other pod
  p.classes = {training, inference, rest};
  return p;
}

Catalog TestCatalog() {
  Catalog c;
  GpuModel a100;
  a100.name = "A100-SXM4-40GB";
  a100.short_name = "a100-40gb";
  a100.memory_mib = 40960;
  c.gpu_models.push_back(a100);
  return c;
}

json PendingPod(const json& recorded) { return recorded["items"][0]; }

TEST(ParseQuantityMilli, ReadsEveryFormTheApiWrites) {
  struct Case {
    std::string text;
    std::optional<int64_t> want;
  } cases[] = {{"8", 8000},          {"100m", 100},          {"95690m", 95690},      {"1.5", 1500},
               {"2e3", 2000000},     {"1Ki", 1024000},       {"16Gi", 17179869184000}, {"1k", 1000000},
               {"1176329892Ki", 1204561809408000}, {"0.1m", 1}, {"", std::nullopt}, {"1x", std::nullopt},
               {"abc", std::nullopt}, {"1e", std::nullopt}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(ParseQuantityMilli(c.text), c.want);
  }
}

TEST(InstanceIdFromProviderId, TakesTheLastSegmentOfAwsProviderIds) {
  EXPECT_EQ(InstanceIdFromProviderId("aws:///us-west-2a/i-0123456789abcdef0"), "i-0123456789abcdef0");
  EXPECT_EQ(InstanceIdFromProviderId("kind://docker/kind/kind-worker"), "kind-worker");
  EXPECT_EQ(InstanceIdFromProviderId(""), "");
  EXPECT_EQ(InstanceIdFromProviderId("no-scheme"), "");
}

TEST(InstanceIdFromProviderId, AnAzureNodesInstanceIsNamedByTheNode) {
  const nlohmann::json node = {
      {"kind", "Node"},
      {"metadata", {{"name", "aks-gpuspot-25481572-vmss00000a"}}},
      {"spec",
       {{"providerID",
         "azure:///subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mc_rg1_clustername1_eastus/"
         "providers/Microsoft.Compute/virtualMachineScaleSets/aks-gpuspot-25481572-vmss/virtualMachines/10"}}}};
  Result<NodeInfo> n = ParseNode(node.dump());
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->instance_id, "aks-gpuspot-25481572-vmss00000a");
}

// The upstream compatibility fixtures carry every field of the type, filled
// with placeholders: the parsers must take all of them.
TEST(Parse, AcceptsEveryFieldOfTheUpstreamPodAndNodeFixtures) {
  GPUSCALER_REFERENCE_JSON(pod, "api-testdata/core.v1.Pod.json");
  GPUSCALER_REFERENCE_JSON(node, "api-testdata/core.v1.Node.json");
  Result<PodInfo> p = ParsePod(pod.dump());
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ(p->name, pod["metadata"]["name"].get<std::string>());
  EXPECT_FALSE(p->affinity_terms.empty());
  EXPECT_FALSE(p->tolerations.empty());
  Result<NodeInfo> n = ParseNode(node.dump());
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->provider_id, node["spec"]["providerID"].get<std::string>());
  EXPECT_FALSE(ParsePod(node.dump()).ok());  // a Node is not a Pod
}

TEST(PodDemand, TheRecordedPendingGpuPodIsOneGpuOfItsLabelClass) {
  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  Result<ObjectList<PodInfo>> pods = ParsePodList(list.dump());
  ASSERT_TRUE(pods.ok()) << pods.error().ToString();
  ASSERT_EQ(pods->items.size(), 1u);
  EXPECT_EQ(pods->resource_version, "10245");
  const PodInfo& pod = pods->items[0];
  EXPECT_TRUE(pod.unschedulable);
  EXPECT_NE(pod.unschedulable_message.find("Insufficient nvidia.com/gpu"), std::string::npos);
  ASSERT_TRUE(IsPendingGpuPod(pod));
  Result<DemandUnit> u = PodDemand(pod, TwoClassPolicy(), TestCatalog());
  ASSERT_TRUE(u.ok()) << u.error().ToString();
  EXPECT_EQ(u->id, "0b1c2d3e-0000-4000-8000-000000000001");
  EXPECT_EQ(u->workload_class, "inference");
  EXPECT_EQ(u->gpus, 1);
  EXPECT_TRUE(u->mig_profile.empty());
  EXPECT_EQ(u->checkpoint_interval, Seconds(0));
  // It tolerates only the not-ready/unreachable taints: the tainted GPU pool
  // is out, the untainted one is where it can go.
  EXPECT_EQ(u->pool, "open");
}

TEST(PodDemand, TheDeadlineIsTheClasssOrThePodAnnotationsFromItsCreation) {
  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  Result<ObjectList<PodInfo>> pods = ParsePodList(list.dump());
  ASSERT_TRUE(pods.ok()) << pods.error().ToString();
  PodInfo pod = pods->items[0];
  Policy policy = TwoClassPolicy();
  // No deadline anywhere: runs at once.
  Result<DemandUnit> plain = PodDemand(pod, policy, TestCatalog());
  ASSERT_TRUE(plain.ok()) << plain.error().ToString();
  EXPECT_FALSE(plain->deadline.has_value());
  // The class's deadline counts from the pod's creation.
  policy.classes[1].deadline = DeadlineRule{Seconds(24 * 3600), 0};
  Result<DemandUnit> from_class = PodDemand(pod, policy, TestCatalog());
  ASSERT_TRUE(from_class.ok()) << from_class.error().ToString();
  ASSERT_TRUE(from_class->deadline.has_value());
  EXPECT_EQ(*from_class->deadline, pod.created + Seconds(24 * 3600));
  // The annotation overrides it, for pending and running pods alike.
  pod.annotations[kAnnotationDeadline] = "36h";
  Result<DemandUnit> annotated = PodDemand(pod, policy, TestCatalog());
  ASSERT_TRUE(annotated.ok()) << annotated.error().ToString();
  EXPECT_EQ(*annotated->deadline, pod.created + Seconds(36 * 3600));
  EXPECT_EQ(RunningPodUnit(pod, policy, TestCatalog()).deadline, pod.created + Seconds(36 * 3600));
  // A bad value is an error naming the pod and the annotation.
  for (const char* bad : {"soon", "0s", "-1h"}) {
    SCOPED_TRACE(bad);
    pod.annotations[kAnnotationDeadline] = bad;
    Result<DemandUnit> rejected = PodDemand(pod, policy, TestCatalog());
    ASSERT_FALSE(rejected.ok());
    EXPECT_NE(rejected.error().message().find("annotation gpuscaler.io/deadline: expected a duration longer than 0s"),
              std::string::npos)
        << rejected.error().message();
    EXPECT_NE(rejected.error().message().find(pod.name), std::string::npos) << rejected.error().message();
  }
}

TEST(PodDemand, GangAnnotationsMakeThePodAGangMemberOfItsNamespace) {
  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  Result<ObjectList<PodInfo>> pods = ParsePodList(list.dump());
  ASSERT_TRUE(pods.ok()) << pods.error().ToString();
  PodInfo pod = pods->items[0];
  const Policy policy = TwoClassPolicy();
  Result<DemandUnit> alone = PodDemand(pod, policy, TestCatalog());
  ASSERT_TRUE(alone.ok()) << alone.error().ToString();
  EXPECT_FALSE(alone->gang);

  pod.annotations[kAnnotationGang] = "llama-70b";
  pod.annotations[kAnnotationGangSize] = "4";
  Result<DemandUnit> member = PodDemand(pod, policy, TestCatalog());
  ASSERT_TRUE(member.ok()) << member.error().ToString();
  ASSERT_TRUE(member->gang);
  EXPECT_EQ(*member->gang, (GangMembership{pod.namespace_name + "/llama-70b", 4, true, false}));
  EXPECT_EQ(RunningPodUnit(pod, policy, TestCatalog()).gang, member->gang) << "running members too";
  pod.annotations[kAnnotationGangSameInstanceType] = "true";
  EXPECT_TRUE(PodDemand(pod, policy, TestCatalog())->gang->same_instance_type);

  for (const char* bad : {"1", "four", "4x", ""}) {
    SCOPED_TRACE(bad);
    pod.annotations[kAnnotationGangSize] = bad;
    Result<DemandUnit> rejected = PodDemand(pod, policy, TestCatalog());
    ASSERT_FALSE(rejected.ok());
    EXPECT_NE(rejected.error().message().find("annotation gpuscaler.io/gang-size: expected a whole number >= 2"),
              std::string::npos)
        << rejected.error().message();
  }
  pod.annotations.erase(kAnnotationGangSize);
  Result<DemandUnit> sizeless = PodDemand(pod, policy, TestCatalog());
  ASSERT_FALSE(sizeless.ok());
  EXPECT_NE(sizeless.error().message().find("gpuscaler.io/gang-size: required with gpuscaler.io/gang"),
            std::string::npos)
      << sizeless.error().message();
}

TEST(PodDemand, ReadsShapePlacementAndPriorityFromTheSpec) {
  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  const Policy policy = TwoClassPolicy();
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    std::function<void(const DemandUnit&)> check;
  };
  const std::vector<Case> cases = {
      {"namespace picks the class; class traits apply",
       [](json& p) { p["metadata"]["namespace"] = "ml-training"; },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.workload_class, "training");
         EXPECT_FALSE(u.interruptible);
         EXPECT_EQ(u.priority, 50);
       }},
      {"cpu and memory requests, limits standing in; init containers take the max",
       [](json& p) {
         p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}, {"memory", "16Gi"}}},
                                                    {"requests", {{"nvidia.com/gpu", "2"}, {"cpu", "3500m"}}}};
         p["spec"]["initContainers"] = {{{"name", "fetch"}, {"resources", {{"requests", {{"cpu", "8"}}}}}}};
       },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.gpus, 2);
         EXPECT_EQ(u.cpu_milli, 8000);
         EXPECT_EQ(u.memory_mib, 16384);
       }},
      {"a MIG device becomes the profile, no whole GPU",
       [](json& p) {
         p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/mig-1g.10gb", "1"}}}};
       },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.gpus, 0);
         EXPECT_EQ(u.mig_profile, "1g.10gb");
       }},
      {"node selector on GPU product, zone, instance type and EKS capacity type",
       [](json& p) {
         p["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                                      {"topology.kubernetes.io/zone", "us-west-2b"},
                                      {"node.kubernetes.io/instance-type", "p4d.24xlarge"},
                                      {"eks.amazonaws.com/capacityType", "SPOT"}};
       },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.gpu_models, std::vector<std::string>{"A100-SXM4-40GB"});
         EXPECT_EQ(u.zones, std::vector<std::string>{"us-west-2b"});
         EXPECT_EQ(u.instance_types, std::vector<std::string>{"p4d.24xlarge"});
         EXPECT_EQ(u.capacity_type, CapacityType::kSpot);
       }},
      {"required affinity: terms are ORed, NotIn spot means on-demand",
       [](json& p) {
         json term1 = {{"matchExpressions",
                        {{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {"us-west-2a"}}},
                         {{"key", "karpenter.sh/capacity-type"}, {"operator", "NotIn"}, {"values", {"spot"}}}}}};
         json term2 = {{"matchExpressions",
                        {{{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", {"us-west-2c"}}},
                         {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {"on-demand"}}}}}};
         p["spec"]["affinity"] = {
             {"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", {term1, term2}}}}}}};
       },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.zones, (std::vector<std::string>{"us-west-2a", "us-west-2c"}));
         EXPECT_EQ(u.capacity_type, CapacityType::kOnDemand);
         EXPECT_FALSE(u.interruptible);
       }},
      {"tolerating the GPU taint opens both pools; pod priority wins over the class's",
       [](json& p) {
         p["spec"]["tolerations"].push_back({{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
         p["spec"]["priority"] = 1000;
       },
       [](const DemandUnit& u) {
         EXPECT_EQ(u.pool, "");
         EXPECT_EQ(u.priority, 1000);
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json pod = PendingPod(list);
    c.edit(pod);
    Result<PodInfo> parsed = ParsePod(pod.dump());
    ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
    Result<DemandUnit> u = PodDemand(*parsed, policy, TestCatalog());
    ASSERT_TRUE(u.ok()) << u.error().ToString();
    c.check(*u);
  }
}

TEST(PendingGpuPod, OnlyUnschedulableGpuPodsCount) {
  GPUSCALER_REFERENCE_JSON(list, "examples/podlist-pending-gpu.assembled.json");
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    bool want;
  };
  const std::vector<Case> cases = {
      {"as recorded", [](json&) {}, true},
      {"no GPU asked", [](json& p) { p["spec"]["containers"][0]["resources"] = json::object(); }, false},
      {"scheduled, waiting for its image", [](json& p) {
         p["spec"]["nodeName"] = "n1";
         p["status"]["conditions"][0] = {{"type", "PodScheduled"}, {"status", "True"}};
       }, false},
      {"not yet tried by the scheduler", [](json& p) { p["status"]["conditions"] = json::array(); }, false},
      {"PodScheduled=False for another reason (SchedulingGated)", [](json& p) {
         p["status"]["conditions"][0]["reason"] = "SchedulingGated";
       }, false},
      {"being deleted", [](json& p) { p["metadata"]["deletionTimestamp"] = "2023-08-04T06:01:00Z"; }, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json pod = PendingPod(list);
    c.edit(pod);
    Result<PodInfo> parsed = ParsePod(pod.dump());
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(IsPendingGpuPod(*parsed), c.want);
  }
}

TEST(ModelNode, ReadsOfferingInstanceIdAndFreeRoomFromTheRecordedNodes) {
  GPUSCALER_REFERENCE_JSON(list, "examples/nodelist-gpu.assembled.json");
  Result<ObjectList<NodeInfo>> nodes = ParseNodeList(list.dump());
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->items.size(), 2u);
  const NodeInfo& karpenter = nodes->items[0];
  const NodeInfo& eks = nodes->items[1];
  ASSERT_EQ(karpenter.taints.size(), 1u);
  EXPECT_EQ(karpenter.taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(karpenter.taints[0].value, "true");
  EXPECT_EQ(karpenter.taints[0].effect, "NoSchedule");
  EXPECT_TRUE(eks.taints.empty());

  // A pod bound to the Karpenter node with 3 GPUs.
  PodInfo bound;
  bound.uid = "u-1";
  bound.name = "trainer";
  bound.namespace_name = "ml-training";
  bound.node_name = karpenter.name;
  bound.phase = "Running";
  bound.requests_milli = {{"nvidia.com/gpu", 3000}, {"cpu", 12000}};
  const Policy policy = TwoClassPolicy();
  Node n = ModelNode(karpenter, {&bound}, policy, TestCatalog());
  EXPECT_EQ(n.id, "ip-10-0-12-34.us-west-2.compute.internal");
  EXPECT_EQ(n.instance_id, "i-0123456789abcdef0");
  EXPECT_EQ(n.offering.instance_type, "p4d.24xlarge");
  EXPECT_EQ(n.offering.zone, "us-west-2a");
  EXPECT_EQ(n.offering.region, "us-west-2");
  EXPECT_EQ(n.offering.capacity_type, CapacityType::kSpot);
  ASSERT_EQ(n.running.size(), 1u);
  EXPECT_EQ(n.running[0].gpus, 3);
  EXPECT_EQ(n.running[0].workload_class, "training");
  const auto free = FreeResources(karpenter, {&bound});
  EXPECT_EQ(free.at("nvidia.com/gpu"), 5000);
  EXPECT_EQ(free.at("cpu"), 95690 - 12000);

  Node m = ModelNode(eks, {}, policy, TestCatalog());
  EXPECT_EQ(m.offering.capacity_type, CapacityType::kOnDemand);  // EKS ON_DEMAND
  EXPECT_EQ(m.offering.zone, "us-west-2b");
  EXPECT_EQ(FreeResources(eks, {}).at("nvidia.com/mig-1g.5gb"), 14000);
  EXPECT_EQ(m.pool, "");  // not launched by gpuscaler

  NodeInfo ours = eks;
  ours.labels["gpuscaler.io/pool"] = "gpu";
  ours.annotations["karpenter.sh/do-not-disrupt"] = "true";
  ours.unschedulable = true;
  Node o = ModelNode(ours, {}, policy, TestCatalog());
  EXPECT_EQ(o.pool, "gpu");
  EXPECT_TRUE(o.do_not_disrupt);
  EXPECT_EQ(o.state, NodeState::kCordoned);
}

TEST(DemandFromCluster, PendingPodsInSchedulingOrderAndBoundPodsByInstance) {
  GPUSCALER_REFERENCE_JSON(pods, "examples/podlist-pending-gpu.assembled.json");
  GPUSCALER_REFERENCE_JSON(nodes, "examples/nodelist-gpu.assembled.json");
  Result<ObjectList<NodeInfo>> node_list = ParseNodeList(nodes.dump());
  ASSERT_TRUE(node_list.ok());
  std::vector<PodInfo> all;
  const auto add = [&](const std::string& name, const std::function<void(json&)>& edit) {
    json p = pods["items"][0];
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    edit(p);
    Result<PodInfo> parsed = ParsePod(p.dump());
    ASSERT_TRUE(parsed.ok());
    all.push_back(*parsed);
  };
  add("low-old", [](json& p) { p["metadata"]["creationTimestamp"] = "2023-08-04T05:00:00Z"; });
  add("high", [](json& p) { p["spec"]["priority"] = 100; });
  add("low-new", [](json&) {});
  add("no-class", [](json& p) { p["metadata"]["labels"] = json::object(); p["metadata"]["namespace"] = "x"; });
  add("running", [](json& p) {
    p["spec"]["nodeName"] = "ip-10-0-40-7.us-west-2.compute.internal";
    p["status"] = {{"phase", "Running"}};
  });
  add("done", [](json& p) {
    p["spec"]["nodeName"] = "ip-10-0-40-7.us-west-2.compute.internal";
    p["status"] = {{"phase", "Succeeded"}};
  });
  Policy policy = TwoClassPolicy();
  policy.classes.pop_back();  // no catch-all: the unlabelled pod matches nothing
  ClusterDemand d = DemandFromCluster(all, node_list->items, policy, TestCatalog());
  ASSERT_EQ(d.pending.size(), 3u);
  EXPECT_EQ(d.pending[0].id, "uid-high");
  EXPECT_EQ(d.pending[1].id, "uid-low-old");
  EXPECT_EQ(d.pending[2].id, "uid-low-new");
  ASSERT_EQ(d.skipped.size(), 1u);
  EXPECT_NE(d.skipped[0].find("x/no-class"), std::string::npos);
  ASSERT_EQ(d.running.size(), 1u);
  ASSERT_EQ(d.running.count("i-0fedcba9876543210"), 1u);
  EXPECT_EQ(d.running["i-0fedcba9876543210"].size(), 1u);  // the finished pod holds nothing
}

TEST(DemandFromCluster, ThePodsTeamLabelNamesTheUnitsTeam) {
  GPUSCALER_REFERENCE_JSON(pods, "examples/podlist-pending-gpu.assembled.json");
  GPUSCALER_REFERENCE_JSON(nodes, "examples/nodelist-gpu.assembled.json");
  Result<ObjectList<NodeInfo>> node_list = ParseNodeList(nodes.dump());
  ASSERT_TRUE(node_list.ok());
  std::vector<PodInfo> all;
  for (const char* name : {"pending", "running"}) {
    json p = pods["items"][0];
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = std::string("uid-") + name;
    p["metadata"]["labels"]["acme.io/team"] = std::string("team-") + name;
    if (std::string(name) == "running") {
      p["spec"]["nodeName"] = "ip-10-0-40-7.us-west-2.compute.internal";
      p["status"] = {{"phase", "Running"}};
    }
    all.push_back(std::move(ParsePod(p.dump())).value());
  }
  ClusterDemand d = DemandFromCluster(all, node_list->items, TwoClassPolicy(), TestCatalog(), "acme.io/team");
  ASSERT_EQ(d.pending.size(), 1u);
  EXPECT_EQ(d.pending[0].team, "team-pending");
  ASSERT_EQ(d.running["i-0fedcba9876543210"].size(), 1u);
  EXPECT_EQ(d.running["i-0fedcba9876543210"][0].team, "team-running");
  // Under the default label key the pods have no team: their class's applies.
  ClusterDemand plain = DemandFromCluster(all, node_list->items, TwoClassPolicy(), TestCatalog());
  ASSERT_EQ(plain.pending.size(), 1u);
  EXPECT_EQ(plain.pending[0].team, "");
}

TEST(WatchEvent, ReadsTheEnvelopeAndTheObjectOfTheWatchedKind) {
  Result<WatchEvent> added = ParseWatchEvent(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"ml","resourceVersion":"42"}}})",
      WatchResource::kPods);
  ASSERT_TRUE(added.ok()) << added.error().ToString();
  EXPECT_EQ(added->type, "ADDED");
  EXPECT_EQ(added->key, "ml/p");
  EXPECT_EQ(added->resource_version, "42");
  ASSERT_TRUE(added->pod.has_value());
  EXPECT_FALSE(added->node.has_value());
  // The same line on a node watch: not a Node, so no object, still an event.
  Result<WatchEvent> as_node = ParseWatchEvent(
      R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","namespace":"ml"}}})", WatchResource::kNodes);
  ASSERT_TRUE(as_node.ok());
  EXPECT_FALSE(as_node->node.has_value());
  // Nodes are cluster-scoped: a namespace field does not enter the key.
  Result<WatchEvent> node = ParseWatchEvent(
      R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"name":"n1","namespace":"x"}}})", WatchResource::kNodes);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->key, "n1");
  ASSERT_TRUE(node->node.has_value());

  Result<WatchEvent> gone = ParseWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})",
      WatchResource::kPods);
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->error_code, 410);
  EXPECT_EQ(gone->error_message, "too old");

  Result<WatchEvent> bookmark = ParseWatchEvent(
      R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":"77"}}})", WatchResource::kNodes);
  ASSERT_TRUE(bookmark.ok());
  EXPECT_EQ(bookmark->resource_version, "77");
  EXPECT_FALSE(bookmark->node.has_value());

  Result<WatchEvent> broken = ParseWatchEvent(R"({"type":"ADDED",)", WatchResource::kPods);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().category(), ErrorCategory::kInvalidInput);
}

// --- through the API: list, watch, 410 -----------------------------------

class ClusterCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<std::string> pods = testing::ReadReference("examples/podlist-pending-gpu.assembled.json");
    std::optional<std::string> nodes = testing::ReadReference("examples/nodelist-gpu.assembled.json");
    if (!pods || !nodes) GTEST_SKIP() << "../shared/reference/kubernetes absent";
    pod_ = json::parse(*pods)["items"][0];
    const json node_list = json::parse(*nodes);
    for (const json& n : node_list["items"]) server_.Put("nodes", n);
    server_.Put("pods", pod_);
    options_.initial_backoff = std::chrono::milliseconds(20);
    options_.max_backoff = std::chrono::milliseconds(200);
  }

  json PodNamed(const std::string& name, const std::string& node) {
    json p = pod_;
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    if (!node.empty()) {
      p["spec"]["nodeName"] = node;
      p["status"] = {{"phase", "Running"}, {"conditions", {{{"type", "PodScheduled"}, {"status", "True"}}}}};
    }
    return p;
  }

  static size_t PendingCount(const ClusterView& v) {
    size_t n = 0;
    for (const PodInfo& p : v.pods) n += IsPendingGpuPod(p) ? 1 : 0;
    return n;
  }

  FakeApiServer server_;
  testing::FakeClock clock_;
  ClusterCacheOptions options_;
  json pod_;
};

constexpr std::chrono::seconds kWait{20};
// The watches the cache opens on this server: pods, nodes and PodTemplates
// (the custom resources it does not serve are not watched).
constexpr int kWatchedKinds = 3;

TEST_F(ClusterCacheTest, ListsThenFollowsTheWatchIncludingBookmarks) {
  ApiClient client(testing::FakeClusterConfig(server_));
  options_.list_page_size = 1;  // two pages of nodes: continue tokens
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ClusterView v = cache.View();
  EXPECT_EQ(v.nodes.size(), 2u) << cache.node_stats().last_error << " lists " << cache.node_stats().lists;
  EXPECT_EQ(PendingCount(v), 1u);
  EXPECT_GE(server_.Count("GET", "/api/v1/nodes?limit=1&continue="), 1);

  server_.Put("pods", PodNamed("second", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  // The recorded pod gets scheduled: it is no longer demand.
  server_.Put("pods", PodNamed(pod_["metadata"]["name"], "ip-10-0-12-34.us-west-2.compute.internal"));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 1; }, kWait));
  server_.Delete("pods", "default/second");
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 0 && v.pods.size() == 1; }, kWait));

  // A bookmark moves the version the next watch starts from, nothing else.
  server_.Bookmark();
  const std::string want = std::to_string(server_.resource_version());
  ASSERT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().resource_version == want; }, kWait));
  EXPECT_GE(cache.pod_stats().bookmarks, 1);
  EXPECT_EQ(cache.View().pods.size(), 1u);
  // Every watch asked for bookmarks and started from a version.
  for (const auto& c : server_.calls()) {
    if (c.target.find("watch=1") == std::string::npos) continue;
    EXPECT_NE(c.target.find("allowWatchBookmarks=true"), std::string::npos) << c.target;
    EXPECT_NE(c.target.find("resourceVersion="), std::string::npos) << c.target;
  }
  cache.Stop();
}

TEST_F(ClusterCacheTest, ADroppedWatchResumesFromTheLastVersionWithoutRelisting) {
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  const int64_t lists = cache.pod_stats().lists;
  server_.EndWatches();
  ASSERT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().watches >= 2; }, kWait));
  server_.Put("pods", PodNamed("after-drop", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  EXPECT_EQ(cache.pod_stats().lists, lists);
  EXPECT_GE(cache.pod_stats().watches, 2);
  cache.Stop();
}

// Event frames of every JSON shape but the right one: each is skipped and
// the watch goes on (the reads run on the watch thread, where a throw would
// end the process), and the next real event still lands.
TEST_F(ClusterCacheTest, WatchFramesOfTheWrongShapeAreSkippedAndTheWatchGoesOn) {
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  const int64_t watches = cache.pod_stats().watches;
  for (const char* line : {R"([1,2])", R"(5)", R"("ADDED")", R"({"type":5})", R"({"type":"ADDED","object":[]})",
                           R"({"type":"ADDED","object":{"metadata":[]}})",
                           R"({"type":"MODIFIED","object":{"metadata":{"name":7,"namespace":{},"resourceVersion":[]}}})",
                           R"({"type":"BOOKMARK","object":"x"})", R"({"type":"DELETED","object":null})",
                           R"({"type":"ADDED","object":{"metadata":{"name":"p","namespace":"x"},"spec":7}})",
                           R"({"type":"ADDED","object":{"metadata":{"name":"q","ownerReferences":[{"controller":"yes"}]}}})"}) {
    server_.SendRawWatchLine("pods", line);
  }
  server_.Put("pods", PodNamed("after-junk", ""));
  ASSERT_TRUE(cache.WaitUntil([](const ClusterView& v) { return PendingCount(v) == 2; }, kWait));
  EXPECT_EQ(cache.pod_stats().watches, watches);  // no reconnect: the same watch carried on
  cache.Stop();
}

class GoneTest : public ClusterCacheTest, public ::testing::WithParamInterface<bool> {};

// History compacted past the cache's version: "410 Gone" (in the stream, or
// as the HTTP status) drops the cache and lists again, which also catches a
// change made while the watch was down.
TEST_P(GoneTest, ExpiredVersionRelistsAndCatchesUp) {
  server_.gone_as_http_status = GetParam();
  ApiClient client(testing::FakeClusterConfig(server_));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  ASSERT_TRUE(cache.WaitSynced(kWait));
  ASSERT_TRUE(server_.WaitForWatches(kWatchedKinds, kWait));
  // Deleted and re-added while compacted: only a fresh list shows the new pod.
  server_.CompactHistory();
  server_.Delete("pods", "default/" + pod_["metadata"]["name"].get<std::string>());
  server_.Put("pods", PodNamed("while-gone", ""));
  server_.CompactHistory();
  server_.EndWatches();
  ASSERT_TRUE(cache.WaitUntil(
      [](const ClusterView& v) { return v.pods.size() == 1 && v.pods[0].name == "while-gone"; }, kWait));
  EXPECT_GE(cache.pod_stats().relists_after_gone, 1);
  EXPECT_GE(cache.pod_stats().lists, 2);
  cache.Stop();
}

INSTANTIATE_TEST_SUITE_P(InStreamAndAsStatus, GoneTest, ::testing::Values(false, true));

TEST_F(ClusterCacheTest, AnUnreachableServerIsRetriedWithBackoffAndNeverSynced) {
  kube::ClusterConfig config = testing::FakeClusterConfig(server_);
  testing::FixtureHttpServer closed([](const testing::FixtureRequest&) { return testing::FixtureResponse{}; });
  config.server = closed.url();
  closed.Stop();
  ApiClient client(config, std::chrono::milliseconds(500));
  ClusterCache cache(client, clock_, options_);
  cache.Start();
  EXPECT_TRUE(cache.WaitUntil([&](const ClusterView&) { return cache.pod_stats().failures >= 3; }, kWait));
  EXPECT_FALSE(cache.View().synced);
  EXPECT_FALSE(cache.FreshAt().has_value());
  cache.Stop();
}

}  // namespace
}  // namespace gpuscaler::kube
