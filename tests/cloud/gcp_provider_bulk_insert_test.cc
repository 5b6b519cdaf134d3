// GcpProvider with bare-instance pools, against a fake transport: bulkInsert of
// labelled Spot or on-demand VMs, a gang's all-or-nothing bulkInsert under its
// compact placement policy (and the policies it refuses), and an operation
// waited for no longer than operation_timeout.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/gcp_provider.h"
#include "tests/cloud/gcp_provider_fixture.h"

namespace gpuscaler::cloud::gcp_provider_bulk_insert_test {
namespace {

using nlohmann::json;
using gcp_provider_testing::Aggregated;
using gcp_provider_testing::Call;
using gcp_provider_testing::GcpProviderTest;
using gcp_provider_testing::HttpError;
using gcp_provider_testing::InstanceResource;
using gcp_provider_testing::IsVersion5Uuid;
using gcp_provider_testing::kEndpoint;
using gcp_provider_testing::kZoneA;
using gcp_provider_testing::Offer;
using gcp_provider_testing::Ok;
using gcp_provider_testing::Operation;
using gcp_provider_testing::Parse;

// A bare pool: bulkInsert of named Spot VMs with labels and metadata.
TEST_F(GcpProviderTest, BulkInsertSpotVmsWithLabels) {
  GcpProvider& p = Provider(BarePools());
  json made = json::array();
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      const json& props = c.body["instanceProperties"];
      json items = json::array();
      for (const auto& [k, v] : props["metadata"]["items"].items()) items.push_back(v);
      for (const auto& [name, v] : c.body["perInstanceProperties"].items()) {
        json inst = InstanceResource(name, kZoneA, "a2-highgpu-1g", props["labels"]["gpuscaler-cluster"],
                                     props["labels"]["gpuscaler-pool"], true, "PROVISIONING", items);
        inst["labels"]["gpuscaler-intent"] = props["labels"]["gpuscaler-intent"];
        made.push_back(inst);
      }
      return Ok(Operation("op-bulk", kZoneA, "bulkInsert", "DONE"));
    }
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated({{kZoneA, std::vector<json>(made.begin(), made.end())}}));
    }
    return HttpError(404, "notFound", "not found");
  };
  const LaunchRequest req = Request("l4-spot", 3, {Offer("g2-standard-8", kZoneA, CapacityType::kSpot)});
  auto result = p.Launch(req);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 3u);
  auto bulk = Calls("POST", "/instances/bulkInsert");
  ASSERT_EQ(bulk.size(), 1u);
  EXPECT_EQ(bulk[0].path, "projects/proj/zones/us-central1-a/instances/bulkInsert");
  EXPECT_FALSE(bulk[0].Q("requestId").empty());
  const json& b = bulk[0].body;
  EXPECT_EQ(b["count"], "3");  // int64: a JSON string
  EXPECT_EQ(b["minCount"], "1");
  EXPECT_EQ(b["sourceInstanceTemplate"], "global/instanceTemplates/gpu-node");
  EXPECT_EQ(b["perInstanceProperties"].size(), 3u);
  EXPECT_TRUE(
      b["perInstanceProperties"].contains(GcpProvider::InstanceName("prod", req.idempotency_token, 2)));
  const json& props = b["instanceProperties"];
  EXPECT_EQ(props["machineType"], "g2-standard-8");
  EXPECT_EQ(props["scheduling"]["provisioningModel"], "SPOT");
  EXPECT_EQ(props["scheduling"]["instanceTerminationAction"], "DELETE");
  EXPECT_EQ(props["scheduling"]["onHostMaintenance"], "TERMINATE");
  EXPECT_EQ(props["labels"]["gpuscaler-cluster"], "prod");
  EXPECT_EQ(props["labels"]["gpuscaler-pool"], "l4-spot");
  EXPECT_EQ(props["labels"]["gpuscaler-intent"], GcpProvider::IntentHash(req.idempotency_token));
  // The created instances were read back by their intent label.
  auto lists = Calls("GET", "aggregated/instances");
  ASSERT_FALSE(lists.empty());
  EXPECT_EQ(lists.back().Q("filter"),
            "labels.gpuscaler-intent = \"" + GcpProvider::IntentHash(req.idempotency_token) + "\"");
  EXPECT_EQ(result->instances[0].tags.at(kIntentTag), req.idempotency_token);

  // On-demand: STANDARD, no termination action.
  made = json::array();
  ASSERT_TRUE(
      p.Launch(Request("l4", 1, {Offer("g2-standard-8", kZoneA, CapacityType::kOnDemand)}, "tok-2")).ok());
  const json od = Calls("POST", "/instances/bulkInsert").back().body["instanceProperties"]["scheduling"];
  EXPECT_EQ(od["provisioningModel"], "STANDARD");
  EXPECT_FALSE(od.contains("instanceTerminationAction"));
}

// A gang's bulkInsert: minCount = count (all or none), and with a placement
// group the compact placement policy, created first when the region has
// none (a regional operation, waited for) and named in instanceProperties.
TEST_F(GcpProviderTest, AGangsBulkInsertIsAllOrNothingUnderItsCompactPlacementPolicy) {
  GcpProvider& p = Provider(BarePools());
  bool policy_exists = false;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    const std::string policies = "projects/proj/regions/us-central1/resourcePolicies";
    if (c.method == "GET" && c.path == policies + "/train-gangs") {
      if (!policy_exists)
        return HttpError(404, "notFound", "The resource '" + policies + "/train-gangs' was not found");
      return Ok({{"kind", "compute#resourcePolicy"},
                 {"name", "train-gangs"},
                 {"groupPlacementPolicy", {{"collocation", "COLLOCATED"}}},
                 {"status", "READY"}});
    }
    if (c.method == "POST" && c.path == policies) {
      policy_exists = true;
      json op = Operation("op-policy", kZoneA, "insert", "RUNNING", policies + "/train-gangs");
      op.erase("zone");
      op["region"] = std::string(kEndpoint) + "projects/proj/regions/us-central1";
      return Ok(op);
    }
    if (c.path == "projects/proj/regions/us-central1/operations/op-policy/wait") {
      json op = Operation("op-policy", kZoneA, "insert", "DONE", policies + "/train-gangs");
      op.erase("zone");
      op["region"] = std::string(kEndpoint) + "projects/proj/regions/us-central1";
      return Ok(op);
    }
    if (c.path.ends_with("/instances/bulkInsert"))
      return Ok(Operation("op-bulk", kZoneA, "bulkInsert", "DONE"));
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(404, "notFound", "not found");
  };
  LaunchRequest gang = Request("train", 4, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)});
  gang.all_or_nothing = true;
  gang.placement_group = "train-gangs";
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_TRUE(result->instances.empty()) << "none came: the zone had no room for all four";

  auto inserts = Calls("POST", "/resourcePolicies");
  ASSERT_EQ(inserts.size(), 1u);
  EXPECT_TRUE(IsVersion5Uuid(inserts[0].Q("requestId"))) << inserts[0].Q("requestId");
  EXPECT_EQ(inserts[0].body["name"], "train-gangs");
  EXPECT_EQ(inserts[0].body["groupPlacementPolicy"]["collocation"], "COLLOCATED");
  EXPECT_EQ(Calls("POST", "/operations/op-policy/wait").size(), 1u) << "the insert was waited for";
  auto bulk = Calls("POST", "/instances/bulkInsert");
  ASSERT_EQ(bulk.size(), 1u);
  EXPECT_EQ(bulk[0].body["count"], "4");
  EXPECT_EQ(bulk[0].body["minCount"], "4");
  EXPECT_EQ(bulk[0].body["instanceProperties"]["resourcePolicies"], json::array({"train-gangs"}));

  // The policy is known now: the next gang reads nothing and makes nothing.
  gang.idempotency_token = "prod-inst1-d43-l0";
  ASSERT_TRUE(p.Launch(gang).ok());
  EXPECT_EQ(Calls("POST", "/resourcePolicies").size(), 1u);
  EXPECT_EQ(Calls("GET", "/resourcePolicies/train-gangs").size(), 1u);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").back().body["minCount"], "4");

  // A lone node's launch: minCount 1, no policy.
  ASSERT_TRUE(
      p.Launch(Request("train", 2, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)}, "tok-lone")).ok());
  const json lone = Calls("POST", "/instances/bulkInsert").back().body;
  EXPECT_EQ(lone["minCount"], "1");
  EXPECT_FALSE(lone["instanceProperties"].contains("resourcePolicies"));
}

// A policy of that name that is no compact placement is refused before
// anything is created; a pool with groups cannot take a placement group.
TEST_F(GcpProviderTest, APlacementGroupThatIsNoCompactPolicyOrOnAGroupPoolIsAConfigError) {
  GcpProviderOptions o = BarePools();
  o.pools["a100"].migs = {{kZoneA, "gke-ml-a100-a"}};
  GcpProvider& p = Provider(o);
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/regions/us-central1/resourcePolicies/nightly") {
      return Ok({{"name", "nightly"}, {"snapshotSchedulePolicy", json::object()}, {"status", "READY"}});
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    if (c.path.ends_with("/listManagedInstances")) return Ok(json::object());
    return HttpError(404, "notFound", "not found");
  };
  LaunchRequest gang = Request("train", 2, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)});
  gang.all_or_nothing = true;
  gang.placement_group = "nightly";
  auto refused = p.Launch(gang);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(refused.error().message().find("not a compact placement policy"), std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(Calls("POST", "/instances/bulkInsert").empty());

  gang.pool = "a100";
  auto grouped = p.Launch(gang);
  ASSERT_FALSE(grouped.ok());
  EXPECT_EQ(grouped.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(grouped.error().message().find("placement_group needs bare instances"), std::string::npos)
      << grouped.error().message();
  EXPECT_TRUE(Calls("POST", "/createInstances").empty());
}

// An operation that stays RUNNING: waited for at most operation_timeout
// (wait, then get), and the accepted instances are returned as pending.
TEST_F(GcpProviderTest, OperationWaitIsBounded) {
  GcpProvider& p = Provider(BarePools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    if (c.path.find("/operations/op-slow") != std::string::npos || c.path.ends_with("/bulkInsert")) {
      return Ok(Operation("op-slow", kZoneA, "bulkInsert", "RUNNING"));
    }
    return HttpError(404, "notFound", "not found");
  };
  const WallTime start = clock_.WallNow();
  auto result = p.Launch(Request("l4", 2, {Offer("g2-standard-8", kZoneA, CapacityType::kSpot)}));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->instances.size(), 2u);
  EXPECT_TRUE(result->errors.empty());
  EXPECT_EQ(result->instances[0].state, InstanceState::kPending);
  EXPECT_FALSE(Calls("POST", "/operations/op-slow/wait").empty());
  EXPECT_EQ(Calls("GET", "/operations/op-slow").size(), 1u);  // the final read
  EXPECT_LE(clock_.WallNow() - start, Seconds(25));
}

}  // namespace
}  // namespace gpuscaler::cloud::gcp_provider_bulk_insert_test
