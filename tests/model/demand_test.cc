#include "gpuscaler/model/demand.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpuscaler
