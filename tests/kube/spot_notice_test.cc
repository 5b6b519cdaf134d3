// The Spot notice a node reports about itself (kube/spot_notice.h): the
// condition's message both ways, a Node carrying it, and the provider
// wrapper passing node notices on beside the cloud's, each once.
#include "gpuscaler/kube/spot_notice.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../fakes/fake_clock.h"
#include "../fakes/fake_cloud_provider.h"
#include "gpuscaler/kube/cluster_provider.h"
#include "gpuscaler/kube/objects.h"
#include "kube/kube_fixtures.h"

namespace gpuscaler::kube::spot_notice_test {
namespace {

using nlohmann::json;

WallTime SpotAt(const char* text) {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339(text, &t)) << text;
  return t;
}

TEST(SpotNotice, TheMessageReadsBackAsWritten) {
  const NodeSpotNotice n{"Preempt", "A1B2C3D4-0000-4000-8000-000000000001", SpotAt("2026-12-07T17:30:00Z")};
  EXPECT_EQ(FormatSpotNoticeMessage(n),
            "NotBefore=2026-12-07T17:30:00Z EventId=A1B2C3D4-0000-4000-8000-000000000001");
  const std::optional<NodeSpotNotice> back = ParseSpotNoticeMessage("Preempt", FormatSpotNoticeMessage(n));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->event_type, "Preempt");
  EXPECT_EQ(back->event_id, n.event_id);
  EXPECT_EQ(back->not_before, n.not_before);
}

TEST(SpotNotice, AMessageWithoutAReadableNotBeforeIsNoNotice) {
  struct Case {
    const char* name;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{{"empty", ""},
                                         {"no NotBefore", "EventId=x"},
                                         {"not a time", "NotBefore=soon EventId=x"},
                                         {"part of another word", "XNotBefore=2026-12-07T17:30:00Z"}}) {
    SCOPED_TRACE(c.name);
    EXPECT_FALSE(ParseSpotNoticeMessage("Preempt", c.message).has_value());
  }
}

TEST(SpotNotice, TheStatusPatchSetsOnlyItsCondition) {
  const json patch = json::parse(SpotNoticeStatusPatch({"Terminate", "e-1", SpotAt("2026-12-07T17:30:00Z")},
                                                       SpotAt("2026-12-07T17:29:31Z")));
  ASSERT_EQ(patch.size(), 1u);
  ASSERT_EQ(patch["status"].size(), 1u);
  ASSERT_EQ(patch["status"]["conditions"].size(), 1u);
  const json& c = patch["status"]["conditions"][0];
  EXPECT_EQ(c["type"], kSpotPreemptedCondition);
  EXPECT_EQ(c["status"], "True");
  EXPECT_EQ(c["reason"], "Terminate");
  EXPECT_EQ(c["message"], "NotBefore=2026-12-07T17:30:00Z EventId=e-1");
  EXPECT_EQ(c["lastTransitionTime"], "2026-12-07T17:29:31Z");
}

// A recorded Node with the condition added beside the kubelet's.
json NodeWithCondition(const std::string& status, const std::string& message) {
  std::optional<std::string> nodes = testing::ReadReference("examples/nodelist-gpu.assembled.json");
  if (!nodes) return json();
  json node = json::parse(*nodes)["items"][0];
  node["metadata"]["name"] = "aks-gpuspot-12345678-vmss000003";
  node["spec"]["providerID"] =
      "azure:///subscriptions/s/resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/"
      "aks-gpuspot-12345678-vmss/virtualMachines/3";
  node["status"]["conditions"].push_back(
      {{"type", kSpotPreemptedCondition}, {"status", status}, {"reason", "Preempt"}, {"message", message}});
  return node;
}

TEST(SpotNotice, ANodeWithTheConditionTrueCarriesTheNotice) {
  const json node = NodeWithCondition("True", "NotBefore=2026-12-07T17:30:00Z EventId=e-1");
  if (node.is_null()) GTEST_SKIP() << "../shared/reference/kubernetes absent";
  Result<NodeInfo> n = ParseNode(node.dump());
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  ASSERT_TRUE(n->spot_notice.has_value());
  EXPECT_EQ(n->spot_notice->not_before, SpotAt("2026-12-07T17:30:00Z"));
  EXPECT_TRUE(n->ready) << "the kubelet's Ready condition is still read";

  const std::vector<InterruptionNotice> notices = SpotNoticesFromNodes({*n}, SpotAt("2026-12-07T17:29:32Z"));
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].instance_id, "aks-gpuspot-12345678-vmss000003");  // an Azure node: its name
  EXPECT_EQ(notices[0].notice_time, SpotAt("2026-12-07T17:29:32Z"));
  EXPECT_EQ(notices[0].deadline, SpotAt("2026-12-07T17:30:00Z"));

  Result<NodeInfo> cleared = ParseNode(NodeWithCondition("False", "NotBefore=2026-12-07T17:30:00Z").dump());
  ASSERT_TRUE(cleared.ok());
  EXPECT_FALSE(cleared->spot_notice.has_value());
  EXPECT_TRUE(SpotNoticesFromNodes({*cleared}, SpotAt("2026-12-07T17:29:32Z")).empty());
}

TEST(SpotNotice, TheProviderWrapperPassesNodeNoticesOnOncePerNotBefore) {
  testing::FakeClock clock;
  testing::FakeCloudProvider cloud{clock};
  std::vector<InterruptionNotice> from_nodes;
  ClusterCloudProvider::Parts parts;
  parts.inner = &cloud;
  parts.node_notices = [&] { return from_nodes; };
  ClusterCloudProvider provider(std::move(parts));
  const WallTime t0 = SpotAt("2026-12-07T17:29:30Z");
  from_nodes = {{"node-a", t0, t0 + Seconds(30)}};
  cloud.notices = {{"i-cloud", t0, t0 + Seconds(120)}};

  Result<std::vector<InterruptionNotice>> first = provider.PollInterruptions();
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].instance_id, "node-a");
  EXPECT_EQ((*first)[0].deadline, t0 + Seconds(30));
  EXPECT_EQ((*first)[1].instance_id, "i-cloud");

  // The condition stays on the node: not passed on again.
  Result<std::vector<InterruptionNotice>> second = provider.PollInterruptions();
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->empty());
  // A new event with another NotBefore is.
  from_nodes = {{"node-a", t0 + Seconds(40), t0 + Seconds(70)}};
  Result<std::vector<InterruptionNotice>> third = provider.PollInterruptions();
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->size(), 1u);
  EXPECT_EQ((*third)[0].deadline, t0 + Seconds(70));
}

}  // namespace
}  // namespace gpuscaler::kube::spot_notice_test
