// The Cloud Billing Catalog's Compute Engine SKUs as gpuscaler reads them
// (Google's Sku shape: description, category, serviceRegions, pricingInfo
// with tieredRates of Money {currencyCode, units as a string, nanos}), and a
// machine type's Spot price composed from its components.
#include "gpuscaler/cloud/gcp_billing_catalog.h"

#include <gtest/gtest.h>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler::cloud {
namespace {

using nlohmann::json;

// A Compute Engine SKU as services.skus.list prints it, written from the
// documented shape (cloud.google.com/billing/v1/how-tos/catalog-api).
constexpr const char* kRecordedG2CoreSku = R"({
  "name": "services/6F81-5844-456A/skus/1A2B-3C4D-5E6F",
  "skuId": "1A2B-3C4D-5E6F",
  "description": "Spot Preemptible G2 Instance Core running in Americas",
  "category": {
    "serviceDisplayName": "Compute Engine",
    "resourceFamily": "Compute",
    "resourceGroup": "CPU",
    "usageType": "Preemptible"
  },
  "serviceRegions": ["us-central1", "us-east1", "us-west1"],
  "pricingInfo": [{
    "summary": "",
    "pricingExpression": {
      "usageUnit": "h",
      "displayQuantity": 1,
      "tieredRates": [{
        "startUsageAmount": 0,
        "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 14031120}
      }],
      "usageUnitDescription": "hour",
      "baseUnit": "s",
      "baseUnitDescription": "second",
      "baseUnitConversionFactor": 3600
    },
    "aggregationInfo": {"aggregationLevel": "ACCOUNT", "aggregationInterval": "MONTHLY", "aggregationCount": 1},
    "currencyConversionRate": 1,
    "effectiveTime": "2026-07-29T23:04:05.206Z"
  }],
  "serviceProviderName": "Google",
  "geoTaxonomy": {"type": "MULTI_REGIONAL", "regions": ["us-central1", "us-east1", "us-west1"]}
})";

// The same shape for any description, group, usage type, unit and price.
json Sku(const std::string& id, const std::string& description, const std::string& group,
         const std::vector<std::string>& regions, const std::string& unit, int64_t units, int64_t nanos,
         const std::string& effective = "2026-07-29T23:04:05.206Z",
         const std::string& usage_type = "Preemptible", const std::string& currency = "USD") {
  return {{"name", "services/6F81-5844-456A/skus/" + id},
          {"skuId", id},
          {"description", description},
          {"category",
           {{"serviceDisplayName", "Compute Engine"},
            {"resourceFamily", group == "LocalSSD" ? "Storage" : "Compute"},
            {"resourceGroup", group},
            {"usageType", usage_type}}},
          {"serviceRegions", regions},
          {"pricingInfo", json::array({{{"summary", ""},
                                        {"pricingExpression",
                                         {{"usageUnit", unit},
                                          {"displayQuantity", 1},
                                          {"tieredRates", json::array({{{"startUsageAmount", 0},
                                                                        {"unitPrice",
                                                                         {{"currencyCode", currency},
                                                                          {"units", std::to_string(units)},
                                                                          {"nanos", nanos}}}}})}}},
                                        {"currencyConversionRate", 1},
                                        {"effectiveTime", effective}}})},
          {"serviceProviderName", "Google"}};
}

const std::vector<std::string> kAmericas = {"us-central1", "us-east1", "us-east4", "us-west1"};

// Spot component prices whose sums are config/catalogs/gcp.yaml's
// us-central1 Spot prices of the G2 types (g2-standard-4: 0.397336).
std::vector<GcpSpotSku> G2Skus(const std::string& core_effective = "2026-07-29T23:04:05Z") {
  std::vector<GcpSpotSku> out;
  for (const json& j :
       {Sku("C0RE-0000-0001", "Spot Preemptible G2 Instance Core running in Americas", "CPU", kAmericas, "h",
            0, 14031120, core_effective),
        Sku("RAM0-0000-0001", "Spot Preemptible G2 Instance Ram running in Americas", "RAM", kAmericas,
            "GiBy.h", 0, 1650720, "2026-07-28T10:00:00Z"),
        Sku("L4G0-0000-0001", "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas", "GPU",
            kAmericas, "h", 0, 314800000, "2026-07-27T10:00:00Z")}) {
    std::optional<GcpSpotSku> s = ParseGcpSpotSku(j);
    EXPECT_TRUE(s.has_value()) << j.dump();
    if (s) out.push_back(*s);
  }
  return out;
}

InstanceType Type(const std::string& name, int vcpus, int64_t memory_gib, const std::string& gpu_model,
                  int gpus, int64_t local_ssd_gb = 0) {
  InstanceType t;
  t.name = name;
  t.family = name.substr(0, name.rfind('-'));
  t.vcpus = vcpus;
  t.memory_mib = memory_gib * 1024;
  t.gpu_model = gpu_model;
  t.gpu_count = gpus;
  t.local_nvme_gb = local_ssd_gb;
  return t;
}

GcpMachinePricing Pricing(const InstanceType& t) {
  std::optional<GcpMachinePricing> p = GcpMachinePricingFor(t);
  EXPECT_TRUE(p.has_value()) << t.name;
  return p.value_or(GcpMachinePricing{});
}

TEST(GcpBillingCatalog, ReadsARecordedSpotCoreSku) {
  std::optional<GcpSpotSku> s = ParseGcpSpotSku(json::parse(kRecordedG2CoreSku));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->sku_id, "1A2B-3C4D-5E6F");
  EXPECT_EQ(s->component, GcpSpotComponent::kCore);
  EXPECT_EQ(s->name, "G2");
  EXPECT_EQ(s->regions, (std::vector<std::string>{"us-central1", "us-east1", "us-west1"}));
  EXPECT_DOUBLE_EQ(s->usd_per_unit_hour, 0.01403112);
  WallTime effective;
  ASSERT_TRUE(ParseRfc3339("2026-07-29T23:04:05Z", &effective));
  EXPECT_EQ(s->effective, effective);  // milliseconds dropped
}

TEST(GcpBillingCatalog, ReadsEveryFormOfComponentDescription) {
  struct Case {
    std::string name;
    json sku;
    GcpSpotComponent component;
    std::string component_name;
    double usd_per_unit_hour;
  };
  const std::vector<Case> cases = {
      {"RAM per GiB-hour",
       Sku("R", "Spot Preemptible A3 Instance Ram running in Americas", "RAM", kAmericas, "GiBy.h", 0,
           2500000),
       GcpSpotComponent::kRam, "A3", 0.0025},
      {"N1 predefined cores",
       Sku("N", "Spot Preemptible N1 Predefined Instance Core running in Americas", "N1Standard", kAmericas,
           "h", 0, 6655000),
       GcpSpotComponent::kCore, "N1 Predefined", 0.006655},
      {"a GPU attached to Spot VMs",
       Sku("G", "Nvidia H100 80GB Mega GPU attached to Spot Preemptible VMs running in Americas", "GPU",
           kAmericas, "h", 2, 250000000),
       GcpSpotComponent::kGpu, "Nvidia H100 80GB Mega", 2.25},
      {"a GPU whose name has no 'GPU'",
       Sku("X", "RTX 6000 96GB attached to Spot Preemptible VMs running in Iowa", "GPU", {"us-central1"}, "h",
           0, 700000000),
       GcpSpotComponent::kGpu, "RTX 6000 96GB", 0.7},
      {"a GPU named after Spot Preemptible",
       Sku("L", "Spot Preemptible Nvidia L4 GPU running in Americas", "GPU", kAmericas, "h", 0, 200000000),
       GcpSpotComponent::kGpu, "Nvidia L4", 0.2},
      {"Local SSD per GiB-month becomes per GiB-hour",
       Sku("S", "SSD backed Local Storage attached to Spot Preemptible VMs in Iowa", "LocalSSD",
           {"us-central1"}, "GiBy.mo", 0, 73000000),
       GcpSpotComponent::kLocalSsd, "", 0.0001},
      {"Local SSD that the catalog files as OnDemand",
       Sku("T", "SSD backed Local Storage attached to Spot Preemptible VMs", "LocalSSD", kAmericas, "GiBy.mo",
           0, 36500000, "2026-07-29T23:04:05Z", "OnDemand"),
       GcpSpotComponent::kLocalSsd, "", 0.00005},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::optional<GcpSpotSku> s = ParseGcpSpotSku(c.sku);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->component, c.component);
    EXPECT_EQ(s->name, c.component_name);
    EXPECT_NEAR(s->usd_per_unit_hour, c.usd_per_unit_hour, 1e-12);
  }
}

TEST(GcpBillingCatalog, SkipsWhatIsNotASpotComponentPrice) {
  const std::string core = "Spot Preemptible G2 Instance Core running in Americas";
  json no_pricing = Sku("P", core, "CPU", kAmericas, "h", 0, 1);
  no_pricing["pricingInfo"] = json::array();
  json no_tiers = Sku("T", core, "CPU", kAmericas, "h", 0, 1);
  no_tiers["pricingInfo"][0]["pricingExpression"]["tieredRates"] = json::array();
  json bad_units = Sku("U", core, "CPU", kAmericas, "h", 0, 1);
  bad_units["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"] = "zero";
  const std::vector<std::pair<std::string, json>> cases = {
      {"on-demand core", Sku("1", "G2 Instance Core running in Americas", "CPU", kAmericas, "h", 0, 1,
                             "2026-07-29T00:00:00Z", "OnDemand")},
      {"a Spot description filed as a commitment",
       Sku("2", core, "CPU", kAmericas, "h", 0, 1, "2026-07-29T00:00:00Z", "Commit1Yr")},
      {"a core priced per GiB-hour", Sku("3", core, "CPU", kAmericas, "GiBy.h", 0, 1)},
      {"RAM priced per hour",
       Sku("4", "Spot Preemptible G2 Instance Ram running in Americas", "RAM", kAmericas, "h", 0, 1)},
      {"another currency",
       Sku("5", core, "CPU", kAmericas, "h", 0, 1, "2026-07-29T00:00:00Z", "Preemptible", "EUR")},
      {"a license fee attached to Spot VMs",
       Sku("6", "Licensing Fee attached to Spot Preemptible VMs", "Google", kAmericas, "h", 0, 1)},
      {"network egress", Sku("7", "Network Internet Egress from Americas to Americas",
                             "PremiumInternetEgress", kAmericas, "GiBy", 0, 1)},
      {"no pricing", no_pricing},
      {"no tiers", no_tiers},
      {"units that are not a number", bad_units},
      {"not an object", json::array()},
  };
  for (const auto& [name, sku] : cases) {
    EXPECT_FALSE(ParseGcpSpotSku(sku).has_value()) << name;
  }
}

TEST(GcpBillingCatalog, TakesTheLatestPricingAndTheFirstTier) {
  json s = Sku("C", "Spot Preemptible A2 Instance Core running in Americas", "CPU", kAmericas, "h", 0,
               10000000, "2026-06-01T00:00:00Z");
  json later = s["pricingInfo"][0];
  later["effectiveTime"] = "2026-07-01T00:00:00Z";
  later["pricingExpression"]["tieredRates"] =
      json::array({{{"startUsageAmount", 100},
                    {"unitPrice", {{"currencyCode", "USD"}, {"units", "0"}, {"nanos", 5000000}}}},
                   {{"startUsageAmount", 0},
                    {"unitPrice", {{"currencyCode", "USD"}, {"units", "1"}, {"nanos", 20000000}}}}});
  s["pricingInfo"].push_back(later);
  std::optional<GcpSpotSku> sku = ParseGcpSpotSku(s);
  ASSERT_TRUE(sku.has_value());
  EXPECT_DOUBLE_EQ(sku->usd_per_unit_hour, 1.02);
  WallTime july;
  ASSERT_TRUE(ParseRfc3339("2026-07-01T00:00:00Z", &july));
  EXPECT_EQ(sku->effective, july);
}

TEST(GcpBillingCatalog, AMachineTypesSpotPriceIsTheSumOfItsComponents) {
  const std::vector<GcpMachinePricing> machines = {Pricing(Type("g2-standard-4", 4, 16, "NVIDIA-L4", 1)),
                                                   Pricing(Type("g2-standard-8", 8, 32, "NVIDIA-L4", 1)),
                                                   Pricing(Type("g2-standard-24", 24, 96, "NVIDIA-L4", 2))};
  const GcpSpotPriceBook book = ComposeGcpSpotPrices(G2Skus(), machines, "us-central1");
  EXPECT_TRUE(book.unpriced.empty());
  ASSERT_EQ(book.prices.size(), 3u);
  // config/catalogs/gcp.yaml, us-central1 spot_usd_per_hour.
  EXPECT_NEAR(book.prices[0].usd_per_hour, 0.397336, 1e-9);
  EXPECT_NEAR(book.prices[1].usd_per_hour, 0.479872, 1e-9);
  EXPECT_NEAR(book.prices[2].usd_per_hour, 1.124816, 1e-9);
  // Its time: the latest of its components' effective times.
  WallTime latest;
  ASSERT_TRUE(ParseRfc3339("2026-07-29T23:04:05Z", &latest));
  EXPECT_EQ(book.prices[1].effective, latest);
  EXPECT_EQ(book.prices[1].sku_ids,
            (std::vector<std::string>{"C0RE-0000-0001", "RAM0-0000-0001", "L4G0-0000-0001"}));
}

TEST(GcpBillingCatalog, BundledLocalSsdIsPartOfTheA3Price) {
  std::vector<GcpSpotSku> skus;
  for (const json& j :
       {Sku("A", "Spot Preemptible A3 Instance Core running in Americas", "CPU", kAmericas, "h", 0, 10000000),
        Sku("B", "Spot Preemptible A3 Instance Ram running in Americas", "RAM", kAmericas, "GiBy.h", 0,
            1000000),
        Sku("C", "Nvidia H100 80GB GPU attached to Spot Preemptible VMs running in Americas", "GPU",
            kAmericas, "h", 2, 0),
        Sku("D", "Nvidia H100 80GB Mega GPU attached to Spot Preemptible VMs running in Americas", "GPU",
            kAmericas, "h", 3, 0),
        Sku("E", "SSD backed Local Storage attached to Spot Preemptible VMs", "LocalSSD", kAmericas,
            "GiBy.mo", 0, 73000000)}) {
    skus.push_back(*ParseGcpSpotSku(j));
  }
  const GcpSpotPriceBook book =
      ComposeGcpSpotPrices(skus,
                           {Pricing(Type("a3-highgpu-1g", 26, 234, "NVIDIA-H100-80GB-HBM3", 1, 750)),
                            Pricing(Type("a3-megagpu-8g", 208, 1872, "NVIDIA-H100-80GB-HBM3", 8, 6000))},
                           "us-central1");
  ASSERT_EQ(book.prices.size(), 2u);
  // 26 x 0.01 + 234 x 0.001 + 1 x 2 + 750 GiB x 0.073 / 730.
  EXPECT_NEAR(book.prices[0].usd_per_hour, 0.26 + 0.234 + 2 + 0.075, 1e-9);
  // The Mega GPU SKU, not the High one.
  EXPECT_NEAR(book.prices[1].usd_per_hour, 2.08 + 1.872 + 24 + 0.6, 1e-9);
}

TEST(GcpBillingCatalog, TheRegionsOwnSkuWinsOverAMultiRegionalOne) {
  std::vector<GcpSpotSku> skus = G2Skus();
  // us-east4 has its own (dearer) core SKU besides the Americas one.
  skus.push_back(
      *ParseGcpSpotSku(Sku("C0RE-0000-0002", "Spot Preemptible G2 Instance Core running in Virginia", "CPU",
                           {"us-east4"}, "h", 0, 20000000, "2026-07-01T00:00:00Z")));
  const std::vector<GcpMachinePricing> machines = {Pricing(Type("g2-standard-4", 4, 16, "NVIDIA-L4", 1))};
  const GcpSpotPriceBook east4 = ComposeGcpSpotPrices(skus, machines, "us-east4");
  ASSERT_EQ(east4.prices.size(), 1u);
  EXPECT_NEAR(east4.prices[0].usd_per_hour, 4 * 0.02 + 16 * 0.00165072 + 0.3148, 1e-9);
  EXPECT_EQ(east4.prices[0].sku_ids[0], "C0RE-0000-0002");
  const GcpSpotPriceBook central1 = ComposeGcpSpotPrices(skus, machines, "us-central1");
  ASSERT_EQ(central1.prices.size(), 1u);
  EXPECT_NEAR(central1.prices[0].usd_per_hour, 0.397336, 1e-9);
}

TEST(GcpBillingCatalog, AMachineTypeMissingAComponentIsLeftOutAndTheOthersArePriced) {
  std::vector<GcpSpotSku> skus = G2Skus();
  const GcpSpotPriceBook book =
      ComposeGcpSpotPrices(skus,
                           {Pricing(Type("g2-standard-8", 8, 32, "NVIDIA-L4", 1)),
                            Pricing(Type("a2-highgpu-1g", 12, 85, "NVIDIA-A100-SXM4-40GB", 1)),
                            Pricing(Type("g2-standard-4", 4, 16, "NVIDIA-L4", 1))},
                           "us-central1");
  ASSERT_EQ(book.prices.size(), 2u);
  EXPECT_EQ(book.prices[0].machine_type, "g2-standard-8");
  EXPECT_EQ(book.prices[1].machine_type, "g2-standard-4");
  EXPECT_EQ(book.unpriced, (std::vector<std::string>{"a2-highgpu-1g: no Spot A2 core SKU for us-central1"}));

  // Without the L4 GPU SKU the G2 types are not priced from cores and RAM alone.
  skus.pop_back();
  const GcpSpotPriceBook no_gpu =
      ComposeGcpSpotPrices(skus, {Pricing(Type("g2-standard-8", 8, 32, "NVIDIA-L4", 1))}, "us-central1");
  EXPECT_TRUE(no_gpu.prices.empty());
  EXPECT_EQ(no_gpu.unpriced,
            (std::vector<std::string>{"g2-standard-8: no Spot Nvidia L4 GPU SKU for us-central1"}));
  // Nor in a region no SKU serves.
  EXPECT_TRUE(
      ComposeGcpSpotPrices(G2Skus(), {Pricing(Type("g2-standard-8", 8, 32, "NVIDIA-L4", 1))}, "europe-west4")
          .prices.empty());
}

TEST(GcpBillingCatalog, EveryMachineTypeOfTheShippedCatalogHasAPricingRule) {
  Result<Catalog> catalog = LoadCatalogFile(std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/gcp.yaml");
  ASSERT_TRUE(catalog.ok()) << catalog.error().message();
  for (const InstanceType& t : catalog->instance_types) {
    SCOPED_TRACE(t.name);
    std::optional<GcpMachinePricing> p = GcpMachinePricingFor(t);
    ASSERT_TRUE(p.has_value());
    EXPECT_FALSE(p->series.empty());
    EXPECT_FALSE(p->gpu.empty());
    EXPECT_EQ(p->gpu_count, t.gpu_count);
    EXPECT_DOUBLE_EQ(p->memory_gib * 1024, static_cast<double>(t.memory_mib));
  }
  const InstanceType a2_ultra = *catalog->FindInstanceType("a2-ultragpu-8g");
  EXPECT_EQ(GcpMachinePricingFor(a2_ultra)->gpu, "Nvidia Tesla A100 80GB");
  EXPECT_DOUBLE_EQ(GcpMachinePricingFor(a2_ultra)->local_ssd_gib, 3000);
  EXPECT_EQ(GcpMachinePricingFor(*catalog->FindInstanceType("a2-megagpu-16g"))->gpu, "Nvidia Tesla A100");
  EXPECT_EQ(GcpMachinePricingFor(*catalog->FindInstanceType("g4-standard-48"))->series, "G4");
}

TEST(GcpBillingCatalog, N1TypesTakeTheirAttachedGpusSku) {
  EXPECT_EQ(Pricing(Type("n1-standard-8", 8, 30, "NVIDIA-Tesla-T4", 1)).gpu, "Nvidia Tesla T4");
  EXPECT_EQ(Pricing(Type("n1-highmem-8", 8, 52, "nvidia-tesla-v100", 1)).gpu, "Nvidia Tesla V100");
  EXPECT_EQ(Pricing(Type("n1-standard-8", 8, 30, "NVIDIA-Tesla-T4", 1)).series, "N1 Predefined");
  EXPECT_FALSE(GcpMachinePricingFor(Type("n1-standard-8", 8, 30, "NVIDIA-K40", 1)).has_value());
  EXPECT_FALSE(GcpMachinePricingFor(Type("c3-standard-8", 8, 32, "", 0)).has_value());
}

TEST(GcpBillingCatalog, AMalformedPageIsATransientError) {
  std::vector<GcpSpotSku> out;
  EXPECT_EQ(ParseGcpSkuPage(json::array(), &out).error().category(), ErrorCategory::kTransient);
  EXPECT_EQ(ParseGcpSkuPage(json{{"skus", "none"}}, &out).error().category(), ErrorCategory::kTransient);
  Result<std::string> last = ParseGcpSkuPage(
      json{{"skus", json::array({json::parse(kRecordedG2CoreSku)})}, {"nextPageToken", ""}}, &out);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, "");
  EXPECT_EQ(out.size(), 1u);
}

}  // namespace
}  // namespace gpuscaler::cloud
