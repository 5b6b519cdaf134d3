// Lookup by name in the small lists that catalogs, GPU models and policies
// keep (instance types, MIG profiles, pools, classes): linear, first match.
#pragma once

#include <string>
#include <vector>

namespace gpuscaler {

// The first item whose `name` member equals `name`, or nullptr. The pointer
// is valid while `items` is not modified.
template <typename T>
const T* FindByName(const std::vector<T>& items, const std::string& name) {
  for (const T& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

}  // namespace gpuscaler
