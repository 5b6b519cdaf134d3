// BuildBlockWhatIf (cost_model.h): the "should we buy a block?" what-if.
#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "gpuscaler/report/cost_model.h"

namespace gpuscaler::report {
namespace {

// One stretch of one recorded instance at one price.
struct Stretch {
  int64_t start = 0, end = 0;  // unix seconds
  double usd_per_hour = 0;
  int gpus = 0;
};

// The block's share of `stretches`: a sweep over their ends, holding at
// each moment up to `count` of the running stretches, the dearest first.
void Cover(const std::vector<Stretch>& stretches, int count, BlockWhatIf* out) {
  struct Event {
    int64_t t;
    bool starts;
    size_t stretch;
  };
  std::vector<Event> events;
  events.reserve(2 * stretches.size());
  for (size_t i = 0; i < stretches.size(); ++i) {
    events.push_back({stretches[i].start, true, i});
    events.push_back({stretches[i].end, false, i});
  }
  // Ends before starts at the same second: a node's next day's stretch
  // follows its last without counting it twice.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.t != b.t) return a.t < b.t;
    return !a.starts && b.starts;
  });
  std::multiset<std::pair<double, size_t>> running;  // (price, stretch)
  int64_t last = events.empty() ? 0 : events.front().t;
  for (const Event& e : events) {
    if (e.t > last && !running.empty()) {
      const double hours = static_cast<double>(e.t - last) / 3600.0;
      int held = 0;
      for (auto it = running.rbegin(); it != running.rend() && held < count; ++it, ++held) {
        const Stretch& s = stretches[it->second];
        out->covered_node_hours += hours;
        out->covered_gpu_hours += hours * s.gpus;
        out->covered_usd += hours * s.usd_per_hour;
      }
    }
    last = e.t;
    const Stretch& s = stretches[e.stretch];
    if (e.starts) {
      running.emplace(s.usd_per_hour, e.stretch);
      out->peak_nodes = std::max(out->peak_nodes, static_cast<int>(running.size()));
    } else {
      running.erase(running.find({s.usd_per_hour, e.stretch}));
    }
  }
}

}  // namespace

BlockWhatIf BuildBlockWhatIf(const CostFacts& facts, const ReportQuery& query) {
  BlockWhatIf b;
  b.instance_type = query.block_type;
  b.count = query.block_count;
  b.upfront_usd = query.block_upfront_usd.value_or(0);
  b.range_hours = static_cast<double>(ToUnixSeconds(facts.to) - ToUnixSeconds(facts.from)) / 3600.0;
  b.slot_hours = b.count * b.range_hours;
  std::vector<Stretch> stretches;
  for (const Charge& c : facts.charges) {
    const NodeFact& n = facts.nodes[static_cast<size_t>(c.node)];
    if (n.instance_type != b.instance_type || n.capacity_type == CapacityType::kReserved) continue;
    // The charge's billed seconds include a short life's minimum top-up:
    // money the block would not have saved (it is not time a slot holds).
    const double hours = static_cast<double>(c.billed_seconds) / 3600.0;
    (n.capacity_type == CapacityType::kSpot ? b.spot_usd : b.on_demand_usd) += c.usd_per_hour * hours;
    b.node_hours += hours;
    b.gpu_hours += hours * n.gpu_count;
    if (c.end > c.start) {
      stretches.push_back({ToUnixSeconds(c.start), ToUnixSeconds(c.end), c.usd_per_hour, n.gpu_count});
    }
  }
  Cover(stretches, b.count, &b);
  return b;
}

}  // namespace gpuscaler::report
