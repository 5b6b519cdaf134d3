#include "gpuscaler/model/json.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "gpuscaler/model/json_writer.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {
namespace {

// ---------------------------------------------------------------------------
// Writing

Json StringArray(const std::vector<std::string>& v) {
  Json a = Json::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

template <typename V>
Json MapObject(const std::map<std::string, V>& m) {
  Json o = Json::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

Json ToJson(const MigProfile& p) {
  Json j;
  j["name"] = p.name;
  j["compute_slices"] = p.compute_slices;
  j["memory_slices"] = p.memory_slices;
  j["memory_mib"] = p.memory_mib;
  Json starts = Json::array();
  for (int s : p.allowed_starts) starts.push_back(s);
  j["starts"] = std::move(starts);
  return j;
}

Json ToJson(const GpuModel& g) {
  Json j;
  j["name"] = g.name;
  j["short_name"] = g.short_name;
  j["memory_mib"] = g.memory_mib;
  Json profiles = Json::array();
  for (const auto& p : g.mig_profiles) profiles.push_back(ToJson(p));
  j["mig_profiles"] = std::move(profiles);
  return j;
}

Json ToJson(const InstanceType& t) {
  Json j;
  j["name"] = t.name;
  j["family"] = t.family;
  j["gpu_model"] = t.gpu_model;
  j["gpu_count"] = t.gpu_count;
  j["gpu_memory_mib"] = t.gpu_memory_mib;
  j["vcpus"] = t.vcpus;
  j["memory_mib"] = t.memory_mib;
  j["local_nvme_gb"] = t.local_nvme_gb;
  j["network_mbps"] = t.network_mbps;
  return j;
}

// ---------------------------------------------------------------------------
// Reading: a strict, path-tracking reader that collects every problem.

class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void Add(const std::string& path, const std::string& message) {
    std::string line = file_;
    line += ": ";
    line += path.empty() ? std::string("(root)") : path;
    line += ": ";
    line += message;
    lines_.push_back(std::move(line));
  }
  bool empty() const { return lines_.empty(); }
  std::string Joined() const {
    std::string out;
    for (size_t i = 0; i < lines_.size(); ++i) {
      if (i > 0) out += '\n';
      out += lines_[i];
    }
    return out;
  }

 private:
  std::string file_;
  std::vector<std::string> lines_;
};

std::string Field(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}
std::string Elem(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Reads the fields of one JSON object. Each getter leaves `*out` untouched when
// the field is absent (the struct default stays) or wrong (a problem is
// recorded). Done() reports the fields no getter asked for.
class ObjectReader {
 public:
  ObjectReader(const Json& j, std::string path, Problems* problems)
      : j_(j), path_(std::move(path)), problems_(problems), ok_(j.is_object()) {
    if (!ok_) problems_->Add(path_, "expected an object");
  }

  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }
  bool Has(const char* key) const { return ok_ && j_.contains(key); }

  bool Str(const char* key, std::string* out, bool required = false) {
    return Read(key, required, "expected a string", [&](const Json& v) {
      if (!v.is_string()) return false;
      *out = v.get<std::string>();
      return true;
    });
  }
  void Bool(const char* key, bool* out) {
    Read(key, false, "expected true or false", [&](const Json& v) {
      if (!v.is_boolean()) return false;
      *out = v.get<bool>();
      return true;
    });
  }
  void Int64(const char* key, int64_t* out, int64_t min = 0) {
    Read(key, false, "expected an integer >= " + std::to_string(min), [&](const Json& v) {
      if (!IsInt64(v) || v.get<int64_t>() < min) return false;
      *out = v.get<int64_t>();
      return true;
    });
  }
  void Int(const char* key, int* out, int min = 0) {
    Read(key, false, "expected an integer >= " + std::to_string(min), [&](const Json& v) {
      if (!IsInt64(v)) return false;
      const int64_t x = v.get<int64_t>();
      if (x < min || x > std::numeric_limits<int>::max()) return false;
      *out = static_cast<int>(x);
      return true;
    });
  }
  void Double(const char* key, double* out) {
    Read(key, false, "expected a number >= 0", [&](const Json& v) {
      if (!v.is_number() || v.get<double>() < 0) return false;
      *out = v.get<double>();
      return true;
    });
  }
  void DurationS(const char* key, Seconds* out) {
    Read(key, false, "expected an integer number of seconds >= 0", [&](const Json& v) {
      if (!IsInt64(v) || v.get<int64_t>() < 0) return false;
      *out = Seconds(v.get<int64_t>());
      return true;
    });
  }
  void Time(const char* key, WallTime* out) {
    Read(key, false, "expected an RFC 3339 time such as \"2026-07-20T12:00:00Z\"", [&](const Json& v) {
      return v.is_string() && ParseRfc3339(v.get<std::string>(), out);
    });
  }
  void StrList(const char* key, std::vector<std::string>* out) {
    Read(key, false, "expected an array of strings", [&](const Json& v) {
      if (!v.is_array()) return false;
      std::vector<std::string> list;
      for (const auto& e : v) {
        if (!e.is_string()) return false;
        list.push_back(e.get<std::string>());
      }
      *out = std::move(list);
      return true;
    });
  }
  void IntList(const char* key, std::vector<int>* out) {
    Read(key, false, "expected an array of integers >= 0", [&](const Json& v) {
      if (!v.is_array()) return false;
      std::vector<int> list;
      for (const auto& e : v) {
        if (!IsInt64(e) || e.get<int64_t>() < 0 || e.get<int64_t>() > std::numeric_limits<int>::max()) {
          return false;
        }
        list.push_back(static_cast<int>(e.get<int64_t>()));
      }
      *out = std::move(list);
      return true;
    });
  }
  void StrMap(const char* key, std::map<std::string, std::string>* out) {
    Read(key, false, "expected an object of strings", [&](const Json& v) {
      if (!v.is_object()) return false;
      std::map<std::string, std::string> m;
      for (const auto& [k, e] : v.items()) {
        if (!e.is_string()) return false;
        m[k] = e.get<std::string>();
      }
      *out = std::move(m);
      return true;
    });
  }
  void IntMap(const char* key, std::map<std::string, int>* out) {
    Read(key, false, "expected an object of integers >= 0", [&](const Json& v) {
      if (!v.is_object()) return false;
      std::map<std::string, int> m;
      for (const auto& [k, e] : v.items()) {
        if (!IsInt64(e) || e.get<int64_t>() < 0 || e.get<int64_t>() > std::numeric_limits<int>::max()) {
          return false;
        }
        m[k] = static_cast<int>(e.get<int64_t>());
      }
      *out = std::move(m);
      return true;
    });
  }
  // Calls `each(element, element_path)` for every element of an array field.
  void Array(const char* key, const std::function<void(const Json&, const std::string&)>& each) {
    Read(key, false, "expected an array", [&](const Json& v) {
      if (!v.is_array()) return false;
      for (size_t i = 0; i < v.size(); ++i) each(v[i], Elem(Field(path_, key), i));
      return true;
    });
  }
  // Calls `read(value, field_path)` for an object-valued field.
  void Object(const char* key, bool required, const std::function<void(const Json&, const std::string&)>& read) {
    Read(key, required, "expected an object", [&](const Json& v) {
      if (!v.is_object()) return false;
      read(v, Field(path_, key));
      return true;
    });
  }
  // Records a problem at `key` (for checks beyond the type).
  void Problem(const char* key, const std::string& message) { problems_->Add(Field(path_, key), message); }

  void Done() {
    if (!ok_) return;
    for (const auto& [k, v] : j_.items()) {
      if (seen_.count(k) == 0) problems_->Add(Field(path_, k), "unknown field");
    }
  }

 private:
  static bool IsInt64(const Json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    return v.is_number_integer();
  }

  // True when the field is present and well-formed.
  template <typename F>
  bool Read(const char* key, bool required, const std::string& expected, F&& parse) {
    if (!ok_) return false;
    seen_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required) problems_->Add(Field(path_, key), "required field is missing");
      return false;
    }
    if (parse(*it)) return true;
    problems_->Add(Field(path_, key), expected);
    return false;
  }

  const Json& j_;
  std::string path_;
  Problems* problems_;
  bool ok_;
  std::set<std::string> seen_;
};

void ReadCapacityType(ObjectReader& r, const char* key, bool required, std::optional<CapacityType>* out) {
  std::string text;
  if (!r.Str(key, &text, required)) return;
  if (auto c = ParseCapacityType(text)) {
    *out = *c;
  } else {
    r.Problem(key, "expected \"on-demand\" or \"spot\"");
  }
}

MigProfile ReadMigProfile(const Json& j, const std::string& path, Problems* problems) {
  MigProfile p;
  ObjectReader r(j, path, problems);
  r.Str("name", &p.name, true);
  r.Int("compute_slices", &p.compute_slices);
  r.Int("memory_slices", &p.memory_slices);
  r.Int64("memory_mib", &p.memory_mib);
  r.IntList("starts", &p.allowed_starts);
  r.Done();
  return p;
}

GpuModel ReadGpuModel(const Json& j, const std::string& path, Problems* problems) {
  GpuModel g;
  ObjectReader r(j, path, problems);
  r.Str("name", &g.name, true);
  r.Str("short_name", &g.short_name);
  r.Int64("memory_mib", &g.memory_mib);
  r.Array("mig_profiles", [&](const Json& e, const std::string& p) {
    g.mig_profiles.push_back(ReadMigProfile(e, p, problems));
  });
  r.Done();
  return g;
}

InstanceType ReadInstanceType(const Json& j, const std::string& path, Problems* problems) {
  InstanceType t;
  ObjectReader r(j, path, problems);
  r.Str("name", &t.name, true);
  r.Str("family", &t.family);
  r.Str("gpu_model", &t.gpu_model);
  r.Int("gpu_count", &t.gpu_count);
  r.Int64("gpu_memory_mib", &t.gpu_memory_mib);
  r.Int("vcpus", &t.vcpus);
  r.Int64("memory_mib", &t.memory_mib);
  r.Int64("local_nvme_gb", &t.local_nvme_gb);
  r.Int64("network_mbps", &t.network_mbps);
  r.Done();
  return t;
}

Offering ReadOffering(const Json& j, const std::string& path, Problems* problems) {
  Offering o;
  ObjectReader r(j, path, problems);
  r.Str("instance_type", &o.instance_type, true);
  r.Str("region", &o.region);
  r.Str("zone", &o.zone, true);
  std::optional<CapacityType> capacity;
  ReadCapacityType(r, "capacity_type", true, &capacity);
  if (capacity) o.capacity_type = *capacity;
  r.Double("usd_per_hour", &o.usd_per_hour);
  r.Double("on_demand_usd_per_hour", &o.on_demand_usd_per_hour);
  r.Double("interruptions_per_hour", &o.interruptions_per_hour);
  r.Bool("available", &o.available);
  r.DurationS("launch_latency_s", &o.launch_latency);
  r.Done();
  // AWS zone names are the region plus one letter ("us-east-1b").
  if (o.region.empty() && o.zone.size() > 1 && std::isalpha(static_cast<unsigned char>(o.zone.back()))) {
    o.region = o.zone.substr(0, o.zone.size() - 1);
  }
  if (o.on_demand_usd_per_hour == 0 && o.capacity_type == CapacityType::kOnDemand) {
    o.on_demand_usd_per_hour = o.usd_per_hour;
  }
  return o;
}

DemandUnit ReadUnit(const Json& j, const std::string& path, Problems* problems) {
  DemandUnit u;
  ObjectReader r(j, path, problems);
  r.Str("id", &u.id, true);
  r.Str("workload_class", &u.workload_class);
  r.Int("gpus", &u.gpus);
  r.Int("gpu_milli", &u.gpu_milli);
  r.Str("mig_profile", &u.mig_profile);
  r.StrList("gpu_models", &u.gpu_models);
  r.Int64("min_gpu_memory_mib", &u.min_gpu_memory_mib);
  r.Int64("cpu_milli", &u.cpu_milli);
  r.Int64("memory_mib", &u.memory_mib);
  r.Int("priority", &u.priority, std::numeric_limits<int>::min());
  r.Bool("interruptible", &u.interruptible);
  r.DurationS("expected_runtime_s", &u.expected_runtime);
  r.DurationS("checkpoint_interval_s", &u.checkpoint_interval);
  r.DurationS("restart_cost_s", &u.restart_cost);
  r.StrList("zones", &u.zones);
  r.StrList("instance_types", &u.instance_types);
  ReadCapacityType(r, "capacity_type", false, &u.capacity_type);
  r.Str("pool", &u.pool);
  r.StrMap("labels", &u.labels);
  r.Done();
  if (u.gpu_milli > 999) r.Problem("gpu_milli", "must be at most 999 (a fraction of one GPU)");
  if (u.gpus > 0 && (u.gpu_milli > 0 || !u.mig_profile.empty())) {
    r.Problem("gpus", "set only one of gpus, gpu_milli and mig_profile");
  } else if (u.gpu_milli > 0 && !u.mig_profile.empty()) {
    r.Problem("gpu_milli", "set only one of gpus, gpu_milli and mig_profile");
  }
  return u;
}

Node ReadNode(const Json& j, const std::string& path, Problems* problems) {
  Node n;
  ObjectReader r(j, path, problems);
  r.Str("id", &n.id, true);
  r.Str("instance_id", &n.instance_id);
  r.Str("pool", &n.pool);
  r.Object("offering", true, [&](const Json& e, const std::string& p) {
    n.offering = ReadOffering(e, p, problems);
  });
  r.Time("launch_time", &n.launch_time);
  std::string state;
  if (r.Str("state", &state)) {
    if (auto s = ParseNodeState(state)) {
      n.state = *s;
    } else {
      r.Problem("state", "expected one of launching, ready, cordoned, draining, terminating");
    }
  }
  r.StrMap("labels", &n.labels);
  r.Bool("do_not_disrupt", &n.do_not_disrupt);
  r.Array("running", [&](const Json& e, const std::string& p) { n.running.push_back(ReadUnit(e, p, problems)); });
  r.Done();
  return n;
}

// ---------------------------------------------------------------------------
// Text report helpers

std::string Usd(double usd_per_hour) {
  char buf[64];
  const double a = usd_per_hour < 0 ? -usd_per_hour : usd_per_hour;
  std::snprintf(buf, sizeof(buf), a > 0 && a < 0.1 ? "$%.4f/h" : "$%.2f/h", usd_per_hour);
  return buf;
}

std::string SignedUsd(double usd_per_hour) {
  std::string out(1, usd_per_hour >= 0 ? '+' : '-');
  out.append(Usd(usd_per_hour < 0 ? -usd_per_hour : usd_per_hour));
  return out;
}

std::string Describe(const Offering& o) {
  return o.instance_type + " " + std::string(ToString(o.capacity_type)) + " " + o.zone;
}

std::string IdList(const std::vector<std::string>& ids, size_t max_shown = 8) {
  std::string out;
  for (size_t i = 0; i < ids.size() && i < max_shown; ++i) {
    if (i > 0) out += ", ";
    out += ids[i];
  }
  if (ids.size() > max_shown) out += ", ... and " + std::to_string(ids.size() - max_shown) + " more";
  return out;
}

std::string Plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

// ---------------------------------------------------------------------------

namespace {

void WriteOffering(const Offering& o, JsonWriter* w) {
  w->BeginObject();
  w->Key("instance_type").String(o.instance_type);
  w->Key("region").String(o.region);
  w->Key("zone").String(o.zone);
  w->Key("capacity_type").String(ToString(o.capacity_type));
  w->Key("usd_per_hour").Double(o.usd_per_hour);
  w->Key("on_demand_usd_per_hour").Double(o.on_demand_usd_per_hour);
  w->Key("interruptions_per_hour").Double(o.interruptions_per_hour);
  w->Key("available").Bool(o.available);
  w->Key("launch_latency_s").Int(o.launch_latency.count());
  w->EndObject();
}

}  // namespace

Json ToJson(const Offering& o) {
  JsonWriter w;
  WriteOffering(o, &w);
  return Json::parse(w.text());
}

Json ToJson(const DemandUnit& u) {
  Json j;
  j["id"] = u.id;
  j["workload_class"] = u.workload_class;
  j["gpus"] = u.gpus;
  j["gpu_milli"] = u.gpu_milli;
  j["mig_profile"] = u.mig_profile;
  j["gpu_models"] = StringArray(u.gpu_models);
  j["min_gpu_memory_mib"] = u.min_gpu_memory_mib;
  j["cpu_milli"] = u.cpu_milli;
  j["memory_mib"] = u.memory_mib;
  j["priority"] = u.priority;
  j["interruptible"] = u.interruptible;
  j["expected_runtime_s"] = u.expected_runtime.count();
  j["checkpoint_interval_s"] = u.checkpoint_interval.count();
  j["restart_cost_s"] = u.restart_cost.count();
  j["zones"] = StringArray(u.zones);
  j["instance_types"] = StringArray(u.instance_types);
  if (u.capacity_type) j["capacity_type"] = std::string(ToString(*u.capacity_type));
  j["pool"] = u.pool;
  j["labels"] = MapObject(u.labels);
  return j;
}

Json ToJson(const Node& n) {
  Json j;
  j["id"] = n.id;
  j["instance_id"] = n.instance_id;
  j["pool"] = n.pool;
  j["offering"] = ToJson(n.offering);
  j["launch_time"] = FormatRfc3339(n.launch_time);
  j["state"] = std::string(ToString(n.state));
  j["labels"] = MapObject(n.labels);
  j["do_not_disrupt"] = n.do_not_disrupt;
  Json running = Json::array();
  for (const auto& u : n.running) running.push_back(ToJson(u));
  j["running"] = std::move(running);
  return j;
}

Json ToJson(const Snapshot& s) {
  Json j;
  j["apiVersion"] = "gpuscaler/v1";
  j["kind"] = kSnapshotKind;
  j["time"] = FormatRfc3339(s.time);
  j["month_to_date_usd"] = s.month_to_date_usd;
  j["hours_left_in_month"] = s.hours_left_in_month;
  j["scale_down_blocked_classes"] = StringArray(s.scale_down_blocked_classes);
  j["recently_disrupted"] = MapObject(s.recently_disrupted);
  Json gpus = Json::array();
  for (const auto& g : s.gpu_models) gpus.push_back(ToJson(g));
  j["gpu_models"] = std::move(gpus);
  Json types = Json::array();
  for (const auto& t : s.instance_types) types.push_back(ToJson(t));
  j["instance_types"] = std::move(types);
  Json offerings = Json::array();
  for (const auto& o : s.offerings) offerings.push_back(ToJson(o));
  j["offerings"] = std::move(offerings);
  Json nodes = Json::array();
  for (const auto& n : s.nodes) nodes.push_back(ToJson(n));
  j["nodes"] = std::move(nodes);
  Json pending = Json::array();
  for (const auto& u : s.pending) pending.push_back(ToJson(u));
  j["pending"] = std::move(pending);
  return j;
}

std::string FormatPlanJsonLine(const Plan& p) {
  JsonWriter w;
  w.BeginObject();
  w.Key("predicted_cost_usd_per_hour").Double(p.cost_after_usd_per_hour);
  w.Key("cost_before_usd_per_hour").Double(p.cost_before_usd_per_hour);
  w.Key("expected_interruption_usd_per_hour").Double(p.expected_interruption_usd_per_hour);
  w.Key("summary").String(p.summary);
  w.Key("launches").BeginArray();
  for (const auto& l : p.launches) {
    w.BeginObject();
    w.Key("pool").String(l.pool);
    w.Key("offering");
    WriteOffering(l.offering, &w);
    w.Key("count").Int(l.count);
    w.Key("usd_per_hour").Double(l.usd_per_hour);
    w.Key("expected_interruption_usd_per_hour").Double(l.expected_interruption_usd_per_hour);
    w.Key("unit_ids").StringArray(l.unit_ids);
    w.Key("fallbacks").BeginArray();
    for (const auto& f : l.fallbacks) WriteOffering(f, &w);
    w.EndArray();
    w.Key("reason").String(l.reason);
    w.EndObject();
  }
  w.EndArray();
  w.Key("terminations").BeginArray();
  for (const auto& t : p.terminations) {
    w.BeginObject();
    w.Key("node_id").String(t.node_id);
    w.Key("instance_id").String(t.instance_id);
    w.Key("pool").String(t.pool);
    w.Key("offering");
    WriteOffering(t.offering, &w);
    w.Key("kind").String(ToString(t.kind));
    w.Key("moved_unit_ids").StringArray(t.moved_unit_ids);
    w.Key("saves_usd_per_hour").Double(t.saves_usd_per_hour);
    w.Key("reason").String(t.reason);
    w.EndObject();
  }
  w.EndArray();
  w.Key("placements").BeginArray();
  for (const auto& pl : p.placements) {
    w.BeginObject();
    w.Key("unit_id").String(pl.unit_id);
    if (!pl.node_id.empty()) {
      w.Key("node_id").String(pl.node_id);
    } else {
      w.Key("launch_index").Int(pl.launch_index);
      w.Key("launch_ordinal").Int(pl.launch_ordinal);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("unplaced").BeginArray();
  for (const auto& u : p.unplaced) {
    w.BeginObject();
    w.Key("unit_id").String(u.unit_id);
    w.Key("workload_class").String(u.workload_class);
    w.Key("reason").String(ToString(u.reason));
    w.Key("detail").String(u.detail);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::move(w).Take();
}

Json ToJson(const Plan& p) { return Json::parse(FormatPlanJsonLine(p)); }

std::string FormatSnapshotJson(const Snapshot& snapshot) { return ToJson(snapshot).dump(2) + "\n"; }
std::string FormatPlanJson(const Plan& plan) { return ToJson(plan).dump(2) + "\n"; }

Result<Snapshot> ParseSnapshotJson(const std::string& text, const std::string& file_name) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {  // not only parse_error: 1e400 is out_of_range.406
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    if (auto close = what.find("] "); !what.empty() && what[0] == '[' && close != std::string::npos) {
      what = what.substr(close + 2);
    }
    return Error::InvalidInput(file_name + ": invalid JSON: " + what);
  }

  Problems problems(file_name);
  Snapshot s;
  ObjectReader r(root, "", &problems);
  std::string api_version = "gpuscaler/v1";
  std::string kind = kSnapshotKind;
  r.Str("apiVersion", &api_version);
  r.Str("kind", &kind);
  if (api_version != "gpuscaler/v1") r.Problem("apiVersion", "expected \"gpuscaler/v1\"");
  if (kind != kSnapshotKind) r.Problem("kind", "expected \"Snapshot\"");
  r.Time("time", &s.time);
  r.Double("month_to_date_usd", &s.month_to_date_usd);
  r.Double("hours_left_in_month", &s.hours_left_in_month);
  r.StrList("scale_down_blocked_classes", &s.scale_down_blocked_classes);
  r.IntMap("recently_disrupted", &s.recently_disrupted);
  r.Array("gpu_models", [&](const Json& e, const std::string& p) {
    s.gpu_models.push_back(ReadGpuModel(e, p, &problems));
  });
  r.Array("instance_types", [&](const Json& e, const std::string& p) {
    s.instance_types.push_back(ReadInstanceType(e, p, &problems));
  });
  r.Array("offerings", [&](const Json& e, const std::string& p) {
    s.offerings.push_back(ReadOffering(e, p, &problems));
  });
  r.Array("nodes", [&](const Json& e, const std::string& p) {
    s.nodes.push_back(ReadNode(e, p, &problems));
  });
  r.Array("pending", [&](const Json& e, const std::string& p) { s.pending.push_back(ReadUnit(e, p, &problems)); });
  r.Done();

  // Plans refer to units and nodes by id, so ids must be unique.
  std::set<std::string> node_ids;
  std::set<std::string> unit_ids;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const std::string path = Elem("nodes", i);
    if (!node_ids.insert(s.nodes[i].id).second) problems.Add(path + ".id", "duplicate node id \"" + s.nodes[i].id + "\"");
    for (size_t k = 0; k < s.nodes[i].running.size(); ++k) {
      const std::string& id = s.nodes[i].running[k].id;
      if (!unit_ids.insert(id).second) {
        problems.Add(Elem(path + ".running", k) + ".id", "duplicate unit id \"" + id + "\"");
      }
    }
  }
  for (size_t i = 0; i < s.pending.size(); ++i) {
    if (!unit_ids.insert(s.pending[i].id).second) {
      problems.Add(Elem("pending", i) + ".id", "duplicate unit id \"" + s.pending[i].id + "\"");
    }
  }
  if (!problems.empty()) return Error::InvalidInput(problems.Joined());

  FillNodeOfferings(&s);
  return s;
}

Result<Snapshot> LoadSnapshotFile(const std::string& path) {
  Result<std::string> text = ReadTextFile(path);
  if (!text) return Error::NotFound(path + ": cannot read the snapshot file: " + text.error().message());
  return ParseSnapshotJson(*text, path);
}

void FillNodeOfferings(Snapshot* snapshot) {
  std::map<std::string, const Offering*> by_key;
  for (const auto& o : snapshot->offerings) by_key.emplace(o.Key(), &o);
  for (auto& n : snapshot->nodes) {
    if (n.offering.usd_per_hour != 0) continue;
    auto it = by_key.find(n.offering.Key());
    if (it != by_key.end()) n.offering = *it->second;
  }
}

void AddCatalog(const Catalog& catalog, const std::vector<std::string>& regions, Snapshot* snapshot) {
  std::set<std::string> gpus;
  for (const auto& g : snapshot->gpu_models) gpus.insert(g.name);
  for (const auto& g : catalog.gpu_models) {
    if (gpus.insert(g.name).second) snapshot->gpu_models.push_back(g);
  }
  std::set<std::string> types;
  for (const auto& t : snapshot->instance_types) types.insert(t.name);
  for (const auto& t : catalog.instance_types) {
    if (types.insert(t.name).second) snapshot->instance_types.push_back(t);
  }
  std::set<std::string> keys;
  for (const auto& o : snapshot->offerings) keys.insert(o.Key());
  for (auto& o : catalog.Offerings(regions)) {
    if (keys.insert(o.Key()).second) snapshot->offerings.push_back(std::move(o));
  }
  FillNodeOfferings(snapshot);
}

std::string FormatPlanText(const Plan& plan, const Snapshot& snapshot) {
  std::ostringstream out;
  size_t running = 0;
  for (const auto& n : snapshot.nodes) running += n.running.size();
  out << "Snapshot " << FormatRfc3339(snapshot.time) << ": " << Plural(snapshot.pending.size(), "pending unit", "pending units")
      << ", " << Plural(snapshot.nodes.size(), "node", "nodes") << " (" << Plural(running, "running unit", "running units")
      << "), " << Plural(snapshot.offerings.size(), "offering", "offerings") << "\n";
  if (!plan.summary.empty()) out << "Summary: " << plan.summary << "\n";

  out << "\nLaunches (" << plan.launches.size() << "):" << (plan.launches.empty() ? " none" : "") << "\n";
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const LaunchAction& l = plan.launches[i];
    out << "  [" << i << "] " << l.count << "x " << Describe(l.offering);
    if (!l.pool.empty()) out << " (pool " << l.pool << ")";
    out << ": " << Usd(l.usd_per_hour);
    if (l.count > 1) out << " (" << Usd(l.offering.usd_per_hour) << " each)";
    if (l.offering.capacity_type == CapacityType::kSpot && l.offering.on_demand_usd_per_hour > 0) {
      out << ", on-demand " << Usd(l.offering.on_demand_usd_per_hour) << " each";
    }
    if (l.expected_interruption_usd_per_hour > 0) {
      out << ", expected interruption cost " << Usd(l.expected_interruption_usd_per_hour);
    }
    out << "\n";
    if (!l.unit_ids.empty()) out << "      for " << Plural(l.unit_ids.size(), "unit", "units") << ": " << IdList(l.unit_ids) << "\n";
    if (!l.reason.empty()) out << "      reason: " << l.reason << "\n";
    if (!l.fallbacks.empty()) {
      std::vector<std::string> names;
      for (const auto& f : l.fallbacks) names.push_back(Describe(f) + " " + Usd(f.usd_per_hour));
      out << "      fallbacks: " << IdList(names, 3) << "\n";
    }
  }

  out << "\nTerminations (" << plan.terminations.size() << "):" << (plan.terminations.empty() ? " none" : "") << "\n";
  for (const TerminationAction& t : plan.terminations) {
    out << "  " << t.node_id;
    if (!t.instance_id.empty()) out << " " << t.instance_id;
    out << " (" << Describe(t.offering);
    if (!t.pool.empty()) out << ", pool " << t.pool;
    out << "): " << ToString(t.kind) << ", saves " << Usd(t.saves_usd_per_hour);
    if (!t.moved_unit_ids.empty()) {
      out << ", moves " << Plural(t.moved_unit_ids.size(), "unit", "units") << ": " << IdList(t.moved_unit_ids);
    }
    out << "\n";
    if (!t.reason.empty()) out << "      reason: " << t.reason << "\n";
  }

  size_t on_existing = 0;
  for (const auto& p : plan.placements) on_existing += p.node_id.empty() ? 0 : 1;
  out << "\nPlacements (" << plan.placements.size() << "): " << on_existing << " on existing nodes, "
      << plan.placements.size() - on_existing << " on new nodes\n";

  out << "\nUnplaced (" << plan.unplaced.size() << "):" << (plan.unplaced.empty() ? " none" : "") << "\n";
  std::map<std::string, std::vector<const UnplacedUnit*>> by_reason;
  for (const auto& u : plan.unplaced) by_reason[std::string(ToString(u.reason))].push_back(&u);
  for (const auto& [reason, units] : by_reason) {
    std::vector<std::string> ids;
    std::vector<std::string> details;
    for (const UnplacedUnit* u : units) {
      ids.push_back(u->unit_id);
      if (!u->detail.empty() && std::find(details.begin(), details.end(), u->detail) == details.end()) {
        details.push_back(u->detail);
      }
    }
    out << "  " << reason << " (" << units.size() << "): " << IdList(ids) << "\n";
    for (size_t i = 0; i < details.size() && i < 3; ++i) out << "      " << details[i] << "\n";
    if (details.size() > 3) out << "      ... and " << details.size() - 3 << " more details\n";
  }

  out << "\nCost: " << Usd(plan.cost_before_usd_per_hour) << " before, " << Usd(plan.cost_after_usd_per_hour)
      << " after (" << SignedUsd(plan.cost_after_usd_per_hour - plan.cost_before_usd_per_hour) << ")\n";
  out << "Expected interruption cost: " << Usd(plan.expected_interruption_usd_per_hour) << "\n";
  return out.str();
}

}  // namespace gpuscaler
