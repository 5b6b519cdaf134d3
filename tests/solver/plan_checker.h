// An independent checker of a Plan against its Snapshot and Policy, used by
// the planner's property tests: every placement fits its node, no hard
// constraint is violated, and the reported costs add up. It re-derives node
// contents from the plan, so it shares no packing code with the planner
// except MigLayout (the NVIDIA placement rules).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/model/plan.h"
#include "gpuscaler/model/snapshot.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/solver/cost_model.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler::testing {

inline double UnitGpus(const DemandUnit& u) {
  if (u.gpus > 0) return u.gpus;
  if (u.gpu_milli > 0) return u.gpu_milli / 1000.0;
  if (!u.mig_profile.empty()) return (u.mig_profile[0] - '0') / 7.0;
  return 0;
}

// Whether `units` fit on one node of `type` (whole GPUs, then MIG first-fit,
// then fractions first-fit decreasing).
inline bool UnitsFit(const Snapshot& s, const InstanceType& type, std::vector<const DemandUnit*> units) {
  int64_t cpu = 0, mem = 0;
  int whole = 0;
  for (const auto* u : units) {
    cpu += u->cpu_milli;
    mem += u->memory_mib;
    whole += u->gpus;
  }
  if (cpu > int64_t(type.vcpus) * 1000 || mem > type.memory_mib || whole > type.gpu_count) return false;
  const GpuModel* model = nullptr;
  for (const auto& m : s.gpu_models)
    if (m.name == type.gpu_model) model = &m;
  int free = type.gpu_count - whole;
  std::vector<MigLayout> migs;
  std::vector<int> fracs;
  std::stable_sort(units.begin(), units.end(), [](const DemandUnit* a, const DemandUnit* b) { return a->gpu_milli > b->gpu_milli; });
  for (const auto* u : units) {
    if (u->gpus > 0) continue;
    if (!u->mig_profile.empty() && u->gpu_milli == 0) {
      if (!model) return false;
      int idx = -1;
      for (size_t i = 0; i < model->mig_profiles.size(); ++i)
        if (model->mig_profiles[i].name == u->mig_profile) idx = int(i);
      if (idx < 0) return false;
      bool placed = false;
      for (auto& l : migs) placed = placed || l.TryAdd(*model, idx).has_value();
      if (!placed) {
        if (free == 0) return false;
        --free;
        migs.emplace_back();
        if (!migs.back().TryAdd(*model, idx)) return false;
      }
    } else if (u->gpu_milli > 0) {
      bool placed = false;
      for (auto& f : fracs)
        if (!placed && f + u->gpu_milli <= 1000) {
          f += u->gpu_milli;
          placed = true;
        }
      if (!placed) {
        if (free == 0) return false;
        --free;
        fracs.push_back(u->gpu_milli);
      }
    }
  }
  return true;
}

inline bool GpuOk(const Snapshot& s, const DemandUnit& u, const InstanceType& t) {
  if (u.gpus == 0 && u.gpu_milli == 0 && u.mig_profile.empty()) return true;
  if (t.gpu_count == 0) return false;
  const GpuModel* m = nullptr;
  for (const auto& g : s.gpu_models)
    if (g.name == t.gpu_model) m = &g;
  if (!u.gpu_models.empty()) {
    bool ok = false;
    for (const auto& n : u.gpu_models) ok = ok || n == t.gpu_model || (m && (n == m->short_name || n == m->name));
    if (!ok) return false;
  }
  if (u.min_gpu_memory_mib > t.gpu_memory_mib) return false;
  return true;
}

struct CheckOptions {
  bool check_budget = true;
};

// Empty result: the plan is valid.
inline std::vector<std::string> CheckPlan(const Snapshot& s, const Policy& p, const Plan& plan,
                                          CheckOptions opt = {}) {
  std::vector<std::string> bad;
  auto type_of = [&](const std::string& name) -> const InstanceType* {
    for (const auto& t : s.instance_types)
      if (t.name == name) return &t;
    return nullptr;
  };
  std::map<std::string, const DemandUnit*> pending;
  for (const auto& u : s.pending) pending[u.id] = &u;
  std::map<std::string, const DemandUnit*> running;
  std::map<std::string, const Offering*> running_on;
  std::map<std::string, int> node_index;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    node_index[s.nodes[i].id] = int(i);
    for (const auto& u : s.nodes[i].running) {
      running[u.id] = &u;
      running_on[u.id] = &s.nodes[i].offering;
    }
  }
  std::set<std::string> terminated;
  std::set<std::string> moved;
  for (const auto& t : plan.terminations) {
    terminated.insert(t.node_id);
    for (const auto& id : t.moved_unit_ids) moved.insert(id);
  }
  // Node contents after the plan.
  std::map<std::string, std::vector<const DemandUnit*>> on_node;
  std::map<std::pair<int, int>, std::vector<const DemandUnit*>> on_launch;
  std::map<std::string, int> seen;
  for (const auto& n : s.nodes)
    for (const auto& u : n.running)
      if (!moved.count(u.id)) on_node[n.id].push_back(&u);
  for (const auto& pl : plan.placements) {
    const DemandUnit* u = pending.count(pl.unit_id) ? pending[pl.unit_id] : (running.count(pl.unit_id) ? running[pl.unit_id] : nullptr);
    if (!u) {
      bad.push_back("placement of unknown unit " + pl.unit_id);
      continue;
    }
    seen[pl.unit_id]++;
    if (!pl.node_id.empty()) {
      if (!node_index.count(pl.node_id)) bad.push_back("placement on unknown node " + pl.node_id);
      else if (terminated.count(pl.node_id)) bad.push_back("placement on terminated node " + pl.node_id);
      else on_node[pl.node_id].push_back(u);
    } else {
      if (pl.launch_index < 0 || pl.launch_index >= int(plan.launches.size()) || pl.launch_ordinal < 0 ||
          pl.launch_ordinal >= plan.launches[pl.launch_index].count) {
        bad.push_back("placement of " + pl.unit_id + " on a bad launch index");
        continue;
      }
      on_launch[{pl.launch_index, pl.launch_ordinal}].push_back(u);
    }
  }
  for (const auto& u : plan.unplaced) seen[u.unit_id]++;
  for (const auto& u : s.pending)
    if (seen[u.id] != 1) bad.push_back("pending unit " + u.id + " placed/unplaced " + std::to_string(seen[u.id]) + " times");
  for (const auto& id : moved)
    if (seen[id] != 1) bad.push_back("moved unit " + id + " placed " + std::to_string(seen[id]) + " times");

  // Per node: fit, GPU compatibility, spot/interruptible, pins, pools.
  struct Where {
    const Offering* off;
    std::string pool;
    std::vector<const DemandUnit*> units;
    std::string name;
  };
  std::vector<Where> all;
  for (const auto& n : s.nodes) {
    if (terminated.count(n.id) || n.state == NodeState::kTerminating) continue;
    all.push_back({&n.offering, n.pool, on_node[n.id], n.id});
  }
  for (const auto& [key, units] : on_launch)
    all.push_back({&plan.launches[key.first].offering, plan.launches[key.first].pool, units,
                   "launch" + std::to_string(key.first) + "/" + std::to_string(key.second)});
  for (size_t li = 0; li < plan.launches.size(); ++li)
    for (int k = 0; k < plan.launches[li].count; ++k)
      if (!on_launch.count({int(li), k})) all.push_back({&plan.launches[li].offering, plan.launches[li].pool, {}, "empty launch"});

  std::map<std::string, double> cls_total, cls_spot, cls_new_spot;
  std::map<std::string, std::map<std::string, double>> cls_new_zone;
  std::map<std::string, std::map<std::string, double>> cls_zone;
  // Spot GPUs per class and spot failure domain (family/zone), and what the plan added there.
  std::map<std::string, std::map<std::string, double>> cls_spot_pool, cls_new_spot_pool;
  std::map<std::string, int> pool_nodes;
  for (const auto& w : all) {
    pool_nodes[w.pool]++;
    const InstanceType* t = type_of(w.off->instance_type);
    if (!t) {
      bad.push_back(w.name + ": unknown type");
      continue;
    }
    if (!UnitsFit(s, *t, w.units)) bad.push_back(w.name + " (" + t->name + "): units do not fit");
    const bool spot = w.off->capacity_type == CapacityType::kSpot;
    for (const auto* u : w.units) {
      cls_total[u->workload_class] += UnitGpus(*u);
      if (spot) cls_spot[u->workload_class] += UnitGpus(*u);
      cls_zone[u->workload_class][w.off->zone] += UnitGpus(*u);
      const bool is_pending = pending.count(u->id) > 0;
      const Offering* from = moved.count(u->id) ? running_on[u->id] : nullptr;
      if (spot && (is_pending || (from && from->capacity_type != CapacityType::kSpot)))
        cls_new_spot[u->workload_class] += UnitGpus(*u);
      if (is_pending || (from && from->zone != w.off->zone)) cls_new_zone[u->workload_class][w.off->zone] += UnitGpus(*u);
      if (spot) {
        // The cap is per failure domain: instance family x zone.
        auto domain = [&](const std::string& type, const std::string& zone) {
          const InstanceType* ft = type_of(type);
          return (ft != nullptr && !ft->family.empty() ? ft->family : type) + "/" + zone;
        };
        const std::string spot_pool = domain(t->name, w.off->zone);
        cls_spot_pool[u->workload_class][spot_pool] += UnitGpus(*u);
        const bool from_elsewhere = from && (from->capacity_type != CapacityType::kSpot ||
                                             domain(from->instance_type, from->zone) != spot_pool);
        if (is_pending || from_elsewhere) cls_new_spot_pool[u->workload_class][spot_pool] += UnitGpus(*u);
        const auto& reclaimed = s.reclaimed_spot_pools;
        if (is_pending && std::find(reclaimed.begin(), reclaimed.end(), w.off->Key()) != reclaimed.end())
          bad.push_back(u->id + ": placed in reclaimed spot pool " + w.off->Key());
      }
      if (!pending.count(u->id)) continue;  // running work is where it is
      const WorkloadClassPolicy* c = p.FindClass(u->workload_class);
      if (!GpuOk(s, *u, *t)) bad.push_back(u->id + " on " + t->name + ": GPU model/memory mismatch");
      if (spot && (!u->interruptible || (c && !c->interruptible))) bad.push_back(u->id + ": non-interruptible on spot");
      const auto& paused = s.spot_paused_classes;
      if (spot && std::find(paused.begin(), paused.end(), u->workload_class) != paused.end())
        bad.push_back(u->id + ": class with spot paused on spot");
      const auto& spent = s.spot_budget_spent_classes;
      if (spot && !u->capacity_type &&
          std::find(spent.begin(), spent.end(), u->workload_class) != spent.end())
        bad.push_back(u->id + ": class with its lost-work budget spent on spot");
      if (!u->zones.empty() && std::find(u->zones.begin(), u->zones.end(), w.off->zone) == u->zones.end())
        bad.push_back(u->id + ": zone pin");
      if (!u->instance_types.empty() &&
          std::find(u->instance_types.begin(), u->instance_types.end(), t->name) == u->instance_types.end())
        bad.push_back(u->id + ": instance type pin");
      if (u->capacity_type && *u->capacity_type != w.off->capacity_type) bad.push_back(u->id + ": capacity type pin");
      if (!u->pool.empty() && u->pool != w.pool) bad.push_back(u->id + ": pool pin");
      if (c && !c->pools.empty() && std::find(c->pools.begin(), c->pools.end(), w.pool) == c->pools.end())
        bad.push_back(u->id + ": class pool");
    }
  }
  // Shares bind what the plan adds: work already running stays where it is.
  // A class's credit over its spot_share_window moves its floor by one unit
  // (its largest), down while positive, up while negative.
  auto floor_slack = [&](const std::string& cls) {
    const auto credit = s.spot_floor_credit_gpus.find(cls);
    if (credit == s.spot_floor_credit_gpus.end()) return 0.0;
    double largest = 0;
    for (const auto& u : s.pending)
      if (u.workload_class == cls) largest = std::max(largest, UnitGpus(u));
    for (const auto& n : s.nodes)
      for (const auto& u : n.running)
        if (u.workload_class == cls) largest = std::max(largest, UnitGpus(u));
    return credit->second > 1e-6 ? largest : credit->second < -1e-6 ? -largest : 0.0;
  };
  for (const auto& c : p.classes) {
    if (c.max_spot_share < 1 && cls_new_spot[c.name] > 0 &&
        cls_spot[c.name] > c.max_spot_share * cls_total[c.name] + floor_slack(c.name) + 1e-6)
      bad.push_back("class " + c.name + " spot share exceeded");
    double max_unit = 0;
    for (const auto& u : s.pending)
      if (u.workload_class == c.name) max_unit = std::max(max_unit, UnitGpus(u));
    if (c.max_zone_share < 1)
      for (const auto& [z, g] : cls_zone[c.name])
        if (cls_new_zone[c.name][z] > 0 && g > std::max(c.max_zone_share * cls_total[c.name], max_unit) + 1e-6)
          bad.push_back("class " + c.name + " zone share exceeded in " + z);
  }
  if (p.spot.max_pool_share < 1) {
    for (const auto& [cls, by_pool] : cls_spot_pool) {
      double max_unit = 0;
      for (const auto& u : s.pending)
        if (u.workload_class == cls) max_unit = std::max(max_unit, UnitGpus(u));
      for (const auto& [spot_pool, g] : by_pool)
        if (cls_new_spot_pool[cls][spot_pool] > 0 && g > std::max(p.spot.max_pool_share * cls_total[cls], max_unit) + 1e-6)
          bad.push_back("class " + cls + " spot pool share exceeded in " + spot_pool);
    }
  }
  for (const auto& pool : p.pools)
    if (pool_nodes[pool.name] > pool.max_nodes && !plan.launches.empty())
      bad.push_back("pool " + pool.name + " over max_nodes");
  int added = 0;
  for (const auto& l : plan.launches) added += l.count;
  if (added > p.scaling.max_nodes_added_per_tick) bad.push_back("too many nodes added");
  if (int(plan.terminations.size()) > p.scaling.max_nodes_removed_per_tick) bad.push_back("too many nodes removed");

  // Costs add up.
  double before = 0;
  for (const auto& n : s.nodes)
    if (n.state != NodeState::kTerminating) before += MarginalUsdPerHour(n.offering);
  double after = before;
  for (const auto& l : plan.launches) {
    if (std::abs(l.usd_per_hour - l.count * MarginalUsdPerHour(l.offering)) > 1e-6)
      bad.push_back("launch cost != count x marginal price");
    after += l.usd_per_hour;
  }
  for (const auto& t : plan.terminations) after -= MarginalUsdPerHour(t.offering);
  if (std::abs(before - plan.cost_before_usd_per_hour) > 1e-6) bad.push_back("cost_before wrong");
  if (std::abs(after - plan.cost_after_usd_per_hour) > 1e-6) bad.push_back("cost_after wrong");
  if (opt.check_budget && p.budget.global.hourly_usd && p.budget.global.hard && !plan.launches.empty() &&
      plan.cost_after_usd_per_hour > *p.budget.global.hourly_usd + 1e-6)
    bad.push_back("hard budget exceeded");
  // A team's hard hourly cap: its share (GPUs held x price per GPU) of the
  // nodes its work runs on, existing and launched, stays within the cap.
  for (const auto& [team, cap] : p.budget.per_team) {
    if (!opt.check_budget || !cap.hard || !cap.hourly_usd) continue;
    auto per_gpu = [&](const Offering& o) {
      for (const auto& t : s.instance_types)
        if (t.name == o.instance_type) return t.gpu_count > 0 ? o.usd_per_hour / t.gpu_count : 0.0;
      return 0.0;
    };
    double spend = 0;
    for (const auto& n : s.nodes)
      for (const auto& u : n.running)
        if (n.state != NodeState::kTerminating && TeamOf(u, p) == team) spend += GpuShare(u) * per_gpu(n.offering);
    for (const auto& l : plan.launches)
      for (const auto& id : l.unit_ids)
        for (const auto& u : s.pending)
          if (u.id == id && TeamOf(u, p) == team) spend += GpuShare(u) * per_gpu(l.offering);
    if (spend > *cap.hourly_usd + 1e-6) bad.push_back("team " + team + " hard budget exceeded");
  }
  return bad;
}

// A canonical text of a plan, for byte-for-byte determinism checks.
inline std::string CanonicalPlan(const Plan& plan) {
  std::string out;
  char buf[64];
  auto num = [&](double v) {
    std::snprintf(buf, sizeof buf, "%.9f", v);
    return std::string(buf);
  };
  for (const auto& l : plan.launches) {
    out += "L " + l.pool + " " + l.offering.Key() + " x" + std::to_string(l.count) + " " + num(l.usd_per_hour) + " " +
           num(l.expected_interruption_usd_per_hour) + " [" + l.reason + "]";
    for (const auto& id : l.unit_ids) out += " " + id;
    for (const auto& f : l.fallbacks) out += " fb:" + f.Key();
    out += "\n";
  }
  for (const auto& t : plan.terminations) {
    out += "T " + t.node_id + " " + std::string(ToString(t.kind)) + " " + num(t.saves_usd_per_hour) + " [" + t.reason + "]";
    for (const auto& id : t.moved_unit_ids) out += " " + id;
    out += "\n";
  }
  for (const auto& pl : plan.placements)
    out += "P " + pl.unit_id + " " + pl.node_id + " " + std::to_string(pl.launch_index) + "/" + std::to_string(pl.launch_ordinal) + "\n";
  for (const auto& u : plan.unplaced) out += "U " + u.unit_id + " " + std::string(ToString(u.reason)) + " " + u.detail + "\n";
  out += "C " + num(plan.cost_before_usd_per_hour) + " " + num(plan.cost_after_usd_per_hour) + " " +
         num(plan.expected_interruption_usd_per_hour) + "\n" + plan.summary + "\n";
  return out;
}

// Fails the running test once per violation CheckPlan finds.
inline void ExpectValid(const Snapshot& s, const Policy& p, const Plan& plan) {
  for (const auto& v : CheckPlan(s, p, plan)) ADD_FAILURE() << v;
}

}  // namespace gpuscaler::testing
