#include "gpuscaler/model/yaml_document.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <exception>
#include <system_error>

#include "doc_parse_impl.h"
#include "gpuscaler/model/text.h"

namespace gpuscaler {

std::string ConfigProblem::ToString() const {
  std::string out = file;
  if (line > 0) {
    // Appended piece by piece: GCC 12 reports a false -Wrestrict on
    // ":" + std::to_string(...) here.
    out += ':';
    out += std::to_string(line);
    out += ':';
    out += std::to_string(column);
  }
  out += ": ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

std::string JoinProblems(const std::vector<ConfigProblem>& problems) {
  std::string out;
  for (const ConfigProblem& p : problems) {
    if (!out.empty()) out += "\n";
    out += p.ToString();
  }
  return out;
}

namespace {

bool IsPlainBool(const std::string& s, bool* value) {
  if (s == "true" || s == "True" || s == "TRUE") {
    *value = true;
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    *value = false;
    return true;
  }
  return false;
}

bool ParseInt64(const std::string& s, int64_t* out) {
  std::string_view v = s;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  if (v.empty()) return false;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && ptr == v.data() + v.size();
}

bool ParseDouble(const std::string& s, double* out) {
  std::string_view v = s;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  if (v.empty()) return false;
  // from_chars also takes "inf" and "nan"; neither is a number in a config file.
  for (char c : v) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == 'e' ||
          c == 'E' || c == '+')) {
      return false;
    }
  }
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  return ec == std::errc() && ptr == v.data() + v.size();
}

// What "expected X, got Y" says a node is; for an integer field a number is
// shown too: "got a number (2.5)".
std::string Described(const DocNode& n) { return n.Describe(); }
std::string DescribedWithNumber(const DocNode& n) {
  std::string got = n.Describe();
  if (got == "a number") got += " (" + n.scalar + ")";
  return got;
}

// The typed conversion of an unquoted scalar: stores parse's value, or
// reports "expected <what>, got <describe(n)>".
template <typename T, typename Parse>
bool ConvertPlain(DocReader& reader, const DocNode& n, const std::string& field, const char* what,
                  Parse&& parse, T* out, std::string (*describe)(const DocNode&) = Described) {
  T v;
  if (!n.IsScalar() || n.quoted || !parse(n.scalar, &v)) {
    reader.Report(n, field, std::string("expected ") + what + ", got " + describe(n));
    return false;
  }
  *out = v;
  return true;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t subst = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, subst});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string DocNode::Describe() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kSequence:
      return "a list";
    case Kind::kMapping:
      return "a mapping";
    case Kind::kScalar:
      break;
  }
  if (quoted) return "a string";
  bool b;
  if (IsPlainBool(scalar, &b)) return "a boolean";
  double d;
  if (ParseDouble(scalar, &d)) return "a number";
  return "a string";
}

std::string ClosestName(std::string_view word, const std::vector<std::string_view>& candidates) {
  // A third of the length catches transpositions and dropped letters in long
  // names without offering unrelated short ones.
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string_view best;
  size_t best_distance = limit + 1;
  for (std::string_view c : candidates) {
    // The distance is at least the difference in length: a candidate that
    // cannot beat the best so far is not worth the quadratic comparison
    // (a mistyped key is short; a pasted paragraph would cost |word| x |c|
    // per candidate for no suggestion).
    const size_t length_gap = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (length_gap >= best_distance) continue;
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best_distance <= limit ? std::string(best) : "";
}

DocFormat FormatOf(std::string_view file_name) {
  constexpr std::string_view kJson = ".json";
  return file_name.size() >= kJson.size() && EqualsIgnoreCase(file_name.substr(file_name.size() - kJson.size()), kJson)
             ? DocFormat::kJson
             : DocFormat::kYaml;
}

bool DocReader::Parse(const std::string& text, DocNode* root) {
  std::optional<doc_parse::Failure> failed = FormatOf(file_) == DocFormat::kJson
                                                 ? doc_parse::ParseJson(text, limits_, root)
                                                 : doc_parse::ParseYaml(text, limits_, root);
  if (!failed) return true;
  Report(failed->at, std::move(failed->field), std::move(failed->message));
  return false;
}

void DocReader::Report(SourceMark at, std::string field, std::string message) {
  problems_.push_back({file_, at.line, at.column, std::move(field), std::move(message)});
}

SourceMark DocReader::MarkOf(const std::string& field) const {
  std::string f = field;
  while (true) {
    auto it = marks_.find(f);
    if (it != marks_.end()) return it->second;
    const size_t cut = f.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) break;
    f.resize(cut);
  }
  auto root = marks_.find("");
  return root == marks_.end() ? SourceMark{} : root->second;
}

void DocReader::ReportAt(const std::string& field, std::string message) {
  Report(MarkOf(field), field, std::move(message));
}

std::vector<ConfigProblem> DocReader::SortedProblems() const {
  std::vector<ConfigProblem> out = problems_;
  std::stable_sort(out.begin(), out.end(), [](const ConfigProblem& a, const ConfigProblem& b) {
    const int la = a.line == 0 ? INT32_MAX : a.line, lb = b.line == 0 ? INT32_MAX : b.line;
    if (la != lb) return la < lb;
    return a.column < b.column;
  });
  return out;
}

bool DocReader::ToString(const DocNode& n, const std::string& field, std::string* out) {
  if (!n.IsScalar() || (!n.quoted && n.Describe() != "a string")) {
    Report(n, field, "expected a string, got " + n.Describe());
    return false;
  }
  *out = n.scalar;
  return true;
}

bool DocReader::ToBool(const DocNode& n, const std::string& field, bool* out) {
  return ConvertPlain(*this, n, field, "a boolean (true or false)", IsPlainBool, out);
}

bool DocReader::ToInt(const DocNode& n, const std::string& field, int64_t* out) {
  return ConvertPlain(*this, n, field, "an integer", ParseInt64, out, DescribedWithNumber);
}

bool DocReader::ToInt(const DocNode& n, const std::string& field, int* out) {
  int64_t v;
  if (!ToInt(n, field, &v)) return false;
  if (v < INT32_MIN || v > INT32_MAX) {
    Report(n, field, "integer " + n.scalar + " is out of range");
    return false;
  }
  *out = static_cast<int>(v);
  return true;
}

bool DocReader::ToNumber(const DocNode& n, const std::string& field, double* out) {
  return ConvertPlain(*this, n, field, "a number", ParseDouble, out);
}

bool DocReader::ToDuration(const DocNode& n, const std::string& field, Seconds* out) {
  Seconds v;
  if (!n.IsScalar() || (!n.quoted && n.Describe() == "a boolean")) {
    Report(n, field, "expected a duration (e.g. 90s, 5m, 1h30m), got " + n.Describe());
    return false;
  }
  if (!ParseDuration(n.scalar, &v)) {
    Report(n, field, "invalid duration '" + n.scalar + "' (use e.g. 90s, 5m, 1h30m)");
    return false;
  }
  *out = v;
  return true;
}

bool DocReader::ToStringList(const DocNode& n, const std::string& field,
                             std::vector<std::string>* out) {
  if (n.IsNull()) {
    out->clear();
    return true;
  }
  if (!n.IsSequence()) {
    Report(n, field, "expected a list of strings, got " + n.Describe());
    return false;
  }
  std::vector<std::string> values;
  bool ok = true;
  for (size_t i = 0; i < n.items.size(); ++i) {
    std::string s;
    Remember(IndexPath(field, i), n.items[i].mark);
    if (ToString(n.items[i], IndexPath(field, i), &s)) {
      values.push_back(std::move(s));
    } else {
      ok = false;
    }
  }
  if (ok) *out = std::move(values);
  return ok;
}

bool DocReader::ToStringMap(const DocNode& n, const std::string& field,
                            std::map<std::string, std::string>* out) {
  MapReader map(*this, n, field, {});
  if (!n.IsNull() && !n.IsMapping()) return false;
  std::map<std::string, std::string> values;
  bool ok = true;
  for (const auto& [key, value] : map.entries()) {
    std::string s;
    Remember(map.PathOf(key->scalar), value->mark);
    if (ToString(*value, map.PathOf(key->scalar), &s)) {
      values[key->scalar] = std::move(s);
    } else {
      ok = false;
    }
  }
  if (ok) *out = std::move(values);
  return ok;
}

std::string IndexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

MapReader::MapReader(DocReader& reader, const DocNode& node, std::string path,
                     std::vector<std::string_view> known)
    : reader_(reader), node_(node), path_(std::move(path)) {
  reader_.Remember(path_, node.mark);
  if (node.IsNull()) return;
  if (!node.IsMapping()) {
    reader_.Report(node, path_, "expected a mapping, got " + node.Describe());
    return;
  }
  std::map<std::string, int, std::less<>> first_line;
  for (const auto& [key, value] : node.entries) {
    if (!key.IsScalar()) {
      reader_.Report(key, path_, "a key must be a string, got " + key.Describe());
      continue;
    }
    const std::string field = PathOf(key.scalar);
    if (!known.empty() &&
        std::find(known.begin(), known.end(), std::string_view(key.scalar)) == known.end()) {
      std::string message = "unknown field '" + key.scalar + "'";
      const std::string suggestion = ClosestName(key.scalar, known);
      if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
      reader_.Report(key, field, message);
      continue;
    }
    auto [it, inserted] = first_line.emplace(key.scalar, key.mark.line);
    if (!inserted) {
      reader_.Report(key, field,
                     "duplicate key '" + key.scalar + "' (first at line " +
                         std::to_string(it->second) + ")");
      continue;
    }
    entries_.emplace_back(&key, &value);
  }
}

const DocNode* MapReader::Find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k->scalar == key) return v;
  }
  return nullptr;
}

std::string MapReader::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const DocNode* MapReader::Lookup(std::string_view key) {
  const DocNode* v = Find(key);
  if (v != nullptr) reader_.Remember(PathOf(key), v->mark);
  return v;
}

bool MapReader::Require(std::initializer_list<std::string_view> keys) {
  bool ok = true;
  for (std::string_view key : keys) {
    if (Find(key) == nullptr) {
      // A null or non-mapping node already has its own problem.
      if (node_.IsMapping()) reader_.Report(node_, PathOf(key), "required field is missing");
      ok = false;
    }
  }
  return ok;
}

namespace {

// A MapReader::Read*: converts the value of a key that is present.
template <typename T>
bool ReadPresent(DocReader& reader, const MapReader& map, const DocNode* value, std::string_view key,
                 bool (DocReader::*convert)(const DocNode&, const std::string&, T*), T* out) {
  return value != nullptr && (reader.*convert)(*value, map.PathOf(key), out);
}

}  // namespace

bool MapReader::ReadString(std::string_view key, std::string* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToString, out);
}
bool MapReader::ReadBool(std::string_view key, bool* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToBool, out);
}
bool MapReader::ReadInt(std::string_view key, int* out) {
  return ReadPresent<int>(reader_, *this, Lookup(key), key, &DocReader::ToInt, out);
}
bool MapReader::ReadInt(std::string_view key, int64_t* out) {
  return ReadPresent<int64_t>(reader_, *this, Lookup(key), key, &DocReader::ToInt, out);
}
bool MapReader::ReadNumber(std::string_view key, double* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToNumber, out);
}
bool MapReader::ReadDuration(std::string_view key, Seconds* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToDuration, out);
}
bool MapReader::ReadStringList(std::string_view key, std::vector<std::string>* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToStringList, out);
}
bool MapReader::ReadStringMap(std::string_view key, std::map<std::string, std::string>* out) {
  return ReadPresent(reader_, *this, Lookup(key), key, &DocReader::ToStringMap, out);
}

}  // namespace gpuscaler
