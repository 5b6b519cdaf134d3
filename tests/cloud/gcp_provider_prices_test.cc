// GcpProvider::SpotPrices against a fake transport answering
// services.skus.list of the Cloud Billing Catalog as Google documents it:
// every page is read, one price per (machine type, zone), the catalog is read
// at most once per refresh, and failures come back with their category.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/gcp_billing_catalog.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/model/clock.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud {
namespace {

using nlohmann::json;
using testing::FakeTransport;

constexpr const char* kComputeUrl = "http://compute.test/compute/v1/";
constexpr const char* kBillingUrl = "http://billing.test/v1/";

class BillingTestToken final : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) override { return AccessToken{"ya29.test", now + Seconds(3600)}; }
  std::string Name() const override { return "fixed"; }
};

json PageSku(const std::string& id, const std::string& description, const std::string& group,
             const std::string& unit, int64_t nanos, const std::string& effective) {
  return {{"name", "services/6F81-5844-456A/skus/" + id},
          {"skuId", id},
          {"description", description},
          {"category",
           {{"serviceDisplayName", "Compute Engine"},
            {"resourceFamily", "Compute"},
            {"resourceGroup", group},
            {"usageType", "Preemptible"}}},
          {"serviceRegions", {"us-central1", "us-east1"}},
          {"pricingInfo",
           json::array({{{"summary", ""},
                         {"pricingExpression",
                          {{"usageUnit", unit},
                           {"displayQuantity", 1},
                           {"tieredRates",
                            json::array({{{"startUsageAmount", 0},
                                          {"unitPrice",
                                           {{"currencyCode", "USD"}, {"units", "0"}, {"nanos", nanos}}}}})}}},
                         {"currencyConversionRate", 1},
                         {"effectiveTime", effective}}})},
          {"serviceProviderName", "Google"}};
}

// Google's error shape for a disabled API: no errors[], an ErrorInfo detail.
TransportResponse ServiceDisabled() {
  json error = {{"code", 403},
                {"message",
                 "Cloud Billing API has not been used in project 123456789 before or it is disabled. Enable "
                 "it by visiting "
                 "https://console.developers.google.com/apis/api/cloudbilling.googleapis.com/"
                 "overview?project=123456789 then "
                 "retry."},
                {"status", "PERMISSION_DENIED"},
                {"details", json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                                          {"reason", "SERVICE_DISABLED"},
                                          {"domain", "googleapis.com"}}})}};
  return {403, {{"Content-Type", "application/json"}}, json{{"error", error}}.dump()};
}

TransportResponse CatalogPage(const json& j) {
  return {200, {{"Content-Type", "application/json"}}, j.dump()};
}

InstanceType G2Type(const std::string& name, int vcpus, int64_t memory_gib, int gpus) {
  InstanceType t;
  t.name = name;
  t.family = "g2-standard";
  t.gpu_model = "NVIDIA-L4";
  t.vcpus = vcpus;
  t.memory_mib = memory_gib * 1024;
  t.gpu_count = gpus;
  return t;
}

class GcpProviderPricesTest : public ::testing::Test {
 protected:
  GcpProviderPricesTest() : clock_(FromUnixSeconds(1'796'400'000)) {
    // Two pages: the G2 core and RAM SKUs, then the L4 GPU SKU (and one the
    // provider has no use for).
    pages_ = {
        {{"skus",
          {PageSku("C", "Spot Preemptible G2 Instance Core running in Americas", "CPU", "h", 10000000,
                   "2026-12-04T06:00:00.123Z"),
           PageSku("R", "Spot Preemptible G2 Instance Ram running in Americas", "RAM", "GiBy.h", 1000000,
                   "2026-12-04T07:00:00Z")}},
         {"nextPageToken", "page-2"}},
        {{"skus",
          {PageSku("G", "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", "GPU", "h",
                   200000000, "2026-12-03T06:00:00Z"),
           PageSku("X", "Spot Preemptible E2 Instance Core running in Americas", "CPU", "h", 1000000,
                   "2026-12-04T08:00:00Z")}},
         {"nextPageToken", ""}},
    };
    transport_.handler = [this](const TransportRequest& r) -> Result<TransportResponse> {
      if (r.url.rfind(kBillingUrl, 0) != 0) return TransportResponse{404, {}, "{}"};
      if (next_error_) {
        TransportResponse e = *next_error_;
        next_error_.reset();
        return e;
      }
      return CatalogPage(r.url.find("pageToken=page-2") != std::string::npos ? pages_[1] : pages_[0]);
    };
  }

  GcpProvider& Provider(bool enabled = true, std::vector<InstanceType> types = {}) {
    auto make = [this](const char* endpoint) {
      GcpClientOptions c;
      c.endpoint = endpoint;
      c.retry.max_attempts = 2;
      return std::make_unique<GcpClient>(c, transport_, tokens_, clock_,
                                         [this](std::chrono::milliseconds) { clock_.Advance(Seconds(1)); });
    };
    compute_ = make(kComputeUrl);
    billing_ = make(kBillingUrl);
    GcpProviderOptions o;
    o.cluster_name = "prod";
    o.project = "proj";
    o.region = "us-central1";
    o.zones = {"us-central1-a"};
    o.billing_catalog.enabled = enabled;
    o.billing_catalog.refresh = Seconds(3600);
    o.billing_catalog.retry = Seconds(300);
    o.billing_catalog.machine_types = types.empty()
                                          ? std::vector<InstanceType>{G2Type("g2-standard-8", 8, 32, 1),
                                                                      G2Type("g2-standard-24", 24, 96, 2)}
                                          : types;
    o.billing_catalog.zones = {"us-central1-a", "us-central1-b"};
    provider_ = std::make_unique<GcpProvider>(o, *compute_, billing_.get());
    return *provider_;
  }

  // The catalog calls made so far (path after the endpoint, query decoded).
  std::vector<std::pair<std::string, QueryParams>> CatalogCalls() const {
    std::vector<std::pair<std::string, QueryParams>> out;
    for (const TransportRequest& r : transport_.requests) {
      const std::string rest = r.url.substr(std::string(kBillingUrl).size());
      const size_t q = rest.find('?');
      out.push_back(
          {rest.substr(0, q), q == std::string::npos ? QueryParams{} : DecodeForm(rest.substr(q + 1))});
    }
    return out;
  }

  static WallTime At(const std::string& text) {
    WallTime t;
    EXPECT_TRUE(ParseRfc3339(text, &t)) << text;
    return t;
  }

  ManualClock clock_;
  FakeTransport transport_;
  BillingTestToken tokens_;
  std::vector<json> pages_;
  std::optional<TransportResponse> next_error_;
  std::unique_ptr<GcpClient> compute_;
  std::unique_ptr<GcpClient> billing_;
  std::unique_ptr<GcpProvider> provider_;
};

TEST_F(GcpProviderPricesTest, ReadsEveryPageAndGivesEachMachineTypeItsPriceInEveryZone) {
  GcpProvider& p = Provider();
  Result<std::vector<SpotPrice>> prices = p.SpotPrices(clock_.WallNow() - Seconds(3600));
  ASSERT_TRUE(prices.ok()) << prices.error().message();

  const auto calls = CatalogCalls();
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& [path, query] : calls) {
    EXPECT_EQ(path, "services/6F81-5844-456A/skus");
    EXPECT_EQ(FormValue(query, "currencyCode").value_or(""), "USD");
    EXPECT_EQ(FormValue(query, "pageSize").value_or(""), "5000");
  }
  EXPECT_FALSE(FormValue(calls[0].second, "pageToken").has_value());
  EXPECT_EQ(FormValue(calls[1].second, "pageToken").value_or(""), "page-2");
  EXPECT_EQ(transport_.requests[0].headers[0].second, "Bearer ya29.test");

  // g2-standard-8: 8 x 0.01 + 32 x 0.001 + 0.2; g2-standard-24: 24 x 0.01 + 96 x 0.001 + 2 x 0.2.
  // Each at the latest effective time of its components (the RAM's), in both zones.
  ASSERT_EQ(prices->size(), 4u);
  const std::vector<std::pair<std::string, std::string>> want = {{"g2-standard-24", "us-central1-a"},
                                                                 {"g2-standard-24", "us-central1-b"},
                                                                 {"g2-standard-8", "us-central1-a"},
                                                                 {"g2-standard-8", "us-central1-b"}};
  for (size_t i = 0; i < want.size(); ++i) {
    const SpotPrice& s = (*prices)[i];
    SCOPED_TRACE(s.instance_type + " " + s.zone);
    EXPECT_EQ(std::make_pair(s.instance_type, s.zone), want[i]);
    EXPECT_EQ(s.capacity_type, CapacityType::kSpot);
    EXPECT_EQ(s.time, At("2026-12-04T07:00:00Z"));
    EXPECT_NEAR(s.usd_per_hour, s.instance_type == "g2-standard-8" ? 0.312 : 0.736, 1e-9);
  }
  EXPECT_EQ(p.billing_catalog_reads(), 1);
  EXPECT_TRUE(p.unpriced_machine_types().empty());
}

TEST_F(GcpProviderPricesTest, TheCatalogIsReadAtMostOncePerRefresh) {
  GcpProvider& p = Provider();
  ASSERT_TRUE(p.SpotPrices(clock_.WallNow()).ok());
  ASSERT_EQ(transport_.requests.size(), 2u);
  clock_.Advance(Seconds(3599));
  Result<std::vector<SpotPrice>> cached = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->size(), 4u);  // the last read's prices
  EXPECT_EQ(transport_.requests.size(), 2u);

  // The refresh is due: a new read sees the new price.
  pages_[0]["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] =
      20000000;
  pages_[0]["skus"][0]["pricingInfo"][0]["effectiveTime"] = "2026-12-05T06:00:00Z";
  clock_.Advance(Seconds(1));
  Result<std::vector<SpotPrice>> fresh = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(transport_.requests.size(), 4u);
  ASSERT_EQ(fresh->size(), 4u);
  EXPECT_EQ(fresh->back().instance_type, "g2-standard-8");
  EXPECT_NEAR(fresh->back().usd_per_hour, 0.392, 1e-9);
  EXPECT_EQ(fresh->back().time, At("2026-12-05T06:00:00Z"));
  EXPECT_EQ(p.billing_catalog_reads(), 2);
}

TEST_F(GcpProviderPricesTest, ADisabledBillingApiIsAnAuthErrorAndTheReadIsRetriedLater) {
  GcpProvider& p = Provider();
  next_error_ = ServiceDisabled();
  Result<std::vector<SpotPrice>> denied = p.SpotPrices(clock_.WallNow());
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(denied.error().message().find("HTTP 403"), std::string::npos) << denied.error().message();
  EXPECT_NE(denied.error().message().find("Cloud Billing API has not been used"), std::string::npos);
  EXPECT_NE(denied.error().message().find("Cloud Billing Catalog, the last prices stay in force"),
            std::string::npos);
  EXPECT_EQ(transport_.requests.size(), 1u);  // an auth error is not retried

  // Until the retry is due: no call, and no prices (there were none before).
  clock_.Advance(Seconds(299));
  Result<std::vector<SpotPrice>> quiet = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(quiet.ok());
  EXPECT_TRUE(quiet->empty());
  EXPECT_EQ(transport_.requests.size(), 1u);

  clock_.Advance(Seconds(1));
  Result<std::vector<SpotPrice>> enabled = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(enabled.ok());
  EXPECT_EQ(enabled->size(), 4u);
}

TEST_F(GcpProviderPricesTest, AFailedRefreshKeepsTheLastGoodPrices) {
  GcpProvider& p = Provider();
  ASSERT_TRUE(p.SpotPrices(clock_.WallNow()).ok());
  clock_.Advance(Seconds(3600));
  // The second page does not come: the whole read fails, nothing half-read is used.
  transport_.handler = [inner = transport_.handler](const TransportRequest& r) -> Result<TransportResponse> {
    if (r.url.find("pageToken=page-2") != std::string::npos) return Error::Transient("connection reset");
    return inner(r);
  };
  Result<std::vector<SpotPrice>> failed = p.SpotPrices(clock_.WallNow());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(failed.error().message().find("connection reset"), std::string::npos) << failed.error().message();

  Result<std::vector<SpotPrice>> kept = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 4u);
  EXPECT_NEAR(kept->back().usd_per_hour, 0.312, 1e-9);
  EXPECT_EQ(p.billing_catalog_reads(), 1);
}

TEST_F(GcpProviderPricesTest, AMachineTypeThatCannotBePricedFullyIsLeftOut) {
  InstanceType a2 = G2Type("a2-highgpu-1g", 12, 85, 1);
  a2.family = "a2-highgpu";
  a2.gpu_model = "NVIDIA-A100-SXM4-40GB";
  InstanceType c3 = G2Type("c3-standard-8", 8, 32, 0);
  c3.family = "c3-standard";
  GcpProvider& p = Provider(true, {a2, G2Type("g2-standard-8", 8, 32, 1), c3});
  Result<std::vector<SpotPrice>> prices = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(prices.ok());
  ASSERT_EQ(prices->size(), 2u);
  for (const SpotPrice& s : *prices) EXPECT_EQ(s.instance_type, "g2-standard-8");
  EXPECT_EQ(p.unpriced_machine_types(),
            (std::vector<std::string>{"c3-standard-8: machine family without known Spot SKUs",
                                      "a2-highgpu-1g: no Spot A2 core SKU for us-central1"}));
}

TEST_F(GcpProviderPricesTest, DisabledItReadsNothing) {
  GcpProvider& p = Provider(false);
  Result<std::vector<SpotPrice>> prices = p.SpotPrices(clock_.WallNow());
  ASSERT_TRUE(prices.ok());
  EXPECT_TRUE(prices->empty());
  EXPECT_TRUE(transport_.requests.empty());
}

}  // namespace
}  // namespace gpuscaler::cloud
