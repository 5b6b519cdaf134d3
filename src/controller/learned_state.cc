#include "gpuscaler/controller/learned_state.h"

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace gpuscaler {
namespace {

constexpr int kLearnedStateVersion = 1;

int64_t UnixSeconds(WallTime t) { return t.time_since_epoch().count(); }

// nlohmann's typed reads, with the field's path in the message.
struct BadField {
  std::string message;
};

class Fields {
 public:
  static const nlohmann::json& Object(const nlohmann::json& j, const std::string& path) {
    if (!j.is_object()) throw BadField{path + ": not an object"};
    return j;
  }
  static const nlohmann::json& Member(const nlohmann::json& j, const std::string& key, const std::string& path) {
    auto it = Object(j, path).find(key);
    if (it == j.end()) throw BadField{path + "." + key + ": missing"};
    return *it;
  }
  static double Number(const nlohmann::json& j, const std::string& key, const std::string& path) {
    const nlohmann::json& v = Member(j, key, path);
    if (!v.is_number()) throw BadField{path + "." + key + ": not a number"};
    return v.get<double>();
  }
  static int64_t Integer(const nlohmann::json& j, const std::string& key, const std::string& path) {
    const nlohmann::json& v = Member(j, key, path);
    if (!v.is_number_integer()) throw BadField{path + "." + key + ": not an integer"};
    return v.get<int64_t>();
  }
  static WallTime Time(const nlohmann::json& j, const std::string& key, const std::string& path) {
    return WallTime(Seconds(Integer(j, key, path)));
  }
};

}  // namespace

std::string LearnedStateCodec::Save(const FleetLearners& learners, const OfferingAvailability& availability,
                                    bool accounts) {
  nlohmann::ordered_json doc;
  doc["version"] = kLearnedStateVersion;
  nlohmann::ordered_json warm = nlohmann::ordered_json::object();
  for (const auto& [family, seconds] : learners.warm_up.learned_s_) warm[family] = seconds;
  doc["warm_up_s"] = std::move(warm);
  nlohmann::ordered_json errors = nlohmann::ordered_json::object();
  for (const auto& [key, mark] : availability.marks_)
    errors[key] = {{"streak", mark.streak}, {"until", UnixSeconds(mark.until)}};
  doc["capacity_errors"] = std::move(errors);
  nlohmann::ordered_json reclaims = nlohmann::ordered_json::object();
  for (const auto& [key, r] : availability.reclaims_) {
    nlohmann::ordered_json notices = nlohmann::ordered_json::array();
    for (WallTime t : r.notices) notices.push_back(UnixSeconds(t));
    reclaims[key] = {{"notices", std::move(notices)}, {"pool_nodes", r.pool_nodes}, {"waves", r.waves},
                     {"wave_at", UnixSeconds(r.wave_at)}, {"until", UnixSeconds(r.until)}};
  }
  doc["reclaims"] = std::move(reclaims);
  nlohmann::ordered_json paused = nlohmann::ordered_json::object();
  for (const auto& [cls, until] : learners.disruption.spot_paused_until_) paused[cls] = UnixSeconds(until);
  doc["spot_paused_until"] = std::move(paused);
  if (!accounts) return doc.dump();
  if (learners.lost_work.as_of_) {
    nlohmann::ordered_json classes = nlohmann::ordered_json::object();
    for (const auto& [cls, sums] : learners.lost_work.by_class_)
      classes[cls] = {{"lost_gpu_hours", sums.lost_gpu_hours}, {"gpu_hours", sums.gpu_hours}};
    doc["lost_work"] = {{"as_of", UnixSeconds(*learners.lost_work.as_of_)}, {"classes", std::move(classes)}};
  }
  if (learners.spot_floor.as_of_) {
    nlohmann::ordered_json classes = nlohmann::ordered_json::object();
    for (const auto& [cls, sums] : learners.spot_floor.by_class_) {
      classes[cls] = {{"on_demand_gpu_hours", sums.on_demand_gpu_hours},
                      {"gpu_hours", sums.gpu_hours},
                      {"weight_hours", sums.weight_hours}};
    }
    doc["spot_floor"] = {{"as_of", UnixSeconds(*learners.spot_floor.as_of_)}, {"classes", std::move(classes)}};
  }
  return doc.dump();
}

Status LearnedStateCodec::Restore(const std::string& document, FleetLearners& learners,
                                  OfferingAvailability& availability) {
  const nlohmann::json doc = nlohmann::json::parse(document, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error::InvalidInput("learned state: not JSON");
  FleetLearners l = learners;
  OfferingAvailability a = availability;
  const Fields f;
  try {
    f.Object(doc, "learned state");
    if (f.Integer(doc, "version", "learned state") != kLearnedStateVersion) {
      return Error::InvalidInput("learned state: version " + doc["version"].dump() + " (this build reads " +
                                 std::to_string(kLearnedStateVersion) + ")");
    }
    l.warm_up.learned_s_.clear();
    for (const auto& [family, seconds] : f.Object(f.Member(doc, "warm_up_s", "learned state"), "warm_up_s").items()) {
      if (!seconds.is_number() || seconds.get<double>() < 0) throw BadField{"warm_up_s." + family + ": not a number >= 0"};
      l.warm_up.learned_s_[family] = seconds.get<double>();
    }
    a.marks_.clear();
    for (const auto& [key, mark] : f.Object(f.Member(doc, "capacity_errors", "learned state"), "capacity_errors").items()) {
      const std::string path = "capacity_errors." + key;
      a.marks_[key] = {static_cast<int>(f.Integer(mark, "streak", path)), f.Time(mark, "until", path)};
    }
    a.reclaims_.clear();
    for (const auto& [key, r] : f.Object(f.Member(doc, "reclaims", "learned state"), "reclaims").items()) {
      const std::string path = "reclaims." + key;
      OfferingAvailability::Reclaim reclaim;
      const nlohmann::json& notices = f.Member(r, "notices", path);
      if (!notices.is_array()) throw BadField{path + ".notices: not an array"};
      for (const nlohmann::json& t : notices) {
        if (!t.is_number_integer()) throw BadField{path + ".notices: not a list of times"};
        reclaim.notices.push_back(WallTime(Seconds(t.get<int64_t>())));
      }
      reclaim.pool_nodes = static_cast<int>(f.Integer(r, "pool_nodes", path));
      reclaim.waves = static_cast<int>(f.Integer(r, "waves", path));
      reclaim.wave_at = f.Time(r, "wave_at", path);
      reclaim.until = f.Time(r, "until", path);
      a.reclaims_[key] = std::move(reclaim);
    }
    l.disruption.spot_paused_until_.clear();
    const nlohmann::json& paused = f.Object(f.Member(doc, "spot_paused_until", "learned state"), "spot_paused_until");
    for (const auto& [cls, until] : paused.items()) {
      if (!until.is_number_integer()) throw BadField{"spot_paused_until." + cls + ": not a time"};
      l.disruption.spot_paused_until_[cls] = WallTime(Seconds(until.get<int64_t>()));
    }
    if (doc.contains("lost_work")) {
      const nlohmann::json& lost = doc["lost_work"];
      l.lost_work.by_class_.clear();
      l.lost_work.as_of_ = f.Time(lost, "as_of", "lost_work");
      l.lost_work.resumed_ = true;
      for (const auto& [cls, sums] : f.Object(f.Member(lost, "classes", "lost_work"), "lost_work.classes").items()) {
        const std::string path = "lost_work.classes." + cls;
        l.lost_work.by_class_[cls] = {f.Number(sums, "lost_gpu_hours", path), f.Number(sums, "gpu_hours", path)};
      }
    }
    if (doc.contains("spot_floor")) {
      const nlohmann::json& floor = doc["spot_floor"];
      l.spot_floor.by_class_.clear();
      l.spot_floor.as_of_ = f.Time(floor, "as_of", "spot_floor");
      l.spot_floor.resumed_ = true;
      for (const auto& [cls, sums] :
           f.Object(f.Member(floor, "classes", "spot_floor"), "spot_floor.classes").items()) {
        const std::string path = "spot_floor.classes." + cls;
        l.spot_floor.by_class_[cls] = {f.Number(sums, "on_demand_gpu_hours", path), f.Number(sums, "gpu_hours", path),
                                       f.Number(sums, "weight_hours", path)};
      }
    }
  } catch (const BadField& bad) {
    return Error::InvalidInput("learned state: " + bad.message);
  }
  learners = std::move(l);
  availability = std::move(a);
  return Status::Ok();
}

}  // namespace gpuscaler
