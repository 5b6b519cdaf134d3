// The Kubernetes object parsers: resource quantities in every form the API
// writes, instance ids from provider ids (AWS, Azure), the upstream Pod and
// Node fixtures with every field, and watch events of each type.
#include "gpuscaler/kube/objects.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kube/kube_fixtures.h"

namespace gpuscaler::kube::objects_test {
namespace {

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

}  // namespace
}  // namespace gpuscaler::kube::objects_test
