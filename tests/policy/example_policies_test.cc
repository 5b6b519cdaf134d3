// The example policies in policies/: every file loads, alone and against its
// cloud's catalog, and the inference example keeps its on-demand floor and
// its New York business-hours schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "gpuscaler/policy/schedule.h"
#include "policy/loader_test_support.h"

namespace gpuscaler::example_policies_test {
namespace {

using testing::Join;

std::vector<std::filesystem::path> ExamplePolicies() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(GPUSCALER_SOURCE_DIR) / "policies")) {
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ExamplePolicies, EveryFileInPoliciesLoads) {
  const auto files = ExamplePolicies();
  ASSERT_GE(files.size(), 3u);
  bool saw_json = false;
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    saw_json = saw_json || f.extension() == ".json";
    const PolicyLoadResult r = LoadPolicyFile(f.string());
    EXPECT_TRUE(r.ok()) << Join(r.problems);
    EXPECT_FALSE(r.policy.pools.empty());
    EXPECT_FALSE(r.policy.classes.empty());
  }
  EXPECT_TRUE(saw_json);
}

// The examples for GKE (`*-gke.*`) name Compute Engine machine series and
// regions; the others name AWS's.
std::string CatalogOfExample(const std::filesystem::path& policy) {
  const bool gke = policy.stem().string().ends_with("-gke");
  return std::string(GPUSCALER_SOURCE_DIR) + (gke ? "/config/catalogs/gcp.yaml" : "/config/catalogs/aws.yaml");
}

TEST(ExamplePolicies, EveryFileInPoliciesLoadsAgainstItsCloudsCatalog) {
  int gke = 0;
  for (const auto& f : ExamplePolicies()) {
    SCOPED_TRACE(f.string());
    const std::string catalog_path = CatalogOfExample(f);
    gke += catalog_path.ends_with("gcp.yaml") ? 1 : 0;
    const Result<Catalog> catalog = LoadCatalogFile(catalog_path);
    ASSERT_TRUE(catalog.ok()) << catalog.error().message();
    const PolicyLoadResult r = LoadPolicyFile(f.string(), &*catalog);
    EXPECT_TRUE(r.ok()) << Join(r.problems);
  }
  EXPECT_GE(gke, 1) << "no GKE example policy";
}

TEST(ExamplePolicies, InferenceKeepsAnOnDemandFloor) {
  const PolicyLoadResult r =
      LoadPolicyFile(std::string(GPUSCALER_SOURCE_DIR) + "/policies/inference.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const NodePoolPolicy* floor = r.policy.FindPool("serve-on-demand");
  ASSERT_NE(floor, nullptr);
  EXPECT_GT(floor->min_nodes, 0);
  EXPECT_EQ(floor->capacity_types, std::vector<CapacityType>{CapacityType::kOnDemand});
  const WorkloadClassPolicy* online = r.policy.FindClass("online");
  ASSERT_NE(online, nullptr);
  EXPECT_LE(online->max_spot_share, 0.3);
}

TEST(ExamplePolicies, InferenceRaisesItsFloorInNewYorkBusinessHours) {
  const PolicyLoadResult r = LoadPolicyFile(std::string(GPUSCALER_SOURCE_DIR) + "/policies/inference.yaml");
  ASSERT_TRUE(r.ok()) << Join(r.problems);
  const NodePoolPolicy* floor = r.policy.FindPool("serve-on-demand");
  const NodePoolPolicy* burst = r.policy.FindPool("serve-spot");
  ASSERT_NE(floor, nullptr);
  ASSERT_NE(burst, nullptr);
  const auto limits_at = [&](const NodePoolPolicy& pool, const char* when) {
    WallTime t{};
    EXPECT_TRUE(ParseRfc3339(when, &t)) << when;
    return PoolLimitsAt(pool, SchedulesInForce(r.policy.scaling.schedules, t));
  };
  // Tuesday 2026-03-10 (EDT since the 8th): 08:00-18:00 New York is 12:00-22:00 UTC.
  EXPECT_EQ(limits_at(*floor, "2026-03-10T11:59:00Z").min_nodes, 3);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T12:00:00Z").min_nodes, 6);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T21:59:00Z").min_nodes, 6);
  EXPECT_EQ(limits_at(*floor, "2026-03-10T22:00:00Z").min_nodes, 3);
  // Friday 2026-03-06 (still EST): 13:00-23:00 UTC.
  EXPECT_EQ(limits_at(*floor, "2026-03-06T12:59:00Z").min_nodes, 3);
  EXPECT_EQ(limits_at(*floor, "2026-03-06T13:00:00Z").min_nodes, 6);
  // Saturday: the floor stays at 3.
  EXPECT_EQ(limits_at(*floor, "2026-03-07T15:00:00Z").min_nodes, 3);
  // Night in New York (00:00-05:59 EDT is 04:00-09:59 UTC): the burst pool adds nothing.
  EXPECT_EQ(limits_at(*burst, "2026-03-10T03:59:00Z").max_nodes, 40);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T04:00:00Z").max_nodes, 0);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T09:59:00Z").max_nodes, 0);
  EXPECT_EQ(limits_at(*burst, "2026-03-10T10:00:00Z").max_nodes, 40);
}

}  // namespace
}  // namespace gpuscaler::example_policies_test
