// GcpProvider with managed instance group pools, against a fake transport:
// createInstances of named instances followed until they run, a zone without
// capacity given back for the next one, and a gang that does not come up whole
// given back and tried in the next offering.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/gcp_provider.h"
#include "tests/cloud/gcp_provider_fixture.h"

namespace gpuscaler::cloud::gcp_provider_groups_test {
namespace {

using nlohmann::json;
using gcp_provider_testing::Call;
using gcp_provider_testing::GcpProviderTest;
using gcp_provider_testing::HttpError;
using gcp_provider_testing::IsVersion5Uuid;
using gcp_provider_testing::kEndpoint;
using gcp_provider_testing::kZoneA;
using gcp_provider_testing::kZoneB;
using gcp_provider_testing::Offer;
using gcp_provider_testing::Ok;
using gcp_provider_testing::Operation;
using gcp_provider_testing::Parse;

// A managed instance group pool: createInstances with named instances, a
// requestId, the operation waited for, the new instances followed.
TEST_F(GcpProviderTest, MigLaunchCreatesNamedInstancesAndFollowsThem) {
  GcpProvider& p = Provider(MigPools());
  std::vector<std::string> created;
  int list_calls = 0;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    EXPECT_EQ(HeaderValue(r.headers, "Authorization"), "Bearer ya29.test");
    Call c = Parse(r);
    if (c.path.ends_with("/listManagedInstances")) {
      json managed = json::array();
      if (c.path.find("gke-ml-a100-a") != std::string::npos) {
        ++list_calls;
        for (const std::string& n : created) {
          json m = {{"instance", std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/" + n},
                    {"name", n},
                    {"currentAction", list_calls > 2 ? "NONE" : "CREATING"}};
          if (list_calls > 2) m["instanceStatus"] = "RUNNING";
          managed.push_back(m);
        }
      }
      return Ok({{"managedInstances", managed}});
    }
    if (c.path.ends_with("/createInstances")) {
      for (const json& i : c.body["instances"]) created.push_back(i["name"]);
      return Ok(Operation("operation-create-1", kZoneA, "compute.instanceGroupManagers.createInstances",
                          "RUNNING"));
    }
    if (c.path.ends_with("/operations/operation-create-1/wait")) {
      return Ok(
          Operation("operation-create-1", kZoneA, "compute.instanceGroupManagers.createInstances", "DONE"));
    }
    return HttpError(404, "notFound", "The resource '" + c.path + "' was not found");
  };
  const LaunchRequest req = Request("a100", 2, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)});
  auto result = p.Launch(req);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  EXPECT_TRUE(result->errors.empty());
  const std::string n0 = GcpProvider::InstanceName("prod", req.idempotency_token, 0);
  const std::string n1 = GcpProvider::InstanceName("prod", req.idempotency_token, 1);
  EXPECT_EQ(result->instances[0].instance_id, n0);
  EXPECT_EQ(result->instances[1].instance_id, n1);
  EXPECT_EQ(result->instances[0].state, InstanceState::kRunning);
  EXPECT_EQ(result->instances[0].offering.Key(), "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(result->instances[0].tags.at(kClusterTag), "prod");

  auto creates = Calls("POST", "/createInstances");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/createInstances");
  EXPECT_TRUE(IsVersion5Uuid(creates[0].Q("requestId"))) << creates[0].Q("requestId");
  const json& first = creates[0].body["instances"][0];
  EXPECT_EQ(first["name"], n0);
  EXPECT_EQ(first["preservedState"]["metadata"]["gpuscaler-intent"], req.idempotency_token);
  EXPECT_EQ(first["preservedState"]["metadata"]["gpuscaler-pool"], "a100");
  // Waited on the operation, then followed listManagedInstances until RUNNING.
  EXPECT_EQ(Calls("POST", "/operations/operation-create-1/wait").size(), 1u);
  EXPECT_GE(list_calls, 3);

  // The same token again (a retry, or a restarted process replaying the
  // intent): the instances are found, nothing is created.
  auto again = p.Launch(req);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->instances.size(), 2u);
  EXPECT_EQ(Calls("POST", "/createInstances").size(), 1u);
  // A fresh provider (a restart) finds them too.
  GcpProviderOptions restarted = MigPools();
  restarted.cluster_name = "prod";
  restarted.project = "proj";
  restarted.region = "us-central1";
  GcpProvider fresh(restarted, *client_);
  auto replayed = fresh.Launch(req);
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(replayed->instances.size(), 2u);
  EXPECT_EQ(Calls("POST", "/createInstances").size(), 1u);
}

// A zone without capacity: the group's instances show lastAttempt.errors;
// they are taken out of the group and the next zone is tried.
TEST_F(GcpProviderTest, MigZoneExhaustionCancelsAndFallsBack) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  std::map<std::string, std::vector<std::string>>& created = migs.created;
  std::vector<std::string>& deleted = migs.deleted;
  ServeMigs(&migs, [](const std::string& mig, size_t, const std::string& n) {
    json m = {{"name", n}, {"currentAction", "CREATING"}};
    if (mig == "a") {
      m["lastAttempt"] = {
          {"errors",
           {{"errors",
             {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"},
               {"message",
                "The zone 'projects/proj/zones/us-central1-a' does not have enough resources "
                "available to fulfill the request.  Try a different zone, or try again later."}}}}}}};
    } else {
      m["instanceStatus"] = "PROVISIONING";
      m["currentAction"] = "NONE";
    }
    return m;
  });
  auto result = p.Launch(Request("a100", 2,
                                 {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot),
                                  Offer("a2-highgpu-1g", kZoneB, CapacityType::kSpot)}));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  for (const Instance& i : result->instances) EXPECT_EQ(i.offering.zone, kZoneB);
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].offering_key, "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(result->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(result->errors[0].error.message().find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos);
  // Exactly the failed instances were taken out of group a.
  EXPECT_EQ(deleted, created["a"]);
  auto deletes = Calls("POST", "/deleteInstances");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/deleteInstances");
  // Zone b's names are other slots than the cancelled ones.
  for (const std::string& n : created["b"]) {
    EXPECT_EQ(std::find(created["a"].begin(), created["a"].end(), n), created["a"].end());
  }
}

// A gang into a managed group (createInstances has no all-or-nothing form):
// one member of three fails, so the two that came up are deleted as well and
// nothing is returned; the error says so. The next zone then gets all three.
TEST_F(GcpProviderTest, AGangIntoAManagedGroupThatDoesNotComeUpWholeIsGivenBack) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  std::map<std::string, std::vector<std::string>>& created = migs.created;
  std::vector<std::string>& deleted = migs.deleted;
  ServeMigs(&migs, [](const std::string& mig, size_t i, const std::string& n) {
    json m = {{"name", n}};
    if (mig == "a" && i == 2) {
      m["lastAttempt"] = {
          {"errors", {{"errors", {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"}, {"message", "no room"}}}}}}};
    } else {
      m["instanceStatus"] = "RUNNING";
    }
    return m;
  });
  LaunchRequest gang = Request("a100", 3, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand)});
  gang.all_or_nothing = true;
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_TRUE(result->instances.empty()) << "a partial gang is never kept";
  EXPECT_EQ(deleted, created["a"]) << "all three given back, the two running ones too";
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(result->errors[0].error.message().find(
                "a gang needs all 3 nodes; 2 came up within 20 s (1 failed), and "
                "every one of them is given back"),
            std::string::npos)
      << result->errors[0].error.message();

  gang.idempotency_token = "token-2";
  gang.offerings = {Offer("a2-highgpu-1g", kZoneB, CapacityType::kOnDemand)};
  result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->instances.size(), 3u) << "whole in zone b";
}

// The give-back is one offering's failure: the same Launch goes on to the
// next offering (a gang's fallbacks), which gets the whole gang.
TEST_F(GcpProviderTest, AGangGivenBackInOneGroupFallsBackToTheNextOfferingInTheSameLaunch) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  ServeMigs(&migs, [](const std::string& mig, size_t i, const std::string& n) {
    json m = {{"name", n}};
    if (mig == "a" && i == 0) {
      m["lastAttempt"] = {{"errors", {{"errors", {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"}, {"message", "no room"}}}}}}};
    } else {
      m["instanceStatus"] = "RUNNING";
    }
    return m;
  });
  LaunchRequest gang = Request("a100", 2,
                               {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand),
                                Offer("a2-highgpu-1g", kZoneB, CapacityType::kOnDemand)});
  gang.all_or_nothing = true;
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  for (const Instance& i : result->instances) EXPECT_EQ(i.offering.zone, kZoneB);
  EXPECT_EQ(migs.deleted, migs.created["a"]) << "both of group a's given back";
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].offering_key, "a2-highgpu-1g/us-central1-a/on-demand");
}

}  // namespace
}  // namespace gpuscaler::cloud::gcp_provider_groups_test
