#include <algorithm>

#include "state.h"

namespace gpuscaler::daemon {

std::vector<WaitingGang> WaitingGangs(const Snapshot& snapshot, const Plan& plan,
                                      const std::map<std::string, WallTime>& since, WallTime now) {
  std::map<std::string, std::string> unplaced;  // unit id -> why
  for (const UnplacedUnit& u : plan.unplaced) {
    unplaced[u.unit_id] = std::string(ToString(u.reason)) + (u.detail.empty() ? "" : ": " + u.detail);
  }
  std::map<std::string, int> launching;  // unit id -> nodes of its launch
  for (const LaunchAction& l : plan.launches) {
    for (const std::string& id : l.unit_ids) launching[id] = l.count;
  }
  std::map<std::string, WaitingGang> gangs;
  for (const DemandUnit& u : snapshot.pending) {
    if (!u.gang) continue;
    WaitingGang& g = gangs[u.gang->name];
    g.name = u.gang->name;
    g.workload_class = u.workload_class;
    g.size = u.gang->size;
    ++g.pending;
    const auto first = since.find(u.id);
    g.wait_s = std::max(
        g.wait_s, std::chrono::duration<double>(now - (first == since.end() ? now : first->second)).count());
    if (auto why = unplaced.find(u.id); why != unplaced.end() && g.waits_for.empty())
      g.waits_for = why->second;
    if (launching.count(u.id) > 0 && g.waits_for.empty())
      g.waits_for = "its nodes, launched at this decision";
  }
  if (gangs.empty()) return {};
  for (const Node& n : snapshot.nodes) {
    for (const DemandUnit& u : n.running) {
      if (u.gang) {
        if (auto it = gangs.find(u.gang->name); it != gangs.end()) ++it->second.running;
      }
    }
  }
  std::vector<WaitingGang> out;
  for (auto& [name, g] : gangs) {
    if (g.waits_for.empty()) {
      g.waits_for = g.pending + g.running < g.size
                        ? std::to_string(g.size - g.pending - g.running) + " member(s) not created yet"
                        : "the scheduler: its nodes have room";
    }
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const WaitingGang& a, const WaitingGang& b) { return a.wait_s > b.wait_s; });
  return out;
}

nlohmann::json WaitingGangsJson(const std::vector<WaitingGang>& gangs) {
  nlohmann::json out = nlohmann::json::array();
  for (const WaitingGang& g : gangs) {
    out.push_back({{"name", g.name},
                   {"class", g.workload_class},
                   {"size", g.size},
                   {"pending", g.pending},
                   {"running", g.running},
                   {"wait_s", g.wait_s},
                   {"waits_for", g.waits_for}});
  }
  return out;
}

}  // namespace gpuscaler::daemon
