// Pending pods become demand and nodes become capacity, on the recorded object
// shapes: a pod's class, pool, shape, placement, priority, deadline and gang;
// which pods count as pending GPU demand; a node's offering, instance id and
// free room; and the demand of a whole cluster in scheduling order.
#include "gpuscaler/kube/workload.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/kube/objects.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

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

}  // namespace
}  // namespace gpuscaler::kube
