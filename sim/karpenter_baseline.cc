// The Karpenter baseline: the provisioning and disruption decisions of
// Karpenter v1 with its defaults, as a planner function run through the
// same controller and simulated cloud as gpuscaler. docs/simulator.md lists
// each rule with its source in Karpenter's code; the rules, briefly:
//  - pending pods are placed largest CPU request first, then memory;
//  - each goes on the first existing node with room, else on the in-flight
//    new node (NodeClaim) with the fewest pods that can still hold it, else
//    on a new NodeClaim of the first NodePool that can;
//  - a NodeClaim keeps every offering that can hold all its pods; at launch
//    it is spot when any of them is spot, the spot offering chosen
//    price-capacity-optimized (the pools with the most spare capacity, the
//    cheapest of those), else on-demand at the lowest price; the other
//    offerings of that capacity type are the fallbacks;
//  - disruption (consolidationPolicy WhenEmptyOrUnderutilized,
//    consolidateAfter 0s): empty nodes are deleted; then one underutilized
//    node per tick is deleted when its pods fit on the other nodes, or
//    replaced by one cheaper node for the pods the other nodes cannot take
//    (never spot by spot: SpotToSpotConsolidation is off by default); at most 10 % of a NodePool's nodes
//    (rounded up) are disrupted at once; nodes receiving pending pods are not disrupted.
// A class with an on-demand floor (max_spot_share < 1) is split as the
// Karpenter blueprint "Split Between On-Demand & Spot Instances" does
// (sim/capacity_spread.h): its pods spread over capacity-spread domains,
// each pod to the domain with the fewest of the class's pods, and only on
// that domain's nodes or a NodeClaim of that domain's NodePool (its capacity
// type only: a spot domain's pod waits when spot has no capacity); a node's
// pods are consolidated only within its domain, and a replacement keeps its
// domain and capacity type.
// Reserved capacity (Karpenter v1.3+, capacityReservationSelectorTerms):
// a reserved offering is priced at its on-demand price / 10,000,000, so it
// is the cheapest wherever it fits; a NodeClaim with a reserved option
// launches reserved (before spot and on-demand), while the reservation has
// slots left; consolidation replaces a node by a reserved one as by any
// cheaper node.
// Offerings that fail with insufficient capacity are skipped for 3 minutes
// (RunSpec::unavailable_for, set by MakeRunSpec). Not modelled: multi-node
// consolidation, drift, expiry (720 h), NodePool weights (pools are taken in
// policy order).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "sim/baseline_fit.h"
#include "sim/baselines.h"
#include "sim/capacity_spread.h"

namespace gpuscaler::sim {
namespace {

// The fitting rules every greedy baseline shares (sim/baseline_fit.h).
using namespace baseline_detail;

constexpr double kDisruptionBudgetShare = 0.10;
constexpr size_t kMaxFallbacks = 20;

// An offering's Spot Instance Advisor band by the chance that an instance is
// interrupted within a month (0: under 5 %, 1: 5-10 %, 2: 10-15 %, 3:
// 15-20 %, 4: more): the simulator's measure of a spot pool's spare capacity.
int CapacityBand(const Offering& o) {
  const double within_month = 1.0 - std::exp(-std::max(0.0, o.interruptions_per_hour) * 730.0);
  return std::min(4, static_cast<int>(within_month / 0.05));
}

// The price Karpenter ranks an offering by: a reserved one's on-demand
// price / 10,000,000 (its reserved offerings are already paid for).
double KarpenterPrice(const Offering& o) {
  if (o.capacity_type != CapacityType::kReserved) return o.usd_per_hour;
  return (o.on_demand_usd_per_hour > 0 ? o.on_demand_usd_per_hour : o.usd_per_hour) / 1e7;
}

// Free slots per reservation id, as the plan takes them.
using ReservedLeft = std::map<std::string, int>;

bool HasSlot(const Offering& o, const ReservedLeft& left) {
  if (o.capacity_type != CapacityType::kReserved) return true;
  auto it = left.find(o.reservation_id);
  return it != left.end() && it->second > 0;
}

// The offerings a launch tries, in order: reserved ones with free slots by
// price, then spot when any option is spot, by price-capacity-optimized
// (band, then price); else on-demand by price.
std::vector<const Candidate*> LaunchOrder(const std::vector<const Candidate*>& options, const ReservedLeft& left) {
  std::vector<const Candidate*> reserved;
  for (const Candidate* c : options) {
    if (c->offering->capacity_type == CapacityType::kReserved && HasSlot(*c->offering, left)) reserved.push_back(c);
  }
  const bool spot = std::any_of(options.begin(), options.end(), [](const Candidate* c) {
    return c->offering->capacity_type == CapacityType::kSpot;
  });
  std::vector<const Candidate*> out;
  for (const Candidate* c : options) {
    if (c->offering->capacity_type != CapacityType::kReserved && (c->offering->capacity_type == CapacityType::kSpot) == spot)
      out.push_back(c);
  }
  const auto by_price = [spot](const Candidate* a, const Candidate* b) {
    if (spot && CapacityBand(*a->offering) != CapacityBand(*b->offering))
      return CapacityBand(*a->offering) < CapacityBand(*b->offering);
    if (KarpenterPrice(*a->offering) != KarpenterPrice(*b->offering))
      return KarpenterPrice(*a->offering) < KarpenterPrice(*b->offering);
    return a->offering->Key() < b->offering->Key();
  };
  std::stable_sort(reserved.begin(), reserved.end(), by_price);
  std::stable_sort(out.begin(), out.end(), by_price);
  reserved.insert(reserved.end(), out.begin(), out.end());
  return reserved;
}

// A new node being planned: the offerings that can still hold all its pods,
// each with its free room after them.
struct NodeClaim {
  std::string pool;
  std::vector<const Candidate*> options;
  std::vector<Bin> room;  // parallel to options
  std::vector<std::string> unit_ids;
  // Set for a claim opened for a split class's pod: the node's
  // capacity-spread labels (its options are of that domain's capacity type).
  std::optional<std::map<std::string, std::string>> spread_labels;
};

// Narrows `claim` to the options that also hold `u`; false (claim unchanged)
// when none does.
bool AddToClaim(const Policy& policy, const DemandUnit& u, NodeClaim& claim) {
  std::vector<const Candidate*> options;
  std::vector<Bin> room;
  for (size_t i = 0; i < claim.options.size(); ++i) {
    if (!Admits(policy, u, claim.pool, *claim.options[i]->offering)) continue;
    Bin b = claim.room[i];
    if (!TryFit(u, b, true)) continue;
    options.push_back(claim.options[i]);
    room.push_back(std::move(b));
  }
  if (options.empty()) return false;
  claim.options = std::move(options);
  claim.room = std::move(room);
  claim.unit_ids.push_back(u.id);
  return true;
}

// Pods in the order Karpenter's scheduling queue pops them.
std::vector<const DemandUnit*> QueueOrder(const std::vector<DemandUnit>& units) {
  std::vector<const DemandUnit*> order;
  for (const DemandUnit& u : units) order.push_back(&u);
  std::stable_sort(order.begin(), order.end(), [](const DemandUnit* a, const DemandUnit* b) {
    if (a->cpu_milli != b->cpu_milli) return a->cpu_milli > b->cpu_milli;
    return a->memory_mib > b->memory_mib;
  });
  return order;
}

class KarpenterPlanner {
 public:
  KarpenterPlanner(const Snapshot& s, const Policy& policy)
      : s_(s),
        policy_(policy),
        index_(s),
        all_(index_.Candidates(policy, true, /*reserved_allowed=*/true)),
        spread_(policy),
        domain_pods_(spread_) {
    for (const Reservation& r : s.reservations) reserved_left_[r.id] = r.OpenAt(s.time) ? r.available_count : 0;
  }

  Plan Run() {
    for (const Node& n : s_.nodes) {
      plan_.cost_before_usd_per_hour += n.offering.usd_per_hour;
      if (n.state != NodeState::kTerminating) {
        ++pool_nodes_[n.pool];
        domain_pods_.AddRunning(n.labels, n.running);
      }
    }
    bins_ = index_.ExistingBins();
    Provision();
    Disrupt();
    FinishPlan(plan_, "karpenter");
    return std::move(plan_);
  }

 private:
  void Provision() {
    std::vector<NodeClaim> claims;
    for (const DemandUnit* u : QueueOrder(s_.pending)) {
      const CapacitySpread* split = spread_.Find(u->workload_class);
      const int domain = split != nullptr ? domain_pods_.Next(u->workload_class, u->id) : -1;
      auto in_domain = [&](const std::map<std::string, std::string>& labels) {
        return split == nullptr || SpreadClasses::InDomain(labels, u->workload_class, domain);
      };
      if (PlaceOnExisting(*u, in_domain)) {
        if (split != nullptr) domain_pods_.Add(u->workload_class, domain);
        continue;
      }
      std::vector<size_t> by_load(claims.size());
      for (size_t i = 0; i < claims.size(); ++i) by_load[i] = i;
      std::stable_sort(by_load.begin(), by_load.end(), [&](size_t a, size_t b) {
        return claims[a].unit_ids.size() < claims[b].unit_ids.size();
      });
      bool placed = false;
      for (size_t i : by_load) {
        // A split pod joins only a claim of its domain's NodePool.
        if (split != nullptr && (!claims[i].spread_labels || !in_domain(*claims[i].spread_labels))) continue;
        if ((placed = AddToClaim(policy_, *u, claims[i]))) break;
      }
      if (!placed) {
        if (std::optional<NodeClaim> claim = NewClaim(*u, split, domain)) {
          ++pool_nodes_[claim->pool];
          claims.push_back(std::move(*claim));
          placed = true;
        } else {
          std::string why = "karpenter: no NodePool can launch a node for it";
          if (split != nullptr) {
            why += " in capacity-spread domain " + SpreadLabelValue(domain) + " of " +
                   std::to_string(split->domains) + " (" + std::string(ToString(split->TypeOf(domain))) +
                   " only)";
          }
          plan_.unplaced.push_back(
              {u->id, u->workload_class, UnplacedReason::kNoOfferingFits, std::move(why)});
        }
      }
      if (placed && split != nullptr) domain_pods_.Add(u->workload_class, domain);
    }
    LaunchIndex launch_of;
    for (const NodeClaim& c : claims) {
      const std::vector<const Candidate*> order = LaunchOrder(c.options, reserved_left_);
      if (order.empty()) continue;
      const std::map<std::string, std::string> labels =
          c.spread_labels ? *c.spread_labels
                          : spread_.LabelsForNewNode(c.pool, order.front()->offering->capacity_type, "", -1);
      AddLaunch(c.pool, order, c.unit_ids, "pending pods", labels, launch_of);
    }
  }

  template <class InDomain>
  bool PlaceOnExisting(const DemandUnit& u, const InDomain& in_domain) {
    for (Bin& b : bins_) {
      if (!b.accepts || !Admits(policy_, u, b.pool, *b.offering) || !in_domain(b.spread_labels) ||
          !TryFit(u, b, true))
        continue;
      receiving_.insert(b.node_id);
      return true;
    }
    return false;
  }

  // A claim of the first NodePool that can hold `u`; for a pod of a split
  // class, of `domain`'s capacity type and labelled with it.
  std::optional<NodeClaim> NewClaim(const DemandUnit& u, const CapacitySpread* split, int domain) const {
    for (const NodePoolPolicy& pool : policy_.pools) {
      auto n = pool_nodes_.find(pool.name);
      if (n != pool_nodes_.end() && n->second >= pool.max_nodes) continue;
      NodeClaim claim;
      claim.pool = pool.name;
      for (const Candidate& c : all_) {
        if (c.pool != pool.name) continue;
        if (split != nullptr && c.offering->capacity_type != split->TypeOf(domain)) continue;
        claim.options.push_back(&c);
        claim.room.push_back(index_.EmptyBin(c.pool, *c.offering));
      }
      if (split != nullptr) {
        claim.spread_labels =
            spread_.LabelsForNewNode(pool.name, split->TypeOf(domain), u.workload_class, domain);
      }
      if (AddToClaim(policy_, u, claim)) return claim;
    }
    return std::nullopt;
  }

  // (pool, offering, node labels) -> launch
  using LaunchIndex =
      std::map<std::tuple<std::string, std::string, std::map<std::string, std::string>>, size_t>;

  // Adds one node of `order`'s first offering for `unit_ids`; returns the
  // index of its launch in the plan.
  size_t AddLaunch(const std::string& pool, const std::vector<const Candidate*>& order,
                   const std::vector<std::string>& unit_ids, const std::string& why,
                   const std::map<std::string, std::string>& labels, LaunchIndex& launch_of) {
    const Offering& best = *order.front()->offering;
    auto [it, added] = launch_of.emplace(std::make_tuple(pool, best.Key(), labels), plan_.launches.size());
    if (added) {
      LaunchAction l;
      l.pool = pool;
      l.offering = best;
      l.node_labels = labels;
      for (size_t k = 1; k < order.size() && l.fallbacks.size() < kMaxFallbacks; ++k)
        l.fallbacks.push_back(*order[k]->offering);
      l.reason = "karpenter: " + std::string(ToString(best.capacity_type)) + " " + best.instance_type + " for " + why;
      plan_.launches.push_back(std::move(l));
    }
    LaunchAction& l = plan_.launches[it->second];
    l.count += 1;
    l.usd_per_hour += best.usd_per_hour;
    if (best.capacity_type == CapacityType::kReserved) --reserved_left_[best.reservation_id];
    l.unit_ids.insert(l.unit_ids.end(), unit_ids.begin(), unit_ids.end());
    return it->second;
  }

  void Disrupt() {
    std::map<std::string, int> nodes;
    for (const Node& n : s_.nodes) ++nodes[n.pool];
    std::map<std::string, int> allowed;
    for (const auto& [pool, count] : nodes)
      allowed[pool] = static_cast<int>(std::ceil(kDisruptionBudgetShare * count - 1e-9));
    for (const Node& n : s_.nodes) {
      if (n.state == NodeState::kTerminating || n.state == NodeState::kDraining) --allowed[n.pool];
    }
    const std::set<std::string> blocked = PoolsOfBlockedClasses(s_, policy_);
    auto disruptable = [&](const Node& n) {
      return n.state == NodeState::kReady && !n.do_not_disrupt && receiving_.count(n.id) == 0 &&
             blocked.count(n.pool) == 0 && allowed[n.pool] > 0;
    };
    for (const Node& n : s_.nodes) {
      if (!n.running.empty() || !disruptable(n)) continue;
      Terminate(n, TerminationKind::kEmpty, KarpenterPrice(n.offering), "karpenter: empty node");
      --allowed[n.pool];
    }
    // Single-node consolidation: candidates by savings per disrupted pod, the
    // first that can be deleted or replaced by one cheaper node.
    std::vector<const Node*> candidates;
    for (const Node& n : s_.nodes) {
      if (!n.running.empty() && disruptable(n)) candidates.push_back(&n);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [](const Node* a, const Node* b) {
      return KarpenterPrice(a->offering) / double(a->running.size()) >
             KarpenterPrice(b->offering) / double(b->running.size());
    });
    for (const Node* n : candidates) {
      // The scheduling simulation: the node's pods onto the other nodes
      // first, at most one new node for the rest.
      const std::vector<const DemandUnit*> left = PodsWithoutRoomElsewhere(*n);
      if (left.empty()) {
        Terminate(*n, TerminationKind::kConsolidate, KarpenterPrice(n->offering),
                  "karpenter: underutilized, its pods fit on other nodes");
        return;
      }
      if (n->offering.capacity_type == CapacityType::kSpot) continue;  // no spot-to-spot consolidation
      std::vector<const Candidate*> cheaper = CheaperReplacements(*n, left);
      if (cheaper.empty()) continue;
      const std::vector<const Candidate*> order = LaunchOrder(cheaper, reserved_left_);
      if (order.empty()) continue;
      std::vector<std::string> moved, onto_new;
      for (const DemandUnit& u : n->running) moved.push_back(u.id);
      for (const DemandUnit* u : left) onto_new.push_back(u->id);
      LaunchIndex launch_of;
      for (size_t i = 0; i < plan_.launches.size(); ++i)
        launch_of[{plan_.launches[i].pool, plan_.launches[i].offering.Key(), plan_.launches[i].node_labels}] =
            i;
      const size_t li = AddLaunch(order.front()->pool, order, onto_new, "replacing " + n->instance_id,
                                  SpreadLabelsOf(*n), launch_of);
      // The node stays until the new one can take the pods bound for it.
      for (const std::string& id : onto_new)
        plan_.placements.push_back({id, "", static_cast<int>(li), plan_.launches[li].count - 1});
      Terminate(
          *n, TerminationKind::kReplace, KarpenterPrice(n->offering) - KarpenterPrice(*order.front()->offering),
          "karpenter: replaced by a cheaper " + order.front()->offering->Key() +
              (left.size() < n->running.size()
                   ? " (" + std::to_string(n->running.size() - left.size()) + " of its pods to other nodes)"
                   : ""));
      plan_.terminations.back().moved_unit_ids = std::move(moved);
      return;
    }
  }

  // The pods of `n` that do not fit on the other nodes (none being removed),
  // the others placed there in queue order.
  std::vector<const DemandUnit*> PodsWithoutRoomElsewhere(const Node& n) const {
    std::vector<Bin> others;
    std::set<std::string> leaving;
    for (const TerminationAction& t : plan_.terminations) leaving.insert(t.node_id);
    for (const Bin& b : bins_) {
      if (b.node_id != n.id && b.accepts && leaving.count(b.node_id) == 0) others.push_back(b);
    }
    std::vector<const DemandUnit*> left;
    for (const DemandUnit* u : QueueOrder(n.running)) {
      // A split pod moves only within its domain, which keeps the spread.
      const int domain = spread_.DomainOf(n.labels, u->workload_class);
      bool fits = false;
      for (Bin& b : others) {
        if (domain >= 0 && !SpreadClasses::InDomain(b.spread_labels, u->workload_class, domain)) continue;
        if (Admits(policy_, *u, b.pool, *b.offering) && TryFit(*u, b, true)) {
          fits = true;
          break;
        }
      }
      if (!fits) left.push_back(u);
    }
    return left;
  }

  // The capacity-spread labels of `n` (empty when it has none).
  static std::map<std::string, std::string> SpreadLabelsOf(const Node& n) {
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : n.labels) {
      if (key.starts_with(kCapacitySpreadLabelPrefix)) out[key] = value;
    }
    return out;
  }

  // Offerings cheaper than `n` that hold `pods` (those of its pods the other
  // nodes cannot take); spot only when both
  // capacity types would do, so a failed spot launch never buys a dearer
  // on-demand node. A node of a capacity-spread domain is replaced within
  // its NodePool: same capacity type, same labels.
  std::vector<const Candidate*> CheaperReplacements(const Node& n,
                                                    const std::vector<const DemandUnit*>& pods) const {
    std::vector<const Candidate*> out;
    bool spot = false, on_demand = false;
    const bool in_a_domain = !SpreadLabelsOf(n).empty();
    for (const Candidate& c : all_) {
      if (KarpenterPrice(*c.offering) >= KarpenterPrice(n.offering) || !HasSlot(*c.offering, reserved_left_)) continue;
      if (in_a_domain && c.offering->capacity_type != n.offering.capacity_type) continue;
      Bin b = index_.EmptyBin(c.pool, *c.offering);
      bool holds = true;
      for (const DemandUnit* u : pods)
        holds = holds && Admits(policy_, *u, c.pool, *c.offering) && TryFit(*u, b, true);
      if (!holds) continue;
      out.push_back(&c);
      (c.offering->capacity_type == CapacityType::kSpot ? spot : on_demand) = true;
    }
    if (spot && on_demand) {
      std::erase_if(out, [](const Candidate* c) { return c->offering->capacity_type != CapacityType::kSpot; });
    }
    return out;
  }

  void Terminate(const Node& n, TerminationKind kind, double saves, std::string reason) {
    TerminationAction t = TerminationOf(n, kind);
    t.saves_usd_per_hour = saves;
    t.reason = std::move(reason);
    plan_.terminations.push_back(std::move(t));
  }

  const Snapshot& s_;
  const Policy& policy_;
  const FitIndex index_;
  const std::vector<Candidate> all_;
  Plan plan_;
  std::vector<Bin> bins_;
  const SpreadClasses spread_;
  SpreadClasses::Counts domain_pods_;      // split classes' pods by domain, placed so far
  std::map<std::string, int> pool_nodes_;  // nodes, existing and planned
  std::set<std::string> receiving_;        // existing nodes given pending pods
  ReservedLeft reserved_left_;             // free reserved slots, as planned so far
};

}  // namespace

PlannerFn KarpenterLikePlanner() {
  return [](const Snapshot& s, const Policy& policy) { return KarpenterPlanner(s, policy).Run(); };
}

}  // namespace gpuscaler::sim
