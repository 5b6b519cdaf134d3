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

// Whether `names` holds `name`.
inline bool Contains(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& n : names) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace gpuscaler
