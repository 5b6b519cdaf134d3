// The two parsers behind DocReader::Parse and LoadBoundedYaml: text to
// DocNode, YAML (yaml-cpp, every alias expansion counted first) or strict
// JSON (nlohmann's SAX parser), both within DocLimits.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gpuscaler/model/config_limits.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler::doc_parse {

// Why a text did not become a document: where, in which field (a path as
// MapReader writes it, "" at the root or when unknown), and what.
struct Failure {
  SourceMark at;
  std::string field;
  std::string message;
};

// "the cap for a configuration document" messages; shared so that YAML and
// JSON say the same thing.
std::string TooManyNodes(const DocLimits& limits);
std::string TooManyScalarBytes(const DocLimits& limits);
std::string TooDeep(const DocLimits& limits);

// `path` + "." + `key`, or `key` at the root (MapReader::PathOf).
std::string FieldPath(const std::string& path, std::string_view key);

// The YAML document of `text` into `*root`; on failure `*root` is unspecified.
std::optional<Failure> ParseYaml(const std::string& text, const DocLimits& limits, DocNode* root);
// The strict JSON (RFC 8259) document of `text` into `*root`: no comments, no
// trailing commas, keys quoted, one value and nothing after it.
std::optional<Failure> ParseJson(const std::string& text, const DocLimits& limits, DocNode* root);

}  // namespace gpuscaler::doc_parse
