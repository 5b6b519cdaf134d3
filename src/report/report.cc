#include "gpuscaler/report/report.h"

#include <algorithm>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/report/retention.h"
#include "gpuscaler/store/audit_reader.h"
#include "tables.h"

namespace gpuscaler::report {

namespace {

Result<RenderedReport> Render(AuditReader& reader, AuditReader* second, const ReportQuery& asked) {
  Result<ReportScope> scope = ResolveScope(reader, asked);
  if (!scope) return scope.error();
  if (second != nullptr) second->SelectRun(scope->run_id);
  ReportQuery query = asked;
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
  Result<CostFacts> facts = CostFacts{};
  if (detail.from < detail.to) {
    facts = BuildCostFacts(reader, detail, second);
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
  RenderedReport out;
  out.scope = scope->description;
  const bool billed = std::any_of(facts->nodes.begin(), facts->nodes.end(),
                                  [](const NodeFact& n) { return n.billed_seconds > 0; });
  if (!billed && facts->usage_rows == 0 && facts->total.cost_usd <= 0) {
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
  if (query.format == Format::kFocus) {
    out.content_type = "text/csv; charset=utf-8";
    out.body = internal::RenderFocusCsv(*facts, query);
    return out;
  }
  Result<ReportViews> views = BuildViews(reader, *facts, query);
  if (!views) return views.error();
  switch (query.format) {
    case Format::kCsv:
      out.content_type = "text/csv; charset=utf-8";
      out.body = internal::RenderCsv(internal::BuildTable(query.view, *facts, *views, query));
      break;
    case Format::kJson:
      out.content_type = "application/json";
      out.body = internal::RenderJson(*facts, *views, query);
      break;
    case Format::kHtml:
      out.content_type = "text/html; charset=utf-8";
      out.body = internal::RenderHtml(*facts, *views, query);
      break;
    case Format::kFocus:
      break;
  }
  return out;
}

}  // namespace

Result<RenderedReport> RenderReport(AuditReader& reader, const ReportQuery& query) {
  return Render(reader, nullptr, query);
}

Result<RenderedReport> RenderReport(const ReportQuery& query) {
  if (query.db_path.empty()) return Error::InvalidInput("no audit database given");
  AuditReaderOptions options;
  options.memory_mapped = true;
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(query.db_path, options);
  if (!reader) return reader.error();
  // A second connection scans half of the usage rows on a second core.
  Result<std::unique_ptr<AuditReader>> second = AuditReader::Open(query.db_path, options);
  if (!second) return second.error();
  return Render(**reader, second->get(), query);
}

}  // namespace gpuscaler::report
