#include "gpuscaler/policy/policy.h"

namespace gpuscaler {

const NodePoolPolicy* Policy::FindPool(const std::string& pool_name) const {
  for (const auto& p : pools) {
    if (p.name == pool_name) return &p;
  }
  return nullptr;
}

const WorkloadClassPolicy* Policy::FindClass(const std::string& class_name) const {
  for (const auto& c : classes) {
    if (c.name == class_name) return &c;
  }
  return nullptr;
}

}  // namespace gpuscaler
