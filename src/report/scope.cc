#include <algorithm>
#include <cctype>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::report {
namespace {

std::string Describe(const RunRow& r) {
  return "'" + r.run.name + "' (id " + std::to_string(r.id) + ", " + r.run.source + ", started " +
         FormatRfc3339(r.run.started) + ", " + (r.ended ? "ended " + FormatRfc3339(*r.ended) : "not ended") + ")";
}

std::string ListRuns(const std::vector<const RunRow*>& runs) {
  std::string out;
  for (const RunRow* r : runs) out += "\n  " + Describe(*r);
  return out;
}

bool IsId(const std::string& text) {
  return !text.empty() && text.size() < 19 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

Result<ReportScope> ResolveScope(AuditReader& reader, const ReportQuery& query) {
  Result<std::vector<RunRow>> all = reader.Runs();
  if (!all) return all.error().WithContext("reading the runs");
  std::vector<const RunRow*> runs;
  for (const RunRow& r : *all) runs.push_back(&r);

  std::vector<const RunRow*> selected;
  if (!query.run.empty()) {
    for (const RunRow* r : runs) {
      if (r->run.name == query.run || (IsId(query.run) && std::to_string(r->id) == query.run)) {
        selected.push_back(r);
      }
    }
    if (selected.empty()) {
      return Error::InvalidInput("run: no run '" + query.run + "' in this database; its runs:" +
                                 (runs.empty() ? std::string(" none") : ListRuns(runs)));
    }
    if (selected.size() > 1) {
      return Error::InvalidInput("run: " + std::to_string(selected.size()) + " runs are named '" + query.run +
                                 "'; give one's id:" + ListRuns(selected));
    }
  } else if (query.all_runs || runs.size() <= 1) {
    selected = runs;
  } else {
    return Error::InvalidInput("the database holds " + std::to_string(runs.size()) +
                               " runs; choose one with --run NAME|ID (URL: run=) or report them together with "
                               "--all-runs (all_runs=true):" +
                               ListRuns(runs));
  }

  ReportScope scope;
  if (!query.all_runs && selected.size() == 1) scope.run_id = selected.front()->id;
  for (const RunRow* r : selected) scope.runs.push_back(*r);
  reader.SelectRun(scope.run_id);

  Result<std::optional<WallTime>> last = reader.LastRecordTime();
  if (!last) return last.error();
  const bool daemon = selected.empty() || std::any_of(selected.begin(), selected.end(), [](const RunRow* r) {
                        return r->run.source == "daemon";
                      });
  std::string how;
  WallTime from = query.from;
  WallTime to = query.to;
  if (daemon) {
    WallTime now = query.now.value_or(last->value_or(WallTime{}));
    how = "the calendar month (UTC) of " + FormatRfc3339(now);
    // Data that ends before this month (a stopped daemon, or a demo on its
    // virtual clock): its last month, not a month it has nothing for.
    if (*last && PeriodStart(**last, Period::kMonth) < PeriodStart(now, Period::kMonth)) {
      now = **last;
      how = "the calendar month (UTC) of the last record, " + FormatRfc3339(now) + " (none since)";
    }
    if (!query.from_given) from = PeriodStart(now, Period::kMonth);
    if (!query.to_given) to = NextPeriodStart(now, Period::kMonth);
  } else {
    WallTime started = selected.front()->run.started;
    WallTime ended = started;
    for (const RunRow* r : selected) {
      started = std::min(started, r->run.started);
      ended = std::max(ended, r->ended.value_or(r->run.started));
    }
    if (*last) ended = std::max(ended, **last);
    if (!query.from_given) from = started;
    // `to` is exclusive: one second past the last instant, so nothing
    // recorded at the run's end is left out.
    if (!query.to_given) to = ended + Seconds(1);
    how = selected.size() == 1 ? "the whole run" : "the whole of the runs";
  }
  if (query.from_given && query.to_given) how = "as given";
  else if (query.from_given || query.to_given) how = "as given, the other bound " + how;
  if (from >= to) {
    return Error::InvalidInput("the range is empty or inverted: from " + FormatRfc3339(from) + " is not before to " +
                               FormatRfc3339(to) + " (to is exclusive)");
  }
  scope.from = from;
  scope.to = to;
  scope.live = selected.empty() || std::any_of(selected.begin(), selected.end(),
                                               [](const RunRow* r) { return !r->ended.has_value(); });
  if (!selected.empty() || *last) {
    std::optional<WallTime> first, final_time = *last;
    for (const RunRow* r : selected) {
      first = first ? std::min(*first, r->run.started) : r->run.started;
      const WallTime end = r->ended.value_or(r->run.started);
      final_time = final_time ? std::max(*final_time, end) : end;
    }
    scope.data_from = first ? first : final_time;
    scope.data_to = final_time;
  }
  std::string who;
  if (scope.run_id) {
    who = "run " + Describe(*selected.front());
  } else if (runs.empty()) {
    who = "every record (the database names no runs)";
  } else {
    who = "all " + std::to_string(selected.size()) + " runs";
  }
  scope.description = who + "; " + FormatRfc3339(from) + " to " + FormatRfc3339(to) + " (end exclusive: " + how + ")";
  return scope;
}

}  // namespace gpuscaler::report
