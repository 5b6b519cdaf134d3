// The canonical form behind Policy::content_hash. Changing what is written
// here changes every policy's hash; add new fields at the end of their group.
// A field taken out of the schema keeps its empty line ("#=0"), so that the
// hash of every policy that can still be loaded stays what it was.
#include <openssl/evp.h>

#include <cstdio>
#include <string>

#include "gpuscaler/policy/loader.h"

namespace gpuscaler {
namespace {

class Writer {
 public:
  void Put(const std::string& path, const std::string& value) {
    text_ += path;
    text_ += '=';
    // Escaped so a value cannot fake a line of its own.
    for (char c : value) {
      if (c == '\\' || c == '\n' || c == '=') text_ += '\\';
      text_ += c == '\n' ? 'n' : c;
    }
    text_ += '\n';
  }
  void Put(const std::string& path, const char* value) { Put(path, std::string(value)); }
  void Put(const std::string& path, bool value) { Put(path, value ? "true" : "false"); }
  void Put(const std::string& path, int value) { Put(path, std::to_string(value)); }
  void Put(const std::string& path, int64_t value) { Put(path, std::to_string(value)); }
  void Put(const std::string& path, double value) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    Put(path, std::string(buf));
  }
  void Put(const std::string& path, Seconds value) {
    Put(path, std::to_string(value.count()) + "s");
  }
  // A list: `path#` is its length, then put(path[i], item) for each item.
  template <typename T, typename PutItem>
  void PutList(const std::string& path, const std::vector<T>& items, PutItem&& put) {
    Put(path + "#", static_cast<int>(items.size()));
    for (size_t i = 0; i < items.size(); ++i) put(path + "[" + std::to_string(i) + "]", items[i]);
  }
  // A map: `path#` is its size, then put(path{key}, value) in key order.
  template <typename T, typename PutItem>
  void PutMap(const std::string& path, const std::map<std::string, T>& items, PutItem&& put) {
    Put(path + "#", static_cast<int>(items.size()));
    for (const auto& [key, value] : items) put(path + "{" + key + "}", value);
  }
  template <typename T>
  void Put(const std::string& path, const std::vector<T>& values) {
    PutList(path, values, [this](const std::string& at, const T& v) { Put(at, v); });
  }
  template <typename T>
  void Put(const std::string& path, const std::map<std::string, T>& values) {
    PutMap(path, values, [this](const std::string& at, const T& v) { Put(at, v); });
  }
  template <typename T>
  void Put(const std::string& path, const std::optional<T>& value) {
    if (value) {
      Put(path, *value);
    } else {
      Put(path, "none");
    }
  }
  void Put(const std::string& path, const SignalQuery& q) {
    Put(path + ".source", std::string(ToString(q.source)));
    Put(path + ".query", q.query);
    Put(path + ".vhost", q.vhost);
    Put(path + ".queue", q.queue);
  }
  void Put(const std::string& path, const BudgetCap& cap) {
    Put(path + ".hourly_usd", cap.hourly_usd);
    Put(path + ".monthly_usd", cap.monthly_usd);
    Put(path + ".hard", cap.hard);
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

}  // namespace

std::string CanonicalPolicyText(const Policy& p) {
  Writer w;
  w.Put("apiVersion", p.api_version);
  w.Put("name", p.name);
  w.PutList("pools", p.pools, [&w](const std::string& at, const NodePoolPolicy& pool) {
    w.Put(at + ".name", pool.name);
    w.Put(at + ".instance_types", pool.instance_types);
    w.Put(at + ".families", pool.families);
    w.Put(at + ".gpu_models", pool.gpu_models);
    w.Put(at + ".regions", pool.regions);
    w.Put(at + ".zones", pool.zones);
    std::vector<std::string> capacity;
    for (CapacityType c : pool.capacity_types) capacity.emplace_back(ToString(c));
    w.Put(at + ".capacity_types", capacity);
    w.Put(at + ".min_nodes", pool.min_nodes);
    w.Put(at + ".max_nodes", pool.max_nodes);
    w.Put(at + ".labels", pool.labels);
    w.PutList(at + ".taints", pool.taints, [&w](const std::string& t, const Taint& taint) {
      w.Put(t + ".key", taint.key);
      w.Put(t + ".value", taint.value);
      w.Put(t + ".effect", taint.effect);
    });
    w.Put(at + ".actuation", std::string(ToString(pool.actuation)));
    w.Put(at + ".auto_scaling_group", pool.auto_scaling_group);
    // Written only when set, so that the hash of a policy without them is unchanged.
    if (pool.registration_timeout != Seconds(900)) w.Put(at + ".registration_timeout", pool.registration_timeout);
    if (pool.repair_after != Seconds(0)) w.Put(at + ".repair_after", pool.repair_after);
    if (!pool.placement_group.empty()) w.Put(at + ".placement_group", pool.placement_group);
    if (pool.warm) {
      w.Put(at + ".warm.size", pool.warm->size ? std::to_string(*pool.warm->size) : std::string("auto"));
      w.Put(at + ".warm.state", std::string(ToString(pool.warm->state)));
      w.Put(at + ".warm.capacity_type", std::string(ToString(pool.warm->capacity_type)));
      w.Put(at + ".warm.max_usd_per_hour", pool.warm->max_usd_per_hour);
    }
    if (!pool.reservations.empty()) {
      w.PutList(at + ".reservations", pool.reservations, [&w](const std::string& term, const ReservationSelector& r) {
        w.Put(term + ".id", r.id);
        w.Put(term + ".tags", r.tags);
      });
    }
    if (pool.node_template) {
      const NodeTemplate& t = *pool.node_template;
      const std::string nt = at + ".node_template";
      w.Put(nt + ".ami.id", t.ami_id);
      w.Put(nt + ".ami.ssm_parameter", t.ami_ssm_parameter);
      w.Put(nt + ".ami_family", t.ami_family);
      w.Put(nt + ".instance_profile", t.instance_profile);
      w.Put(nt + ".security_groups", t.security_groups);
      w.PutList(nt + ".block_devices", t.block_devices, [&w](const std::string& b, const BlockDevice& d) {
        w.Put(b + ".device_name", d.device_name);
        w.Put(b + ".volume_size_gib", d.volume_size_gib);
        w.Put(b + ".volume_type", d.volume_type);
        w.Put(b + ".iops", d.iops);
        w.Put(b + ".throughput", d.throughput_mibps);
        w.Put(b + ".encrypted", d.encrypted);
      });
      w.Put(nt + ".mig_config", t.mig_config);
      w.PutList(nt + ".security_group_selectors", t.security_group_selectors,
                [&w](const std::string& at_selector, const std::map<std::string, std::string>& tags) {
                  w.Put(at_selector + ".tags", tags);
                });
      // Hashed only when set: policies without them keep their hash.
      if (!t.subnets.empty() || !t.subnet_selectors.empty()) {
        w.Put(nt + ".subnets", t.subnets);
        w.PutList(nt + ".subnet_selectors", t.subnet_selectors,
                  [&w](const std::string& at_selector, const std::map<std::string, std::string>& tags) {
                    w.Put(at_selector + ".tags", tags);
                  });
      }
    }
  });
  w.PutList("classes", p.classes, [&w](const std::string& at, const WorkloadClassPolicy& c) {
    w.Put(at + ".name", c.name);
    if (!c.team.empty()) w.Put(at + ".team", c.team);
    w.Put(at + ".match.queues#", 0);
    w.Put(at + ".match.namespaces", c.match_namespaces);
    w.Put(at + ".match.labels", c.match_labels);
    w.Put(at + ".pools", c.pools);
    w.Put(at + ".interruptible", c.interruptible);
    w.Put(at + ".max_spot_share", c.max_spot_share);
    // Absent from policies written before the field: their hash stays.
    if (c.max_lost_work_share < 1.0) w.Put(at + ".max_lost_work_share", c.max_lost_work_share);
    if (c.spot_share_window.count() > 0) w.Put(at + ".spot_share_window", c.spot_share_window);
    w.Put(at + ".checkpoint_interval", c.checkpoint_interval);
    w.Put(at + ".checkpoint_on_notice", c.checkpoint_on_notice);
    w.Put(at + ".restart_cost", c.restart_cost);
    w.Put(at + ".priority", c.priority);
    w.Put(at + ".target.max_queue_wait", c.max_queue_wait);
    w.Put(at + ".target.jobs_per_gpu_per_minute", c.jobs_per_gpu_per_minute);
    w.Put(at + ".zone_spread.max_zone_share", c.max_zone_share);
    w.Put(at + ".zone_spread.min_zones", c.min_zones);
    w.Put(at + ".shape.gpus", c.gpus_per_job);
    w.Put(at + ".shape.mig_profile", c.mig_profile);
    w.Put(at + ".shape.gpu_models", c.gpu_models);
    w.Put(at + ".shape.min_gpu_memory_mib", c.min_gpu_memory_mib);
    w.Put(at + ".shape.cpu_milli", c.cpu_milli_per_job);
    w.Put(at + ".shape.memory_mib", c.memory_mib_per_job);
    w.Put(at + ".shape.expected_runtime", c.expected_runtime);
    w.Put(at + ".signals.queue_depth", c.queue_depth);
    w.Put(at + ".signals.gpu_utilization", c.gpu_utilization);
    w.Put(at + ".scale_in_utilization_below", c.scale_in_utilization_below);
    // Hashed only when set: policies without them keep their hash.
    if (c.wait_cost_usd_per_hour) w.Put(at + ".wait_cost_usd_per_hour", c.wait_cost_usd_per_hour);
    if (c.forecast) {
      w.Put(at + ".forecast.quantile", c.forecast->quantile);
      if (c.forecast->horizon) {
        w.Put(at + ".forecast.horizon", c.forecast->horizon);
      } else {
        w.Put(at + ".forecast.horizon", std::string("auto"));
      }
      w.Put(at + ".forecast.max_idle_usd_per_hour", c.forecast->max_idle_usd_per_hour);
    }
    if (c.deadline) w.Put(at + ".deadline", c.deadline->ToString());
  });
  w.Put("budget.global", p.budget.global);
  w.Put("budget.pools", p.budget.per_pool);
  if (!p.budget.per_team.empty()) w.Put("budget.teams", p.budget.per_team);
  w.Put("spot.max_price_fraction_of_on_demand", p.spot.max_price_fraction_of_on_demand);
  w.Put("spot.max_interruptions_per_hour", p.spot.max_interruptions_per_hour);
  w.Put("spot.max_pool_share", p.spot.max_pool_share);
  w.Put("spot.fallback_to_on_demand", p.spot.fallback_to_on_demand);
  w.Put("spot.fallback_duration", p.spot.fallback_duration);
  w.Put("spot.reclaim_cooldown", p.spot.reclaim_cooldown);
  w.Put("spot.reclaim_cooldown_max", p.spot.reclaim_cooldown_max);
  if (p.spot.on_rebalance != RebalanceResponse::kIgnore)
    w.Put("spot.on_rebalance", std::string(ToString(p.spot.on_rebalance)));
  const ScalingPolicy& s = p.scaling;
  w.Put("scaling.tick_interval", s.tick_interval);
  w.Put("scaling.scale_up_stabilization", s.scale_up_stabilization);
  w.Put("scaling.scale_down_stabilization", s.scale_down_stabilization);
  w.Put("scaling.scale_up_cooldown", s.scale_up_cooldown);
  w.Put("scaling.scale_down_cooldown", s.scale_down_cooldown);
  w.Put("scaling.max_nodes_added_per_tick", s.max_nodes_added_per_tick);
  w.Put("scaling.max_nodes_removed_per_tick", s.max_nodes_removed_per_tick);
  // Written only when set, so that the hash of a policy without them is unchanged.
  if (!s.schedules.empty()) {
    w.PutList("scaling.schedules", s.schedules, [&w](const std::string& at, const ScalingSchedule& schedule) {
      w.Put(at + ".name", schedule.name);
      w.Put(at + ".cron", schedule.cron);
      w.Put(at + ".timezone", schedule.timezone);
      w.Put(at + ".duration", schedule.duration);
      w.Put(at + ".pools", schedule.pools);
      w.Put(at + ".min_nodes", schedule.min_nodes);
      w.Put(at + ".max_nodes", schedule.max_nodes);
    });
  }
  const DisruptionPolicy& d = p.disruption;
  w.Put("disruption.consolidation", d.consolidation);
  w.Put("disruption.min_node_age", d.min_node_age);
  w.Put("disruption.max_disrupted_per_interval", d.max_disrupted_per_interval);
  w.Put("disruption.disruption_interval", d.disruption_interval);
  w.Put("disruption.do_not_disrupt_labels", d.do_not_disrupt_labels);
  w.Put("disruption.min_savings_usd_per_hour", d.min_savings_usd_per_hour);
  w.Put("disruption.min_savings_fraction", d.min_savings_fraction);
  w.Put("disruption.drain_timeout", d.drain_timeout);
  // Hashed only when not the default: policies from before it keep their hash.
  if (d.replacement_horizon != DisruptionPolicy{}.replacement_horizon)
    w.Put("disruption.replacement_horizon", d.replacement_horizon);
  w.Put("signals.max_staleness", p.signals.max_staleness);
  return w.Take();
}

std::string PolicyContentHash(const Policy& policy) {
  const std::string text = CanonicalPolicyText(policy);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    return "";
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace gpuscaler
