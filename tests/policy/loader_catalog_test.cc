// The policy loader checked against a catalog (names it lacks, GPU names,
// a MIG class's memory) and against the regions an installation serves.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "gpuscaler/policy/loader.h"
#include "policy/loader_test_support.h"

namespace gpuscaler::loader_catalog_test {
namespace {

using testing::InvalidCase;
using testing::Join;

Catalog SmallCatalog() {
  Catalog c;
  c.provider = "aws";
  GpuModel a10g{"NVIDIA-A10G", "a10g", 22888, {}};
  GpuModel l4{"NVIDIA-L4", "l4", 22888, {}};
  GpuModel a100{"NVIDIA-A100-SXM4-80GB", "a100-80gb", 81920,
                {{"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}}};
  c.gpu_models = {a10g, l4, a100};
  c.instance_types = {
      {"g5.xlarge", "g5", "NVIDIA-A10G", 1, 22888, 4, 16384, 250, 2500},
      {"g5.12xlarge", "g5", "NVIDIA-A10G", 4, 22888, 48, 196608, 3800, 40000},
      {"g6.xlarge", "g6", "NVIDIA-L4", 1, 22888, 4, 16384, 250, 2500},
      {"p4de.24xlarge", "p4de", "NVIDIA-A100-SXM4-80GB", 8, 81920, 96, 1179648, 8000, 400000},
  };
  RegionPrices r;
  r.region = "us-east-1";
  r.zones = {"us-east-1a", "us-east-1b"};
  r.on_demand_usd_per_hour = {{"g5.xlarge", 1.006}, {"g5.12xlarge", 5.672},
                              {"g6.xlarge", 0.8048}, {"p4de.24xlarge", 27.447}};
  c.regions = {r};
  return c;
}

TEST(PolicyLoader, WithACatalogRejectsNamesTheCatalogLacks) {
  const Catalog catalog = SmallCatalog();
  const std::string head = "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\n";
  const std::vector<InvalidCase> cases = {
      {"unknown instance type", head + "pools: [{name: p, instance_types: [g5.xlarg]}]\n", false,
       "pools[0].instance_types[0]", 4, "unknown instance type 'g5.xlarg' (not in the catalog) "
       "(did you mean 'g5.xlarge'?)"},
      {"unknown family", head + "pools: [{name: p, families: [g7]}]\n", false,
       "pools[0].families[0]", 4, "unknown instance family 'g7'"},
      {"unknown GPU model", head + "pools: [{name: p, gpu_models: [h100]}]\n", false,
       "pools[0].gpu_models[0]", 4, "unknown GPU model 'h100'"},
      {"unknown region", head + "pools: [{name: p, regions: [us-west-2]}]\n", false,
       "pools[0].regions[0]", 4, "unknown region 'us-west-2'"},
      {"unknown zone", head + "pools: [{name: p, zones: [us-east-1z]}]\n", false,
       "pools[0].zones[0]", 4, "unknown zone 'us-east-1z'"},
      {"class GPU model unknown",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\n"
       "classes: [{name: a, shape: {gpu_models: [a10]}}]\n",
       false, "classes[0].shape.gpu_models[0]", 4, "unknown GPU model 'a10'"},
      {"unknown MIG profile",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\n"
       "classes: [{name: a, shape: {mig_profile: 2g.99gb}}]\n",
       false, "classes[0].shape.mig_profile", 4, "MIG profile '2g.99gb'"},
      {"class shape fits no instance of its pool",
       "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p, families: [g5, g6]}]\n"
       "classes: [{name: a, shape: {gpus: 8}}]\n",
       false, "classes[0].name", 4, "no instance type of pool 'p' fits"},
      {"pool that matches no priced type",
       "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a, pools: [q]}]\n"
       "pools: [{name: p}, {name: q, families: [g5], gpu_models: [l4]}]\n",
       false, "pools[1].name", 4, "no priced GPU instance type in the catalog matches pool 'q'"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    const PolicyLoadResult r = ParsePolicy(c.text, "cat.yaml", &catalog);
    ASSERT_GE(r.problems.size(), 1u);
    const ConfigProblem& p = r.problems[0];
    EXPECT_EQ(p.field, c.field) << Join(r.problems);
    EXPECT_EQ(p.line, c.line) << p.ToString();
    EXPECT_NE(p.message.find(c.message), std::string::npos) << p.ToString();
    // One mistake, one problem: no follow-on noise.
    EXPECT_EQ(r.problems.size(), 1u) << Join(r.problems);
  }
}

TEST(PolicyLoader, WithACatalogShortAndFullGpuNamesAgree) {
  const Catalog catalog = SmallCatalog();
  const char* text = "apiVersion: gpuscaler/v1\nkind: Policy\n"
                     "pools: [{name: p, gpu_models: [NVIDIA-A100-SXM4-80GB]}]\n"
                     "classes: [{name: a, shape: {gpus: 8, gpu_models: [a100-80gb]}},\n"
                     "          {name: m, shape: {mig_profile: 1g.10gb}}]\n";
  const PolicyLoadResult r = ParsePolicy(text, "p.yaml", &catalog);
  EXPECT_TRUE(r.ok()) << Join(r.problems);
}

TEST(PolicyLoader, WithACatalogAMigClassNeedsItsMemoryInTheMigInstance) {
  // The planner leaves such units unplaced (tests/solver): one rule, in
  // model/compatibility.h, for both. The 1g.10gb instance has 9728 MiB.
  const Catalog catalog = SmallCatalog();
  const std::string file = ::testing::TempDir() + "/mig_memory.yaml";
  const auto policy = [](const std::string& min_gpu_memory_mib) {
    return "apiVersion: gpuscaler/v1\nkind: Policy\npools: [{name: p}]\nclasses:\n"
           "  - name: mig\n"
           "    shape: {mig_profile: 1g.10gb, min_gpu_memory_mib: " + min_gpu_memory_mib + "}\n";
  };
  std::ofstream(file) << policy("20000");
  const PolicyLoadResult rejected = LoadPolicyFile(file, &catalog);
  ASSERT_EQ(rejected.problems.size(), 1u) << Join(rejected.problems);
  EXPECT_EQ(rejected.problems[0].ToString(),
            file + ":5:11: classes[0].name: no pool can serve class 'mig': no instance type of "
                   "pool 'p' fits the class's shape (GPU model, GPU count or memory, MIG "
                   "profile, CPU, memory)");
  std::ofstream(file) << policy("9728");
  const PolicyLoadResult accepted = LoadPolicyFile(file, &catalog);
  EXPECT_TRUE(accepted.ok()) << Join(accepted.problems);
}

TEST(PolicyLoader, WithServedRegionsRejectsPoolsOutsideThem) {
  struct Case {
    std::string name;
    std::string pool;       // the pool's lines after "  - name: gpu\n"
    std::string field;      // "" when valid
    std::string message;    // substring
  };
  const std::vector<Case> cases = {
      {"a region outside", "    regions: [us-east-1, eu-west-1]\n", "pools[0].regions",
       "region 'eu-west-1' outside the regions this installation serves ('us-east-1', 'us-west-2')"},
      {"zones without regions, outside", "    zones: [us-east-1a, eu-west-1b]\n", "pools[0].zones",
       "zone 'eu-west-1b' outside the regions"},
      {"served region and its zones", "    regions: [us-west-2]\n    zones: [us-west-2a]\n", "", ""},
      {"zones without regions, served", "    zones: [us-east-1a, us-west-2b]\n", "", ""},
      {"no regions or zones: any", "", "", ""},
  };
  PolicyLoadOptions options;
  options.regions = {"us-east-1", "us-west-2"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string text = "apiVersion: gpuscaler/v1\nkind: Policy\nclasses: [{name: a}]\npools:\n"
                             "  - name: gpu\n" + c.pool;
    const PolicyLoadResult r = ParsePolicy(text, "p.yaml", options);
    if (c.field.empty()) {
      EXPECT_TRUE(r.ok()) << Join(r.problems);
      continue;
    }
    ASSERT_EQ(r.problems.size(), 1u) << Join(r.problems);
    EXPECT_EQ(r.problems[0].field, c.field);
    EXPECT_EQ(r.problems[0].line, 6);
    EXPECT_EQ(r.problems[0].column, int(c.pool.find('[')) + 1) << r.problems[0].ToString();  // the list
    EXPECT_NE(r.problems[0].message.find(c.message), std::string::npos) << r.problems[0].ToString();
    // Without served regions the same pool loads.
    EXPECT_TRUE(ParsePolicy(text, "p.yaml").ok());
  }
}

}  // namespace
}  // namespace gpuscaler::loader_catalog_test
