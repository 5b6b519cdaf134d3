// Policy files as files: the size cap, the alias-expansion cap, and strict
// JSON for *.json (docs/policy.md, "File formats and limits").
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>

#include "gpuscaler/model/text_file.h"
#include "gpuscaler/policy/loader.h"
#include "support/alias_bomb.h"
#include "support/temp_dir.h"

namespace gpuscaler {
namespace {

std::string ProblemLines(const PolicyLoadResult& r) {
  std::string out;
  for (const ConfigProblem& p : r.problems) out += p.ToString() + "\n";
  return out;
}

TEST(PolicyFile, AnAliasBombIsRejectedAtTheAliasThatCrossesTheCapWithoutExpandingIt) {
  testing::TempDir dir;
  for (int levels : {7, 9}) {
    SCOPED_TRACE(levels);
    const std::string file =
        dir.Write("bomb" + std::to_string(levels) + ".yaml", testing::AliasBombPolicy(levels));
    const PolicyLoadResult r = LoadPolicyFile(file);
    EXPECT_EQ(ProblemLines(r),
              file +
                  ":9:12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, the cap "
                  "for a configuration document with its aliases expanded\n");
  }
}

TEST(PolicyFile, AFileOverTheSizeCapIsRefusedWithItsPathSizeAndTheCap) {
  testing::TempDir dir;
  // A valid policy padded with a comment to one byte over 4 MiB.
  std::string text =
      "apiVersion: gpuscaler/v1\nkind: Policy\npools:\n  - name: gpu\nclasses:\n  - name: c\n# ";
  text += std::string(kMaxConfigFileBytes + 1 - text.size(), 'x');
  const std::string file = dir.Write("big.yaml", text);
  const PolicyLoadResult r = LoadPolicyFile(file);
  EXPECT_EQ(ProblemLines(r),
            file + ": cannot read: " + file +
                " is 4194305 bytes, more than the 4194304 bytes (4 MiB) a configuration file may have\n");
}

TEST(PolicyFile, AJsonPolicyWithATrailingCommaFailsWithFileLineAndColumn) {
  testing::TempDir dir;
  const std::string file = dir.Write("p.json",
                                     "{\n"
                                     "  \"apiVersion\": \"gpuscaler/v1\",\n"
                                     "  \"kind\": \"Policy\",\n"
                                     "  \"pools\": [{\"name\": \"gpu\"}],\n"
                                     "  \"classes\": [{\"name\": \"c\"},]\n"
                                     "}\n");
  EXPECT_EQ(
      ProblemLines(LoadPolicyFile(file)),
      file +
          ":5:29: invalid JSON: syntax error while parsing value - unexpected ']'; expected '[', '{', or "
          "a literal (a trailing comma: JSON allows none)\n");
}

TEST(PolicyFile, ValidationProblemsOfAJsonPolicyNameTheJsonPlace) {
  testing::TempDir dir;
  const std::string file = dir.Write("p.json",
                                     "{\"apiVersion\": \"gpuscaler/v1\", \"kind\": \"Policy\",\n"
                                     " \"pools\": [{\"name\": \"gpu\", \"max_nodez\": 3}],\n"
                                     " \"classes\": [{\"name\": \"c\", \"max_spot_share\": 1.5}]}\n");
  EXPECT_EQ(ProblemLines(LoadPolicyFile(file)),
            file + ":2:28: pools[0].max_nodez: unknown field 'max_nodez' (did you mean 'max_nodes'?)\n" +
                file + ":3:46: classes[0].max_spot_share: must be in [0, 1], got 1.5\n");
}

// The same document in YAML block style (strings double-quoted, so that none
// turns into a number or a boolean).
void EmitAsYaml(const nlohmann::json& j, YAML::Emitter& out) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : j.items()) {
      out << YAML::Key << key << YAML::Value;
      EmitAsYaml(value, out);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : j) EmitAsYaml(item, out);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else {
    out << j.dump();
  }
}

TEST(PolicyFile, AValidJsonPolicyGivesTheSamePolicyAsItsYamlTwin) {
  const std::string json_file = std::string(GPUSCALER_SOURCE_DIR) + "/policies/mixed-budget.json";
  Result<std::string> json_text = ReadConfigFile(json_file);
  ASSERT_TRUE(json_text.ok()) << json_text.error().message();
  YAML::Emitter yaml;
  EmitAsYaml(nlohmann::json::parse(*json_text), yaml);
  testing::TempDir dir;
  const std::string yaml_file = dir.Write("mixed-budget.yaml", std::string(yaml.c_str()) + "\n");
  // Block style, keys unquoted (nlohmann orders them): not JSON text.
  ASSERT_EQ(std::string(yaml.c_str()).rfind("apiVersion: \"gpuscaler/v1\"\nbudget:\n", 0), 0u)
      << yaml.c_str();

  const PolicyLoadResult from_json = LoadPolicyFile(json_file);
  const PolicyLoadResult from_yaml = LoadPolicyFile(yaml_file);
  ASSERT_TRUE(from_json.ok()) << ProblemLines(from_json);
  ASSERT_TRUE(from_yaml.ok()) << ProblemLines(from_yaml);
  EXPECT_EQ(CanonicalPolicyText(from_json.policy), CanonicalPolicyText(from_yaml.policy));
  EXPECT_EQ(from_json.policy.content_hash, from_yaml.policy.content_hash);
  EXPECT_EQ(from_json.policy.name, "mixed-budget-capped");
}

}  // namespace
}  // namespace gpuscaler
