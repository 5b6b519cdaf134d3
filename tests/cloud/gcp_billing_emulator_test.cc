// The Compute Engine emulator's Cloud Billing Catalog (services.skus.list):
// the scenario's SKUs in Google's Sku shape with paging, prices that take
// effect at their time, errors in the shape of Google's newer APIs, and the
// GcpProvider reading it in process.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/gcp_provider.h"
#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::sim {
namespace {

using nlohmann::json;

constexpr const char* kSkusPath = "/v1/services/6F81-5844-456A/skus";

// G2 Spot components whose sums make g2-standard-8 cost 0.312 USD/h; the
// core's price was set 2 h before the start and changes 10 min after it.
constexpr const char* kBillingScenario = R"(access_tokens: [billing-token]
billing_catalog:
  max_page_size: 2
  skus:
    - sku_id: "AAAA-0000-0001"
      description: Spot Preemptible G2 Instance Core running in Americas
      resource_group: CPU
      regions: [us-central1, us-east1]
      prices: [{usd: 0.01, from: -2h}, {usd: 0.0125, from: 10m}]
    - {description: Spot Preemptible G2 Instance Ram running in Americas, resource_group: RAM,
       regions: [us-central1, us-east1], unit: GiBy.h, usd: 0.001, from: -3h}
    - {description: Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas, resource_group: GPU,
       regions: [us-central1, us-east1], usd: 0.2, from: -1d}
    - {description: G2 Instance Core running in Americas, resource_group: CPU, usage_type: OnDemand,
       regions: [us-central1], usd: 0.025, from: -30d}
    - {description: Spot Preemptible G2 Instance Core running in Iowa, resource_group: CPU,
       regions: [us-central1], usd: 0.5, from: 1h}
)";

WallTime BillingStart() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

class GcpBillingEmulatorTest : public ::testing::Test {
 protected:
  GcpBillingEmulatorTest() : clock_(BillingStart()) {}

  void Start(const std::string& yaml = kBillingScenario) {
    auto s = ParseGcpScenario(yaml);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    emu_ = std::make_unique<GcpEmulator>(std::move(*s), clock_);
  }
  std::pair<int, json> Get(const std::string& target, const std::string& token = "billing-token") {
    EmulatorRequest r;
    r.method = "GET";
    r.target = target;
    if (!token.empty()) r.headers.emplace_back("Authorization", "Bearer " + token);
    const EmulatorResponse a = emu_->Handle(r);
    return {a.status, json::parse(a.body, nullptr, false)};
  }

  ManualClock clock_;
  std::unique_ptr<GcpEmulator> emu_;
};

TEST_F(GcpBillingEmulatorTest, ServesTheSkusInForceInGooglesShapeAPageAtATime) {
  Start();
  auto [status, first] = Get(std::string(kSkusPath) + "?currencyCode=USD&pageSize=5000");
  ASSERT_EQ(status, 200) << first.dump();
  ASSERT_EQ(first["skus"].size(), 2u);  // the scenario's max_page_size
  EXPECT_EQ(first["nextPageToken"], "o2");
  const json& core = first["skus"][0];
  EXPECT_EQ(core["name"], "services/6F81-5844-456A/skus/AAAA-0000-0001");
  EXPECT_EQ(core["skuId"], "AAAA-0000-0001");
  EXPECT_EQ(core["description"], "Spot Preemptible G2 Instance Core running in Americas");
  EXPECT_EQ(core["category"], (json{{"serviceDisplayName", "Compute Engine"},
                                    {"resourceFamily", "Compute"},
                                    {"resourceGroup", "CPU"},
                                    {"usageType", "Preemptible"}}));
  EXPECT_EQ(core["serviceRegions"], json::array({"us-central1", "us-east1"}));
  EXPECT_EQ(core["serviceProviderName"], "Google");
  EXPECT_EQ(core["geoTaxonomy"]["type"], "MULTI_REGIONAL");
  ASSERT_EQ(core["pricingInfo"].size(), 1u);
  const json& pricing = core["pricingInfo"][0];
  EXPECT_EQ(pricing["effectiveTime"], "2026-12-04T08:00:00.000Z");  // 2 h before the start
  EXPECT_EQ(pricing["pricingExpression"]["usageUnit"], "h");
  EXPECT_EQ(pricing["pricingExpression"]["baseUnit"], "s");
  EXPECT_EQ(pricing["pricingExpression"]["tieredRates"][0]["startUsageAmount"], 0);
  // Money: int64 units as a string, nanos a number.
  EXPECT_EQ(pricing["pricingExpression"]["tieredRates"][0]["unitPrice"],
            (json{{"currencyCode", "USD"}, {"units", "0"}, {"nanos", 10000000}}));
  EXPECT_EQ(first["skus"][1]["pricingInfo"][0]["pricingExpression"]["usageUnit"], "GiBy.h");
  // A made-up id in Google's form when the scenario gives none.
  EXPECT_EQ(first["skus"][1]["skuId"].get<std::string>().size(), 14u);

  auto [status2, second] = Get(std::string(kSkusPath) + "?pageSize=5000&pageToken=o2");
  ASSERT_EQ(status2, 200);
  ASSERT_EQ(second["skus"].size(), 2u);
  EXPECT_EQ(second["skus"][1]["category"]["usageType"], "OnDemand");
  // The last page (the Iowa SKU's price is not in force yet: it is not listed).
  EXPECT_EQ(second["nextPageToken"], "");

  // pageSize below the scenario's cap.
  auto [status4, small] = Get(std::string(kSkusPath) + "?pageSize=1");
  ASSERT_EQ(status4, 200);
  EXPECT_EQ(small["skus"].size(), 1u);
  EXPECT_EQ(small["nextPageToken"], "o1");
}

TEST_F(GcpBillingEmulatorTest, APriceStepTakesEffectAtItsTime) {
  Start();
  clock_.Advance(Seconds(600));
  auto [status, page] = Get(std::string(kSkusPath) + "?pageSize=1");
  ASSERT_EQ(status, 200);
  const json& pricing = page["skus"][0]["pricingInfo"][0];
  EXPECT_EQ(pricing["effectiveTime"], "2026-12-04T10:10:00.000Z");
  EXPECT_EQ(pricing["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"], 12500000);
}

TEST_F(GcpBillingEmulatorTest, RefusesWhatGoogleRefuses) {
  Start();
  EXPECT_EQ(Get(kSkusPath, "").first, 401);
  EXPECT_EQ(Get(kSkusPath, "stranger").first, 401);
  auto [unknown, body] = Get("/v1/services/0000-0000-0000/skus");
  EXPECT_EQ(unknown, 404);
  EXPECT_EQ(body["error"]["status"], "NOT_FOUND");
  EXPECT_EQ(Get(std::string(kSkusPath) + "?currencyCode=EUR").first, 400);
  EXPECT_EQ(Get(std::string(kSkusPath) + "?pageToken=nonsense").first, 400);
  EXPECT_EQ(Get(std::string(kSkusPath) + "?pageSize=-1").first, 400);
  EXPECT_EQ(Get(std::string(kSkusPath) + "?startTime=2026-12-01T00:00:00Z").first, 400);
}

TEST_F(GcpBillingEmulatorTest, TheScenariosErrorAnswersEveryCatalogCall) {
  Start(
      "access_tokens: [billing-token]\nbilling_catalog:\n  error: {code: 403, status: PERMISSION_DENIED, "
      "reason: "
      "SERVICE_DISABLED, message: \"Cloud Billing API has not been used in project 1 before or it is "
      "disabled.\"}\n");
  auto [status, body] = Get(kSkusPath);
  EXPECT_EQ(status, 403);
  EXPECT_EQ(body["error"]["code"], 403);
  EXPECT_EQ(body["error"]["status"], "PERMISSION_DENIED");
  EXPECT_EQ(body["error"]["details"][0]["reason"], "SERVICE_DISABLED");
  EXPECT_EQ(body["error"]["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
  EXPECT_EQ(emu_->stats().billing_calls, 1);
}

TEST_F(GcpBillingEmulatorTest, TheProviderReadsTheEmulatorsCatalogEveryPage) {
  Start();
  cloud::testing::FakeTransport transport;
  transport.handler = [this](const cloud::TransportRequest& r) -> Result<cloud::TransportResponse> {
    EmulatorRequest e{r.method, r.url.substr(std::string("http://emulator.test").size()), r.headers, r.body};
    EmulatorResponse a = emu_->Handle(e);
    return cloud::TransportResponse{a.status, {{"Content-Type", a.content_type}}, a.body};
  };
  struct Token final : cloud::TokenSource {
    Result<cloud::AccessToken> Get(WallTime now) override { return cloud::AccessToken{"billing-token", now}; }
    std::string Name() const override { return "test"; }
  } token;
  cloud::GcpClientOptions c;
  c.endpoint = "http://emulator.test/v1/";
  cloud::GcpClient billing(c, transport, token, clock_, nullptr);
  cloud::GcpClient compute(c, transport, token, clock_, nullptr);
  cloud::GcpProviderOptions o;
  o.cluster_name = "test";
  o.project = "gpuscaler-test";
  o.region = "us-central1";
  o.billing_catalog.enabled = true;
  InstanceType g2;
  g2.name = "g2-standard-8";
  g2.family = "g2-standard";
  g2.vcpus = 8;
  g2.memory_mib = 32 * 1024;
  g2.gpu_model = "NVIDIA-L4";
  g2.gpu_count = 1;
  o.billing_catalog.machine_types = {g2};
  o.billing_catalog.zones = {"us-central1-a"};
  cloud::GcpProvider provider(o, compute, &billing);
  Result<std::vector<SpotPrice>> prices = provider.SpotPrices(clock_.WallNow() - Seconds(3600));
  ASSERT_TRUE(prices.ok()) << prices.error().ToString();
  ASSERT_EQ(prices->size(), 1u);
  EXPECT_EQ((*prices)[0].instance_type, "g2-standard-8");
  EXPECT_EQ((*prices)[0].zone, "us-central1-a");
  EXPECT_NEAR((*prices)[0].usd_per_hour, 8 * 0.01 + 32 * 0.001 + 0.2, 1e-9);
  // The latest component: the core, set 2 h before the start (earlier than `since`).
  EXPECT_EQ((*prices)[0].time, BillingStart() - Seconds(2 * 3600));
  EXPECT_EQ(emu_->stats().billing_calls, 2);  // two pages of the scenario's two SKUs
}

TEST(GcpBillingScenarioTest, ErrorsNameTheSkuAndKey) {
  auto unit = ParseGcpScenario(
      "billing_catalog:\n  skus:\n    - {description: d, regions: [r], unit: GiB, usd: 1}\n");
  ASSERT_FALSE(unit.ok());
  EXPECT_NE(unit.error().message().find("billing_catalog.skus[0]"), std::string::npos)
      << unit.error().message();
  EXPECT_NE(unit.error().message().find("unit must be h, GiBy.h or GiBy.mo"), std::string::npos);
  auto order = ParseGcpScenario(
      "billing_catalog:\n  skus:\n    - {description: d, regions: [r], prices: [{usd: 1, from: 1h}, {usd: 2, "
      "from: "
      "-1h}]}\n");
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message().find("ascending"), std::string::npos) << order.error().message();
  auto when = ParseGcpScenario(
      "billing_catalog:\n  skus:\n    - {description: d, regions: [r], usd: 1, from: soon}\n");
  ASSERT_FALSE(when.ok());
  EXPECT_NE(when.error().message().find("-2h"), std::string::npos) << when.error().message();
  auto error = ParseGcpScenario("billing_catalog:\n  error: {code: 200, status: OK}\n");
  ASSERT_FALSE(error.ok());
}

}  // namespace
}  // namespace gpuscaler::sim
