// Checks the committed AWS catalog (config/catalogs/aws.yaml) itself: the
// data the planner prices with, not the loader's error handling.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler {
namespace {

const std::string kAwsCatalog = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml";

class AwsCatalog : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Result<Catalog> c = LoadCatalogFile(kAwsCatalog);
    if (!c.ok()) {
      load_error_ = new std::string(c.error().ToString());
      return;
    }
    catalog_ = new Catalog(std::move(c).value());
  }
  static void TearDownTestSuite() {
    delete catalog_;
    delete load_error_;
    catalog_ = nullptr;
    load_error_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(catalog_, nullptr) << *load_error_; }
  const Catalog& catalog() const { return *catalog_; }
  const RegionPrices* Region(const std::string& name) const {
    for (const auto& r : catalog_->regions) {
      if (r.region == name) return &r;
    }
    return nullptr;
  }

  static Catalog* catalog_;
  static std::string* load_error_;
};

Catalog* AwsCatalog::catalog_ = nullptr;
std::string* AwsCatalog::load_error_ = nullptr;

TEST_F(AwsCatalog, StatesItsProviderSourceAndDate) {
  EXPECT_EQ(catalog().provider, "aws");
  EXPECT_NE(catalog().source.find("karpenter"), std::string::npos) << catalog().source;
  EXPECT_NE(catalog().source.find("skypilot-catalog"), std::string::npos) << catalog().source;
  EXPECT_EQ(catalog().as_of, "2026-07-20");
}

TEST_F(AwsCatalog, HasEveryGpuFamilyAndTheP3Sizes) {
  std::set<std::string> families;
  for (const auto& t : catalog().instance_types) families.insert(t.family);
  for (const char* f : {"p5", "p4d", "p4de", "p3", "p3dn", "g6", "g6e", "g5", "g4dn"}) {
    EXPECT_TRUE(families.count(f)) << "family " << f << " missing";
  }
  for (const char* t : {"p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p3dn.24xlarge", "p5.48xlarge", "p4d.24xlarge",
                        "p4de.24xlarge", "g4dn.metal", "g5.48xlarge", "g6.48xlarge", "g6e.48xlarge"}) {
    EXPECT_NE(catalog().FindInstanceType(t), nullptr) << t << " missing";
  }
}

TEST_F(AwsCatalog, EveryGpuTypeHasAKnownGpuModelWithMatchingMemory) {
  for (const auto& t : catalog().instance_types) {
    SCOPED_TRACE(t.name);
    if (t.gpu_model.empty()) continue;  // the CPU-only types (next test)
    EXPECT_GT(t.gpu_count, 0);
    EXPECT_GT(t.vcpus, 0);
    EXPECT_GT(t.memory_mib, 0);
    const GpuModel* g = catalog().FindGpuModel(t.gpu_model);
    ASSERT_NE(g, nullptr) << t.gpu_model;
    EXPECT_EQ(g->memory_mib, t.gpu_memory_mib);
  }
}

// CPU-only types for mixed services: m/c/r of two generations in us-east-1,
// with the shapes the DLRM trace's CPU instances need (up to 192 vCPUs, 5 GiB
// per vCPU) and Karpenter's prices.
TEST_F(AwsCatalog, HasCpuOnlyTypesForMixedServicesInUsEast1) {
  int cpu_only = 0;
  for (const auto& t : catalog().instance_types) {
    if (!t.gpu_model.empty()) continue;
    ++cpu_only;
    EXPECT_EQ(t.gpu_count, 0) << t.name;
  }
  EXPECT_EQ(cpu_only, 54);
  const InstanceType* r7i = catalog().FindInstanceType("r7i.48xlarge");
  ASSERT_NE(r7i, nullptr);
  EXPECT_EQ(r7i->vcpus, 192);
  EXPECT_EQ(r7i->memory_mib, 1536 * 1024);
  const RegionPrices* use1 = nullptr;
  for (const auto& r : catalog().regions)
    if (r.region == "us-east-1") use1 = &r;
  ASSERT_NE(use1, nullptr);
  EXPECT_DOUBLE_EQ(use1->on_demand_usd_per_hour.at("m6i.large"), 0.096);
  EXPECT_DOUBLE_EQ(use1->on_demand_usd_per_hour.at("r7i.48xlarge"), 12.7008);
  for (const auto& r : catalog().regions) {
    if (r.region == "us-east-1") continue;
    EXPECT_EQ(r.on_demand_usd_per_hour.count("m6i.large"), 0u) << r.region;
  }
}

TEST_F(AwsCatalog, HasThreeRegionsWithRealZonesAndPositivePrices) {
  for (const char* name : {"us-east-1", "us-west-2", "eu-west-1"}) {
    SCOPED_TRACE(name);
    const RegionPrices* r = Region(name);
    ASSERT_NE(r, nullptr);
    EXPECT_GE(r->zones.size(), 2u);
    for (const auto& z : r->zones) EXPECT_EQ(z.rfind(name, 0), 0u) << z;
    EXPECT_FALSE(r->on_demand_usd_per_hour.empty());
    for (const auto& [type, price] : r->on_demand_usd_per_hour) {
      EXPECT_NE(catalog().FindInstanceType(type), nullptr) << type;
      EXPECT_GT(price, 0) << type;
    }
    for (const auto& [type, price] : r->spot_usd_per_hour) {
      ASSERT_TRUE(r->on_demand_usd_per_hour.count(type)) << type << " has spot but no on-demand price";
      EXPECT_GT(price, 0) << type;
      EXPECT_LT(price, r->on_demand_usd_per_hour.at(type)) << type;
    }
    for (const auto& [type, rate] : r->spot_interruptions_per_hour) {
      EXPECT_GT(rate, 0) << type;
      EXPECT_LT(rate, 0.01) << type;  // at most 25 % a month
    }
  }
}

// On-demand prices for these families in all three regions, wherever
// AWS sells them. In eu-west-1 the source has no row at all for p5, p4de, g6 and
// g6e (see the header of config/catalogs/aws.yaml), so none may be priced there.
TEST_F(AwsCatalog, PricesEveryFamilyInEveryRegionThatOffersIt) {
  struct Case {
    std::string region;
    std::string family;
    bool offered;
  };
  std::vector<Case> cases;
  for (const char* family : {"p5", "p4d", "p4de", "p3", "g6", "g6e", "g5", "g4dn"}) {
    cases.push_back({"us-east-1", family, true});
    cases.push_back({"us-west-2", family, true});
  }
  for (const char* family : {"p4d", "p3", "g5", "g4dn"}) cases.push_back({"eu-west-1", family, true});
  for (const char* family : {"p5", "p4de", "g6", "g6e"}) cases.push_back({"eu-west-1", family, false});

  const RegionPrices* east = Region("us-east-1");
  ASSERT_NE(east, nullptr);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.region + " " + c.family);
    const RegionPrices* r = Region(c.region);
    ASSERT_NE(r, nullptr);
    int family_types = 0;
    int priced = 0;
    for (const auto& t : catalog().instance_types) {
      if (t.family != c.family) continue;
      ++family_types;
      const bool has_price = r->on_demand_usd_per_hour.count(t.name) > 0;
      if (has_price) ++priced;
      // An offered family is complete: every size sold in us-east-1 has a price here too.
      if (c.offered && east->on_demand_usd_per_hour.count(t.name)) {
        EXPECT_TRUE(has_price) << t.name;
      }
    }
    EXPECT_GT(family_types, 0);
    if (c.offered) {
      EXPECT_GT(priced, 0);
    } else {
      EXPECT_EQ(priced, 0);
    }
  }
}

// Values as they appear in the sources: us-east-1 in Karpenter's
// zz_generated.pricing_aws.go @1d927085, the others in skypilot-catalog
// catalogs/v8/aws/vms.csv @00148f2a (column Price).
TEST_F(AwsCatalog, OnDemandPricesMatchTheSource) {
  struct Case {
    std::string region;
    std::string type;
    double usd_per_hour;
  };
  const std::vector<Case> cases = {
      {"us-east-1", "p5.48xlarge", 55.04},      {"us-east-1", "p4d.24xlarge", 21.957642},
      {"us-east-1", "g6e.xlarge", 1.861},       {"us-west-2", "p5.48xlarge", 55.04},
      {"us-west-2", "p5en.48xlarge", 63.296},   {"us-west-2", "p4d.24xlarge", 21.95764},
      {"us-west-2", "p4de.24xlarge", 27.44705}, {"us-west-2", "p3.2xlarge", 3.06},
      {"us-west-2", "g6.xlarge", 0.8048},       {"us-west-2", "g6e.48xlarge", 30.13118},
      {"us-west-2", "g5.12xlarge", 5.672},      {"us-west-2", "g4dn.metal", 7.824},
      {"eu-west-1", "p4d.24xlarge", 23.71569},  {"eu-west-1", "p3.16xlarge", 26.44},
      {"eu-west-1", "p3dn.24xlarge", 33.711},   {"eu-west-1", "g5.xlarge", 1.123},
      {"eu-west-1", "g5.48xlarge", 18.18233},   {"eu-west-1", "g4dn.xlarge", 0.587},
      {"eu-west-1", "g4dn.metal", 8.724},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.region + " " + c.type);
    const RegionPrices* r = Region(c.region);
    ASSERT_NE(r, nullptr);
    auto it = r->on_demand_usd_per_hour.find(c.type);
    ASSERT_NE(it, r->on_demand_usd_per_hour.end());
    EXPECT_NEAR(it->second, c.usd_per_hour, 1e-9);
  }
}

TEST_F(AwsCatalog, EuWest1IsNotCheaperThanUsEast1) {
  const RegionPrices* east = Region("us-east-1");
  const RegionPrices* eu = Region("eu-west-1");
  ASSERT_NE(east, nullptr);
  ASSERT_NE(eu, nullptr);
  int compared = 0;
  for (const auto& [type, price] : eu->on_demand_usd_per_hour) {
    auto it = east->on_demand_usd_per_hour.find(type);
    if (it == east->on_demand_usd_per_hour.end()) continue;
    EXPECT_GE(price, it->second) << type;
    ++compared;
  }
  EXPECT_GE(compared, 5);
}

TEST_F(AwsCatalog, P5HasEightH100sWithMigProfiles) {
  const InstanceType* p5 = catalog().FindInstanceType("p5.48xlarge");
  ASSERT_NE(p5, nullptr);
  EXPECT_EQ(p5->gpu_count, 8);
  const GpuModel* h100 = catalog().FindGpuModel(p5->gpu_model);
  ASSERT_NE(h100, nullptr);
  EXPECT_NE(h100->name.find("H100"), std::string::npos) << h100->name;
  for (const char* profile : {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}) {
    EXPECT_NE(h100->FindMigProfile(profile), nullptr) << profile;
  }
  const MigProfile* one = h100->FindMigProfile("1g.10gb");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->allowed_starts, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

TEST_F(AwsCatalog, MigProfilesFitTheEightMemorySlices) {
  int mig_models = 0;
  for (const auto& g : catalog().gpu_models) {
    if (!g.mig_profiles.empty()) ++mig_models;
    for (const auto& p : g.mig_profiles) {
      SCOPED_TRACE(g.name + " " + p.name);
      EXPECT_GE(p.compute_slices, 1);
      EXPECT_LE(p.compute_slices, kMigComputeSlices);
      EXPECT_FALSE(p.allowed_starts.empty());
      EXPECT_LE(p.memory_mib, g.memory_mib);
      for (int start : p.allowed_starts) EXPECT_LE(start + p.memory_slices, kMigMemorySlices) << start;
    }
  }
  EXPECT_GE(mig_models, 3);  // A100 40GB, A100 80GB, H100 (and H200)
}

TEST_F(AwsCatalog, OfferingsCoverEveryPricedTypeZoneAndCapacityType) {
  size_t want = 0;
  for (const auto& r : catalog().regions) want += r.on_demand_usd_per_hour.size() * r.zones.size() * 2;
  const std::vector<Offering> offerings = catalog().Offerings();
  EXPECT_EQ(offerings.size(), want);
  std::set<std::string> keys;
  for (const auto& o : offerings) {
    EXPECT_TRUE(keys.insert(o.Key()).second) << "duplicate " << o.Key();
    EXPECT_GT(o.usd_per_hour, 0) << o.Key();
    EXPECT_GT(o.launch_latency.count(), 0) << o.Key();
  }
  const RegionPrices* west = Region("us-west-2");
  ASSERT_NE(west, nullptr);
  EXPECT_EQ(catalog().Offerings({"us-west-2"}).size(), west->on_demand_usd_per_hour.size() * west->zones.size() * 2);
}

}  // namespace
}  // namespace gpuscaler
