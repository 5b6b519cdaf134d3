#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler {
namespace {

constexpr const char* kCatalog = R"(apiVersion: gpuscaler/v1
kind: Catalog
provider: aws
source: "test numbers"
as_of: "2026-07-20"
defaults: {spot_discount: 0.5, spot_interruptions_per_hour: 0.02, launch_latency: 5m, wake_latency: 90s, volume_usd_per_gib_month: 0.073, volume_gib: 200}
launch_latency: {p4de: 8m}
wake_latency: {p4de: 2m}
gpu_models:
  - name: NVIDIA-A100-SXM4-80GB
    short_name: a100-80gb
    memory_mib: 81920
    mig_profiles:
      - {name: 1g.10gb, compute_slices: 1, memory_slices: 1, memory_mib: 9728, starts: [0,1,2,3,4,5,6]}
      - {name: 3g.40gb, compute_slices: 3, memory_slices: 4, memory_mib: 40192, starts: [0,4]}
  - name: NVIDIA-A10G
    short_name: a10g
    memory_mib: 22888
instance_types:
  - {name: p4de.24xlarge, family: p4de, gpu_model: NVIDIA-A100-SXM4-80GB, gpu_count: 8, gpu_memory_mib: 81920, vcpus: 96, memory_mib: 1179648, local_nvme_gb: 8000, network_mbps: 400000}
  - {name: g5.xlarge, gpu_model: a10g, gpu_count: 1, vcpus: 4, memory_mib: 16384}
regions:
  - region: us-east-1
    zones: [us-east-1a, us-east-1b]
    on_demand_usd_per_hour: {p4de.24xlarge: 27.447, g5.xlarge: 1.006}
    spot_usd_per_hour: {p4de.24xlarge: 9.6}
    spot_interruptions_per_hour: {g5.xlarge: 0.0003}
)";

// kCatalog with the first occurrence of `from` replaced by `to`.
std::string Edit(const std::string& from, const std::string& to) {
  std::string s = kCatalog;
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

int LineOf(const std::string& needle) {
  const std::string s = kCatalog;
  const size_t at = s.find(needle);
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<long>(at), '\n'));
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(CatalogLoader, ReadsEveryField) {
  const Result<Catalog> r = ParseCatalog(kCatalog, "c.yaml");
  ASSERT_TRUE(r.ok()) << r.error().message();
  const Catalog& c = *r;
  EXPECT_EQ(c.provider, "aws");
  EXPECT_EQ(c.source, "test numbers");
  EXPECT_EQ(c.as_of, "2026-07-20");
  EXPECT_EQ(c.default_spot_discount, 0.5);
  EXPECT_EQ(c.default_spot_interruptions_per_hour, 0.02);
  EXPECT_EQ(c.default_launch_latency, Seconds(300));
  EXPECT_EQ(c.launch_latency.at("p4de"), Seconds(480));
  EXPECT_EQ(c.default_wake_latency, Seconds(90));
  EXPECT_EQ(c.wake_latency.at("p4de"), Seconds(120));
  EXPECT_DOUBLE_EQ(c.volume_usd_per_gib_hour, 0.073 / 730);
  EXPECT_EQ(c.default_volume_gib, 200);
  for (const Offering& o : c.Offerings()) {
    EXPECT_EQ(o.wake_latency, o.instance_type == "p4de.24xlarge" ? Seconds(120) : Seconds(90)) << o.Key();
  }
  ASSERT_EQ(c.gpu_models.size(), 2u);
  const GpuModel* a100 = c.FindGpuModel("a100-80gb");
  ASSERT_NE(a100, nullptr);
  ASSERT_EQ(a100->mig_profiles.size(), 2u);
  EXPECT_EQ(a100->mig_profiles[1].name, "3g.40gb");
  EXPECT_EQ(a100->mig_profiles[1].memory_slices, 4);
  EXPECT_EQ(a100->mig_profiles[1].allowed_starts, (std::vector<int>{0, 4}));
  const InstanceType* p4de = c.FindInstanceType("p4de.24xlarge");
  ASSERT_NE(p4de, nullptr);
  EXPECT_EQ(p4de->gpu_count, 8);
  EXPECT_EQ(p4de->vcpus, 96);
  EXPECT_EQ(p4de->local_nvme_gb, 8000);
  EXPECT_EQ(p4de->network_mbps, 400000);
  // Family from the name, canonical GPU name from the short one, GPU memory from the model.
  const InstanceType* g5 = c.FindInstanceType("g5.xlarge");
  ASSERT_NE(g5, nullptr);
  EXPECT_EQ(g5->family, "g5");
  EXPECT_EQ(g5->gpu_model, "NVIDIA-A10G");
  EXPECT_EQ(g5->gpu_memory_mib, 22888);
  ASSERT_EQ(c.regions.size(), 1u);
  EXPECT_EQ(c.regions[0].zones, (std::vector<std::string>{"us-east-1a", "us-east-1b"}));
  EXPECT_EQ(c.regions[0].on_demand_usd_per_hour.at("g5.xlarge"), 1.006);
  EXPECT_EQ(c.regions[0].spot_usd_per_hour.at("p4de.24xlarge"), 9.6);
  // Offerings apply the defaults where the region lists nothing.
  const std::vector<Offering> offerings = c.Offerings();
  ASSERT_EQ(offerings.size(), 8u);  // 2 types x 2 zones x 2 capacity types
  for (const Offering& o : offerings) {
    if (o.instance_type == "g5.xlarge" && o.capacity_type == CapacityType::kSpot) {
      EXPECT_DOUBLE_EQ(o.usd_per_hour, 1.006 * 0.5);
      EXPECT_EQ(o.interruptions_per_hour, 0.0003);
      EXPECT_EQ(o.launch_latency, Seconds(300));
    }
    if (o.instance_type == "p4de.24xlarge" && o.capacity_type == CapacityType::kSpot) {
      EXPECT_EQ(o.usd_per_hour, 9.6);
      EXPECT_EQ(o.interruptions_per_hour, 0.02);
      EXPECT_EQ(o.launch_latency, Seconds(480));
    }
  }
}

TEST(CatalogLoader, JsonCatalogLoadsToo) {
  const char* json = R"({"apiVersion": "gpuscaler/v1", "kind": "Catalog", "provider": "aws",
  "source": "s", "as_of": "2026-01-02",
  "gpu_models": [{"name": "Tesla-T4", "short_name": "t4", "memory_mib": 16384}],
  "instance_types": [{"name": "g4dn.xlarge", "family": "g4dn", "gpu_model": "Tesla-T4",
                      "gpu_count": 1, "vcpus": 4, "memory_mib": 16384}],
  "regions": [{"region": "eu-west-1", "zones": ["eu-west-1a"],
               "on_demand_usd_per_hour": {"g4dn.xlarge": 0.587}}]})";
  const Result<Catalog> r = ParseCatalog(json, "c.json");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->regions.at(0).on_demand_usd_per_hour.at("g4dn.xlarge"), 0.587);
}

struct InvalidCase {
  std::string name;
  std::string text;
  std::string field;
  int line;
  std::string message;
};

TEST(CatalogLoader, RejectsInvalidCatalogsWithFieldLineAndMessage) {
  const std::vector<InvalidCase> cases = {
      {"unknown gpu_model reference",
       Edit("gpu_model: a10g", "gpu_model: a10"), "instance_types[1].gpu_model",
       LineOf("{name: g5.xlarge"), "unknown gpu_model 'a10'"},
      {"price for an unknown instance type",
       Edit("g5.xlarge: 1.006", "g5.xlarge: 1.006, g5.2xlarge: 1.212"),
       "regions[0].on_demand_usd_per_hour.g5.2xlarge", LineOf("on_demand_usd_per_hour"),
       "unknown instance type 'g5.2xlarge' (did you mean 'g5.xlarge'?)"},
      {"negative price", Edit("27.447", "-27.447"),
       "regions[0].on_demand_usd_per_hour.p4de.24xlarge", LineOf("on_demand_usd_per_hour"),
       "must be >= 0"},
      {"price that is a string", Edit("27.447", "\"27.447\""),
       "regions[0].on_demand_usd_per_hour.p4de.24xlarge", LineOf("on_demand_usd_per_hour"),
       "expected a number, got a string"},
      {"spot price without an on-demand price",
       Edit("on_demand_usd_per_hour: {p4de.24xlarge: 27.447, g5.xlarge: 1.006}",
            "on_demand_usd_per_hour: {g5.xlarge: 1.006}"),
       "regions[0].spot_usd_per_hour.p4de.24xlarge", LineOf("spot_usd_per_hour"),
       "has no on-demand price in this region"},
      {"duplicate instance type",
       Edit("regions:", "  - {name: p4de.24xlarge, vcpus: 1, memory_mib: 1}\nregions:"),
       "instance_types[2].name", LineOf("regions:"),
       "duplicate instance type 'p4de.24xlarge'"},
      {"duplicate GPU model", Edit("name: NVIDIA-A10G", "name: NVIDIA-A100-SXM4-80GB"),
       "gpu_models[1].name", LineOf("name: NVIDIA-A10G"),
       "duplicate GPU model 'NVIDIA-A100-SXM4-80GB'"},
      {"duplicate price key", Edit("g5.xlarge: 1.006", "g5.xlarge: 1.006, g5.xlarge: 2"),
       "regions[0].on_demand_usd_per_hour.g5.xlarge", LineOf("on_demand_usd_per_hour"),
       "duplicate key 'g5.xlarge'"},
      {"MIG start outside the GPU", Edit("starts: [0,4]", "starts: [0,8]"),
       "gpu_models[0].mig_profiles[1].starts[1]", LineOf("{name: 3g.40gb"),
       "outside memory slices 0..7"},
      {"MIG instance that does not fit", Edit("starts: [0,4]", "starts: [0,6]"),
       "gpu_models[0].mig_profiles[1].starts[1]", LineOf("{name: 3g.40gb"),
       "a 4-slice instance starting at 6 does not fit"},
      {"compute slices above 7", Edit("compute_slices: 3", "compute_slices: 8"),
       "gpu_models[0].mig_profiles[1].compute_slices", LineOf("{name: 3g.40gb"),
       "must be in 1..7"},
      {"compute slices of 0", Edit("compute_slices: 3", "compute_slices: 0"),
       "gpu_models[0].mig_profiles[1].compute_slices", LineOf("{name: 3g.40gb"),
       "must be in 1..7"},
      {"unknown field", Edit("launch_latency: 5m", "launch_latncy: 5m"),
       "defaults.launch_latncy", 6, "(did you mean 'launch_latency'?)"},
      {"missing source", Edit("source: \"test numbers\"\n", ""), "source", 1,
       "required field is missing"},
      {"bad as_of date", Edit("\"2026-07-20\"", "\"July 2026\""), "as_of", 5,
       "expected a date"},
      {"wrong kind", Edit("kind: Catalog", "kind: Policy"), "kind", 2, "must be Catalog"},
      {"wrong apiVersion", Edit("gpuscaler/v1", "gpuscaler/v0"), "apiVersion", 1,
       "must be gpuscaler/v1"},
      {"vcpus as a string", Edit("vcpus: 4", "vcpus: four"), "instance_types[1].vcpus",
       LineOf("{name: g5.xlarge"), "expected an integer, got a string"},
      {"launch latency for an unknown family", Edit("{p4de: 8m}", "{p4de: 8m, p9: 1m}"),
       "launch_latency.p9", 7, "no instance type has family 'p9'"},
      {"bad launch latency", Edit("{p4de: 8m}", "{p4de: soon}"), "launch_latency.p4de", 7,
       "invalid duration 'soon'"},
      {"zone outside its region", Edit("us-east-1b]", "us-west-2b]"), "regions[0].zones[1]",
       LineOf("zones:"), "is not in region 'us-east-1'"},
      {"syntax error", Edit("zones: [us-east-1a, us-east-1b]", "zones: [us-east-1a"), "",
       LineOf("on_demand_usd_per_hour"), "syntax error"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<Catalog> r = ParseCatalog(c.text, "cat.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().category(), ErrorCategory::kConfig);
    const std::vector<std::string> lines = Lines(r.error().message());
    ASSERT_EQ(lines.size(), 1u) << r.error().message();
    const std::string want_prefix = "cat.yaml:" + std::to_string(c.line) + ":";
    EXPECT_EQ(lines[0].rfind(want_prefix, 0), 0u) << lines[0];
    if (!c.field.empty()) {
      EXPECT_NE(lines[0].find(": " + c.field + ": "), std::string::npos) << lines[0];
    }
    EXPECT_NE(lines[0].find(c.message), std::string::npos) << lines[0];
  }
}

TEST(CatalogLoader, ReportsEveryProblemAtOnce) {
  std::string text = Edit("vcpus: 4", "vcpus: -4");
  text.replace(text.find("27.447"), 6, "-1");
  text.replace(text.find("compute_slices: 1,"), 18, "compute_slices: 9,");
  const Result<Catalog> r = ParseCatalog(text, "cat.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Lines(r.error().message()).size(), 3u) << r.error().message();
}

TEST(CatalogLoader, UnreadableFileSaysWhy) {
  const Result<Catalog> r = LoadCatalogFile("/nonexistent/aws.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "/nonexistent/aws.yaml: cannot read: No such file or directory");
}

TEST(CatalogLoader, TheShippedAwsCatalogLoadsCleanly) {
  const std::string path = std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  const Result<Catalog> r = LoadCatalogFile(path);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->provider, "aws");
  for (const char* family : {"p5", "p4d", "p4de", "g6", "g6e", "g5", "g4dn"}) {
    SCOPED_TRACE(family);
    EXPECT_TRUE(std::any_of(r->instance_types.begin(), r->instance_types.end(),
                            [&](const InstanceType& t) { return t.family == family; }));
  }
  EXPECT_FALSE(r->Offerings({"us-east-1"}).empty());
}

TEST(DocReader, SuggestsOnlyPlausibleTypos) {
  EXPECT_EQ(ClosestName("max_spot_shar", {"max_spot_share", "min_zones"}), "max_spot_share");
  EXPECT_EQ(ClosestName("scalng", {"scaling", "spot"}), "scaling");
  EXPECT_EQ(ClosestName("banana", {"scaling", "spot"}), "");
  // Ties go to the first candidate; a closer one later still wins.
  EXPECT_EQ(ClosestName("spots", {"spot", "slots"}), "spot");
  EXPECT_EQ(ClosestName("min_zone", {"zones", "max_zones", "min_zones"}), "min_zones");
  // A long key is compared by length first and gets no suggestion.
  EXPECT_EQ(ClosestName(std::string(5000, 'x'), {"scaling", "spot"}), "");
  EXPECT_EQ(ClosestName(std::string(30, 's') + "caling", {"scaling"}), "");
}

}  // namespace
}  // namespace gpuscaler
