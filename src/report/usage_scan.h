// The values BuildCostFacts' usage scan works on: the node of an instance
// id, a node's billed slices and per-day buckets, and its latest recorded
// usage. Private to src/report.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/report/cost_model.h"

namespace gpuscaler::report::internal {

// Instance id -> node index, open addressing: the usage scan looks one up per
// row (millions). The ids are copied into one buffer, so that a probe
// compares bytes next to each other rather than chasing each node's string.
class NodeTable {
 public:
  explicit NodeTable(const std::vector<NodeFact>& nodes) {
    size_t capacity = 16;
    while (capacity < nodes.size() * 2) capacity <<= 1;
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const std::string& id = nodes[i].instance_id;
      const uint64_t h = Hash(id);
      size_t s = h & mask_;
      while (slots_[s].node >= 0) s = (s + 1) & mask_;
      slots_[s] = Slot{h, static_cast<uint32_t>(ids_.size()), static_cast<uint32_t>(id.size()), static_cast<int32_t>(i)};
      ids_.append(id);
    }
  }

  // -1: not a node of the report.
  int32_t Find(std::string_view id) const {
    const uint64_t h = Hash(id);
    for (size_t s = h & mask_;; s = (s + 1) & mask_) {
      const Slot& slot = slots_[s];
      if (slot.node < 0) return -1;
      if (slot.hash == h && std::string_view(ids_).substr(slot.id_offset, slot.id_size) == id) return slot.node;
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t id_offset = 0;
    uint32_t id_size = 0;
    int32_t node = -1;
  };
  static uint64_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  std::string ids_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};


// A stretch of a node's billed time inside one UTC day at one price.
struct Slice {
  int64_t t0 = 0;
  int64_t t1 = 0;
  double usd_per_hour = 0;
  bool in_loss_window = false;
  size_t bucket = 0;  // index into the buckets, set once they exist
};

// The latest usage recorded for a node: the end of its last rows and what
// each (class, team) held over those rows, in GPUs (allocated GPU-seconds
// per second) and busy GPUs (-1: busy time not measured).
struct HeldRate {
  int32_t allocation = 0;
  double gpus = 0;
  double busy_gpus = -1;
};
struct UsageFrontier {
  int64_t end = INT64_MIN;
  int64_t duration = 0;  // of the rows ending there (the meter's interval)
  std::vector<HeldRate> held;

  void Note(int64_t start, int64_t row_end, int32_t allocation, double allocated, std::optional<double> busy) {
    if (row_end < end) return;
    if (row_end > end) {
      end = row_end;
      duration = 0;
      held.clear();
    }
    const double seconds = static_cast<double>(row_end - start);
    duration = std::max(duration, row_end - start);
    held.push_back(HeldRate{allocation, allocated / seconds, busy ? *busy / seconds : -1});
  }
};

struct Bucket {
  Metrics total;
  std::vector<std::pair<int32_t, Metrics>> by_allocation;

  Metrics& For(int32_t allocation) {
    for (auto& [a, m] : by_allocation) {
      if (a == allocation) return m;
    }
    by_allocation.emplace_back(allocation, Metrics{});
    return by_allocation.back().second;
  }
};

}  // namespace gpuscaler::report::internal
