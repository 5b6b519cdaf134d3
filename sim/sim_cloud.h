// SimCloud: a CloudProvider on the simulator's virtual clock. It is the
// ground truth of a replay: what exists, when, and what it cost.
//
//  - Launches take a per-family launch latency drawn from a lognormal
//    distribution (seeded): the instance is kPending until Ready.
//  - Capacity: per (type, zone, capacity type) a node limit; spot limits come
//    from the market's availability series when it has one for the offering,
//    else from the config. A launch beyond the limit gets a kCapacity error
//    for that offering and the next offering of the request is tried.
//  - Spot interruptions come with a 2-minute notice, from three sources: the
//    market's interruption events, availability dropping below the running
//    count (newest nodes first), and a per-offering hazard rate (exponential
//    time to interruption drawn per instance from the seed).
//  - Spot prices change at the market's price points, or by a seeded
//    mean-reverting random walk when the config asks for one.
//  - Billing is per second with a 60-second minimum, piecewise at the price
//    in force (spot prices move under running nodes), from launch to end.
//  - Warm capacity: Stop keeps an instance with its id and stops its compute
//    bill; while stopped it pays its volumes (the catalog's
//    volume_usd_per_gib_hour x default_volume_gib, plus its memory when
//    hibernated) and holds no capacity. Start needs capacity like a launch
//    (else kCapacity, nothing started) and makes the instance Ready again
//    after the offering's wake_latency (lognormal, sigma 0.25), not its
//    launch latency; the refill tag (kWarmTag) is gone from then on.
//    Spot warm capacity: a spot instance launched with kWarmInterruptionTag
//    "stop" (EC2: a persistent Spot request with interruption behaviour
//    stop; Compute Engine: a Spot VM with termination action STOP) is
//    stopped, not ended, at the end of a reclaim's notice: its work is lost
//    as on any reclaim, it pays its volumes and can be started again (on
//    Compute Engine by the owner; on EC2 the Spot service restarts it once
//    capacity is back, which the simulator leaves to the owner's Start).
//    Running again it pays the spot price and draws a new time to
//    interruption; a start needs spot capacity like a launch. Stop refuses
//    other spot instances (a one-time Spot Instance cannot be stopped).
//  - Reservations (SimCloudConfig::reservations) are sold as reserved
//    offerings: a launch takes a free slot while the reservation is open
//    (Reservation::OpenAt), else gets a kCapacity error. Every slot is paid
//    from the reservation's start to its end whether used or not: an
//    instance's bill is the used part, ReservationUses() gives the rest. A
//    Capacity Block's instances are taken back from 30 minutes before its
//    end (a notice, then gone), as EC2 does.
// Deterministic for a given seed and inputs. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpuscaler/cloud/provider.h"
#include "gpuscaler/model/clock.h"
#include "gpuscaler/model/catalog.h"
#include "sim/trace.h"

namespace gpuscaler::sim {

struct LatencyDistribution {
  Seconds median{180};
  double sigma = 0.25;  // of the log
  Seconds min{45};
};

struct PriceWalk {
  bool enabled = false;
  Seconds interval{3600};
  double sigma = 0.04;        // per step, of the log price
  double reversion = 0.15;    // pull toward the base price per step
  double min_fraction_of_on_demand = 0.15;
  double max_fraction_of_on_demand = 1.0;
};

struct SimCloudConfig {
  std::string id_prefix = "i-";  // unique per run when runs share an audit store
  uint64_t seed = 1;
  std::map<std::string, LatencyDistribution> launch_latency;  // by family
  std::optional<LatencyDistribution> default_latency;  // unset: the catalog's latency, sigma 0.25
  int spot_capacity_per_zone = 1000;                 // per type
  std::map<std::string, int> spot_capacity_by_family;  // per type and zone
  int on_demand_capacity_per_zone = 1000;
  std::map<std::string, int> on_demand_capacity_by_family;
  // Interruptions per node-hour: by family, else the offering's rate × multiplier.
  std::map<std::string, double> hazard_by_family;
  double hazard_multiplier = 1.0;
  Seconds notice{120};
  Seconds min_billed{60};
  PriceWalk price_walk;
  // How far back SpotPrices() answers. AWS keeps 90 days of spot price
  // history; a long-running simulated cloud (the daemon's demo) would
  // otherwise keep every change it ever made (about 1 MB a simulated day
  // for the demo's offerings: the 90-day soak's heap growth).
  Seconds price_history{Seconds(90 * 24 * 3600)};
  // Unset (the simulator): every instance is kept for Bills(). Set (a
  // long-running simulated cloud: the daemon's demo and `provider:
  // simulated`): an instance ended longer ago than this, and an idempotency
  // token older than this, are forgotten, as a real cloud stops listing
  // terminated instances after a while; their cost stays in CostUntil().
  std::optional<Seconds> forget_ended_after;
  // Reservations the cloud holds (their available_count is ignored: the
  // cloud counts its own instances).
  std::vector<Reservation> reservations;
};

// Settings for a simulated cloud that runs as long as a daemon (the demo,
// `provider: simulated`): a day of spot price history (the controller reads
// since its last read, every tick) and ended instances and spent tokens
// forgotten after a day, so months of running keep memory flat.
inline void ForLongRunning(SimCloudConfig& config) {
  const Seconds day(24 * 3600);
  config.price_history = std::min(config.price_history, day);
  config.forget_ended_after = day;
}

// One instance's bill.
struct InstanceBill {
  std::string instance_id;
  std::string offering_key;
  CapacityType capacity_type = CapacityType::kOnDemand;
  int gpu_count = 0;
  WallTime launch{};
  WallTime end{};  // the billing end (the run's end for live instances)
  int64_t billed_seconds = 0;
  double usd = 0;  // compute and, while stopped, volumes
  bool interrupted = false;
  double stopped_usd = 0;  // of `usd`: volumes while stopped (warm)
  int wakes = 0;           // Starts from stopped
  int interrupted_stops = 0;  // reclaims that stopped it (spot warm capacity)
};

// What a reservation cost up to some time: every slot of it from its start
// (`cost_usd`), split into the instances that ran on it (`used_usd`) and
// the idle slots (`unused_usd`, the rest).
struct ReservationUse {
  Reservation reservation;
  double slot_hours = 0;
  double used_hours = 0;
  double cost_usd = 0;
  double used_usd = 0;
  double unused_usd = 0;
  // A Capacity Block's instances still live when the cloud took them back
  // (from Reservation::TakeBackAt): nodes the controller did not retire in
  // time.
  int instances_taken_back = 0;
};

// Told about instance life by SimCloud, in time order.
class SimCloudObserver {
 public:
  virtual ~SimCloudObserver() = default;
  virtual void OnReady(const Instance& instance, int gpu_count) = 0;
  virtual void OnNotice(const std::string& instance_id, WallTime deadline) = 0;
  // The instance is gone: interrupted, or terminated on request.
  virtual void OnGone(const std::string& instance_id, WallTime at, bool interrupted) = 0;
  // The instance is on a Capacity Block being taken back: its notice and
  // interruption (OnNotice, OnGone) follow.
  virtual void OnTakeBack(const std::string& instance_id) { (void)instance_id; }
};

class SimCloud final : public CloudProvider {
 public:
  // `offerings` are what can be bought (usually catalog.Offerings(regions)).
  SimCloud(ManualClock& clock, const Catalog& catalog, std::vector<Offering> offerings, const SpotMarket& market,
           SimCloudConfig config);
  void SetObserver(SimCloudObserver* observer) { observer_ = observer; }

  Result<LaunchResult> Launch(const LaunchRequest& request) override;
  Status Terminate(const std::vector<std::string>& instance_ids) override;
  Result<std::vector<Instance>> ListInstances() override;
  Result<std::vector<InterruptionNotice>> PollInterruptions() override;
  Result<std::vector<SpotPrice>> SpotPrices(WallTime since) override;
  // The configured reservations that have not ended, with their free slots.
  Result<std::vector<Reservation>> ListReservations() override;
  Status Stop(const std::vector<std::string>& instance_ids, WarmState state) override;
  Status Start(const std::vector<std::string>& instance_ids) override;

  // The time of the next internal event (ready, notice, interruption, price
  // change, availability change), if any.
  std::optional<WallTime> NextEventTime() const;
  // Processes every internal event at or before `t`, in time order.
  void RunEventsUntil(WallTime t);

  // Bills of every instance so far (but those forgotten, see
  // SimCloudConfig::forget_ended_after), in launch order; live ones billed
  // up to `end`.
  std::vector<InstanceBill> Bills(WallTime end) const;
  // Current spend rate of live instances (USD/h).
  double CurrentUsdPerHour() const;
  // Cost so far of live and ended instances up to `end` (sum of Bills).
  double CostUntil(WallTime end) const;
  int launched() const { return launched_; }
  int terminated() const { return terminated_; }
  int interrupted() const { return interrupted_; }
  int live_count() const { return static_cast<int>(live_.size()); }
  // Instances the cloud still remembers (live, or ended within
  // forget_ended_after) and idempotency tokens it still honours.
  size_t remembered_instances() const { return instances_.size(); }
  size_t remembered_tokens() const { return by_token_.size(); }
  // Highest number of live instances seen per offering key and pool.
  const std::map<std::pair<std::string, std::string>, int>& peak_by_offering_and_pool() const { return peak_; }
  double CurrentPrice(const std::string& offering_key) const;
  // Per configured reservation, in their order: its cost up to `end`.
  std::vector<ReservationUse> ReservationUses(WallTime end) const;
  // Live instances on reservation `r` (an index of the configured ones),
  // and its slots (0 while it is not open).
  int ReservedInUse(size_t r) const;
  int ReservedSlotsOpen(size_t r, WallTime t) const;

 private:
  enum class EventKind { kReady, kNotice, kGone, kPrice, kAvailability, kTraceInterruption, kBlockEnd };
  struct Event {
    WallTime t;
    uint64_t seq;
    EventKind kind;
    size_t a;      // instance index, offering index or trace index
    double value;  // price / availability
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct SimInstance {
    Instance info;
    std::string idempotency_token;
    size_t offering = 0;
    int gpu_count = 0;
    WallTime ready_at{};
    std::optional<WallTime> end;
    bool noticed = false;
    bool interrupted = false;
    WallTime segment_start{};
    double usd = 0;  // closed segments
    // Warm: stopped since `segment_start`, paying `stopped_usd_per_hour`
    // (volumes) instead of the offering's price.
    bool stopped = false;
    double stopped_usd_per_hour = 0;
    double stopped_usd = 0;  // closed stopped segments
    int wakes = 0;
    // Spot launched to stop on interruption (kWarmInterruptionTag "stop"):
    // a reclaim stops it (StopOnInterruption), and Stop is allowed.
    bool stops_on_interruption = false;
    int interrupted_stops = 0;
    WallTime hazard_at{};  // the pending hazard notice; others are void
    WallTime gone_at{};    // the end of the notice in force
  };

  void Push(WallTime t, EventKind kind, size_t a, double value = 0);
  // What `s` costs an hour now: its offering's price, or its volumes while stopped.
  double RateOf(const SimInstance& s) const { return s.stopped ? s.stopped_usd_per_hour : price_[s.offering]; }
  // Takes a live instance out of (or back into) its offering's capacity.
  void ReleaseCapacity(size_t index, const SimInstance& s);
  void HoldCapacity(size_t index, const SimInstance& s);
  void Handle(const Event& e);
  void End(size_t index, WallTime at, bool interrupted);
  void Interrupt(size_t index, WallTime at);  // notice now, gone after the notice period
  // The end of the notice of an instance that stops on interruption: it is
  // stopped (its volumes billed, its capacity released), not ended.
  void StopOnInterruption(size_t index, WallTime at);
  // A spot instance's time to interruption from `now`, drawn from its
  // hazard rate (none for other instances): a kNotice event.
  void ScheduleHazard(size_t index, SimInstance& s, std::mt19937_64& rng, WallTime now);
  // A Capacity Block's take-back of one of its instances: counted, then
  // interrupted as EC2 does (observer told first: OnTakeBack).
  void TakeBack(size_t index, WallTime at);
  int Capacity(size_t offering) const;
  // Reserved offerings for the configured reservations, and their blocks'
  // ends as events (constructor).
  void AddReservations(WallTime start);
  // The index in config_.reservations of `offering`'s reservation, -1 when
  // it is not reserved.
  int ReservationOf(size_t offering) const {
    return offering >= first_reserved_ ? static_cast<int>(offering - first_reserved_) : -1;
  }
  // The shortest bill of an instance of `offering` (none on a reservation,
  // whose slots are paid by the hour anyway).
  Seconds MinBilled(size_t offering) const;
  // Whether the request's offerings have room for all its nodes now.
  bool HasRoomForAll(const LaunchRequest& request) const;
  Seconds SampleLatency(const Offering& o, std::mt19937_64& rng) const;
  double Uniform(std::mt19937_64& rng) const;
  void SetPrice(size_t offering, double price, WallTime at);
  InstanceBill BillOf(const SimInstance& s, WallTime end) const;
  SimInstance* Find(size_t index);
  // Drops what forget_ended_after says to forget, as of `now` (at the end of
  // RunEventsUntil, which every user calls before each tick).
  void Forget(WallTime now);

  ManualClock& clock_;
  const Catalog& catalog_;
  std::vector<Offering> offerings_;
  std::vector<int> gpu_count_;  // per offering
  std::vector<std::string> family_;  // per offering
  std::unordered_map<std::string, size_t> offering_index_;
  const SpotMarket& market_;
  SimCloudConfig config_;
  SimCloudObserver* observer_ = nullptr;

  std::vector<double> price_;  // current, per offering
  std::vector<double> base_price_;
  std::vector<int> live_count_;  // per offering
  // The reserved offerings come last, one per configured reservation in its
  // order, from this index on (AddReservations).
  size_t first_reserved_ = 0;
  std::vector<std::optional<int>> availability_;  // spot limit from the market
  std::vector<std::vector<size_t>> live_by_offering_;
  // By launch number (ids and events name instances by it); a map, so that
  // forgetting ended instances keeps the others' numbers.
  std::map<size_t, SimInstance> instances_;
  size_t next_index_ = 0;
  std::unordered_map<std::string, size_t> instance_index_;
  std::deque<std::pair<WallTime, size_t>> ended_;  // end order, remembered ones
  std::deque<std::pair<WallTime, std::string>> tokens_by_time_;
  double forgotten_usd_ = 0;  // final bills of forgotten instances
  std::vector<double> forgotten_reserved_usd_;  // per reservation: those of them on it
  std::vector<int> taken_back_;                 // per reservation: ReservationUse::instances_taken_back
  std::map<size_t, bool> live_;  // instance index -> true, ordered by launch
  std::unordered_map<std::string, LaunchResult> by_token_;
  std::vector<InterruptionNotice> notices_;  // not yet polled
  // A price change, and the price it replaced (with when that one was set;
  // WallTime{} for the starting price): what was in force before it.
  struct PriceChange {
    SpotPrice price;
    size_t offering = 0;
    double previous_usd = 0;
    WallTime previous_time{};
  };
  std::deque<PriceChange> price_log_;  // ascending time, within config_.price_history
  std::vector<WallTime> price_set_at_;  // per offering: its last change (WallTime{}: never changed)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  std::mt19937_64 walk_rng_;
  std::map<std::pair<std::string, std::string>, int> peak_;
  std::map<std::pair<std::string, std::string>, int> live_by_key_pool_;
  int launched_ = 0;
  int terminated_ = 0;
  int interrupted_ = 0;
};

}  // namespace gpuscaler::sim
