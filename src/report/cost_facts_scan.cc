// Stage 3 of BuildCostFacts (cost_facts_impl.h): the usage rows streamed
// past (6M+ rows a year for 500 nodes: they are never all held in memory),
// split between this thread and a helper.
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cost_facts_impl.h"

namespace gpuscaler::report::internal {
namespace {

// Usage is scanned from a little before the range: rows ending there carry
// no cost in it, but tell a running node's last recorded allocation (the
// unrecorded stretch, EstimateUnrecordedUsage).
constexpr int64_t kFrontierLookback = 3 * 3600;
// The helper's first rows, at most, that wait for the nodes.
constexpr size_t kEarlyRows = size_t{1} << 20;

}  // namespace

// A row the helper read before the nodes were known.
struct UsageScan::EarlyRow {
  uint32_t id_offset = 0;  // into early_ids_
  uint32_t id_size = 0;
  int32_t allocation = 0;  // into parts_[2].allocations
  int64_t start = 0;
  int64_t end = 0;
  double allocated = 0;
  double busy = -1;  // -1: not measured
};

UsageScan::UsageScan(const ReportQuery& query, WallTime billed_until, AuditReader* second, bool with_nodes)
    : query_(query), second_(second), scan_from_(query.from - Seconds(kFrontierLookback)) {
  split_ = second != nullptr && billed_until > query.from;
  // Usage ends spread about evenly over the billed time, and this thread
  // reads the nodes (and runs `with_nodes`) before its share of the rows
  // while the helper starts at once (and replays its buffered rows): this
  // thread takes the earlier 47.5 % (45 % with `with_nodes`). Constants, so
  // the split (and the order of the sums) never depends on timing.
  const auto billed = billed_until - query.from;
  mid_ = query.from + (with_nodes ? billed * 9 / 20 : billed * 19 / 40);
  if (!split_) return;
  // Reserved, not touched: only the rows that wait fault pages in, and none
  // is copied by a regrowth.
  early_.reserve(kEarlyRows);
  early_ids_.reserve(kEarlyRows * 20);
  helper_ = std::thread([this] { RunHelper(); });
}

UsageScan::~UsageScan() {
  if (!helper_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandon_ = true;
  }
  nodes_known_.notify_all();
  helper_.join();
}

void UsageScan::NodesKnown(const BilledTime& billed, const std::vector<NodeFact>& nodes) {
  table_.emplace(nodes);
  for (UsageAccumulator& part : parts_) part.Bind(billed, *table_, query_.from);
  if (!split_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = true;
  }
  nodes_known_.notify_all();
}

Status UsageScan::Finish(AuditReader& reader) {
  UsageAccumulator& mine = parts_[0];
  Status read = split_ ? reader.ForEachUsage(
                             scan_from_, query_.to, [&](const UsageView& u) { mine.Accumulate(u); }, std::nullopt, mid_)
                       : reader.ForEachUsage(scan_from_, query_.to, [&](const UsageView& u) { mine.Accumulate(u); });
  mine.CloseIntervals();
  if (split_) helper_.join();
  if (!read.ok()) return read;
  return later_;
}

// The helper thread: the rows ending after mid_, on the second reader in
// its own snapshot.
void UsageScan::RunHelper() {
  AuditReader::ConsistentRead snapshot(*second_);
  later_ = second_->ForEachUsage(
      scan_from_, query_.to, [this](const UsageView& u) { OnHelperRow(u); }, mid_, std::nullopt);
  if (!helper_go_ && WaitForNodes()) {
    ReplayEarlyRows();
    helper_go_ = true;
  }
  if (helper_go_) {
    parts_[2].CloseIntervals();
    parts_[1].CloseIntervals();
  }
}

void UsageScan::OnHelperRow(const UsageView& u) {
  if (!helper_go_) {
    if (early_.size() < kEarlyRows && early_ids_.size() + u.instance_id.size() < UINT32_MAX) {
      const int32_t allocation = parts_[2].Allocation(u.workload_class, u.team);
      early_.push_back(EarlyRow{static_cast<uint32_t>(early_ids_.size()), static_cast<uint32_t>(u.instance_id.size()),
                                allocation, ToUnixSeconds(u.start), ToUnixSeconds(u.end), u.gpu_seconds_allocated,
                                u.gpu_seconds_busy.value_or(-1)});
      early_ids_.append(u.instance_id);
      return;
    }
    if (!WaitForNodes()) return;
    helper_go_ = true;
    ReplayEarlyRows();
    CarryOpenIntervals();
  }
  parts_[1].Accumulate(u);
}

// false: abandoned (the caller is returning an error).
bool UsageScan::WaitForNodes() {
  std::unique_lock<std::mutex> lock(mu_);
  nodes_known_.wait(lock, [this] { return ready_ || abandon_; });
  return !abandon_;
}

// The buffered rows, once the nodes are known: interned into parts_[2] in
// the same order, so their allocation indices stand. On the helper thread,
// so that this thread's share of the work ends when its scan does.
void UsageScan::ReplayEarlyRows() {
  UsageAccumulator& part = parts_[2];
  for (const EarlyRow& r : early_) {
    UsageView u;
    u.instance_id = std::string_view(early_ids_).substr(r.id_offset, r.id_size);
    u.workload_class = part.allocations[static_cast<size_t>(r.allocation)].first;
    u.team = part.allocations[static_cast<size_t>(r.allocation)].second;
    u.start = FromUnixSeconds(r.start);
    u.end = FromUnixSeconds(r.end);
    u.gpu_seconds_allocated = r.allocated;
    u.gpu_seconds_busy = r.busy < 0 ? std::nullopt : std::optional<double>(r.busy);
    part.Accumulate(u);
  }
  early_.clear();
  early_.shrink_to_fit();
  early_ids_.clear();
  early_ids_.shrink_to_fit();
}

// A node interval's rows may straddle the buffered ones and the rest: its
// open interval goes on in the streamed part.
void UsageScan::CarryOpenIntervals() {
  for (size_t node = 0; node < parts_[2].nodes.size(); ++node) {
    auto& from = parts_[2].nodes[node];
    auto& to = parts_[1].nodes[node];
    to.interval_start = from.interval_start;
    to.interval_end = from.interval_end;
    for (auto row : from.interval_rows) {
      const auto& [workload_class, team] = parts_[2].allocations[static_cast<size_t>(row.allocation)];
      row.allocation = parts_[1].Allocation(workload_class, team);
      to.interval_rows.push_back(row);
    }
    from.interval_rows.clear();
  }
}

}  // namespace gpuscaler::report::internal
