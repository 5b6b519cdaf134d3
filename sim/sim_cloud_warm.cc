// SimCloud's warm capacity: Stop and Start, and spot instances that stop on
// interruption (see sim_cloud.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "gpuscaler/solver/warm_pool.h"
#include "sim/sim_cloud.h"

namespace gpuscaler::sim {
namespace {

double HoursOf(Seconds d) { return static_cast<double>(d.count()) / 3600.0; }

}  // namespace

void SimCloud::ReleaseCapacity(size_t index, const SimInstance& s) {
  live_count_[s.offering] -= 1;
  auto& list = live_by_offering_[s.offering];
  list.erase(std::find(list.begin(), list.end(), index));
  live_by_key_pool_[{offerings_[s.offering].Key(), s.info.pool}] -= 1;
}

void SimCloud::HoldCapacity(size_t index, const SimInstance& s) {
  live_count_[s.offering] += 1;
  live_by_offering_[s.offering].push_back(index);
  std::sort(live_by_offering_[s.offering].begin(), live_by_offering_[s.offering].end());
  const std::pair<std::string, std::string> key{offerings_[s.offering].Key(), s.info.pool};
  int& live = live_by_key_pool_[key];
  live += 1;
  int& peak = peak_[key];
  peak = std::max(peak, live);
}

Status SimCloud::Stop(const std::vector<std::string>& instance_ids, WarmState state) {
  const WallTime now = clock_.WallNow();
  for (const std::string& id : instance_ids) {
    auto it = instance_index_.find(id);
    if (it == instance_index_.end()) return Error::Config("InvalidInstanceID.NotFound: " + id);
    SimInstance& s = instances_.at(it->second);
    if (s.end) return Error::Config("IncorrectInstanceState: " + id + " has ended");
    if (offerings_[s.offering].capacity_type == CapacityType::kSpot && !s.stops_on_interruption)
      return Error::Config("UnsupportedOperation: " + id + " is a one-time Spot Instance and cannot be stopped");
    if (s.stopped) continue;
    // Stopped during a reclaim's notice: the reclaim has nothing left to take.
    s.noticed = false;
    s.usd += price_[s.offering] * HoursOf(now - s.segment_start);
    s.segment_start = now;
    double gib = catalog_.default_volume_gib;
    if (state == WarmState::kHibernated) {
      if (const InstanceType* t = catalog_.FindInstanceType(s.info.offering.instance_type))
        gib += static_cast<double>(t->memory_mib) / 1024.0;
    }
    s.stopped = true;
    s.stopped_usd_per_hour = gib * catalog_.volume_usd_per_gib_hour;
    s.info.state = InstanceState::kStopped;
    ReleaseCapacity(it->second, s);
    if (observer_ != nullptr) observer_->OnGone(id, now, false);
  }
  return Status::Ok();
}

Status SimCloud::Start(const std::vector<std::string>& instance_ids) {
  const WallTime now = clock_.WallNow();
  std::vector<size_t> stopped;
  std::map<size_t, int> wanted;  // offering -> instances to start
  for (const std::string& id : instance_ids) {
    auto it = instance_index_.find(id);
    if (it == instance_index_.end()) return Error::Config("InvalidInstanceID.NotFound: " + id);
    const SimInstance& s = instances_.at(it->second);
    if (s.end) return Error::Config("IncorrectInstanceState: " + id + " has ended");
    if (!s.stopped) continue;
    stopped.push_back(it->second);
    ++wanted[s.offering];
  }
  // As EC2's StartInstances: the whole call fails when capacity is short.
  for (const auto& [o, n] : wanted) {
    if (Capacity(o) - live_count_[o] < n) {
      return Error::Capacity("InsufficientInstanceCapacity: no " + std::string(ToString(offerings_[o].capacity_type)) +
                             " capacity to start " + offerings_[o].instance_type + " in " + offerings_[o].zone);
    }
  }
  for (size_t index : stopped) {
    SimInstance& s = instances_.at(index);
    const double segment = s.stopped_usd_per_hour * HoursOf(now - s.segment_start);
    s.usd += segment;
    s.stopped_usd += segment;
    s.segment_start = now;
    s.stopped = false;
    s.info.state = InstanceState::kPending;
    s.info.tags.erase(kWarmTag);
    ++s.wakes;
    std::mt19937_64 rng(config_.seed ^ ((index + 1) * 0x9E3779B97F4A7C15ULL) ^ (uint64_t(s.wakes) << 32));
    const Offering& o = offerings_[s.offering];
    const double median = static_cast<double>(std::max<int64_t>(1, o.wake_latency.count()));
    const double u1 = std::max(Uniform(rng), 1e-12);
    const double u2 = Uniform(rng);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
    const Seconds latency(static_cast<int64_t>(std::lround(std::max(median / 2, median * std::exp(0.25 * z)))));
    s.ready_at = now + latency;
    HoldCapacity(index, s);
    Push(s.ready_at, EventKind::kReady, index);
    if (o.capacity_type == CapacityType::kSpot) ScheduleHazard(index, s, rng, now);
  }
  return Status::Ok();
}

void SimCloud::ScheduleHazard(size_t index, SimInstance& s, std::mt19937_64& rng, WallTime now) {
  const size_t o = s.offering;
  if (offerings_[o].capacity_type != CapacityType::kSpot) return;
  auto h = config_.hazard_by_family.find(family_[o]);
  const double rate =
      h != config_.hazard_by_family.end() ? h->second : offerings_[o].interruptions_per_hour * config_.hazard_multiplier;
  if (rate <= 0) return;
  const double hours = -std::log(std::max(1.0 - Uniform(rng), 1e-300)) / rate;
  if (hours >= 1e6) return;
  s.hazard_at = now + Seconds(static_cast<int64_t>(hours * 3600.0));
  Push(s.hazard_at, EventKind::kNotice, index);
}

void SimCloud::StopOnInterruption(size_t index, WallTime at) {
  SimInstance& s = instances_.at(index);
  const double segment = RateOf(s) * HoursOf(at - s.segment_start);
  s.usd += segment;
  s.segment_start = at;
  s.noticed = false;
  s.stopped = true;
  s.stopped_usd_per_hour = catalog_.default_volume_gib * catalog_.volume_usd_per_gib_hour;
  s.info.state = InstanceState::kStopped;
  ++s.interrupted_stops;
  ++interrupted_;
  ReleaseCapacity(index, s);
  if (observer_ != nullptr) observer_->OnGone(s.info.instance_id, at, true);
}

}  // namespace gpuscaler::sim
