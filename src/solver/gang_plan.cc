#include "gang_plan.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuscaler/model/json.h"

namespace gpuscaler::solver_detail {
namespace {

inline constexpr const char* kSeveral = "*";

// Keeps one value, or kSeveral once two differ.
void Merge(std::string& into, const std::string& value) {
  if (into.empty()) {
    into = value;
  } else if (into != value) {
    into = kSeveral;
  }
}

struct GangView {
  GangMembership spec;          // as its first pending member states it
  std::vector<size_t> pending;  // indices into the snapshot's pending work
  int running = 0;
  std::string running_zone;  // of its running members; kSeveral: more than one
  std::string running_type;
  std::string zone;  // pinned: every pending member goes here
  std::string type;
  bool dropped = false;
  std::string missing;  // dropped: what keeps it from being placed whole
};

// By name, so every pass visits gangs in the same order.
using Gangs = std::map<std::string, GangView>;

Gangs FindGangs(const Snapshot& s) {
  Gangs gangs;
  for (size_t i = 0; i < s.pending.size(); ++i) {
    const DemandUnit& u = s.pending[i];
    if (!u.gang) continue;
    GangView& g = gangs[u.gang->name];
    if (g.pending.empty()) g.spec = *u.gang;
    g.pending.push_back(i);
  }
  if (gangs.empty()) return gangs;
  for (const Node& n : s.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    for (const DemandUnit& u : n.running) {
      if (!u.gang) continue;
      auto it = gangs.find(u.gang->name);
      if (it == gangs.end()) continue;
      ++it->second.running;
      Merge(it->second.running_zone, n.offering.zone);
      Merge(it->second.running_type, n.offering.instance_type);
    }
  }
  return gangs;
}

void Drop(GangView& g, std::string missing) {
  g.dropped = true;
  g.missing = std::move(missing);
}

// What is known before any plan: members that are not there yet, and the
// zone and type that members already running fix.
void CheckKnownMembers(Gangs& gangs) {
  for (auto& [name, g] : gangs) {
    const int known = int(g.pending.size()) + g.running;
    if (known < g.spec.size) {
      Drop(g, std::to_string(known) + " of its " + std::to_string(g.spec.size) + " members exist");
      continue;
    }
    if (g.spec.same_zone && !g.running_zone.empty() && g.running_zone != kSeveral) g.zone = g.running_zone;
    if (g.spec.same_instance_type && !g.running_type.empty() && g.running_type != kSeveral) g.type = g.running_type;
  }
}

// Whether a pass must plan a changed snapshot (WorkingSnapshot): a gang was
// dropped or pinned.
bool Edited(const Gangs& gangs) {
  return std::any_of(gangs.begin(), gangs.end(), [](const auto& entry) {
    const GangView& g = entry.second;
    return g.dropped || !g.zone.empty() || !g.type.empty();
  });
}

// The snapshot the next pass plans: dropped gangs' members left out, pinned
// gangs' members restricted to their zone and type. Its nodes are `s`'s.
Snapshot WorkingSnapshot(const Snapshot& s, const Gangs& gangs) {
  Snapshot w = s;
  w.pending.clear();
  for (const DemandUnit& u : s.pending) {
    if (!u.gang) {
      w.pending.push_back(u);
      continue;
    }
    const GangView& g = gangs.at(u.gang->name);
    if (g.dropped) continue;
    DemandUnit& pinned = w.pending.emplace_back(u);
    if (!g.zone.empty()) pinned.zones = {g.zone};
    if (!g.type.empty()) pinned.instance_types = {g.type};
  }
  return w;
}

// Where a plan put one gang's pending members.
struct GangPlacement {
  int placed = 0;
  std::map<std::string, int> zones;
  std::map<std::string, int> types;
  const UnplacedUnit* unplaced = nullptr;  // its first member left out, if any
  std::string group_zone;  // members launched off their pool's placement group zone: that zone
};

// The gang (name and view) of each pending member of a gang still in play, by
// unit id.
using MemberGangs = std::unordered_map<std::string, const Gangs::value_type*>;
MemberGangs GangsOfMembers(const Snapshot& s, const Gangs& gangs) {
  MemberGangs gang_of;
  for (const Gangs::value_type& entry : gangs) {
    if (entry.second.dropped) continue;
    for (size_t i : entry.second.pending) gang_of[s.pending[i].id] = &entry;
  }
  return gang_of;
}

// `s`: the snapshot the gangs were found in (the plan's nodes are its nodes).
std::map<std::string, GangPlacement> LocateGangs(const Snapshot& s, const Plan& plan, const Gangs& gangs,
                                                 const PlacementGroupZones& group_zones) {
  const MemberGangs gang_of = GangsOfMembers(s, gangs);
  std::unordered_map<std::string, const Node*> node_by_id;
  for (const Node& n : s.nodes) node_by_id[n.id] = &n;
  std::map<std::string, GangPlacement> out;
  for (const Placement& p : plan.placements) {
    auto it = gang_of.find(p.unit_id);
    if (it == gang_of.end()) continue;
    GangPlacement& g = out[it->second->first];
    const Offering* where = nullptr;
    if (p.launch_index >= 0) {
      const LaunchAction& l = plan.launches[size_t(p.launch_index)];
      where = &l.offering;
      if (auto z = group_zones.find(l.pool); z != group_zones.end() && z->second != where->zone) g.group_zone = z->second;
    } else if (auto n = node_by_id.find(p.node_id); n != node_by_id.end()) {
      where = &n->second->offering;
    }
    ++g.placed;
    if (where != nullptr) {
      ++g.zones[where->zone];
      ++g.types[where->instance_type];
    }
  }
  for (const UnplacedUnit& u : plan.unplaced) {
    auto it = gang_of.find(u.unit_id);
    if (it == gang_of.end()) continue;
    GangPlacement& g = out[it->second->first];
    if (g.unplaced == nullptr) g.unplaced = &u;
  }
  return out;
}

// The key with the largest count (the first by name on a tie).
std::string MostCommon(const std::map<std::string, int>& counts) {
  std::string best;
  int most = -1;
  for (const auto& [key, count] : counts) {
    if (count > most) {
      best = key;
      most = count;
    }
  }
  return best;
}

// Judges `plan` for every gang still in play: pins a gang that came out
// spread over zones or types (once, when `may_pin`), drops one that came out
// short or spread again. True when the plan needs no change.
bool Judge(const Snapshot& s, const Plan& plan, bool may_pin, const PlacementGroupZones& group_zones, Gangs& gangs) {
  const std::map<std::string, GangPlacement> placed = LocateGangs(s, plan, gangs, group_zones);
  bool whole = true;
  for (auto& [name, g] : gangs) {
    if (g.dropped) continue;
    auto it = placed.find(name);
    const GangPlacement none;
    const GangPlacement& p = it == placed.end() ? none : it->second;
    if (p.placed < int(g.pending.size())) {
      std::string missing = std::to_string(p.placed) + " of its " + std::to_string(g.pending.size()) +
                            " pending members have a place";
      if (p.unplaced != nullptr) {
        missing += "; the others: " + std::string(ToString(p.unplaced->reason));
        if (!p.unplaced->detail.empty()) missing += " (" + p.unplaced->detail + ")";
      }
      Drop(g, std::move(missing));
      whole = false;
      continue;
    }
    const bool spread_zones = g.spec.same_zone && (p.zones.size() > 1 || (!g.running_zone.empty() &&
                                                                            !p.zones.empty() &&
                                                                            !p.zones.count(g.running_zone)));
    const bool spread_types = g.spec.same_instance_type && p.types.size() > 1;
    if (!p.group_zone.empty()) {
      // Its pool's placement group is in use in another zone: EC2 would
      // refuse the launch (InvalidPlacementGroup.InUse).
      whole = false;
      const bool allowed = std::all_of(g.pending.begin(), g.pending.end(), [&](size_t i) {
        const std::vector<std::string>& zones = s.pending[i].zones;
        return zones.empty() || std::find(zones.begin(), zones.end(), p.group_zone) != zones.end();
      });
      if (!may_pin || !g.zone.empty() || !allowed) {
        Drop(g, "its pool's placement group is in use in " + p.group_zone + ", where its members do not fit");
      } else {
        g.zone = p.group_zone;
      }
      continue;
    }
    if (!spread_zones && !spread_types) continue;
    whole = false;
    if (!may_pin || (spread_zones && !g.zone.empty()) || (spread_types && !g.type.empty())) {
      const std::string tried = spread_zones ? g.zone : g.type;
      Drop(g, std::string("its members do not fit in one ") + (spread_zones ? "zone" : "instance type") +
                  (tried.empty() ? "" : " (" + tried + " tried)"));
      continue;
    }
    if (spread_zones) g.zone = MostCommon(p.zones);
    if (spread_types) g.type = MostCommon(p.types);
  }
  return whole;
}

// Takes a gang that the final plan still splits out of it: its members'
// placements go, their launches keep the nodes (the next plan removes them).
void StripSplitGangs(const Snapshot& s, Plan& plan, const PlacementGroupZones& group_zones, Gangs& gangs) {
  const MemberGangs in_play = GangsOfMembers(s, gangs);
  if (Judge(s, plan, /*may_pin=*/false, group_zones, gangs)) return;
  const auto is_stripped = [&](const std::string& id) {
    auto it = in_play.find(id);
    return it != in_play.end() && it->second->second.dropped;
  };
  std::erase_if(plan.placements, [&](const Placement& p) { return is_stripped(p.unit_id); });
  std::erase_if(plan.unplaced, [&](const UnplacedUnit& u) { return is_stripped(u.unit_id); });
  for (LaunchAction& l : plan.launches) std::erase_if(l.unit_ids, is_stripped);
}

// Launches for gang members buy all their nodes or none, in one zone (and of
// one type when a gang on them asks).
void MarkGangLaunches(const Snapshot& s, const Gangs& gangs, Plan& plan) {
  const MemberGangs gang_of = GangsOfMembers(s, gangs);
  for (LaunchAction& l : plan.launches) {
    bool same_type = false;
    for (const std::string& id : l.unit_ids) {
      auto it = gang_of.find(id);
      if (it == gang_of.end()) continue;
      l.all_or_nothing = true;
      same_type = same_type || it->second->second.spec.same_instance_type;
    }
    if (!l.all_or_nothing) continue;
    std::erase_if(l.fallbacks, [&](const Offering& o) {
      return o.zone != l.offering.zone || (same_type && o.instance_type != l.offering.instance_type);
    });
  }
}

void ListDroppedGangs(const Snapshot& s, const Gangs& gangs, Plan& plan) {
  for (const auto& [name, g] : gangs) {
    if (!g.dropped) continue;
    for (size_t i : g.pending) {
      const DemandUnit& u = s.pending[i];
      plan.unplaced.push_back({u.id, u.workload_class, UnplacedReason::kGangIncomplete,
                               "gang " + name + " (" + std::to_string(g.spec.size) +
                                   " members) is placed whole or not at all: " + g.missing});
    }
  }
}

}  // namespace

Plan PlanGangsWhole(const Snapshot& snapshot, const PlacementGroupZones& group_zones, const PlanFunction& plan_for) {
  Gangs gangs = FindGangs(snapshot);
  if (gangs.empty()) return plan_for(snapshot);
  CheckKnownMembers(gangs);
  // Every pass plans the snapshot as found unless a gang had to be dropped or
  // pinned; the gangs are judged against it either way (same nodes).
  const auto plan_pass = [&] {
    return Edited(gangs) ? plan_for(WorkingSnapshot(snapshot, gangs)) : plan_for(snapshot);
  };
  constexpr int kPasses = 3;
  Plan plan;
  bool whole = false;
  for (int pass = 0; pass < kPasses && !whole; ++pass) {
    plan = plan_pass();
    whole = Judge(snapshot, plan, /*may_pin=*/true, group_zones, gangs);
  }
  if (!whole) {
    plan = plan_pass();
    StripSplitGangs(snapshot, plan, group_zones, gangs);
  }
  MarkGangLaunches(snapshot, gangs, plan);
  ListDroppedGangs(snapshot, gangs, plan);
  plan.summary = SummarizePlan(plan, snapshot.pending.size());
  return plan;
}

}  // namespace gpuscaler::solver_detail
