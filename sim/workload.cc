#include "sim/workload.h"

#include <algorithm>
#include <utility>

#include "gpuscaler/model/find_by_name.h"

namespace gpuscaler::sim {
namespace {

std::string ShapeKey(const DemandUnit& u) {
  std::string k = std::to_string(u.gpus) + "|" + std::to_string(u.gpu_milli) + "|" + u.mig_profile + "|" +
                  u.workload_class + "|" + (u.interruptible ? "i" : "n") + "|" +
                  std::to_string(u.min_gpu_memory_mib) + "|" + std::to_string(u.cpu_milli) + "|" +
                  std::to_string(u.memory_mib) + "|" + u.pool + "|" +
                  (u.capacity_type ? std::string(ToString(*u.capacity_type)) : "");
  for (const auto& m : u.gpu_models) k += "|m" + m;
  for (const auto& z : u.zones) k += "|z" + z;
  for (const auto& t : u.instance_types) k += "|t" + t;
  return k;
}

}  // namespace

Workload::Workload(const Trace& trace, const Catalog& catalog, const Policy& policy, WallTime start,
                   size_t max_pending, const Policy* deadlines_from)
    : trace_(trace), catalog_(catalog), start_(start), max_pending_(max_pending), signal_time_(start) {
  jobs_.resize(trace_.jobs.size());
  shape_of_.resize(trace_.jobs.size());
  std::unordered_map<std::string, int> shapes;
  std::set<std::string> classes;
  for (size_t i = 0; i < trace_.jobs.size(); ++i) {
    const TraceJob& tj = trace_.jobs[i];
    jobs_[i].remaining_s = std::max<int64_t>(0, tj.duration.count());
    auto [it, inserted] = shapes.emplace(ShapeKey(tj.unit), shape_count_);
    if (inserted) ++shape_count_;
    shape_of_[i] = it->second;
    jobs_[i].shape = it->second;
    classes.insert(tj.unit.workload_class);
  }
  classes_.assign(classes.begin(), classes.end());
  for (const WorkloadClassPolicy& c : policy.classes) {
    class_pools_[c.name] = std::set<std::string>(c.pools.begin(), c.pools.end());
  }
  unit_deadlines_ = ClassDeadlines(policy);
  judged_deadlines_ = ClassDeadlines(deadlines_from != nullptr ? *deadlines_from : policy);
  FindGangs();
}

void Workload::UseClassRuntimes(const Policy& policy) {
  class_runtimes_.emplace();
  for (const WorkloadClassPolicy& c : policy.classes) (*class_runtimes_)[c.name] = c.expected_runtime;
  pending_dirty_ = true;
}

Seconds Workload::ExpectedRuntime(size_t job) const {
  if (!class_runtimes_ || StatesRuntime(trace_.jobs[job], judged_deadlines_)) return Seconds(jobs_[job].remaining_s);
  auto it = class_runtimes_->find(trace_.jobs[job].unit.workload_class);
  return it != class_runtimes_->end() ? it->second : WorkloadClassPolicy{}.expected_runtime;
}

bool Workload::RuntimeKnown(size_t job) const {
  return !class_runtimes_ || trace_.jobs[job].duration <= ExpectedRuntime(job);
}

void Workload::SplitFloorClasses(const Policy& policy) {
  spread_ = SpreadClasses(policy);
  spread_state_.clear();
  on_demand_only_.clear();
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (const CapacitySpread* split = spread_.Find(c.name)) {
      const size_t n = static_cast<size_t>(split->domains);
      spread_state_[c.name] = SpreadState{std::vector<int>(n, 0), std::vector<int>(n, 0)};
    } else if (c.interruptible && c.max_spot_share <= 0) {
      on_demand_only_.insert(c.name);
    }
  }
}

bool Workload::SpreadAllows(const DemandUnit& u, const SimNode& n, int* domain) const {
  *domain = -1;
  if (n.capacity_type == CapacityType::kSpot && on_demand_only_.count(u.workload_class) != 0) return false;
  auto st = spread_state_.find(u.workload_class);
  if (st == spread_state_.end()) return true;
  auto d = n.spread_domain.find(u.workload_class);
  if (d == n.spread_domain.end() || d->second < 0) return false;
  const SpreadState& state = st->second;
  int fewest = -1;
  for (size_t i = 0; i < state.nodes.size(); ++i) {
    if (state.nodes[i] > 0 && (fewest < 0 || state.running[i] < fewest)) fewest = state.running[i];
  }
  *domain = d->second;
  return state.running[static_cast<size_t>(d->second)] == fewest;
}

std::optional<WallTime> Workload::NextEventTime() {
  // Finishes of runs that were evicted since are stale: drop them here.
  while (!finishes_.empty()) {
    const Finish& f = finishes_.top();
    const Job& j = jobs_[f.job];
    if (j.state == JobState::kRunning && j.generation == f.generation) break;
    finishes_.pop();
  }
  std::optional<WallTime> t;
  if (next_arrival_ < trace_.jobs.size()) t = start_ + trace_.jobs[next_arrival_].submit;
  if (!finishes_.empty() && (!t || finishes_.top().t < *t)) t = finishes_.top().t;
  return t;
}

void Workload::RunEventsUntil(WallTime t) {
  while (true) {
    const bool has_arrival = next_arrival_ < trace_.jobs.size();
    const WallTime arrival = has_arrival ? start_ + trace_.jobs[next_arrival_].submit : WallTime::max();
    const bool has_finish = !finishes_.empty();
    const WallTime finish = has_finish ? finishes_.top().t : WallTime::max();
    if (has_finish && finish <= t && finish <= arrival) {
      const Finish f = finishes_.top();
      finishes_.pop();
      Job& j = jobs_[f.job];
      if (j.state != JobState::kRunning || j.generation != f.generation) continue;
      Release(f.job, f.t);
      j.remaining_s = 0;
      j.done_at = f.t;
      j.state = JobState::kDone;
      ++stats_.jobs_completed;
      continue;
    }
    if (has_arrival && arrival <= t) {
      const size_t index = next_arrival_++;
      ++stats_.jobs_submitted;
      Enqueue(index, arrival);
      continue;
    }
    break;
  }
}

void Workload::Enqueue(size_t job, WallTime now) {
  Job& j = jobs_[job];
  j.state = JobState::kQueued;
  j.queued_since = now;
  j.node = -1;
  queue_.insert({-trace_.jobs[job].unit.priority, ToUnixSeconds(now), job});
  arrived_.push_back(job);
  if (const int g = GangOf(job); g >= 0 && ++gangs_[g].queued == int(gangs_[g].members.size())) {
    gangs_[g].all_queued_since = now;
  }
  ++stats_.jobs_queued;
  pending_dirty_ = true;
  ++pending_version_;
}

double Workload::JobGpus(const Job& j) const {
  if (j.gpus.empty()) return 0;
  return static_cast<double>(j.gpus.size()) * j.milli / 1000.0;
}

bool Workload::StaticFit(const DemandUnit& u, const SimNode& n) const {
  if (u.capacity_type && *u.capacity_type != n.capacity_type) return false;
  if (!u.interruptible && n.capacity_type == CapacityType::kSpot) return false;
  if (!u.pool.empty() && u.pool != n.pool) return false;
  auto cp = class_pools_.find(u.workload_class);
  if (cp != class_pools_.end() && !cp->second.empty() && cp->second.count(n.pool) == 0) return false;
  if (!u.zones.empty() && !Contains(u.zones, n.zone)) return false;
  if (!u.instance_types.empty() && !Contains(u.instance_types, n.instance_type)) return false;
  if (!NeedsGpu(u)) return true;
  if (n.gpu == nullptr) return false;
  if (!u.gpu_models.empty() && !Contains(u.gpu_models, n.gpu->name) && !Contains(u.gpu_models, n.gpu->short_name)) {
    return false;
  }
  if (u.min_gpu_memory_mib > n.gpu->memory_mib) return false;
  if (u.gpus > static_cast<int>(n.free_milli.size())) return false;
  if (u.gpus == 0 && u.gpu_milli == 0 && n.gpu->FindMigProfile(u.mig_profile) == nullptr) return false;
  return true;
}

bool Workload::Fits(const DemandUnit& u, SimNode& n, int shape, int* milli_per_gpu) const {
  if (n.draining || !n.alive) return false;
  int8_t& known = n.static_fit[static_cast<size_t>(shape)];
  if (known < 0) known = StaticFit(u, n) ? 1 : 0;
  if (known == 0) return false;
  if (u.cpu_milli > n.free_cpu_milli || u.memory_mib > n.free_memory_mib) return false;
  if (!NeedsGpu(u)) {
    *milli_per_gpu = 0;
    return true;
  }
  if (u.gpus > 0) {
    int whole = 0;
    for (int f : n.free_milli) whole += f == 1000 ? 1 : 0;
    *milli_per_gpu = 1000;
    return whole >= u.gpus;
  }
  int milli = u.gpu_milli;
  if (milli == 0) milli = n.gpu->FindMigProfile(u.mig_profile)->ShareMilli();
  *milli_per_gpu = milli;
  for (int f : n.free_milli) {
    if (f >= milli) return true;
  }
  return false;
}

bool Workload::TryPlace(size_t job, int slot, WallTime now) {
  SimNode& n = nodes_[static_cast<size_t>(slot)];
  const DemandUnit& u = trace_.jobs[job].unit;
  int milli = 0;
  int domain = -1;
  if (!Fits(u, n, shape_of_[job], &milli)) return false;
  if (!spread_.empty() || !on_demand_only_.empty()) {
    if (!SpreadAllows(u, n, &domain)) return false;
    if (domain >= 0) ++spread_state_[u.workload_class].running[static_cast<size_t>(domain)];
  }
  Job& j = jobs_[job];
  queue_.erase({-u.priority, ToUnixSeconds(j.queued_since), job});
  j.spread_domain = domain;
  j.gpus.clear();
  j.milli = milli;
  if (milli == 1000) {
    for (size_t g = 0; g < n.free_milli.size() && static_cast<int>(j.gpus.size()) < u.gpus; ++g) {
      if (n.free_milli[g] == 1000) j.gpus.push_back(static_cast<int>(g));
    }
  } else if (milli > 0) {
    // Best fit: the fullest GPU that still has room, to keep whole GPUs free.
    int best = -1;
    for (size_t g = 0; g < n.free_milli.size(); ++g) {
      if (n.free_milli[g] >= milli && (best < 0 || n.free_milli[g] < n.free_milli[static_cast<size_t>(best)])) {
        best = static_cast<int>(g);
      }
    }
    j.gpus.push_back(best);
  }
  for (int g : j.gpus) n.free_milli[static_cast<size_t>(g)] -= milli;
  n.free_cpu_milli -= u.cpu_milli;
  n.free_memory_mib -= u.memory_mib;
  n.jobs.push_back(job);
  n.units.push_back(u);
  n.units.back().expected_runtime = ExpectedRuntime(job);
  // Running work keeps its deadline: the controller plans the replacement
  // of a noticed node's units, and counts deadlines passed while running.
  SetDeadlineTerms(job, &n.units.back());
  n.units.back().progressing_since = now + Seconds(j.started_before ? u.restart_cost.count() : 0);
  Touch(n);
  j.state = JobState::kRunning;
  j.node = slot;
  j.wait_s += (now - j.queued_since).count();
  j.run_start = now;
  j.saved_at_notice_s = -1;
  j.overhead_s = j.started_before ? u.restart_cost.count() : 0;
  --stats_.jobs_queued;
  ++stats_.jobs_running;
  j.placed_at = now;
  if (GangOf(job) >= 0) {
    NoteGangMemberPlaced(job, now);
  } else {
    finishes_.push({now + Seconds(j.overhead_s + j.remaining_s), job, j.generation});
  }
  return true;
}

void Workload::Release(size_t job, WallTime now) {
  Job& j = jobs_[job];
  SimNode& n = nodes_[static_cast<size_t>(j.node)];
  const DemandUnit& u = trace_.jobs[job].unit;
  for (int g : j.gpus) n.free_milli[static_cast<size_t>(g)] += j.milli;
  n.free_cpu_milli += u.cpu_milli;
  n.free_memory_mib += u.memory_mib;
  auto pos = std::find(n.jobs.begin(), n.jobs.end(), job);
  const size_t at = static_cast<size_t>(pos - n.jobs.begin());
  n.jobs.erase(pos);
  n.units.erase(n.units.begin() + static_cast<std::ptrdiff_t>(at));
  Touch(n);
  if (!j.waiting_for_gang) stats_.busy_gpu_seconds += JobGpus(j) * static_cast<double>((now - j.run_start).count());
  AddHeld(job, n.id, now);
  --stats_.jobs_running;
  if (j.spread_domain >= 0) --spread_state_[u.workload_class].running[static_cast<size_t>(j.spread_domain)];
  j.spread_domain = -1;
  j.node = -1;
  j.gpus.clear();
  capacity_freed_ = true;
}

int64_t Workload::RunProgress(const Job& j, WallTime now) {
  return std::clamp<int64_t>((now - j.run_start).count() - j.overhead_s, 0, j.remaining_s);
}

void Workload::Evict(size_t job, WallTime now, bool interrupted) {
  const int g = GangOf(job);
  if (g >= 0 && gangs_[g].running()) {
    StopGang(g, now, interrupted);
  } else {
    EvictOne(job, now, interrupted, std::nullopt);
  }
}

int64_t Workload::SavedProgress(size_t job, WallTime now, bool interrupted) const {
  const Job& j = jobs_[job];
  const int64_t progress = RunProgress(j, now);
  if (!interrupted) return progress;
  const int64_t c = trace_.jobs[job].unit.checkpoint_interval.count();
  return std::max(c > 0 ? (progress / c) * c : 0, j.saved_at_notice_s);
}

void Workload::EvictOne(size_t job, WallTime now, bool interrupted, std::optional<int64_t> saved_s) {
  Job& j = jobs_[job];
  const DemandUnit& u = trace_.jobs[job].unit;
  if (j.waiting_for_gang) {
    // Placed, never started: it made no progress and loses none.
    AddGangIdle(j, now);
    Release(job, now);
    j.waiting_for_gang = false;
    Gang& g = gangs_[GangOf(job)];
    if (--g.placed == 0) g.zone.clear();
    ++stats_.requeues;
    Enqueue(job, now);
    return;
  }
  const int64_t progress = RunProgress(j, now);
  const int64_t saved = std::min(progress, saved_s.value_or(SavedProgress(job, now, interrupted)));
  const double lost = JobGpus(j) * static_cast<double>(progress - saved);
  stats_.lost_gpu_seconds += lost;
  if (interrupted && measuring_lost_ && lost > 0) lost_.back().gpu_seconds[{u.workload_class, u.team}] += lost;
  Release(job, now);
  j.remaining_s -= saved;
  ++j.generation;
  j.started_before = true;
  ++stats_.requeues;
  Enqueue(job, now);
}

void Workload::Schedule(WallTime now) {
  if (!capacity_freed_ && arrived_.empty()) return;
  std::vector<char> failed(static_cast<size_t>(shape_count_), 0);
  std::vector<char> failed_gang(gangs_.size(), 0);
  int failed_shapes = 0;
  // TryPlace takes a placed job (and its gang's other members) out of queue_.
  auto attempt = [&](size_t job) {
    if (jobs_[job].state != JobState::kQueued) return false;
    if (const int g = GangOf(job); g >= 0) {
      if (gang_admission_ == GangAdmission::kEachPod) return PlaceGangMember(job, now);
      if (failed_gang[size_t(g)]) return false;
      const bool placed = PlaceGangWhole(g, now);
      failed_gang[size_t(g)] = placed ? 0 : 1;
      return placed;
    }
    const size_t shape = static_cast<size_t>(shape_of_[job]);
    if (failed[shape]) return false;
    for (size_t s = 0; s < nodes_.size(); ++s) {
      if (TryPlace(job, static_cast<int>(s), now)) return true;
    }
    // A split class's job may fit later in the pass, once its class's
    // domain counts have moved.
    if (spread_state_.count(trace_.jobs[job].unit.workload_class) != 0) return false;
    failed[shape] = 1;
    ++failed_shapes;
    return false;
  };
  bool placed_any = false;
  if (capacity_freed_) {
    // Once every shape has failed nothing further down the queue can fit.
    for (auto it = queue_.begin(); it != queue_.end() && failed_shapes < shape_count_;) {
      const QueueKey key = *it;
      placed_any = attempt(key.job) || placed_any;
      it = queue_.upper_bound(key);
    }
  } else {
    std::vector<QueueKey> keys;
    for (size_t job : arrived_) {
      if (jobs_[job].state == JobState::kQueued) {
        keys.push_back({-trace_.jobs[job].unit.priority, ToUnixSeconds(jobs_[job].queued_since), job});
      }
    }
    std::sort(keys.begin(), keys.end());
    for (const QueueKey& k : keys) placed_any = attempt(k.job) || placed_any;
  }
  capacity_freed_ = false;
  arrived_.clear();
  if (placed_any) {
    pending_dirty_ = true;
    ++pending_version_;
  }
}

const std::vector<DemandUnit>& Workload::Pending() {
  if (pending_dirty_) {
    pending_units_.clear();
    for (const QueueKey& k : queue_) {
      if (pending_units_.size() >= max_pending_) break;
      pending_units_.push_back(trace_.jobs[k.job].unit);
      DemandUnit& u = pending_units_.back();
      u.expected_runtime = ExpectedRuntime(k.job);
      SetDeadlineTerms(k.job, &u);
      // Members placed alone fix the zone of the rest (their zone affinity).
      if (const int g = GangOf(k.job); g >= 0 && u.gang->same_zone && !gangs_[g].zone.empty()) {
        u.zones = {gangs_[g].zone};
      }
    }
    pending_dirty_ = false;
  }
  return pending_units_;
}

const std::vector<DemandUnit>& Workload::RunningOn(const std::string& instance_id) {
  static const std::vector<DemandUnit> kNone;
  auto it = node_slot_.find(instance_id);
  return it == node_slot_.end() ? kNone : nodes_[static_cast<size_t>(it->second)].units;
}

uint64_t Workload::RunningVersion(const std::string& instance_id) const {
  auto it = node_slot_.find(instance_id);
  return it == node_slot_.end() ? 0 : nodes_[static_cast<size_t>(it->second)].version;
}

std::vector<SignalStatus> Workload::Signals() const {
  std::vector<SignalStatus> out;
  for (const std::string& c : classes_) out.push_back({"trace replay: " + c, "trace", {c}, signal_time_, 0});
  return out;
}

void Workload::OnReady(const Instance& instance, int gpu_count) {
  // A warm refill registers tainted (kWarmTag) and is stopped: it takes no
  // work until woken, when the cloud no longer reports the tag.
  if (instance.tags.count(kWarmTag) != 0) return;
  SimNode n;
  n.id = instance.instance_id;
  n.pool = instance.pool;
  n.zone = instance.offering.zone;
  n.instance_type = instance.offering.instance_type;
  n.capacity_type = instance.offering.capacity_type;
  const InstanceType* t = catalog_.FindInstanceType(n.instance_type);
  if (t != nullptr) {
    n.gpu = t->gpu_model.empty() ? nullptr : catalog_.FindGpuModel(t->gpu_model);
    n.free_cpu_milli = int64_t{t->vcpus} * 1000;
    n.free_memory_mib = t->memory_mib;
  }
  n.free_milli.assign(static_cast<size_t>(gpu_count), 1000);
  n.static_fit.assign(static_cast<size_t>(shape_count_), -1);
  for (auto& [cls, state] : spread_state_) {
    const int d = spread_.DomainOf(instance.tags, cls);
    n.spread_domain[cls] = d;
    if (d >= 0) ++state.nodes[static_cast<size_t>(d)];
  }
  auto noticed = noticed_before_ready_.find(n.id);
  if (noticed != noticed_before_ready_.end()) {
    n.draining = true;
    noticed_before_ready_.erase(noticed);
  }
  Touch(n);
  node_slot_[n.id] = static_cast<int>(nodes_.size());
  nodes_.push_back(std::move(n));
  capacity_freed_ = true;
}

void Workload::OnNotice(const std::string& instance_id, WallTime at) {
  auto it = node_slot_.find(instance_id);
  if (it == node_slot_.end()) {
    noticed_before_ready_[instance_id] = true;
    return;
  }
  SimNode& node = nodes_[static_cast<size_t>(it->second)];
  node.draining = true;
  for (size_t job : node.jobs) {
    if (trace_.jobs[job].unit.checkpoint_on_notice) jobs_[job].saved_at_notice_s = RunProgress(jobs_[job], at);
  }
}

void Workload::OnGone(const std::string& instance_id, WallTime at, bool interrupted) {
  noticed_before_ready_.erase(instance_id);
  const bool taken_back = taken_back_.erase(instance_id) != 0;
  // Evict adds the work each job loses here.
  if (interrupted && measuring_lost_) lost_.push_back(LostWork{instance_id, at, {}});
  auto it = node_slot_.find(instance_id);
  if (it == node_slot_.end()) return;
  const size_t slot = static_cast<size_t>(it->second);
  const std::vector<size_t> victims = nodes_[slot].jobs;
  for (size_t job : victims) {
    // A gang member here may have stopped with another member.
    if (jobs_[job].state != JobState::kRunning) continue;
    if (taken_back) {
      ++stats_.jobs_taken_back;
      stats_.jobs_taken_back_runtime_known += RuntimeKnown(job) ? 1 : 0;
    }
    Evict(job, at, interrupted);
  }
  for (const auto& [cls, d] : nodes_[slot].spread_domain) {
    if (d >= 0) --spread_state_[cls].nodes[static_cast<size_t>(d)];
  }
  nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(slot));
  node_slot_.clear();
  for (size_t s = 0; s < nodes_.size(); ++s) {
    node_slot_[nodes_[s].id] = static_cast<int>(s);
    for (size_t job : nodes_[s].jobs) jobs_[job].node = static_cast<int>(s);
  }
}

void Workload::AddHeld(size_t job, const std::string& instance_id, WallTime now) {
  if (!measuring_held_) return;
  const Job& j = jobs_[job];
  if (j.waiting_for_gang) return;
  const WallTime from = std::max(j.run_start, held_since_);
  const double gpu_seconds = JobGpus(j) * static_cast<double>((now - from).count());
  if (gpu_seconds <= 0) return;
  const DemandUnit& u = trace_.jobs[job].unit;
  held_[instance_id][{u.workload_class, u.team}] += gpu_seconds;
}

std::optional<HeldGpuSeconds> Workload::TakeHeldGpuSeconds(WallTime now) {
  if (!measuring_held_) {
    measuring_held_ = true;
    held_since_ = now;
    return HeldGpuSeconds{};
  }
  for (const SimNode& n : nodes_) {
    for (size_t job : n.jobs) AddHeld(job, n.id, now);
  }
  held_since_ = std::max(held_since_, now);
  HeldGpuSeconds out = std::move(held_);
  held_.clear();
  return out;
}

std::optional<std::vector<LostWork>> Workload::TakeLostWork() {
  measuring_lost_ = true;
  return std::exchange(lost_, {});
}

void Workload::CloseAccounting(WallTime end) {
  for (const Job& j : jobs_) {
    if (j.state != JobState::kRunning) continue;
    if (j.waiting_for_gang) {
      AddGangIdle(j, end);
    } else if (end > j.run_start) {
      stats_.busy_gpu_seconds += JobGpus(j) * static_cast<double>((end - j.run_start).count());
    }
  }
}

std::vector<std::string> Workload::NeverStarted() const {
  std::vector<std::string> ids;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (jobs_[i].state == JobState::kQueued && !jobs_[i].started_before) ids.push_back(trace_.jobs[i].unit.id);
  }
  return ids;
}

}  // namespace gpuscaler::sim
