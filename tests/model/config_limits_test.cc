// The caps on configuration documents (config_limits.h): the file size
// (ReadConfigFile) and the expanded document (DocReader::Parse for YAML and
// JSON, LoadBoundedYaml).
#include "gpuscaler/model/config_limits.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gpuscaler/model/bounded_yaml.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/model/yaml_document.h"
#include "support/alias_bomb.h"
#include "support/temp_dir.h"

namespace gpuscaler {
namespace {

using testing::AliasBombPolicy;

// The problems of parsing `text` as the file `name`, one per line; "" when it parses.
std::string ParseProblems(const std::string& name, const std::string& text, DocLimits limits = {}) {
  DocReader reader(name, limits);
  DocNode root;
  const bool parsed = reader.Parse(text, &root);
  EXPECT_EQ(parsed, reader.ok());
  return JoinProblems(reader.SortedProblems());
}

constexpr const char* kSevenLevelProblem =
    "bomb.yaml:9:12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, the cap for a "
    "configuration document with its aliases expanded";

TEST(ConfigLimits, ASevenLevelAliasBombStopsQuicklyAtTheAliasThatCrossesTheNodeCap) {
  const std::string bomb = AliasBombPolicy(7);
  EXPECT_LT(bomb.size(), 450u);
  // The problem names the alias whose expansion crosses the cap: the parser
  // counted events and stopped there, without expanding the bomb.
  EXPECT_EQ(ParseProblems("bomb.yaml", bomb), kSevenLevelProblem);
}

TEST(ConfigLimits, ANineLevelAliasBombStopsAtTheSameAlias) {
  EXPECT_EQ(ParseProblems("bomb.yaml", AliasBombPolicy(9)), kSevenLevelProblem);
}

TEST(ConfigLimits, AnAliasOfALongStringStopsAtTheScalarByteCap) {
  const std::string text = "s: &s " + std::string(100, 'x') + "\nlist: [*s, *s, *s, *s, *s]\n";
  EXPECT_EQ(ParseProblems("strings.yaml", text, DocLimits{1000, 350, 100}),
            "strings.yaml:2:16: list[2]: alias *s (100 bytes of text) takes the document past 350 bytes of "
            "scalar text, the cap for a configuration document with its aliases expanded");
}

TEST(ConfigLimits, AnAliasInsideTheNodeItNamesIsAnErrorNotACycle) {
  EXPECT_EQ(
      ParseProblems("cycle.yaml", "a: &a [1, *a]\n"),
      "cycle.yaml:1:11: a[1]: alias *a is used inside the node it names, which makes the document infinite");
  EXPECT_EQ(
      ParseProblems("cycle.yaml", "top:\n  m: &m {k: [*m]}\n"),
      "cycle.yaml:2:14: top.m.k[0]: alias *m is used inside the node it names, which makes the document "
      "infinite");
}

TEST(ConfigLimits, AliasesWithinTheCapsExpandAsBefore) {
  DocReader reader("ok.yaml");
  DocNode root;
  ASSERT_TRUE(reader.Parse("base: &b {gpus: 1}\none: *b\ntwo: [*b, *b]\n", &root))
      << JoinProblems(reader.SortedProblems());
  ASSERT_EQ(root.entries.size(), 3u);
  EXPECT_EQ(root.entries[1].value.entries[0].value.scalar, "1");
  EXPECT_EQ(root.entries[2].value.items.size(), 2u);
}

TEST(ConfigLimits, TooManyNodesOrTooDeepFailsInYamlAndJsonAlike) {
  struct Case {
    std::string name;
    std::string file;
    std::string text;
    std::string want;
  };
  const DocLimits small{10, 1000, 3};
  const std::vector<Case> cases = {
      {"yaml nodes", "n.yaml", "list: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
       "n.yaml:1:29: list[7]: the document has more than 10 nodes, the cap for a configuration document"},
      {"json nodes", "n.json", "{\"list\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}",
       "n.json:1:32: list[7]: the document has more than 10 nodes, the cap for a configuration document"},
      {"yaml depth", "d.yaml", "a: [[[1]]]\n",
       "d.yaml:1:6: a[0][0]: lists and mappings are nested more than 3 deep, the cap for a configuration "
       "document"},
      {"json depth", "d.json", "{\"a\": [[[1]]]}",
       "d.json:1:9: a[0][0]: lists and mappings are nested more than 3 deep, the cap for a configuration "
       "document"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ParseProblems(c.file, c.text, small), c.want);
  }
}

// The margin the header of config_limits.h states: every policy, catalog and
// daemon configuration in the tree parses with caps ten times smaller.
TEST(ConfigLimits, EveryFileInTheTreeFitsInATenthOfTheCaps) {
  const DocLimits defaults;
  const DocLimits tenth{defaults.max_nodes / 10, defaults.max_scalar_bytes / 10, defaults.max_depth / 10};
  const std::filesystem::path root(GPUSCALER_SOURCE_DIR);
  int files = 0;
  for (const char* dir : {"policies", "config/catalogs", "config"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      SCOPED_TRACE(entry.path().string());
      Result<std::string> text = ReadConfigFile(entry.path().string(), kMaxConfigFileBytes / 10);
      ASSERT_TRUE(text.ok()) << text.error().message();
      EXPECT_EQ(ParseProblems(entry.path().string(), *text, tenth), "");
      ++files;
    }
  }
  EXPECT_GE(files, 10);
}

TEST(ConfigLimits, LoadBoundedYamlRefusesABombWithThePlaceAndLoadsAnOrdinaryDocument) {
  Result<YAML::Node> bomb = LoadBoundedYaml(AliasBombPolicy(7));
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(
      bomb.error().message(),
      "line 9, column 12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, the cap for "
      "a configuration document with its aliases expanded");

  Result<YAML::Node> syntax = LoadBoundedYaml("a: [1, 2\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message().rfind("line ", 0), 0u) << syntax.error().message();
  EXPECT_NE(syntax.error().message().find("syntax error"), std::string::npos) << syntax.error().message();

  Result<YAML::Node> ok = LoadBoundedYaml("a: &x [1, 2]\nb: *x\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ((*ok)["b"][1].as<int>(), 2);
  Result<YAML::Node> empty = LoadBoundedYaml("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->IsNull());
}

TEST(ConfigLimits, AFileOverTheSizeCapIsRefusedWithItsPathSizeAndTheCap) {
  testing::TempDir dir;
  const std::string at_cap = dir.Write("at_cap.yaml", std::string(1000, '#'));
  const std::string over = dir.Write("over.yaml", std::string(1001, '#'));
  ASSERT_TRUE(ReadConfigFile(at_cap, 1000).ok());
  Result<std::string> refused = ReadConfigFile(over, 1000);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kConfig);
  EXPECT_EQ(refused.error().message(),
            over + " is 1001 bytes, more than the 1000 bytes a configuration file may have");

  const std::string big = dir.Write("big.yaml", std::string(kMaxConfigFileBytes + 1, '#'));
  Result<std::string> default_cap = ReadConfigFile(big);
  ASSERT_FALSE(default_cap.ok());
  EXPECT_EQ(default_cap.error().message(),
            big + " is 4194305 bytes, more than the 4194304 bytes (4 MiB) a configuration file may have");
}

TEST(ConfigLimits, AnEndlessDeviceIsReadOnlyUpToTheCap) {
  Result<std::string> zeros = ReadConfigFile("/dev/zero", 100000);
  ASSERT_FALSE(zeros.ok());
  EXPECT_EQ(zeros.error().message(),
            "/dev/zero has more than the 100000 bytes a configuration file may have");
}

TEST(ConfigLimits, ReadConfigFileKeepsTheOsReasonForAMissingFile) {
  Result<std::string> missing = ReadConfigFile("/nonexistent/policy.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kNotFound);
  EXPECT_EQ(missing.error().message(), "No such file or directory");
}

}  // namespace
}  // namespace gpuscaler
