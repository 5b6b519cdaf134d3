#include "sim/sim_cloud.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include "gpuscaler/solver/warm_pool.h"

namespace gpuscaler::sim {
namespace {

double Hours(Seconds d) { return static_cast<double>(d.count()) / 3600.0; }

}  // namespace

SimCloud::SimCloud(ManualClock& clock, const Catalog& catalog, std::vector<Offering> offerings,
                   const SpotMarket& market, SimCloudConfig config)
    : clock_(clock),
      catalog_(catalog),
      offerings_(std::move(offerings)),
      market_(market),
      config_(std::move(config)),
      walk_rng_(config_.seed ^ 0x5eedc0ffee123457ULL) {
  const WallTime start = clock_.WallNow();
  AddReservations(start);
  const size_t n = offerings_.size();
  gpu_count_.resize(n);
  family_.resize(n);
  price_.resize(n);
  price_set_at_.resize(n);
  base_price_.resize(n);
  live_count_.assign(n, 0);
  availability_.resize(n);
  live_by_offering_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const InstanceType* t = catalog_.FindInstanceType(offerings_[i].instance_type);
    gpu_count_[i] = t == nullptr ? 0 : t->gpu_count;
    family_[i] = t == nullptr ? "" : t->family;
    price_[i] = base_price_[i] = offerings_[i].usd_per_hour;
    offering_index_[offerings_[i].Key()] = i;
  }
  auto matching = [&](const std::string& type, const std::string& zone, CapacityType cap) {
    std::vector<size_t> out;
    for (size_t i = 0; i < n; ++i) {
      const Offering& o = offerings_[i];
      if (o.instance_type == type && o.capacity_type == cap && (o.zone == zone || o.region == zone)) out.push_back(i);
    }
    return out;
  };
  for (const PricePoint& p : market_.prices) {
    for (size_t i : matching(p.instance_type, p.zone, p.capacity_type)) {
      if (p.t <= Seconds(0)) {
        SetPrice(i, p.usd_per_hour, start);
      } else {
        Push(start + p.t, EventKind::kPrice, i, p.usd_per_hour);
      }
    }
  }
  for (const AvailabilityPoint& a : market_.availability) {
    for (size_t i : matching(a.instance_type, a.zone, CapacityType::kSpot)) {
      if (a.t <= Seconds(0)) {
        availability_[i] = a.available_nodes;
      } else {
        Push(start + a.t, EventKind::kAvailability, i, a.available_nodes);
      }
    }
  }
  for (size_t k = 0; k < market_.interruptions.size(); ++k) {
    Push(start + market_.interruptions[k].t, EventKind::kTraceInterruption, k);
  }
  if (config_.price_walk.enabled) {
    for (size_t i = 0; i < n; ++i) {
      if (offerings_[i].capacity_type == CapacityType::kSpot) {
        Push(start + config_.price_walk.interval, EventKind::kPrice, i, -1);
      }
    }
  }
}

void SimCloud::Push(WallTime t, EventKind kind, size_t a, double value) {
  events_.push(Event{t, seq_++, kind, a, value});
}

double SimCloud::Uniform(std::mt19937_64& rng) const {
  // 53 random bits in [0, 1): the same on every standard library.
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

Seconds SimCloud::SampleLatency(const Offering& o, std::mt19937_64& rng) const {
  LatencyDistribution d;
  const InstanceType* t = catalog_.FindInstanceType(o.instance_type);
  auto it = t == nullptr ? config_.launch_latency.end() : config_.launch_latency.find(t->family);
  if (it != config_.launch_latency.end()) {
    d = it->second;
  } else if (config_.default_latency) {
    d = *config_.default_latency;
  } else {
    d.median = o.launch_latency;
  }
  const double u1 = std::max(Uniform(rng), 1e-12);
  const double u2 = Uniform(rng);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  const double s = static_cast<double>(d.median.count()) * std::exp(d.sigma * z);
  return std::max(d.min, Seconds(static_cast<int64_t>(std::llround(s))));
}

int SimCloud::Capacity(size_t offering) const {
  const Offering& o = offerings_[offering];
  if (const int reserved = ReservationOf(offering); reserved >= 0) {
    const Reservation& r = config_.reservations[size_t(reserved)];
    return r.OpenAt(clock_.WallNow()) ? r.total_count : 0;
  }
  if (o.capacity_type == CapacityType::kSpot) {
    if (availability_[offering]) return *availability_[offering];
    auto it = config_.spot_capacity_by_family.find(family_[offering]);
    return it == config_.spot_capacity_by_family.end() ? config_.spot_capacity_per_zone : it->second;
  }
  auto it = config_.on_demand_capacity_by_family.find(family_[offering]);
  return it == config_.on_demand_capacity_by_family.end() ? config_.on_demand_capacity_per_zone : it->second;
}

bool SimCloud::HasRoomForAll(const LaunchRequest& request) const {
  int room = 0;
  for (const Offering& wanted : request.offerings) {
    auto it = offering_index_.find(wanted.Key());
    if (it == offering_index_.end()) continue;
    room += std::max(0, Capacity(it->second) - live_count_[it->second]);
  }
  return room >= request.count;
}

Result<LaunchResult> SimCloud::Launch(const LaunchRequest& request) {
  if (!request.idempotency_token.empty()) {
    auto it = by_token_.find(request.idempotency_token);
    if (it != by_token_.end()) return it->second;
  }
  const WallTime now = clock_.WallNow();
  LaunchResult result;
  int remaining = request.count;
  if (request.all_or_nothing && !HasRoomForAll(request)) {
    for (const Offering& wanted : request.offerings) {
      result.errors.push_back({wanted.Key(), Error::Capacity("InsufficientInstanceCapacity: not " +
                                                             std::to_string(request.count) + " nodes at once in " +
                                                             wanted.zone + " (all or nothing)")});
    }
    remaining = 0;
  }
  for (const Offering& wanted : request.offerings) {
    if (remaining <= 0) break;
    const std::string key = wanted.Key();
    auto it = offering_index_.find(key);
    if (it == offering_index_.end()) {
      result.errors.push_back({key, Error::NotFound("offering not sold by the simulated cloud")});
      continue;
    }
    const size_t o = it->second;
    const int free = std::max(0, Capacity(o) - live_count_[o]);
    const int take = std::min(remaining, free);
    for (int k = 0; k < take; ++k) {
      const size_t index = next_index_++;
      char id[40];
      std::snprintf(id, sizeof(id), "%011zx", index + 1);
      SimInstance s;
      s.info.instance_id = config_.id_prefix + id;
      s.info.pool = request.pool;
      s.info.offering = offerings_[o];
      s.info.offering.usd_per_hour = price_[o];
      s.info.launch_time = now;
      s.info.state = InstanceState::kPending;
      s.info.tags = request.tags;
      s.idempotency_token = request.idempotency_token;
      s.offering = o;
      s.gpu_count = gpu_count_[o];
      s.segment_start = now;
      std::mt19937_64 rng(config_.seed ^ ((index + 1) * 0x9E3779B97F4A7C15ULL));
      s.ready_at = now + SampleLatency(offerings_[o], rng);
      Push(s.ready_at, EventKind::kReady, index);
      if (offerings_[o].capacity_type == CapacityType::kSpot) {
        auto stop = request.tags.find(kWarmInterruptionTag);
        s.stops_on_interruption = stop != request.tags.end() && stop->second == "stop";
        ScheduleHazard(index, s, rng, now);
      }
      instance_index_[s.info.instance_id] = index;
      result.instances.push_back(s.info);
      instances_.emplace(index, std::move(s));
      live_[index] = true;
      live_count_[o] += 1;
      live_by_offering_[o].push_back(index);
      int& live = live_by_key_pool_[{key, request.pool}];
      live += 1;
      int& peak = peak_[{key, request.pool}];
      peak = std::max(peak, live);
      ++launched_;
    }
    if (take < remaining) {
      result.errors.push_back(
          {key, Error::Capacity("InsufficientInstanceCapacity: no " + std::string(ToString(offerings_[o].capacity_type)) +
                                " capacity for " + offerings_[o].instance_type + " in " + offerings_[o].zone)});
    }
    remaining -= take;
  }
  if (!request.idempotency_token.empty()) {
    by_token_[request.idempotency_token] = result;
    if (config_.forget_ended_after) tokens_by_time_.emplace_back(now, request.idempotency_token);
  }
  return result;
}

Status SimCloud::Terminate(const std::vector<std::string>& instance_ids) {
  const WallTime now = clock_.WallNow();
  for (const std::string& id : instance_ids) {
    auto it = instance_index_.find(id);
    if (it == instance_index_.end() || instances_.at(it->second).end) continue;
    End(it->second, now, false);
  }
  return Status::Ok();
}

Result<std::vector<Instance>> SimCloud::ListInstances() {
  const WallTime now = clock_.WallNow();
  std::vector<Instance> out;
  out.reserve(live_.size());
  for (const auto& [index, unused] : live_) {
    const SimInstance& s = instances_.at(index);
    out.push_back(s.info);
    out.back().state = s.stopped           ? InstanceState::kStopped
                       : now >= s.ready_at ? InstanceState::kRunning
                                           : InstanceState::kPending;
    out.back().offering.usd_per_hour = price_[s.offering];
  }
  return out;
}

Result<std::vector<InterruptionNotice>> SimCloud::PollInterruptions() {
  std::vector<InterruptionNotice> out;
  out.swap(notices_);
  return out;
}

Result<std::vector<SpotPrice>> SimCloud::SpotPrices(WallTime since) {
  auto first_change = std::lower_bound(price_log_.begin(), price_log_.end(), since,
                                       [](const PriceChange& c, WallTime t) { return c.price.time < t; });
  // As EC2 answers: per offering the price in force at `since` (its last
  // change before it; offerings still at their starting price have none to
  // report), then the changes from `since` on; nothing older than the
  // history kept.
  const WallTime kept_from = price_log_.empty() ? WallTime{} : price_log_.back().price.time - config_.price_history;
  std::vector<SpotPrice> out;
  std::vector<char> changed_after(offerings_.size(), 0);
  for (auto it = first_change; it != price_log_.end(); ++it) {
    const size_t o = it->offering;
    if (changed_after[o]) continue;
    changed_after[o] = 1;
    if (it->previous_time != WallTime{} && it->previous_time >= kept_from)
      out.push_back({it->price.instance_type, it->price.zone, it->price.capacity_type, it->previous_usd,
                     it->previous_time});
  }
  for (size_t o = 0; o < offerings_.size(); ++o) {
    if (changed_after[o] || price_set_at_[o] == WallTime{} || price_set_at_[o] < kept_from) continue;
    const Offering& offering = offerings_[o];
    out.push_back({offering.instance_type, offering.zone, offering.capacity_type, price_[o], price_set_at_[o]});
  }
  std::sort(out.begin(), out.end(), [](const SpotPrice& a, const SpotPrice& b) { return a.time < b.time; });
  for (auto it = first_change; it != price_log_.end(); ++it) out.push_back(it->price);
  return out;
}

std::optional<WallTime> SimCloud::NextEventTime() const {
  if (events_.empty()) return std::nullopt;
  return events_.top().t;
}

void SimCloud::RunEventsUntil(WallTime t) {
  while (!events_.empty() && events_.top().t <= t) {
    const Event e = events_.top();
    events_.pop();
    Handle(e);
  }
  Forget(t);
}

void SimCloud::Handle(const Event& e) {
  switch (e.kind) {
    case EventKind::kReady: {
      SimInstance* s_ptr = Find(e.a);
      // A stop before the ready time: it is not Ready (a start pushes a new event).
      if (s_ptr == nullptr || s_ptr->end || s_ptr->stopped || s_ptr->ready_at != e.t) return;
      SimInstance& s = *s_ptr;
      s.info.state = InstanceState::kRunning;
      if (observer_ != nullptr) observer_->OnReady(s.info, s.gpu_count);
      return;
    }
    case EventKind::kNotice: {
      // A hazard drawn before a stop and start is void: a start draws anew.
      const SimInstance* s_ptr = Find(e.a);
      if (s_ptr != nullptr && s_ptr->hazard_at == e.t) Interrupt(e.a, e.t);
      return;
    }
    case EventKind::kGone: {
      SimInstance* s_ptr = Find(e.a);
      if (s_ptr == nullptr || s_ptr->end || !s_ptr->noticed || s_ptr->gone_at != e.t) return;
      if (s_ptr->stops_on_interruption) {
        StopOnInterruption(e.a, e.t);
      } else {
        End(e.a, e.t, true);
      }
      return;
    }
    case EventKind::kPrice: {
      if (e.value >= 0) {
        SetPrice(e.a, e.value, e.t);
        return;
      }
      const PriceWalk& w = config_.price_walk;
      const double od = offerings_[e.a].on_demand_usd_per_hour > 0 ? offerings_[e.a].on_demand_usd_per_hour
                                                                     : base_price_[e.a] * 3;
      const double u1 = std::max(Uniform(walk_rng_), 1e-12);
      const double u2 = Uniform(walk_rng_);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      double lp = std::log(price_[e.a]);
      lp += w.reversion * (std::log(base_price_[e.a]) - lp) + w.sigma * z;
      double p = std::clamp(std::exp(lp), od * w.min_fraction_of_on_demand, od * w.max_fraction_of_on_demand);
      p = std::round(p * 10000.0) / 10000.0;  // prices are quoted to 1/100 cent
      SetPrice(e.a, p, e.t);
      Push(e.t + w.interval, EventKind::kPrice, e.a, -1);
      return;
    }
    case EventKind::kAvailability: {
      const int limit = static_cast<int>(e.value);
      availability_[e.a] = limit;
      std::vector<size_t> victims;
      int running = 0;
      for (size_t index : live_by_offering_[e.a]) running += instances_.at(index).noticed ? 0 : 1;
      // Newest first: the market reclaims the most recently granted capacity.
      for (auto it = live_by_offering_[e.a].rbegin(); it != live_by_offering_[e.a].rend() && running > limit; ++it) {
        if (instances_.at(*it).noticed) continue;
        victims.push_back(*it);
        --running;
      }
      for (size_t v : victims) Interrupt(v, e.t);
      return;
    }
    case EventKind::kBlockEnd: {
      const std::vector<size_t> on_block = live_by_offering_[e.a];
      for (size_t index : on_block) TakeBack(index, e.t);
      return;
    }
    case EventKind::kTraceInterruption: {
      const InterruptionEvent& ev = market_.interruptions[e.a];
      auto it = offering_index_.find(OfferingKey(ev.instance_type, ev.zone, CapacityType::kSpot));
      if (it == offering_index_.end()) return;
      for (size_t index : live_by_offering_[it->second]) {
        if (!instances_.at(index).noticed) {
          Interrupt(index, e.t);
          return;
        }
      }
      return;
    }
  }
}

void SimCloud::Interrupt(size_t index, WallTime at) {
  SimInstance* s_ptr = Find(index);
  if (s_ptr == nullptr || s_ptr->end || s_ptr->noticed || s_ptr->stopped) return;
  SimInstance& s = *s_ptr;
  s.noticed = true;
  const WallTime deadline = at + config_.notice;
  s.gone_at = deadline;
  notices_.push_back({s.info.instance_id, at, deadline});
  if (observer_ != nullptr) observer_->OnNotice(s.info.instance_id, deadline);
  Push(deadline, EventKind::kGone, index);
}

void SimCloud::End(size_t index, WallTime at, bool interrupted) {
  SimInstance* s_ptr = Find(index);
  if (s_ptr == nullptr || s_ptr->end) return;
  SimInstance& s = *s_ptr;
  const double segment = RateOf(s) * Hours(at - s.segment_start);
  s.usd += segment;
  if (s.stopped) s.stopped_usd += segment;
  s.segment_start = at;
  s.end = at;
  s.interrupted = interrupted;
  live_.erase(index);
  if (!s.stopped) ReleaseCapacity(index, s);
  if (interrupted) {
    ++interrupted_;
  } else {
    ++terminated_;
  }
  // The minimum charge is settled at the price in force at the end.
  const Seconds ran = at - s.info.launch_time;
  if (ran < MinBilled(s.offering)) s.usd += price_[s.offering] * Hours(MinBilled(s.offering) - ran);
  if (config_.forget_ended_after) ended_.emplace_back(at, index);
  if (observer_ != nullptr) observer_->OnGone(s.info.instance_id, at, interrupted);
}

SimCloud::SimInstance* SimCloud::Find(size_t index) {
  auto it = instances_.find(index);
  return it == instances_.end() ? nullptr : &it->second;
}

void SimCloud::Forget(WallTime now) {
  if (!config_.forget_ended_after) return;
  const WallTime horizon = now - *config_.forget_ended_after;
  // Instances end in time order (events run in order; a terminate ends at
  // the clock's now), so the queue is sorted by end time.
  while (!ended_.empty() && ended_.front().first < horizon) {
    auto it = instances_.find(ended_.front().second);
    ended_.pop_front();
    if (it == instances_.end()) continue;
    forgotten_usd_ += it->second.usd;  // final: the instance has ended
    if (const int r = ReservationOf(it->second.offering); r >= 0) forgotten_reserved_usd_[size_t(r)] += it->second.usd;
    instance_index_.erase(it->second.info.instance_id);
    instances_.erase(it);
  }
  while (!tokens_by_time_.empty() && tokens_by_time_.front().first < horizon) {
    by_token_.erase(tokens_by_time_.front().second);
    tokens_by_time_.pop_front();
  }
}

void SimCloud::SetPrice(size_t offering, double price, WallTime at) {
  if (price == price_[offering]) return;
  for (size_t index : live_by_offering_[offering]) {
    SimInstance& s = instances_.at(index);
    s.usd += price_[offering] * Hours(at - s.segment_start);
    s.segment_start = at;
  }
  const Offering& o = offerings_[offering];
  price_log_.push_back(
      {{o.instance_type, o.zone, o.capacity_type, price, at}, offering, price_[offering], price_set_at_[offering]});
  price_[offering] = price;
  price_set_at_[offering] = at;
  while (!price_log_.empty() && price_log_.front().price.time < at - config_.price_history) price_log_.pop_front();
}

InstanceBill SimCloud::BillOf(const SimInstance& s, WallTime end) const {
  InstanceBill b;
  b.instance_id = s.info.instance_id;
  b.offering_key = offerings_[s.offering].Key();
  b.capacity_type = offerings_[s.offering].capacity_type;
  b.gpu_count = s.gpu_count;
  b.launch = s.info.launch_time;
  b.interrupted = s.interrupted;
  b.usd = s.usd;
  b.stopped_usd = s.stopped_usd;
  b.wakes = s.wakes;
  b.interrupted_stops = s.interrupted_stops;
  if (s.end) {
    b.end = *s.end;
  } else {
    b.end = std::max(end, s.segment_start);
    const double segment = RateOf(s) * Hours(b.end - s.segment_start);
    b.usd += segment;
    if (s.stopped) b.stopped_usd += segment;
    const Seconds ran = b.end - s.info.launch_time;
    if (ran < MinBilled(s.offering)) b.usd += price_[s.offering] * Hours(MinBilled(s.offering) - ran);
  }
  b.billed_seconds = std::max((b.end - b.launch).count(), static_cast<int64_t>(MinBilled(s.offering).count()));
  return b;
}

std::vector<InstanceBill> SimCloud::Bills(WallTime end) const {
  std::vector<InstanceBill> out;
  out.reserve(instances_.size());
  for (const auto& [index, s] : instances_) out.push_back(BillOf(s, end));
  return out;
}

double SimCloud::CostUntil(WallTime end) const {
  double total = forgotten_usd_;
  for (const auto& [index, s] : instances_) total += BillOf(s, end).usd;
  for (const ReservationUse& use : ReservationUses(end)) total += use.unused_usd;
  return total;
}

double SimCloud::CurrentUsdPerHour() const {
  double total = 0;
  for (const auto& [index, unused] : live_) total += RateOf(instances_.at(index));
  const WallTime now = clock_.WallNow();
  for (size_t r = 0; r < config_.reservations.size(); ++r) {
    const Reservation& res = config_.reservations[r];
    if (now < res.start || (res.end && now >= *res.end)) continue;
    total += res.usd_per_hour * std::max(0, res.total_count - ReservedInUse(r));
  }
  return total;
}

double SimCloud::CurrentPrice(const std::string& offering_key) const {
  auto it = offering_index_.find(offering_key);
  return it == offering_index_.end() ? 0 : price_[it->second];
}

}  // namespace gpuscaler::sim
