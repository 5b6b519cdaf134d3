#include "gpuscaler/model/gpu.h"

#include <algorithm>

#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler {

const MigProfile* GpuModel::FindMigProfile(const std::string& profile_name) const {
  return FindByName(mig_profiles, profile_name);
}

namespace {

uint8_t SliceMask(int start, int width) {
  return static_cast<uint8_t>(((1u << width) - 1u) << start);
}

}  // namespace

std::optional<std::vector<MigSlot>> MigLayout::Solve(const GpuModel& gpu, std::vector<int> profiles) {
  int compute = 0;
  for (int p : profiles) {
    if (p < 0 || p >= static_cast<int>(gpu.mig_profiles.size())) return std::nullopt;
    compute += gpu.mig_profiles[p].compute_slices;
  }
  if (compute > kMigComputeSlices) return std::nullopt;
  // Widest first prunes the search; ties by index keep it deterministic.
  std::sort(profiles.begin(), profiles.end(), [&](int a, int b) {
    const int wa = gpu.mig_profiles[a].memory_slices, wb = gpu.mig_profiles[b].memory_slices;
    return wa != wb ? wa > wb : a < b;
  });
  std::vector<MigSlot> slots(profiles.size());
  auto place = [&](auto&& self, size_t i, uint8_t mask) -> bool {
    if (i == profiles.size()) return true;
    const MigProfile& p = gpu.mig_profiles[profiles[i]];
    for (int start : p.allowed_starts) {
      if (start < 0 || start + p.memory_slices > kMigMemorySlices) continue;
      const uint8_t m = SliceMask(start, p.memory_slices);
      if (mask & m) continue;
      slots[i] = {profiles[i], start};
      if (self(self, i + 1, static_cast<uint8_t>(mask | m))) return true;
    }
    return false;
  };
  if (!place(place, 0, 0)) return std::nullopt;
  return slots;
}

bool MigLayout::CanAdd(const GpuModel& gpu, int profile_index) const {
  std::vector<int> profiles;
  for (const auto& s : slots_) profiles.push_back(s.profile_index);
  profiles.push_back(profile_index);
  return Solve(gpu, std::move(profiles)).has_value();
}

std::optional<int> MigLayout::TryAdd(const GpuModel& gpu, int profile_index) {
  std::vector<int> profiles;
  for (const auto& s : slots_) profiles.push_back(s.profile_index);
  profiles.push_back(profile_index);
  auto solved = Solve(gpu, std::move(profiles));
  if (!solved) return std::nullopt;
  // The new instance is the last one of its profile in the solved order
  // whose start is not taken by an existing instance of the same profile;
  // simplest: rebuild and report the start that was not there before.
  std::vector<MigSlot> old = slots_;
  slots_ = std::move(*solved);
  memory_mask_ = 0;
  used_compute_ = 0;
  for (const auto& s : slots_) {
    memory_mask_ |= SliceMask(s.start, gpu.mig_profiles[s.profile_index].memory_slices);
    used_compute_ += gpu.mig_profiles[s.profile_index].compute_slices;
  }
  for (const auto& s : slots_) {
    if (s.profile_index != profile_index) continue;
    bool existed = false;
    for (const auto& o : old) existed = existed || (o.profile_index == s.profile_index && o.start == s.start);
    if (!existed) return s.start;
  }
  // Every start of this profile existed before: instances were shuffled; any
  // start of the profile identifies an instance of it.
  for (const auto& s : slots_) {
    if (s.profile_index == profile_index) return s.start;
  }
  return std::nullopt;
}

bool MigLayout::Remove(const GpuModel& gpu, int start) {
  auto it = std::find_if(slots_.begin(), slots_.end(), [&](const MigSlot& s) { return s.start == start; });
  if (it == slots_.end()) return false;
  const MigProfile& p = gpu.mig_profiles[it->profile_index];
  memory_mask_ &= static_cast<uint8_t>(~SliceMask(start, p.memory_slices));
  used_compute_ -= p.compute_slices;
  slots_.erase(it);
  return true;
}

}  // namespace gpuscaler
