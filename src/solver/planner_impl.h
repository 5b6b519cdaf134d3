// Private to the planner: the types its passes share and the class that runs
// them. planner_index.cc builds the index (pools, options, classes, groups,
// compatibility, static reasons, existing nodes); fill_search.cc,
// scale_up.cc, greedy.cc and local_search.cc place pending work on existing
// nodes' free room and new nodes; consolidation.cc and moved_work.cc remove
// nodes; planner.cc assembles the Plan. See gpuscaler/solver/planner.h for
// the contract.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuscaler/model/compatibility.h"
#include "gpuscaler/model/find_by_name.h"
#include "gpuscaler/model/gpu.h"
#include "gpuscaler/solver/planner.h"

namespace gpuscaler::solver_detail {

inline constexpr double kEps = 1e-9;
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr int kNoLimit = std::numeric_limits<int>::max();

// What one unit takes from a node: whole GPUs, or a time-shared fraction of
// one (milli), or one MIG instance; plus vCPU (milli) and memory (MiB).
struct Shape {
  int gpus = 0;
  int milli = 0;
  bool mig = false;
  int64_t cpu = 0;
  int64_t mem = 0;
};

struct GpuPart {
  bool mig = false;
  int used_milli = 0;
  MigLayout layout;
};

// A node as bought: its pool, type and zone (indices; -1 when none), its
// capacity type and hourly price, the on-demand price of the same type (what
// work lost to an interruption is worth), its expected interruptions per
// hour (0 on on-demand) and the hours interrupted work waits for a
// replacement (ReplacementWaitHours).
struct NodeOffer {
  int pool = -1;
  int type = -1;
  int zone = -1;
  bool spot = false;
  double price = 0;
  double od = 0;
  double ih = 0;
  double co_reclaim = 0;  // Offering::co_reclaim_share
  double wait_h = 0;
  // New nodes on a reserved offering: the index of its reservation in
  // Snapshot::reservations, whose free slots bound how many the plan opens;
  // -1 otherwise (and for existing nodes, which the cloud's count has).
  int reservation = -1;
};

// Free capacity of one node (or `mult` identical new nodes) and what the plan
// puts on it.
struct Bin : NodeOffer {
  int option = -1;  // Option index (new nodes)
  int node = -1;    // snapshot node index (existing nodes)
  const GpuModel* gpu = nullptr;
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

// One offering bought for one pool: a kind of node the plan may open.
struct Option : NodeOffer {
  int offering = -1;
  bool usable = true;         // available and within the spot ceilings
  bool unavailable = false;   // the cloud reported no capacity
  bool over_ceiling = false;  // spot above the price or interruption ceiling
  // Spot with capacity, in a pool in its reclaim cooldown: unavailable
  // (unusable) but to held deadline work, which rides out reclaims.
  bool reclaimed = false;
};

// Pending units with identical requirements, placed together.
struct Group {
  std::vector<int> units;  // pending indices, snapshot order
  const DemandUnit* rep = nullptr;
  int index = -1;  // in Planner::groups_
  int cls = -1;
  int team = -1;  // index in Planner::teams_ when its team has a cap, else -1
  Shape shape;
  double gpu_w = 0;
  double loss_h = 0;
  int reach = 1;              // InterruptionReach: units one interruption loses
  bool interruptible = true;  // may run on spot (see Planner::MaySpot)
  bool spot_paused = false;   // interruptible, but its class's spot is paused
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
  // Snapshot::spot_floor_credit_gpus: by its sign the moment's on-demand
  // floor is one unit lower or higher, the class's largest unit (pending or
  // running), largest_unit.
  double floor_credit = 0;
  double largest_unit = 0;
  double floor_shift = 0;  // what SetAllowances added to spot_allow for the credit
  bool zone_limited = false;
  std::vector<double> zone_allow;
  // spot.max_pool_share < 1: GPUs the class may still add on spot per spot
  // pool (Planner::SpotPoolOf), floored at one unit per pool.
  bool pool_limited = false;
  std::vector<double> pool_allow;
  bool blocked = false;
  bool spot_paused = false;  // Snapshot::spot_paused_classes or spot_budget_spent_classes
  bool capacity_paused = false;      // Snapshot::spot_paused_classes
  bool lost_work_budget_spent = false;  // Snapshot::spot_budget_spent_classes
};

// A team named by budget.teams: what its cap allows per hour from now on
// (HourlyAllowanceUsd), whether the cap is hard, and what its running work
// already costs (its share of the prices of the nodes it runs on).
struct TeamInfo {
  std::string name;
  double allowance_usd = kInf;
  bool hard = true;
  double running_usd = 0;
};

// What the plan may still add: per class, GPUs on spot (kInf: no share
// limit), GPUs per zone (zone-spread classes only) and GPUs per spot pool
// (pool-limited classes only); per team, USD/h of its share of node prices
// (kInf: no hard cap). Placing work consumes them, moving or removing it
// gives them back.
struct Allowances {
  std::vector<double> spot;
  std::vector<std::vector<double>> zone;
  std::vector<std::vector<double>> spot_pool;
  std::vector<double> team_usd;
  // Per group (empty: none): kept off spot nodes, new and existing, by a
  // search variant that leaves its class's spot share to other groups.
  std::vector<char> no_spot;
  bool KeptOffSpot(int group) const { return group >= 0 && size_t(group) < no_spot.size() && no_spot[group]; }
};

struct PoolInfo {
  NodePoolPolicy pol;
  int count = 0;
  double cost = 0;
  double budget = kInf;
  bool budget_hard = true;
  int disrupt_allow = 0;
};

// The mutable part of a scale-up attempt. FillAndScaleUp's memo compares
// start states field by field (SameStart in fill_search.cc): a new field
// goes there too.
struct State {
  std::vector<int> rem;
  std::vector<Bin> bins;
  Allowances allow;
  std::vector<int> pool_count;
  std::vector<double> pool_cost;
  std::vector<int> reserved_added;  // per Snapshot::reservations: new nodes on it
  double cost = 0;
  int added = 0;
  std::vector<int> blocked;  // per group: UnplacedReason as int, -1 none
  std::vector<char> team_blocked;  // per group: blocked by its team's hard cap
  std::vector<int> budget_cut;  // per group: units left out by the budget prefix
  std::vector<char> cut_by_team;  // per group: that prefix was its team's
};

// Adds `nodes` new nodes of `o` (negative: takes them away) to `st`: its
// pool's count and cost, its reservation's nodes, the plan's cost and the
// nodes added; the bins are the caller's.
inline void CountNewNodes(State& st, const Option& o, int nodes) {
  st.pool_count[o.pool] += nodes;
  st.pool_cost[o.pool] += o.price * nodes;
  if (o.reservation >= 0) st.reserved_added[size_t(o.reservation)] += nodes;
  st.cost += o.price * nodes;
  st.added += nodes;
}

// One try of Planner::FillAndScaleUp: the new nodes planned after the free
// room of existing nodes was filled in `order`, the existing nodes that took
// work (Planner::SaveFilled), and what ranks the try: units left unplaced by
// priority (UnplacedByPriority) and its expected cost.
struct FillTry {
  State st;
  std::vector<std::pair<int, Bin>> filled;
  std::vector<int> unplaced;
  double cost = 0;
  std::vector<int> order;
};

// What the tries of one FillAndScaleUp share: the fills already planned
// (units left, groups kept off spot, each existing node's content), how
// many tries were planned, and each scale-up done, by its start state.
struct FillMemo {
  std::set<std::vector<int>> filled;
  std::vector<std::pair<State, State>> scaled;  // (start, ScaleUp(start))
  int planned = 0;
};

// What Greedy needs of one ranking of the groups (`rank`: position per
// group), built once per plan: each option's groups in rank order, and the
// options that may win (open to some group, not dominated; see
// Planner::GreedyOrderFor).
struct GreedyOrder {
  std::vector<int> rank;
  std::vector<std::vector<int>> groups_by_option;
  std::vector<int> active;
};

// The moves consolidation makes, each its own strategy. The driver
// (Consolidation::Run) tries them node by node in this order (empty, delete,
// then the better of replace and part to free room), then over groups of
// nodes (groups of three or more, split, then groups of two).
enum class ConsolidationStrategy : uint8_t {
  kEmpty = 1 << 0,            // an empty node goes
  kDelete = 1 << 1,           // a node whose work all fits in other nodes' free room goes
  kReplace = 1 << 2,          // a node's work moves to one cheaper new node
  kPartToFreeRoom = 1 << 3,   // part of it to free room, the rest to one cheaper new node
  kGroups = 1 << 4,           // several nodes of a pool onto one cheaper new node
  kSplit = 1 << 5,            // two nodes' work split between two cheaper new nodes
};

// A set of strategies, as a bit mask of ConsolidationStrategy values.
struct ConsolidationStrategies {
  uint8_t mask = 0xff;
  bool Has(ConsolidationStrategy s) const { return (mask & uint8_t(s)) != 0; }
  static ConsolidationStrategies Only(ConsolidationStrategy s) { return {uint8_t(s)}; }
};

enum Block {
  kBlockNone = 0,
  kBlockBudget,
  kBlockTeamBudget,
  kBlockTick,
  kBlockPoolMax,
  kBlockSpot,
  kBlockZone,
  kBlockReservationFull,
};

class Packing;

class Planner {
 public:
  Planner(const Snapshot& s, const Policy& p, const PlannerOptions& o) : snap_(s), policy_(p), opts_(o) {}
  // Pending units from this index on are forecast units
  // (solver/forecast_demand.h): launch reasons count them apart.
  void SetForecastUnitsFrom(size_t index) { forecast_from_ = index; }
  // Consolidation makes only these moves (all by default); for tests of one
  // strategy alone.
  void SetConsolidationStrategies(ConsolidationStrategies s) { consolidation_strategies_ = s; }

  Plan Run();

 private:
  // The moves on a placement, and the passes built on them, use the index
  // and the rules below.
  friend class Packing;
  friend class FreeRoomRepair;
  friend class LocalSearchPass;
  friend class Consolidation;

  void BuildIndex();
  void BuildPools();
  void BuildOptions();
  void BuildClasses();
  void SetAllowances(const std::vector<double>& totals);
  void GroupUnits();
  void BuildGroups();
  // Sets existing_ to every node's InitExisting bin and existing_order_ to
  // the accepting ones in placement order. Both depend on the snapshot
  // only: the first call builds them, later calls reset the bins that took
  // work (RestoreFilled).
  void BuildExisting();
  // While FillAndScaleUp runs, a bin of existing_ that holds no pending
  // work (content empty) is as existing_initial_ has it: work only lands
  // with a content entry, and taking it off rebuilds the bin from
  // existing_initial_. So the bins with content, and their index, are all
  // of existing_: SaveFilled copies them into `out` (its storage reused),
  // RestoreFilled sets existing_ back to what `saved` holds.
  void SaveFilled(std::vector<std::pair<int, Bin>>& out) const;
  void RestoreFilled(const std::vector<std::pair<int, Bin>>& saved);
  // Sets existing_for_group_, existing_room_for_group_ and
  // existing_fillable_ from existing_initial_ (BuildExisting).
  void IndexExistingRoom();
  // Existing node `node` as the snapshot has it: its free room after its
  // running work, nothing pending on it.
  void InitExisting(int node, Bin& b) const;
  void BuildStaticReasons();
  void BuildTeams();

  bool PoolAllowsOffering(const NodePoolPolicy& p, const Offering& o, const InstanceType& t) const;
  // The index in Snapshot::reservations of a reserved offering's
  // reservation; -1 for other offerings or one the snapshot lacks.
  int ReservationOf(const Offering& o) const;
  // Nodes the plan may still open on `o`'s reservation (kNoLimit when `o`
  // is not reserved).
  int ReservedRoom(const NodeOffer& o, const State& st) const;
  // Whether unit `u` may run on a node of `off`: true but on a Capacity
  // Block, whose nodes are retired (Reservation::RetireAt) before it ends;
  // there only when the unit's work (expected_runtime), or for work that
  // checkpoints one checkpoint interval of it, ends before the retirement,
  // counted from when a node launched now would be up. Other work goes
  // elsewhere.
  bool FitsBeforeRetirement(const DemandUnit& u, const Offering& off) const;
  // Why a launch takes slots of reservation `r` (through its offering
  // `off`), for the launch's reason.
  std::string ReservedSlotWhy(const Reservation& r, const Offering& off) const;
  int FitOnEmpty(const Group& g, int type) const;
  const GpuModel* GpuOf(const InstanceType& t) const;
  int MigIndex(const DemandUnit& u, const InstanceType& t) const;
  // Whether `u` of class `cls` may run on spot: the unit and its class are
  // interruptible (InterruptibleByPolicy) and the class's spot is not paused.
  // A unit pinned to spot (a deferrable unit held for spot, a pod selecting
  // spot) ignores the pause: the pause keeps work on on-demand after a spot
  // capacity error or while the class's lost-work budget is spent, and such
  // a unit may not go there.
  bool InterruptibleByPolicy(const DemandUnit& u, int cls) const;
  // Why the class's spot is paused, for reasons and notes: the words after
  // "spot paused" (" after a capacity error", ", lost-work budget spent").
  std::string SpotPauseWhy(int cls) const;
  bool MaySpot(const DemandUnit& u, int cls) const {
    return InterruptibleByPolicy(u, cls) && (!classes_[cls].spot_paused || PinnedToSpot(u));
  }
  static bool PinnedToSpot(const DemandUnit& u) { return u.capacity_type == CapacityType::kSpot; }
  bool UnitAllowed(const DemandUnit& u, int cls, int pool, const Offering& off, int type, int zone, int* mig_idx) const;

  // The zone, capacity type, prices and replacement wait of `o` (pool and
  // type are the caller's, set before).
  void SetPrices(const Offering& o, NodeOffer& n) const;
  // An empty node of snapshot instance type `type` (index): its GPU model
  // and free GPUs, vCPU and memory.
  void SetCapacity(int type, Bin& b) const;
  void InitBin(Bin& b, int option) const;
  double Risk(const Group& g, const NodeOffer& b) const;
  // A node's price per GPU (money PricePerGpu; 0 without a known type):
  // what a whole GPU of work placed there costs its team. The planner never
  // oversubscribes a node, so this is the money rule's charge per GPU held
  // (SplitNodePrice) for every placement it makes.
  double PricePerGpu(const NodeOffer& b) const;
  // The spot failure domain (instance family x zone: a zone's spot capacity
  // of one family goes at once, every size together) of `b` as an index
  // into Allowances::spot_pool, or -1 when `b` is not spot or has no type
  // or zone.
  int SpotPoolOf(const NodeOffer& b) const {
    return b.spot && b.type >= 0 && b.zone >= 0 ? family_of_type_[b.type] * int(zone_names_.size()) + b.zone
                                                : -1;
  }
  int SpotPoolCount() const { return family_count_ * int(zone_names_.size()); }
  // How many units of `g` the allowances let the plan put on `b`.
  int Limit(const Group& g, const NodeOffer& b, const Allowances& a) const;
  // Takes (count > 0) or gives back (count < 0) the allowances of `count`
  // units of `g` on `b`.
  void Consume(const Group& g, const NodeOffer& b, double count, Allowances& a) const;
  // Whether the allowances `g` uses on `b` are still >= 0 (within `slack`).
  bool Within(const Group& g, const NodeOffer& b, const Allowances& a, double slack) const;
  int MaxOpen(const Option& o, const State& st) const;
  int BlockOf(const Group& g, int option, const State& st) const;

  // The order in which groups take the free room of existing nodes: GPU
  // work before CPU-only work, each by `unit_value` (expected USD/h of one
  // unit placed elsewhere) per GPU it takes (per unit for CPU-only work, or
  // per vCPU with `cpu_per_vcpu`), highest first.
  std::vector<int> ExistingFillOrder(const std::vector<double>& unit_value, bool cpu_per_vcpu = false) const;
  // The order by priority, then size: what keeps high-priority work placed
  // when budgets or limits leave some unplaced.
  std::vector<int> PriorityFillOrder() const;
  void PlaceOnExisting(State& st, const std::vector<int>& order);
  // Per group, what one of its units costs on the new nodes of `st` (its
  // part of their prices plus its risk), never below Group::lb; lb for
  // groups with no unit there.
  std::vector<double> RealizedUnitValue(const State& st) const;
  // Units left unplaced, as (priority, count) pairs flattened, highest
  // priority first.
  std::vector<int> UnplacedByPriority(const State& st) const;
  // Rebuilds the existing nodes, fills their free room, scales up the rest;
  // on small inputs with free room several fill orders, keeping the best.
  State FillAndScaleUp(const State& base);
  // One try of FillAndScaleUp: fills existing nodes' free room from `base`
  // in `order` (groups in `no_spot` kept off spot), then ScaleUp, then with
  // `repair` UseFreeRoom. Nothing when `memo` shows the fill was planned.
  std::optional<FillTry> TryFill(const State& base, const std::vector<int>& order,
                                 const std::vector<char>& no_spot, bool repair, FillMemo& memo);
  // Whether units of `g` may go on existing node `node` as built
  // (existing_initial_: pool, zone, type pin, fit, capacity type, and not a
  // node the units avoid); allowances are the caller's.
  bool MayUseExisting(const Group& g, int node) const;
  // Repairs after the constructive pass, on the free room of existing nodes
  // and of new single nodes: closes a new node when its units fit in that
  // room (moving out of the way work that has room elsewhere), and moves
  // pending work off existing spot nodes into room with less risk. Keeps
  // every move that lowers the expected cost.
  void UseFreeRoom(State& st);
  // UseFreeRoom's: opens new single nodes for `count` units of group `g` in
  // `packing`, each of the option with the lowest expected cost per unit it
  // holds that the limits allow (`scratch` is working storage). Adds their
  // cost to `delta`; returns the units left over.
  int OpenSingleNodes(Packing& packing, int g, int count, double& delta, Bin& scratch) const;
  // The GreedyOrder of `rank`, built on first use; references stay valid
  // for the planner's life.
  const GreedyOrder& GreedyOrderFor(const std::vector<int>& rank);
  void Greedy(State& st, const GreedyOrder& order) const;
  // Per option, what the node slot it takes is worth while ScaleUp compares
  // plans (slot_price_). A pool's slots are scarce when it had slots left
  // below its max_nodes in `start` and the plan `planned` takes it past
  // kScarceSlotShare of that cap. There a node is charged the GPU room its
  // slot could have held and it does not: the share of the most GPUs an
  // option of the work holds that it lacks, times the dearest such option's
  // price. 0 in other pools; empty when no pool's slots are scarce.
  std::vector<double> SlotPrices(const State& start, const State& planned) const;
  void Classify(State& st) const;
  // With `thorough` (small inputs) the moves also split bulk bins: a few
  // copies of one bin merge with copies of another, and a class's spot
  // share moves between bins a copy at a time.
  void LocalSearch(State& st, bool thorough);
  // Sets `b` to one new node of `option` holding `content` ((group, units
  // per node) pairs); false, with `b` unspecified, when a group may not
  // use the option or the content does not fit.
  bool Refill(Bin& b, int option, const std::vector<std::pair<int, int>>& content) const;
  // A new node's expected cost per hour: price and risk, plus its slot's
  // price while ScaleUp prices scarce slots.
  double BinCost(const Bin& b) const {
    return b.price + b.risk + (slot_price_.empty() ? 0.0 : slot_price_[b.option]);
  }
  double TotalCost(const State& st) const;
  int Unplaced(const State& st) const;
  State ScaleUp(const State& base);
  void MinNodes(State& st);
  // Moves running unit `u` (of class `cls`) from `from` to `to` in `a`;
  // false, and `a` unchanged, when that would take an allowance below 0.
  bool MoveAllowance(const DemandUnit& u, int cls, const Bin& from, const Bin& to, Allowances& a) const;
  // Puts `units` ((node, running index) of existing nodes) into `bin`, a
  // fresh bin of option `o`, charging their moves to `allow` and their
  // expected interruption loss to `risk`; false when one does not fit there
  // or is not allowed.
  bool FillNewNode(Bin& bin, int o, Allowances& allow, const std::vector<std::pair<int, int>>& units,
                   double* risk) const;
  // Keeps the highest-priority units of the groups in `scope` that fit
  // under a binding hard budget (`fits`), cutting the rest from `base`.
  State KeepPriorityPrefix(State& base, const std::vector<int>& scope, bool by_team,
                           const std::function<State(const State&)>& solve,
                           const std::function<bool(const State&)>& fits) const;
  void Consolidate(State& st, Plan& plan, std::vector<TerminationAction>& terms);
  void Assemble(State& st, Plan& plan);
  // Assemble's steps. The placements of pending work on existing nodes,
  // then one launch per (pool, offering) in the order first chosen with the
  // placements on it, then consolidation's moves already in `plan`; returns
  // each launch's bins. `cursor`: per group, the units placed so far.
  std::vector<std::vector<const Bin*>> AssemblePlacements(const State& st, Plan& plan,
                                                          std::vector<size_t>& cursor) const;
  // The reason and fallbacks of launch `l`, made of `bins` (`probe` is
  // working storage).
  void DescribeLaunch(LaunchAction& l, const std::vector<const Bin*>& bins, bool soft_over, Bin& probe) const;
  // Each group's units past `cursor`, unplaced, with the reason.
  void AddUnplaced(const State& st, const std::vector<size_t>& cursor, Plan& plan) const;
  std::string Describe(const Offering& o) const;

  const Snapshot& snap_;
  const Policy& policy_;
  PlannerOptions opts_;

  std::unordered_map<std::string, const GpuModel*> gpu_by_name_;
  std::unordered_map<std::string, int> type_by_name_;
  std::vector<const GpuModel*> gpu_by_type_;  // GpuOf each snapshot instance type
  std::vector<int> family_of_type_;  // per instance type: its family's index (a type without one is its own)
  int family_count_ = 0;
  std::vector<double> learned_wait_h_by_type_;  // the family's learned warm-up, hours; -1: none
  std::map<std::string, int> zone_index_;
  std::vector<std::string> zone_names_;
  std::vector<PoolInfo> pools_;
  std::vector<Option> options_;
  std::vector<int> options_by_price_;
  std::vector<std::vector<int>> pool_options_by_price_;  // per pool: its options, in options_by_price_ order
  std::vector<ClassInfo> classes_;
  std::map<std::string, int> class_index_;
  std::vector<TeamInfo> teams_;
  std::map<std::string, int> team_index_;
  std::vector<Group> groups_;
  std::vector<int> unit_group_;
  std::vector<std::vector<int>> opt_groups_;
  std::deque<GreedyOrder> greedy_orders_;  // GreedyOrderFor's, by first use
  std::vector<double> slot_price_;         // SlotPrices' while ScaleUp plans with them, else empty
  std::vector<Bin> existing_;            // by node index
  std::vector<Bin> existing_initial_;    // InitExisting of each node (BuildExisting)
  // Per node, per running unit: its class index (BuildExisting).
  std::vector<std::vector<int>> running_class_;
  bool existing_built_ = false;
  std::vector<int> existing_order_;      // accepting bins, placement order
  // Per group: the nodes of existing_order_ it may use (MayUseExisting), and
  // those of them with room for one of its units as built. While
  // FillAndScaleUp runs a node only loses room (taking work off rebuilds it
  // from existing_initial_), so no other node takes pending work; the nodes
  // some group has room on, by index, are existing_fillable_.
  std::vector<std::vector<int>> existing_for_group_;
  std::vector<std::vector<int>> existing_room_for_group_;
  std::vector<int> existing_fillable_;
  std::vector<std::vector<double>> existing_zone_gpu_;  // class x zone
  std::vector<std::vector<double>> existing_pool_gpu_;  // class x spot domain (only with max_pool_share < 1)
  std::vector<double> class_total_gpu_;
  std::vector<double> class_spot_gpu_;
  std::vector<double> max_unit_;
  double global_budget_ = kInf;
  bool global_budget_hard_ = true;
  bool any_hard_budget_ = false;
  double base_cost_ = 0;
  std::vector<std::string> notes_;
  size_t forecast_from_ = static_cast<size_t>(-1);
  ConsolidationStrategies consolidation_strategies_;
};

// The value under `key`, or `absent`.
template <typename T>
T ValueOr(const std::map<std::string, T>& m, const std::string& key, T absent) {
  auto it = m.find(key);
  return it == m.end() ? absent : it->second;
}

std::string Usd(double v);
std::string Fixed(double v, int digits);
Shape ShapeOf(const DemandUnit& u);
// Units with equal requirements (class, shape, pins, behaviour, team) are
// interchangeable to the planner: pending ones form one Group, and a running
// one that found no room in a consolidation pass stands for the others.
size_t DemandKeyHash(const DemandUnit& u);
bool SameDemand(const DemandUnit& a, const DemandUnit& b);
// Places up to `max` units of shape `s` on `b`; returns how many fit.
int Take(Bin& b, const Shape& s, int mig_idx, int max);
// True when `b` has too little vCPU, memory or whole GPUs left for one
// unit of `s`: Take would place none (and change nothing). A cheap test
// before the allowances are looked at.
inline bool NoRoomForOne(const Bin& b, const Shape& s) {
  return (s.cpu > 0 && b.free_cpu < s.cpu) || (s.mem > 0 && b.free_mem < s.mem) ||
         (s.gpus > 0 && b.free_whole < s.gpus);
}

}  // namespace gpuscaler::solver_detail
