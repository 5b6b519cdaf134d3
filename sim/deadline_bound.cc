#include "sim/deadline_bound.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "gpuscaler/model/demand.h"
#include "sim/baseline_fit.h"
#include "sim/workload.h"

namespace gpuscaler::sim {
namespace {

constexpr double kSecondsPerHour = 3600.0;
// The end of a span that never ends.
constexpr Seconds kForever = Seconds(std::numeric_limits<int64_t>::max() / 2);

// SimCloud applies market points at or before the start at the start, in
// file order, so the last of them is the value at 0.
template <typename T>
void AddStep(std::vector<std::pair<Seconds, T>>* steps, Seconds at, T value) {
  at = std::max(at, Seconds(0));
  if (!steps->empty() && steps->back().first == at) {
    steps->back().second = value;
  } else {
    steps->emplace_back(at, value);
  }
}

// The half-open spans in which a spot offering can do work: while it has
// nodes, and for `notice` after each drop to 0. Ascending, disjoint.
std::vector<std::pair<Seconds, Seconds>> UsableSpans(const OfferingSteps& o, Seconds notice) {
  std::vector<std::pair<Seconds, Seconds>> spans;
  auto add = [&spans](Seconds from, Seconds to) {
    if (!spans.empty() && spans.back().second >= from) {
      spans.back().second = std::max(spans.back().second, to);
    } else {
      spans.emplace_back(from, to);
    }
  };
  bool up = false;
  Seconds up_since{0};
  for (const auto& [at, nodes] : o.available_nodes) {
    if (nodes > 0 && !up) {
      up = true;
      up_since = at;
    } else if (nodes <= 0 && up) {
      up = false;
      add(up_since, at + notice);
    }
  }
  if (up) add(up_since, kForever);
  return spans;
}

double PriceAt(const OfferingSteps& o, Seconds t, size_t* cursor) {
  while (*cursor + 1 < o.usd_per_hour.size() && o.usd_per_hour[*cursor + 1].first <= t) ++*cursor;
  return o.usd_per_hour[*cursor].second;
}

bool UsableAt(const std::vector<std::pair<Seconds, Seconds>>& spans, Seconds t, size_t* cursor) {
  while (*cursor < spans.size() && spans[*cursor].second <= t) ++*cursor;
  return *cursor < spans.size() && spans[*cursor].first <= t;
}

}  // namespace

std::vector<OfferingSteps> MarketSteps(const Scenario& scenario) {
  std::vector<OfferingSteps> out;
  // Matching as SimCloud does: type and capacity type, zone or region.
  auto matches = [](const Offering& o, const std::string& type, const std::string& zone, CapacityType cap) {
    return o.instance_type == type && o.capacity_type == cap && (o.zone == zone || o.region == zone);
  };
  for (const Offering& o : scenario.catalog.Offerings(scenario.regions)) {
    const InstanceType* type = scenario.catalog.FindInstanceType(o.instance_type);
    if (type == nullptr || type->gpu_count <= 0) continue;
    OfferingSteps steps;
    steps.offering = o;
    steps.gpus_per_node = type->gpu_count;
    steps.usd_per_hour.emplace_back(Seconds(0), o.usd_per_hour);
    for (const PricePoint& p : scenario.market.prices) {
      if (matches(o, p.instance_type, p.zone, p.capacity_type))
        AddStep(&steps.usd_per_hour, p.t, p.usd_per_hour);
    }
    if (o.capacity_type == CapacityType::kSpot) {
      const auto by_family = scenario.cloud.spot_capacity_by_family.find(type->family);
      const int configured = by_family == scenario.cloud.spot_capacity_by_family.end()
                                 ? scenario.cloud.spot_capacity_per_zone
                                 : by_family->second;
      steps.available_nodes.emplace_back(Seconds(0), configured);
      for (const AvailabilityPoint& a : scenario.market.availability) {
        if (matches(o, a.instance_type, a.zone, CapacityType::kSpot)) {
          AddStep(&steps.available_nodes, a.t, a.available_nodes);
        }
      }
    }
    out.push_back(std::move(steps));
  }
  return out;
}

Result<PriceTimeline> CheapestPerGpu(const std::vector<const OfferingSteps*>& offerings, Seconds notice) {
  std::vector<std::vector<std::pair<Seconds, Seconds>>> spans(offerings.size());
  std::vector<Seconds> breaks{Seconds(0)};
  for (size_t i = 0; i < offerings.size(); ++i) {
    const OfferingSteps& o = *offerings[i];
    if (o.gpus_per_node <= 0 || o.usd_per_hour.empty() || o.usd_per_hour.front().first != Seconds(0)) {
      return Error::InvalidInput(o.offering.Key() + ": needs GPUs and a price from 0");
    }
    for (const auto& step : o.usd_per_hour) breaks.push_back(step.first);
    if (o.offering.capacity_type == CapacityType::kSpot) {
      spans[i] = UsableSpans(o, notice);
      for (const auto& [from, to] : spans[i]) {
        breaks.push_back(from);
        if (to != kForever) breaks.push_back(to);
      }
    }
  }
  std::sort(breaks.begin(), breaks.end());
  breaks.erase(std::unique(breaks.begin(), breaks.end()), breaks.end());

  PriceTimeline out;
  std::vector<size_t> price_cursor(offerings.size(), 0), span_cursor(offerings.size(), 0);
  for (const Seconds t : breaks) {
    std::optional<PriceSegment> best;
    for (size_t i = 0; i < offerings.size(); ++i) {
      const OfferingSteps& o = *offerings[i];
      const double per_gpu = PriceAt(o, t, &price_cursor[i]) / o.gpus_per_node;
      const bool spot = o.offering.capacity_type == CapacityType::kSpot;
      if (spot && !UsableAt(spans[i], t, &span_cursor[i])) continue;
      // Equal prices: spot first, so the spot share reported is the most
      // the bound could put on spot.
      if (!best || per_gpu < best->usd_per_gpu_hour || (per_gpu == best->usd_per_gpu_hour && spot)) {
        best = PriceSegment{t, per_gpu, spot};
      }
    }
    if (!best) {
      return Error::InvalidInput("no offering usable at +" + std::to_string(t.count()) +
                                 " s: spot is down and no on-demand offering is allowed");
    }
    if (!out.empty() && out.back().usd_per_gpu_hour == best->usd_per_gpu_hour &&
        out.back().spot == best->spot) {
      continue;
    }
    out.push_back(*best);
  }
  return out;
}

Result<RunCost> CheapestRun(const PriceTimeline& prices, Seconds from, Seconds to, Seconds run) {
  if (run < Seconds(0) || run > to - from) {
    return Error::InvalidInput("a run of " + std::to_string(run.count()) + " s does not fit [" +
                               std::to_string(from.count()) + ", " + std::to_string(to.count()) + ")");
  }
  if (prices.empty() || prices.front().start > from)
    return Error::InvalidInput("the price timeline starts late");
  RunCost cost;
  if (run == Seconds(0)) return cost;
  // The pieces of [from, to) by segment, cheapest first.
  auto it = std::upper_bound(prices.begin(), prices.end(), from,
                             [](Seconds t, const PriceSegment& s) { return t < s.start; });
  --it;
  std::vector<std::pair<const PriceSegment*, Seconds>> pieces;
  for (; it != prices.end() && it->start < to; ++it) {
    const Seconds begin = std::max(from, it->start);
    const Seconds end = std::next(it) == prices.end() ? to : std::min(to, std::next(it)->start);
    if (end > begin) pieces.emplace_back(&*it, end - begin);
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& b) {
    if (a.first->usd_per_gpu_hour != b.first->usd_per_gpu_hour) {
      return a.first->usd_per_gpu_hour < b.first->usd_per_gpu_hour;
    }
    return a.first->spot && !b.first->spot;
  });
  Seconds left = run;
  for (const auto& [segment, length] : pieces) {
    if (left <= Seconds(0)) break;
    const Seconds take = std::min(left, length);
    cost.usd_per_gpu += segment->usd_per_gpu_hour * static_cast<double>(take.count()) / kSecondsPerHour;
    if (segment->spot) cost.spot += take;
    left -= take;
  }
  return cost;
}

Result<DeadlineBound> BoundDeadlines(const Scenario& scenario) {
  using baseline_detail::Admits;
  using baseline_detail::PoolAllows;
  DeadlineBound bound;
  bound.notice = scenario.cloud.notice;
  bound.horizon = scenario.horizon;
  const std::vector<OfferingSteps> steps = MarketSteps(scenario);
  const std::map<std::string, DeadlineRule> deadlines = ClassDeadlines(scenario.policy);

  // One pair of timelines (any capacity, on-demand only) per set of
  // offerings some job may use.
  struct Timelines {
    PriceTimeline cheapest;
    PriceTimeline on_demand;
  };
  std::map<std::vector<size_t>, Timelines> by_set;

  for (const TraceJob& job : scenario.trace.jobs) {
    const DemandUnit& u = job.unit;
    const double gpus = GpuShare(u);
    if (gpus <= 0) {
      ++bound.jobs_without_gpu;
      continue;
    }
    if (job.submit >= scenario.horizon) {
      ++bound.jobs_after_horizon;
      continue;
    }
    std::vector<size_t> allowed;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Offering& o = steps[i].offering;
      const InstanceType* type = scenario.catalog.FindInstanceType(o.instance_type);
      const GpuModel* gpu = scenario.catalog.FindGpuModel(type->gpu_model);
      for (const NodePoolPolicy& pool : scenario.policy.pools) {
        if (PoolAllows(pool, o, *type, gpu) && Admits(scenario.policy, u, pool.name, o)) {
          allowed.push_back(i);
          break;
        }
      }
    }
    auto found = by_set.find(allowed);
    if (found == by_set.end()) {
      std::vector<const OfferingSteps*> all, on_demand;
      for (size_t i : allowed) {
        all.push_back(&steps[i]);
        if (steps[i].offering.capacity_type == CapacityType::kOnDemand) on_demand.push_back(&steps[i]);
      }
      const std::string job_name = "job " + u.id + " (class " + u.workload_class + ")";
      Result<PriceTimeline> cheapest = CheapestPerGpu(all, bound.notice);
      if (!cheapest) return Error::InvalidInput(job_name + ": " + cheapest.error().message());
      Result<PriceTimeline> od = CheapestPerGpu(on_demand, bound.notice);
      if (!od) {
        return Error::InvalidInput(job_name +
                                   ": no on-demand GPU offering of the policy's pools may run it " +
                                   "(the bound prices its at-once run on-demand as well)");
      }
      found = by_set.emplace(allowed, Timelines{std::move(cheapest).value(), std::move(od).value()}).first;
    }
    const Timelines& prices = found->second;

    // At once: its run from submission, cut at the horizon.
    const Seconds at_once_end = std::min(job.submit + job.duration, scenario.horizon);
    const Seconds at_once_run = at_once_end - job.submit;
    Result<RunCost> at_once = CheapestRun(prices.cheapest, job.submit, at_once_end, at_once_run);
    Result<RunCost> on_demand = CheapestRun(prices.on_demand, job.submit, at_once_end, at_once_run);
    if (!at_once) return at_once.error();
    if (!on_demand) return on_demand.error();

    JobTotals* totals = &bound.no_deadline;
    RunCost deferred = *at_once;
    Seconds counted = at_once_run;
    if (const std::optional<WallTime> due = JobDueAt(job, scenario.start, deadlines)) {
      if (CanMeetDeadline(job, scenario.start, *due)) {
        totals = &bound.meetable;
        const Seconds due_s = *due - scenario.start;
        // Whatever fits between the horizon and the due time can be put
        // after the replay's end, where nothing is billed.
        const Seconds window_end = std::min(due_s, scenario.horizon);
        counted = std::max(Seconds(0), job.duration - std::max(Seconds(0), due_s - scenario.horizon));
        Result<RunCost> best = CheapestRun(prices.cheapest, job.submit, window_end, counted);
        if (!best) return best.error();
        deferred = *best;
        // The at-once and on-demand figures of a meetable job count the same
        // run as its bound, so the columns compare like with like.
        if (counted != at_once_run) {
          Result<RunCost> a = CheapestRun(prices.cheapest, job.submit, job.submit + counted, counted);
          Result<RunCost> d = CheapestRun(prices.on_demand, job.submit, job.submit + counted, counted);
          if (!a) return a.error();
          if (!d) return d.error();
          at_once = a;
          on_demand = d;
        }
      } else {
        totals = &bound.unmeetable;
      }
    }
    const double hours = static_cast<double>(counted.count()) / kSecondsPerHour;
    ++totals->jobs;
    totals->gpu_hours += gpus * hours;
    totals->deferred_usd += gpus * deferred.usd_per_gpu;
    totals->deferred_spot_gpu_hours += gpus * static_cast<double>(deferred.spot.count()) / kSecondsPerHour;
    totals->at_once_usd += gpus * at_once->usd_per_gpu;
    totals->at_once_spot_gpu_hours += gpus * static_cast<double>(at_once->spot.count()) / kSecondsPerHour;
    totals->on_demand_usd += gpus * on_demand->usd_per_gpu;
  }
  return bound;
}

Scenario LabelJobsByDeadline(Scenario scenario) {
  const std::map<std::string, DeadlineRule> deadlines = ClassDeadlines(scenario.policy);
  for (TraceJob& job : scenario.trace.jobs) {
    const std::optional<WallTime> due = JobDueAt(job, scenario.start, deadlines);
    const std::string_view team = !due                                         ? kNoDeadlineTeam
                                  : CanMeetDeadline(job, scenario.start, *due) ? kMeetableTeam
                                                                               : kUnmeetableTeam;
    job.unit.team = std::string(team);
  }
  return scenario;
}

std::optional<double> BoundComparison::ShareOfBoundPct(const RunResult& r) const {
  const double most = Best().saving_usd;
  if (most <= 0) return std::nullopt;
  return 100.0 * SavingUsd(r) / most;
}

BoundComparison CompareWithBound(const DeadlineBound& bound, const RunResult& at_once,
                                 const std::optional<MeasuredShares>& measured) {
  BoundComparison c;
  c.bound = bound;
  c.at_once_run = at_once.name;
  c.at_once_usd = at_once.total_cost_usd;
  const JobTotals& m = bound.meetable;
  auto add = [&c, &m](std::string name, std::string description, double share) {
    BoundSplit s;
    s.name = std::move(name);
    s.description = std::move(description);
    s.meetable_usd = share;
    // The meetable work cannot have cost more than the whole bill.
    s.saving_usd = std::min(c.at_once_usd, share) - m.deferred_usd;
    s.best_deferred_usd = c.at_once_usd - s.saving_usd;
    s.saving_pct = c.at_once_usd > 0 ? 100.0 * s.saving_usd / c.at_once_usd : 0.0;
    c.splits.push_back(std::move(s));
  };
  add("on-demand", "on-demand for the meetable work", m.on_demand_usd);
  if (measured) {
    c.labelled_at_once_usd = measured->labelled_usd;
    add("measured", "measured meetable share", measured->meetable_usd);
    add("measured-with-idle", "measured, with all idle", measured->meetable_usd + measured->idle_usd);
  } else {
    const double od_per_gpu_hour = m.gpu_hours > 0 ? m.on_demand_usd / m.gpu_hours : 0;
    const double overhead_gpu_hours = at_once.paid_gpu_hours - at_once.busy_gpu_hours + at_once.gpu_hours_lost;
    add("on-demand-with-idle", "with all idle and lost GPU-h at on-demand",
        m.on_demand_usd + overhead_gpu_hours * od_per_gpu_hour);
  }
  for (size_t i = 1; i < c.splits.size(); ++i) {
    if (c.splits[i].saving_usd > c.splits[c.most_generous].saving_usd) c.most_generous = i;
  }
  return c;
}

}  // namespace gpuscaler::sim
