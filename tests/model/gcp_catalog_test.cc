// Checks the committed Google Cloud catalog (config/catalogs/gcp.yaml): it
// loads with the ordinary catalog loader, and its specs and prices are the
// ones in ../shared/data/catalog/gcp_gpu_machine_types_prices.csv, read here
// at test time (so a regenerated catalog from other data, or a hand edit of
// the YAML, fails).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"

namespace gpuscaler {
namespace {

const std::string kGcpCatalog = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/gcp.yaml";
const std::string kPricesCsv =
    std::string(GPUSCALER_SHARED_DIR) + "/data/catalog/gcp_gpu_machine_types_prices.csv";

// The CSV has no quoted fields: split on commas, header names as keys.
std::vector<std::map<std::string, std::string>> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) out.push_back(f);
    if (!s.empty() && s.back() == ',') out.push_back("");
    return out;
  };
  if (std::getline(in, line)) header = split(line);
  while (std::getline(in, line)) {
    const auto fields = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size() && i < fields.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

class GcpCatalog : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<Catalog> c = LoadCatalogFile(kGcpCatalog);
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

TEST_F(GcpCatalog, StatesItsProviderSourceAndDate) {
  EXPECT_EQ(catalog_.provider, "gcp");
  EXPECT_NE(catalog_.source.find("Cyclenerd/google-cloud-pricing-cost-calculator"), std::string::npos);
  EXPECT_EQ(catalog_.as_of, "2026-07-30");
}

TEST_F(GcpCatalog, HasTheAcceleratorOptimizedSeriesWithMigWhereNvidiaDefinesIt) {
  std::set<std::string> families;
  for (const auto& t : catalog_.instance_types) families.insert(t.family);
  for (const char* f :
       {"a3-highgpu", "a2-highgpu", "a2-ultragpu", "a2-megagpu", "g2-standard", "g4-standard"}) {
    EXPECT_TRUE(families.count(f)) << "family " << f << " missing";
  }
  const InstanceType* a2 = catalog_.FindInstanceType("a2-highgpu-8g");
  ASSERT_NE(a2, nullptr);
  EXPECT_EQ(a2->gpu_model, "NVIDIA-A100-SXM4-40GB");
  EXPECT_EQ(a2->gpu_count, 8);
  bool a100_has_mig = false, l4_has_mig = true;
  for (const auto& g : catalog_.gpu_models) {
    if (g.name == "NVIDIA-A100-SXM4-40GB") a100_has_mig = !g.mig_profiles.empty();
    if (g.name == "NVIDIA-L4") l4_has_mig = !g.mig_profiles.empty();
  }
  EXPECT_TRUE(a100_has_mig);
  EXPECT_FALSE(l4_has_mig);
  // Fractional-GPU G4 shapes cannot be counted in whole GPUs and are left out.
  EXPECT_EQ(catalog_.FindInstanceType("g4-standard-12"), nullptr);
}

TEST_F(GcpCatalog, ZonesBelongToTheirRegion) {
  ASSERT_FALSE(catalog_.regions.empty());
  for (const auto& r : catalog_.regions) {
    ASSERT_FALSE(r.zones.empty()) << r.region;
    for (const auto& z : r.zones) EXPECT_EQ(z.rfind(r.region + "-", 0), 0u) << z;
  }
  ASSERT_NE(Region("us-central1"), nullptr);
}

TEST_F(GcpCatalog, MatchesTheSourceCsvRowForRow) {
  if (!std::filesystem::exists(kPricesCsv)) {
    GTEST_SKIP() << "shared data not available (" << kPricesCsv << ")";
  }
  const auto rows = ReadCsv(kPricesCsv);
  ASSERT_GT(rows.size(), 900u);
  int compared = 0;
  for (const auto& row : rows) {
    const RegionPrices* region = Region(row.at("region"));
    const double gpus = std::stod(row.at("gpu_count"));
    if (region == nullptr || gpus != static_cast<int>(gpus)) continue;
    const std::string& mt = row.at("machine_type");
    SCOPED_TRACE(mt + " in " + row.at("region"));
    const InstanceType* t = catalog_.FindInstanceType(mt);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->gpu_count, static_cast<int>(gpus));
    EXPECT_EQ(t->vcpus, std::stoi(row.at("vcpus")));
    EXPECT_EQ(t->memory_mib, static_cast<int64_t>(std::stod(row.at("ram_gb")) * 1024 + 0.5));
    auto od = region->on_demand_usd_per_hour.find(mt);
    ASSERT_NE(od, region->on_demand_usd_per_hour.end());
    EXPECT_NEAR(od->second, std::stod(row.at("ondemand_usd_per_h")), 1e-6);
    auto spot = region->spot_usd_per_hour.find(mt);
    if (row.at("spot_usd_per_h").empty()) {
      EXPECT_EQ(spot, region->spot_usd_per_hour.end());
    } else {
      ASSERT_NE(spot, region->spot_usd_per_hour.end());
      EXPECT_NEAR(spot->second, std::stod(row.at("spot_usd_per_h")), 1e-6);
    }
    ++compared;
  }
  // 13 regions x 26 whole-GPU machine types, less the few a region lacks.
  EXPECT_GT(compared, 250);
  size_t priced = 0;
  for (const auto& r : catalog_.regions) priced += r.on_demand_usd_per_hour.size();
  EXPECT_EQ(priced, static_cast<size_t>(compared)) << "the catalog prices something the CSV does not";
}

}  // namespace
}  // namespace gpuscaler
