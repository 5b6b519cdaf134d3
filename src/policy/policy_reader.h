// Private to the policy loader: PolicyReader turns a parsed document into a
// Policy, reporting every problem through a DocReader. loader.cc reads the
// fields; cross_checks.cc checks names against each other and the catalog,
// and that every class has a pool that can serve it (with the same
// UnitFitsType rule the planner places by).
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/model/catalog.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/policy/loader.h"
#include "gpuscaler/policy/policy.h"

namespace gpuscaler::policy_detail {

// `message` plus " (did you mean '...'?)" when a candidate is close to `word`.
std::string WithSuggestion(std::string message, const std::string& word,
                           const std::vector<std::string_view>& candidates);
// "'a', 'b'".
std::string Quoted(const std::vector<std::string>& names);

// The value of `values` spelled `word` in policy files (ToString); none when
// no value is.
template <typename Enum>
std::optional<Enum> ValueSpelled(std::string_view word, std::initializer_list<Enum> values) {
  for (Enum value : values)
    if (ToString(value) == word) return value;
  return std::nullopt;
}

// Kubernetes syntax of a label or taint key ("prefix/name") and of a label or
// taint value: "" when valid, else the problem.
std::string KubernetesKeyProblem(std::string_view key);
std::string KubernetesValueProblem(std::string_view value);
// A label key a pool may give its nodes: valid, not gpuscaler's own and not
// one the kubelet refuses to register with.
std::string NodeLabelKeyProblem(std::string_view key);

class PolicyReader {
 public:
  // `options.catalog` may be null: the checks against it are skipped.
  PolicyReader(DocReader& r, const PolicyLoadOptions& options, Policy* policy)
      : r_(r), catalog_(options.catalog), served_regions_(options.regions), p_(*policy) {}

  void Read(const DocNode& root);

 private:
  // loader.cc: the fields.
  NodePoolPolicy ReadPool(const DocNode& node, const std::string& path);
  WorkloadClassPolicy ReadClass(const DocNode& node, const std::string& path);
  ForecastPolicy ReadForecast(const DocNode& node, const std::string& path);
  // The pool's placement_group (after actuation is read; `actuation_known`:
  // it named a known one).
  void ReadPlacementGroup(MapReader& m, bool actuation_known, NodePoolPolicy* pool);
  // pools[].reservations: ids or {tags: {…}} selectors; only with actuation
  // fleet (checked when `actuation_known`).
  void ReadReservationSelectors(MapReader& m, bool actuation_known, NodePoolPolicy* pool);
  void ReadWarmPool(MapReader& m, NodePoolPolicy* pool);
  // node_template.cc: the pool's labels and node template (after taints and
  // actuation are read).
  void ReadPoolLabels(MapReader& m, NodePoolPolicy* pool);
  void ReadNodeTemplate(MapReader& pool_reader, NodePoolPolicy* pool);
  // A node template's list at `key` of ids ("sg-…") or {tags: {…}} selectors.
  struct IdOrSelectorList {
    std::string_view key;        // "security_groups"
    std::string_view id_prefix;  // "sg-"
    std::string_view id_name;    // "security group": "'x' is not a security group id"
    std::string_view every;      // what an empty selector would match: "group"
    bool optional;               // the list may be left out (not empty, though)
  };
  void ReadIdsOrSelectors(MapReader& m, const IdOrSelectorList& list, std::vector<std::string>* ids,
                          std::vector<std::map<std::string, std::string>>* selectors);
  void ReadSignalQuery(MapReader& parent, std::string_view key, std::initializer_list<SignalSource> allowed_sources,
                       std::optional<SignalQuery>* out);
  BudgetCap ReadCap(const DocNode& node, const std::string& path);
  void ReadBudget(const DocNode& node);
  void ReadSpot(const DocNode& node);
  void ReadScaling(const DocNode& node);
  ScalingSchedule ReadSchedule(const DocNode& node, const std::string& path);
  void ReadDisruption(const DocNode& node);
  void ReadSignals(const DocNode& node);

  // Range checks report at the value's place; they run only when the read
  // succeeded, so a wrong type is one problem, not two.
  void Share(MapReader& m, std::string_view key, double* out);
  void NonNegative(MapReader& m, std::string_view key, double* out);
  template <typename Int>
  void IntAtLeast(MapReader& m, std::string_view key, Int minimum, Int* out);
  void PositiveDuration(MapReader& m, std::string_view key, Seconds* out);

  // cross_checks.cc: names and servability.
  // The named things a list entry refers to; with a catalog, unknown ones are errors.
  void CheckKnown(const std::string& list_path, const std::vector<std::string>& values,
                  const std::string& what, const std::vector<std::string_view>& known,
                  bool (*found)(const Catalog&, const std::string&));
  std::vector<std::string_view> CatalogTypeNames() const;
  std::vector<std::string_view> CatalogFamilies() const;
  std::vector<std::string_view> CatalogGpuNames() const;
  std::vector<std::string_view> PoolNames() const;
  // The pool's regions, or its zones when it names no region, outside the
  // regions this installation serves (none given: no check).
  void CheckServedRegions(const NodePoolPolicy& pool, const MapReader& m);
  // Duplicate pool and class names, budgets for unknown pools.
  void CheckNames();
  // Canonical GPU model name (through the catalog when there is one), so that
  // "a100-80gb" in a class and "NVIDIA-A100-SXM4-80GB" in a pool agree.
  std::string CanonicalGpu(const std::string& name) const;
  // A GPU type the pool may buy (as the planner judges it), priced somewhere
  // the pool may buy it.
  bool PoolAllowsType(const NodePoolPolicy& pool, const InstanceType& t) const;
  std::string PoolPath(const NodePoolPolicy& pool) const;
  // Why `pool` cannot serve `c`, or "" when it can (as far as we can tell).
  std::string WhyPoolCannotServe(const NodePoolPolicy& pool, const WorkloadClassPolicy& c) const;
  // Unknown pools in classes, pools no priced type matches, classes no pool can serve.
  void CheckClassesHavePools();

  DocReader& r_;
  const Catalog* catalog_;
  const std::vector<std::string>& served_regions_;
  Policy& p_;
  // "pools[2]", "classes[0]": items naming something the catalog lacks. The
  // catalog-based servability checks skip them, so one typo is one problem.
  std::set<std::string> unresolved_;
};

template <typename Int>
void PolicyReader::IntAtLeast(MapReader& m, std::string_view key, Int minimum, Int* out) {
  if (m.ReadInt(key, out) && *out < minimum) {
    r_.ReportAt(m.PathOf(key), "must be >= " + std::to_string(minimum) + ", got " +
                                   m.Find(key)->scalar);
  }
}

}  // namespace gpuscaler::policy_detail
