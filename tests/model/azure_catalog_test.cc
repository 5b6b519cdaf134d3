// Checks the committed Azure catalog (config/catalogs/azure.yaml): it loads
// with the ordinary catalog loader, and its facts are the ones its sources
// state. The price table (skypilot-org/skypilot-catalog
// catalogs/v6/azure/vms.csv @098741e7) is not in the repository or in
// ../shared, so rows of it are quoted here; with the downloaded table named
// by GPUSCALER_AZURE_VMS_CSV the catalog is compared with every row it covers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler::azure_catalog_test {
namespace {

const std::string kAzureCatalog = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/azure.yaml";

class AzureCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Catalog> c = LoadCatalogFile(kAzureCatalog);
    ASSERT_TRUE(c.ok()) << c.error().ToString();
    catalog_ = std::move(c).value();
  }
  const RegionPrices* Region(const std::string& name) const {
    for (const auto& r : catalog_.regions) {
      if (r.region == name) return &r;
    }
    return nullptr;
  }
  Catalog catalog_;
};

TEST_F(AzureCatalog, StatesItsProviderSourceAndDate) {
  EXPECT_EQ(catalog_.provider, "azure");
  EXPECT_NE(catalog_.source.find("skypilot-org/skypilot-catalog"), std::string::npos);
  EXPECT_NE(catalog_.source.find("@098741e7"), std::string::npos);
  EXPECT_NE(catalog_.source.find("as_of estimated"), std::string::npos);
  EXPECT_EQ(catalog_.as_of, "2024-08-18");
}

// Prices quoted from the source table's rows (InstanceType, Price,
// SpotPrice, Region).
TEST_F(AzureCatalog, PricesAreTheSourceTablesRows) {
  struct Row {
    std::string size, region;
    double on_demand, spot;
  };
  const std::vector<Row> rows = {
      {"Standard_NC24ads_A100_v4", "eastus", 3.673, 0.444433},
      {"Standard_NC96ads_A100_v4", "westus3", 14.692, 1.61612},
      {"Standard_ND96asr_v4", "southcentralus", 32.63, 3.5893},
      {"Standard_ND96amsr_A100_v4", "eastus2", 32.77, 3.611254},
      {"Standard_NC4as_T4_v3", "westus2", 0.526, 0.061595},
      {"Standard_NC64as_T4_v3", "southcentralus", 5.222, 0.57442},
      {"Standard_NV36ads_A10_v5", "eastus", 3.2, 0.8},
      {"Standard_NV72ads_A10_v5", "westus3", 6.52, 1.63},
      // The table lists no Spot discount for the H100 sizes; kept as listed.
      {"Standard_NC40ads_H100_v5", "southcentralus", 8.38, 8.38},
      {"Standard_ND96isr_H100_v5", "eastus", 98.32, 98.32},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.size + " in " + row.region);
    const RegionPrices* region = Region(row.region);
    ASSERT_NE(region, nullptr);
    ASSERT_TRUE(region->on_demand_usd_per_hour.count(row.size));
    EXPECT_DOUBLE_EQ(region->on_demand_usd_per_hour.at(row.size), row.on_demand);
    ASSERT_TRUE(region->spot_usd_per_hour.count(row.size));
    EXPECT_DOUBLE_EQ(region->spot_usd_per_hour.at(row.size), row.spot);
  }
}

// The table has no row for these sizes in these regions: not offered there.
TEST_F(AzureCatalog, OffersASizeOnlyWhereTheSourcePricesIt) {
  const std::vector<std::pair<std::string, std::string>> absent = {
      {"Standard_ND96asr_v4", "eastus2"},
      {"Standard_ND96isr_H100_v5", "westus3"},
      {"Standard_NC40ads_H100_v5", "westus2"},
  };
  for (const auto& [size, region_name] : absent) {
    const RegionPrices* region = Region(region_name);
    ASSERT_NE(region, nullptr) << region_name;
    EXPECT_EQ(region->on_demand_usd_per_hour.count(size), 0u) << size << " in " << region_name;
    for (const Offering& o : catalog_.Offerings({region_name})) EXPECT_NE(o.instance_type, size);
  }
}

// Specs from the Microsoft Learn size pages, including the two the price
// table gets wrong (12 GPUs for ND H100 v5, 1800 GiB for NDm A100 v4).
TEST_F(AzureCatalog, SpecsAreTheSizePages) {
  struct Spec {
    std::string size, family, gpu_model;
    int gpus, vcpus;
    int64_t memory_gib;
  };
  const std::vector<Spec> specs = {
      {"Standard_ND96isr_H100_v5", "NDisr_H100_v5", "NVIDIA-H100-80GB-HBM3", 8, 96, 1900},
      {"Standard_NC80adis_H100_v5", "NCads_H100_v5", "NVIDIA-H100-NVL", 2, 80, 640},
      {"Standard_ND96amsr_A100_v4", "NDamsr_A100_v4", "NVIDIA-A100-SXM4-80GB", 8, 96, 1900},
      {"Standard_ND96asr_v4", "NDasr_A100_v4", "NVIDIA-A100-SXM4-40GB", 8, 96, 900},
      {"Standard_NC48ads_A100_v4", "NCads_A100_v4", "NVIDIA-A100-80GB-PCIe", 2, 48, 440},
      {"Standard_NV36adms_A10_v5", "NVads_A10_v5", "NVIDIA-A10", 1, 36, 880},
      {"Standard_NC16as_T4_v3", "NCas_T4_v3", "Tesla-T4", 1, 16, 110},
  };
  for (const Spec& s : specs) {
    SCOPED_TRACE(s.size);
    const InstanceType* t = catalog_.FindInstanceType(s.size);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->family, s.family);
    EXPECT_EQ(t->gpu_model, s.gpu_model);
    EXPECT_EQ(t->gpu_count, s.gpus);
    EXPECT_EQ(t->vcpus, s.vcpus);
    EXPECT_EQ(t->memory_mib, s.memory_gib * 1024);
  }
  // Retired (NC V100 v3), fractional-GPU and unpriced (ND H200 v5) sizes are left out.
  for (const char* size : {"Standard_NC6s_v3", "Standard_NV6ads_A10_v5", "Standard_ND96isr_H200_v5"}) {
    EXPECT_EQ(catalog_.FindInstanceType(size), nullptr) << size;
  }
}

TEST_F(AzureCatalog, HasMigWhereNvidiaDefinesIt) {
  std::map<std::string, bool> has_mig;
  for (const auto& g : catalog_.gpu_models) has_mig[g.name] = !g.mig_profiles.empty();
  EXPECT_TRUE(has_mig.at("NVIDIA-A100-80GB-PCIe"));
  EXPECT_TRUE(has_mig.at("NVIDIA-H100-NVL"));
  EXPECT_TRUE(has_mig.at("NVIDIA-H100-80GB-HBM3"));
  EXPECT_FALSE(has_mig.at("NVIDIA-A10"));
  EXPECT_FALSE(has_mig.at("Tesla-T4"));
  const GpuModel* nvl = catalog_.FindGpuModel("h100-nvl");
  ASSERT_NE(nvl, nullptr);
  ASSERT_NE(nvl->FindMigProfile("7g.94gb"), nullptr);
  EXPECT_LE(nvl->FindMigProfile("7g.94gb")->memory_mib, nvl->memory_mib);
}

// Zones as AKS labels them (<region>-1..3); every priced size has a listed
// Spot price (no defaulted discount), and the eviction rate is the default:
// Azure publishes no per-size rates outside the signed-in portal.
TEST_F(AzureCatalog, ZonesSpotPricesAndEvictionRates) {
  const std::set<std::string> want_regions = {"eastus", "eastus2", "southcentralus", "westus2", "westus3"};
  std::set<std::string> regions;
  for (const auto& r : catalog_.regions) {
    SCOPED_TRACE(r.region);
    regions.insert(r.region);
    EXPECT_EQ(r.zones, (std::vector<std::string>{r.region + "-1", r.region + "-2", r.region + "-3"}));
    EXPECT_FALSE(r.on_demand_usd_per_hour.empty());
    for (const auto& [size, price] : r.on_demand_usd_per_hour) {
      ASSERT_TRUE(r.spot_usd_per_hour.count(size)) << size;
      EXPECT_LE(r.spot_usd_per_hour.at(size), price) << size;
    }
    EXPECT_TRUE(r.spot_interruptions_per_hour.empty());
  }
  EXPECT_EQ(regions, want_regions);
  EXPECT_DOUBLE_EQ(catalog_.default_spot_interruptions_per_hour, 0.01);
}

// Splits a line of the source table, whose Generation column may be quoted
// ("V1,V2"); the other fields have no commas.
std::vector<std::string> SplitAzureCsvLine(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += ch;
    }
  }
  return fields;
}

TEST_F(AzureCatalog, MatchesTheDownloadedSourceTableRowForRow) {
  const char* path = std::getenv("GPUSCALER_AZURE_VMS_CSV");
  if (path == nullptr || !std::filesystem::exists(path)) {
    GTEST_SKIP() << "set GPUSCALER_AZURE_VMS_CSV to a downloaded vms.csv (scripts/catalog/gen_azure_catalog.py)";
  }
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const std::vector<std::string> header = SplitAzureCsvLine(line);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  int compared = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = SplitAzureCsvLine(line);
    const std::string& size = f.at(col.at("InstanceType"));
    const RegionPrices* region = Region(f.at(col.at("Region")));
    if (region == nullptr || catalog_.FindInstanceType(size) == nullptr || f.at(col.at("Price")).empty()) continue;
    SCOPED_TRACE(size + " in " + region->region);
    ASSERT_TRUE(region->on_demand_usd_per_hour.count(size));
    EXPECT_DOUBLE_EQ(region->on_demand_usd_per_hour.at(size), std::stod(f.at(col.at("Price"))));
    EXPECT_DOUBLE_EQ(region->spot_usd_per_hour.at(size), std::stod(f.at(col.at("SpotPrice"))));
    ++compared;
  }
  size_t priced = 0;
  for (const auto& r : catalog_.regions) priced += r.on_demand_usd_per_hour.size();
  EXPECT_EQ(priced, static_cast<size_t>(compared)) << "the catalog prices something the table does not";
}

}  // namespace
}  // namespace gpuscaler::azure_catalog_test
