#include "gpuscaler/model/bounded_yaml.h"

#include <yaml-cpp/eventhandler.h>

#include <exception>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "doc_parse_impl.h"

namespace gpuscaler {
namespace doc_parse {

std::string TooManyNodes(const DocLimits& limits) {
  return "the document has more than " + std::to_string(limits.max_nodes) +
         " nodes, the cap for a configuration document";
}

std::string TooManyScalarBytes(const DocLimits& limits) {
  return "the document has more than " + std::to_string(limits.max_scalar_bytes) +
         " bytes of scalar text, the cap for a configuration document";
}

std::string TooDeep(const DocLimits& limits) {
  return "lists and mappings are nested more than " + std::to_string(limits.max_depth) +
         " deep, the cap for a configuration document";
}

std::string FieldPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

}  // namespace doc_parse

namespace {

using doc_parse::Failure;

SourceMark FromYaml(const YAML::Mark& m) {
  if (m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

// Thrown by ExpansionCounter through yaml-cpp's parser (which has no catch
// of its own) to stop at the first node past a cap; caught in LoadChecked.
struct ExpansionStop {
  YAML::Mark mark;
  std::string field;
  std::string message;
};

// Measures the document that yaml-cpp's events describe as if every alias
// were a copy of the node it names, without building anything: one running
// total, and for each anchor the total's growth over its node. Keeps the
// field path of the current place for the message.
class ExpansionCounter final : public YAML::EventHandler {
 public:
  explicit ExpansionCounter(const DocLimits& limits) : limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  // yaml-cpp announces an anchor's name just before the event of its node.
  void OnAnchor(const YAML::Mark&, const std::string& name) override { pending_name_ = name; }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    Leaf(mark, anchor, &value);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override;
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, true);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Size {
    uint64_t nodes = 0;
    uint64_t scalar_bytes = 0;
  };
  struct Anchor {
    std::string name;
    bool complete = false;  // false while its node is still being read
    Size size;
  };
  struct Collection {
    bool mapping = false;
    YAML::anchor_t anchor = 0;
    Size before;  // the running total before this node
    std::string path;
    size_t next_index = 0;  // list: the index of the next item
    bool at_key = true;     // mapping: the next node is a key
    std::string key;        // mapping: the text of the key whose value comes next
  };

  void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string* scalar) {
    const Size size{1, scalar ? scalar->size() : 0};
    Add(mark, size, nullptr);
    Name(anchor, true, size);
    Advance(scalar ? *scalar : std::string());
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool mapping) {
    if (open_.size() >= static_cast<size_t>(limits_.max_depth))
      throw ExpansionStop{mark, PathHere(), doc_parse::TooDeep(limits_)};
    Collection c;
    c.mapping = mapping;
    c.anchor = anchor;
    c.before = total_;
    c.path = PathHere();
    Add(mark, {1, 0}, nullptr);
    Name(anchor, false, {});
    open_.push_back(std::move(c));
  }

  void Close() {
    const Collection c = std::move(open_.back());
    open_.pop_back();
    if (c.anchor != 0) {
      Anchor& a = anchors_[c.anchor];
      a.complete = true;
      a.size = {total_.nodes - c.before.nodes, total_.scalar_bytes - c.before.scalar_bytes};
    }
    Advance(std::string());
  }

  void Name(YAML::anchor_t anchor, bool complete, Size size) {
    if (anchor == 0) return;
    anchors_[anchor] = Anchor{std::exchange(pending_name_, std::string()), complete, size};
  }

  // The field path of the node about to be read.
  std::string PathHere() const {
    if (open_.empty()) return "";
    const Collection& c = open_.back();
    if (!c.mapping) return IndexPath(c.path, c.next_index);
    return c.at_key ? c.path : doc_parse::FieldPath(c.path, c.key);
  }

  // A whole node was read at the current place; `text` is its scalar text.
  void Advance(const std::string& text) {
    if (open_.empty()) return;
    Collection& c = open_.back();
    if (!c.mapping) {
      ++c.next_index;
      return;
    }
    if (c.at_key) c.key = text;
    c.at_key = !c.at_key;
  }

  // Adds `size` to the running total; `alias` names the alias that adds it.
  void Add(const YAML::Mark& mark, Size size, const Anchor* alias) {
    total_.nodes += size.nodes;
    total_.scalar_bytes += size.scalar_bytes;
    const bool nodes_over = total_.nodes > limits_.max_nodes;
    if (!nodes_over && total_.scalar_bytes <= limits_.max_scalar_bytes) return;
    if (alias == nullptr) {
      throw ExpansionStop{
          mark, PathHere(),
          nodes_over ? doc_parse::TooManyNodes(limits_) : doc_parse::TooManyScalarBytes(limits_)};
    }
    const std::string what = nodes_over ? std::to_string(size.nodes) + " nodes"
                                        : std::to_string(size.scalar_bytes) + " bytes of text";
    const std::string cap = nodes_over ? std::to_string(limits_.max_nodes) + " nodes"
                                       : std::to_string(limits_.max_scalar_bytes) + " bytes of scalar text";
    throw ExpansionStop{mark, PathHere(),
                        "alias *" + alias->name + " (" + what + ") takes the document past " + cap +
                            ", the cap for a configuration document with its aliases expanded"};
  }

  const DocLimits& limits_;
  Size total_;
  std::string pending_name_;
  std::map<YAML::anchor_t, Anchor> anchors_;
  std::vector<Collection> open_;
};

void ExpansionCounter::OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) {
  // yaml-cpp has already refused an alias of an anchor never defined.
  const Anchor& a = anchors_[anchor];
  if (!a.complete) {
    throw ExpansionStop{
        mark, PathHere(),
        "alias *" + a.name + " is used inside the node it names, which makes the document infinite"};
  }
  Add(mark, a.size, &a);
  Advance("*" + a.name);
}

// yaml-cpp's tree of `text` after ExpansionCounter has found its expansion
// within `limits`: every walk of the tree below is then bounded too.
std::optional<Failure> LoadChecked(const std::string& text, const DocLimits& limits, YAML::Node* out) {
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      ExpansionCounter counter(limits);
      parser.HandleNextDocument(counter);
    }
    *out = YAML::Load(text);
    return std::nullopt;
  } catch (const ExpansionStop& stop) {
    return Failure{FromYaml(stop.mark), stop.field, stop.message};
  } catch (const YAML::Exception& e) {
    return Failure{FromYaml(e.mark), "", "syntax error: " + e.msg};
  } catch (const std::exception& e) {
    return Failure{SourceMark{}, "", std::string("cannot parse: ") + e.what()};
  }
}

// `fallback` is used for null values: yaml-cpp marks an empty value at the
// start of the next token, often on the next line.
DocNode ConvertYaml(const YAML::Node& n, SourceMark fallback) {
  DocNode out;
  out.mark = FromYaml(n.Mark());
  switch (n.Type()) {
    case YAML::NodeType::Scalar:
      out.kind = DocNode::Kind::kScalar;
      out.scalar = n.Scalar();
      out.quoted = n.Tag() != "?";
      break;
    case YAML::NodeType::Sequence:
      out.kind = DocNode::Kind::kSequence;
      for (const YAML::Node& item : n) out.items.push_back(ConvertYaml(item, out.mark));
      break;
    case YAML::NodeType::Map:
      out.kind = DocNode::Kind::kMapping;
      for (auto it = n.begin(); it != n.end(); ++it) {
        DocNode key = ConvertYaml(it->first, out.mark);
        DocNode value = ConvertYaml(it->second, key.mark);
        out.entries.push_back({std::move(key), std::move(value)});
      }
      break;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out.kind = DocNode::Kind::kNull;
      out.mark = fallback;
      break;
  }
  return out;
}

// yaml-cpp rejects tabs in some places where JSON allows them as whitespace.
// Outside strings they are whitespace in both, so a space is equivalent and
// keeps every column where it was.
std::string ReplaceTabsOutsideStrings(const std::string& text) {
  std::string out = text;
  bool in_string = false;
  for (size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '\t') {
      out[i] = ' ';
    }
  }
  return out;
}

bool LooksLikeJson(const std::string& text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '[';
  }
  return false;
}

}  // namespace

namespace doc_parse {

std::optional<Failure> ParseYaml(const std::string& text, const DocLimits& limits, DocNode* root) {
  // JSON read as YAML (a file without the .json extension).
  std::string detabbed;
  if (LooksLikeJson(text)) detabbed = ReplaceTabsOutsideStrings(text);
  YAML::Node node;
  if (std::optional<Failure> failed = LoadChecked(detabbed.empty() ? text : detabbed, limits, &node))
    return failed;
  *root = ConvertYaml(node, SourceMark{1, 1});
  return std::nullopt;
}

}  // namespace doc_parse

Result<YAML::Node> LoadBoundedYaml(const std::string& text, const DocLimits& limits) {
  YAML::Node node;
  std::optional<Failure> failed = LoadChecked(text, limits, &node);
  if (!failed) return node;
  std::string message;
  if (failed->at.line > 0) {
    message =
        "line " + std::to_string(failed->at.line) + ", column " + std::to_string(failed->at.column) + ": ";
  }
  if (!failed->field.empty()) message += failed->field + ": ";
  return Error::Config(message + failed->message);
}

}  // namespace gpuscaler
