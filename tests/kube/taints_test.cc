// Node taints and the demand the daemon plans: a unit never goes onto a
// node whose NoSchedule or NoExecute taints its pod does not tolerate, as
// the scheduler would not bind it there (recorded shapes from
// ../shared/reference/kubernetes/examples).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/kube/objects.h"
#include "gpuscaler/kube/workload.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube {
namespace {

using nlohmann::json;

const std::vector<std::string> kTaintedNode = {"ip-10-0-12-34.us-west-2.compute.internal", "i-0123456789abcdef0"};

TEST(DemandFromCluster, AUnitAvoidsTheNodesWhoseHardTaintsItsPodDoesNotTolerate) {
  // The recorded Karpenter node carries nvidia.com/gpu=true:NoSchedule; the
  // EKS node none. The recorded pending pod tolerates only not-ready and
  // unreachable.
  GPUSCALER_REFERENCE_JSON(pods, "examples/podlist-pending-gpu.assembled.json");
  GPUSCALER_REFERENCE_JSON(nodes, "examples/nodelist-gpu.assembled.json");
  Result<ObjectList<NodeInfo>> node_list = ParseNodeList(nodes.dump());
  ASSERT_TRUE(node_list.ok()) << node_list.error().ToString();
  auto pod = [&](const std::string& name, const json& tolerations, bool running) {
    json p = pods["items"][0];
    p["metadata"]["name"] = name;
    p["metadata"]["uid"] = "uid-" + name;
    p["spec"]["tolerations"] = tolerations;
    if (running) {
      p["spec"]["nodeName"] = "ip-10-0-40-7.us-west-2.compute.internal";
      p["status"] = {{"phase", "Running"}};
    }
    return std::move(ParsePod(p.dump())).value();
  };
  const json none = json::array();
  const json gpu = json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  const json everything = json::array({{{"operator", "Exists"}}});
  const std::vector<PodInfo> all = {pod("plain", none, false), pod("tolerant", gpu, false),
                                    pod("any", everything, false), pod("bound", none, true)};
  ClusterDemand d = DemandFromCluster(all, node_list->items, testing::TrainingPolicy(), Catalog{});
  ASSERT_EQ(d.pending.size(), 3u);
  for (const DemandUnit& u : d.pending) {
    SCOPED_TRACE(u.id);
    EXPECT_EQ(u.avoid_nodes, u.id == "uid-plain" ? kTaintedNode : std::vector<std::string>{});
  }
  // Running work avoids it too: consolidation moves it only where it may run.
  ASSERT_EQ(d.running["i-0fedcba9876543210"].size(), 1u);
  EXPECT_EQ(d.running["i-0fedcba9876543210"][0].avoid_nodes, kTaintedNode);

  // A PreferNoSchedule taint only asks the scheduler to avoid the node.
  std::vector<NodeInfo> soft = node_list->items;
  ASSERT_EQ(soft[0].taints.size(), 1u);
  soft[0].taints[0].effect = "PreferNoSchedule";
  for (const DemandUnit& u : DemandFromCluster(all, soft, testing::TrainingPolicy(), Catalog{}).pending)
    EXPECT_TRUE(u.avoid_nodes.empty()) << u.id;
}

}  // namespace
}  // namespace gpuscaler::kube
