#include "gpuscaler/report/report.h"

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"
#include "tables.h"

namespace gpuscaler::report {

Result<RenderedReport> RenderReport(AuditReader& reader, const ReportQuery& query) {
  Result<CostFacts> facts = BuildCostFacts(reader, query);
  if (!facts) return facts.error();
  RenderedReport out;
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

Result<RenderedReport> RenderReport(const ReportQuery& query) {
  if (query.db_path.empty()) return Error::InvalidInput("no audit database given");
  Result<std::unique_ptr<AuditReader>> reader = AuditReader::Open(query.db_path);
  if (!reader) return reader.error();
  return RenderReport(**reader, query);
}

}  // namespace gpuscaler::report
