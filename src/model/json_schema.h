// The JSON fields of each model type, listed once: Fields(visitor, value)
// calls the visitor once per field, in output order. FieldWriter writes them
// (JSON out) and json.cc's FieldReader reads snapshot types (JSON in,
// strict), so the two directions cannot drift. Plan types are only written.
// Private to src/model.
//
// A visitor has one method per kind of field, each taking the key, the member
// and, where it matters to the reader, whether the field is required or the
// minimum of an integer:
//   Str Bool Int Int64 Double DurationS ("*_s", integer seconds) Time (RFC 3339)
//   StrList IntList StrMap IntMap
//   and the free function DoubleMap (numbers by name, >= 0 unless kSigned), defined below
//   for the writer and for the reader.
//   Enum (a string; an empty optional is omitted)  Object  Objects (an array)
//   Constant (a fixed string, checked on reading)
#pragma once

#include <concepts>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/model/json_writer.h"
#include "json_reader.h"

namespace gpuscaler::json_internal {

// Whether a map of numbers (DoubleMap) may hold negative ones.
enum MapSign { kNonNegative, kSigned };

// T is `Model` or `const Model`: one Fields() serves the writer and the reader.
template <class T, class Model>
concept Is = std::same_as<std::remove_const_t<T>, Model>;

inline constexpr Need kRequired = Need::kRequired;
inline constexpr const char* kApiVersion = "gpuscaler/v1";

template <class V, Is<MigProfile> T>
void Fields(V& v, T& p) {
  v.Str("name", p.name, kRequired);
  v.Int("compute_slices", p.compute_slices);
  v.Int("memory_slices", p.memory_slices);
  v.Int64("memory_mib", p.memory_mib);
  v.IntList("starts", p.allowed_starts);
}

template <class V, Is<GpuModel> T>
void Fields(V& v, T& g) {
  v.Str("name", g.name, kRequired);
  v.Str("short_name", g.short_name);
  v.Int64("memory_mib", g.memory_mib);
  v.Objects("mig_profiles", g.mig_profiles);
}

template <class V, Is<InstanceType> T>
void Fields(V& v, T& t) {
  v.Str("name", t.name, kRequired);
  v.Str("family", t.family);
  v.Str("gpu_model", t.gpu_model);
  v.Int("gpu_count", t.gpu_count);
  v.Int64("gpu_memory_mib", t.gpu_memory_mib);
  v.Int("vcpus", t.vcpus);
  v.Int64("memory_mib", t.memory_mib);
  v.Int64("local_nvme_gb", t.local_nvme_gb);
  v.Int64("network_mbps", t.network_mbps);
}

template <class V, Is<Offering> T>
void Fields(V& v, T& o) {
  v.Str("instance_type", o.instance_type, kRequired);
  v.Str("region", o.region);
  v.Str("zone", o.zone, kRequired);
  v.Enum("capacity_type", o.capacity_type, kRequired);
  v.Double("usd_per_hour", o.usd_per_hour);
  v.Double("on_demand_usd_per_hour", o.on_demand_usd_per_hour);
  v.Double("interruptions_per_hour", o.interruptions_per_hour);
  v.Double("co_reclaim_share", o.co_reclaim_share);
  v.Bool("available", o.available);
  v.DurationS("launch_latency_s", o.launch_latency);
  v.DurationS("wake_latency_s", o.wake_latency);
  v.Str("reservation_id", o.reservation_id);
}

template <class V, Is<Reservation> T>
void Fields(V& v, T& r) {
  v.Str("id", r.id, kRequired);
  v.Str("instance_type", r.instance_type, kRequired);
  v.Str("region", r.region);
  v.Str("zone", r.zone, kRequired);
  v.Enum("kind", r.kind);
  v.Int("total_count", r.total_count);
  v.Int("available_count", r.available_count);
  v.Time("start", r.start);
  v.Time("end", r.end);
  v.StrMap("tags", r.tags);
  v.Double("usd_per_hour", r.usd_per_hour);
  v.Double("upfront_usd", r.upfront_usd);
}

template <class V, Is<GangMembership> T>
void Fields(V& v, T& g) {
  v.Str("name", g.name, kRequired);
  v.Int("size", g.size, 2);
  v.Bool("same_zone", g.same_zone);
  v.Bool("same_instance_type", g.same_instance_type);
}

template <class V, Is<DemandUnit> T>
void Fields(V& v, T& u) {
  v.Str("id", u.id, kRequired);
  v.Str("workload_class", u.workload_class);
  v.Str("team", u.team);
  v.Int("gpus", u.gpus);
  v.Int("gpu_milli", u.gpu_milli);
  v.Str("mig_profile", u.mig_profile);
  v.StrList("gpu_models", u.gpu_models);
  v.Int64("min_gpu_memory_mib", u.min_gpu_memory_mib);
  v.Int64("cpu_milli", u.cpu_milli);
  v.Int64("memory_mib", u.memory_mib);
  v.Int("priority", u.priority, std::numeric_limits<int>::min());
  v.Bool("interruptible", u.interruptible);
  v.DurationS("expected_runtime_s", u.expected_runtime);
  v.DurationS("checkpoint_interval_s", u.checkpoint_interval);
  v.Bool("checkpoint_on_notice", u.checkpoint_on_notice);
  v.DurationS("restart_cost_s", u.restart_cost);
  v.StrList("zones", u.zones);
  v.StrList("instance_types", u.instance_types);
  v.Enum("capacity_type", u.capacity_type);
  v.Str("pool", u.pool);
  v.StrList("avoid_nodes", u.avoid_nodes);
  v.StrMap("labels", u.labels);
  v.Time("deadline", u.deadline);
  v.Time("submitted", u.submitted);
  v.DurationS("total_work_s", u.total_work);
  v.Time("progressing_since", u.progressing_since);
  v.Object("gang", u.gang);
}

template <class V, Is<Node> T>
void Fields(V& v, T& n) {
  v.Str("id", n.id, kRequired);
  v.Str("instance_id", n.instance_id);
  v.Str("pool", n.pool);
  v.Object("offering", n.offering, kRequired);
  v.Time("launch_time", n.launch_time);
  v.Enum("state", n.state);
  v.StrMap("labels", n.labels);
  v.Bool("do_not_disrupt", n.do_not_disrupt);
  v.Str("placement_group", n.placement_group);
  v.Objects("running", n.running);
}

template <class V, Is<ForecastLevel> T>
void Fields(V& v, T& l) {
  v.Double("quantile", l.quantile);
  v.Double("gpus", l.gpus);
}

template <class V, Is<DemandForecast> T>
void Fields(V& v, T& f) {
  v.Str("workload_class", f.workload_class, kRequired);
  v.Double("demand_gpus", f.demand_gpus);
  v.DurationS("horizon_s", f.horizon);
  v.DurationS("lead_time_s", f.lead_time);
  v.Objects("levels", f.levels);
  v.Str("fallback", f.fallback);
}

template <class V, Is<WarmNode> T>
void Fields(V& v, T& w) {
  v.Str("instance_id", w.instance_id, kRequired);
  v.Str("pool", w.pool, kRequired);
  v.Object("offering", w.offering, kRequired);
  v.Bool("stopped", w.stopped);
  v.Time("since", w.since);
  v.Double("waiting_usd_per_hour", w.waiting_usd_per_hour);
}

template <class V, Is<Snapshot> T>
void Fields(V& v, T& s) {
  v.Constant("apiVersion", kApiVersion);
  v.Constant("kind", kSnapshotKind);
  v.Time("time", s.time);
  v.Double("month_to_date_usd", s.month_to_date_usd);
  DoubleMap(v, "month_to_date_usd_by_pool", s.month_to_date_usd_by_pool);
  DoubleMap(v, "month_to_date_usd_by_team", s.month_to_date_usd_by_team);
  v.Double("hours_left_in_month", s.hours_left_in_month);
  v.StrList("scale_down_blocked_classes", s.scale_down_blocked_classes);
  v.IntMap("recently_disrupted", s.recently_disrupted);
  v.StrList("spot_paused_classes", s.spot_paused_classes);
  v.StrList("spot_budget_spent_classes", s.spot_budget_spent_classes);
  DoubleMap(v, "spot_floor_credit_gpus", s.spot_floor_credit_gpus, kSigned);
  v.StrList("reclaimed_spot_pools", s.reclaimed_spot_pools);
  v.IntMap("warmup_seconds_by_family", s.warmup_seconds_by_family);
  v.Str("stale_prices", s.stale_prices);
  v.Objects("forecasts", s.forecasts);
  v.Objects("gpu_models", s.gpu_models);
  v.Objects("instance_types", s.instance_types);
  v.Objects("offerings", s.offerings);
  v.Objects("reservations", s.reservations);
  v.Objects("nodes", s.nodes);
  v.Objects("pending", s.pending);
  v.Objects("warm_nodes", s.warm_nodes);
  v.Double("volume_usd_per_gib_hour", s.volume_usd_per_gib_hour);
  v.Int("default_volume_gib", s.default_volume_gib);
}

template <class V>
void Fields(V& v, const LaunchAction& l) {
  v.Str("pool", l.pool);
  v.Object("offering", l.offering);
  v.Int("count", l.count);
  v.Double("usd_per_hour", l.usd_per_hour);
  v.Double("expected_interruption_usd_per_hour", l.expected_interruption_usd_per_hour);
  v.StrList("unit_ids", l.unit_ids);
  v.Objects("fallbacks", l.fallbacks);
  if (!l.node_labels.empty()) v.StrMap("node_labels", l.node_labels);
  if (l.all_or_nothing) v.Bool("all_or_nothing", true);
  if (!l.wake_instance_ids.empty()) v.StrList("wake_instance_ids", l.wake_instance_ids);
  if (l.into_warm) v.Bool("into_warm", true);
  v.Str("reason", l.reason);
}

template <class V>
void Fields(V& v, const TerminationAction& t) {
  v.Str("node_id", t.node_id);
  v.Str("instance_id", t.instance_id);
  v.Str("pool", t.pool);
  v.Object("offering", t.offering);
  v.Enum("kind", t.kind);
  v.StrList("moved_unit_ids", t.moved_unit_ids);
  if (t.warm) v.Bool("warm", true);
  if (t.park) v.Bool("park", true);
  v.Double("saves_usd_per_hour", t.saves_usd_per_hour);
  v.Str("reason", t.reason);
}

template <class V>
void Fields(V& v, const Placement& p) {
  v.Str("unit_id", p.unit_id);
  if (!p.node_id.empty()) {
    v.Str("node_id", p.node_id);
  } else {  // a node of one of the plan's launches
    v.Int("launch_index", p.launch_index);
    v.Int("launch_ordinal", p.launch_ordinal);
  }
}

// Unplaced units are written grouped by (class, reason, detail), groups in
// the order their first unit appears and units in plan order: a backlog of
// thousands of units left by one limit is one entry, not thousands of copies
// of the same reason.
struct UnplacedGroup {
  const UnplacedUnit* first = nullptr;
  std::vector<std::string> unit_ids;
};

inline std::vector<UnplacedGroup> GroupUnplaced(const std::vector<UnplacedUnit>& units) {
  std::vector<UnplacedGroup> groups;
  std::map<std::tuple<std::string_view, UnplacedReason, std::string_view>, size_t> index;
  for (const UnplacedUnit& u : units) {
    const auto [it, added] = index.try_emplace({u.workload_class, u.reason, u.detail}, groups.size());
    if (added) groups.push_back({&u, {}});
    groups[it->second].unit_ids.push_back(u.unit_id);
  }
  return groups;
}

template <class V>
void Fields(V& v, const UnplacedGroup& g) {
  v.Str("workload_class", g.first->workload_class);
  v.Enum("reason", g.first->reason);
  v.Str("detail", g.first->detail);
  v.StrList("unit_ids", g.unit_ids);
}

template <class V>
void Fields(V& v, const Plan& p) {
  v.Double("predicted_cost_usd_per_hour", p.cost_after_usd_per_hour);
  v.Double("cost_before_usd_per_hour", p.cost_before_usd_per_hour);
  v.Double("expected_interruption_usd_per_hour", p.expected_interruption_usd_per_hour);
  v.Str("summary", p.summary);
  v.Objects("launches", p.launches);
  v.Objects("terminations", p.terminations);
  v.Objects("placements", p.placements);
  v.Objects("unplaced", GroupUnplaced(p.unplaced));
}

// Writes the fields as compact JSON (model/json_writer.h). Requirements and
// minimums only matter to the reader.
class FieldWriter {
 public:
  explicit FieldWriter(JsonWriter* w) : w_(w) {}

  // The whole object: {"field": value, ...}.
  template <class T>
  void Write(const T& value) {
    w_->BeginObject();
    Fields(*this, value);
    w_->EndObject();
  }

  void Str(const char* key, const std::string& value, Need = Need::kOptional) { w_->PlainKey(key).String(value); }
  void Bool(const char* key, bool value) { w_->PlainKey(key).Bool(value); }
  void Int(const char* key, int value, int = 0) { w_->PlainKey(key).Int(value); }
  void Int64(const char* key, int64_t value) { w_->PlainKey(key).Int(value); }
  void Double(const char* key, double value) { w_->PlainKey(key).Double(value); }
  void DurationS(const char* key, Seconds value) { w_->PlainKey(key).Int(value.count()); }
  void Time(const char* key, WallTime value) { w_->PlainKey(key).String(FormatRfc3339(value)); }
  // An empty optional is omitted.
  void Time(const char* key, const std::optional<WallTime>& value) {
    if (value) Time(key, *value);
  }
  void Constant(const char* key, const char* value) { w_->PlainKey(key).String(value); }
  void StrList(const char* key, const std::vector<std::string>& values) { w_->PlainKey(key).StringArray(values); }
  void IntList(const char* key, const std::vector<int>& values) {
    w_->PlainKey(key).BeginArray();
    for (int v : values) w_->Int(v);
    w_->EndArray();
  }
  void StrMap(const char* key, const std::map<std::string, std::string>& values) {
    w_->PlainKey(key).BeginObject();
    for (const auto& [k, v] : values) w_->Key(k).String(v);
    w_->EndObject();
  }
  void IntMap(const char* key, const std::map<std::string, int>& values) {
    w_->PlainKey(key).BeginObject();
    for (const auto& [k, v] : values) w_->Key(k).Int(v);
    w_->EndObject();
  }
  void DoubleMap(const char* key, const std::map<std::string, double>& values) {
    w_->PlainKey(key).BeginObject();
    for (const auto& [k, v] : values) w_->Key(k).Double(v);
    w_->EndObject();
  }
  template <class E>
    requires std::is_enum_v<E>
  void Enum(const char* key, E value, Need = Need::kOptional) {
    w_->PlainKey(key).String(ToString(value));
  }
  template <class E>
  void Enum(const char* key, const std::optional<E>& value) {
    if (value) Enum(key, *value);
  }
  template <class T>
  void Object(const char* key, const T& value, Need = Need::kOptional) {
    w_->PlainKey(key);
    Write(value);
  }
  // An empty optional is omitted.
  template <class T>
  void Object(const char* key, const std::optional<T>& value) {
    if (value) Object(key, *value);
  }
  template <class T>
  void Objects(const char* key, const std::vector<T>& values) {
    w_->PlainKey(key).BeginArray();
    for (const T& v : values) Write(v);
    w_->EndArray();
  }

 private:
  JsonWriter* w_;
};

inline void DoubleMap(FieldWriter& w, const char* key, const std::map<std::string, double>& values,
                      MapSign = kNonNegative) {
  w.DoubleMap(key, values);
}

// ObjectReader has no getter for a map of numbers; this one reads through its
// Object() and reports a bad value the way its IntMap does (at the field).
inline void DoubleMap(ObjectReader& r, const char* key, std::map<std::string, double>& out,
                      MapSign sign = kNonNegative) {
  r.Object(key, Need::kOptional, [&](const Json& j, const std::string&) {
    std::map<std::string, double> values;
    for (const auto& [name, value] : j.items()) {
      if (!value.is_number() || (sign == kNonNegative && value.get<double>() < 0)) {
        r.Problem(key, sign == kNonNegative ? "expected an object of numbers >= 0" : "expected an object of numbers");
        return;
      }
      values[name] = value.get<double>();
    }
    out = std::move(values);
  });
}

}  // namespace gpuscaler::json_internal
