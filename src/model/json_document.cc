// Strict JSON to DocNode with a line and column on every node.
//
// nlohmann's SAX callbacks carry values, not places, so the parser reads the
// text through an iterator that records how far it has got. Between two
// callbacks the text holds only white space, ',' and ':' (brackets have
// callbacks of their own), so a value starts at the first other byte after
// the previous callback's end. The lexer reads one byte past a number before
// giving it back; that byte is a separator or a closing bracket, so skipping
// it loses no start.
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "doc_parse_impl.h"

namespace gpuscaler {
namespace {

using doc_parse::Failure;

// An input iterator over the text that records the end of what was read.
class TrackedInput {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackedInput(const char* at, const char** read_end) : at_(at), read_end_(read_end) {}
  reference operator*() const { return *at_; }
  TrackedInput& operator++() {
    *read_end_ = ++at_;
    return *this;
  }
  TrackedInput operator++(int) {
    TrackedInput before = *this;
    ++*this;
    return before;
  }
  bool operator==(const TrackedInput& other) const { return at_ == other.at_; }
  bool operator!=(const TrackedInput& other) const { return at_ != other.at_; }

 private:
  const char* at_;
  const char** read_end_;
};

// Byte offsets to 1-based lines and columns, the column counted in bytes as
// yaml-cpp counts it, so that a JSON file and the same text read as YAML
// have the same places. Offsets are asked in increasing order, so the text
// is walked once.
class LineCounter {
 public:
  explicit LineCounter(std::string_view text) : text_(text) {}
  SourceMark At(size_t offset) {
    if (offset < offset_) *this = LineCounter(text_);
    for (; offset_ < offset && offset_ < text_.size(); ++offset_) {
      if (text_[offset_] == '\n') {
        ++mark_.line;
        mark_.column = 1;
      } else {
        ++mark_.column;
      }
    }
    return mark_;
  }

 private:
  std::string_view text_;
  size_t offset_ = 0;
  SourceMark mark_{1, 1};
};

// Builds the DocNode tree from nlohmann's SAX events, within DocLimits.
class JsonDocBuilder {
 public:
  using Json = nlohmann::json;

  JsonDocBuilder(std::string_view text, const char* const* read_end, const DocLimits& limits, DocNode* root)
      : text_(text), read_end_(read_end), limits_(limits), lines_(text), root_(root) {}

  bool null() { return Place(DocNode::Kind::kNull, nullptr, false) != nullptr; }
  bool boolean(bool value) { return Scalar(value ? "true" : "false", false); }
  bool number_integer(Json::number_integer_t) { return Number(); }
  bool number_unsigned(Json::number_unsigned_t) { return Number(); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return Number(); }
  bool string(Json::string_t& value) { return Scalar(value, true); }
  bool binary(Json::binary_t&) { return false; }  // only from binary formats, never from JSON text
  bool start_object(std::size_t) { return Open(DocNode::Kind::kMapping); }
  bool start_array(std::size_t) { return Open(DocNode::Kind::kSequence); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(Json::string_t& value) {
    const size_t start = ValueStart();
    if (!Count(1, value.size(), start, /*at_key=*/true)) return false;
    DocEntry& entry = open_.back()->entries.emplace_back();
    entry.key.kind = DocNode::Kind::kScalar;
    entry.key.mark = lines_.At(start);
    entry.key.scalar = value;
    entry.key.quoted = true;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    // `position` counts the bytes read, the offending one last.
    const size_t offset = position > 0 ? position - 1 : 0;
    std::string message = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 6: syntax
    // error ...": the place is ours, the rest nlohmann's.
    if (const size_t colon = message.find(": "); colon != std::string::npos)
      message = message.substr(colon + 2);
    failure_ = Failure{lines_.At(offset), "", "invalid JSON: " + message + Hint(offset)};
    return false;
  }

  std::optional<Failure> failure() const { return failure_; }

 private:
  // The next byte at or after the previous callback's end that is neither
  // white space nor a separator: where the value of this callback starts.
  size_t ValueStart() {
    size_t at = scan_from_;
    while (at < text_.size() && (text_[at] == ' ' || text_[at] == '\t' || text_[at] == '\n' ||
                                 text_[at] == '\r' || text_[at] == ',' || text_[at] == ':')) {
      ++at;
    }
    scan_from_ = static_cast<size_t>(*read_end_ - text_.data());
    return at;
  }

  // The field path of the key (`at_key`) or value about to be read.
  std::string Path(bool at_key) const {
    std::string path;
    for (size_t i = 0; i < open_.size(); ++i) {
      const DocNode& node = *open_[i];
      const bool innermost = i + 1 == open_.size();
      if (node.IsSequence()) {
        path = IndexPath(path, innermost ? node.items.size() : node.items.size() - 1);
      } else if (!(innermost && at_key) && !node.entries.empty()) {
        path = doc_parse::FieldPath(path, node.entries.back().key.scalar);
      }
    }
    return path;
  }

  bool Count(uint64_t nodes, uint64_t scalar_bytes, size_t start, bool at_key) {
    nodes_ += nodes;
    scalar_bytes_ += scalar_bytes;
    if (nodes_ > limits_.max_nodes) {
      failure_ = Failure{lines_.At(start), Path(at_key), doc_parse::TooManyNodes(limits_)};
    } else if (scalar_bytes_ > limits_.max_scalar_bytes) {
      failure_ = Failure{lines_.At(start), Path(at_key), doc_parse::TooManyScalarBytes(limits_)};
    }
    return !failure_;
  }

  // A new node in the open list or mapping (or the root), or nullptr past a cap.
  DocNode* Place(DocNode::Kind kind, const std::string* scalar, bool quoted) {
    const size_t start = ValueStart();
    if (!Count(1, scalar ? scalar->size() : 0, start, /*at_key=*/false)) return nullptr;
    DocNode* slot = root_;
    if (!open_.empty()) {
      slot = open_.back()->IsSequence() ? &open_.back()->items.emplace_back()
                                        : &open_.back()->entries.back().value;
    }
    slot->kind = kind;
    slot->mark = lines_.At(start);
    if (scalar) slot->scalar = *scalar;
    slot->quoted = quoted;
    return slot;
  }

  bool Scalar(const std::string& text, bool quoted) {
    return Place(DocNode::Kind::kScalar, &text, quoted) != nullptr;
  }

  // The number as written: nlohmann gives an integer's value only.
  bool Number() {
    size_t start = scan_from_;
    while (start < text_.size() && text_[start] != '-' && (text_[start] < '0' || text_[start] > '9')) ++start;
    size_t end = start;
    while (end < text_.size() &&
           std::string_view("+-.eE0123456789").find(text_[end]) != std::string_view::npos)
      ++end;
    return Scalar(std::string(text_.substr(start, end - start)), false);
  }

  bool Open(DocNode::Kind kind) {
    if (open_.size() >= static_cast<size_t>(limits_.max_depth)) {
      failure_ = Failure{lines_.At(ValueStart()), Path(false), doc_parse::TooDeep(limits_)};
      return false;
    }
    DocNode* node = Place(kind, nullptr, false);
    if (node == nullptr) return false;
    open_.push_back(node);
    return true;
  }

  bool Close() {
    open_.pop_back();
    scan_from_ = static_cast<size_t>(*read_end_ - text_.data());
    return true;
  }

  // What nlohmann's message leaves to guess.
  std::string Hint(size_t offset) const {
    if (offset >= text_.size()) return "";
    const char c = text_[offset];
    if (c == '/' || c == '#') return " (JSON has no comments)";
    if (c == ']' || c == '}') {
      size_t before = offset;
      while (before > 0 && std::string_view(" \t\r\n").find(text_[before - 1]) != std::string_view::npos)
        --before;
      if (before > 0 && text_[before - 1] == ',') return " (a trailing comma: JSON allows none)";
    }
    return "";
  }

  std::string_view text_;
  const char* const* read_end_;
  const DocLimits& limits_;
  LineCounter lines_;
  DocNode* root_;
  std::vector<DocNode*> open_;  // the lists and mappings being filled, innermost last
  size_t scan_from_ = 0;
  uint64_t nodes_ = 0;
  uint64_t scalar_bytes_ = 0;
  std::optional<Failure> failure_;
};

}  // namespace

namespace doc_parse {

std::optional<Failure> ParseJson(const std::string& text, const DocLimits& limits, DocNode* root) {
  *root = DocNode();
  const char* read_end = text.data();
  JsonDocBuilder builder(text, &read_end, limits, root);
  const TrackedInput first(text.data(), &read_end), last(text.data() + text.size(), &read_end);
  try {
    // strict: nothing but white space after the value; comments are errors.
    if (nlohmann::json::sax_parse(first, last, &builder, nlohmann::json::input_format_t::json,
                                  /*strict=*/true,
                                  /*ignore_comments=*/false)) {
      return std::nullopt;
    }
  } catch (const std::exception& e) {  // the SAX parser reports through parse_error; this is a backstop
    return Failure{SourceMark{}, "", std::string("cannot parse: ") + e.what()};
  }
  std::optional<Failure> failed = builder.failure();
  if (!failed) failed = Failure{SourceMark{}, "", "cannot parse"};
  return failed;
}

}  // namespace doc_parse
}  // namespace gpuscaler
