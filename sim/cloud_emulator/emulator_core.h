// What the cloud emulators (CloudEmulator: EC2, Auto Scaling and SQS;
// GcpEmulator: Compute Engine; AzureEmulator: Resource Manager) keep alike: one lock over all their state, the
// scenario, the clock and the time they started, the seeded random source and
// id counter, every instance they ever made, and what they count of the
// requests they answer. Private to sim/cloud_emulator.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "gpuscaler/model/clock.h"

namespace gpuscaler::sim {

// What every emulator counts of the requests it answers.
struct RequestStats {
  int requests = 0;
  int throttled = 0;      // answered with a scripted throttling error
  int server_errors = 0;  // answered with a scripted server error
  int auth_failures = 0;  // refused: missing or bad credentials
};

// SplitMix64's finalizer: a well-mixed 64-bit number from `x`.
inline uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The state an emulator is built on. `Scenario` has a `seed`; `Instance` is
// the emulator's own record of an instance, whose `info` is what Instances()
// hands out; `Stats` derives from RequestStats. Thread-safe: the public
// methods take mu_, as the derived emulator's do.
template <class Scenario, class Instance, class Stats>
class EmulatorCore {
 public:
  using InstanceInfo = decltype(Instance::info);

  // Every instance ever made (ended and deleted ones included), oldest first.
  std::vector<InstanceInfo> Instances() const {
    std::lock_guard lock(mu_);
    std::vector<InstanceInfo> out;
    for (const Instance& i : instances_) out.push_back(i.info);
    return out;
  }
  Stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 protected:
  EmulatorCore(Scenario scenario, const Clock& clock)
      : scenario_(std::move(scenario)), clock_(clock), start_(clock.WallNow()), rng_(scenario_.seed) {}

  // 64 random-looking bits for the next id: the id counter (advanced) mixed
  // with the scenario's seed, so two seeds give two sequences of ids.
  uint64_t NextIdBits() { return SplitMix(next_id_++ ^ (scenario_.seed * 0x100000001b3ULL)); }

  mutable std::mutex mu_;
  Scenario scenario_;
  const Clock& clock_;
  WallTime start_;
  std::mt19937_64 rng_;
  uint64_t next_id_ = 1;
  std::deque<Instance> instances_;  // a deque: making one never moves the others
  Stats stats_;
  int api_calls_ = 0;
};

}  // namespace gpuscaler::sim
