// The strict JSON reader behind ParseSnapshotJson: it tracks the JSON path of
// every value and collects every problem instead of stopping at the first.
// Private to src/model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpuscaler/model/json.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::json_internal {

// Problems found while reading one file, each as "<file>: <path>: <message>"
// (the root's path prints as "(root)").
class Problems {
 public:
  explicit Problems(std::string file) : file_(std::move(file)) {}
  void Add(const std::string& path, const std::string& message);
  bool empty() const { return lines_.empty(); }
  // One problem per line, in the order they were found.
  std::string Joined() const;

 private:
  std::string file_;
  std::vector<std::string> lines_;
};

// "path.key" ("key" at the root) and "path[i]".
std::string FieldPath(const std::string& path, const std::string& key);
std::string ElementPath(const std::string& path, size_t i);

enum class Need { kOptional, kRequired };

// Reads the fields of one JSON object. Each getter leaves `out` untouched when
// the field is absent (the struct default stays) or wrong (a problem is
// recorded at the field's path). Done() reports the fields no getter asked
// for. Numbers must be integers where the getter says so, and >= its minimum.
class ObjectReader {
 public:
  // A non-object `j` is a problem at `path`; every getter then does nothing.
  ObjectReader(const Json& j, std::string path, Problems* problems);

  // True when the field is present and is a string.
  bool Str(const char* key, std::string& out, Need need = Need::kOptional);
  void Bool(const char* key, bool& out);
  void Int(const char* key, int& out, int min = 0);
  void Int64(const char* key, int64_t& out, int64_t min = 0);
  void Double(const char* key, double& out);  // a number >= 0
  void DurationS(const char* key, Seconds& out);  // integer seconds >= 0
  void Time(const char* key, WallTime& out);       // RFC 3339
  void Time(const char* key, std::optional<WallTime>& out);  // RFC 3339; absent: untouched
  void StrList(const char* key, std::vector<std::string>& out);
  void IntList(const char* key, std::vector<int>& out);  // integers >= 0
  void StrMap(const char* key, std::map<std::string, std::string>& out);
  void IntMap(const char* key, std::map<std::string, int>& out);  // integers >= 0
  // Calls `each(element, element_path)` for every element of an array field.
  void Array(const char* key, const std::function<void(const Json&, const std::string&)>& each);
  // Calls `read(value, field_path)` for an object-valued field.
  void Object(const char* key, Need need, const std::function<void(const Json&, const std::string&)>& read);

  // Records a problem at `key` (for checks beyond the type).
  void Problem(const char* key, const std::string& message);
  void Done();

 protected:
  Problems* problems() const { return problems_; }

 private:
  // Reads a present field with `parse`, which returns false for a value of
  // the wrong kind; records `expected` then. True when present and well-formed.
  template <typename Parse>
  bool Read(const char* key, Need need, const std::string& expected, Parse&& parse);

  const Json& j_;
  std::string path_;
  Problems* problems_;
  bool ok_;
  std::set<std::string> seen_;
};

}  // namespace gpuscaler::json_internal
