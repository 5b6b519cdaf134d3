// The nodes of a report and what the store recorded of them besides usage:
// the work their interruptions lost. Private to src/report (BuildCostFacts).
#pragma once

#include <cstdint>
#include <vector>

#include "gpuscaler/report/cost_model.h"
#include "gpuscaler/store/audit_reader.h"

namespace gpuscaler::report::internal {

// A lost-work record of one of the report's nodes.
struct NodeLostWork {
  int32_t node = 0;  // into CostFacts::nodes
  LostWorkRecord record;
};

// The nodes alive in [query.from, query.to), as NodeFacts, and the lost
// work recorded for them around the range: a node with a record has
// NodeFact::lost_work_recorded set (its loss is the recorded one, never the
// fallback window), and the records timed within (from, to] are returned,
// to be added to the lines by AddRecordedLostWork. Errors are the reader's.
struct ReportNodes {
  std::vector<NodeFact> nodes;
  std::vector<NodeLostWork> lost;
};
Result<ReportNodes> ReadReportNodes(AuditReader& reader, const ReportQuery& query);

// Adds each record of `lost` timed at or before `as_of` to the line of its
// node, UTC day (of the second before the interruption: the work was done
// before it) and (class, team), made if the node has none that day: its
// GPU-seconds as lost, priced at the node's per-GPU rate in force then.
// Also to the node's metrics. A record of the team "" takes the query's
// team_map, as usage does.
void AddRecordedLostWork(const std::vector<NodeLostWork>& lost, const ReportQuery& query, WallTime as_of,
                         CostFacts* facts);

}  // namespace gpuscaler::report::internal
