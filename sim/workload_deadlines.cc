// The workload's deadlines (classes[].deadline): when each job is due, the
// terms of its Uniform Progress line on the units the controller sees, and
// the deadlines met and missed per class.
#include "sim/workload.h"

namespace gpuscaler::sim {

std::map<std::string, DeadlineRule> ClassDeadlines(const Policy& policy) {
  std::map<std::string, DeadlineRule> out;
  for (const WorkloadClassPolicy& c : policy.classes) {
    if (c.deadline) out[c.name] = *c.deadline;
  }
  return out;
}

std::optional<WallTime> JobDueAt(const TraceJob& job, WallTime start,
                                 const std::map<std::string, DeadlineRule>& deadlines) {
  auto d = deadlines.find(job.unit.workload_class);
  if (d == deadlines.end()) return std::nullopt;
  return start + job.submit + d->second.Allowed(job.duration);
}

bool StatesRuntime(const TraceJob& job, const std::map<std::string, DeadlineRule>& deadlines) {
  auto d = deadlines.find(job.unit.workload_class);
  return d != deadlines.end() && d->second.runtime_multiple > 0;
}

bool CanMeetDeadline(const TraceJob& job, WallTime start, WallTime due) {
  return start + job.submit + job.duration <= due;
}

std::optional<WallTime> Workload::DueAt(size_t job,
                                        const std::map<std::string, DeadlineRule>& deadlines) const {
  return JobDueAt(trace_.jobs[job], start_, deadlines);
}

void Workload::SetDeadlineTerms(size_t job, DemandUnit* u) const {
  u->deadline = DueAt(job, unit_deadlines_);
  if (!u->deadline) return;
  const TraceJob& tj = trace_.jobs[job];
  u->submitted = start_ + tj.submit;
  // Only a runtime the job states draws its line (a class's guess does
  // not: DemandUnit::total_work).
  u->total_work = StatesRuntime(tj, judged_deadlines_) ? tj.duration : Seconds(0);
}

std::map<std::string, ClassStats> Workload::ClassResults(WallTime end) const {
  std::map<std::string, ClassStats> out;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    const Job& j = jobs_[i];
    ClassStats& c = out[trace_.jobs[i].unit.workload_class];
    if (j.state == JobState::kFuture) {  // submitted after the replay's end
      ++c.unfinished;
      continue;
    }
    if (const std::optional<WallTime> due_at = DueAt(i, judged_deadlines_)) {
      if (!c.deadlines) c.deadlines.emplace();
      const WallTime due = *due_at;
      if (!CanMeetDeadline(trace_.jobs[i], start_, due)) {
        ++c.deadlines->unmeetable;
      } else if (j.state == JobState::kDone) {
        ++(j.done_at <= due ? c.deadlines->met : c.deadlines->missed);
      } else {
        ++(end > due ? c.deadlines->missed : c.deadlines->open);
      }
    }
    int64_t wait = j.wait_s;
    if (j.state == JobState::kQueued) wait += (end - j.queued_since).count();
    c.waits_s.push_back(wait);
    if (j.state == JobState::kDone) {
      ++c.completed;
    } else {
      ++c.unfinished;
    }
  }
  return out;
}

}  // namespace gpuscaler::sim
