// Helpers shared by the planner's tests (planner_*_test.cc): unplaced units
// counted by reason, and demand units pinned to GPU models and memory or
// asking for a MIG profile.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "solver/fixtures.h"

namespace gpuscaler::testing {

inline std::map<UnplacedReason, int> ReasonCounts(const Plan& p) {
  std::map<UnplacedReason, int> m;
  for (const auto& u : p.unplaced) m[u.reason]++;
  return m;
}

inline DemandUnit WithModels(DemandUnit u, std::vector<std::string> models, int64_t min_mem = 0) {
  u.gpu_models = std::move(models);
  u.min_gpu_memory_mib = min_mem;
  return u;
}

inline DemandUnit Mig(const std::string& id, const std::string& profile) {
  DemandUnit u = Unit(id, 0, 1000, 4096, "training");
  u.mig_profile = profile;
  return u;
}

}  // namespace gpuscaler::testing
