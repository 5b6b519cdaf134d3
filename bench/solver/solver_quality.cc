// Planner quality: on seeded small instances (whole-GPU and CPU-only shapes,
// spot and on-demand, per-class spot share, some with a hard budget), the
// planner's expected hourly cost against the proven optimum of the same
// model solved as a MIP with CBC, and against two greedy baselines of our
// own (named after the packers they imitate, not their code):
//  - Karpenter-like: units by size descending, first-fit onto open nodes as
//    long as some offering still holds the node's units, then each node gets
//    the cheapest offering that fits (spot preferred), no risk model.
//  - Cluster-Autoscaler-like: on-demand node groups, least-waste expander
//    (least unused CPU+memory share), FFD onto nodes of the chosen group.
// Costs are compared on one objective: node prices + expected interruption
// cost of work on spot (planner.h's risk model).
//
// A second family puts existing nodes beside the pending work: ready nodes of
// catalog offerings with some GPUs taken by running work, whose free room is
// already paid for (the MIP models each as a pre-paid node of fixed free
// capacity), and pending units pinned to GPU models, zones and a minimum GPU
// memory, so that some units can use only a little of that free room. It
// starts with a fixed instance: the only node with free L40S room in zone
// z-e, six zone-e L40S units and one unpinned 4-GPU unit; the cheap plan gives
// the room to the pinned units and puts the 4-GPU unit on a new L4 node.
//
// Last lines: quality: instances=N median_gap_pct=X p95_gap_pct=Y infeasible=Z
// karpenter_like_median_saving_pct=W, then quality_existing: instances=N
// median_gap_pct=X p95_gap_pct=Y max_gap_pct=M infeasible=Z
#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpuscaler/solver/planner.h"
#include "solver/quality_instances.h"

namespace gpuscaler::bench {
namespace {

double NodeCost(const Snapshot& s, const std::vector<const DemandUnit*>& units, const Offering& o) {
  double c = o.usd_per_hour;
  for (const auto* u : units) c += ExpectedInterruptionUsdPerHour(*u, o, TypeOf(s, o));
  return c;
}

struct MipResult {
  bool feasible = false;
  bool proven = false;
  double cost = 0;
  double bound = 0;  // best possible objective (lower bound) when not proven
};

// Nodes y[o][j] (binary, j < slots), units x[g][o][j] (integer): all units
// placed, per-node GPU/CPU/memory, per-class spot share, hard budget,
// symmetry y[o][j] >= y[o][j+1]; minimise prices + expected interruption cost.
MipResult SolveMip(const Instance& in, double time_limit_s, bool print_solution = false) {
  const Snapshot& s = in.snap;
  const Groups gr = GroupUnits(s);
  Cbc_Model* m = Cbc_newModel();
  Cbc_setLogLevel(m, 0);
  struct X {
    int col, g, o;
  };
  std::vector<std::vector<int>> ycol(s.offerings.size());
  std::vector<std::vector<std::vector<X>>> xs(s.offerings.size());
  int ncols = 0;
  for (int o : in.usable) {
    const Offering& off = s.offerings[o];
    const InstanceType& t = TypeOf(s, off);
    double gpu_need = 0, cpu_need = 0, mem_need = 0;
    int units = 0;
    for (size_t g = 0; g < gr.rep.size(); ++g)
      if (Compatible(s, *gr.rep[g], off)) {
        units += gr.count[g];
        gpu_need += gr.rep[g]->gpus * gr.count[g];
        cpu_need += double(gr.rep[g]->cpu_milli) * gr.count[g];
        mem_need += double(gr.rep[g]->memory_mib) * gr.count[g];
      }
    if (units == 0) continue;
    int slots = 1;
    if (t.gpu_count > 0) slots = std::max(slots, int(std::ceil(gpu_need / t.gpu_count)));
    slots = std::max(slots, int(std::ceil(cpu_need / (t.vcpus * 1000.0))));
    slots = std::max(slots, int(std::ceil(mem_need / double(t.memory_mib))));
    slots = std::min(slots, units);
    xs[o].resize(slots);
    for (int j = 0; j < slots; ++j) {
      Cbc_addCol(m, "", 0, 1, off.usd_per_hour, 1, 0, nullptr, nullptr);
      ycol[o].push_back(ncols++);
      for (size_t g = 0; g < gr.rep.size(); ++g) {
        if (!Compatible(s, *gr.rep[g], off)) continue;
        const double risk = ExpectedInterruptionUsdPerHour(*gr.rep[g], off, t);
        Cbc_addCol(m, "", 0, gr.count[g], risk, 1, 0, nullptr, nullptr);
        xs[o][j].push_back({ncols++, int(g), o});
      }
    }
  }
  // Existing nodes: pre-paid, so only their free room and the risk of what
  // lands on a spot one count.
  const std::vector<FreeRoom> rooms = FreeRooms(s);
  std::vector<std::vector<X>> ex(rooms.size());
  for (size_t e = 0; e < rooms.size(); ++e) {
    const Offering& off = s.nodes[e].offering;
    const InstanceType& t = TypeOf(s, off);
    for (size_t g = 0; g < gr.rep.size(); ++g) {
      if (!Compatible(s, *gr.rep[g], off)) continue;
      const double risk = ExpectedInterruptionUsdPerHour(*gr.rep[g], off, t);
      Cbc_addCol(m, "", 0, gr.count[g], risk, 1, 0, nullptr, nullptr);
      ex[e].push_back({ncols++, int(g), -1});
    }
  }
  std::vector<int> cols;
  std::vector<double> vals;
  auto row = [&](char sense, double rhs) {
    Cbc_addRow(m, "", int(cols.size()), cols.data(), vals.data(), sense, rhs);
    cols.clear();
    vals.clear();
  };
  for (size_t g = 0; g < gr.rep.size(); ++g) {
    for (int o : in.usable)
      for (const auto& slot : xs[o])
        for (const X& x : slot)
          if (x.g == int(g)) {
            cols.push_back(x.col);
            vals.push_back(1);
          }
    for (const auto& node : ex)
      for (const X& x : node)
        if (x.g == int(g)) {
          cols.push_back(x.col);
          vals.push_back(1);
        }
    if (cols.empty()) {
      Cbc_deleteModel(m);
      return {};
    }
    row('E', gr.count[g]);
  }
  for (int o : in.usable) {
    const InstanceType& t = TypeOf(s, s.offerings[o]);
    for (size_t j = 0; j < xs[o].size(); ++j) {
      auto cap = [&](auto need, double capacity) {
        for (const X& x : xs[o][j]) {
          const double v = need(*gr.rep[x.g]);
          if (v > 0) {
            cols.push_back(x.col);
            vals.push_back(v);
          }
        }
        cols.push_back(ycol[o][j]);
        vals.push_back(-capacity);
        row('L', 0);
      };
      cap([](const DemandUnit& u) { return double(u.gpus); }, t.gpu_count);
      cap([](const DemandUnit& u) { return double(u.cpu_milli); }, t.vcpus * 1000.0);
      cap([](const DemandUnit& u) { return double(u.memory_mib); }, double(t.memory_mib));
      // A unit asking for nothing cannot sit on an unopened node either.
      // x <= (units of g one node holds) * y: the LP relaxation's main cut.
      for (const X& x : xs[o][j]) {
        const DemandUnit& u = *gr.rep[x.g];
        int64_t k = gr.count[x.g];
        if (u.gpus > 0) k = std::min<int64_t>(k, t.gpu_count / u.gpus);
        if (u.cpu_milli > 0) k = std::min<int64_t>(k, int64_t(t.vcpus) * 1000 / u.cpu_milli);
        if (u.memory_mib > 0) k = std::min<int64_t>(k, t.memory_mib / u.memory_mib);
        cols = {x.col, ycol[o][j]};
        vals = {1, -double(k)};
        row('L', 0);
      }
      if (j + 1 < xs[o].size()) {
        cols = {ycol[o][j], ycol[o][j + 1]};
        vals = {1, -1};
        row('G', 0);
      }
    }
  }
  for (size_t e = 0; e < rooms.size(); ++e) {
    auto cap = [&](auto need, double capacity) {
      for (const X& x : ex[e]) {
        const double v = need(*gr.rep[x.g]);
        if (v > 0) {
          cols.push_back(x.col);
          vals.push_back(v);
        }
      }
      if (!cols.empty()) row('L', capacity);
    };
    cap([](const DemandUnit& u) { return double(u.gpus); }, rooms[e].gpus);
    cap([](const DemandUnit& u) { return double(u.cpu_milli); }, double(rooms[e].cpu_milli));
    cap([](const DemandUnit& u) { return double(u.memory_mib); }, double(rooms[e].memory_mib));
  }
  for (const auto& c : in.policy.classes) {
    if (c.max_spot_share >= 1) continue;
    double total = 0;
    for (size_t g = 0; g < gr.rep.size(); ++g)
      if (gr.rep[g]->workload_class == c.name) total += gr.rep[g]->gpus * gr.count[g];
    for (int o : in.usable) {
      if (s.offerings[o].capacity_type != CapacityType::kSpot) continue;
      for (const auto& slot : xs[o])
        for (const X& x : slot)
          if (gr.rep[x.g]->workload_class == c.name && gr.rep[x.g]->gpus > 0) {
            cols.push_back(x.col);
            vals.push_back(gr.rep[x.g]->gpus);
          }
    }
    for (size_t e = 0; e < rooms.size(); ++e) {
      if (s.nodes[e].offering.capacity_type != CapacityType::kSpot) continue;
      for (const X& x : ex[e])
        if (gr.rep[x.g]->workload_class == c.name && gr.rep[x.g]->gpus > 0) {
          cols.push_back(x.col);
          vals.push_back(gr.rep[x.g]->gpus);
        }
    }
    if (!cols.empty()) row('L', c.max_spot_share * total + 1e-9);
  }
  if (in.policy.budget.global.hourly_usd) {
    for (int o : in.usable)
      for (int y : ycol[o]) {
        cols.push_back(y);
        vals.push_back(s.offerings[o].usd_per_hour);
      }
    row('L', *in.policy.budget.global.hourly_usd);
  }
  Cbc_setMaximumSeconds(m, time_limit_s);
  Cbc_setParameter(m, "twomir", "off");  // CBC 2.10 asserts in two-MIR cuts on some of these models
  Cbc_setAllowableFractionGap(m, 1e-7);
  Cbc_setAllowableGap(m, 1e-7);
  Cbc_solve(m);
  MipResult r;
  r.proven = Cbc_isProvenOptimal(m) != 0;
  r.feasible = r.proven || (!Cbc_isProvenInfeasible(m) && Cbc_getColSolution(m) != nullptr && Cbc_getObjValue(m) < 1e20);
  if (Cbc_isProvenInfeasible(m)) r.feasible = false;
  r.cost = Cbc_getObjValue(m);
  r.bound = Cbc_getBestPossibleObjValue(m);
  if (print_solution && Cbc_getColSolution(m) != nullptr) {
    const double* v = Cbc_getColSolution(m);
    for (int o : in.usable)
      for (size_t j = 0; j < xs[o].size(); ++j) {
        if (v[ycol[o][j]] < 0.5) continue;
        std::printf("  MIP new %s %s %s:", s.offerings[o].instance_type.c_str(), s.offerings[o].zone.c_str(),
                    std::string(ToString(s.offerings[o].capacity_type)).c_str());
        for (const X& x : xs[o][j])
          if (v[x.col] > 0.5) std::printf(" s%d x%.0f", x.g, v[x.col]);
        std::printf("\n");
      }
    for (size_t e = 0; e < ex.size(); ++e) {
      std::printf("  MIP existing %s:", s.nodes[e].id.c_str());
      for (const X& x : ex[e])
        if (v[x.col] > 0.5) std::printf(" s%d x%.0f", x.g, v[x.col]);
      std::printf("\n");
    }
  }
  Cbc_deleteModel(m);
  return r;
}

// New nodes' prices and risk, plus the risk of pending work put on existing
// spot nodes (their price is already paid).
double PlanCost(const Snapshot& s, const Plan& p) {
  double c = 0;
  for (const auto& l : p.launches) c += l.usd_per_hour + l.expected_interruption_usd_per_hour;
  for (const Placement& pl : p.placements) {
    if (pl.node_id.empty()) continue;
    const Node* node = nullptr;
    for (const Node& n : s.nodes)
      if (n.id == pl.node_id) node = &n;
    const DemandUnit* unit = nullptr;
    for (const DemandUnit& u : s.pending)
      if (u.id == pl.unit_id) unit = &u;
    if (node != nullptr && unit != nullptr)
      c += ExpectedInterruptionUsdPerHour(*unit, node->offering, TypeOf(s, node->offering));
  }
  return c;
}

std::vector<const DemandUnit*> SortedBySize(const Snapshot& s) {
  std::vector<const DemandUnit*> v;
  for (const auto& u : s.pending) v.push_back(&u);
  std::stable_sort(v.begin(), v.end(), [](const DemandUnit* a, const DemandUnit* b) {
    if (a->gpus != b->gpus) return a->gpus > b->gpus;
    if (a->cpu_milli != b->cpu_milli) return a->cpu_milli > b->cpu_milli;
    return a->memory_mib > b->memory_mib;
  });
  return v;
}

// Karpenter-like: first-fit onto open nodes while some offering holds them all;
// each node then takes the cheapest fitting offering, spot first.
double KarpenterLike(const Instance& in, bool* all_placed) {
  const Snapshot& s = in.snap;
  std::vector<std::vector<const DemandUnit*>> nodes;
  *all_placed = true;
  auto any_fits = [&](const std::vector<const DemandUnit*>& units) {
    for (int o : in.usable)
      if (Fits(s, units, s.offerings[o])) return true;
    return false;
  };
  for (const DemandUnit* u : SortedBySize(s)) {
    bool placed = false;
    for (auto& n : nodes) {
      n.push_back(u);
      if (any_fits(n)) {
        placed = true;
        break;
      }
      n.pop_back();
    }
    if (!placed) {
      if (any_fits({u})) nodes.push_back({u});
      else *all_placed = false;
    }
  }
  double total = 0;
  for (const auto& n : nodes) {
    int best = -1;
    for (bool spot : {true, false}) {
      for (int o : in.usable) {
        const Offering& off = s.offerings[o];
        if ((off.capacity_type == CapacityType::kSpot) != spot || !Fits(s, n, off)) continue;
        if (best < 0 || off.usd_per_hour < s.offerings[best].usd_per_hour) best = o;
      }
      if (best >= 0) break;
    }
    total += NodeCost(s, n, s.offerings[best]);
  }
  return total;
}

// Cluster-Autoscaler-like: on-demand node groups; least waste of CPU and memory.
double ClusterAutoscalerLike(const Instance& in, bool* all_placed) {
  const Snapshot& s = in.snap;
  std::vector<const DemandUnit*> left = SortedBySize(s);
  double total = 0;
  while (!left.empty()) {
    double best_waste = 1e18;
    int best_o = -1;
    std::vector<std::vector<const DemandUnit*>> best_nodes;
    for (int o : in.usable) {
      const Offering& off = s.offerings[o];
      if (off.capacity_type != CapacityType::kOnDemand) continue;
      std::vector<std::vector<const DemandUnit*>> nodes;
      for (const DemandUnit* u : left) {
        if (!Fits(s, {u}, off)) continue;
        bool placed = false;
        for (auto& n : nodes) {
          n.push_back(u);
          if (Fits(s, n, off)) {
            placed = true;
            break;
          }
          n.pop_back();
        }
        if (!placed) nodes.push_back({u});
      }
      if (nodes.empty()) continue;
      const InstanceType& t = TypeOf(s, off);
      double cpu = 0, mem = 0;
      for (const auto& n : nodes)
        for (const auto* u : n) {
          cpu += double(u->cpu_milli);
          mem += double(u->memory_mib);
        }
      const double cap_cpu = double(nodes.size()) * t.vcpus * 1000.0, cap_mem = double(nodes.size()) * double(t.memory_mib);
      const double waste = ((cap_cpu - cpu) / cap_cpu + (cap_mem - mem) / cap_mem) / 2;
      if (waste < best_waste - 1e-12) {
        best_waste = waste;
        best_o = o;
        best_nodes = nodes;
      }
    }
    if (best_o < 0) break;
    std::vector<const DemandUnit*> rest;
    for (const DemandUnit* u : left) {
      bool used = false;
      for (const auto& n : best_nodes) used = used || std::find(n.begin(), n.end(), u) != n.end();
      if (!used) rest.push_back(u);
    }
    for (const auto& n : best_nodes) total += NodeCost(s, n, s.offerings[best_o]);
    left = std::move(rest);
  }
  *all_placed = left.empty();
  return total;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

// Prints one instance of the existing-nodes family, the planner's plan and
// the MIP's solution: what to look at when an instance misses the bar.
void PrintExistingInstance(const Instance& in, double time_limit_s) {
  const Snapshot& s = in.snap;
  for (const Node& n : s.nodes) {
    const InstanceType& t = TypeOf(s, n.offering);
    std::printf("node %s: %s %s %s $%.3f, %zu of %d GPUs used\n", n.id.c_str(), t.name.c_str(), n.offering.zone.c_str(),
                std::string(ToString(n.offering.capacity_type)).c_str(), n.offering.usd_per_hour, n.running.size(),
                t.gpu_count);
  }
  const Groups gr = GroupUnits(s);
  for (size_t g = 0; g < gr.rep.size(); ++g) {
    const DemandUnit& u = *gr.rep[g];
    std::string pins;
    for (const auto& m : u.gpu_models) pins += " model=" + m;
    for (const auto& z : u.zones) pins += " zone=" + z;
    if (u.min_gpu_memory_mib) pins += " min_gpu_mem=" + std::to_string(u.min_gpu_memory_mib);
    std::printf("s%zu: %d x %d GPU %.0f vCPU %lld MiB class %s%s%s\n", g, gr.count[g], u.gpus, u.cpu_milli / 1000.0,
                static_cast<long long>(u.memory_mib), u.workload_class.c_str(), u.interruptible ? "" : " on-demand only",
                pins.c_str());
  }
  int available = 0;
  for (const auto& o : s.offerings) available += o.available;
  std::printf("offerings available: %d of %zu\n", available, s.offerings.size());
  const Plan plan = MakePlan(s, in.policy);
  for (const auto& l : plan.launches) std::printf("  planner: %s\n", l.reason.c_str());
  std::map<std::string, int> on_node;
  for (const auto& p : plan.placements)
    if (!p.node_id.empty()) on_node[p.node_id + " <- " + p.unit_id.substr(0, p.unit_id.find('-'))]++;
  for (const auto& [k, n] : on_node) std::printf("  planner existing %s x%d\n", k.c_str(), n);
  std::printf("  planner cost %.3f\n", PlanCost(s, plan));
  const MipResult mip = SolveMip(in, time_limit_s, true);
  std::printf("  MIP cost %.3f (%s)\n", mip.cost, mip.proven ? "proven" : "not proven");
}

// The existing-nodes family: the fixed zone-e L40S case, then seeds
// 5000 + first ... Every instance whose gap passes 1 % is printed.
void RunExistingFamily(int instances, double time_limit_s, int first) {
  if (instances <= 0) return;
  std::vector<double> gaps;
  int infeasible = 0, mip_infeasible = 0, unproven = 0, solved = 0;
  double planner_ms = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = -1; i < instances; ++i) {
    const Instance in = i < 0 ? FreeL40sRoomInZoneE() : MakeExistingInstance(uint32_t(5000 + first + i));
    const std::string name = i < 0 ? "fixed zone-e L40S" : "existing " + std::to_string(first + i);
    const MipResult mip = SolveMip(in, time_limit_s);
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = MakePlan(in.snap, in.policy);
    planner_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double cost = PlanCost(in.snap, plan);
    if (!mip.feasible) {
      ++mip_infeasible;
      continue;
    }
    ++solved;
    if (!plan.unplaced.empty()) {
      ++infeasible;
      std::printf("%s: planner left %zu units unplaced (%s) where the MIP places all\n", name.c_str(), plan.unplaced.size(),
                  std::string(ToString(plan.unplaced[0].reason)).c_str());
      continue;
    }
    if (!mip.proven) {
      ++unproven;
      continue;
    }
    const double gap = mip.cost > 1e-9 ? std::max(0.0, 100.0 * (cost - mip.cost) / mip.cost) : (cost > 1e-9 ? 100.0 : 0.0);
    gaps.push_back(gap);
    if (gap > 1 || i < 0)
      std::printf("%s: gap %.2f %% (planner %.3f, optimum %.3f)\n", name.c_str(), gap, cost, mip.cost);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("existing nodes and pins: MIP-feasible instances: %d (MIP infeasible: %d, not proven optimal in %.1f s: %d)\n",
              solved, mip_infeasible, time_limit_s, unproven);
  std::printf("existing nodes and pins: gap to optimum over %zu proven instances: median %.3f %%, p95 %.3f %%, max %.3f %%\n",
              gaps.size(), Percentile(gaps, 0.5), Percentile(gaps, 0.95), Percentile(gaps, 1.0));
  std::printf("existing nodes and pins: planner time %.3f ms per instance; total run %.1f s\n",
              planner_ms / (instances + 1), secs);
  std::printf("quality_existing: instances=%d median_gap_pct=%.3f p95_gap_pct=%.3f max_gap_pct=%.3f infeasible=%d\n",
              solved, Percentile(gaps, 0.5), Percentile(gaps, 0.95), Percentile(gaps, 1.0), infeasible);
}

}  // namespace
}  // namespace gpuscaler::bench

int main(int argc, char** argv) {
  using namespace gpuscaler;
  using namespace gpuscaler::bench;
  int instances = 200;
  double time_limit_s = 0.5;
  if (argc > 1) instances = std::atoi(argv[1]);
  if (argc > 2) time_limit_s = std::atof(argv[2]);
  const int first = argc > 3 ? std::atoi(argv[3]) : 0;
  const int existing_instances = argc > 4 ? std::atoi(argv[4]) : 200;
  if (argc > 5) {
    const int which = std::atoi(argv[5]);
    PrintExistingInstance(which < 0 ? FreeL40sRoomInZoneE() : MakeExistingInstance(uint32_t(5000 + which)), time_limit_s);
    return 0;
  }
  std::vector<double> gaps, karp, ca, gaps_unproven_incumbent, gaps_unproven_bound;
  int infeasible = 0, mip_infeasible = 0, unproven = 0, solved = 0;
  double planner_ms = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = first; i < first + instances; ++i) {
    Instance in = MakeInstance(uint32_t(1000 + i));
    bool ca_all = false, karp_all = false;
    const double ca_cost = ClusterAutoscalerLike(in, &ca_all);
    // A quarter of the instances get a hard budget below the on-demand packer's bill.
    if (i % 4 == 3 && ca_all) in.policy.budget.global.hourly_usd = 0.8 * ca_cost;
    const double karp_cost = KarpenterLike(in, &karp_all);
    std::fflush(stdout);
    const MipResult mip = SolveMip(in, time_limit_s);
    const auto t0 = std::chrono::steady_clock::now();
    const Plan plan = MakePlan(in.snap, in.policy);
    planner_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double cost = PlanCost(in.snap, plan);
    if (!mip.feasible) {
      ++mip_infeasible;
      continue;
    }
    ++solved;
    if (!plan.unplaced.empty()) {
      ++infeasible;
      std::printf("instance %d: planner left %zu units unplaced (%s) where the MIP places all\n", i, plan.unplaced.size(),
                  std::string(ToString(plan.unplaced[0].reason)).c_str());
      continue;
    }
    if (!mip.proven) ++unproven;
    const double gap = mip.cost > 0 ? std::max(0.0, 100.0 * (cost - mip.cost) / mip.cost) : 0;
    if (mip.proven) gaps.push_back(gap);
    if (!mip.proven) {
      gaps_unproven_incumbent.push_back(100.0 * (cost - mip.cost) / mip.cost);
      if (mip.bound > 0) gaps_unproven_bound.push_back(100.0 * (cost - mip.bound) / mip.bound);
    }
    if (karp_all && karp_cost > 0 && !in.policy.budget.global.hourly_usd) karp.push_back(100.0 * (karp_cost - cost) / karp_cost);
    if (ca_all && ca_cost > 0 && !in.policy.budget.global.hourly_usd) ca.push_back(100.0 * (ca_cost - cost) / ca_cost);
    if (gap > 3 && mip.proven) std::printf("instance %d: gap %.2f %% (planner %.3f, optimum %.3f)\n", i, gap, cost, mip.cost);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("MIP-feasible instances: %d (MIP infeasible: %d, not proven optimal in %.1f s: %d)\n", solved,
              mip_infeasible, time_limit_s, unproven);
  std::printf("gap to optimum over %zu proven instances: median %.3f %%, p95 %.3f %%, max %.3f %%\n", gaps.size(),
              Percentile(gaps, 0.5), Percentile(gaps, 0.95), Percentile(gaps, 1.0));
  std::printf("unproven instances (%zu): planner vs CBC incumbent median %.3f %% (negative: planner better), "
              "vs CBC lower bound median %.3f %% p95 %.3f %%\n",
              gaps_unproven_incumbent.size(), Percentile(gaps_unproven_incumbent, 0.5),
              Percentile(gaps_unproven_bound, 0.5), Percentile(gaps_unproven_bound, 0.95));
  std::printf("saving vs Karpenter-like (no budget, %zu instances): median %.1f %%, p5 %.1f %%\n", karp.size(),
              Percentile(karp, 0.5), Percentile(karp, 0.05));
  std::printf("saving vs Cluster-Autoscaler-like (no budget, %zu instances): median %.1f %%\n", ca.size(),
              Percentile(ca, 0.5));
  std::printf("planner time: %.3f ms per instance; total run %.1f s\n", instances > 0 ? planner_ms / instances : 0.0,
              secs);
  std::printf("quality: instances=%d median_gap_pct=%.3f p95_gap_pct=%.3f infeasible=%d karpenter_like_median_saving_pct=%.1f\n",
              solved, Percentile(gaps, 0.5), Percentile(gaps, 0.95), infeasible, Percentile(karp, 0.5));
  RunExistingFamily(existing_instances, time_limit_s, first);
  return 0;
}
