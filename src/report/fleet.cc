// Fleet reports: one report over several audit stores, each a cluster
// (docs/reports.md, "Fleet reports"). Each store is reported by the
// single-store code (BuildStoreReport) with the same query; this file only
// names the clusters, reads the stores in parallel and joins the results.
// The money of a fleet report is its clusters' money: each cluster's rows
// and totals are rounded to cents exactly as its own report rounds them, and
// the fleet's totals are their sums, so the fleet adds up to its clusters'
// single reports to the cent.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <tuple>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "gpuscaler/store/database_url.h"
#include "tables.h"

namespace gpuscaler::report {
namespace {

namespace fs = std::filesystem;

// Run names the daemon uses when its config names no cluster, and the
// demo's: not cluster names.
bool IsPlaceholderRunName(const std::string& name) {
  return name.empty() || name == "daemon" || name == "demo" || name == "unnamed";
}

// An error about one store, naming its file once.
Error NameFile(const Error& e, const std::string& path) {
  if (e.message().find(path) != std::string::npos) return e;
  return e.WithContext("audit store '" + path + "'");
}

// The first 16 bytes of every SQLite 3 database file.
bool HasSqliteHeader(const fs::path& path) {
  static constexpr char kMagic[] = "SQLite format 3";  // and a NUL: 16 bytes
  std::ifstream in(path, std::ios::binary);
  char header[sizeof(kMagic)] = {};
  in.read(header, sizeof(header));
  return in.gcount() == static_cast<std::streamsize>(sizeof(header)) &&
         std::equal(header, header + sizeof(header), kMagic);
}

// A directory's audit stores by file name; other files are listed in
// `skipped` with the reason. A store this binary cannot read (another schema
// version, an unreadable file) is not skipped: the report would silently
// leave a cluster out. It is returned, and fails when opened.
Result<std::vector<FleetStore>> StoresIn(const fs::path& dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      files.push_back(it->path());
    } else if (skipped != nullptr) {
      skipped->push_back(it->path().string() + ": not a regular file");
    }
  }
  if (ec) return Error::Transient("listing the audit stores in '" + dir.string() + "': " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<FleetStore> stores;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    std::string why;
    // SQLite's companions of a database in WAL mode belong to it.
    if (name.ends_with("-wal") || name.ends_with("-shm") || name.ends_with("-journal")) {
      why = "SQLite journal of a database";
    } else if (!HasSqliteHeader(f)) {
      why = "not an SQLite database";
    } else {
      // One that cannot be read is kept: the report then fails naming it.
      Result<bool> audit = AuditReader::IsAuditDatabase(f.string());
      if (audit && !*audit) why = "an SQLite database but not an audit store";
    }
    if (!why.empty()) {
      if (skipped != nullptr) skipped->push_back(f.string() + ": " + why);
      continue;
    }
    stores.push_back(FleetStore{f.string(), ""});
  }
  if (stores.empty()) return Error::NotFound("no audit store in directory '" + dir.string() + "'");
  return stores;
}

// Where a view's cluster column goes.
size_t ClusterColumn(View v, const ReportQuery& query) {
  switch (v) {
    case View::kCosts: {
      const auto at = std::find(query.group_by.begin(), query.group_by.end(), Dimension::kCluster);
      return 2 + (at == query.group_by.end() ? 0 : static_cast<size_t>(at - query.group_by.begin()));
    }
    case View::kSavings:
      return 2;  // after the period
    default:
      return 0;
  }
}

size_t ColumnOf(const internal::Table& t, const std::string& name) {
  return static_cast<size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
}

// One view's tables of every cluster (in cluster order) as one, with a
// cluster column. Rows keep their cluster's cells (so each cluster's rows
// are those of its own report); the order: time views by period (then
// cluster), the dearest-first lists by amount (then cluster), cut at
// query.top where the single report cuts; the others cluster by cluster.
internal::Table JoinTables(View v, const std::vector<internal::Table>& parts,
                           const std::vector<std::string>& clusters, const ReportQuery& query) {
  internal::Table out;
  out.view = v;
  out.title = parts.front().title;
  out.columns = parts.front().columns;
  const size_t at = ClusterColumn(v, query);
  out.columns.insert(out.columns.begin() + static_cast<std::ptrdiff_t>(at), "cluster");
  struct Ref {
    size_t part;
    size_t row;
  };
  std::vector<Ref> refs;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (size_t r = 0; r < parts[p].rows.size(); ++r) refs.push_back({p, r});
  }
  const internal::Table& shape = parts.front();
  auto text = [&](const Ref& r, size_t column) -> const std::string& {
    return parts[r.part].rows[r.row][column].text;
  };
  auto number = [&](const Ref& r, size_t column) {
    return parts[r.part].rows[r.row][column].number.value_or(0);
  };
  std::optional<size_t> limit;
  switch (v) {
    case View::kCosts:
    case View::kSavings:
    case View::kBudget: {
      const size_t key = ColumnOf(shape, v == View::kBudget ? "day" : "period_start");
      std::stable_sort(refs.begin(), refs.end(),
                       [&](const Ref& a, const Ref& b) { return text(a, key) < text(b, key); });
      break;
    }
    case View::kDecisions:
    case View::kNodes: {
      const size_t key = ColumnOf(shape, "cost_usd");
      std::stable_sort(refs.begin(), refs.end(),
                       [&](const Ref& a, const Ref& b) { return number(a, key) > number(b, key); });
      if (v == View::kDecisions || query.format != Format::kCsv) limit = static_cast<size_t>(query.top);
      break;
    }
    case View::kPredictions:
      if (query.format != Format::kCsv) {  // the worst predictions, worst first
        const size_t key = ColumnOf(shape, "realized_minus_predicted_usd");
        std::stable_sort(refs.begin(), refs.end(), [&](const Ref& a, const Ref& b) {
          return std::fabs(number(a, key)) > std::fabs(number(b, key));
        });
        limit = static_cast<size_t>(query.top);
      }
      break;
    case View::kAllocation:
    case View::kPredictionSummary:
    case View::kReservations:
    case View::kBuyBlock:
      break;
  }
  if (limit && refs.size() > *limit) refs.resize(*limit);
  for (const Ref& r : refs) {
    std::vector<internal::Cell> row = parts[r.part].rows[r.row];
    row.insert(row.begin() + static_cast<std::ptrdiff_t>(at), internal::Cell{clusters[r.part], std::nullopt});
    out.rows.push_back(std::move(row));
  }
  return out;
}

internal::Totals SumTotals(const std::vector<internal::ClusterPart>& clusters,
                           std::vector<std::string>* warnings) {
  internal::Totals t;
  double savings = 0, on_demand = 0;
  std::vector<std::string> unmeasured;
  for (const internal::ClusterPart& c : clusters) {
    const internal::Totals& p = c.totals;
    t.cost_cents += p.cost_cents;
    t.attributed_cents += p.attributed_cents;
    t.idle_cents += p.idle_cents;
    t.on_demand_cents += p.on_demand_cents;
    t.savings_cents += p.savings_cents;
    t.spot_savings_cents += p.spot_savings_cents;
    t.lost_cents += p.lost_cents;
    t.gpu_hours_paid += p.gpu_hours_paid;
    t.gpu_hours_allocated += p.gpu_hours_allocated;
    t.gpu_hours_lost += p.gpu_hours_lost;
    t.nodes += p.nodes;
    t.interrupted_nodes += p.interrupted_nodes;
    if (p.gpu_hours_busy) {
      t.gpu_hours_busy = t.gpu_hours_busy.value_or(0) + *p.gpu_hours_busy;
      t.gpu_hours_allocated_idle =
          t.gpu_hours_allocated_idle.value_or(0) + p.gpu_hours_allocated_idle.value_or(0);
    } else {
      unmeasured.push_back(c.cluster);
    }
    savings += c.report->facts.total.savings_usd();
    on_demand += c.report->facts.total.on_demand_usd;
  }
  t.savings_pct = on_demand > 0 ? 100.0 * savings / on_demand : 0;
  if (t.gpu_hours_busy && !unmeasured.empty()) {
    std::string names;
    for (const std::string& n : unmeasured) names += (names.empty() ? "'" : ", '") + n + "'";
    warnings->push_back("busy time not measured in cluster " + names +
                        ": the fleet's busy GPU-hours are the other clusters'");
  }
  return t;
}

// The fleet's range: as given, else the union of every store's own.
Result<std::pair<WallTime, WallTime>> FleetRange(std::vector<internal::StoreReaders>& readers,
                                                 const std::vector<FleetStore>& stores,
                                                 const ReportQuery& query) {
  std::optional<WallTime> from, to;
  for (size_t i = 0; i < readers.size(); ++i) {
    Result<ReportScope> scope = ResolveScope(*readers[i].first, query);
    if (!scope) return NameFile(scope.error(), stores[i].db_path);
    from = from ? std::min(*from, scope->from) : scope->from;
    to = to ? std::max(*to, scope->to) : scope->to;
  }
  return std::make_pair(*from, *to);
}

}  // namespace

Result<std::string> ClusterNameOf(AuditReader& reader, const std::string& db_path) {
  Result<std::vector<RunRow>> runs = reader.Runs();
  if (!runs) return NameFile(runs.error().WithContext("reading the runs"), db_path);
  const RunRow* latest = nullptr;
  for (const RunRow& r : *runs) {
    if (r.run.source != "daemon" || IsPlaceholderRunName(r.run.name)) continue;
    if (latest == nullptr || std::tie(r.run.started, r.id) > std::tie(latest->run.started, latest->id))
      latest = &r;
  }
  // A database several clusters share: the selected run's cluster, when a
  // daemon named it.
  for (const RunRow& r : *runs) {
    if (reader.selected_run() == r.id && r.run.source == "daemon" && !IsPlaceholderRunName(r.run.name)) {
      return r.run.name;
    }
  }
  if (latest != nullptr) return latest->run.name;
  std::string stem = fs::path(db_path).stem().string();
  if (IsPostgresUrl(db_path)) {
    // postgresql://user@host:port/DATABASE?parameters: the database.
    const size_t authority = db_path.find("://") + 3;
    const size_t path = db_path.find('/', authority);
    stem = path == std::string::npos ? "" : db_path.substr(path + 1, db_path.find_first_of("?#", path) - path - 1);
  }
  if (stem.empty())
    return Error::InvalidInput("cannot name the cluster of audit store '" + db_path +
                               "'; use --db NAME=PATH");
  return stem;
}

Result<std::vector<FleetStore>> ExpandFleetArguments(const std::vector<std::string>& args,
                                                     std::vector<std::string>* skipped) {
  std::vector<FleetStore> out;
  for (const std::string& arg : args) {
    std::error_code ec;
    FleetStore store{arg, ""};
    // NAME=PATH, unless the whole argument is an existing path.
    const size_t eq = arg.find('=');
    if (eq != std::string::npos && !fs::exists(arg, ec)) {
      store.cluster = arg.substr(0, eq);
      store.db_path = arg.substr(eq + 1);
      if (store.cluster.empty() || store.cluster.find('/') != std::string::npos || store.db_path.empty()) {
        return Error::InvalidInput("db: '" + arg + "' is neither a path nor NAME=PATH");
      }
    }
    if (fs::is_directory(store.db_path, ec)) {
      if (!store.cluster.empty()) {
        return Error::InvalidInput("db: '" + arg +
                                   "' names a directory; a cluster name goes with one store's file");
      }
      Result<std::vector<FleetStore>> in_dir = StoresIn(store.db_path, skipped);
      if (!in_dir) return in_dir.error();
      out.insert(out.end(), in_dir->begin(), in_dir->end());
      continue;
    }
    if (!fs::exists(store.db_path, ec)) {
      return Error::NotFound("opening audit database '" + store.db_path + "' for reading: no such file");
    }
    out.push_back(std::move(store));
  }
  return out;
}

Result<RenderedReport> RenderFleetReport(const std::vector<FleetStore>& given, const ReportQuery& asked,
                                         int parallelism) {
  if (given.empty()) return Error::InvalidInput("a fleet report needs at least one audit store");
  // Every store is reported with the same query, without the cluster
  // dimension: that is the fleet's.
  ReportQuery query = asked;
  query.group_by.erase(std::remove(query.group_by.begin(), query.group_by.end(), Dimension::kCluster),
                       query.group_by.end());

  // Open every store and name its cluster, in cluster order.
  std::vector<FleetStore> stores = given;
  std::vector<internal::StoreReaders> readers;
  for (FleetStore& s : stores) {
    Result<internal::StoreReaders> r = internal::OpenStoreReaders(s.db_path);
    if (!r) return NameFile(r.error(), s.db_path);
    if (s.cluster.empty()) {
      Result<std::string> name = ClusterNameOf(*r->first, s.db_path);
      if (!name) return name.error();
      s.cluster = *name;
    }
    readers.push_back(std::move(*r));
  }
  std::vector<size_t> order(stores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return stores[a].cluster < stores[b].cluster; });
  for (size_t i = 1; i < order.size(); ++i) {
    const FleetStore& a = stores[order[i - 1]];
    const FleetStore& b = stores[order[i]];
    if (a.cluster == b.cluster) {
      return Error::InvalidInput(
          "cluster '" + a.cluster + "' is the cluster of two audit stores, '" + a.db_path + "' and '" +
          b.db_path + "': a fleet report counts each cluster once; name them apart with --db NAME=PATH");
    }
  }
  {
    std::vector<FleetStore> sorted;
    std::vector<internal::StoreReaders> sorted_readers;
    for (size_t i : order) {
      sorted.push_back(stores[i]);
      sorted_readers.push_back(std::move(readers[i]));
    }
    stores = std::move(sorted);
    readers = std::move(sorted_readers);
  }

  // One range for every cluster, so that their periods line up.
  std::string how = "as given";
  if (!query.from_given || !query.to_given) {
    Result<std::pair<WallTime, WallTime>> range = FleetRange(readers, stores, query);
    if (!range) return range.error();
    query.from = range->first;
    query.to = range->second;
    how = query.from_given || query.to_given ? "as given, the other bound the union of the clusters' ranges"
                                             : "the union of the clusters' ranges";
    query.from_given = query.to_given = true;
  }

  // Each store by its own code; up to `parallelism` at a time. A store's
  // result does not depend on which thread computed it, nor when.
  std::vector<std::optional<Result<internal::StoreReport>>> results(stores.size());
  size_t workers =
      parallelism > 0 ? static_cast<size_t>(parallelism) : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, stores.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < stores.size(); i = next++) {
      results[i] = internal::BuildStoreReport(*readers[i].first, readers[i].second.get(), query);
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
    for (std::thread& t : threads) t.join();
  }
  readers.clear();
  std::vector<internal::StoreReport> reports;
  for (size_t i = 0; i < stores.size(); ++i) {
    if (!*results[i]) return NameFile(results[i]->error(), stores[i].db_path);
    reports.push_back(std::move(**results[i]));
  }
  results.clear();

  internal::FleetParts fleet;
  fleet.from = query.from;
  fleet.to = query.to;
  std::string names;
  for (size_t i = 0; i < stores.size(); ++i) {
    internal::ClusterPart c;
    c.cluster = stores[i].cluster;
    c.db_path = stores[i].db_path;
    c.report = &reports[i];
    if (query.format != Format::kFocus)
      c.totals = internal::ComputeTotals(reports[i].facts, reports[i].views);
    fleet.clusters.push_back(std::move(c));
    names += (names.empty() ? "" : ", ") + stores[i].cluster;
  }
  const std::string selection = !query.run.empty() ? "run '" + query.run + "' of each"
                                : query.all_runs   ? "all runs of each"
                                                   : "each store's run";
  fleet.scope = std::to_string(stores.size()) + (stores.size() == 1 ? " cluster (" : " clusters (") + names +
                "), " + selection + "; " + FormatRfc3339(query.from) + " to " + FormatRfc3339(query.to) +
                " (end exclusive: " + how + ")";

  RenderedReport out;
  out.scope = fleet.scope;
  out.range_outside_data = true;
  for (const internal::ClusterPart& c : fleet.clusters) {
    for (const std::string& n : c.report->notices) out.notices.push_back("cluster '" + c.cluster + "': " + n);
    for (const std::string& w : c.report->facts.warnings)
      fleet.warnings.push_back("cluster '" + c.cluster + "': " + w);
    out.range_outside_data = out.range_outside_data && c.report->range_outside_data;
  }
  if (query.format == Format::kFocus) {
    out.content_type = "text/csv; charset=utf-8";
    out.body = internal::RenderFleetFocusCsv(fleet, query, &out.notices);
    return out;
  }
  fleet.totals = SumTotals(fleet.clusters, &fleet.warnings);

  // The tables the format shows, each joined from the clusters' own.
  std::vector<View> needed;
  switch (query.format) {
    case Format::kCsv:
      needed = {query.view};
      break;
    case Format::kJson:
      needed = {View::kAllocation, View::kCosts,     View::kSavings,
                View::kBudget,     View::kDecisions, View::kNodes};
      break;
    default:
      needed = {View::kAllocation, View::kCosts, View::kSavings,     View::kBudget,      View::kDecisions,
                View::kNodes,      View::kPredictions, View::kPredictionSummary, View::kReservations};
      break;
  }
  fleet.tables.resize(static_cast<size_t>(View::kBuyBlock) + 1);
  std::vector<std::string> clusters;
  for (const internal::ClusterPart& c : fleet.clusters) clusters.push_back(c.cluster);
  for (View v : needed) {
    std::vector<internal::Table> parts;
    for (const internal::ClusterPart& c : fleet.clusters) {
      parts.push_back(internal::BuildTable(v, c.report->facts, c.report->views, c.report->query));
    }
    fleet.tables[static_cast<size_t>(v)] = JoinTables(v, parts, clusters, asked);
  }

  switch (query.format) {
    case Format::kCsv:
      out.content_type = "text/csv; charset=utf-8";
      out.body = internal::RenderCsv(fleet.table(query.view));
      break;
    case Format::kJson:
      out.content_type = "application/json";
      out.body = internal::RenderFleetJson(fleet, asked);
      break;
    case Format::kHtml:
      out.content_type = "text/html; charset=utf-8";
      out.body = internal::RenderFleetHtml(fleet, asked);
      break;
    case Format::kFocus:
      break;
  }
  return out;
}

}  // namespace gpuscaler::report
