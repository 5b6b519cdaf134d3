#include "node_facts.h"

#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "utc_days.h"

namespace gpuscaler::report::internal {
namespace {

NodeFact NodeFactOf(NodeRow&& row) {
  NodeFact n;
  n.instance_id = std::move(row.launch.instance_id);
  n.node_id = std::move(row.launch.node_id);
  n.pool = std::move(row.launch.pool);
  n.region = row.launch.offering.region;
  n.zone = row.launch.offering.zone;
  n.instance_type = row.launch.offering.instance_type;
  n.capacity_type = row.launch.offering.capacity_type;
  n.reservation_id = row.launch.offering.reservation_id;
  n.gpu_count = row.launch.gpu_count;
  n.launch_usd_per_hour = row.launch.offering.usd_per_hour;
  n.on_demand_usd_per_hour = row.launch.offering.on_demand_usd_per_hour;
  n.launch = row.launch.launch_time;
  n.end = row.end_time;
  n.cause = std::move(row.cause);
  n.decision_id = row.launch.decision_id;
  n.reason = std::move(row.launch.reason);
  n.run_id = row.run_id;
  n.price_changes = row.prices.empty() ? 0 : static_cast<int>(row.prices.size()) - 1;
  n.prices = std::move(row.prices);
  return n;
}

// The node's price in force at `t` (its launch price before any interval).
double PriceAt(const NodeFact& n, WallTime t) {
  double price = n.launch_usd_per_hour;
  for (const PriceInterval& p : n.prices) {
    if (p.from > t) break;
    price = p.usd_per_hour;
  }
  return price;
}

// The index in `allocations` of (class, team), with the team filled in as
// usage's is (the query's class -> team map, else "__unallocated__");
// appended when new.
int32_t AllocationOf(const std::string& workload_class, const std::string& recorded_team, const ReportQuery& query,
                     std::vector<Allocation>* allocations) {
  std::string team = recorded_team;
  if (team.empty()) {
    auto mapped = query.team_map.find(workload_class);
    team = mapped != query.team_map.end() ? mapped->second : std::string(kUnallocated);
  }
  for (size_t a = 0; a < allocations->size(); ++a) {
    if ((*allocations)[a].workload_class == workload_class && (*allocations)[a].team == team) {
      return static_cast<int32_t>(a);
    }
  }
  allocations->push_back(Allocation{workload_class, std::move(team)});
  return static_cast<int32_t>(allocations->size() - 1);
}

}  // namespace

Result<ReportNodes> ReadReportNodes(AuditReader& reader, const ReportQuery& query) {
  Result<std::vector<NodeRow>> rows = reader.NodesOverlapping(query.from, query.to);
  if (!rows) return rows.error();
  ReportNodes out;
  out.nodes.reserve(rows->size());
  for (NodeRow& row : *rows) out.nodes.push_back(NodeFactOf(std::move(row)));
  // A node reclaimed up to a loss window after the range would have part of
  // its fallback window in it: its record, if any, says it has a figure.
  Result<std::vector<LostWorkRecord>> lost = reader.LostWork(query.from, query.to + query.loss_window + Seconds(1));
  if (!lost) return lost.error();
  if (lost->empty()) return out;
  std::unordered_map<std::string_view, int32_t> index;
  index.reserve(out.nodes.size());
  for (size_t i = 0; i < out.nodes.size(); ++i) index.emplace(out.nodes[i].instance_id, static_cast<int32_t>(i));
  for (LostWorkRecord& record : *lost) {
    auto it = index.find(record.instance_id);
    if (it == index.end()) continue;  // a node of another run, or one that ended before the range
    out.nodes[static_cast<size_t>(it->second)].lost_work_recorded = true;
    if (record.time > query.from && record.time <= query.to) out.lost.push_back({it->second, std::move(record)});
  }
  return out;
}

void AddRecordedLostWork(const std::vector<NodeLostWork>& lost, const ReportQuery& query, WallTime as_of,
                         CostFacts* facts) {
  if (lost.empty()) return;
  std::vector<char> lost_some(facts->nodes.size(), 0);
  for (const NodeLostWork& l : lost) lost_some[static_cast<size_t>(l.node)] = 1;
  // (node, day, allocation) -> its line, for the nodes that lost work.
  std::map<std::tuple<int32_t, int64_t, int32_t>, size_t> line_of;
  for (size_t i = 0; i < facts->lines.size(); ++i) {
    const CostLine& line = facts->lines[i];
    if (line.allocation >= 0 && lost_some[static_cast<size_t>(line.node)]) {
      line_of.emplace(std::tuple{line.node, line.day, line.allocation}, i);
    }
  }
  for (const NodeLostWork& l : lost) {
    const LostWorkRecord& r = l.record;
    if (r.time > as_of || r.gpu_seconds <= 0) continue;
    NodeFact& n = facts->nodes[static_cast<size_t>(l.node)];
    const int32_t allocation = AllocationOf(r.workload_class, r.team, query, &facts->allocations);
    const WallTime before = r.time - Seconds(1);
    const int64_t day = FloorDiv(ToUnixSeconds(before), kSecondsPerDay);
    Metrics m;
    m.gpu_seconds_lost = r.gpu_seconds;
    if (n.gpu_count > 0) m.lost_usd = r.gpu_seconds * PriceAt(n, before) / (n.gpu_count * 3600.0);
    auto [it, made] = line_of.emplace(std::tuple{l.node, day, allocation}, facts->lines.size());
    if (made) facts->lines.push_back(CostLine{day, l.node, allocation, Metrics{}});
    facts->lines[it->second].m.Add(m);
    n.m.Add(m);
  }
}

}  // namespace gpuscaler::report::internal
