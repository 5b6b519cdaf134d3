// The on-demand floor of a class (classes[].max_spot_share < 1) as a
// Karpenter user holds it, for the simulator's greedy and karpenter
// baselines and the workload they run with. Karpenter has no ratio field;
// the documented pattern ("Karpenter Blueprint: Split Between On-Demand &
// Spot Instances", aws-samples/karpenter-blueprints, od-spot-split) is two
// NodePools with disjoint values of a custom node label, on-demand ["1"] and
// spot ["2" … "N"], and a topologySpreadConstraint on the workload over that
// label with maxSkew 1 and whenUnsatisfiable DoNotSchedule: the pods spread
// evenly over the N values (domains), so k on-demand domains of N hold k/N of
// them, and a domain's pods run only on that domain's nodes.
//
// Here each split class has its own label key, "capacity-spread/<class>",
// so classes with different floors can share a pool; values are "1" … "N",
// the on-demand domains first. Private to the simulator; values only.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/instance.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::sim {

inline constexpr int kMaxSpreadDomains = 10;
inline constexpr const char* kCapacitySpreadLabelPrefix = "capacity-spread/";

// One class's split: `domains` topology domains, of which the first
// `on_demand` (0-based indices below it) are on-demand and the rest spot.
struct CapacitySpread {
  int domains = 1;
  int on_demand = 1;

  CapacityType TypeOf(int domain) const {
    return domain < on_demand ? CapacityType::kOnDemand : CapacityType::kSpot;
  }
  // The lowest-index domain of `type`; -1 when there is none (every domain
  // on-demand).
  int FirstOf(CapacityType type) const {
    if (type == CapacityType::kOnDemand) return 0;
    return on_demand < domains ? on_demand : -1;
  }
};

// The split that holds a floor of 1 − `max_spot_share` on-demand: the
// smallest N ≤ kMaxSpreadDomains with k = (1 − share)·N a whole number, so the
// floor is met exactly (0.6 → 2 of 5, 0.7 → 3 of 10, 0.5 → 1 of 2); when no N
// up to kMaxSpreadDomains does, N = kMaxSpreadDomains and k rounded up, so
// the split holds at least the floor (0.95 → 1 of 10; 0.05 → 10 of 10).
// nullopt when there is nothing to split: share ≥ 1 (no floor) or ≤ 0
// (on-demand only, which needs no spread).
std::optional<CapacitySpread> SpreadForShare(double max_spot_share);

// The label key of `cls`'s domains, and the value of 0-based `domain` ("1" …).
std::string SpreadLabelKey(const std::string& cls);
std::string SpreadLabelValue(int domain);

// The classes of a policy that a baseline splits: interruptible, with
// 0 < max_spot_share < 1.
class SpreadClasses {
 public:
  SpreadClasses() = default;  // none
  explicit SpreadClasses(const Policy& policy);

  bool empty() const { return classes_.empty(); }
  // The split of `cls`; null when it has none.
  const CapacitySpread* Find(const std::string& cls) const;
  // The 0-based domain that `labels` put a node in for `cls`; -1 when the
  // node carries no valid value of its key.
  int DomainOf(const std::map<std::string, std::string>& labels, const std::string& cls) const;
  // Whether a node with `labels` is in `domain` of split class `cls`.
  static bool InDomain(const std::map<std::string, std::string>& labels, const std::string& cls, int domain);
  // The labels a new node of `pool` and capacity `type` carries: for every
  // split class that may use `pool`, `domain` when it is `cls` (the pod the
  // node is launched for), else that class's first domain of `type` (the
  // blueprint's NodePools label every node they launch); no label for a
  // class without a domain of `type`.
  std::map<std::string, std::string> LabelsForNewNode(const std::string& pool, CapacityType type,
                                                      const std::string& cls, int domain) const;

  // Per split class, its pods by domain: the counts a planner fills from
  // running pods and adds the pods it places to.
  class Counts {
   public:
    explicit Counts(const SpreadClasses& classes) : classes_(classes) {}
    // Counts the running pods of split classes on a node with `labels`, each
    // in the domain the labels give its class (none: not counted).
    void AddRunning(const std::map<std::string, std::string>& labels, const std::vector<DemandUnit>& running);
    // One more pod of split class `cls` in `domain`.
    void Add(const std::string& cls, int domain);
    // The domain of the next pod of split class `cls` (-1 for a class that
    // is not split): one with the fewest pods (maxSkew 1 over pod counts, as
    // Kubernetes counts). Among several, Karpenter takes any at random (Go
    // map order in its topology group); this takes one by a hash of
    // `tie_key` (the pod's id): uniform over the tied domains, reproducible.
    int Next(const std::string& cls, const std::string& tie_key) const;

   private:
    const SpreadClasses& classes_;
    std::map<std::string, std::vector<int>> pods_;  // class -> pods by domain
  };

 private:
  struct Entry {
    CapacitySpread spread;
    std::vector<std::string> pools;  // empty: every pool
  };
  std::map<std::string, Entry> classes_;
};

}  // namespace gpuscaler::sim
