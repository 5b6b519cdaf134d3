// Helpers the actuator's files share. Private to src/controller.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/store/audit_store.h"

namespace gpuscaler::actuator_internal {

inline std::string JoinErrors(const std::vector<OfferingError>& errors) {
  std::string out;
  for (const OfferingError& e : errors) {
    if (!out.empty()) out += "; ";
    out += e.offering_key + ": " + e.error.ToString();
  }
  return out;
}

inline ActionOutcome OutcomeOf(size_t made, int wanted) {
  if (made == 0) return ActionOutcome::kFailed;
  return static_cast<int>(made) >= wanted ? ActionOutcome::kSucceeded : ActionOutcome::kPartial;
}

inline void AddUnits(const std::vector<std::string>& ids, std::vector<std::string>* out) {
  out->insert(out->end(), ids.begin(), ids.end());
}

}  // namespace gpuscaler::actuator_internal
