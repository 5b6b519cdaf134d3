#include <algorithm>
#include <map>
#include <sstream>

#include "gpuscaler/model/json.h"
#include "gpuscaler/model/money.h"

namespace gpuscaler {
namespace {

std::string Usd(double usd_per_hour) { return FormatUsd(usd_per_hour, MoneyStyle::kRatePerHour); }

std::string SignedUsd(double usd_per_hour) {
  std::string out(1, usd_per_hour >= 0 ? '+' : '-');
  out.append(Usd(usd_per_hour < 0 ? -usd_per_hour : usd_per_hour));
  return out;
}

std::string Describe(const Offering& o) {
  return o.instance_type + " " + std::string(ToString(o.capacity_type)) + " " + o.zone;
}

std::string IdList(const std::vector<std::string>& ids, size_t max_shown = 8) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < max_shown; ++i) {
    if (i > 0) out += ", ";
    out += ids[i];
  }
  if (ids.size() > max_shown) out += ", ... and " + std::to_string(ids.size() - max_shown) + " more";
  return out;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Dollars(double usd) { return FormatUsd(usd, MoneyStyle::kCents); }

}  // namespace

double PlannedCostAfter(const Plan& plan) {
  double after = plan.cost_before_usd_per_hour;
  for (const LaunchAction& l : plan.launches) after += l.usd_per_hour;
  for (const TerminationAction& t : plan.terminations) after -= t.offering.usd_per_hour;
  return std::max(0.0, after);
}

std::string SummarizePlan(const Plan& plan, size_t pending_units) {
  int new_nodes = 0;
  for (const LaunchAction& l : plan.launches) new_nodes += l.count;
  std::map<std::string, int> unplaced;
  for (const UnplacedUnit& u : plan.unplaced) unplaced[std::string(ToString(u.reason))]++;
  const size_t placed = pending_units >= plan.unplaced.size() ? pending_units - plan.unplaced.size() : 0;
  std::string s = "placed " + std::to_string(placed) + "/" + std::to_string(pending_units) + " pending units; launch " +
                  std::to_string(new_nodes) + " node(s), terminate " + std::to_string(plan.terminations.size()) +
                  "; " + Dollars(plan.cost_before_usd_per_hour) + "/h -> " + Dollars(PlannedCostAfter(plan)) +
                  "/h (+" + Dollars(plan.expected_interruption_usd_per_hour) + "/h expected interruption cost)";
  if (!unplaced.empty()) {
    s += "; unplaced:";
    for (const auto& [reason, n] : unplaced) s += " " + reason + "=" + std::to_string(n);
  }
  for (const std::string& note : plan.notes) s += "; " + note;
  return s;
}

std::string FormatPlanText(const Plan& plan, const Snapshot& snapshot) {
  std::ostringstream out;
  size_t running = 0;
  for (const auto& n : snapshot.nodes) running += n.running.size();
  out << "Snapshot " << FormatRfc3339(snapshot.time) << ": " << Plural(snapshot.pending.size(), "pending unit", "pending units")
      << ", " << Plural(snapshot.nodes.size(), "node", "nodes") << " (" << Plural(running, "running unit", "running units")
      << "), " << Plural(snapshot.offerings.size(), "offering", "offerings") << "\n";
  if (!plan.summary.empty()) out << "Summary: " << plan.summary << "\n";

  out << "\nLaunches (" << plan.launches.size() << "):" << (plan.launches.empty() ? " none" : "") << "\n";
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const LaunchAction& l = plan.launches[i];
    out << "  [" << i << "] " << l.count << "x " << Describe(l.offering);
    if (!l.pool.empty()) out << " (pool " << l.pool << ")";
    out << ": " << Usd(l.usd_per_hour);
    if (l.count > 1) out << " (" << Usd(l.offering.usd_per_hour) << " each)";
    if (l.offering.capacity_type == CapacityType::kSpot && l.offering.on_demand_usd_per_hour > 0) {
      out << ", on-demand " << Usd(l.offering.on_demand_usd_per_hour) << " each";
    }
    if (l.expected_interruption_usd_per_hour > 0) {
      out << ", expected interruption cost " << Usd(l.expected_interruption_usd_per_hour);
    }
    out << "\n";
    if (!l.unit_ids.empty()) out << "      for " << Plural(l.unit_ids.size(), "unit", "units") << ": " << IdList(l.unit_ids) << "\n";
    if (!l.reason.empty()) out << "      reason: " << l.reason << "\n";
    if (!l.fallbacks.empty()) {
      std::vector<std::string> names;
      for (const auto& f : l.fallbacks) names.push_back(Describe(f) + " " + Usd(f.usd_per_hour));
      out << "      fallbacks: " << IdList(names, 3) << "\n";
    }
  }

  out << "\nTerminations (" << plan.terminations.size() << "):" << (plan.terminations.empty() ? " none" : "") << "\n";
  for (const TerminationAction& t : plan.terminations) {
    out << "  " << t.node_id;
    if (!t.instance_id.empty()) out << " " << t.instance_id;
    out << " (" << Describe(t.offering);
    if (!t.pool.empty()) out << ", pool " << t.pool;
    out << "): " << ToString(t.kind) << ", saves " << Usd(t.saves_usd_per_hour);
    if (!t.moved_unit_ids.empty()) {
      out << ", moves " << Plural(t.moved_unit_ids.size(), "unit", "units") << ": " << IdList(t.moved_unit_ids);
    }
    out << "\n";
    if (!t.reason.empty()) out << "      reason: " << t.reason << "\n";
  }

  size_t on_existing = 0;
  for (const auto& p : plan.placements) on_existing += p.node_id.empty() ? 0 : 1;
  out << "\nPlacements (" << plan.placements.size() << "): " << on_existing << " on existing nodes, "
      << plan.placements.size() - on_existing << " on new nodes\n";

  out << "\nUnplaced (" << plan.unplaced.size() << "):" << (plan.unplaced.empty() ? " none" : "") << "\n";
  std::map<std::string, std::vector<const UnplacedUnit*>> by_reason;
  for (const auto& u : plan.unplaced) by_reason[std::string(ToString(u.reason))].push_back(&u);
  for (const auto& [reason, units] : by_reason) {
    std::vector<std::string> ids;
    std::vector<std::string> details;
    for (const UnplacedUnit* u : units) {
      ids.push_back(u->unit_id);
      if (!u->detail.empty() && std::find(details.begin(), details.end(), u->detail) == details.end()) {
        details.push_back(u->detail);
      }
    }
    out << "  " << reason << " (" << units.size() << "): " << IdList(ids) << "\n";
    for (size_t i = 0; i < details.size() && i < 3; ++i) out << "      " << details[i] << "\n";
    if (details.size() > 3) out << "      ... and " << details.size() - 3 << " more details\n";
  }

  if (!plan.notes.empty()) {
    out << "\nNotes (" << plan.notes.size() << "):\n";
    for (const std::string& note : plan.notes) out << "  " << note << "\n";
  }

  out << "\nCost: " << Usd(plan.cost_before_usd_per_hour) << " before, " << Usd(plan.cost_after_usd_per_hour)
      << " after (" << SignedUsd(plan.cost_after_usd_per_hour - plan.cost_before_usd_per_hour) << ")\n";
  out << "Expected interruption cost: " << Usd(plan.expected_interruption_usd_per_hour) << "\n";
  return out.str();
}

}  // namespace gpuscaler
