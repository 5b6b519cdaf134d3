#include "gpuscaler/solver/planner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/model/money.h"
#include "gpuscaler/solver/cost_model.h"
#include "gpuscaler/solver/deadline_hold.h"
#include "gpuscaler/solver/forecast_demand.h"
#include "gpuscaler/solver/warm_pool.h"
#include "deadline_plan.h"
#include "gang_plan.h"
#include "planner_impl.h"

namespace gpuscaler::solver_detail {

std::string Usd(double v) { return FormatUsd(v, MoneyStyle::kCents); }

std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

double Planner::PricePerGpu(const NodeOffer& b) const {
  if (b.type < 0) return 0;
  return gpuscaler::PricePerGpu(b.price, snap_.instance_types[b.type].gpu_count);
}

std::string Planner::Describe(const Offering& o) const {
  std::string out = o.instance_type + " " + std::string(ToString(o.capacity_type)) + " " + o.zone;
  if (!o.reservation_id.empty()) out += " (" + o.reservation_id + ")";
  return out;
}

std::vector<std::vector<const Bin*>> Planner::AssemblePlacements(const State& st, Plan& plan,
                                                                 std::vector<size_t>& cursor) const {
  std::vector<Placement> placements;
  placements.reserve(snap_.pending.size() + plan.placements.size());
  auto next_unit = [&](int g) -> const std::string& { return snap_.pending[groups_[g].units[cursor[g]++]].id; };
  for (int bi : existing_order_) {
    const Bin& b = existing_[bi];
    for (auto [g, t] : b.content)
      for (int i = 0; i < t; ++i) {
        Placement& p = placements.emplace_back();
        p.unit_id = next_unit(g);
        p.node_id = snap_.nodes[bi].id;
      }
  }
  // New nodes: one launch per (pool, offering), in the order first chosen.
  std::map<std::pair<int, int>, int> launch_of;
  std::vector<std::vector<const Bin*>> launch_bins;
  for (const Bin& b : st.bins) {
    const Option& o = options_[b.option];
    auto [it, inserted] = launch_of.emplace(std::make_pair(o.pool, o.offering), int(plan.launches.size()));
    if (inserted) {
      LaunchAction l;
      l.pool = pools_[o.pool].pol.name;
      l.offering = snap_.offerings[o.offering];
      plan.launches.push_back(std::move(l));
      launch_bins.emplace_back();
    }
    const int li = it->second;
    LaunchAction& l = plan.launches[li];
    launch_bins[li].push_back(&b);
    for (int m = 0; m < b.mult; ++m) {
      const int ordinal = l.count++;
      for (auto [g, t] : b.content)
        for (int i = 0; i < t; ++i) {
          Placement& p = placements.emplace_back();
          p.unit_id = next_unit(g);
          p.launch_index = li;
          p.launch_ordinal = ordinal;
          l.unit_ids.push_back(p.unit_id);
        }
      for (auto [node, k] : b.moved) {
        Placement& p = placements.emplace_back();
        p.unit_id = snap_.nodes[node].running[k].id;
        p.launch_index = li;
        p.launch_ordinal = ordinal;
        l.unit_ids.push_back(p.unit_id);
      }
    }
    l.usd_per_hour += b.price * b.mult;
    l.expected_interruption_usd_per_hour += b.risk * b.mult;
  }
  // Moved-unit placements from consolidation onto existing nodes come after.
  for (auto& p : plan.placements) placements.push_back(std::move(p));
  plan.placements = std::move(placements);
  return launch_bins;
}

void Planner::DescribeLaunch(LaunchAction& l, const std::vector<const Bin*>& bins, bool soft_over, Bin& probe) const {
  const Bin& first = *bins[0];
  const Option& o = options_[first.option];
  std::map<std::string, int> by_class;
  std::map<std::string, int> ahead_by_class;
  int pending_units = 0;
  int ahead_units = 0;
  for (const Bin* b : bins)
    for (auto [g, t] : b->content) {
      if (static_cast<size_t>(groups_[g].rep - snap_.pending.data()) >= forecast_from_) {
        ahead_by_class[groups_[g].rep->workload_class] += t * b->mult;
        ahead_units += t * b->mult;
        continue;
      }
      by_class[groups_[g].rep->workload_class] += t * b->mult;
      pending_units += t * b->mult;
    }
  int moved_units = 0;
  for (const Bin* b : bins) moved_units += int(b->moved.size()) * b->mult;
  std::string what;
  if (pending_units > 0) {
    what = std::to_string(pending_units) + " pending " + (by_class.size() == 1 ? by_class.begin()->first + " " : "") +
           (pending_units == 1 ? "unit" : "units");
  }
  if (ahead_units > 0) {
    what += std::string(what.empty() ? "" : " and ") + std::to_string(ahead_units) + " " +
            (ahead_units == 1 ? "unit" : "units") + " ahead of " +
            (ahead_by_class.size() == 1 ? "class " + ahead_by_class.begin()->first + "'s" : "the") +
            " demand forecast";
  }
  if (what.empty() && moved_units > 0) {
    what = std::to_string(moved_units) + " unit(s) moved from a costlier node";
  } else if (what.empty()) {
    what = "pool " + l.pool + " min_nodes";
  }
  const double total = l.usd_per_hour + l.expected_interruption_usd_per_hour;
  l.reason = std::to_string(l.count) + "\xC3\x97 " + Describe(l.offering) + " for " + what + ": " + Usd(l.usd_per_hour) + "/h";
  const double od_total = o.od * l.count;
  if (o.reservation >= 0) {
    l.reason += ", " + ReservedSlotWhy(snap_.reservations[size_t(o.reservation)], snap_.offerings[size_t(o.offering)]);
  } else if (o.spot && od_total > 0) {
    l.reason += ", " + Fixed(100.0 * (1.0 - total / od_total), 0) + " % cheaper than on-demand after interruption risk (" +
                Usd(l.expected_interruption_usd_per_hour) + "/h expected)";
  } else if (pending_units + ahead_units > 0) {
    bool spot_possible = false;
    int paused_cls = -1;
    for (const Bin* b : bins)
      for (auto [g, t] : b->content) {
        spot_possible = spot_possible || groups_[g].interruptible;
        if (groups_[g].spot_paused) paused_cls = groups_[g].cls;
      }
    if (spot_possible) {
      l.reason += ", lowest expected cost per unit (spot costlier after interruption risk, capped or unavailable)";
    } else if (paused_cls >= 0) {
      l.reason += ", lowest cost per unit (spot paused" + SpotPauseWhy(paused_cls) + ": on-demand only)";
    } else {
      l.reason += ", lowest cost per unit (work not interruptible: no spot)";
    }
  }
  if (soft_over) l.reason += "; over the soft budget of " + Usd(global_budget_) + "/h";
  // Fallbacks: same content on other options of the same pool, by expected
  // cost; for moved work, only those no dearer than this one.
  if (!first.content.empty() || !first.moved.empty()) {
    std::vector<std::pair<double, int>> fb;
    for (size_t oi = 0; oi < options_.size(); ++oi) {
      const Option& op = options_[oi];
      if (int(oi) == first.option || op.pool != o.pool || !op.usable) continue;
      if (!first.moved.empty()) {
        // Moved work was moved for what this option saves: a dearer
        // fallback (on-demand behind a reserved slot) would buy the move at
        // a price it was never planned at.
        if (op.type != o.type || op.spot != o.spot || op.price > o.price + kEps) continue;
        InitBin(probe, int(oi));
      } else if (!Refill(probe, int(oi), first.content)) {
        continue;
      }
      fb.emplace_back(BinCost(probe), int(oi));
    }
    std::stable_sort(fb.begin(), fb.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < fb.size() && i < 5; ++i) l.fallbacks.push_back(snap_.offerings[options_[fb[i].second].offering]);
  }
}

void Planner::AddUnplaced(const State& st, const std::vector<size_t>& cursor, Plan& plan) const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& grp = groups_[g];
    const int cut = st.budget_cut.empty() ? 0 : st.budget_cut[g];
    for (size_t i = cursor[g]; i < grp.units.size(); ++i) {
      const DemandUnit& u = snap_.pending[grp.units[i]];
      UnplacedUnit x;
      x.unit_id = u.id;
      x.workload_class = u.workload_class;
      const bool by_cut = int(grp.units.size() - i) <= cut;
      if (grp.has_static_reason) {
        x.reason = grp.static_reason;
        x.detail = grp.detail;
      } else if (by_cut) {
        x.reason = UnplacedReason::kBudget;
        x.detail = st.cut_by_team[g] ? "team " + teams_[grp.team].name +
                                           "'s hard budget cap reached; its higher-priority demand placed first"
                                     : "hard budget cap reached; higher-priority demand placed first";
      } else {
        x.reason = st.blocked[g] >= 0 ? UnplacedReason(st.blocked[g]) : UnplacedReason::kNoOfferingFits;
        switch (x.reason) {
          case UnplacedReason::kBudget:
            x.detail = st.team_blocked[g] ? "its share of a node would exceed team " + teams_[grp.team].name +
                                                "'s hard budget cap"
                                          : "a new node would exceed the hard budget cap";
            break;
          case UnplacedReason::kPoolMax: x.detail = "pools that fit are at max_nodes"; break;
          case UnplacedReason::kMaxNodesPerTick: x.detail = "max_nodes_added_per_tick reached; next tick"; break;
          case UnplacedReason::kSpotShare: x.detail = "class " + u.workload_class + " is at its max spot share"; break;
          case UnplacedReason::kZoneSpread: x.detail = "class " + u.workload_class + " zone spread cannot be met"; break;
          default: x.detail = "no allowed offering fits"; break;
        }
      }
      plan.unplaced.push_back(std::move(x));
    }
  }
}

void Planner::Assemble(State& st, Plan& plan) {
  std::vector<size_t> cursor(groups_.size(), 0);
  const std::vector<std::vector<const Bin*>> launch_bins = AssemblePlacements(st, plan, cursor);
  const bool soft_over = !global_budget_hard_ && global_budget_ < kInf && st.cost > global_budget_ + kEps;
  Bin probe;  // DescribeLaunch's working storage
  for (size_t li = 0; li < plan.launches.size(); ++li)
    DescribeLaunch(plan.launches[li], launch_bins[li], soft_over, probe);
  AddUnplaced(st, cursor, plan);
}

Plan Planner::Run() {
  Plan plan;
  BuildIndex();
  BuildPools();
  BuildOptions();
  GroupUnits();
  BuildClasses();
  BuildGroups();
  BuildStaticReasons();
  BuildExisting();
  BuildTeams();

  // Spot share and zone spread are shares of the class's GPUs after the
  // plan. Allowances start from all pending demand; when some of it stays
  // unplaced the shares are recomputed from what was placed, and planned again.
  std::vector<double> totals = class_total_gpu_;
  std::vector<char> short_class(classes_.size(), 0);
  State st;
  constexpr int kAttempts = 6;
  for (int attempt = 0; attempt <= kAttempts; ++attempt) {
    if (attempt == kAttempts) {
      // Not settled: classes still short get no new spot or cross-zone share beyond one unit.
      for (size_t c = 0; c < classes_.size(); ++c)
        if (short_class[c]) totals[c] = 0;
    }
    SetAllowances(totals);
    State base;
    base.rem.resize(groups_.size());
    for (size_t g = 0; g < groups_.size(); ++g) base.rem[g] = int(groups_[g].units.size());
    base.allow.spot.resize(classes_.size());
    base.allow.zone.resize(classes_.size());
    base.allow.spot_pool.resize(classes_.size());
    for (size_t c = 0; c < classes_.size(); ++c) {
      base.allow.spot[c] = classes_[c].spot_allow;
      base.allow.zone[c] = classes_[c].zone_allow;
      base.allow.spot_pool[c] = classes_[c].pool_allow;
    }
    for (const TeamInfo& t : teams_)
      base.allow.team_usd.push_back(t.hard ? t.allowance_usd - t.running_usd : kInf);
    base.pool_count.clear();
    base.pool_cost.clear();
    base.reserved_added.assign(snap_.reservations.size(), 0);
    for (const auto& p : pools_) {
      base.pool_count.push_back(p.count);
      base.pool_cost.push_back(p.cost);
    }
    base.cost = base_cost_;
    base.budget_cut.assign(groups_.size(), 0);
    base.cut_by_team.assign(groups_.size(), 0);
    st = FillAndScaleUp(base);
    std::vector<double> placed(classes_.size(), 0);
    for (size_t c = 0; c < classes_.size(); ++c) placed[c] = class_total_gpu_[c];
    for (size_t g = 0; g < groups_.size(); ++g) placed[groups_[g].cls] -= groups_[g].gpu_w * groups_[g].units.size();
    for (const Bin& b : existing_)
      for (auto [g, t] : b.content) placed[groups_[g].cls] += groups_[g].gpu_w * t;
    for (const Bin& b : st.bins)
      for (auto [g, t] : b.content) placed[groups_[g].cls] += groups_[g].gpu_w * t * b.mult;
    bool again = false;
    for (size_t c = 0; c < classes_.size(); ++c) {
      const bool limited = classes_[c].spot_allow < kInf || classes_[c].zone_limited || classes_[c].pool_limited;
      short_class[c] = limited && placed[c] < totals[c] - 1e-7;
      if (short_class[c]) {
        again = true;
        totals[c] = placed[c];
      }
    }
    if (!again || attempt == kAttempts) break;
  }
  MinNodes(st);
  std::vector<TerminationAction> terms;
  if (opts_.consolidation && policy_.disruption.consolidation) Consolidate(st, plan, terms);
  plan.terminations = std::move(terms);
  Assemble(st, plan);

  // Costs.
  plan.cost_before_usd_per_hour = base_cost_;
  double after = base_cost_;
  for (const auto& l : plan.launches) after += l.usd_per_hour;
  for (const auto& t : plan.terminations) after -= MarginalUsdPerHour(t.offering);
  // Removing every node leaves a rounding residue (4 x 1.006 summed, then
  // subtracted one by one, is -4e-16): a fleet's cost is never negative,
  // and the audit store refuses a negative amount (the whole decision).
  plan.cost_after_usd_per_hour = std::max(0.0, after);
  double risk = 0;
  std::vector<char> gone(snap_.nodes.size(), 0);
  for (size_t i = 0; i < snap_.nodes.size(); ++i) gone[i] = existing_[i].removed;
  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    const Node& n = snap_.nodes[i];
    if (gone[i] || n.state == NodeState::kTerminating || existing_[i].type < 0) continue;
    const InstanceType& t = snap_.instance_types[existing_[i].type];
    const double wait_h = existing_[i].wait_h;
    for (const auto& u : n.running) risk += ExpectedInterruptionUsdPerHour(u, n.offering, t, wait_h);
    risk += existing_[i].risk;
    for (auto [node, k] : existing_[i].moved)
      risk += ExpectedInterruptionUsdPerHour(snap_.nodes[node].running[k], n.offering, t, wait_h);
  }
  for (const auto& l : plan.launches) risk += l.expected_interruption_usd_per_hour;
  plan.expected_interruption_usd_per_hour = risk;

  // Summary: the counts come from the plan itself (SummarizePlan); the
  // planner adds what only it knows.
  std::vector<std::string>& notes = plan.notes;
  if (global_budget_ < kInf && !global_budget_hard_ && after > global_budget_ + kEps)
    notes.push_back("over soft budget " + Usd(global_budget_) + "/h");
  for (const auto& p : pools_)
    if (p.budget < kInf && !p.budget_hard) {
      double c = 0;
      for (const auto& l : plan.launches)
        if (l.pool == p.pol.name) c += l.usd_per_hour;
      if (p.cost + c > p.budget + kEps) notes.push_back("pool " + p.pol.name + " over soft budget " + Usd(p.budget) + "/h");
    }
  for (size_t t = 0; t < teams_.size(); ++t) {
    if (teams_[t].hard || teams_[t].allowance_usd == kInf) continue;
    double spend = teams_[t].running_usd;
    for (const std::vector<Bin>* bins : {&existing_, &st.bins})
      for (const Bin& b : *bins)
        for (auto [g, k] : b.content)
          if (groups_[g].team == int(t)) spend += k * b.mult * groups_[g].gpu_w * PricePerGpu(b);
    if (spend > teams_[t].allowance_usd + kEps)
      notes.push_back("team " + teams_[t].name + " over soft budget " + Usd(teams_[t].allowance_usd) + "/h");
  }
  if (!snap_.stale_prices.empty()) notes.push_back(snap_.stale_prices + ": no replacements");
  std::map<std::string, int> paused;
  for (const Group& g : groups_)
    if (g.spot_paused) paused.emplace(g.rep->workload_class, g.cls);
  for (const auto& [c, cls] : paused) notes.push_back("class " + c + ": spot paused" + SpotPauseWhy(cls));
  std::map<std::string, int> shifted;
  for (const Group& g : groups_)
    if (classes_[g.cls].floor_shift != 0) shifted.emplace(g.rep->workload_class, g.cls);
  for (const auto& [c, cls] : shifted) {
    const ClassInfo& ci = classes_[cls];
    const std::string credit = (ci.floor_credit > 0 ? "+" : "") + Fixed(ci.floor_credit, 2);
    notes.push_back("class " + c + ": on-demand floor one unit " + (ci.floor_shift > 0 ? "lower" : "higher") +
                    " for new work (held on average: " + credit + " GPUs over spot_share_window)");
  }
  for (const auto& key : snap_.reclaimed_spot_pools)
    notes.push_back("spot pool " + key + ": reclaimed in a wave of notices, no new nodes there until its cooldown ends");
  for (const auto& [pool, n] : plan.empty_nodes_left_by_pool)
    notes.push_back("pool " + pool + ": " + std::to_string(n) +
                    " more empty node(s) not needed, left for later ticks (max_nodes_removed_per_tick)");
  for (const auto& n : notes_) notes.push_back(n);
  plan.summary = SummarizePlan(plan, snap_.pending.size());
  return plan;
}

}  // namespace gpuscaler::solver_detail

namespace gpuscaler {

Plan MakePlan(const Snapshot& snapshot, const Policy& policy) { return MakePlan(snapshot, policy, PlannerOptions{}); }

Plan solver_detail::PlanWithForecasts(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options) {
  if (snapshot.forecasts.empty()) {
    solver_detail::Planner planner(snapshot, policy, options);
    return planner.Run();
  }
  // Forecast units join the pending work (last, at the lowest priority) in
  // a copy of the snapshot; what the plan says about them is taken out
  // again, so placements, unplaced work and the summary are the real work's.
  ForecastUnits ahead = MakeForecastUnits(snapshot, policy);
  if (ahead.units.empty()) {
    solver_detail::Planner planner(snapshot, policy, options);
    Plan plan = planner.Run();
    for (std::string& n : ahead.notes) plan.notes.push_back(std::move(n));
    plan.summary = SummarizePlan(plan, snapshot.pending.size());
    return plan;
  }
  Snapshot with_ahead = snapshot;
  const size_t real = with_ahead.pending.size();
  with_ahead.pending.insert(with_ahead.pending.end(), ahead.units.begin(), ahead.units.end());
  solver_detail::Planner planner(with_ahead, policy, options);
  planner.SetForecastUnitsFrom(real);
  Plan plan = planner.Run();
  std::set<std::string> ids;
  for (const DemandUnit& u : ahead.units) ids.insert(u.id);
  const auto is_ahead = [&ids](const std::string& id) { return ids.count(id) > 0; };
  std::erase_if(plan.placements, [&](const Placement& p) { return is_ahead(p.unit_id); });
  int not_placed = 0;
  std::erase_if(plan.unplaced, [&](const UnplacedUnit& u) {
    const bool a = is_ahead(u.unit_id);
    not_placed += a ? 1 : 0;
    return a;
  });
  for (LaunchAction& l : plan.launches) std::erase_if(l.unit_ids, is_ahead);
  for (std::string& n : ahead.notes) plan.notes.push_back(std::move(n));
  if (not_placed > 0) {
    plan.notes.push_back(std::to_string(not_placed) + " forecast unit(s) not placed (limits, budget or no fitting offering)");
  }
  plan.summary = SummarizePlan(plan, snapshot.pending.size());
  return plan;
}

namespace {

// The zone each pool's cluster placement group is in use in (see
// solver_detail::PlacementGroupZones).
solver_detail::PlacementGroupZones InUsePlacementGroupZones(const Snapshot& snapshot, const Policy& policy) {
  solver_detail::PlacementGroupZones zones;
  for (const NodePoolPolicy& pool : policy.pools) {
    if (pool.placement_group.empty()) continue;
    for (const Node& n : snapshot.nodes) {
      if (n.pool == pool.name && n.placement_group == pool.placement_group && n.state != NodeState::kTerminating) {
        zones[pool.name] = n.offering.zone;
        break;
      }
    }
  }
  return zones;
}

}  // namespace

Plan MakePlan(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options) {
  return AddWarmCapacity(snapshot, policy,
                         solver_detail::PlanGangsWhole(snapshot, InUsePlacementGroupZones(snapshot, policy),
                                                       [&](const Snapshot& s) {
                                                         return solver_detail::PlanWithDeadlines(
                                                             s, policy, options, DeadlineStrategy::kUniformProgress);
                                                       }));
}

Plan MakePlanWithDeadlineStrategy(const Snapshot& snapshot, const Policy& policy, DeadlineStrategy strategy) {
  const PlannerOptions options;
  return AddWarmCapacity(snapshot, policy,
                         solver_detail::PlanGangsWhole(snapshot, InUsePlacementGroupZones(snapshot, policy),
                                                       [&](const Snapshot& s) {
                                                         return solver_detail::PlanWithDeadlines(s, policy, options,
                                                                                                 strategy);
                                                       }));
}

}  // namespace gpuscaler
