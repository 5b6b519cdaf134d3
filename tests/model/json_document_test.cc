// DocReader on files named *.json: strict JSON, with the same DocNode tree
// (places included) as yaml-cpp makes of the same text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"

namespace gpuscaler {
namespace {

// Every node with its place, kind, text and quoting, one per line.
std::string Outline(const DocNode& n, int indent = 0) {
  std::string out = std::string(indent, ' ') + std::to_string(n.mark.line) + ":" +
                    std::to_string(n.mark.column) + " " + n.Describe() +
                    (n.IsScalar() ? " '" + n.scalar + "'" : "") + (n.quoted ? " quoted" : "") + "\n";
  for (const DocNode& item : n.items) out += Outline(item, indent + 2);
  for (const DocEntry& e : n.entries) out += Outline(e.key, indent + 2) + Outline(e.value, indent + 4);
  return out;
}

// The outline of `text` parsed as the file `name`, or its problems.
std::string Parsed(const std::string& name, const std::string& text) {
  DocReader reader(name);
  DocNode root;
  if (!reader.Parse(text, &root)) return JoinProblems(reader.SortedProblems());
  return Outline(root);
}

TEST(JsonDocument, TheFileNamePicksTheParser) {
  EXPECT_EQ(FormatOf("policies/mixed-budget.json"), DocFormat::kJson);
  EXPECT_EQ(FormatOf("POLICY.JSON"), DocFormat::kJson);
  EXPECT_EQ(FormatOf("policy.yaml"), DocFormat::kYaml);
  EXPECT_EQ(FormatOf("policy.yml"), DocFormat::kYaml);
  EXPECT_EQ(FormatOf("policy"), DocFormat::kYaml);
  EXPECT_EQ(FormatOf("/dev/stdin"), DocFormat::kYaml);
  EXPECT_EQ(FormatOf("json"), DocFormat::kYaml);
  EXPECT_EQ(FormatOf("policy.json with pools[0].max_nodes=3"), DocFormat::kYaml);
}

TEST(JsonDocument, WhatYamlForgivesIsASyntaxErrorWithItsPlace) {
  struct Case {
    std::string name;
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"trailing comma in a list", "{\n  \"a\": [1, 2,],\n  \"b\": 3\n}\n",
       "p.json:2:14: invalid JSON: syntax error while parsing value - unexpected ']'; expected '[', '{', or "
       "a "
       "literal (a trailing comma: JSON allows none)"},
      {"trailing comma in an object", "{\"a\": 1,\n}",
       "p.json:2:1: invalid JSON: syntax error while parsing object key - unexpected '}'; expected string "
       "literal "
       "(a trailing comma: JSON allows none)"},
      {"unquoted key", "{\n  a: 1\n}",
       "p.json:2:3: invalid JSON: syntax error while parsing object key - invalid literal; last read: "
       "'{<U+000A>  a'; expected string literal"},
      {"comment", "{\"a\": 1 // one\n}",
       "p.json:1:9: invalid JSON: syntax error while parsing object - invalid literal; last read: '1 /'; "
       "expected '}' (JSON has no comments)"},
      {"single quotes", "{'a': 1}",
       "p.json:1:2: invalid JSON: syntax error while parsing object key - invalid literal; last read: '{''; "
       "expected string literal"},
      {"text after the value", "{\"a\": 1}\n{\"b\": 2}",
       "p.json:2:1: invalid JSON: syntax error while parsing value - unexpected '{'; expected end of input"},
      {"empty", "",
       "p.json:1:1: invalid JSON: syntax error while parsing value - unexpected end of input; "
       "expected '[', '{', or a literal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(Parsed("p.json", c.text), c.want);
    // The same text under a YAML name: the lenient reading these files had.
    if (c.name == "trailing comma in a list" || c.name == "unquoted key" || c.name == "single quotes") {
      EXPECT_EQ(Parsed("p.yaml", c.text).find("p.yaml:"), std::string::npos);
    }
  }
}

// Columns count bytes, as yaml-cpp's do: the two-byte 'é' moves what follows it by two.
TEST(JsonDocument, NodesCarryTheirTextQuotingAndPlace) {
  const std::string text = "{\"k\xc3\xa9y\": \"v\", \"n\": -1.5e3,\n \"m\": [true, null, {\"x\": 12}]}";
  EXPECT_EQ(Parsed("p.json", text),
            "1:1 a mapping\n"
            "  1:2 a string 'k\xc3\xa9y' quoted\n"
            "    1:10 a string 'v' quoted\n"
            "  1:15 a string 'n' quoted\n"
            "    1:20 a number '-1.5e3'\n"
            "  2:2 a string 'm' quoted\n"
            "    2:7 a list\n"
            "      2:8 a boolean 'true'\n"
            "      2:14 null\n"
            "      2:20 a mapping\n"
            "        2:21 a string 'x' quoted\n"
            "          2:26 a number '12'\n");
}

// JSON is YAML flow syntax: yaml-cpp's tree of a valid JSON file is the
// reference the strict parser must match, places and all.
TEST(JsonDocument, AValidJsonFileGivesTheSameTreeAsYamlCppMakesOfIt) {
  const std::string path = std::string(GPUSCALER_SOURCE_DIR) + "/policies/mixed-budget.json";
  Result<std::string> text = ReadConfigFile(path);
  ASSERT_TRUE(text.ok()) << text.error().message();
  const std::string as_json = Parsed(path, *text);
  EXPECT_EQ(as_json.find(path + ":"), std::string::npos) << as_json;
  EXPECT_EQ(as_json, Parsed("mixed-budget.yaml", *text));
  const std::string small = "[1, \"tw\xc3\xb6\", {\"three\": [4.5e1, false]}]";
  EXPECT_EQ(Parsed("p.json", small), Parsed("p.yaml", small));
}

}  // namespace
}  // namespace gpuscaler
