// The workload's gangs: multi-node jobs whose members start together and stop
// together (GangAdmission in workload.h).
#include <algorithm>
#include <map>

#include "gpuscaler/model/find_by_name.h"
#include "sim/workload.h"

namespace gpuscaler::sim {

void Workload::FindGangs() {
  std::map<std::string, int> by_name;
  for (size_t i = 0; i < trace_.jobs.size(); ++i) {
    const std::optional<GangMembership>& gang = trace_.jobs[i].unit.gang;
    if (!gang) continue;
    if (gang_of_.empty()) gang_of_.assign(trace_.jobs.size(), -1);
    auto [it, inserted] = by_name.emplace(gang->name, int(gangs_.size()));
    if (inserted) gangs_.emplace_back();
    gangs_[size_t(it->second)].members.push_back(i);
    gang_of_[i] = it->second;
  }
}

bool Workload::PlaceGangWhole(int gang, WallTime now) {
  Gang& g = gangs_[size_t(gang)];
  if (g.placed > 0 || g.queued < int(g.members.size())) return false;  // members still to come
  std::vector<std::string> zones;
  if (trace_.jobs[g.members[0]].unit.gang->same_zone) {
    for (const SimNode& n : nodes_) {
      if (n.alive && !n.draining && !Contains(zones, n.zone)) zones.push_back(n.zone);
    }
  } else {
    zones.push_back("");
  }
  for (const std::string& zone : zones) {
    std::vector<size_t> placed;
    for (size_t m : g.members) {
      bool ok = false;
      for (size_t s = 0; s < nodes_.size() && !ok; ++s) {
        if (zone.empty() || nodes_[s].zone == zone) ok = TryPlace(m, int(s), now);
      }
      if (!ok) break;
      placed.push_back(m);
    }
    // The last member's TryPlace started the gang.
    if (placed.size() == g.members.size()) return true;
    for (auto it = placed.rbegin(); it != placed.rend(); ++it) Unplace(*it, now);
  }
  return false;
}

bool Workload::PlaceGangMember(size_t job, WallTime now) {
  const Gang& g = gangs_[size_t(GangOf(job))];
  const bool same_zone = trace_.jobs[job].unit.gang->same_zone;
  for (size_t s = 0; s < nodes_.size(); ++s) {
    if (same_zone && !g.zone.empty() && nodes_[s].zone != g.zone) continue;
    if (TryPlace(job, int(s), now)) return true;
  }
  return false;
}

void Workload::NoteGangMemberPlaced(size_t job, WallTime now) {
  Gang& g = gangs_[size_t(GangOf(job))];
  Job& j = jobs_[job];
  j.waiting_for_gang = true;
  --g.queued;
  ++g.placed;
  if (g.zone.empty()) g.zone = nodes_[size_t(j.node)].zone;
  if (!g.running()) return;
  ++stats_.gang_starts;
  g.waits_s.push_back((now - g.all_queued_since).count());
  for (size_t m : g.members) {
    Job& member = jobs_[m];
    AddGangIdle(member, now);
    member.wait_s += (now - member.placed_at).count();
    member.waiting_for_gang = false;
    member.run_start = now;
    finishes_.push({now + Seconds(member.overhead_s + member.remaining_s), m, member.generation});
  }
}

void Workload::Unplace(size_t job, WallTime now) {
  Job& j = jobs_[job];
  const WallTime queued_since = j.queued_since;
  const int64_t wait_before = j.wait_s - (now - queued_since).count();
  j.waiting_for_gang = false;  // nothing was held: no idle time to count
  Release(job, now);
  j.wait_s = wait_before;
  j.state = JobState::kQueued;
  ++stats_.jobs_queued;
  queue_.insert({-trace_.jobs[job].unit.priority, ToUnixSeconds(queued_since), job});
  Gang& g = gangs_[size_t(GangOf(job))];
  ++g.queued;
  if (--g.placed == 0) g.zone.clear();
}

void Workload::StopGang(int gang, WallTime now, bool interrupted) {
  Gang& g = gangs_[size_t(gang)];
  g.placed = 0;
  g.zone.clear();
  // All members resume from the last checkpoint every one of them has.
  std::optional<int64_t> saved;
  for (size_t m : g.members) {
    if (jobs_[m].state != JobState::kRunning) continue;
    const int64_t s = SavedProgress(m, now, interrupted);
    saved = saved ? std::min(*saved, s) : s;
  }
  const bool some_done = std::any_of(g.members.begin(), g.members.end(),
                                     [&](size_t m) { return jobs_[m].state == JobState::kDone; });
  for (size_t m : g.members) {
    Job& j = jobs_[m];
    if (j.state != JobState::kRunning) continue;
    if (some_done) {
      // A member finished at this instant: the job's work is done.
      Release(m, now);
      j.remaining_s = 0;
      j.done_at = now;
      j.state = JobState::kDone;
      ++stats_.jobs_completed;
      continue;
    }
    EvictOne(m, now, interrupted, saved);
  }
}

void Workload::AddGangIdle(const Job& j, WallTime now) {
  if (!j.waiting_for_gang || now <= j.placed_at) return;
  stats_.partial_gang_idle_gpu_seconds += JobGpus(j) * static_cast<double>((now - j.placed_at).count());
}

std::vector<int64_t> Workload::GangWaits(WallTime end) const {
  std::vector<int64_t> out;
  for (const Gang& g : gangs_) {
    out.insert(out.end(), g.waits_s.begin(), g.waits_s.end());
    if (!g.running() && g.queued + g.placed == int(g.members.size()) && end > g.all_queued_since) {
      out.push_back((end - g.all_queued_since).count());
    }
  }
  return out;
}

}  // namespace gpuscaler::sim
