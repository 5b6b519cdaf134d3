// GPU models and Multi-Instance GPU (MIG) profiles.
//
// A MIG-capable GPU is divided into 8 memory slices and 7 compute slices. A
// profile such as "3g.40gb" takes `compute_slices` compute slices and a run of
// `memory_slices` memory slices that must start at one of `allowed_starts`
// (NVIDIA's placement table). A layout is valid when no two instances overlap
// in memory slices and the compute slices sum to at most 7. Values only; no
// thread-safety concerns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuscaler {

inline constexpr int kMigMemorySlices = 8;
inline constexpr int kMigComputeSlices = 7;

struct MigProfile {
  std::string name;           // "1g.10gb"
  int compute_slices = 0;     // the "1g" part
  int memory_slices = 0;      // width in memory slices (of 8)
  int64_t memory_mib = 0;     // usable memory of the instance
  std::vector<int> allowed_starts;  // memory-slice positions it may start at

  // The instance's share of its GPU in milli-GPUs, rounded up:
  // 1000 * compute_slices / kMigComputeSlices.
  int ShareMilli() const { return (compute_slices * 1000 + kMigComputeSlices - 1) / kMigComputeSlices; }
};

struct GpuModel {
  std::string name;        // canonical, as node labels say it: "A100-SXM4-80GB"
  std::string short_name;  // what operators write in policies: "a100-80gb"
  int64_t memory_mib = 0;
  std::vector<MigProfile> mig_profiles;  // empty: not MIG-capable

  const MigProfile* FindMigProfile(const std::string& profile_name) const;
};

// One placed MIG instance on a GPU.
struct MigSlot {
  int profile_index = 0;  // into GpuModel::mig_profiles
  int start = 0;          // first memory slice
};

// The MIG layout of one physical GPU. Adding an instance re-solves the whole
// layout (a placement can need earlier instances moved: 3g+2g+1g+1g fits only
// with the 3g at slice 4), searching widest-first, lowest start first, so the
// layout is deterministic. At most 7 instances: the search is tiny.
class MigLayout {
 public:
  // Adds an instance of `profile_index` if the layout stays valid; returns the
  // new instance's start. Existing instances may get new starts.
  std::optional<int> TryAdd(const GpuModel& gpu, int profile_index);
  bool CanAdd(const GpuModel& gpu, int profile_index) const;
  // Removes the instance that starts at `start`; false when there is none.
  bool Remove(const GpuModel& gpu, int start);
  int used_compute_slices() const { return used_compute_; }
  uint8_t used_memory_mask() const { return memory_mask_; }
  bool empty() const { return slots_.empty(); }
  const std::vector<MigSlot>& slots() const { return slots_; }

 private:
  // A valid assignment of starts for `profiles`, in the order given, or empty.
  static std::optional<std::vector<MigSlot>> Solve(const GpuModel& gpu, std::vector<int> profiles);
  std::vector<MigSlot> slots_;
  uint8_t memory_mask_ = 0;
  int used_compute_ = 0;
};

}  // namespace gpuscaler
