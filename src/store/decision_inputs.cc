#include "gpuscaler/store/decision_inputs.h"

#include <zstd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>

#include "sqlite_db.h"

namespace gpuscaler {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Whole seconds with a unit: ParseDuration reads it back exactly.
std::string Duration(Seconds d) { return std::to_string(d.count()) + "s"; }

OrderedJson Cap(const BudgetCap& cap) {
  OrderedJson j = OrderedJson::object();
  if (cap.hourly_usd) j["hourly_usd"] = *cap.hourly_usd;
  if (cap.monthly_usd) j["monthly_usd"] = *cap.monthly_usd;
  j["hard"] = cap.hard;
  return j;
}

OrderedJson Caps(const std::map<std::string, BudgetCap>& caps) {
  OrderedJson j = OrderedJson::object();
  for (const auto& [name, cap] : caps) j[name] = Cap(cap);
  return j;
}

OrderedJson SignalQueryJson(const SignalQuery& q) {
  return {{"source", ToString(q.source)}, {"query", q.query}, {"vhost", q.vhost}, {"queue", q.queue}};
}

// A node template list as the policy file writes it: the ids, then a
// {"tags": {…}} object per selector.
OrderedJson IdsAndSelectors(const std::vector<std::string>& ids,
                            const std::vector<std::map<std::string, std::string>>& selectors) {
  OrderedJson list = OrderedJson::array();
  for (const std::string& id : ids) list.push_back(id);
  for (const auto& tags : selectors) {
    OrderedJson selector = OrderedJson::object();
    for (const auto& [k, v] : tags) selector[k] = v;
    list.push_back({{"tags", selector}});
  }
  return list;
}

OrderedJson NodeTemplateJson(const NodeTemplate& t) {
  OrderedJson j = OrderedJson::object();
  if (!t.ami_id.empty()) j["ami"] = {{"id", t.ami_id}};
  if (!t.ami_ssm_parameter.empty()) j["ami"] = {{"ssm_parameter", t.ami_ssm_parameter}};
  j["ami_family"] = t.ami_family;
  j["instance_profile"] = t.instance_profile;
  j["security_groups"] = IdsAndSelectors(t.security_groups, t.security_group_selectors);
  if (!t.subnets.empty() || !t.subnet_selectors.empty()) j["subnets"] = IdsAndSelectors(t.subnets, t.subnet_selectors);
  OrderedJson devices = OrderedJson::array();
  for (const BlockDevice& d : t.block_devices) {
    OrderedJson device = {{"device_name", d.device_name}, {"volume_size_gib", d.volume_size_gib},
                          {"volume_type", d.volume_type}, {"encrypted", d.encrypted}};
    if (d.iops) device["iops"] = *d.iops;
    if (d.throughput_mibps) device["throughput"] = *d.throughput_mibps;
    devices.push_back(device);
  }
  j["block_devices"] = devices;
  if (!t.mig_config.empty()) j["mig_config"] = t.mig_config;
  return j;
}

OrderedJson Pool(const NodePoolPolicy& pool) {
  OrderedJson capacity = OrderedJson::array();
  for (CapacityType c : pool.capacity_types) capacity.push_back(std::string(ToString(c)));
  OrderedJson taints = OrderedJson::array();
  for (const Taint& t : pool.taints) taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
  OrderedJson j = {{"name", pool.name},
                   {"instance_types", pool.instance_types},
                   {"families", pool.families},
                   {"gpu_models", pool.gpu_models},
                   {"regions", pool.regions},
                   {"zones", pool.zones},
                   {"capacity_types", capacity},
                   {"min_nodes", pool.min_nodes},
                   {"max_nodes", pool.max_nodes},
                   {"taints", taints},
                   {"actuation", ToString(pool.actuation)}};
  // The loader refuses an Auto Scaling group name on a fleet pool, even empty.
  if (!pool.auto_scaling_group.empty()) j["auto_scaling_group"] = pool.auto_scaling_group;
  j["registration_timeout"] = Duration(pool.registration_timeout);
  j["repair_after"] = Duration(pool.repair_after);
  if (!pool.placement_group.empty()) j["placement_group"] = pool.placement_group;
  if (pool.warm) {
    OrderedJson warm = OrderedJson::object();
    if (pool.warm->size) warm["size"] = *pool.warm->size;
    else warm["size"] = "auto";
    warm["state"] = ToString(pool.warm->state);
    warm["capacity_type"] = ToString(pool.warm->capacity_type);
    warm["max_usd_per_hour"] = pool.warm->max_usd_per_hour;
    j["warm"] = warm;
  }
  if (!pool.reservations.empty()) {
    OrderedJson terms = OrderedJson::array();
    for (const ReservationSelector& term : pool.reservations) {
      if (!term.id.empty()) {
        terms.push_back(term.id);
        continue;
      }
      OrderedJson tags = OrderedJson::object();
      for (const auto& [k, v] : term.tags) tags[k] = v;
      terms.push_back({{"tags", tags}});
    }
    j["reservations"] = terms;
  }
  // Labels and a node template go together: the loader refuses labels
  // without one.
  if (pool.node_template) {
    OrderedJson labels = OrderedJson::object();
    for (const auto& [k, v] : pool.labels) labels[k] = v;
    j["labels"] = labels;
    j["node_template"] = NodeTemplateJson(*pool.node_template);
  }
  return j;
}

OrderedJson Class(const WorkloadClassPolicy& c) {
  OrderedJson j = {{"name", c.name}};
  if (!c.team.empty()) j["team"] = c.team;
  OrderedJson labels = OrderedJson::object();
  for (const auto& [k, v] : c.match_labels) labels[k] = v;
  j["match"] = {{"namespaces", c.match_namespaces}, {"labels", labels}};
  j["pools"] = c.pools;
  j["interruptible"] = c.interruptible;
  j["max_spot_share"] = c.max_spot_share;
  if (c.max_lost_work_share < 1.0) j["max_lost_work_share"] = c.max_lost_work_share;
  if (c.spot_share_window.count() > 0) j["spot_share_window"] = Duration(c.spot_share_window);
  j["checkpoint_interval"] = Duration(c.checkpoint_interval);
  j["checkpoint_on_notice"] = c.checkpoint_on_notice;
  j["restart_cost"] = Duration(c.restart_cost);
  j["priority"] = c.priority;
  OrderedJson target = OrderedJson::object();
  if (c.max_queue_wait) target["max_queue_wait"] = Duration(*c.max_queue_wait);
  if (c.jobs_per_gpu_per_minute) target["jobs_per_gpu_per_minute"] = *c.jobs_per_gpu_per_minute;
  j["target"] = target;
  j["zone_spread"] = {{"max_zone_share", c.max_zone_share}, {"min_zones", c.min_zones}};
  j["shape"] = {{"gpus", c.gpus_per_job},
                {"mig_profile", c.mig_profile},
                {"gpu_models", c.gpu_models},
                {"min_gpu_memory_mib", c.min_gpu_memory_mib},
                {"cpu_milli", c.cpu_milli_per_job},
                {"memory_mib", c.memory_mib_per_job},
                {"expected_runtime", Duration(c.expected_runtime)}};
  OrderedJson signals = OrderedJson::object();
  if (c.queue_depth) signals["queue_depth"] = SignalQueryJson(*c.queue_depth);
  if (c.gpu_utilization) signals["gpu_utilization"] = SignalQueryJson(*c.gpu_utilization);
  j["signals"] = signals;
  j["scale_in_utilization_below"] = c.scale_in_utilization_below;
  if (c.wait_cost_usd_per_hour) j["wait_cost_usd_per_hour"] = *c.wait_cost_usd_per_hour;
  if (c.forecast) {
    OrderedJson f = {{"quantile", c.forecast->quantile}};
    f["horizon"] = c.forecast->horizon ? Duration(*c.forecast->horizon) : std::string("auto");
    if (c.forecast->max_idle_usd_per_hour) f["max_idle_usd_per_hour"] = *c.forecast->max_idle_usd_per_hour;
    j["forecast"] = std::move(f);
  }
  if (c.deadline) j["deadline"] = c.deadline->ToString();
  return j;
}

}  // namespace

std::string PolicyFileJson(const Policy& p) {
  OrderedJson j = {{"apiVersion", p.api_version}, {"kind", "Policy"}, {"name", p.name}};
  j["pools"] = OrderedJson::array();
  for (const NodePoolPolicy& pool : p.pools) j["pools"].push_back(Pool(pool));
  j["classes"] = OrderedJson::array();
  for (const WorkloadClassPolicy& c : p.classes) j["classes"].push_back(Class(c));
  j["budget"] = {{"global", Cap(p.budget.global)}, {"pools", Caps(p.budget.per_pool)}};
  if (!p.budget.per_team.empty()) j["budget"]["teams"] = Caps(p.budget.per_team);
  j["spot"] = {{"max_price_fraction_of_on_demand", p.spot.max_price_fraction_of_on_demand},
               {"max_interruptions_per_hour", p.spot.max_interruptions_per_hour},
               {"max_pool_share", p.spot.max_pool_share},
               {"fallback_to_on_demand", p.spot.fallback_to_on_demand},
               {"fallback_duration", Duration(p.spot.fallback_duration)},
               {"reclaim_cooldown", Duration(p.spot.reclaim_cooldown)},
               {"reclaim_cooldown_max", Duration(p.spot.reclaim_cooldown_max)},
               {"on_rebalance", ToString(p.spot.on_rebalance)}};
  const ScalingPolicy& s = p.scaling;
  j["scaling"] = {{"tick_interval", Duration(s.tick_interval)},
                  {"scale_up_stabilization", Duration(s.scale_up_stabilization)},
                  {"scale_down_stabilization", Duration(s.scale_down_stabilization)},
                  {"scale_up_cooldown", Duration(s.scale_up_cooldown)},
                  {"scale_down_cooldown", Duration(s.scale_down_cooldown)},
                  {"max_nodes_added_per_tick", s.max_nodes_added_per_tick},
                  {"max_nodes_removed_per_tick", s.max_nodes_removed_per_tick}};
  if (!s.schedules.empty()) {
    OrderedJson schedules = OrderedJson::array();
    for (const ScalingSchedule& schedule : s.schedules) {
      OrderedJson one = {{"name", schedule.name},
                         {"cron", schedule.cron},
                         {"timezone", schedule.timezone},
                         {"pools", schedule.pools}};
      if (schedule.duration.count() > 0) one["duration"] = Duration(schedule.duration);
      if (schedule.min_nodes) one["min_nodes"] = *schedule.min_nodes;
      if (schedule.max_nodes) one["max_nodes"] = *schedule.max_nodes;
      schedules.push_back(std::move(one));
    }
    j["scaling"]["schedules"] = std::move(schedules);
  }
  const DisruptionPolicy& d = p.disruption;
  j["disruption"] = {{"consolidation", d.consolidation},
                     {"min_node_age", Duration(d.min_node_age)},
                     {"max_disrupted_per_interval", d.max_disrupted_per_interval},
                     {"disruption_interval", Duration(d.disruption_interval)},
                     {"do_not_disrupt_labels", d.do_not_disrupt_labels},
                     {"min_savings_usd_per_hour", d.min_savings_usd_per_hour},
                     {"min_savings_fraction", d.min_savings_fraction},
                     {"drain_timeout", Duration(d.drain_timeout)},
                     {"replacement_horizon", Duration(d.replacement_horizon)}};
  OrderedJson staleness = OrderedJson::object();
  for (const auto& [source, age] : p.signals.max_staleness) staleness[source] = Duration(age);
  j["signals"] = {{"max_staleness", staleness}};
  return j.dump(2) + "\n";
}

Result<std::string> CompressSnapshotText(std::string_view text, std::string buffer) {
  // One context per thread: ZSTD_compress would allocate and clear a new one
  // (megabytes for a large snapshot) on every call.
  struct FreeContext {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  thread_local std::unique_ptr<ZSTD_CCtx, FreeContext> context(ZSTD_createCCtx());
  if (!context) return Error::Internal("compressing a snapshot: zstd could not allocate its context");
  buffer.resize(std::max(buffer.capacity(), ZSTD_compressBound(text.size())));
  const size_t n = ZSTD_compressCCtx(context.get(), buffer.data(), buffer.size(), text.data(), text.size(), 1);
  if (ZSTD_isError(n)) return Error::Internal(std::string("compressing a snapshot: ") + ZSTD_getErrorName(n));
  buffer.resize(n);
  return buffer;
}

Result<std::string> DecompressSnapshotText(std::string_view compressed, int64_t expected_bytes, int64_t decision_id) {
  const std::string what = "decision " + std::to_string(decision_id) + ": stored snapshot";
  if (expected_bytes < 0) return Error::Internal(what + ": negative length");
  std::string out(static_cast<size_t>(expected_bytes), '\0');
  const size_t n = ZSTD_decompress(out.data(), out.size(), compressed.data(), compressed.size());
  if (ZSTD_isError(n)) return Error::Internal(what + " is corrupt (zstd: " + ZSTD_getErrorName(n) + ")");
  if (n != out.size()) {
    return Error::Internal(what + " has " + std::to_string(n) + " bytes, " + std::to_string(expected_bytes) +
                           " recorded");
  }
  return out;
}

Result<std::optional<std::pair<int64_t, int64_t>>> DecisionInputReader::DecisionIdRange() {
  Result<store_internal::Query> q = reader_.db_->Prepare("SELECT min(id), max(id) FROM decisions");
  if (!q) return q.error();
  Result<bool> row = q->Step("reading the decision id range");
  if (!row) return row.error();
  if (!*row || q->IsNull(0)) return std::optional<std::pair<int64_t, int64_t>>{};
  return std::optional<std::pair<int64_t, int64_t>>{std::pair{q->Int(0), q->Int(1)}};
}

Result<StoredDecisionInput> DecisionInputReader::Read(int64_t id) {
  AuditReader::ConsistentRead consistent(reader_);
  Result<store_internal::Query> q = reader_.db_->Prepare(
      "SELECT i.policy_hash, d.source, i.snapshot_codec, i.snapshot_bytes, i.snapshot, i.planner_plan_json, "
      "CASE WHEN i.decision_id IS NULL THEN 0 ELSE 1 END FROM decisions d LEFT JOIN decision_inputs i ON i.decision_id = d.id "
      "WHERE d.id = ?1");
  if (!q) return q.error();
  Result<bool> found = q->Bind(1, id).Step("reading a decision's input");
  if (!found) return found.error();
  if (!*found) {
    Result<std::optional<std::pair<int64_t, int64_t>>> range = DecisionIdRange();
    if (!range) return range.error();
    std::string have = "the audit store has no decisions";
    if (*range) {
      have = "decisions stored: " + std::to_string((*range)->first) + ".." + std::to_string((*range)->second) +
             " (older ones may have been pruned)";
    }
    return Error::NotFound("decision " + std::to_string(id) + " is not in the audit store; " + have);
  }
  StoredDecisionInput input;
  input.decision_id = id;
  input.policy_hash = q->Text(0);
  const std::string source = q->Text(1);
  if (q->Int(6) == 0) {
    return Error::NotFound("decision " + std::to_string(id) + " (source " + source +
                           ") was recorded without its planner input: it predates decision inputs (schema "
                           "version 4) or was made by a planner that cannot be replayed (a simulator baseline)");
  }
  if (q->Text(2) != "zstd") return Error::Internal("decision " + std::to_string(id) + ": unknown codec " + q->Text(2));
  Result<std::string> snapshot = DecompressSnapshotText(q->Blob(4), q->Int(3), id);
  if (!snapshot) return snapshot.error();
  input.snapshot_json = std::move(*snapshot);
  if (!q->IsNull(5)) input.planner_plan_json = q->Text(5);

  Result<store_internal::Query> p = reader_.db_->Prepare("SELECT policy_json FROM policies WHERE hash = ?1");
  if (!p) return p.error();
  Result<bool> has_policy = p->Bind(1, input.policy_hash).Step("reading a decision's policy");
  if (!has_policy) return has_policy.error();
  if (!*has_policy) {
    return Error::Internal("decision " + std::to_string(id) + ": its policy " + input.policy_hash +
                           " is not in the policies table");
  }
  input.policy_json = p->Text(0);
  return input;
}

}  // namespace gpuscaler
