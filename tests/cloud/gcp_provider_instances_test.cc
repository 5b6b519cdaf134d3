// GcpProvider's view of its instances, against a fake transport: only this
// cluster's labelled instances listed (paged), exactly the chosen ones deleted
// (through their group or alone), and preemptions read from the operations
// list, once each, also when seen before the first listing.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/gcp_provider.h"
#include "tests/cloud/gcp_provider_fixture.h"

namespace gpuscaler::cloud::gcp_provider_instances_test {
namespace {

using nlohmann::json;
using gcp_provider_testing::Aggregated;
using gcp_provider_testing::Call;
using gcp_provider_testing::GcpProviderTest;
using gcp_provider_testing::HttpError;
using gcp_provider_testing::InstanceResource;
using gcp_provider_testing::kEndpoint;
using gcp_provider_testing::kZoneA;
using gcp_provider_testing::kZoneB;
using gcp_provider_testing::Ok;
using gcp_provider_testing::Operation;
using gcp_provider_testing::Parse;

TEST_F(GcpProviderTest, ListInstancesOnlyThisClustersLabelledInstances) {
  GcpProvider& p = Provider(MigPools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path != "projects/proj/aggregated/instances") return HttpError(404, "notFound", "not found");
    EXPECT_EQ(c.Q("filter"), "labels.gpuscaler-cluster = \"prod\"");
    EXPECT_EQ(c.Q("returnPartialSuccess"), "true");
    if (c.Q("pageToken").empty()) {
      return Ok(Aggregated(
          {{kZoneA,
            {InstanceResource(
                 "gke-ml-a100-a-x1", kZoneA, "a2-highgpu-1g", "prod", "a100", true, "RUNNING",
                 {{{"key", "created-by"},
                   {"value", "projects/123/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a"}}}),
             // Another installation's (a server that ignored the filter).
             InstanceResource("other-1", kZoneA, "a2-highgpu-1g", "staging", "a100", true)}}},
          "page-2"));
    }
    EXPECT_EQ(c.Q("pageToken"), "page-2");
    return Ok(Aggregated(
        {{kZoneB,
          {InstanceResource("gs-prod-abc-0", kZoneB, "g2-standard-8", "prod", "l4", false, "STAGING",
                            {{{"key", "gpuscaler-intent"}, {"value", "prod-inst-d7-l0"}},
                             {{"key", "gpuscaler-pool"}, {"value", "l4"}}}),
           // Labelled with the cluster but no pool: not gpuscaler's.
           InstanceResource("hand-made", kZoneB, "g2-standard-8", "prod", "", false)}}}));
  };
  auto listed = p.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  const Instance& mig = (*listed)[0];
  EXPECT_EQ(mig.instance_id, "gke-ml-a100-a-x1");
  EXPECT_EQ(mig.pool, "a100");
  EXPECT_EQ(mig.offering.Key(), "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(mig.offering.region, "us-central1");
  EXPECT_EQ(mig.state, InstanceState::kRunning);
  EXPECT_EQ(mig.launch_time, FromUnixSeconds(1'796'400'000));  // 2026-12-04T16:00:00Z
  EXPECT_EQ(mig.tags.at(kClusterTag), "prod");
  EXPECT_EQ(mig.tags.at(kOwnerTag), "a100");
  const Instance& bare = (*listed)[1];
  EXPECT_EQ(bare.instance_id, "gs-prod-abc-0");
  EXPECT_EQ(bare.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(bare.state, InstanceState::kPending);
  EXPECT_EQ(bare.tags.at(kIntentTag), "prod-inst-d7-l0");
}

TEST_F(GcpProviderTest, TerminateDeletesExactlyTheChosenOwnInstances) {
  GcpProvider& p = Provider(MigPools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA,
            {InstanceResource(
                 "mig-x1", kZoneA, "a2-highgpu-1g", "prod", "a100", true, "RUNNING",
                 {{{"key", "created-by"},
                   {"value", "projects/123/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a"}}}),
             InstanceResource("mig-x2", kZoneA, "a2-highgpu-1g", "prod", "a100", true),
             InstanceResource("mig-x3", kZoneA, "a2-highgpu-1g", "prod", "a100", true),
             InstanceResource("bare-1", kZoneA, "g2-standard-8", "prod", "l4", false),
             InstanceResource("leaving", kZoneA, "g2-standard-8", "prod", "l4", false, "STOPPING")}}}));
    }
    if (c.path.ends_with("/deleteInstances")) {
      return Ok(Operation("op-del", kZoneA, "compute.instanceGroupManagers.deleteInstances", "DONE"));
    }
    if (c.method == "DELETE") return Ok(Operation("op-del-bare", kZoneA, "delete", "DONE"));
    return HttpError(404, "notFound", "not found");
  };
  // mig-x3 stays; "foreign-1" is not this cluster's (never touched); "leaving" is already stopping.
  ASSERT_TRUE(p.Terminate({"mig-x2", "bare-1", "foreign-1", "mig-x1", "leaving"}).ok());
  auto deletes = Calls("POST", "/deleteInstances");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/deleteInstances");
  EXPECT_EQ(deletes[0].body["instances"],
            json({"zones/us-central1-a/instances/mig-x1", "zones/us-central1-a/instances/mig-x2"}));
  auto bare = Calls("DELETE", "/instances/bare-1");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].path, "projects/proj/zones/us-central1-a/instances/bare-1");
  EXPECT_EQ(Calls("DELETE", "").size(), 1u);
  for (const TransportRequest& r : transport_.requests) {
    EXPECT_EQ(r.url.find("foreign-1"), std::string::npos);
    EXPECT_EQ(r.url.find("leaving"), std::string::npos);
  }
}

TEST_F(GcpProviderTest, PreemptionsFromTheOperationsList) {
  GcpProvider& p = Provider(MigPools());
  json ops = json::array();
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA, {InstanceResource("spot-1", kZoneA, "a2-highgpu-1g", "prod", "a100", true)}}}));
    }
    if (c.path.ends_with("/operations")) {
      EXPECT_EQ(c.Q("filter"), "operationType = \"compute.instances.preempted\"");
      if (c.path.find(kZoneA) == std::string::npos) return Ok({{"items", json::array()}});
      return Ok({{"kind", "compute#operationList"}, {"items", ops}});
    }
    return HttpError(404, "notFound", "not found");
  };
  ASSERT_TRUE(p.ListInstances().ok());
  auto none = p.PollInterruptions();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  json preempted =
      Operation("systemevent-1796400100000-spot-1", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/spot-1");
  preempted["insertTime"] = "2026-12-04T16:01:40.000Z";
  json foreign =
      Operation("systemevent-2", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/someone-elses");
  foreign["insertTime"] = "2026-12-04T16:01:40.000Z";
  ops = {preempted, foreign};
  auto notices = p.PollInterruptions();
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_EQ((*notices)[0].instance_id, "spot-1");
  EXPECT_EQ((*notices)[0].notice_time, FromUnixSeconds(1'796'400'100));
  EXPECT_EQ((*notices)[0].deadline, FromUnixSeconds(1'796'400'130));
  EXPECT_FALSE((*notices)[0].rebalance);
  // Reported once.
  EXPECT_TRUE(p.PollInterruptions()->empty());
  EXPECT_TRUE(p.SpotPrices(FromUnixSeconds(0))->empty());
}

// After a restart the first poll may come before the inventory is listed: a
// preemption of the last minutes names an instance the provider does not
// know yet. It is not taken for another cluster's and forgotten: once the
// instances are listed, the next poll reports it.
TEST_F(GcpProviderTest, APreemptionSeenBeforeTheFirstListingIsReportedOnceTheInstanceIsKnown) {
  GcpProvider& p = Provider(MigPools());
  clock_.Advance(Seconds(100));
  json preempted =
      Operation("systemevent-1796400040000-spot-1", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/spot-1");
  preempted["insertTime"] = FormatRfc3339(clock_.WallNow() - Seconds(60));
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA, {InstanceResource("spot-1", kZoneA, "a2-highgpu-1g", "prod", "a100", true)}}}));
    }
    if (c.path.ends_with("/operations")) {
      if (c.path.find(kZoneA) == std::string::npos) return Ok({{"items", json::array()}});
      return Ok({{"kind", "compute#operationList"}, {"items", json::array({preempted})}});
    }
    return HttpError(404, "notFound", "not found");
  };
  auto before = p.PollInterruptions();
  ASSERT_TRUE(before.ok()) << before.error().ToString();
  EXPECT_TRUE(before->empty());
  ASSERT_TRUE(p.ListInstances().ok());
  auto after = p.PollInterruptions();
  ASSERT_TRUE(after.ok()) << after.error().ToString();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].instance_id, "spot-1");
  EXPECT_TRUE(p.PollInterruptions()->empty());  // once
}

}  // namespace
}  // namespace gpuscaler::cloud::gcp_provider_instances_test
