#include "sim_deadline_bound.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/report.h"
#include "gpuscaler/store/sqlite_audit_store.h"

namespace gpuscaler::cli {
namespace {

// A new empty file in the system's temp folder, removed (with SQLite's side
// files) when this goes.
class TempStoreFile {
 public:
  static Result<std::unique_ptr<TempStoreFile>> Make() {
    std::error_code ec;
    const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
    if (ec) return Error::Transient("no temp folder for the labelled replay's store: " + ec.message());
    std::string name = (dir / "gpuscaler-deadline-bound-XXXXXX").string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) {
      return Error::Transient("cannot create the labelled replay's store in " + dir.string() + ": " +
                              std::strerror(errno));
    }
    ::close(fd);
    return std::unique_ptr<TempStoreFile>(new TempStoreFile(std::move(name)));
  }
  ~TempStoreFile() {
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path_ + suffix, ec);
  }
  TempStoreFile(const TempStoreFile&) = delete;
  TempStoreFile& operator=(const TempStoreFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  explicit TempStoreFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

Result<std::map<std::string, double>> CostByTeam(AuditReader& reader, const std::string& run) {
  report::ReportQuery query;
  query.run = run;
  query.from_given = false;
  query.to_given = false;
  Result<report::ReportScope> scope = report::ResolveScope(reader, query);
  if (!scope) return scope.error();
  query.from = scope->from;
  query.to = scope->to;
  Result<report::CostFacts> facts = report::BuildCostFacts(reader, query);
  if (!facts) return facts.error();
  std::map<std::string, double> out;
  for (const report::GroupedRow& row : report::GroupLines(*facts, {report::Dimension::kTeam}, std::nullopt)) {
    out[row.keys.at(0)] += row.m.cost_usd;
  }
  return out;
}

sim::MeasuredShares SharesOf(const std::map<std::string, double>& by_team, double labelled_usd) {
  const auto team = [&by_team](std::string_view name) {
    auto it = by_team.find(std::string(name));
    return it == by_team.end() ? 0.0 : it->second;
  };
  return sim::MeasuredShares{team(sim::kMeetableTeam), team(report::kIdle), labelled_usd};
}

Result<sim::BoundComparison> MeasureBound(const sim::Scenario& scenario, const sim::DeadlineBound& bound,
                                          const std::vector<sim::RunResult>& results,
                                          std::function<void(double)> progress) {
  const std::string at_once_name(kAtOnceRun);
  auto at_once = std::find_if(results.begin(), results.end(),
                              [&at_once_name](const sim::RunResult& r) { return r.name == at_once_name; });
  if (at_once == results.end()) return Error::InvalidInput("the deadline bound needs the run " + at_once_name);

  Result<std::unique_ptr<TempStoreFile>> file = TempStoreFile::Make();
  if (!file) return file.error();
  SqliteAuditStoreOptions so;
  so.intent_sync = SqliteAuditStoreOptions::IntentSync::kWithTick;
  so.group_commit_ticks = 64;
  Result<std::unique_ptr<SqliteAuditStore>> store = SqliteAuditStore::Open((*file)->path(), so);
  if (!store) return store.error().WithContext("the labelled replay's store " + (*file)->path());

  const sim::Scenario labelled = sim::LabelJobsByDeadline(scenario);
  Result<sim::RunSpec> spec = sim::MakeRunSpec(at_once_name, labelled, nullptr);
  if (!spec) return spec.error();
  sim::RunOptions options;
  options.store = store->get();
  options.progress = std::move(progress);
  const sim::RunResult replayed = sim::RunScenario(labelled, *spec, options);
  if (Status flushed = (*store)->Flush(); !flushed.ok()) {
    return flushed.error().WithContext("writing the labelled replay's store " + (*file)->path());
  }
  Result<std::unique_ptr<AuditReader>> reader = (*store)->OpenReader();
  if (!reader) return reader.error().WithContext("reading the labelled replay's store " + (*file)->path());
  Result<std::map<std::string, double>> by_team = CostByTeam(**reader, at_once_name);
  if (!by_team) return by_team.error().WithContext("attributing the labelled replay's bill by team");
  return sim::CompareWithBound(bound, *at_once, SharesOf(*by_team, replayed.total_cost_usd));
}

}  // namespace gpuscaler::cli
