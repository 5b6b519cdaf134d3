#include "json_reader.h"

#include <limits>
#include <utility>

namespace gpuscaler::json_internal {
namespace {

bool IsInt64(const Json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return v.is_number_integer();
}

// Element readers: false when `v` is not of the kind.
bool AsString(const Json& v, std::string* out) {
  if (!v.is_string()) return false;
  *out = v.get<std::string>();
  return true;
}

bool AsInt(const Json& v, int64_t min, int* out) {
  if (!IsInt64(v)) return false;
  const int64_t x = v.get<int64_t>();
  if (x < min || x > std::numeric_limits<int>::max()) return false;
  *out = static_cast<int>(x);
  return true;
}

bool AsCount(const Json& v, int* out) { return AsInt(v, 0, out); }

// An array whose every element `as` reads.
template <typename T, typename As>
bool AsList(const Json& v, As as, std::vector<T>* out) {
  if (!v.is_array()) return false;
  std::vector<T> list;
  for (const auto& e : v) {
    T x{};
    if (!as(e, &x)) return false;
    list.push_back(std::move(x));
  }
  *out = std::move(list);
  return true;
}

// An object whose every value `as` reads.
template <typename T, typename As>
bool AsMap(const Json& v, As as, std::map<std::string, T>* out) {
  if (!v.is_object()) return false;
  std::map<std::string, T> m;
  for (const auto& [k, e] : v.items()) {
    if (!as(e, &m[k])) return false;
  }
  *out = std::move(m);
  return true;
}

}  // namespace

void Problems::Add(const std::string& path, const std::string& message) {
  std::string line = file_;
  line += ": ";
  line += path.empty() ? std::string("(root)") : path;
  line += ": ";
  line += message;
  lines_.push_back(std::move(line));
}

std::string Problems::Joined() const {
  std::string out;
  for (size_t i = 0; i < lines_.size(); ++i) {
    if (i > 0) out += '\n';
    out += lines_[i];
  }
  return out;
}

std::string FieldPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string ElementPath(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

ObjectReader::ObjectReader(const Json& j, std::string path, Problems* problems)
    : j_(j), path_(std::move(path)), problems_(problems), ok_(j.is_object()) {
  if (!ok_) problems_->Add(path_, "expected an object");
}

template <typename Parse>
bool ObjectReader::Read(const char* key, Need need, const std::string& expected, Parse&& parse) {
  if (!ok_) return false;
  seen_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (need == Need::kRequired) problems_->Add(FieldPath(path_, key), "required field is missing");
    return false;
  }
  if (parse(*it)) return true;
  problems_->Add(FieldPath(path_, key), expected);
  return false;
}

bool ObjectReader::Str(const char* key, std::string& out, Need need) {
  return Read(key, need, "expected a string", [&](const Json& v) { return AsString(v, &out); });
}

void ObjectReader::Bool(const char* key, bool& out) {
  Read(key, Need::kOptional, "expected true or false", [&](const Json& v) {
    if (!v.is_boolean()) return false;
    out = v.get<bool>();
    return true;
  });
}

void ObjectReader::Int(const char* key, int& out, int min) {
  Read(key, Need::kOptional, "expected an integer >= " + std::to_string(min),
       [&](const Json& v) { return AsInt(v, min, &out); });
}

void ObjectReader::Int64(const char* key, int64_t& out, int64_t min) {
  Read(key, Need::kOptional, "expected an integer >= " + std::to_string(min), [&](const Json& v) {
    if (!IsInt64(v) || v.get<int64_t>() < min) return false;
    out = v.get<int64_t>();
    return true;
  });
}

void ObjectReader::Double(const char* key, double& out) {
  Read(key, Need::kOptional, "expected a number >= 0", [&](const Json& v) {
    if (!v.is_number() || v.get<double>() < 0) return false;
    out = v.get<double>();
    return true;
  });
}

void ObjectReader::DurationS(const char* key, Seconds& out) {
  Read(key, Need::kOptional, "expected an integer number of seconds >= 0", [&](const Json& v) {
    if (!IsInt64(v) || v.get<int64_t>() < 0) return false;
    out = Seconds(v.get<int64_t>());
    return true;
  });
}

void ObjectReader::Time(const char* key, WallTime& out) {
  Read(key, Need::kOptional, "expected an RFC 3339 time such as \"2026-07-20T12:00:00Z\"",
       [&](const Json& v) { return v.is_string() && ParseRfc3339(v.get<std::string>(), &out); });
}

void ObjectReader::Time(const char* key, std::optional<WallTime>& out) {
  WallTime t{};
  if (Read(key, Need::kOptional, "expected an RFC 3339 time such as \"2026-07-20T12:00:00Z\"",
           [&](const Json& v) { return v.is_string() && ParseRfc3339(v.get<std::string>(), &t); })) {
    out = t;
  }
}

void ObjectReader::StrList(const char* key, std::vector<std::string>& out) {
  Read(key, Need::kOptional, "expected an array of strings", [&](const Json& v) { return AsList(v, AsString, &out); });
}

void ObjectReader::IntList(const char* key, std::vector<int>& out) {
  Read(key, Need::kOptional, "expected an array of integers >= 0", [&](const Json& v) { return AsList(v, AsCount, &out); });
}

void ObjectReader::StrMap(const char* key, std::map<std::string, std::string>& out) {
  Read(key, Need::kOptional, "expected an object of strings", [&](const Json& v) { return AsMap(v, AsString, &out); });
}

void ObjectReader::IntMap(const char* key, std::map<std::string, int>& out) {
  Read(key, Need::kOptional, "expected an object of integers >= 0", [&](const Json& v) { return AsMap(v, AsCount, &out); });
}

void ObjectReader::Array(const char* key, const std::function<void(const Json&, const std::string&)>& each) {
  Read(key, Need::kOptional, "expected an array", [&](const Json& v) {
    if (!v.is_array()) return false;
    for (size_t i = 0; i < v.size(); ++i) each(v[i], ElementPath(FieldPath(path_, key), i));
    return true;
  });
}

void ObjectReader::Object(const char* key, Need need,
                          const std::function<void(const Json&, const std::string&)>& read) {
  Read(key, need, "expected an object", [&](const Json& v) {
    if (!v.is_object()) return false;
    read(v, FieldPath(path_, key));
    return true;
  });
}

void ObjectReader::Problem(const char* key, const std::string& message) {
  problems_->Add(FieldPath(path_, key), message);
}

void ObjectReader::Done() {
  if (!ok_) return;
  for (const auto& [k, v] : j_.items()) {
    if (seen_.count(k) == 0) problems_->Add(FieldPath(path_, k), "unknown field");
  }
}

}  // namespace gpuscaler::json_internal
