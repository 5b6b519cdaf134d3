// `gpuscaler policy check`, run as a process: output streams and exit codes.
#include <gtest/gtest.h>

#include "cli/process.h"
#include "support/alias_bomb.h"
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using gpuscaler::testing::ProcessResult;

class PolicyCheck : public gpuscaler::testing::CliTest {};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "ok  FILE (N pools, M classes, hash abcd1234)". std::regex is avoided: GCC 12 warns
// falsely inside it under -fsanitize.
bool IsOkLine(const std::string& line, const std::string& file) {
  std::istringstream in(line);
  std::string ok, name, pools_word, classes_word, hash_word, hash;
  char paren = 0;
  int pools = -1, classes = -1;
  in >> ok >> name >> paren >> pools >> pools_word >> classes >> classes_word >> hash_word >> hash;
  if (!in || ok != "ok" || name != file || paren != '(' || pools < 1 || classes < 1 ||
      pools_word != "pools," || classes_word != "classes," || hash_word != "hash" ||
      hash.size() != 9 || hash.back() != ')') {
    return false;
  }
  hash.pop_back();
  return line.rfind("ok  " + file + " (", 0) == 0 &&
         hash.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<std::string> ExamplePolicies() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(GPUSCALER_SOURCE_DIR) / "policies")) {
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST_F(PolicyCheck, TypoWrongTypeAndSpotShareAboveOneGiveExactlyThreeErrorsAndExitTwo) {
  const fs::path bad = Write("bad.yaml", R"(apiVersion: gpuscaler/v1
kind: Policy
name: three-mistakes
pools:
  - name: gpu-spot
    capacity_types: [spot, on-demand]
    max_nodes: twenty
classes:
  - name: training
    pools: [gpu-spot]
    max_spot_shar: 0.9
    max_spot_share: 1.5
)");
  const ProcessResult r = Gpuscaler({"policy", "check", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> lines = Lines(r.err);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  const std::string f = bad.string();
  EXPECT_EQ(lines[0], f + ":7:16: pools[0].max_nodes: expected an integer, got a string");
  EXPECT_EQ(lines[1], f + ":11:5: classes[0].max_spot_shar: unknown field 'max_spot_shar' "
                          "(did you mean 'max_spot_share'?)");
  EXPECT_EQ(lines[2], f + ":12:21: classes[0].max_spot_share: must be in [0, 1], got 1.5");
}

TEST_F(PolicyCheck, EveryExamplePolicyPasses) {
  std::vector<std::string> args = {"policy", "check"};
  const std::vector<std::string> files = ExamplePolicies();
  ASSERT_GE(files.size(), 3u);
  args.insert(args.end(), files.begin(), files.end());
  const ProcessResult r = Gpuscaler(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), files.size()) << r.out;
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    EXPECT_TRUE(IsOkLine(lines[i], files[i]));
  }
}

TEST_F(PolicyCheck, EveryExamplePolicyPassesAgainstItsCloudsCatalog) {
  // The examples for GKE (`*-gke.*`) against the Compute Engine catalog,
  // the others against AWS's.
  std::vector<std::string> aws = {"policy", "check", "--catalog",
                                  std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml"};
  std::vector<std::string> gcp = {"policy", "check", "--catalog",
                                  std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/gcp.yaml"};
  for (const std::string& f : ExamplePolicies()) {
    (fs::path(f).stem().string().ends_with("-gke") ? gcp : aws).push_back(f);
  }
  ASSERT_GT(aws.size(), 4u);
  ASSERT_GT(gcp.size(), 4u);
  for (const auto* args : {&aws, &gcp}) {
    const ProcessResult r = Gpuscaler(*args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
}

TEST_F(PolicyCheck, OneBadFileAmongGoodOnesStillExitsTwoAndChecksTheRest) {
  const fs::path good = Write("good.json",
                              R"({"apiVersion": "gpuscaler/v1", "kind": "Policy",
                                  "pools": [{"name": "gpu"}], "classes": [{"name": "a"}]})");
  const fs::path bad = Write("bad.yaml", "apiVersion: gpuscaler/v1\nkind: Policy\n"
                                         "pools: [{name: gpu}]\nclasses: [{name: a}]\nspto: {}\n");
  const ProcessResult r = Gpuscaler({"policy", "check", bad.string(), good.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("ok  " + good.string() + " (1 pools, 1 classes, hash "), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err, bad.string() + ":5:1: spto: unknown field 'spto' (did you mean 'spot'?)\n");
}

TEST_F(PolicyCheck, UnreadableFileExitsTwoWithTheOsError) {
  const std::string missing = (dir_ / "missing.yaml").string();
  const ProcessResult r = Gpuscaler({"policy", "check", missing});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, missing + ": cannot read: No such file or directory\n");
  const ProcessResult d = Gpuscaler({"policy", "check", dir_.string()});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_EQ(d.err, dir_.string() + ": cannot read: Is a directory\n");
}

TEST_F(PolicyCheck, InvalidCatalogExitsTwoBeforeCheckingPolicies) {
  const fs::path catalog = Write("cat.yaml", "apiVersion: gpuscaler/v1\nkind: Catalog\n");
  const ProcessResult r = Gpuscaler({"policy", "check", "--catalog", catalog.string(), ExamplePolicies()[0]});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(catalog.string() + ":1:1: provider: required field is missing"),
            std::string::npos)
      << r.err;
}

TEST_F(PolicyCheck, HelpWorksAtEveryLevel) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"policy", "--help"},
        std::vector<std::string>{"policy", "check", "--help"}}) {
    const ProcessResult r = Gpuscaler(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("check"), std::string::npos) << r.out;
  }
  const ProcessResult r = Gpuscaler({"policy", "check", "--help"});
  EXPECT_NE(r.out.find("--catalog"), std::string::npos) << r.out;
}

TEST_F(PolicyCheck, MissingFileArgumentIsAUsageError) {
  const ProcessResult r = Gpuscaler({"policy", "check"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("files"), std::string::npos) << r.err;
}

// Seven levels of aliases: 1.1 to 2 GB and seconds before the expansion cap.
TEST_F(PolicyCheck, AnAliasBombFailsWithinAFewMegabytesNamingTheAlias) {
  const fs::path bomb = Write("bomb.yaml", gpuscaler::testing::AliasBombPolicy(7));
  const ProcessResult r = Gpuscaler({"policy", "check", bomb.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, bomb.string() +
                       ":9:12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, the cap for a "
                       "configuration document with its aliases expanded\n");
  // Of the processes this test waited for (the shell and gpuscaler): the largest.
  rusage children{};
  ::getrusage(RUSAGE_CHILDREN, &children);
  EXPECT_LT(children.ru_maxrss, 100 * 1024) << "KiB";
}

TEST_F(PolicyCheck, AJsonPolicyIsStrictJsonAndATrailingCommaIsAnErrorWithItsPlace) {
  const fs::path json = Write("p.json", "{\"apiVersion\": \"gpuscaler/v1\", \"kind\": \"Policy\",\n"
                                        " \"pools\": [{\"name\": \"gpu\"},],\n"
                                        " \"classes\": [{\"name\": \"a\"}]}\n");
  const ProcessResult r = Gpuscaler({"policy", "check", json.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, json.string() +
                       ":2:28: invalid JSON: syntax error while parsing value - unexpected ']'; expected '[', '{', "
                       "or a literal (a trailing comma: JSON allows none)\n");
}

}  // namespace
