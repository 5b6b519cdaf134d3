// Reading configuration documents (policy files, instance catalogs, daemon
// configurations) written as YAML or JSON, with a place for every problem.
//
// The file name picks the parser (FormatOf): a name ending in ".json" is
// strict JSON (RFC 8259: keys quoted, no comments, no trailing commas,
// nothing after the value), read with nlohmann's SAX parser; any other name
// (.yaml, .yml, none, /dev/stdin, a label such as "policy with x=1") is YAML
// 1.2 read with yaml-cpp, which also takes JSON text, leniently. Both give
// the same DocNode tree with the 1-based line and column (in bytes) of
// every node, so every later problem names file:line:col either way; only a
// null differs, marked where JSON writes it and at its key or list in YAML
// (where an empty YAML value has no place of its own).
//
// Both parsers stop at the caps of config_limits.h (nodes, scalar bytes and
// nesting of the document with every YAML alias expanded) before building
// anything past them, so a small file cannot make a large document.
//
// A DocReader collects problems instead of stopping at the first, as
// "file:line:col: field.path: message", and MapReader reads one mapping:
// it reports unknown keys (with the closest known key as a suggestion),
// duplicate keys and wrong types, and remembers where each field was so that
// later cross-field checks can point at it.
//
// Scalars keep their text and whether they were quoted: a quoted "1.5" is a
// string, a plain 1.5 a number, as a JSON reader would see them. Values only;
// a DocReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/model/config_limits.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler {

struct SourceMark {
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based
};

struct ConfigProblem {
  std::string file;
  int line = 0;  // 1-based; 0 when the problem has no single place
  int column = 0;
  std::string field;  // "pools[0].max_nodes"; empty for syntax errors
  std::string message;
  // "file:line:col: field: message"; the place and the field are left out
  // when unknown.
  std::string ToString() const;
};

// All problems, one per line, in the order given.
std::string JoinProblems(const std::vector<ConfigProblem>& problems);

struct DocEntry;

// One node of a parsed document.
struct DocNode {
  enum class Kind { kNull, kScalar, kSequence, kMapping };
  Kind kind = Kind::kNull;
  SourceMark mark;
  std::string scalar;   // kScalar: the text as written, unquoted
  bool quoted = false;  // kScalar: quoted or block scalar (always a string)
  std::vector<DocNode> items;                         // kSequence
  // kMapping, file order, duplicates kept. Not std::pair<DocNode, DocNode>:
  // a pair of a type still incomplete here fails to compile with clang and
  // libstdc++ (the fuzz preset), a named struct does not.
  std::vector<DocEntry> entries;

  bool IsNull() const { return kind == Kind::kNull; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  bool IsSequence() const { return kind == Kind::kSequence; }
  bool IsMapping() const { return kind == Kind::kMapping; }
  // What a person calls it in "expected X, got Y": "a string", "a number",
  // "an integer", "a boolean", "null", "a list", "a mapping".
  std::string Describe() const;
};

struct DocEntry {
  DocNode key;
  DocNode value;
};

// Levenshtein-closest candidate to `word`, or "" when none is close enough to
// be a plausible typo.
std::string ClosestName(std::string_view word, const std::vector<std::string_view>& candidates);

enum class DocFormat { kYaml, kJson };

// kJson when `file_name` ends in ".json" (any case), else kYaml.
DocFormat FormatOf(std::string_view file_name);

// Collects the problems of one document and where its fields are.
class DocReader {
 public:
  explicit DocReader(std::string file_name, DocLimits limits = {})
      : file_(std::move(file_name)), limits_(limits) {}

  // Parses the text of the file into `*root`, as FormatOf(file()) says. A
  // syntax error, or a document past the limits (the problem names the
  // alias that crosses a cap, and the cap), is reported with its place and
  // returns false. An empty YAML document is a null root; an empty JSON text
  // is a syntax error.
  bool Parse(const std::string& text, DocNode* root);

  void Report(SourceMark at, std::string field, std::string message);
  void Report(const DocNode& at, std::string field, std::string message) {
    Report(at.mark, std::move(field), std::move(message));
  }
  // Reports at the remembered place of `field`, or of its closest remembered
  // ancestor ("pools[0].max_nodes" -> "pools[0]" -> "pools").
  void ReportAt(const std::string& field, std::string message);

  void Remember(const std::string& field, SourceMark mark) { marks_[field] = mark; }
  SourceMark MarkOf(const std::string& field) const;

  const std::string& file() const { return file_; }
  bool ok() const { return problems_.empty(); }
  // Sorted by place (line, column); problems without a place come last.
  std::vector<ConfigProblem> SortedProblems() const;

  // Typed scalar conversions. Each reports a type or format problem at the
  // node under `field` and returns false; `*out` is set only on success.
  bool ToString(const DocNode& n, const std::string& field, std::string* out);
  bool ToBool(const DocNode& n, const std::string& field, bool* out);
  bool ToInt(const DocNode& n, const std::string& field, int64_t* out);
  bool ToInt(const DocNode& n, const std::string& field, int* out);
  bool ToNumber(const DocNode& n, const std::string& field, double* out);
  // A duration string ("90s", "5m", "1h30m") or a plain integer of seconds.
  bool ToDuration(const DocNode& n, const std::string& field, Seconds* out);
  bool ToStringList(const DocNode& n, const std::string& field, std::vector<std::string>* out);
  bool ToStringMap(const DocNode& n, const std::string& field,
                   std::map<std::string, std::string>* out);

 private:
  std::string file_;
  DocLimits limits_;
  std::vector<ConfigProblem> problems_;
  std::map<std::string, SourceMark> marks_;
};

// Reads one mapping at `path` ("" for the root). The constructor reports a
// node that is not a mapping (null counts as an empty mapping), every key not
// in `known` (empty `known`: any key, for maps keyed by names) and every
// repeated key. The Read* methods leave `*out` untouched
// when the key is absent or invalid, so the struct default stays; they return
// true only when the key was present and valid.
class MapReader {
 public:
  MapReader(DocReader& reader, const DocNode& node, std::string path,
            std::vector<std::string_view> known);

  // First occurrence of `key`, or nullptr.
  const DocNode* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }
  // "path.key" (or "key" at the root).
  std::string PathOf(std::string_view key) const;
  const std::string& path() const { return path_; }
  SourceMark mark() const { return node_.mark; }
  // Reports "required field is missing" for each absent key; false if any.
  bool Require(std::initializer_list<std::string_view> keys);

  bool ReadString(std::string_view key, std::string* out);
  bool ReadBool(std::string_view key, bool* out);
  bool ReadInt(std::string_view key, int* out);
  bool ReadInt(std::string_view key, int64_t* out);
  bool ReadNumber(std::string_view key, double* out);
  bool ReadDuration(std::string_view key, Seconds* out);
  bool ReadStringList(std::string_view key, std::vector<std::string>* out);
  bool ReadStringMap(std::string_view key, std::map<std::string, std::string>* out);
  // Calls `read(item, "path.key[i]")` for each item of the list at `key`.
  // Absent or null: no calls. Not a list: reported, no calls.
  template <typename Fn>
  void ForEachItem(std::string_view key, Fn read);

  // Keys and values in file order, duplicates and unknown keys left out.
  const std::vector<std::pair<const DocNode*, const DocNode*>>& entries() const { return entries_; }

 private:
  const DocNode* Lookup(std::string_view key);  // Find + remember its place

  DocReader& reader_;
  const DocNode& node_;
  std::string path_;
  std::vector<std::pair<const DocNode*, const DocNode*>> entries_;
};

// "path[i]".
std::string IndexPath(const std::string& path, size_t index);

template <typename Fn>
void MapReader::ForEachItem(std::string_view key, Fn read) {
  const DocNode* list = Find(key);
  if (list == nullptr || list->IsNull()) return;
  const std::string path = PathOf(key);
  reader_.Remember(path, list->mark);
  if (!list->IsSequence()) {
    reader_.Report(*list, path, "expected a list, got " + list->Describe());
    return;
  }
  for (size_t i = 0; i < list->items.size(); ++i) read(list->items[i], IndexPath(path, i));
}

}  // namespace gpuscaler
