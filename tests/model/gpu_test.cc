#include "gpuscaler/model/gpu.h"

#include <gtest/gtest.h>

namespace gpuscaler {
namespace {

// A100/H100 80GB placement table (NVIDIA MIG user guide).
GpuModel A100_80() {
  GpuModel g;
  g.name = "A100-SXM4-80GB";
  g.short_name = "a100-80gb";
  g.memory_mib = 81920;
  g.mig_profiles = {
      {"1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}},
      {"2g.20gb", 2, 2, 19968, {0, 2, 4}},
      {"3g.40gb", 3, 4, 40192, {0, 4}},
      {"4g.40gb", 4, 4, 40192, {0}},
      {"7g.80gb", 7, 8, 80896, {0}},
  };
  return g;
}

TEST(MigLayout, AcceptsValidLayoutsAndRejectsInvalidOnes) {
  const GpuModel g = A100_80();
  struct Case {
    std::string name;
    std::vector<int> profiles;  // indices, added in order
    bool want_all_fit;
  } cases[] = {
      {"seven 1g", {0, 0, 0, 0, 0, 0, 0}, true},
      {"eight 1g exceeds compute", {0, 0, 0, 0, 0, 0, 0, 0}, false},
      {"3g + 3g", {2, 2}, true},
      {"4g + 3g", {3, 2}, true},
      {"4g + 4g", {3, 3}, false},
      {"3g + 2g + 1g + 1g (needs the 3g moved to slice 4)", {2, 1, 0, 0}, true},
      {"1g x4 then 3g", {0, 0, 0, 0, 2}, true},
      {"2g + 2g + 2g + 1g", {1, 1, 1, 0}, true},
      {"3g + 3g + 1g: no memory slice left", {2, 2, 0}, false},
      {"7g alone", {4}, true},
      {"7g + 1g", {4, 0}, false},
      {"three 2g + 1g", {1, 1, 1, 0}, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    MigLayout layout;
    bool all = true;
    for (int p : c.profiles) all = all && layout.TryAdd(g, p).has_value();
    EXPECT_EQ(all, c.want_all_fit);
  }
}

TEST(MigLayout, RemoveFreesSlicesForReuse) {
  const GpuModel g = A100_80();
  MigLayout layout;
  ASSERT_EQ(layout.TryAdd(g, 2), 0);  // 3g at 0
  ASSERT_EQ(layout.TryAdd(g, 2), 4);  // 3g at 4
  EXPECT_EQ(layout.slots().size(), 2u);
  EXPECT_FALSE(layout.CanAdd(g, 3));
  EXPECT_TRUE(layout.Remove(g, 0));
  EXPECT_FALSE(layout.Remove(g, 0));
  EXPECT_TRUE(layout.CanAdd(g, 3));  // 4g at 0 fits again
  EXPECT_EQ(layout.used_compute_slices(), 3);
}

}  // namespace
}  // namespace gpuscaler
