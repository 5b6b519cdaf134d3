#include "gpuscaler/report/report.h"

#include <algorithm>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/retention.h"
#include "gpuscaler/store/audit_reader.h"
#include "tables.h"

namespace gpuscaler::report {

namespace internal {

Result<StoreReport> BuildStoreReport(AuditReader& reader, AuditReader* second, const ReportQuery& asked) {
  Result<ReportScope> scope = ResolveScope(reader, asked);
  if (!scope) return scope.error();
  if (second != nullptr) second->SelectRun(scope->run_id);
  StoreReport out;
  out.scope = *scope;
  ReportQuery& query = out.query;
  query = asked;
  query.from = scope->from;
  query.to = scope->to;
  query.estimate_unrecorded_usage = scope->live;
  // Months before the rollup mark come from monthly_usage (their detail may
  // be pruned); the detail rows cover the rest.
  Result<std::optional<WallTime>> mark = reader.RolledUpBefore();
  if (!mark) return mark.error();
  const bool rolled = *mark && query.from < **mark;
  if (rolled) query.from = PeriodStart(query.from, Period::kMonth);
  ReportQuery detail = query;
  if (rolled) detail.from = std::min(**mark, query.to);
  // Predictions need the nodes but not the usage: built while the second
  // reader scans, when the facts cover the whole range (else by BuildViews).
  std::optional<std::vector<DecisionPrediction>> predictions;
  auto predict = [&](const CostFacts& f) -> Status {
    Result<std::vector<DecisionPrediction>> built = BuildPredictions(reader, f);
    if (!built) return built.error();
    predictions = std::move(*built);
    return Status::Ok();
  };
  const bool predict_early = query.format != Format::kFocus && !rolled && second != nullptr;
  Result<CostFacts> facts = CostFacts{};
  if (detail.from < detail.to) {
    facts = predict_early ? BuildCostFacts(reader, detail, second, predict) : BuildCostFacts(reader, detail, second);
  } else {
    facts->as_of = query.as_of.value_or(query.to);
  }
  if (!facts) return facts.error();
  if (rolled) {
    if (Status s = AddRolledUpMonths(reader, query.from, detail.from, &*facts); !s.ok()) return s.error();
  }
  facts->from = query.from;
  facts->to = query.to;
  facts->scope = scope->description;
  const bool billed = std::any_of(facts->nodes.begin(), facts->nodes.end(),
                                  [](const NodeFact& n) { return n.billed_seconds > 0; });
  out.empty = !billed && facts->usage_rows == 0 && facts->total.cost_usd <= 0;
  if (out.empty) {
    std::string notice = "no nodes or usage recorded in " + scope->description;
    if (scope->data_from && scope->data_to) {
      notice += "; the data covers " + FormatRfc3339(*scope->data_from) + " to " + FormatRfc3339(*scope->data_to);
      out.range_outside_data = query.to <= *scope->data_from || query.from > *scope->data_to;
      if (out.range_outside_data) notice += ", wholly outside the range";
    } else {
      notice += "; the database records nothing yet";
    }
    out.notices.push_back(notice);
  }
  out.facts = std::move(*facts);
  if (query.format != Format::kFocus) {
    Result<ReportViews> views = BuildViews(reader, out.facts, query, std::move(predictions));
    if (!views) return views.error();
    out.views = std::move(*views);
  }
  return out;
}

Result<StoreReaders> OpenStoreReaders(const std::string& db_path) {
  if (db_path.empty()) return Error::InvalidInput("no audit database given");
  AuditReaderOptions options;
  options.memory_mapped = true;
  StoreReaders readers;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(db_path, options);
  if (!reader) return reader.error();
  readers.first = std::move(*reader);
  // A second connection scans half of the usage rows on a second core.
  Result<std::unique_ptr<AuditReader>> second = AuditReader::Open(db_path, options);
  if (!second) return second.error();
  readers.second = std::move(*second);
  return readers;
}

}  // namespace internal

namespace {

Result<RenderedReport> Render(AuditReader& reader, AuditReader* second, const ReportQuery& asked) {
  Result<internal::StoreReport> store = internal::BuildStoreReport(reader, second, asked);
  if (!store) return store.error();
  const ReportQuery& query = store->query;
  const CostFacts& facts = store->facts;
  RenderedReport out;
  out.scope = store->scope.description;
  out.notices = std::move(store->notices);
  out.range_outside_data = store->range_outside_data;
  switch (query.format) {
    case Format::kFocus: {
      out.content_type = "text/csv; charset=utf-8";
      // The cluster the store stands for is the rows' sub-account, as in a
      // fleet report; a store that names none (no file) leaves it null.
      Result<std::string> cluster = ClusterNameOf(reader, query.db_path);
      out.body = internal::RenderFocusCsv(*store, cluster ? *cluster : std::string(), &out.notices);
      break;
    }
    case Format::kCsv:
      out.content_type = "text/csv; charset=utf-8";
      out.body = internal::RenderCsv(internal::BuildTable(query.view, facts, store->views, query));
      break;
    case Format::kJson:
      out.content_type = "application/json";
      out.body = internal::RenderJson(facts, store->views, query);
      break;
    case Format::kHtml:
      out.content_type = "text/html; charset=utf-8";
      out.body = internal::RenderHtml(facts, store->views, query);
      break;
  }
  return out;
}

bool GroupedByCluster(const ReportQuery& query) {
  return std::find(query.group_by.begin(), query.group_by.end(), Dimension::kCluster) != query.group_by.end();
}

}  // namespace

Result<RenderedReport> RenderReport(AuditReader& reader, const ReportQuery& query) {
  if (GroupedByCluster(query)) {
    return Error::InvalidInput("group_by: cluster needs a fleet report, which opens its audit stores itself");
  }
  return Render(reader, nullptr, query);
}

Result<RenderedReport> RenderReport(const ReportQuery& query) {
  if (GroupedByCluster(query)) return RenderFleetReport({FleetStore{query.db_path, ""}}, query);
  Result<internal::StoreReaders> readers = internal::OpenStoreReaders(query.db_path);
  if (!readers) return readers.error();
  return Render(*readers->first, readers->second.get(), query);
}

}  // namespace gpuscaler::report
