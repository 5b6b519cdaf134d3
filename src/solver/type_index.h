// The snapshot's instance types by name, for passes that look a type up per
// offering or per node: built once per pass, since a scan of the types for
// each of them is the planner's hot path. Private to the solver.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>

#include "gpuscaler/model/snapshot.h"

namespace gpuscaler::solver_detail {

// Valid while the snapshot is.
using TypesByName = std::unordered_map<std::string_view, const InstanceType*>;

inline TypesByName IndexTypes(const Snapshot& snapshot) {
  TypesByName types;
  types.reserve(snapshot.instance_types.size());
  for (const InstanceType& t : snapshot.instance_types) types.emplace(t.name, &t);
  return types;
}

// The type `name` in `types`, or nullptr.
inline const InstanceType* FindType(const TypesByName& types, std::string_view name) {
  const auto found = types.find(name);
  return found == types.end() ? nullptr : found->second;
}

// The snapshot's GPU model named `name` (its name or short name), or nullptr.
inline const GpuModel* FindGpu(const Snapshot& snapshot, const std::string& name) {
  for (const GpuModel& g : snapshot.gpu_models) {
    if (g.name == name || (!g.short_name.empty() && g.short_name == name)) return &g;
  }
  return nullptr;
}

}  // namespace gpuscaler::solver_detail
