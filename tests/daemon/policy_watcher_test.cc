#include "gpuscaler/daemon/policy_watcher.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpuscaler/model/config_limits.h"
#include "support/alias_bomb.h"

namespace gpuscaler::daemon {
namespace {

namespace fs = std::filesystem;

std::string PolicyText(const std::string& name, int max_nodes) {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: " + name +
         "\npools:\n  - name: gpu\n    max_nodes: " + std::to_string(max_nodes) +
         "\nclasses:\n  - name: batch\n    pools: [gpu]\n";
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}

class PolicyWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpuscaler-watch-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    Result<Catalog> c = LoadCatalogFile(std::string(GPUSCALER_SOURCE_DIR) + "/config/catalogs/aws.yaml");
    ASSERT_TRUE(c.ok()) << c.error().message();
    catalog_ = std::move(c).value();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  Catalog catalog_;
};

TEST_F(PolicyWatcherTest, ReloadsAChangedFileAndIgnoresATouch) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyText("one", 5));
  PolicyWatcher w(file.string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  EXPECT_EQ(w.policy().name, "one");
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);

  Write(file, PolicyText("one", 5));  // same text, new mtime
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);

  Write(file, PolicyText("two", 7));
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kReloaded);
  EXPECT_EQ(w.policy().name, "two");
  EXPECT_EQ(w.policy().pools[0].max_nodes, 7);
  EXPECT_EQ(w.reloads(), 1);
}

TEST_F(PolicyWatcherTest, RejectsAnInvalidPolicyAndKeepsTheLastGoodOne) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyText("good", 5));
  PolicyWatcher w(file.string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  Write(file, "apiVersion: gpuscaler/v1\nkind: Policy\nname: bad\npools:\n  - name: gpu\n    max_nodez: 3\n");
  PolicyReload r = w.Check();
  EXPECT_EQ(r.kind, PolicyReload::Kind::kRejected);
  EXPECT_NE(r.errors.find("policy.yaml:6:"), std::string::npos) << r.errors;
  EXPECT_EQ(w.policy().name, "good");
  EXPECT_EQ(w.rejections(), 1);
  // The same bad text again is not a second rejection.
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);
  Write(file, PolicyText("fixed", 5));
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kReloaded);
  EXPECT_TRUE(w.last_errors().empty());
}

// Kubernetes ConfigMap volumes: policy.yaml -> ..data/policy.yaml, and
// ..data -> ..<timestamp>; an update writes a new folder and swaps ..data.
TEST_F(PolicyWatcherTest, FollowsAConfigMapSymlinkSwap) {
  fs::create_directories(dir_ / "..2026_12_01");
  Write(dir_ / "..2026_12_01" / "policy.yaml", PolicyText("v1", 5));
  fs::create_directory_symlink("..2026_12_01", dir_ / "..data");
  fs::create_symlink("..data/policy.yaml", dir_ / "policy.yaml");
  PolicyWatcher w((dir_ / "policy.yaml").string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  EXPECT_EQ(w.policy().name, "v1");

  fs::create_directories(dir_ / "..2026_12_02");
  Write(dir_ / "..2026_12_02" / "policy.yaml", PolicyText("v2", 9));
  fs::create_directory_symlink("..2026_12_02", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");  // atomic swap, as the kubelet does
  fs::remove_all(dir_ / "..2026_12_01");
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kReloaded);
  EXPECT_EQ(w.policy().name, "v2");
}

TEST_F(PolicyWatcherTest, KeepsThePolicyWhileTheFileIsMissing) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyText("one", 5));
  PolicyWatcher w(file.string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  fs::remove(file);
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);
  EXPECT_EQ(w.policy().name, "one");
  Write(file, PolicyText("one", 5));
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);
}

TEST_F(PolicyWatcherTest, TheFirstLoadFailsOnAnInvalidFile) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, "apiVersion: gpuscaler/v2\n");
  PolicyWatcher w(file.string(), catalog_);
  Result<Policy> p = w.LoadInitial();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().category(), ErrorCategory::kConfig);
  PolicyWatcher missing((dir_ / "nope.yaml").string(), catalog_);
  EXPECT_FALSE(missing.LoadInitial().ok());
}

std::string PolicyInRegion(const std::string& name, const std::string& region) {
  return "apiVersion: gpuscaler/v1\nkind: Policy\nname: " + name + "\npools:\n  - name: gpu\n    regions: [" +
         region + "]\n    max_nodes: 4\nclasses:\n  - name: batch\n    pools: [gpu]\n";
}

// A pool region the installation's cloud region cannot serve is a
// configuration error at start, and a rejected reload later (the previous
// policy stays in force).
TEST_F(PolicyWatcherTest, APoolRegionTheCloudCannotServeIsRejectedAtStartAndAtReload) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyInRegion("elsewhere", "eu-west-1"));
  PolicyWatcher start(file.string(), catalog_, {"us-east-1"});
  Result<Policy> first = start.LoadInitial();
  ASSERT_FALSE(first.ok());
  EXPECT_NE(first.error().message().find(file.string() + ":6:"), std::string::npos) << first.error().message();
  EXPECT_NE(first.error().message().find("pools[0].regions"), std::string::npos) << first.error().message();

  Write(file, PolicyInRegion("home", "us-east-1"));
  PolicyWatcher w(file.string(), catalog_, {"us-east-1"});
  ASSERT_TRUE(w.LoadInitial().ok());
  Write(file, PolicyInRegion("elsewhere", "eu-west-1"));
  const PolicyReload r = w.Check();
  EXPECT_EQ(r.kind, PolicyReload::Kind::kRejected);
  EXPECT_NE(r.errors.find("pools[0].regions"), std::string::npos) << r.errors;
  EXPECT_EQ(w.policy().name, "home");
}

// The process's peak resident memory so far, in KiB.
long PeakRssKib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// Nine levels of aliases stand for a billion nodes: before the expansion cap,
// parsing them ran past a minute and tens of gigabytes.
TEST_F(PolicyWatcherTest, AnAliasBombOnReloadIsRejectedQuicklyWithinMemoryAndTheOldPolicyKept) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyText("good", 5));
  PolicyWatcher w(file.string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  const long peak_before = PeakRssKib();
  Write(file, gpuscaler::testing::AliasBombPolicy(9));
  const PolicyReload r = w.Check();
  EXPECT_EQ(r.kind, PolicyReload::Kind::kRejected);
  EXPECT_EQ(r.errors, file.string() +
                          ":9:12: f[1]: alias *e (111111 nodes) takes the document past 250000 nodes, the cap for a "
                          "configuration document with its aliases expanded");
  EXPECT_LT(PeakRssKib() - peak_before, 50 * 1024);
  EXPECT_EQ(w.policy().name, "good");
  EXPECT_EQ(w.rejections(), 1);
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);
  Write(file, PolicyText("fixed", 5));
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kReloaded);
  EXPECT_EQ(w.policy().name, "fixed");
}

TEST_F(PolicyWatcherTest, APolicyFileOverTheSizeCapIsRejectedUnreadAndTheOldPolicyKept) {
  const fs::path file = dir_ / "policy.yaml";
  Write(file, PolicyText("good", 5));
  PolicyWatcher w(file.string(), catalog_);
  ASSERT_TRUE(w.LoadInitial().ok());
  Write(file, PolicyText("big", 5) + "# " + std::string(kMaxConfigFileBytes, 'x') + "\n");
  const PolicyReload r = w.Check();
  EXPECT_EQ(r.kind, PolicyReload::Kind::kRejected);
  EXPECT_NE(r.errors.find(file.string() + " is "), std::string::npos) << r.errors;
  EXPECT_NE(r.errors.find("more than the 4194304 bytes (4 MiB) a configuration file may have"), std::string::npos)
      << r.errors;
  EXPECT_EQ(w.policy().name, "good");
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kUnchanged);
  Write(file, PolicyText("good", 5));
  EXPECT_EQ(w.Check().kind, PolicyReload::Kind::kReloaded);
  EXPECT_TRUE(w.last_errors().empty());
}

}  // namespace
}  // namespace gpuscaler::daemon
