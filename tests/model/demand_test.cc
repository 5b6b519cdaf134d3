#include "gpuscaler/model/demand.h"

#include <gtest/gtest.h>

#include "gpuscaler/model/compatibility.h"
#include "gpuscaler/model/gpu.h"

namespace gpuscaler {
namespace {

DemandUnit Unit(int gpus, int gpu_milli, std::string mig_profile) {
  DemandUnit u;
  u.gpus = gpus;
  u.gpu_milli = gpu_milli;
  u.mig_profile = std::move(mig_profile);
  return u;
}

TEST(GpuShare, CountsWholeGpusMilliFractionsAndMigComputeSlices) {
  struct Case {
    std::string name;
    DemandUnit unit;
    double want_share;
    bool want_needs_gpu;
    int want_whole;
  } cases[] = {
      {"cpu only", Unit(0, 0, ""), 0, false, 0},
      {"one gpu", Unit(1, 0, ""), 1, true, 1},
      {"eight gpus", Unit(8, 0, ""), 8, true, 8},
      {"whole gpus win over a fraction", Unit(2, 500, "3g.40gb"), 2, true, 2},
      {"quarter gpu", Unit(0, 250, ""), 0.25, true, 1},
      {"a fraction wins over mig", Unit(0, 500, "3g.40gb"), 0.5, true, 1},
      {"mig 1g", Unit(0, 0, "1g.10gb"), 1.0 / kMigComputeSlices, true, 1},
      {"mig 3g", Unit(0, 0, "3g.40gb"), 3.0 / kMigComputeSlices, true, 1},
      {"mig 7g is a whole gpu", Unit(0, 0, "7g.80gb"), 1, true, 1},
      {"mig without a slice count", Unit(0, 0, "g.10gb"), 1.0 / kMigComputeSlices, true, 1},
      {"mig slice count above 7", Unit(0, 0, "9g.90gb"), 1.0 / kMigComputeSlices, true, 1},
      {"mig slice count 0", Unit(0, 0, "0g.5gb"), 1.0 / kMigComputeSlices, true, 1},
      {"mig slice count too long for an int", Unit(0, 0, "99999999999999999999g"),
       1.0 / kMigComputeSlices, true, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_DOUBLE_EQ(GpuShare(c.unit), c.want_share);
    EXPECT_EQ(NeedsGpu(c.unit), c.want_needs_gpu);
    EXPECT_EQ(WholeGpusTaken(c.unit), c.want_whole);
  }
}

TEST(MigProfile, ShareMilliRoundsUp) {
  EXPECT_EQ((MigProfile{"1g.10gb", 1, 1, 9728, {0}}).ShareMilli(), 143);
  EXPECT_EQ((MigProfile{"3g.40gb", 3, 4, 40192, {0}}).ShareMilli(), 429);
  EXPECT_EQ((MigProfile{"7g.80gb", 7, 8, 80896, {0}}).ShareMilli(), 1000);
}

TEST(UnitFitsType, ChecksGpusModelsMigProfilesMemoryCpuAndMemory) {
  const GpuModel a100{"NVIDIA-A100-SXM4-80GB", "a100-80gb", 81920,
                      {{"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}}, {"3g.40gb", 3, 4, 40192, {0, 4}}}};
  const InstanceType p4de{"p4de.24xlarge", "p4de", a100.name, 8, 81920, 96, 1179648, 0, 0};
  const InstanceType cpu{"m5.large", "m5", "", 0, 0, 2, 8192, 0, 0};
  const auto unit = [](int gpus, std::string mig, int64_t min_gpu_memory_mib) {
    DemandUnit u = Unit(gpus, 0, std::move(mig));
    u.min_gpu_memory_mib = min_gpu_memory_mib;
    u.cpu_milli = 1000;
    u.memory_mib = 4096;
    return u;
  };
  DemandUnit by_short_name = unit(1, "", 0);
  by_short_name.gpu_models = {"a100-80gb"};
  DemandUnit other_model = unit(1, "", 0);
  other_model.gpu_models = {"l4"};
  DemandUnit too_much_cpu = unit(0, "", 0);
  too_much_cpu.cpu_milli = 4000;
  struct Case {
    std::string name;
    DemandUnit unit;
    const InstanceType* type;
    const GpuModel* gpu;
    bool want_fits;
    int want_mig_index;
  } cases[] = {
      {"cpu-only work on a cpu type", unit(0, "", 0), &cpu, nullptr, true, -1},
      {"cpu-only work needing more vcpu than the type has", too_much_cpu, &cpu, nullptr, false, -1},
      {"gpu work on a cpu type", unit(1, "", 0), &cpu, nullptr, false, -1},
      {"eight gpus", unit(8, "", 0), &p4de, &a100, true, -1},
      {"more gpus than the type has", unit(9, "", 0), &p4de, &a100, false, -1},
      {"gpu model by short name", by_short_name, &p4de, &a100, true, -1},
      {"another gpu model", other_model, &p4de, &a100, false, -1},
      {"whole-gpu memory", unit(1, "", 81920), &p4de, &a100, true, -1},
      {"more than the gpu's memory", unit(1, "", 81921), &p4de, &a100, false, -1},
      {"mig profile", unit(0, "3g.40gb", 0), &p4de, &a100, true, 1},
      {"mig profile the gpu lacks", unit(0, "2g.20gb", 0), &p4de, &a100, false, -1},
      {"mig profile on an unknown gpu model", unit(0, "1g.10gb", 0), &p4de, nullptr, false, -1},
      {"mig memory within the instance", unit(0, "1g.10gb", 9728), &p4de, &a100, true, 0},
      {"mig memory above the instance, below the gpu", unit(0, "1g.10gb", 20000), &p4de, &a100,
       false, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    int mig_index = 42;
    EXPECT_EQ(UnitFitsType(c.unit, *c.type, c.gpu, &mig_index), c.want_fits);
    EXPECT_EQ(mig_index, c.want_mig_index);
  }
}

}  // namespace
}  // namespace gpuscaler
