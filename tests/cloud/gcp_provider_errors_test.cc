// GcpProvider's errors, against a fake transport: Compute Engine's error reasons
// classified, QUOTA_EXCEEDED blocking the quota's offerings until the quota
// changes (or quota_recheck passes), throttling retried with backoff, an auth
// error ending the launch, and configuration errors that name the pool.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/gcp_provider.h"
#include "tests/cloud/gcp_provider_fixture.h"

namespace gpuscaler::cloud::gcp_provider_errors_test {
namespace {

using nlohmann::json;
using gcp_provider_testing::Aggregated;
using gcp_provider_testing::Call;
using gcp_provider_testing::GcpProviderTest;
using gcp_provider_testing::HttpError;
using gcp_provider_testing::kZoneA;
using gcp_provider_testing::kZoneB;
using gcp_provider_testing::Offer;
using gcp_provider_testing::Ok;
using gcp_provider_testing::Operation;
using gcp_provider_testing::Parse;

TEST(GcpErrors, ClassificationTable) {
  EXPECT_EQ(ClassifyGcpError("ZONE_RESOURCE_POOL_EXHAUSTED", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("QUOTA_EXCEEDED", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("quotaExceeded", 403), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("rateLimitExceeded", 403), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("userRateLimitExceeded", 403), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("", 429), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("backendError", 503), ErrorCategory::kTransient);
  EXPECT_EQ(ClassifyGcpError("", 502), ErrorCategory::kTransient);
  EXPECT_EQ(ClassifyGcpError("forbidden", 403), ErrorCategory::kAuth);
  EXPECT_EQ(ClassifyGcpError("authError", 401), ErrorCategory::kAuth);
  EXPECT_EQ(ClassifyGcpError("notFound", 404), ErrorCategory::kNotFound);
  EXPECT_EQ(ClassifyGcpError("invalid", 400), ErrorCategory::kConfig);

  const Error e = GcpErrorFromResponse("POST x", 403,
                                       HttpError(403, "forbidden",
                                                 "Required 'compute.instances.create' permission for "
                                                 "'projects/proj/zones/us-central1-a/instances/x'")
                                           .body);
  EXPECT_EQ(e.category(), ErrorCategory::kAuth);
  EXPECT_NE(e.message().find("HTTP 403"), std::string::npos);
  EXPECT_NE(e.message().find("compute.instances.create"), std::string::npos);

  // Quota metric from the message, or from errorDetails.
  auto items = ParseGcpErrorItems(
      json{{"errors",
            {{{"code", "QUOTA_EXCEEDED"},
              {"message", "Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 16.0 in region us-central1."}},
             {{"code", "QUOTA_EXCEEDED"},
              {"message", "Quota exceeded"},
              {"errorDetails",
               {{{"quotaInfo", {{"metricName", "compute.googleapis.com/gpus_per_gpu_family"}}}}}}}}}});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].quota_metric, "NVIDIA_A100_GPUS");
  EXPECT_EQ(items[1].quota_metric, "compute.googleapis.com/gpus_per_gpu_family");
}

// QUOTA_EXCEEDED: a capacity error for the offering, and the quota blocks
// the region's offerings of that family and capacity type without another
// create call until regions.get shows the quota changed.
TEST_F(GcpProviderTest, QuotaExceededBlocksWithoutRetryingUntilTheQuotaChanges) {
  GcpProvider& p = Provider(BarePools());
  double limit = 8;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      if (limit < 16) {
        return Ok(Operation(
            "op-bulk", kZoneA, "bulkInsert", "DONE", "",
            {{{"code", "QUOTA_EXCEEDED"},
              {"message",
               "Quota 'PREEMPTIBLE_NVIDIA_A100_GPUS' exceeded.  Limit: 8.0 in region us-central1."}}}));
      }
      return Ok(Operation("op-bulk-2", kZoneA, "bulkInsert", "DONE"));
    }
    if (c.path == "projects/proj/regions/us-central1") {
      return Ok({{"kind", "compute#region"},
                 {"name", "us-central1"},
                 {"quotas",
                  {{{"metric", "CPUS"}, {"limit", 2400.0}, {"usage", 96.0}},
                   {{"metric", "PREEMPTIBLE_NVIDIA_A100_GPUS"}, {"limit", limit}, {"usage", 8.0}}}}});
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(404, "notFound", "not found");
  };
  auto first = p.Launch(Request("a100", 2, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}, "t1"));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_TRUE(first->instances.empty());
  ASSERT_EQ(first->errors.size(), 1u);
  EXPECT_EQ(first->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(first->errors[0].error.message().find("QUOTA_EXCEEDED"), std::string::npos);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);

  // Ten more launches of the family in the region, other zone and type
  // included: no create call at all.
  for (int i = 0; i < 10; ++i) {
    auto again = p.Launch(Request("a100", 1,
                                  {Offer("a2-highgpu-2g", kZoneB, CapacityType::kSpot),
                                   Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)},
                                  "t-" + std::to_string(i)));
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->errors.size(), 2u);
    EXPECT_EQ(again->errors[0].error.category(), ErrorCategory::kCapacity);
    EXPECT_NE(again->errors[0].error.message().find("until the quota changes"), std::string::npos);
    EXPECT_NE(again->errors[0].error.message().find("usage 8 of limit 8"), std::string::npos);
  }
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  EXPECT_EQ(p.quota_blocked_offerings(), 20);
  // Another family, or on-demand, is not blocked.
  ASSERT_TRUE(
      p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand)}, "od")).ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 2u);

  // The quota is raised: the next launch goes out again.
  limit = 16;
  auto raised =
      p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}, "t-raised"));
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 3u);
}

// Without regions.get (no permission, or an emulator without it) the block
// lasts quota_recheck.
TEST_F(GcpProviderTest, AQuotaBlockThatCannotBeReadBackEndsAfterQuotaRecheck) {
  GcpProviderOptions o = BarePools();
  o.quota_recheck = std::chrono::seconds(600);
  GcpProvider& p = Provider(o);
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      return Ok(
          Operation("op-bulk", kZoneA, "bulkInsert", "DONE", "",
                    {{{"code", "QUOTA_EXCEEDED"},
                      {"message", "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 1.0 in region us-central1."}}}));
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(403, "forbidden",
                     "Required 'compute.regions.get' permission for 'projects/proj/regions/us-central1'");
  };
  auto launch = [&](const std::string& token) {
    return p.Launch(Request("l4", 1, {Offer("g2-standard-8", kZoneA, CapacityType::kOnDemand)}, token));
  };
  ASSERT_TRUE(launch("q1").ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  clock_.Advance(Seconds(599));
  auto blocked = launch("q2");
  ASSERT_TRUE(blocked.ok());
  ASSERT_EQ(blocked->errors.size(), 1u);
  EXPECT_NE(blocked->errors[0].error.message().find("quota NVIDIA_L4_GPUS in us-central1 exhausted"),
            std::string::npos)
      << blocked->errors[0].error.message();
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  clock_.Advance(Seconds(1));
  ASSERT_TRUE(launch("q3").ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 2u);
}

TEST_F(GcpProviderTest, ThrottlingIsRetriedWithBackoffAndAuthFailsTheLaunch) {
  GcpProvider& p = Provider(BarePools());
  int throttles = 2;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      if (throttles-- > 0) return HttpError(403, "rateLimitExceeded", "Rate Limit Exceeded");
      return Ok(Aggregated({}));
    }
    if (c.path.ends_with("/instances/bulkInsert")) {
      return HttpError(
          403, "forbidden",
          "Required 'compute.instances.create' permission for 'projects/proj/zones/us-central1-a'");
    }
    return HttpError(404, "notFound", "not found");
  };
  auto result = p.Launch(Request("a100", 1,
                                 {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot),
                                  Offer("a2-highgpu-1g", kZoneB, CapacityType::kSpot)}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(result.error().message().find("compute.instances.create"), std::string::npos);
  EXPECT_EQ(result.error().message().find("ya29"), std::string::npos);
  // Two throttled answers retried (with a pause), then the auth error stops
  // the launch before the second offering.
  EXPECT_EQ(client_->retries(), 2);
  EXPECT_EQ(sleeps_.size(), 2u);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);

  // 503 on every try: kTransient after max_attempts.
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return HttpError(503, "backendError", "Backend Error");
  };
  auto down = p.ListInstances();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(down.error().message().find("after 3 attempts"), std::string::npos);
  // 429 on every try: kThrottled.
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return HttpError(429, "rateLimitExceeded", "Too Many Requests");
  };
  EXPECT_EQ(p.ListInstances().error().category(), ErrorCategory::kThrottled);
}

TEST_F(GcpProviderTest, ConfigurationErrorsNameThePool) {
  GcpProvider& p = Provider();  // no pools, no instance template
  auto none = p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(none.error().message().find("pool 'a100'"), std::string::npos);

  GcpProvider& q = Provider(MigPools());
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return Ok({{"managedInstances", json::array()}});
  };
  auto no_group =
      q.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", "us-central1-f", CapacityType::kSpot)}));
  ASSERT_FALSE(no_group.ok());
  EXPECT_EQ(no_group.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(no_group.error().message().find("no managed instance group in zone us-central1-f"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscaler::cloud::gcp_provider_errors_test
