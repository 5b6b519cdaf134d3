// Policy files: the schema is documented in docs/policy.md; field names map
// 1:1 to the structs in policy.h.
#include "gpuscaler/policy/loader.h"

#include <algorithm>
#include <utility>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"
#include "gpuscaler/policy/schedule.h"
#include "policy_reader.h"

namespace gpuscaler {

Status PolicyLoadResult::status() const {
  if (ok()) return Status();
  return Error::Config(JoinProblems(problems));
}

}  // namespace gpuscaler

namespace gpuscaler::policy_detail {
namespace {

const std::vector<std::string_view> kSignalSources = {"prometheus", "rabbitmq", "dcgm",
                                                      "kubernetes", "prices"};

}  // namespace

std::string WithSuggestion(std::string message, const std::string& word,
                           const std::vector<std::string_view>& candidates) {
  const std::string suggestion = ClosestName(word, candidates);
  if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
  return message;
}

std::string Quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

void PolicyReader::Read(const DocNode& root) {
  if (root.IsNull()) {
    r_.Report(SourceMark{1, 1}, "", "the policy file is empty");
    return;
  }
  MapReader top(r_, root, "",
                {"apiVersion", "kind", "name", "pools", "classes", "budget", "spot", "scaling",
                 "disruption", "signals"});
  if (!root.IsMapping()) return;
  top.Require({"apiVersion", "kind", "pools", "classes"});
  if (top.ReadString("apiVersion", &p_.api_version) && p_.api_version != kPolicyApiVersion) {
    r_.ReportAt("apiVersion", "must be " + std::string(kPolicyApiVersion) + ", got '" +
                                  p_.api_version + "'");
  }
  std::string kind;
  if (top.ReadString("kind", &kind) && kind != "Policy") {
    r_.ReportAt("kind", "must be Policy, got '" + kind + "'");
  }
  if (top.ReadString("name", &p_.name) && p_.name.empty()) {
    r_.ReportAt("name", "must not be empty");
  }
  top.ForEachItem("pools", [&](const DocNode& n, const std::string& path) {
    p_.pools.push_back(ReadPool(n, path));
  });
  top.ForEachItem("classes", [&](const DocNode& n, const std::string& path) {
    p_.classes.push_back(ReadClass(n, path));
  });
  // A value that is not a list has its own problem already.
  auto empty_list = [&](std::string_view key) {
    const DocNode* n = top.Find(key);
    return n != nullptr && (n->IsNull() || (n->IsSequence() && n->items.empty()));
  };
  if (empty_list("pools")) r_.ReportAt("pools", "must list at least one pool");
  if (empty_list("classes")) r_.ReportAt("classes", "must list at least one class");
  if (const DocNode* n = top.Find("budget")) ReadBudget(*n);
  if (const DocNode* n = top.Find("spot")) ReadSpot(*n);
  if (const DocNode* n = top.Find("scaling")) ReadScaling(*n);
  if (const DocNode* n = top.Find("disruption")) ReadDisruption(*n);
  if (const DocNode* n = top.Find("signals")) ReadSignals(*n);
  CheckNames();
  CheckClassesHavePools();
}

void PolicyReader::Share(MapReader& m, std::string_view key, double* out) {
  if (m.ReadNumber(key, out) && (*out < 0 || *out > 1)) {
    r_.ReportAt(m.PathOf(key), "must be in [0, 1], got " + m.Find(key)->scalar);
  }
}

void PolicyReader::NonNegative(MapReader& m, std::string_view key, double* out) {
  if (m.ReadNumber(key, out) && *out < 0) {
    r_.ReportAt(m.PathOf(key), "must be >= 0, got " + m.Find(key)->scalar);
  }
}

void PolicyReader::PositiveDuration(MapReader& m, std::string_view key, Seconds* out) {
  if (m.ReadDuration(key, out) && out->count() <= 0) {
    r_.ReportAt(m.PathOf(key), "must be longer than 0s");
  }
}

void PolicyReader::ReadPlacementGroup(MapReader& m, bool actuation_known, NodePoolPolicy* pool) {
  if (!m.ReadString("placement_group", &pool->placement_group)) return;
  const std::string& name = pool->placement_group;
  // The rule of Compute Engine resource names (RFC 1035 labels), which EC2
  // placement group names (up to 255 ASCII characters) also allow.
  const bool valid = !name.empty() && name.size() <= 63 && name.front() >= 'a' && name.front() <= 'z' &&
                     name.back() != '-' && std::all_of(name.begin(), name.end(), [](char c) {
                       return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
                     });
  if (!valid) {
    r_.ReportAt(m.PathOf("placement_group"),
                "'" + name + "' is not a placement group name (1-63 of a-z, 0-9 and '-', starting with a letter, "
                "not ending with '-')");
  }
  if (actuation_known && pool->actuation == Actuation::kAsg) {
    r_.ReportAt(m.PathOf("placement_group"),
                "is used only with actuation 'fleet' (an Auto Scaling group sets its placement group itself)");
  }
}

void PolicyReader::ReadReservationSelectors(MapReader& m, bool actuation_known, NodePoolPolicy* pool) {
  std::vector<std::string> ids;
  std::vector<std::map<std::string, std::string>> selectors;
  // Ids take no prefix check: a Compute Engine reservation is named freely.
  ReadIdsOrSelectors(m, {"reservations", "", "reservation", "reservation", true}, &ids, &selectors);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty()) r_.ReportAt(IndexPath(m.PathOf("reservations"), i), "must not be empty (a reservation id)");
    pool->reservations.push_back({ids[i], {}});
  }
  for (auto& tags : selectors) pool->reservations.push_back({"", std::move(tags)});
  if (actuation_known && pool->actuation == Actuation::kAsg && m.Has("reservations")) {
    r_.ReportAt(m.PathOf("reservations"),
                "is used only with actuation 'fleet' (an Auto Scaling group cannot aim a launch at one reservation)");
  }
}

void PolicyReader::ReadWarmPool(MapReader& pool_map, NodePoolPolicy* pool) {
  const DocNode* node = pool_map.Find("warm");
  if (node == nullptr) return;
  MapReader m(r_, *node, pool_map.PathOf("warm"), {"size", "state", "capacity_type", "max_usd_per_hour"});
  WarmPoolPolicy warm;
  if (const DocNode* size = m.Find("size"); size != nullptr && size->scalar != "auto") {
    int n = 0;
    if (m.ReadInt("size", &n)) {
      if (n < 0) r_.ReportAt(m.PathOf("size"), "must be >= 0 or auto, got " + size->scalar);
      warm.size = n;
    }
  }
  if (std::string state; m.ReadString("state", &state)) {
    const std::optional<WarmState> value = ValueSpelled(state, {WarmState::kStopped, WarmState::kHibernated});
    if (value) warm.state = *value;
    else r_.ReportAt(m.PathOf("state"), "unknown state '" + state + "' (use stopped or hibernated)");
  }
  if (m.ReadNumber("max_usd_per_hour", &warm.max_usd_per_hour) && warm.max_usd_per_hour < 0) {
    r_.ReportAt(m.PathOf("max_usd_per_hour"), "must be >= 0, got " + m.Find("max_usd_per_hour")->scalar);
  }
  if (std::string type; m.ReadString("capacity_type", &type)) {
    const std::optional<WarmCapacityType> value =
        ValueSpelled(type, {WarmCapacityType::kOnDemand, WarmCapacityType::kSpot, WarmCapacityType::kAuto});
    if (value) warm.capacity_type = *value;
    else r_.ReportAt(m.PathOf("capacity_type"), "unknown capacity type '" + type + "' (use on-demand, spot or auto)");
  }
  const auto buys = [&](CapacityType t) {
    return std::find(pool->capacity_types.begin(), pool->capacity_types.end(), t) != pool->capacity_types.end();
  };
  if (!buys(CapacityType::kOnDemand)) {
    // The warm type is chosen among the pool's on-demand offerings, spot
    // warm capacity's too: without them the pool would keep none.
    r_.ReportAt(pool_map.PathOf("warm"), "needs on-demand in capacity_types (the warm type is chosen among "
                                         "the pool's on-demand offerings, for capacity_type spot too)");
  }
  if (warm.capacity_type != WarmCapacityType::kOnDemand && pool->actuation == Actuation::kAsg) {
    r_.ReportAt(m.PathOf("capacity_type"), "an Auto Scaling group's warm pool holds no spot instances: use "
                                           "on-demand with actuation 'asg'");
  }
  if (warm.capacity_type != WarmCapacityType::kOnDemand && !buys(CapacityType::kSpot)) {
    r_.ReportAt(pool_map.PathOf("warm"), "capacity_type " + std::string(ToString(warm.capacity_type)) +
                                             " needs spot in capacity_types");
  }
  if (!pool->placement_group.empty()) {
    r_.ReportAt(pool_map.PathOf("warm"),
                "is not used with placement_group (a gang's nodes are launched together, not woken one by one)");
  }
  pool->warm = warm;
}

NodePoolPolicy PolicyReader::ReadPool(const DocNode& node, const std::string& path) {
  MapReader m(r_, node, path,
              {"name", "instance_types", "families", "gpu_models", "regions", "zones",
               "capacity_types", "min_nodes", "max_nodes", "labels", "taints", "actuation",
               "auto_scaling_group", "node_template", "registration_timeout", "repair_after",
               "placement_group", "reservations", "warm"});
  m.Require({"name"});
  NodePoolPolicy pool;
  m.ReadString("name", &pool.name);
  if (m.Has("name") && pool.name.empty()) r_.ReportAt(m.PathOf("name"), "must not be empty");
  m.ReadStringList("instance_types", &pool.instance_types);
  m.ReadStringList("families", &pool.families);
  m.ReadStringList("gpu_models", &pool.gpu_models);
  m.ReadStringList("regions", &pool.regions);
  m.ReadStringList("zones", &pool.zones);
  if (catalog_ != nullptr) {
    CheckKnown(m.PathOf("instance_types"), pool.instance_types, "instance type",
               CatalogTypeNames(), [](const Catalog& c, const std::string& v) {
                 return c.FindInstanceType(v) != nullptr;
               });
    CheckKnown(m.PathOf("families"), pool.families, "instance family", CatalogFamilies(),
               [](const Catalog& c, const std::string& v) {
                 return std::any_of(c.instance_types.begin(), c.instance_types.end(),
                                    [&](const InstanceType& t) { return t.family == v; });
               });
    CheckKnown(m.PathOf("gpu_models"), pool.gpu_models, "GPU model", CatalogGpuNames(),
               [](const Catalog& c, const std::string& v) {
                 return c.FindGpuModel(v) != nullptr;
               });
    CheckKnown(m.PathOf("regions"), pool.regions, "region", {},
               [](const Catalog& c, const std::string& v) {
                 return std::any_of(c.regions.begin(), c.regions.end(),
                                    [&](const RegionPrices& r) { return r.region == v; });
               });
    CheckKnown(m.PathOf("zones"), pool.zones, "zone", {},
               [](const Catalog& c, const std::string& v) {
                 return std::any_of(c.regions.begin(), c.regions.end(),
                                    [&](const RegionPrices& r) {
                                      return std::find(r.zones.begin(), r.zones.end(), v) !=
                                             r.zones.end();
                                    });
               });
  }
  CheckServedRegions(pool, m);
  if (!pool.regions.empty()) {
    for (size_t i = 0; i < pool.zones.size(); ++i) {
      const bool in_region =
          std::any_of(pool.regions.begin(), pool.regions.end(), [&](const std::string& region) {
            return pool.zones[i].rfind(region, 0) == 0;
          });
      if (!in_region) {
        r_.ReportAt(IndexPath(m.PathOf("zones"), i),
                    "zone '" + pool.zones[i] + "' is in none of the pool's regions (" +
                        Quoted(pool.regions) + ")");
      }
    }
  }
  std::vector<std::string> capacity_names;
  if (m.ReadStringList("capacity_types", &capacity_names)) {
    pool.capacity_types.clear();
    const std::string cpath = m.PathOf("capacity_types");
    if (capacity_names.empty()) r_.ReportAt(cpath, "must list on-demand, spot or both");
    for (size_t i = 0; i < capacity_names.size(); ++i) {
      const auto type = ParseCapacityType(capacity_names[i]);
      if (!type) {
        r_.ReportAt(IndexPath(cpath, i),
                    WithSuggestion("unknown capacity type '" + capacity_names[i] +
                                       "' (use on-demand or spot)",
                                   capacity_names[i], {"on-demand", "spot"}));
      } else if (std::find(pool.capacity_types.begin(), pool.capacity_types.end(), *type) !=
                 pool.capacity_types.end()) {
        r_.ReportAt(IndexPath(cpath, i), "'" + capacity_names[i] + "' is listed twice");
      } else {
        pool.capacity_types.push_back(*type);
      }
    }
  }
  const bool min_ok = m.Has("min_nodes") && m.ReadInt("min_nodes", &pool.min_nodes);
  const bool max_ok = m.Has("max_nodes") && m.ReadInt("max_nodes", &pool.max_nodes);
  if (min_ok && pool.min_nodes < 0) {
    r_.ReportAt(m.PathOf("min_nodes"), "must be >= 0, got " + std::to_string(pool.min_nodes));
  }
  if (max_ok && pool.max_nodes < 0) {
    r_.ReportAt(m.PathOf("max_nodes"), "must be >= 0, got " + std::to_string(pool.max_nodes));
  }
  if ((min_ok || !m.Has("min_nodes")) && (max_ok || !m.Has("max_nodes")) &&
      pool.min_nodes >= 0 && pool.max_nodes >= 0 && pool.min_nodes > pool.max_nodes) {
    r_.ReportAt(m.Has("max_nodes") ? m.PathOf("max_nodes") : m.PathOf("min_nodes"),
                "max_nodes (" + std::to_string(pool.max_nodes) + ") must be >= min_nodes (" +
                    std::to_string(pool.min_nodes) + ")");
  }
  m.ForEachItem("taints", [&](const DocNode& n, const std::string& tpath) {
    MapReader t(r_, n, tpath, {"key", "value", "effect"});
    t.Require({"key", "effect"});
    Taint taint;
    if (t.ReadString("key", &taint.key)) {
      if (std::string problem = KubernetesKeyProblem(taint.key); !problem.empty()) {
        r_.ReportAt(t.PathOf("key"), taint.key.empty() ? "must not be empty" : problem);
      }
    }
    if (t.ReadString("value", &taint.value)) {
      if (std::string problem = KubernetesValueProblem(taint.value); !problem.empty()) {
        r_.ReportAt(t.PathOf("value"), problem);
      }
    }
    if (t.ReadString("effect", &taint.effect) && taint.effect != "NoSchedule" &&
        taint.effect != "PreferNoSchedule" && taint.effect != "NoExecute") {
      r_.ReportAt(t.PathOf("effect"),
                  WithSuggestion("unknown effect '" + taint.effect +
                                     "' (use NoSchedule, PreferNoSchedule or NoExecute)",
                                 taint.effect, {"NoSchedule", "PreferNoSchedule", "NoExecute"}));
    }
    pool.taints.push_back(std::move(taint));
  });
  bool actuation_known = true;
  if (std::string actuation; m.ReadString("actuation", &actuation)) {
    const std::optional<Actuation> value = ValueSpelled(actuation, {Actuation::kFleet, Actuation::kAsg});
    actuation_known = value.has_value();
    if (value) pool.actuation = *value;
    else r_.ReportAt(m.PathOf("actuation"), "unknown actuation '" + actuation + "' (use fleet or asg)");
  }
  m.ReadString("auto_scaling_group", &pool.auto_scaling_group);
  if (actuation_known && pool.actuation == Actuation::kAsg && pool.auto_scaling_group.empty()) {
    r_.ReportAt(m.Has("auto_scaling_group") ? m.PathOf("auto_scaling_group")
                                             : m.PathOf("actuation"),
                "actuation 'asg' needs auto_scaling_group");
  }
  if (actuation_known && pool.actuation == Actuation::kFleet && !pool.auto_scaling_group.empty()) {
    r_.ReportAt(m.PathOf("auto_scaling_group"), "is used only with actuation 'asg'");
  }
  ReadPlacementGroup(m, actuation_known, &pool);
  ReadReservationSelectors(m, actuation_known, &pool);
  ReadWarmPool(m, &pool);
  PositiveDuration(m, "registration_timeout", &pool.registration_timeout);
  if (m.ReadDuration("repair_after", &pool.repair_after) && pool.repair_after.count() < 0) {
    r_.ReportAt(m.PathOf("repair_after"), "must not be negative (0 turns repair off)");
  }
  ReadPoolLabels(m, &pool);
  ReadNodeTemplate(m, &pool);
  return pool;
}

BudgetCap PolicyReader::ReadCap(const DocNode& node, const std::string& path) {
  MapReader m(r_, node, path, {"hourly_usd", "monthly_usd", "hard"});
  BudgetCap cap;
  for (auto [key, out] : {std::pair{"hourly_usd", &cap.hourly_usd},
                          std::pair{"monthly_usd", &cap.monthly_usd}}) {
    double v = 0;
    if (!m.ReadNumber(key, &v)) continue;
    if (v < 0) r_.ReportAt(m.PathOf(key), "must be >= 0, got " + m.Find(key)->scalar);
    *out = v;
  }
  m.ReadBool("hard", &cap.hard);
  return cap;
}

void PolicyReader::ReadBudget(const DocNode& node) {
  MapReader m(r_, node, "budget", {"global", "pools", "teams"});
  if (const DocNode* g = m.Find("global")) p_.budget.global = ReadCap(*g, "budget.global");
  for (auto [key, caps] : {std::pair{"pools", &p_.budget.per_pool}, std::pair{"teams", &p_.budget.per_team}}) {
    const DocNode* named = m.Find(key);
    if (named == nullptr) continue;
    MapReader per_name(r_, *named, m.PathOf(key), {});
    for (const auto& [name, value] : per_name.entries()) {
      const std::string path = per_name.PathOf(name->scalar);
      r_.Remember(path, name->mark);
      (*caps)[name->scalar] = ReadCap(*value, path);
    }
  }
}

void PolicyReader::ReadSpot(const DocNode& node) {
  MapReader m(r_, node, "spot",
              {"max_price_fraction_of_on_demand", "max_interruptions_per_hour", "max_pool_share",
               "fallback_to_on_demand", "fallback_duration", "reclaim_cooldown", "reclaim_cooldown_max",
               "on_rebalance"});
  Share(m, "max_price_fraction_of_on_demand", &p_.spot.max_price_fraction_of_on_demand);
  NonNegative(m, "max_interruptions_per_hour", &p_.spot.max_interruptions_per_hour);
  if (m.ReadNumber("max_pool_share", &p_.spot.max_pool_share) &&
      !(p_.spot.max_pool_share > 0 && p_.spot.max_pool_share <= 1)) {
    r_.ReportAt(m.PathOf("max_pool_share"), "must be in (0, 1], got " + m.Find("max_pool_share")->scalar);
  }
  m.ReadBool("fallback_to_on_demand", &p_.spot.fallback_to_on_demand);
  m.ReadDuration("fallback_duration", &p_.spot.fallback_duration);
  m.ReadDuration("reclaim_cooldown", &p_.spot.reclaim_cooldown);
  if (!m.ReadDuration("reclaim_cooldown_max", &p_.spot.reclaim_cooldown_max)) {
    // Unset, the longest is the default or the first cooldown if that is
    // longer, so the policy as written back (canonical form, a decision's
    // recorded policy) reads again.
    p_.spot.reclaim_cooldown_max = std::max(p_.spot.reclaim_cooldown_max, p_.spot.reclaim_cooldown);
  } else if (p_.spot.reclaim_cooldown_max < p_.spot.reclaim_cooldown) {
    r_.ReportAt(m.PathOf("reclaim_cooldown_max"), "must be at least reclaim_cooldown (" +
                                                      FormatDuration(p_.spot.reclaim_cooldown) + "), got " +
                                                      m.Find("reclaim_cooldown_max")->scalar);
  }
  if (std::string response; m.ReadString("on_rebalance", &response)) {
    const std::optional<RebalanceResponse> value = ValueSpelled(
        response, {RebalanceResponse::kIgnore, RebalanceResponse::kCordon, RebalanceResponse::kReplace});
    if (value) {
      p_.spot.on_rebalance = *value;
    } else {
      r_.ReportAt(m.PathOf("on_rebalance"),
                  WithSuggestion("unknown on_rebalance '" + response + "' (use ignore, cordon or replace)", response,
                                 {"ignore", "cordon", "replace"}));
    }
  }
}

void PolicyReader::ReadScaling(const DocNode& node) {
  MapReader m(r_, node, "scaling",
              {"tick_interval", "scale_up_stabilization", "scale_down_stabilization",
               "scale_up_cooldown", "scale_down_cooldown", "max_nodes_added_per_tick",
               "max_nodes_removed_per_tick", "schedules"});
  ScalingPolicy& s = p_.scaling;
  PositiveDuration(m, "tick_interval", &s.tick_interval);
  m.ReadDuration("scale_up_stabilization", &s.scale_up_stabilization);
  m.ReadDuration("scale_down_stabilization", &s.scale_down_stabilization);
  m.ReadDuration("scale_up_cooldown", &s.scale_up_cooldown);
  m.ReadDuration("scale_down_cooldown", &s.scale_down_cooldown);
  IntAtLeast(m, "max_nodes_added_per_tick", 0, &s.max_nodes_added_per_tick);
  IntAtLeast(m, "max_nodes_removed_per_tick", 0, &s.max_nodes_removed_per_tick);
  m.ForEachItem("schedules", [&](const DocNode& n, const std::string& path) {
    s.schedules.push_back(ReadSchedule(n, path));
  });
}

ScalingSchedule PolicyReader::ReadSchedule(const DocNode& node, const std::string& path) {
  MapReader m(r_, node, path, {"name", "cron", "timezone", "duration", "pools", "min_nodes", "max_nodes"});
  m.Require({"name", "cron"});
  ScalingSchedule s;
  if (m.ReadString("name", &s.name) && s.name.empty()) r_.ReportAt(m.PathOf("name"), "must not be empty");
  if (m.ReadString("cron", &s.cron)) {
    if (Result<CronExpression> cron = CronExpression::Parse(s.cron); !cron) {
      r_.ReportAt(m.PathOf("cron"), cron.error().message());
    }
  }
  if (m.ReadString("timezone", &s.timezone) && !IsKnownTimeZone(s.timezone)) {
    r_.ReportAt(m.PathOf("timezone"), "unknown time zone '" + s.timezone +
                                          "' (an IANA name such as 'UTC', 'Europe/Berlin' or 'America/New_York')");
  }
  if (m.ReadDuration("duration", &s.duration) && (s.duration.count() < 60 || s.duration > kMaxScheduleDuration)) {
    r_.ReportAt(m.PathOf("duration"), "must be between 1m and 7d (leave it out to mean the minutes the cron "
                                      "expression matches)");
  }
  m.ReadStringList("pools", &s.pools);
  int value = 0;
  if (m.ReadInt("min_nodes", &value)) {
    if (value < 0) r_.ReportAt(m.PathOf("min_nodes"), "must be >= 0, got " + std::to_string(value));
    s.min_nodes = value;
  }
  if (m.ReadInt("max_nodes", &value)) {
    if (value < 0) r_.ReportAt(m.PathOf("max_nodes"), "must be >= 0, got " + std::to_string(value));
    s.max_nodes = value;
  }
  if (!m.Has("min_nodes") && !m.Has("max_nodes")) {
    r_.ReportAt(path, "a schedule sets min_nodes, max_nodes or both");
  }
  if (s.min_nodes && s.max_nodes && *s.min_nodes > *s.max_nodes) {
    r_.ReportAt(m.PathOf("max_nodes"), "max_nodes (" + std::to_string(*s.max_nodes) + ") must be >= min_nodes (" +
                                           std::to_string(*s.min_nodes) + ")");
  }
  return s;
}

void PolicyReader::ReadDisruption(const DocNode& node) {
  MapReader m(r_, node, "disruption",
              {"consolidation", "min_node_age", "max_disrupted_per_interval",
               "disruption_interval", "do_not_disrupt_labels", "min_savings_usd_per_hour",
               "min_savings_fraction", "drain_timeout", "replacement_horizon"});
  DisruptionPolicy& d = p_.disruption;
  m.ReadBool("consolidation", &d.consolidation);
  m.ReadDuration("min_node_age", &d.min_node_age);
  IntAtLeast(m, "max_disrupted_per_interval", 0, &d.max_disrupted_per_interval);
  PositiveDuration(m, "disruption_interval", &d.disruption_interval);
  m.ReadStringList("do_not_disrupt_labels", &d.do_not_disrupt_labels);
  NonNegative(m, "min_savings_usd_per_hour", &d.min_savings_usd_per_hour);
  Share(m, "min_savings_fraction", &d.min_savings_fraction);
  PositiveDuration(m, "drain_timeout", &d.drain_timeout);
  PositiveDuration(m, "replacement_horizon", &d.replacement_horizon);
}

void PolicyReader::ReadSignals(const DocNode& node) {
  MapReader m(r_, node, "signals", {"max_staleness"});
  const DocNode* n = m.Find("max_staleness");
  if (n == nullptr) return;
  MapReader staleness(r_, *n, "signals.max_staleness", {});
  for (const auto& [key, value] : staleness.entries()) {
    const std::string path = staleness.PathOf(key->scalar);
    if (std::find(kSignalSources.begin(), kSignalSources.end(), key->scalar) ==
        kSignalSources.end()) {
      r_.Report(*key, path,
                WithSuggestion("unknown signal source '" + key->scalar +
                                   "' (use prometheus, rabbitmq, dcgm, kubernetes or prices)",
                               key->scalar, kSignalSources));
      continue;
    }
    r_.Remember(path, value->mark);
    Seconds d;
    if (!r_.ToDuration(*value, path, &d)) continue;
    if (d.count() <= 0) {
      r_.Report(*value, path, "must be longer than 0s");
      continue;
    }
    p_.signals.max_staleness[key->scalar] = d;
  }
}

}  // namespace gpuscaler::policy_detail

namespace gpuscaler {

PolicyLoadResult ParsePolicy(const std::string& text, const std::string& file_name,
                             const PolicyLoadOptions& options) {
  DocReader reader(file_name);
  DocNode root;
  PolicyLoadResult result;
  if (reader.Parse(text, &root)) {
    policy_detail::PolicyReader(reader, options, &result.policy).Read(root);
  }
  result.problems = reader.SortedProblems();
  if (result.ok()) {
    result.policy.source_file = file_name;
    result.policy.content_hash = PolicyContentHash(result.policy);
  }
  return result;
}

PolicyLoadResult LoadPolicyFile(const std::string& path, const PolicyLoadOptions& options) {
  Result<std::string> text = ReadConfigFile(path);
  if (!text) {
    PolicyLoadResult result;
    result.problems.push_back({path, 0, 0, "", "cannot read: " + text.error().message()});
    return result;
  }
  return ParsePolicy(*text, path, options);
}

PolicyLoadResult ParsePolicy(const std::string& text, const std::string& file_name,
                             const Catalog* catalog) {
  return ParsePolicy(text, file_name, PolicyLoadOptions{catalog, {}});
}

PolicyLoadResult LoadPolicyFile(const std::string& path, const Catalog* catalog) {
  return LoadPolicyFile(path, PolicyLoadOptions{catalog, {}});
}

Policy DefaultPolicy() {
  Policy p;
  p.name = "default";
  NodePoolPolicy pool;
  pool.name = "gpu";
  p.pools.push_back(pool);
  WorkloadClassPolicy c;
  c.name = "default";
  p.classes.push_back(c);
  p.source_file = "(built-in default)";
  p.content_hash = PolicyContentHash(p);
  return p;
}

}  // namespace gpuscaler
