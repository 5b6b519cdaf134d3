#include "gpuscaler/solver/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuscaler/model/gpu.h"

namespace gpuscaler {

namespace {

constexpr double kEps = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kNoLimit = std::numeric_limits<int>::max();

double MigWeight(const std::string& profile) {
  // "3g.40gb" takes 3 of 7 compute slices: 3/7 of a GPU for spot share and value.
  int n = 0;
  size_t i = 0;
  while (i < profile.size() && profile[i] >= '0' && profile[i] <= '9') n = n * 10 + (profile[i++] - '0');
  if (n <= 0 || n > kMigComputeSlices) n = 1;
  return static_cast<double>(n) / kMigComputeSlices;
}

double GpuWeight(const DemandUnit& u) {
  if (u.gpus > 0) return u.gpus;
  if (u.gpu_milli > 0) return u.gpu_milli / 1000.0;
  if (!u.mig_profile.empty()) return MigWeight(u.mig_profile);
  return 0;
}

double ShareOfNode(double gpu_w, int64_t cpu_milli, const InstanceType& t) {
  if (gpu_w > 0 && t.gpu_count > 0) return std::min(1.0, gpu_w / t.gpu_count);
  if (t.vcpus > 0) return std::min(1.0, static_cast<double>(cpu_milli) / (t.vcpus * 1000.0));
  return 0;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Usd(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "$%.2f", v);
  return buf;
}

std::string Fixed(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

bool LabelSaysDoNotDisrupt(const std::map<std::string, std::string>& labels, const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    auto it = labels.find(k);
    if (it != labels.end() && it->second != "false") return true;
  }
  return false;
}

struct Shape {
  int gpus = 0;
  int milli = 0;
  bool mig = false;
  int64_t cpu = 0;
  int64_t mem = 0;
};

Shape ShapeOf(const DemandUnit& u) {
  Shape s;
  s.gpus = std::max(0, u.gpus);
  s.milli = s.gpus > 0 ? 0 : std::clamp(u.gpu_milli, 0, 1000);
  s.mig = s.gpus == 0 && s.milli == 0 && !u.mig_profile.empty();
  s.cpu = std::max<int64_t>(0, u.cpu_milli);
  s.mem = std::max<int64_t>(0, u.memory_mib);
  return s;
}

struct GpuPart {
  bool mig = false;
  int used_milli = 0;
  MigLayout layout;
};

// Free capacity of one node (or `mult` identical new nodes) and what the plan
// puts on it.
struct Bin {
  int option = -1;  // Option index (new nodes)
  int node = -1;    // snapshot node index (existing nodes)
  int type = -1;
  int pool = -1;
  int zone = -1;
  bool spot = false;
  double price = 0;
  double od_price = 0;
  double ih = 0;
  const GpuModel* gpu = nullptr;
  int gpu_count = 0;
  int64_t cap_cpu = 0;
  int64_t free_cpu = 0;
  int64_t free_mem = 0;
  int free_whole = 0;
  int mult = 1;
  bool accepts = true;
  bool removed = false;
  bool receiver = false;
  std::vector<GpuPart> parts;
  std::vector<std::pair<int, int>> content;  // (group, units per node)
  std::vector<std::pair<int, int>> moved;    // (node, running index) moved here
  double risk = 0;                           // expected interruption usd/h per node, plan's work
};

// Places up to `max` units of shape `s` on `b`; returns how many fit.
int Take(Bin& b, const Shape& s, int mig_idx, int max) {
  if (max <= 0) return 0;
  int64_t lim = max;
  if (s.cpu > 0) lim = std::min<int64_t>(lim, std::max<int64_t>(0, b.free_cpu) / s.cpu);
  if (s.mem > 0) lim = std::min<int64_t>(lim, std::max<int64_t>(0, b.free_mem) / s.mem);
  if (lim <= 0) return 0;
  int64_t placed = 0;
  if (s.gpus > 0) {
    lim = std::min<int64_t>(lim, std::max(0, b.free_whole) / s.gpus);
    b.free_whole -= static_cast<int>(lim) * s.gpus;
    placed = lim;
  } else if (s.milli > 0) {
    for (auto& p : b.parts) {
      if (placed >= lim) break;
      if (p.mig) continue;
      const int64_t t = std::min<int64_t>((1000 - p.used_milli) / s.milli, lim - placed);
      p.used_milli += static_cast<int>(t) * s.milli;
      placed += t;
    }
    const int per = 1000 / s.milli;
    while (placed < lim && b.free_whole > 0) {
      GpuPart p;
      const int64_t t = std::min<int64_t>(per, lim - placed);
      p.used_milli = static_cast<int>(t) * s.milli;
      b.parts.push_back(std::move(p));
      --b.free_whole;
      placed += t;
    }
  } else if (s.mig) {
    if (mig_idx < 0 || b.gpu == nullptr) return 0;
    for (auto& p : b.parts) {
      if (placed >= lim) break;
      if (!p.mig) continue;
      while (placed < lim && p.layout.TryAdd(*b.gpu, mig_idx)) ++placed;
    }
    while (placed < lim && b.free_whole > 0) {
      GpuPart p;
      p.mig = true;
      int64_t t = 0;
      while (placed + t < lim && p.layout.TryAdd(*b.gpu, mig_idx)) ++t;
      if (t == 0) break;
      placed += t;
      --b.free_whole;
      b.parts.push_back(std::move(p));
    }
  } else {
    placed = lim;
  }
  b.free_cpu -= placed * s.cpu;
  b.free_mem -= placed * s.mem;
  return static_cast<int>(placed);
}

struct Option {
  int offering = -1;
  int pool = -1;
  int type = -1;
  int zone = -1;
  bool spot = false;
  double price = 0;
  double od = 0;
  double ih = 0;
  bool usable = true;
  bool unavailable = false;
};

struct Group {
  std::vector<int> units;  // pending indices, snapshot order
  const DemandUnit* rep = nullptr;
  int cls = -1;
  Shape shape;
  double gpu_w = 0;
  double loss_h = 0;
  bool interruptible = true;
  int priority = 0;
  std::vector<int> fit_by_type;  // units per empty node; 0: cannot run there
  std::vector<int> mig_by_type;  // MIG profile index per type, -1 none
  std::vector<char> pool_ok;
  std::vector<char> zone_ok;
  std::vector<char> type_pin_ok;
  std::vector<int> cands;       // usable options with fit > 0
  std::vector<char> cand_mask;  // by option
  double lb = 0;                // cheapest expected cost per unit
  bool has_static_reason = false;
  UnplacedReason static_reason = UnplacedReason::kNoOfferingFits;
  std::string detail;
};

struct ClassInfo {
  std::string name;
  const WorkloadClassPolicy* pol = nullptr;
  double spot_allow = kInf;
  bool zone_limited = false;
  std::vector<double> zone_allow;
  bool blocked = false;
};

struct PoolInfo {
  NodePoolPolicy pol;
  int count = 0;
  double cost = 0;
  double budget = kInf;
  bool budget_hard = true;
  int disrupt_allow = 0;
};

// The mutable part of a scale-up attempt.
struct State {
  std::vector<int> rem;
  std::vector<Bin> bins;
  std::vector<double> spot_allow;
  std::vector<std::vector<double>> zone_allow;
  std::vector<int> pool_count;
  std::vector<double> pool_cost;
  double cost = 0;
  int added = 0;
  std::vector<int> blocked;  // per group: UnplacedReason as int, -1 none
  std::vector<int> budget_cut;  // per group: units left out by the budget prefix
};

enum Block { kBlockNone = 0, kBlockBudget, kBlockTick, kBlockPoolMax, kBlockSpot, kBlockZone };

class Planner {
 public:
  Planner(const Snapshot& s, const Policy& p, const PlannerOptions& o) : snap_(s), policy_(p), opts_(o) {}

  Plan Run();

 private:
  void BuildIndex();
  void BuildPools();
  void BuildOptions();
  void BuildClasses();
  void SetAllowances(const std::vector<double>& totals);
  void GroupUnits();
  void BuildGroups();
  void BuildExisting();
  void BuildStaticReasons();

  bool PoolAllowsOffering(const NodePoolPolicy& p, const Offering& o, const InstanceType& t) const;
  int FitOnEmpty(const Group& g, int type) const;
  int MigIndex(const DemandUnit& u, const InstanceType& t) const;
  bool TypeCompatible(const DemandUnit& u, const InstanceType& t, int* mig_idx) const;
  bool UnitAllowed(const DemandUnit& u, int cls, int pool, const Offering& off, int type, int zone, int* mig_idx) const;

  void InitBin(Bin& b, int option) const;
  double Risk(const Group& g, const Bin& b) const;
  int Limit(const Group& g, const Bin& b, const State& st) const;
  void Consume(const Group& g, const Bin& b, double count, State& st) const;
  int MaxOpen(const Option& o, const State& st) const;
  int BlockOf(const Group& g, int option, const State& st) const;

  void PlaceOnExisting(State& st);
  void Greedy(State& st, const std::vector<int>& order) const;
  void Classify(State& st) const;
  void LocalSearch(State& st) const;
  bool Refill(Bin& b, int option, const std::vector<std::pair<int, int>>& content) const;
  double BinCost(const Bin& b) const { return b.price + b.risk; }
  double TotalCost(const State& st) const;
  int Unplaced(const State& st) const;
  State ScaleUp(const State& base);
  void MinNodes(State& st);
  void MoveAllowance(int cls, double w, const Bin& from, const Bin& to, std::vector<double>& spot,
                     std::vector<std::vector<double>>& zone) const;
  void Consolidate(State& st, Plan& plan, std::vector<TerminationAction>& terms);
  void Assemble(State& st, Plan& plan);
  std::string Describe(const Offering& o) const;

  const Snapshot& snap_;
  const Policy& policy_;
  PlannerOptions opts_;

  std::unordered_map<std::string, const GpuModel*> gpu_by_name_;
  std::unordered_map<std::string, int> type_by_name_;
  std::map<std::string, int> zone_index_;
  std::vector<std::string> zone_names_;
  std::vector<PoolInfo> pools_;
  std::vector<Option> options_;
  std::vector<int> options_by_price_;
  std::vector<ClassInfo> classes_;
  std::map<std::string, int> class_index_;
  std::vector<Group> groups_;
  std::vector<int> unit_group_;
  std::vector<std::vector<int>> opt_groups_;
  std::vector<Bin> existing_;            // by node index
  std::vector<int> existing_order_;      // accepting bins, placement order
  std::vector<std::vector<double>> existing_zone_gpu_;  // class x zone
  std::vector<double> class_total_gpu_;
  std::vector<double> class_spot_gpu_;
  std::vector<double> max_unit_;
  double global_budget_ = kInf;
  bool global_budget_hard_ = true;
  bool any_hard_budget_ = false;
  double base_cost_ = 0;
  std::vector<std::string> notes_;
};

void Planner::BuildIndex() {
  for (const auto& m : snap_.gpu_models) {
    gpu_by_name_.emplace(m.name, &m);
    if (!m.short_name.empty()) gpu_by_name_.emplace(m.short_name, &m);
  }
  for (size_t i = 0; i < snap_.instance_types.size(); ++i) type_by_name_.emplace(snap_.instance_types[i].name, int(i));
  for (const auto& o : snap_.offerings) zone_index_.emplace(o.zone, 0);
  for (const auto& n : snap_.nodes) zone_index_.emplace(n.offering.zone, 0);
  for (auto& [name, idx] : zone_index_) {
    idx = int(zone_names_.size());
    zone_names_.push_back(name);
  }
}

void Planner::BuildPools() {
  if (policy_.pools.empty()) {
    PoolInfo p;
    p.pol.name = "default";
    p.pol.max_nodes = kNoLimit;
    pools_.push_back(p);
  } else {
    for (const auto& pp : policy_.pools) {
      PoolInfo p;
      p.pol = pp;
      pools_.push_back(p);
    }
  }
  auto allowance = [&](const BudgetCap& cap, double* out, bool* hard) {
    double a = kInf;
    if (cap.hourly_usd) a = std::min(a, *cap.hourly_usd);
    if (cap.monthly_usd && snap_.hours_left_in_month > 0) {
      a = std::min(a, std::max(0.0, (*cap.monthly_usd - snap_.month_to_date_usd) / snap_.hours_left_in_month));
    }
    *out = a;
    *hard = cap.hard;
  };
  allowance(policy_.budget.global, &global_budget_, &global_budget_hard_);
  any_hard_budget_ = global_budget_hard_ && global_budget_ < kInf;
  for (auto& p : pools_) {
    auto it = policy_.budget.per_pool.find(p.pol.name);
    if (it != policy_.budget.per_pool.end()) allowance(it->second, &p.budget, &p.budget_hard);
    if (p.budget_hard && p.budget < kInf) any_hard_budget_ = true;
    auto d = snap_.recently_disrupted.find(p.pol.name);
    p.disrupt_allow = policy_.disruption.max_disrupted_per_interval - (d == snap_.recently_disrupted.end() ? 0 : d->second);
  }
  for (const auto& n : snap_.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    base_cost_ += n.offering.usd_per_hour;
    for (auto& p : pools_) {
      if (p.pol.name == n.pool) {
        p.count++;
        p.cost += n.offering.usd_per_hour;
      }
    }
  }
}

bool Planner::PoolAllowsOffering(const NodePoolPolicy& p, const Offering& o, const InstanceType& t) const {
  if (p.instance_types.empty() && p.families.empty()) {
    if (t.gpu_count <= 0) return false;
  } else if (!Contains(p.instance_types, t.name) && !Contains(p.families, t.family)) {
    return false;
  }
  if (!p.gpu_models.empty()) {
    auto it = gpu_by_name_.find(t.gpu_model);
    bool ok = Contains(p.gpu_models, t.gpu_model);
    if (!ok && it != gpu_by_name_.end()) ok = Contains(p.gpu_models, it->second->name) || Contains(p.gpu_models, it->second->short_name);
    if (!ok) return false;
  }
  if (!p.regions.empty() && !Contains(p.regions, o.region)) return false;
  if (!p.zones.empty() && !Contains(p.zones, o.zone)) return false;
  if (std::find(p.capacity_types.begin(), p.capacity_types.end(), o.capacity_type) == p.capacity_types.end()) return false;
  return true;
}

void Planner::BuildOptions() {
  const double frac = policy_.spot.max_price_fraction_of_on_demand;
  for (size_t p = 0; p < pools_.size(); ++p) {
    for (size_t i = 0; i < snap_.offerings.size(); ++i) {
      const Offering& o = snap_.offerings[i];
      auto t = type_by_name_.find(o.instance_type);
      if (t == type_by_name_.end()) continue;
      if (!PoolAllowsOffering(pools_[p].pol, o, snap_.instance_types[t->second])) continue;
      Option op;
      op.offering = int(i);
      op.pool = int(p);
      op.type = t->second;
      op.zone = zone_index_.at(o.zone);
      op.spot = o.capacity_type == CapacityType::kSpot;
      op.price = o.usd_per_hour;
      op.od = o.on_demand_usd_per_hour > 0 ? o.on_demand_usd_per_hour : o.usd_per_hour;
      op.ih = op.spot ? std::max(0.0, o.interruptions_per_hour) : 0;
      op.unavailable = !o.available;
      bool ceiling = op.spot && (o.usd_per_hour > frac * op.od + kEps || op.ih > policy_.spot.max_interruptions_per_hour + kEps);
      op.usable = o.available && !ceiling;
      options_.push_back(op);
    }
  }
  options_by_price_.resize(options_.size());
  for (size_t i = 0; i < options_.size(); ++i) options_by_price_[i] = int(i);
  std::stable_sort(options_by_price_.begin(), options_by_price_.end(),
                   [&](int a, int b) { return options_[a].price < options_[b].price; });
}

void Planner::BuildClasses() {
  auto add = [&](const std::string& name) {
    auto [it, inserted] = class_index_.emplace(name, int(classes_.size()));
    if (inserted) {
      ClassInfo c;
      c.name = name;
      c.pol = policy_.FindClass(name);
      classes_.push_back(c);
    }
    return it->second;
  };
  for (const Group& g : groups_) add(g.rep->workload_class);
  for (const auto& n : snap_.nodes)
    for (const auto& u : n.running) add(u.workload_class);
  for (const auto& b : snap_.scale_down_blocked_classes) classes_[add(b)].blocked = true;
  const size_t nc = classes_.size();
  class_total_gpu_.assign(nc, 0);
  class_spot_gpu_.assign(nc, 0);
  existing_zone_gpu_.assign(nc, std::vector<double>(zone_names_.size(), 0));
  for (const auto& n : snap_.nodes) {
    if (n.state == NodeState::kTerminating) continue;
    const int z = zone_index_.at(n.offering.zone);
    for (const auto& u : n.running) {
      const int c = class_index_.at(u.workload_class);
      const double w = GpuWeight(u);
      class_total_gpu_[c] += w;
      if (n.offering.capacity_type == CapacityType::kSpot) class_spot_gpu_[c] += w;
      existing_zone_gpu_[c][z] += w;
    }
  }
  max_unit_.assign(nc, 0);
  for (const Group& g : groups_) {
    const int c = class_index_.at(g.rep->workload_class);
    class_total_gpu_[c] += GpuWeight(*g.rep) * double(g.units.size());
    max_unit_[c] = std::max(max_unit_[c], GpuWeight(*g.rep));
  }
  SetAllowances(class_total_gpu_);
}

void Planner::SetAllowances(const std::vector<double>& totals) {
  for (size_t c = 0; c < classes_.size(); ++c) {
    ClassInfo& ci = classes_[c];
    const double spot_share = ci.pol ? std::clamp(ci.pol->max_spot_share, 0.0, 1.0) : 1.0;
    ci.spot_allow = spot_share < 1.0 - kEps ? spot_share * totals[c] - class_spot_gpu_[c] : kInf;
    double zone_share = ci.pol ? std::clamp(ci.pol->max_zone_share, 0.0, 1.0) : 1.0;
    const int min_zones = ci.pol ? ci.pol->min_zones : 1;
    if (min_zones > 1) zone_share = std::min(zone_share, 1.0 / min_zones);
    ci.zone_limited = zone_share < 1.0 - kEps;
    ci.zone_allow.clear();
    if (ci.zone_limited) {
      const double cap = std::max(zone_share * totals[c], max_unit_[c]);
      ci.zone_allow.resize(zone_names_.size());
      for (size_t z = 0; z < zone_names_.size(); ++z) ci.zone_allow[z] = cap - existing_zone_gpu_[c][z];
    }
  }
}

int Planner::MigIndex(const DemandUnit& u, const InstanceType& t) const {
  auto it = gpu_by_name_.find(t.gpu_model);
  if (it == gpu_by_name_.end()) return -1;
  const auto& profiles = it->second->mig_profiles;
  for (size_t i = 0; i < profiles.size(); ++i)
    if (profiles[i].name == u.mig_profile) return int(i);
  return -1;
}

bool Planner::TypeCompatible(const DemandUnit& u, const InstanceType& t, int* mig_idx) const {
  *mig_idx = -1;
  const Shape s = ShapeOf(u);
  if (s.gpus == 0 && s.milli == 0 && !s.mig) return true;  // CPU-only work runs anywhere
  if (t.gpu_count <= 0) return false;
  auto it = gpu_by_name_.find(t.gpu_model);
  const GpuModel* m = it == gpu_by_name_.end() ? nullptr : it->second;
  if (!u.gpu_models.empty()) {
    bool ok = Contains(u.gpu_models, t.gpu_model);
    if (!ok && m) ok = Contains(u.gpu_models, m->name) || Contains(u.gpu_models, m->short_name);
    if (!ok) return false;
  }
  int64_t mem = t.gpu_memory_mib > 0 ? t.gpu_memory_mib : (m ? m->memory_mib : 0);
  if (s.mig) {
    if (!m) return false;
    *mig_idx = MigIndex(u, t);
    if (*mig_idx < 0) return false;
    mem = m->mig_profiles[*mig_idx].memory_mib;
  }
  if (u.min_gpu_memory_mib > 0 && mem < u.min_gpu_memory_mib) return false;
  if (s.gpus > t.gpu_count) return false;
  return true;
}

bool Planner::UnitAllowed(const DemandUnit& u, int cls, int pool, const Offering& off, int type, int zone,
                          int* mig_idx) const {
  (void)zone;
  if (type < 0) return false;
  if (pool >= 0) {
    const ClassInfo& c = classes_[cls];
    if (c.pol && !c.pol->pools.empty() && !Contains(c.pol->pools, pools_[pool].pol.name)) return false;
    if (!u.pool.empty() && u.pool != pools_[pool].pol.name) return false;
  } else {
    const ClassInfo& c = classes_[cls];
    if (c.pol && !c.pol->pools.empty()) return false;
    if (!u.pool.empty()) return false;
  }
  if (!u.zones.empty() && !Contains(u.zones, off.zone)) return false;
  if (!u.instance_types.empty() && !Contains(u.instance_types, off.instance_type)) return false;
  if (u.capacity_type && *u.capacity_type != off.capacity_type) return false;
  const bool interruptible = u.interruptible && (classes_[cls].pol == nullptr || classes_[cls].pol->interruptible);
  if (off.capacity_type == CapacityType::kSpot && !interruptible) return false;
  return TypeCompatible(u, snap_.instance_types[type], mig_idx);
}

void Planner::InitBin(Bin& b, int option) const {
  const Option& o = options_[option];
  const InstanceType& t = snap_.instance_types[o.type];
  b.option = option;
  b.node = -1;
  b.type = o.type;
  b.pool = o.pool;
  b.zone = o.zone;
  b.spot = o.spot;
  b.price = o.price;
  b.od_price = o.od;
  b.ih = o.ih;
  auto it = gpu_by_name_.find(t.gpu_model);
  b.gpu = it == gpu_by_name_.end() ? nullptr : it->second;
  b.gpu_count = t.gpu_count;
  b.cap_cpu = int64_t(t.vcpus) * 1000;
  b.free_cpu = b.cap_cpu;
  b.free_mem = t.memory_mib;
  b.free_whole = t.gpu_count;
  b.mult = 1;
  b.accepts = true;
  b.removed = false;
  b.receiver = false;
  b.parts.clear();
  b.content.clear();
  b.moved.clear();
  b.risk = 0;
}

int Planner::FitOnEmpty(const Group& g, int type) const {
  if (type < 0) return 0;
  int mig = -1;
  if (!TypeCompatible(*g.rep, snap_.instance_types[type], &mig)) return 0;
  const InstanceType& t = snap_.instance_types[type];
  Bin b;
  auto it = gpu_by_name_.find(t.gpu_model);
  b.gpu = it == gpu_by_name_.end() ? nullptr : it->second;
  b.gpu_count = t.gpu_count;
  b.free_cpu = int64_t(t.vcpus) * 1000;
  b.free_mem = t.memory_mib;
  b.free_whole = t.gpu_count;
  const bool any_resource = g.shape.gpus || g.shape.milli || g.shape.mig || g.shape.cpu || g.shape.mem;
  // A unit asking for nothing still takes a slot: cap it so bins stay finite.
  return Take(b, g.shape, mig, any_resource ? 1 << 20 : 110);
}

double Planner::Risk(const Group& g, const Bin& b) const {
  if (!b.spot || b.ih <= 0 || b.type < 0) return 0;
  return b.ih * g.loss_h * b.od_price * ShareOfNode(g.gpu_w, g.shape.cpu, snap_.instance_types[b.type]);
}

void Planner::GroupUnits() {
  const auto& pend = snap_.pending;
  unit_group_.assign(pend.size(), -1);
  auto hash_of = [](const DemandUnit& u) {
    size_t h = std::hash<std::string>()(u.workload_class);
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(size_t(u.gpus));
    mix(size_t(u.gpu_milli));
    mix(std::hash<std::string>()(u.mig_profile));
    mix(size_t(u.cpu_milli));
    mix(size_t(u.memory_mib));
    mix(size_t(u.min_gpu_memory_mib));
    mix(size_t(u.priority));
    mix(size_t(u.interruptible));
    mix(std::hash<std::string>()(u.pool));
    mix(size_t(u.expected_runtime.count()));
    mix(size_t(u.checkpoint_interval.count()));
    mix(size_t(u.restart_cost.count()));
    for (const auto& s : u.gpu_models) mix(std::hash<std::string>()(s));
    for (const auto& s : u.zones) mix(std::hash<std::string>()(s));
    for (const auto& s : u.instance_types) mix(std::hash<std::string>()(s));
    mix(u.capacity_type ? size_t(*u.capacity_type) + 1 : 0);
    return h;
  };
  auto same = [](const DemandUnit& a, const DemandUnit& b) {
    return a.workload_class == b.workload_class && a.gpus == b.gpus && a.gpu_milli == b.gpu_milli &&
           a.mig_profile == b.mig_profile && a.cpu_milli == b.cpu_milli && a.memory_mib == b.memory_mib &&
           a.min_gpu_memory_mib == b.min_gpu_memory_mib && a.priority == b.priority &&
           a.interruptible == b.interruptible && a.pool == b.pool && a.expected_runtime == b.expected_runtime &&
           a.checkpoint_interval == b.checkpoint_interval && a.restart_cost == b.restart_cost &&
           a.gpu_models == b.gpu_models && a.zones == b.zones && a.instance_types == b.instance_types &&
           a.capacity_type == b.capacity_type;
  };
  // Group ids follow first appearance, so the hash map never decides order.
  std::unordered_map<size_t, std::vector<int>> by_hash;
  for (size_t i = 0; i < pend.size(); ++i) {
    auto& bucket = by_hash[hash_of(pend[i])];
    int found = -1;
    for (int g : bucket)
      if (same(*groups_[g].rep, pend[i])) found = g;
    if (found < 0) {
      found = int(groups_.size());
      Group g;
      g.rep = &pend[i];
      groups_.push_back(std::move(g));
      bucket.push_back(found);
    }
    groups_[found].units.push_back(int(i));
    unit_group_[i] = found;
  }
}

void Planner::BuildGroups() {
  const size_t nt = snap_.instance_types.size();
  opt_groups_.assign(options_.size(), {});
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    const DemandUnit& u = *g.rep;
    g.cls = class_index_.at(u.workload_class);
    g.shape = ShapeOf(u);
    g.gpu_w = GpuWeight(u);
    g.loss_h = LostHoursPerInterruption(u);
    const ClassInfo& c = classes_[g.cls];
    g.interruptible = u.interruptible && (c.pol == nullptr || c.pol->interruptible);
    g.priority = u.priority;
    g.fit_by_type.assign(nt, 0);
    g.mig_by_type.assign(nt, -1);
    g.type_pin_ok.assign(nt, 1);
    for (size_t t = 0; t < nt; ++t) {
      g.fit_by_type[t] = FitOnEmpty(g, int(t));
      if (g.shape.mig) g.mig_by_type[t] = MigIndex(u, snap_.instance_types[t]);
      if (!u.instance_types.empty()) g.type_pin_ok[t] = Contains(u.instance_types, snap_.instance_types[t].name);
    }
    g.pool_ok.assign(pools_.size(), 1);
    for (size_t p = 0; p < pools_.size(); ++p) {
      if (c.pol && !c.pol->pools.empty() && !Contains(c.pol->pools, pools_[p].pol.name)) g.pool_ok[p] = 0;
      if (!u.pool.empty() && u.pool != pools_[p].pol.name) g.pool_ok[p] = 0;
    }
    g.zone_ok.assign(zone_names_.size(), 1);
    if (!u.zones.empty())
      for (size_t z = 0; z < zone_names_.size(); ++z) g.zone_ok[z] = Contains(u.zones, zone_names_[z]);
    g.cand_mask.assign(options_.size(), 0);
    g.lb = kInf;
    for (size_t oi = 0; oi < options_.size(); ++oi) {
      const Option& o = options_[oi];
      if (!o.usable || !g.pool_ok[o.pool] || !g.zone_ok[o.zone] || !g.type_pin_ok[o.type]) continue;
      if (o.spot && !g.interruptible) continue;
      if (u.capacity_type && (*u.capacity_type == CapacityType::kSpot) != o.spot) continue;
      const int k = g.fit_by_type[o.type];
      if (k <= 0) continue;
      g.cands.push_back(int(oi));
      g.cand_mask[oi] = 1;
      opt_groups_[oi].push_back(int(gi));
      Bin b;
      b.spot = o.spot;
      b.ih = o.ih;
      b.od_price = o.od;
      b.type = o.type;
      g.lb = std::min(g.lb, o.price / k + Risk(g, b));
    }
  }
}

void Planner::BuildStaticReasons() {
  for (Group& g : groups_) {
    if (!g.cands.empty()) continue;
    const DemandUnit& u = *g.rep;
    g.has_static_reason = true;
    bool any_pool = false;
    for (char ok : g.pool_ok) any_pool = any_pool || ok;
    if (!any_pool) {
      g.static_reason = UnplacedReason::kNoPool;
      g.detail = "no node pool admits class " + u.workload_class + (u.pool.empty() ? "" : " in pool " + u.pool);
      continue;
    }
    bool fits = false, unavailable_only = false, ceiling = false;
    for (const Option& o : options_) {
      if (!g.pool_ok[o.pool] || !g.zone_ok[o.zone] || !g.type_pin_ok[o.type]) continue;
      if (o.spot && !g.interruptible) continue;
      if (u.capacity_type && (*u.capacity_type == CapacityType::kSpot) != o.spot) continue;
      if (g.fit_by_type[o.type] <= 0) continue;
      fits = true;
      const bool over = o.spot && (o.price > policy_.spot.max_price_fraction_of_on_demand * o.od + kEps ||
                                   o.ih > policy_.spot.max_interruptions_per_hour + kEps);
      if (o.unavailable && !over) unavailable_only = true;
      if (over) ceiling = true;
    }
    if (!fits) {
      g.static_reason = UnplacedReason::kNoOfferingFits;
      g.detail = "no allowed instance type holds " + std::to_string(u.gpus) + " GPU(s), " +
                 Fixed(u.cpu_milli / 1000.0, 1) + " vCPU, " + std::to_string(u.memory_mib) + " MiB" +
                 (u.mig_profile.empty() ? "" : ", MIG " + u.mig_profile) +
                 (u.gpu_milli > 0 ? ", " + std::to_string(u.gpu_milli) + " milli-GPU" : "");
    } else if (unavailable_only) {
      g.static_reason = UnplacedReason::kCapacityUnavailable;
      g.detail = "every offering that fits is marked unavailable";
    } else if (ceiling) {
      g.static_reason = UnplacedReason::kSpotPriceCeiling;
      g.detail = "only spot fits and every spot offer is above the price or interruption ceiling";
    } else {
      g.static_reason = UnplacedReason::kCapacityUnavailable;
      g.detail = "every offering that fits is marked unavailable";
    }
  }
}

void Planner::BuildExisting() {
  existing_.assign(snap_.nodes.size(), Bin{});
  existing_order_.clear();
  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    const Node& n = snap_.nodes[i];
    Bin& b = existing_[i];
    b.node = int(i);
    auto t = type_by_name_.find(n.offering.instance_type);
    b.type = t == type_by_name_.end() ? -1 : t->second;
    b.pool = -1;
    for (size_t p = 0; p < pools_.size(); ++p)
      if (pools_[p].pol.name == n.pool) b.pool = int(p);
    b.zone = zone_index_.at(n.offering.zone);
    b.spot = n.offering.capacity_type == CapacityType::kSpot;
    b.price = n.offering.usd_per_hour;
    b.od_price = n.offering.on_demand_usd_per_hour > 0 ? n.offering.on_demand_usd_per_hour : b.price;
    b.ih = b.spot ? std::max(0.0, n.offering.interruptions_per_hour) : 0;
    b.accepts = n.AcceptsWork() && b.type >= 0;
    if (b.type < 0) continue;
    const InstanceType& it = snap_.instance_types[b.type];
    auto gm = gpu_by_name_.find(it.gpu_model);
    b.gpu = gm == gpu_by_name_.end() ? nullptr : gm->second;
    b.gpu_count = it.gpu_count;
    b.cap_cpu = int64_t(it.vcpus) * 1000;
    b.free_cpu = b.cap_cpu;
    b.free_mem = it.memory_mib;
    b.free_whole = it.gpu_count;
    // Running work takes its resources first; MIG and whole GPUs before fractions.
    std::vector<int> order(n.running.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = int(k);
    auto rank = [&](const DemandUnit& u) { return u.gpus > 0 ? 0 : !u.mig_profile.empty() ? 1 : u.gpu_milli > 0 ? 2 : 3; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return rank(n.running[a]) < rank(n.running[c]); });
    for (int k : order) {
      const DemandUnit& u = n.running[k];
      const Shape s = ShapeOf(u);
      int mig = s.mig ? MigIndex(u, it) : -1;
      if (Take(b, s, mig, 1) == 1) continue;
      // Over-committed input: take what is asked regardless, so nothing else lands here.
      b.free_cpu -= s.cpu;
      b.free_mem -= s.mem;
      if (s.gpus > 0) b.free_whole -= s.gpus;
      else if (s.milli > 0 || s.mig) b.free_whole -= 1;
      if (b.free_whole < 0) b.free_whole = 0;
    }
  }
  for (size_t i = 0; i < existing_.size(); ++i)
    if (existing_[i].accepts) existing_order_.push_back(int(i));
  // On-demand first (no interruption risk for what lands there), then the
  // fullest nodes, so emptier ones stay free for consolidation.
  std::stable_sort(existing_order_.begin(), existing_order_.end(), [&](int a, int c) {
    const Bin& x = existing_[a];
    const Bin& y = existing_[c];
    if (x.spot != y.spot) return !x.spot;
    if (x.free_whole != y.free_whole) return x.free_whole < y.free_whole;
    return a < c;
  });
}

int Planner::Limit(const Group& g, const Bin& b, const State& st) const {
  if (g.gpu_w <= 0) return kNoLimit;
  double allow = kInf;
  if (b.spot) allow = st.spot_allow[g.cls];
  const ClassInfo& c = classes_[g.cls];
  if (c.zone_limited && b.zone >= 0) allow = std::min(allow, st.zone_allow[g.cls][b.zone]);
  if (allow == kInf) return kNoLimit;
  if (allow < g.gpu_w - kEps) return 0;
  return int(std::min(1e9, std::floor((allow + 1e-7) / g.gpu_w)));
}

void Planner::Consume(const Group& g, const Bin& b, double count, State& st) const {
  if (g.gpu_w <= 0) return;
  if (b.spot && st.spot_allow[g.cls] < kInf) st.spot_allow[g.cls] -= count * g.gpu_w;
  if (classes_[g.cls].zone_limited && b.zone >= 0) st.zone_allow[g.cls][b.zone] -= count * g.gpu_w;
}

int Planner::MaxOpen(const Option& o, const State& st) const {
  int64_t m = kNoLimit;
  const PoolInfo& p = pools_[o.pool];
  m = std::min<int64_t>(m, int64_t(p.pol.max_nodes) - st.pool_count[o.pool]);
  m = std::min<int64_t>(m, int64_t(policy_.scaling.max_nodes_added_per_tick) - st.added);
  if (o.price > 0) {
    if (global_budget_hard_ && global_budget_ < kInf)
      m = std::min<int64_t>(m, int64_t(std::floor((global_budget_ - st.cost) / o.price + 1e-9)));
    if (p.budget_hard && p.budget < kInf)
      m = std::min<int64_t>(m, int64_t(std::floor((p.budget - st.pool_cost[o.pool]) / o.price + 1e-9)));
  }
  return int(std::max<int64_t>(0, m));
}

int Planner::BlockOf(const Group& g, int option, const State& st) const {
  const Option& o = options_[option];
  const PoolInfo& p = pools_[o.pool];
  if (o.price > 0 && ((global_budget_hard_ && st.cost + o.price > global_budget_ + kEps) ||
                      (p.budget_hard && st.pool_cost[o.pool] + o.price > p.budget + kEps)))
    return kBlockBudget;
  if (st.added >= policy_.scaling.max_nodes_added_per_tick) return kBlockTick;
  if (st.pool_count[o.pool] >= p.pol.max_nodes) return kBlockPoolMax;
  Bin b;
  b.spot = o.spot;
  b.zone = o.zone;
  if (g.gpu_w > 0 && o.spot && st.spot_allow[g.cls] < g.gpu_w - kEps) return kBlockSpot;
  b.spot = false;
  if (Limit(g, b, st) == 0) return kBlockZone;
  return kBlockNone;
}

void Planner::PlaceOnExisting(State& st) {
  std::vector<int> order(groups_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if (x.priority != y.priority) return x.priority > y.priority;
    if (x.gpu_w != y.gpu_w) return x.gpu_w > y.gpu_w;
    return x.shape.cpu > y.shape.cpu;
  });
  for (int gi : order) {
    const Group& g = groups_[gi];
    for (int bi : existing_order_) {
      if (st.rem[gi] == 0) break;
      Bin& b = existing_[bi];
      if (b.type < 0 || !g.zone_ok[b.zone] || !g.type_pin_ok[b.type] || g.fit_by_type[b.type] == 0) continue;
      if (b.pool >= 0 ? !g.pool_ok[b.pool] : (!g.rep->pool.empty() || (classes_[g.cls].pol && !classes_[g.cls].pol->pools.empty())))
        continue;
      if (b.spot && !g.interruptible) continue;
      if (g.rep->capacity_type && (*g.rep->capacity_type == CapacityType::kSpot) != b.spot) continue;
      const int t = Take(b, g.shape, g.mig_by_type[b.type], std::min(st.rem[gi], Limit(g, b, st)));
      if (t <= 0) continue;
      b.content.emplace_back(gi, t);
      b.risk += t * Risk(g, b);
      Consume(g, b, t, st);
      st.rem[gi] -= t;
    }
  }
}

void Planner::Greedy(State& st, const std::vector<int>& rank) const {
  std::vector<std::vector<int>> og(options_.size());
  std::vector<int> active;
  for (size_t o = 0; o < options_.size(); ++o) {
    og[o] = opt_groups_[o];
    std::stable_sort(og[o].begin(), og[o].end(), [&](int a, int b) { return rank[a] < rank[b]; });
    if (!og[o].empty()) active.push_back(int(o));
  }
  // An option never wins when another of the same pool, type and capacity
  // type, open to exactly the same groups, is no dearer and no riskier: drop
  // those up front (zone-spread classes excepted, their zones matter).
  {
    std::vector<int> sorted = active;
    std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
      const Option& x = options_[a];
      const Option& y = options_[b];
      if (x.pool != y.pool) return x.pool < y.pool;
      if (x.type != y.type) return x.type < y.type;
      return x.spot < y.spot;
    });
    std::vector<char> dominated(options_.size(), 0);
    auto zone_limited = [&](int o) {
      for (int g : og[o])
        if (classes_[groups_[g].cls].zone_limited) return true;
      return false;
    };
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i;
      const Option& head = options_[sorted[i]];
      while (j < sorted.size() && options_[sorted[j]].pool == head.pool && options_[sorted[j]].type == head.type &&
             options_[sorted[j]].spot == head.spot)
        ++j;
      for (size_t a = i; a < j; ++a) {
        const int oa = sorted[a];
        if (zone_limited(oa)) continue;
        const Option& x = options_[oa];
        for (size_t b = i; b < j && !dominated[oa]; ++b) {
          const int ob = sorted[b];
          if (ob == oa || dominated[ob]) continue;
          const Option& y = options_[ob];
          const bool no_worse = y.price <= x.price && y.ih * y.od <= x.ih * x.od;
          const bool better = y.price < x.price || y.ih * y.od < x.ih * x.od || ob < oa;
          if (no_worse && better && og[ob] == og[oa]) dominated[oa] = 1;
        }
      }
      i = j;
    }
    size_t kept = 0;
    for (int o : active)
      if (!dominated[o]) active[kept++] = o;
    active.resize(kept);
  }
  Bin scratch, best;
  std::vector<double> used(classes_.size(), 0);  // allowance taken by the bin being evaluated
  std::vector<int> touched;
  while (true) {
    int best_o = -1;
    double best_ratio = kInf;
    size_t kept = 0;
    for (int o : active) {
      bool any = false;
      for (int g : og[o]) any = any || st.rem[g] > 0;
      if (!any) continue;
      active[kept++] = o;
      if (MaxOpen(options_[o], st) < 1) continue;
      InitBin(scratch, o);
      double cost = scratch.price, value = 0;
      for (int c : touched) used[c] = 0;
      touched.clear();
      for (int g : og[o]) {
        if (st.rem[g] == 0) continue;
        const Group& grp = groups_[g];
        int lim = Limit(grp, scratch, st);
        if (lim != kNoLimit && used[grp.cls] > 0)
          lim = std::max(0, lim - int(std::ceil(used[grp.cls] / grp.gpu_w - 1e-7)));
        const int t = Take(scratch, grp.shape, grp.mig_by_type[scratch.type], std::min(st.rem[g], lim));
        if (t <= 0) continue;
        if (grp.gpu_w > 0) {
          if (used[grp.cls] == 0) touched.push_back(grp.cls);
          used[grp.cls] += t * grp.gpu_w;
        }
        scratch.content.emplace_back(g, t);
        const double r = t * Risk(grp, scratch);
        scratch.risk += r;
        cost += r;
        value += t * grp.lb;
      }
      if (value <= 0) continue;
      const double ratio = cost / value;
      if (ratio < best_ratio - 1e-12) {
        best_ratio = ratio;
        best_o = o;
        std::swap(best, scratch);
      }
    }
    active.resize(kept);
    if (best_o < 0) break;
    const Option& o = options_[best_o];
    int64_t m = MaxOpen(o, st);
    std::map<int, double> per_class;
    for (auto [g, t] : best.content) {
      m = std::min<int64_t>(m, st.rem[g] / t);
      per_class[groups_[g].cls] += t * groups_[g].gpu_w;
    }
    for (auto [c, need] : per_class) {
      if (need <= 0) continue;
      if (best.spot && st.spot_allow[c] < kInf) m = std::min<int64_t>(m, int64_t(std::floor((st.spot_allow[c] + 1e-7) / need)));
      if (classes_[c].zone_limited) m = std::min<int64_t>(m, int64_t(std::floor((st.zone_allow[c][best.zone] + 1e-7) / need)));
    }
    m = std::max<int64_t>(1, m);
    best.mult = int(m);
    for (auto [g, t] : best.content) {
      st.rem[g] -= int(t * m);
      Consume(groups_[g], best, double(t) * m, st);
    }
    st.pool_count[o.pool] += int(m);
    st.pool_cost[o.pool] += o.price * m;
    st.cost += o.price * m;
    st.added += int(m);
    st.bins.push_back(best);
  }
}

void Planner::Classify(State& st) const {
  st.blocked.assign(groups_.size(), -1);
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    if (st.rem[gi] == 0 || groups_[gi].has_static_reason) continue;
    int best = 99;
    for (int o : groups_[gi].cands) {
      const int b = BlockOf(groups_[gi], o, st);
      if (b != kBlockNone) best = std::min(best, b);
    }
    static const UnplacedReason kMap[] = {UnplacedReason::kNoOfferingFits, UnplacedReason::kBudget,
                                          UnplacedReason::kMaxNodesPerTick, UnplacedReason::kPoolMax,
                                          UnplacedReason::kSpotShare, UnplacedReason::kZoneSpread};
    st.blocked[gi] = int(best == 99 ? UnplacedReason::kNoOfferingFits : kMap[best]);
  }
}

bool Planner::Refill(Bin& b, int option, const std::vector<std::pair<int, int>>& content) const {
  InitBin(b, option);
  for (auto [g, t] : content) {
    const Group& grp = groups_[g];
    if (!grp.cand_mask[option]) return false;
    if (Take(b, grp.shape, grp.mig_by_type[b.type], t) != t) return false;
    b.content.emplace_back(g, t);
    b.risk += t * Risk(grp, b);
  }
  return true;
}

double Planner::TotalCost(const State& st) const {
  double c = 0;
  for (const Bin& b : st.bins) c += b.mult * BinCost(b);
  return c;
}

int Planner::Unplaced(const State& st) const {
  int n = 0;
  for (int r : st.rem) n += r;
  return n;
}

void Planner::LocalSearch(State& st) const {
  // Applies `content` x `mult` moving from (old option) to `option`: checks
  // pool max, budgets and allowances; updates the state when it fits.
  auto try_move = [&](Bin& from, int option, const Bin& candidate) -> bool {
    const Option& no = options_[option];
    const Option& oo = options_[from.option];
    const int m = from.mult;
    std::vector<double> spot = st.spot_allow;
    std::vector<std::vector<double>> zone = st.zone_allow;
    for (auto [g, t] : from.content) {
      const Group& grp = groups_[g];
      if (grp.gpu_w <= 0) continue;
      const double w = grp.gpu_w * t * m;
      if (from.spot && spot[grp.cls] < kInf) spot[grp.cls] += w;
      if (classes_[grp.cls].zone_limited) zone[grp.cls][from.zone] += w;
    }
    for (auto [g, t] : candidate.content) {
      const Group& grp = groups_[g];
      if (grp.gpu_w <= 0) continue;
      const double w = grp.gpu_w * t * m;
      if (no.spot && spot[grp.cls] < kInf) {
        spot[grp.cls] -= w;
        if (spot[grp.cls] < -1e-7) return false;
      }
      if (classes_[grp.cls].zone_limited) {
        zone[grp.cls][no.zone] -= w;
        if (zone[grp.cls][no.zone] < -1e-7) return false;
      }
    }
    if (no.pool != oo.pool) {
      if (st.pool_count[no.pool] + m > pools_[no.pool].pol.max_nodes) return false;
      const PoolInfo& p = pools_[no.pool];
      if (p.budget_hard && st.pool_cost[no.pool] + no.price * m > p.budget + kEps) return false;
    } else {
      const PoolInfo& p = pools_[no.pool];
      if (p.budget_hard && st.pool_cost[no.pool] + (no.price - oo.price) * m > p.budget + kEps) return false;
    }
    if (global_budget_hard_ && st.cost + (no.price - oo.price) * m > global_budget_ + kEps) return false;
    st.spot_allow = std::move(spot);
    st.zone_allow = std::move(zone);
    st.pool_count[oo.pool] -= m;
    st.pool_cost[oo.pool] -= oo.price * m;
    st.pool_count[no.pool] += m;
    st.pool_cost[no.pool] += no.price * m;
    st.cost += (no.price - oo.price) * m;
    Bin moved = candidate;
    moved.mult = m;
    from = std::move(moved);
    return true;
  };

  Bin cand;
  bool improved = true;
  for (int round = 0; round < 4 && improved; ++round) {
    improved = false;
    // 1. Re-type each bin to the cheapest option that holds the same content.
    for (Bin& b : st.bins) {
      const double cur = BinCost(b);
      for (int o : options_by_price_) {
        if (options_[o].price >= cur - 1e-9) break;
        if (o == b.option) continue;
        if (!Refill(cand, o, b.content)) continue;
        if (BinCost(cand) < cur - 1e-9 && try_move(b, o, cand)) {
          improved = true;
          break;
        }
      }
    }
    // 2. Merge two single bins into one cheaper node.
    std::vector<int> singles;
    for (size_t i = 0; i < st.bins.size(); ++i)
      if (st.bins[i].mult == 1) singles.push_back(int(i));
    if (singles.size() > 64) singles.resize(64);
    std::vector<char> gone(st.bins.size(), 0);
    for (size_t a = 0; a < singles.size(); ++a) {
      if (gone[singles[a]]) continue;
      for (size_t c = a + 1; c < singles.size(); ++c) {
        if (gone[singles[c]] || gone[singles[a]]) continue;
        Bin& x = st.bins[singles[a]];
        Bin& y = st.bins[singles[c]];
        const double both = BinCost(x) + BinCost(y);
        std::vector<std::pair<int, int>> content = x.content;
        content.insert(content.end(), y.content.begin(), y.content.end());
        for (int o : options_by_price_) {
          if (options_[o].price >= both - 1e-9) break;
          if (!Refill(cand, o, content)) continue;
          if (BinCost(cand) >= both - 1e-9) continue;
          // Remove y first (frees its pool slot, budget and allowances), then move x.
          const Option& yo = options_[y.option];
          State saved = st;
          for (auto [g, t] : y.content) {
            const Group& grp = groups_[g];
            if (grp.gpu_w <= 0) continue;
            if (y.spot && st.spot_allow[grp.cls] < kInf) st.spot_allow[grp.cls] += grp.gpu_w * t;
            if (classes_[grp.cls].zone_limited) st.zone_allow[grp.cls][y.zone] += grp.gpu_w * t;
          }
          st.pool_count[yo.pool] -= 1;
          st.pool_cost[yo.pool] -= yo.price;
          st.cost -= yo.price;
          st.added -= 1;
          // try_move releases the allowances of x's own content and takes the merged content's.
          Bin xc = st.bins[singles[a]];
          if (try_move(xc, o, cand)) {
            st.bins[singles[a]] = std::move(xc);
            gone[singles[c]] = 1;
            improved = true;
            break;
          }
          st = std::move(saved);
          break;
        }
      }
    }
    std::vector<Bin> kept;
    for (size_t i = 0; i < st.bins.size(); ++i)
      if (!gone[i]) kept.push_back(std::move(st.bins[i]));
    st.bins = std::move(kept);
    // 3. Empty one node (a single bin, or one copy of a bulk bin) into the
    //    free space of other single new bins.
    int tries = 0;
    for (size_t i = 0; i < st.bins.size() && tries < 256; ++i) {
      ++tries;
      State saved = st;
      Bin victim = st.bins[i];
      bool ok = true;
      double added_risk = 0;
      for (auto [g, t] : victim.content) {
        const Group& grp = groups_[g];
        int left = t;
        // Release the victim's allowance for this group before re-placing.
        if (grp.gpu_w > 0) {
          if (victim.spot && st.spot_allow[grp.cls] < kInf) st.spot_allow[grp.cls] += grp.gpu_w * t;
          if (classes_[grp.cls].zone_limited) st.zone_allow[grp.cls][victim.zone] += grp.gpu_w * t;
        }
        for (size_t j = 0; j < st.bins.size() && left > 0; ++j) {
          Bin& d = st.bins[j];
          if (j == i || d.mult != 1 || !grp.cand_mask[d.option]) continue;
          const int k = Take(d, grp.shape, grp.mig_by_type[d.type], std::min(left, Limit(grp, d, st)));
          if (k <= 0) continue;
          d.content.emplace_back(g, k);
          const double r = k * Risk(grp, d);
          d.risk += r;
          added_risk += r;
          Consume(grp, d, k, st);
          left -= k;
        }
        if (left > 0) {
          ok = false;
          break;
        }
      }
      if (ok && added_risk < BinCost(victim) - 1e-9) {
        const Option& vo = options_[victim.option];
        st.pool_count[vo.pool] -= 1;
        st.pool_cost[vo.pool] -= vo.price;
        st.cost -= vo.price;
        st.added -= 1;
        if (st.bins[i].mult > 1) {
          st.bins[i].mult -= 1;
        } else {
          st.bins.erase(st.bins.begin() + long(i));
        }
        --i;  // try the same bin (or the one now at i) again
        improved = true;
      } else {
        st = std::move(saved);
      }
    }
  }
}

State Planner::ScaleUp(const State& base) {
  std::vector<std::vector<int>> ranks;
  const size_t ng = groups_.size();
  auto make_rank = [&](auto less) {
    std::vector<int> order(ng);
    for (size_t i = 0; i < ng; ++i) order[i] = int(i);
    std::stable_sort(order.begin(), order.end(), less);
    std::vector<int> rank(ng);
    for (size_t i = 0; i < ng; ++i) rank[order[i]] = int(i);
    return rank;
  };
  ranks.push_back(make_rank([&](int a, int b) {
    const Group& x = groups_[a];
    const Group& y = groups_[b];
    if (x.gpu_w != y.gpu_w) return x.gpu_w > y.gpu_w;
    if (x.shape.cpu != y.shape.cpu) return x.shape.cpu > y.shape.cpu;
    return x.shape.mem > y.shape.mem;
  }));
  int pending = 0;
  for (int r : base.rem) pending += r;
  if (pending <= opts_.multi_start_max_units && ng > 1) {
    ranks.push_back(make_rank([&](int a, int b) { return groups_[a].lb > groups_[b].lb; }));
    ranks.push_back(make_rank([&](int a, int b) {
      const Group& x = groups_[a];
      const Group& y = groups_[b];
      if (x.shape.cpu != y.shape.cpu) return x.shape.cpu > y.shape.cpu;
      return x.gpu_w > y.gpu_w;
    }));
    ranks.push_back(make_rank([&](int a, int b) { return groups_[a].interruptible < groups_[b].interruptible; }));
  }
  auto solve = [&](const State& start) {
    State best;
    bool have = false;
    for (const auto& rank : ranks) {
      State st = start;
      Greedy(st, rank);
      if (opts_.local_search) LocalSearch(st);
      if (!have || Unplaced(st) < Unplaced(best) ||
          (Unplaced(st) == Unplaced(best) && TotalCost(st) < TotalCost(best) - 1e-9)) {
        best = std::move(st);
        have = true;
      }
    }
    Classify(best);
    return best;
  };
  State st = solve(base);
  bool budget_blocked = false;
  for (size_t g = 0; g < ng; ++g) budget_blocked = budget_blocked || st.blocked[g] == int(UnplacedReason::kBudget);
  if (!budget_blocked || !any_hard_budget_) return st;

  // A hard budget binds: keep the highest-priority prefix of the demand that
  // fits under it, and leave the rest unplaced with reason budget.
  std::vector<int> order(ng);
  for (size_t i = 0; i < ng; ++i) order[i] = int(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return groups_[a].priority > groups_[b].priority; });
  auto limited = [&](int k) {
    State s = base;
    for (int g : order) {
      const int take = std::min(s.rem[g], k);
      s.budget_cut[g] = s.rem[g] - take;
      s.rem[g] = take;
      k -= take;
    }
    return s;
  };
  auto ok = [&](const State& s) {
    for (size_t g = 0; g < ng; ++g)
      if (s.blocked[g] == int(UnplacedReason::kBudget)) return false;
    return true;
  };
  int lo = 0, hi = pending;  // lo feasible
  State best = solve(limited(0));
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    State s = solve(limited(mid));
    if (ok(s)) {
      lo = mid;
      best = std::move(s);
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

void Planner::MinNodes(State& st) {
  for (size_t p = 0; p < pools_.size(); ++p) {
    int deficit = pools_[p].pol.min_nodes - st.pool_count[p];
    if (deficit <= 0) continue;
    int best = -1;
    for (int o : options_by_price_) {
      if (options_[o].pool == int(p) && options_[o].usable && !options_[o].spot) {
        best = o;
        break;
      }
    }
    if (best < 0)
      for (int o : options_by_price_)
        if (options_[o].pool == int(p) && options_[o].usable) {
          best = o;
          break;
        }
    if (best < 0) continue;
    const int m = std::min(deficit, MaxOpen(options_[best], st));
    if (m <= 0) continue;
    Bin b;
    InitBin(b, best);
    b.mult = m;
    st.pool_count[p] += m;
    st.pool_cost[p] += b.price * m;
    st.cost += b.price * m;
    st.added += m;
    st.bins.push_back(b);
    notes_.push_back("pool " + pools_[p].pol.name + " below min_nodes " + std::to_string(pools_[p].pol.min_nodes));
  }
}

std::string Planner::Describe(const Offering& o) const {
  return o.instance_type + " " + std::string(ToString(o.capacity_type)) + " " + o.zone;
}

void Planner::MoveAllowance(int cls, double w, const Bin& from, const Bin& to, std::vector<double>& spot,
                            std::vector<std::vector<double>>& zone) const {
  if (w <= 0) return;
  if (spot[cls] < kInf && from.spot != to.spot) spot[cls] += from.spot ? w : -w;
  if (classes_[cls].zone_limited && from.zone != to.zone) {
    zone[cls][from.zone] += w;
    zone[cls][to.zone] -= w;
  }
}

void Planner::Consolidate(State& st, Plan& plan, std::vector<TerminationAction>& terms) {
  const DisruptionPolicy& d = policy_.disruption;
  int removed = 0;
  const int max_removed = policy_.scaling.max_nodes_removed_per_tick;
  if (max_removed <= 0) return;

  // Pools that a blocked class may use: their capacity stays (fail static).
  std::vector<char> pool_blocked(pools_.size(), 0);
  for (const ClassInfo& c : classes_) {
    if (!c.blocked) continue;
    for (size_t p = 0; p < pools_.size(); ++p)
      if (!c.pol || c.pol->pools.empty() || Contains(c.pol->pools, pools_[p].pol.name)) pool_blocked[p] = 1;
  }
  struct Cand {
    int node;
    bool empty;
    double gpu_w;
    double price;
  };
  std::vector<Cand> cands;
  for (size_t i = 0; i < snap_.nodes.size(); ++i) {
    const Node& n = snap_.nodes[i];
    const Bin& b = existing_[i];
    if (n.state != NodeState::kReady || !b.content.empty()) continue;
    if (snap_.time - n.launch_time < d.min_node_age) continue;
    if (n.do_not_disrupt || LabelSaysDoNotDisrupt(n.labels, d.do_not_disrupt_labels)) continue;
    if (b.pool >= 0 && pool_blocked[b.pool]) continue;
    if (b.pool < 0 && !snap_.scale_down_blocked_classes.empty()) continue;
    bool blocked = false;
    double w = 0;
    for (const auto& u : n.running) {
      blocked = blocked || classes_[class_index_.at(u.workload_class)].blocked;
      w += GpuWeight(u);
    }
    if (blocked) continue;
    cands.push_back({int(i), n.running.empty(), w, b.price});
  }
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    if (a.empty != b.empty) return a.empty;
    if (a.gpu_w != b.gpu_w) return a.gpu_w < b.gpu_w;
    return a.price > b.price;
  });
  std::vector<int> receivers;  // accepting existing nodes, in placement order
  for (int bi : existing_order_) receivers.push_back(bi);
  int64_t free_whole_total = 0;
  for (int bi : receivers) free_whole_total += std::max(0, existing_[bi].free_whole);

  auto pool_ok_to_remove = [&](int pool) {
    if (pool < 0) return true;
    return pools_[pool].disrupt_allow > 0 && st.pool_count[pool] - 1 >= pools_[pool].pol.min_nodes;
  };
  auto commit_removal = [&](int pool, double price) {
    ++removed;
    if (pool >= 0) {
      pools_[pool].disrupt_allow--;
      st.pool_count[pool]--;
      st.pool_cost[pool] -= price;
    }
    st.cost -= price;
  };

  for (const Cand& c : cands) {
    if (removed >= max_removed) break;
    Bin& src = existing_[c.node];
    if (src.receiver || src.removed) continue;
    const Node& n = snap_.nodes[c.node];
    if (!pool_ok_to_remove(src.pool)) continue;
    TerminationAction t;
    t.node_id = n.id;
    t.instance_id = n.instance_id;
    t.pool = n.pool;
    t.offering = n.offering;
    if (c.empty) {
      t.kind = TerminationKind::kEmpty;
      t.saves_usd_per_hour = src.price;
      t.reason = "empty node, not needed: saves " + Usd(src.price) + "/h";
      src.removed = true;
      free_whole_total -= std::max(0, src.free_whole);
      commit_removal(src.pool, src.price);
      terms.push_back(std::move(t));
      continue;
    }
    const InstanceType* type = src.type >= 0 ? &snap_.instance_types[src.type] : nullptr;
    double risk_old = 0, disruption = 0;
    int need_whole = 0;
    for (const auto& u : n.running) {
      if (type) {
        risk_old += ExpectedInterruptionUsdPerHour(u, n.offering, *type);
        disruption += std::max<int64_t>(0, u.restart_cost.count()) / 3600.0 * OnDemandValueUsdPerHour(u, n.offering, *type);
      }
      need_whole += std::max(0, u.gpus);
    }
    const double best_case = src.price + risk_old - disruption;
    if (best_case < d.min_savings_usd_per_hour || (src.price > 0 && best_case / src.price < d.min_savings_fraction))
      continue;
    if (!type) continue;
    std::vector<int> order(n.running.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = int(k);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return GpuWeight(n.running[a]) > GpuWeight(n.running[b]);
    });
    // 1. Move everything onto other existing nodes.
    if (free_whole_total - std::max(0, src.free_whole) >= need_whole) {
      std::vector<double> spot = st.spot_allow;
      std::vector<std::vector<double>> zone = st.zone_allow;
      std::vector<std::pair<int, Bin>> undo;
      std::vector<std::pair<int, int>> dest;  // (running index, bin)
      double risk_new = 0;
      bool all = true;
      for (int k : order) {
        const DemandUnit& u = n.running[k];
        const Shape s = ShapeOf(u);
        const int cls = class_index_.at(u.workload_class);
        bool placed = false;
        for (int bi : receivers) {
          if (bi == c.node) continue;
          Bin& b = existing_[bi];
          if (b.removed) continue;
          if ((s.cpu > b.free_cpu) || (s.mem > b.free_mem) || (s.gpus > b.free_whole)) continue;
          if (s.gpus == 0 && (s.milli > 0 || s.mig) && b.free_whole == 0 && b.parts.empty()) continue;
          const double w = GpuWeight(u);
          if (w > 0 && b.spot && !src.spot && spot[cls] < w - kEps) continue;
          if (w > 0 && classes_[cls].zone_limited && b.zone != src.zone && zone[cls][b.zone] < w - kEps) continue;
          int mig = -1;
          const Offering& off = snap_.nodes[bi].offering;
          if (!UnitAllowed(u, cls, b.pool, off, b.type, b.zone, &mig)) continue;
          Bin copy = b;
          if (Take(b, s, mig, 1) != 1) continue;
          MoveAllowance(cls, w, src, b, spot, zone);
          undo.emplace_back(bi, std::move(copy));
          dest.emplace_back(k, bi);
          risk_new += ExpectedInterruptionUsdPerHour(u, off, snap_.instance_types[b.type]);
          placed = true;
          break;
        }
        if (!placed) {
          all = false;
          break;
        }
      }
      const double saves = src.price + risk_old - risk_new - disruption;
      if (all && saves >= d.min_savings_usd_per_hour && saves / src.price >= d.min_savings_fraction) {
        st.spot_allow = std::move(spot);
        st.zone_allow = std::move(zone);
        t.kind = TerminationKind::kConsolidate;
        t.saves_usd_per_hour = saves;
        for (auto [k, bi] : dest) {
          const DemandUnit& u = n.running[k];
          t.moved_unit_ids.push_back(u.id);
          existing_[bi].receiver = true;
          existing_[bi].moved.emplace_back(c.node, k);
          Placement p;
          p.unit_id = u.id;
          p.node_id = snap_.nodes[bi].id;
          plan.placements.push_back(std::move(p));
        }
        t.reason = "its " + std::to_string(n.running.size()) + " unit(s) fit on other nodes: saves " + Usd(saves) +
                   "/h after " + Usd(disruption) + "/h disruption cost";
        src.removed = true;
        free_whole_total = 0;
        for (int bi : receivers)
          if (!existing_[bi].removed) free_whole_total += std::max(0, existing_[bi].free_whole);
        commit_removal(src.pool, src.price);
        terms.push_back(std::move(t));
        continue;
      }
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) existing_[it->first] = std::move(it->second);
    }
    // 2. Replace with one cheaper node in the same pool.
    if (src.pool < 0 || st.added >= policy_.scaling.max_nodes_added_per_tick) continue;
    const double limit = src.price + risk_old - disruption - d.min_savings_usd_per_hour;
    Bin nb;
    for (int o : options_by_price_) {
      const Option& op = options_[o];
      if (op.price >= limit) break;
      if (op.pool != src.pool || !op.usable) continue;
      if (src.price > 0 && (src.price + risk_old - op.price - disruption) / src.price < d.min_savings_fraction) break;
      InitBin(nb, o);
      const Offering& off = snap_.offerings[op.offering];
      double risk_new = 0;
      bool all = true;
      std::vector<double> spot = st.spot_allow;
      std::vector<std::vector<double>> zone = st.zone_allow;
      for (int k : order) {
        const DemandUnit& u = n.running[k];
        const int cls = class_index_.at(u.workload_class);
        const double w = GpuWeight(u);
        if ((w > 0 && nb.spot && !src.spot && spot[cls] < w - kEps) ||
            (w > 0 && classes_[cls].zone_limited && nb.zone != src.zone && zone[cls][nb.zone] < w - kEps)) {
          all = false;
          break;
        }
        MoveAllowance(cls, w, src, nb, spot, zone);
        int mig = -1;
        if (!UnitAllowed(u, class_index_.at(u.workload_class), op.pool, off, op.type, op.zone, &mig) ||
            Take(nb, ShapeOf(u), mig, 1) != 1) {
          all = false;
          break;
        }
        risk_new += ExpectedInterruptionUsdPerHour(u, off, snap_.instance_types[op.type]);
      }
      if (!all) continue;
      const double saves = src.price + risk_old - op.price - risk_new - disruption;
      if (saves < d.min_savings_usd_per_hour || saves / src.price < d.min_savings_fraction) continue;
      st.spot_allow = std::move(spot);
      st.zone_allow = std::move(zone);
      nb.risk = risk_new;
      for (int k : order) nb.moved.emplace_back(c.node, k);
      t.kind = TerminationKind::kReplace;
      t.saves_usd_per_hour = saves;
      for (int k : order) t.moved_unit_ids.push_back(n.running[k].id);
      t.reason = "replaced by " + Describe(off) + " at " + Usd(op.price) + "/h: saves " + Usd(saves) + "/h after " +
                 Usd(disruption) + "/h disruption cost";
      st.bins.push_back(nb);
      st.pool_count[op.pool]++;
      st.pool_cost[op.pool] += op.price;
      st.cost += op.price;
      st.added++;
      src.removed = true;
      free_whole_total -= std::max(0, src.free_whole);
      commit_removal(src.pool, src.price);
      terms.push_back(std::move(t));
      break;
    }
  }
}

void Planner::Assemble(State& st, Plan& plan) {
  std::vector<size_t> cursor(groups_.size(), 0);
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

  // Reasons and fallbacks.
  const bool soft_over = !global_budget_hard_ && global_budget_ < kInf && st.cost > global_budget_ + kEps;
  Bin probe;
  for (size_t li = 0; li < plan.launches.size(); ++li) {
    LaunchAction& l = plan.launches[li];
    const Bin& first = *launch_bins[li][0];
    const Option& o = options_[first.option];
    std::map<std::string, int> by_class;
    int pending_units = 0;
    for (const Bin* b : launch_bins[li])
      for (auto [g, t] : b->content) {
        by_class[groups_[g].rep->workload_class] += t * b->mult;
        pending_units += t * b->mult;
      }
    int moved_units = 0;
    for (const Bin* b : launch_bins[li]) moved_units += int(b->moved.size()) * b->mult;
    std::string what;
    if (pending_units > 0) {
      what = std::to_string(pending_units) + " pending " + (by_class.size() == 1 ? by_class.begin()->first + " " : "") +
             (pending_units == 1 ? "unit" : "units");
    } else if (moved_units > 0) {
      what = std::to_string(moved_units) + " unit(s) moved from a costlier node";
    } else {
      what = "pool " + l.pool + " min_nodes";
    }
    const double total = l.usd_per_hour + l.expected_interruption_usd_per_hour;
    l.reason = std::to_string(l.count) + "\xC3\x97 " + Describe(l.offering) + " for " + what + ": " + Usd(l.usd_per_hour) + "/h";
    const double od_total = o.od * l.count;
    if (o.spot && od_total > 0) {
      l.reason += ", " + Fixed(100.0 * (1.0 - total / od_total), 0) + " % cheaper than on-demand after interruption risk (" +
                  Usd(l.expected_interruption_usd_per_hour) + "/h expected)";
    } else if (pending_units > 0) {
      bool spot_possible = false;
      for (const Bin* b : launch_bins[li])
        for (auto [g, t] : b->content) spot_possible = spot_possible || groups_[g].interruptible;
      l.reason += spot_possible ? ", lowest expected cost per unit (spot costlier after interruption risk, capped or unavailable)"
                                : ", lowest cost per unit (work not interruptible: no spot)";
    }
    if (soft_over) l.reason += "; over the soft budget of " + Usd(global_budget_) + "/h";
    // Fallbacks: same content on other options of the same pool, by expected cost.
    if (!first.content.empty() || !first.moved.empty()) {
      std::vector<std::pair<double, int>> fb;
      for (size_t oi = 0; oi < options_.size(); ++oi) {
        const Option& op = options_[oi];
        if (int(oi) == first.option || op.pool != o.pool || !op.usable) continue;
        if (!first.moved.empty()) {
          if (op.type != o.type) continue;
          if (op.spot != o.spot) continue;
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

  // Unplaced: what is left of each group.
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
        x.detail = "hard budget cap reached; higher-priority demand placed first";
      } else {
        x.reason = st.blocked[g] >= 0 ? UnplacedReason(st.blocked[g]) : UnplacedReason::kNoOfferingFits;
        switch (x.reason) {
          case UnplacedReason::kBudget: x.detail = "a new node would exceed the hard budget cap"; break;
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

  // Spot share and zone spread are shares of the class's GPUs after the
  // plan. Allowances start from all pending demand; when some of it stays
  // unplaced the shares are recomputed from what was placed, and planned again.
  std::vector<double> totals = class_total_gpu_;
  std::vector<char> short_class(classes_.size(), 0);
  State st;
  constexpr int kAttempts = 6;
  for (int attempt = 0; attempt <= kAttempts; ++attempt) {
    if (attempt > 0) BuildExisting();
    if (attempt == kAttempts) {
      // Not settled: classes still short get no new spot or cross-zone share beyond one unit.
      for (size_t c = 0; c < classes_.size(); ++c)
        if (short_class[c]) totals[c] = 0;
    }
    SetAllowances(totals);
    State base;
    base.rem.resize(groups_.size());
    for (size_t g = 0; g < groups_.size(); ++g) base.rem[g] = int(groups_[g].units.size());
    base.spot_allow.resize(classes_.size());
    base.zone_allow.resize(classes_.size());
    for (size_t c = 0; c < classes_.size(); ++c) {
      base.spot_allow[c] = classes_[c].spot_allow;
      base.zone_allow[c] = classes_[c].zone_allow;
    }
    base.pool_count.clear();
    base.pool_cost.clear();
    for (const auto& p : pools_) {
      base.pool_count.push_back(p.count);
      base.pool_cost.push_back(p.cost);
    }
    base.cost = base_cost_;
    base.budget_cut.assign(groups_.size(), 0);
    PlaceOnExisting(base);
    for (size_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].has_static_reason) base.rem[g] = 0;  // nothing new can hold them; reported as unplaced
    st = ScaleUp(base);
    std::vector<double> placed(classes_.size(), 0);
    for (size_t c = 0; c < classes_.size(); ++c) placed[c] = class_total_gpu_[c];
    for (size_t g = 0; g < groups_.size(); ++g) placed[groups_[g].cls] -= groups_[g].gpu_w * groups_[g].units.size();
    for (const Bin& b : existing_)
      for (auto [g, t] : b.content) placed[groups_[g].cls] += groups_[g].gpu_w * t;
    for (const Bin& b : st.bins)
      for (auto [g, t] : b.content) placed[groups_[g].cls] += groups_[g].gpu_w * t * b.mult;
    bool again = false;
    for (size_t c = 0; c < classes_.size(); ++c) {
      const bool limited = classes_[c].spot_allow < kInf || classes_[c].zone_limited;
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
  for (const auto& t : plan.terminations) after -= t.offering.usd_per_hour;
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
    for (const auto& u : n.running) risk += ExpectedInterruptionUsdPerHour(u, n.offering, t);
    risk += existing_[i].risk;
    for (auto [node, k] : existing_[i].moved)
      risk += ExpectedInterruptionUsdPerHour(snap_.nodes[node].running[k], n.offering, t);
  }
  for (const auto& l : plan.launches) risk += l.expected_interruption_usd_per_hour;
  plan.expected_interruption_usd_per_hour = risk;

  // Summary.
  int new_nodes = 0;
  for (const auto& l : plan.launches) new_nodes += l.count;
  std::map<std::string, int> reasons;
  for (const auto& u : plan.unplaced) reasons[std::string(ToString(u.reason))]++;
  std::string s = "placed " + std::to_string(snap_.pending.size() - plan.unplaced.size()) + "/" +
                  std::to_string(snap_.pending.size()) + " pending units; launch " + std::to_string(new_nodes) +
                  " node(s), terminate " + std::to_string(plan.terminations.size()) + "; " +
                  Usd(plan.cost_before_usd_per_hour) + "/h -> " + Usd(plan.cost_after_usd_per_hour) + "/h (+" +
                  Usd(risk) + "/h expected interruption cost)";
  if (!plan.unplaced.empty()) {
    s += "; unplaced:";
    for (const auto& [r, n] : reasons) s += " " + r + "=" + std::to_string(n);
  }
  if (global_budget_ < kInf && !global_budget_hard_ && after > global_budget_ + kEps)
    s += "; over soft budget " + Usd(global_budget_) + "/h";
  for (const auto& p : pools_)
    if (p.budget < kInf && !p.budget_hard) {
      double c = 0;
      for (const auto& l : plan.launches)
        if (l.pool == p.pol.name) c += l.usd_per_hour;
      if (p.cost + c > p.budget + kEps) s += "; pool " + p.pol.name + " over soft budget " + Usd(p.budget) + "/h";
    }
  for (const auto& n : notes_) s += "; " + n;
  plan.summary = std::move(s);
  return plan;
}

}  // namespace

double LostHoursPerInterruption(const DemandUnit& u) {
  const double runtime_h = double(std::max<int64_t>(0, u.expected_runtime.count())) / 3600.0;
  const double ckpt_h = double(std::max<int64_t>(0, u.checkpoint_interval.count())) / 3600.0;
  const double lost = ckpt_h > 0 ? std::min(ckpt_h, runtime_h) / 2 : runtime_h / 2;
  return lost + double(std::max<int64_t>(0, u.restart_cost.count())) / 3600.0;
}

double OnDemandValueUsdPerHour(const DemandUnit& unit, const Offering& offering, const InstanceType& type) {
  const double od = offering.on_demand_usd_per_hour > 0 ? offering.on_demand_usd_per_hour : offering.usd_per_hour;
  return od * ShareOfNode(GpuWeight(unit), std::max<int64_t>(0, unit.cpu_milli), type);
}

double ExpectedInterruptionUsdPerHour(const DemandUnit& unit, const Offering& offering, const InstanceType& type) {
  if (offering.capacity_type != CapacityType::kSpot || offering.interruptions_per_hour <= 0) return 0;
  return offering.interruptions_per_hour * LostHoursPerInterruption(unit) * OnDemandValueUsdPerHour(unit, offering, type);
}

Plan MakePlan(const Snapshot& snapshot, const Policy& policy) { return MakePlan(snapshot, policy, PlannerOptions{}); }

Plan MakePlan(const Snapshot& snapshot, const Policy& policy, const PlannerOptions& options) {
  Planner planner(snapshot, policy, options);
  return planner.Run();
}

}  // namespace gpuscaler
