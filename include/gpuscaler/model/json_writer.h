// JsonWriter: compact JSON written straight into a string, without building
// a document first. Plans and snapshots are written with it (model/json.h):
// the audit row of every decision carries the whole plan (every placement and
// unit id), too large to build as an nlohmann::ordered_json and dump again on
// each tick. Other JSON uses nlohmann::json.
//
// Output matches nlohmann's dump(): the same escapes, doubles in shortest
// round-trip form with ".0" on integral values, non-finite doubles as null.
// Invalid UTF-8 becomes U+FFFD instead of an exception (nlohmann's default
// throws, which in the control loop would lose the decision).
//
//   JsonWriter w;
//   w.BeginObject().Key("count").Int(3).Key("ids").BeginArray().String("a").EndArray().EndObject();
//   std::string text = std::move(w).Take();   // {"count":3,"ids":["a"]}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuscaler {

class JsonWriter {
 public:
  JsonWriter() = default;
  // Writes into `buffer` (cleared; its capacity is reused): for callers that
  // write large documents every tick and hand the buffer back each time.
  explicit JsonWriter(std::string buffer) : out_(std::move(buffer)) { out_.clear(); }

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // Inside an object, every value is preceded by its Key.
  JsonWriter& Key(std::string_view key);
  // A key that needs no escaping (printable ASCII other than '"' and '\\'),
  // such as a schema's field name, copied as is.
  JsonWriter& PlainKey(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Double(double value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  JsonWriter& StringArray(const std::vector<std::string>& values);

  // The text written so far (complete once every Begin has its End).
  std::string Take() && { return std::move(out_); }
  const std::string& text() const { return out_; }

 private:
  void BeforeValue();
  void Open(char bracket);
  void Close(char bracket);
  void Escaped(std::string_view s);

  std::string out_;
  std::vector<bool> has_items_;  // per open container: a comma before the next item
  bool after_key_ = false;
};

}  // namespace gpuscaler
