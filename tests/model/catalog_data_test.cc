// Checks the committed AWS catalog (config/catalogs/aws.yaml) itself: the
// data the planner prices with, not the loader's error handling.
#include <gtest/gtest.h>

#include <set>
#include <string>

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

TEST_F(AwsCatalog, EveryTypeHasAKnownGpuModelWithMatchingMemory) {
  for (const auto& t : catalog().instance_types) {
    SCOPED_TRACE(t.name);
    EXPECT_GT(t.gpu_count, 0);
    EXPECT_GT(t.vcpus, 0);
    EXPECT_GT(t.memory_mib, 0);
    const GpuModel* g = catalog().FindGpuModel(t.gpu_model);
    ASSERT_NE(g, nullptr) << t.gpu_model;
    EXPECT_EQ(g->memory_mib, t.gpu_memory_mib);
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
