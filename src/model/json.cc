#include "gpuscaler/model/json.h"

#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "gpuscaler/model/json_writer.h"
#include "gpuscaler/model/text_file.h"
#include "json_schema.h"

namespace gpuscaler {
namespace json_internal {
namespace {

// The strings an enum field accepts, and the problem for any other.
template <class E>
struct EnumText;

template <>
struct EnumText<CapacityType> {
  static std::optional<CapacityType> Parse(std::string_view s) { return ParseCapacityType(s); }
  static constexpr const char* kExpected = "expected \"on-demand\", \"spot\" or \"reserved\"";
};

template <>
struct EnumText<ReservationKind> {
  static std::optional<ReservationKind> Parse(std::string_view s) { return ParseReservationKind(s); }
  static constexpr const char* kExpected = "expected \"default\" or \"capacity-block\"";
};

template <>
struct EnumText<NodeState> {
  static std::optional<NodeState> Parse(std::string_view s) { return ParseNodeState(s); }
  static constexpr const char* kExpected = "expected one of launching, ready, cordoned, draining, terminating, held_for_replacement";
};

// Defaults and checks that span fields, applied once an object is read.
template <class T>
void AfterRead(T&, ObjectReader&) {}

// An unset region from the zone: AWS zone names are the region plus one
// letter ("us-east-1b").
void RegionFromZone(const std::string& zone, std::string& region) {
  if (region.empty() && zone.size() > 1 && std::isalpha(static_cast<unsigned char>(zone.back()))) {
    region = zone.substr(0, zone.size() - 1);
  }
}

void AfterRead(Offering& o, ObjectReader& r) {
  RegionFromZone(o.zone, o.region);
  if (o.on_demand_usd_per_hour == 0 && o.capacity_type == CapacityType::kOnDemand) {
    o.on_demand_usd_per_hour = o.usd_per_hour;
  }
  if (o.capacity_type == CapacityType::kReserved && o.reservation_id.empty()) {
    r.Problem("reservation_id", "a reserved offering names its reservation");
  } else if (o.capacity_type != CapacityType::kReserved && !o.reservation_id.empty()) {
    r.Problem("reservation_id", "only a reserved offering names a reservation");
  }
}

void AfterRead(Reservation& res, ObjectReader& r) {
  RegionFromZone(res.zone, res.region);
  if (res.total_count < 0) r.Problem("total_count", "must not be negative");
  if (res.available_count < 0 || res.available_count > res.total_count) {
    r.Problem("available_count", "must be between 0 and total_count");
  }
  if (res.end && *res.end <= res.start) r.Problem("end", "must be after start");
}

void AfterRead(DemandUnit& u, ObjectReader& r) {
  if (u.gpu_milli > 999) r.Problem("gpu_milli", "must be at most 999 (a fraction of one GPU)");
  if (u.gpus > 0 && (u.gpu_milli > 0 || !u.mig_profile.empty())) {
    r.Problem("gpus", "set only one of gpus, gpu_milli and mig_profile");
  } else if (u.gpu_milli > 0 && !u.mig_profile.empty()) {
    r.Problem("gpu_milli", "set only one of gpus, gpu_milli and mig_profile");
  }
}

// Reads the fields that Fields() lists, with ObjectReader's strictness.
class FieldReader : public ObjectReader {
 public:
  using ObjectReader::ObjectReader;

  // The object at `path`: its fields, then unknown fields, then AfterRead.
  template <class T>
  static T Read(const Json& j, const std::string& path, Problems* problems) {
    T value{};
    FieldReader r(j, path, problems);
    Fields(r, value);
    r.Done();
    AfterRead(value, r);
    return value;
  }

  template <class E>
    requires std::is_enum_v<E>
  void Enum(const char* key, E& out, Need need = Need::kOptional) {
    std::optional<E> value;
    Enum(key, value, need);
    if (value) out = *value;
  }
  template <class E>
  void Enum(const char* key, std::optional<E>& out, Need need = Need::kOptional) {
    std::string text;
    if (!Str(key, text, need)) return;
    if (auto value = EnumText<E>::Parse(text)) {
      out = *value;
    } else {
      Problem(key, EnumText<E>::kExpected);
    }
  }
  void Constant(const char* key, const char* want) {
    std::string value = want;
    Str(key, value);
    if (value != want) Problem(key, std::string("expected \"") + want + "\"");
  }
  template <class T>
  void Object(const char* key, T& out, Need need = Need::kOptional) {
    ObjectReader::Object(key, need, [&](const Json& e, const std::string& path) { out = Read<T>(e, path, problems()); });
  }
  // Absent: left empty.
  template <class T>
  void Object(const char* key, std::optional<T>& out) {
    ObjectReader::Object(key, Need::kOptional,
                         [&](const Json& e, const std::string& path) { out = Read<T>(e, path, problems()); });
  }
  template <class T>
  void Objects(const char* key, std::vector<T>& out) {
    Array(key, [&](const Json& e, const std::string& path) { out.push_back(Read<T>(e, path, problems())); });
  }
};

// Plans refer to units and nodes by id, so ids must be unique.
void CheckUniqueIds(const Snapshot& s, Problems* problems) {
  std::set<std::string> node_ids;
  std::set<std::string> unit_ids;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const std::string path = ElementPath("nodes", i);
    if (!node_ids.insert(s.nodes[i].id).second) problems->Add(path + ".id", "duplicate node id \"" + s.nodes[i].id + "\"");
    for (size_t k = 0; k < s.nodes[i].running.size(); ++k) {
      const std::string& id = s.nodes[i].running[k].id;
      if (!unit_ids.insert(id).second) {
        problems->Add(ElementPath(path + ".running", k) + ".id", "duplicate unit id \"" + id + "\"");
      }
    }
  }
  for (size_t i = 0; i < s.pending.size(); ++i) {
    if (!unit_ids.insert(s.pending[i].id).second) {
      problems->Add(ElementPath("pending", i) + ".id", "duplicate unit id \"" + s.pending[i].id + "\"");
    }
  }
}

// The document, through the same writer as the plan line, so both print
// numbers and strings alike.
template <class T>
Json WriteJson(const T& value) {
  JsonWriter w;
  FieldWriter(&w).Write(value);
  return Json::parse(w.text());
}

}  // namespace
}  // namespace json_internal

namespace {

// Appends the items of `more` whose key no item of `have` has yet.
template <class T, class KeyOf>
void AppendMissing(const std::vector<T>& more, KeyOf key_of, std::vector<T>* have) {
  std::set<std::string> keys;
  for (const T& x : *have) keys.insert(key_of(x));
  for (const T& x : more) {
    if (keys.insert(key_of(x)).second) have->push_back(x);
  }
}

}  // namespace

Json ToJson(const Offering& offering) { return json_internal::WriteJson(offering); }
Json ToJson(const DemandUnit& unit) { return json_internal::WriteJson(unit); }
Json ToJson(const Node& node) { return json_internal::WriteJson(node); }
Json ToJson(const Snapshot& snapshot) { return json_internal::WriteJson(snapshot); }

std::string FormatSnapshotJson(const Snapshot& snapshot) { return ToJson(snapshot).dump(2) + "\n"; }

std::string FormatSnapshotJsonLine(const Snapshot& snapshot, std::string buffer) {
  JsonWriter w(std::move(buffer));
  json_internal::FieldWriter(&w).Write(snapshot);
  return std::move(w).Take();
}

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

  json_internal::Problems problems(file_name);
  Snapshot s = json_internal::FieldReader::Read<Snapshot>(root, "", &problems);
  json_internal::CheckUniqueIds(s, &problems);
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
  AppendMissing(catalog.gpu_models, [](const GpuModel& g) { return g.name; }, &snapshot->gpu_models);
  AppendMissing(catalog.instance_types, [](const InstanceType& t) { return t.name; }, &snapshot->instance_types);
  AppendMissing(catalog.Offerings(regions), [](const Offering& o) { return o.Key(); }, &snapshot->offerings);
  FillNodeOfferings(snapshot);
}

}  // namespace gpuscaler
