// The daemon configurations shipped as examples: config/gpuscaler.yaml and the
// base's copy load with the daemon's own loader (the base alone in dry run),
// and so does every DaemonConfig example in docs/daemon.md.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "gpuscaler/daemon/config.h"
#include "kube/manifests_fixture.h"
#include "kube/tools.h"

namespace gpuscaler::kube_test::daemon_config_example_test {
namespace {

using manifests_testing::kBase;

TEST(DaemonConfigExample, LoadsWithTheDaemonsLoader) {
  Result<daemon::DaemonConfig> c = daemon::LoadDaemonConfig((SourceDir() / "config/gpuscaler.yaml").string());
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->policy_file, "/etc/gpuscaler/policy/policy.yaml");
  EXPECT_EQ(c->catalog_file, "/usr/share/gpuscaler/catalogs/aws.yaml");
  EXPECT_EQ(c->db_file, "/var/lib/gpuscaler/audit.db");
  EXPECT_EQ(c->listen, "0.0.0.0:8080");
  EXPECT_FALSE(c->dry_run);
  EXPECT_EQ(c->cloud.provider, "aws");
  EXPECT_EQ(c->cloud.launch_template, "gpu-nodes");
  EXPECT_EQ(c->cloud.subnets.size(), 3u);
  EXPECT_TRUE(c->kubernetes.enabled);
  EXPECT_TRUE(c->kubernetes.leader_election.enabled);
  EXPECT_EQ(c->signals.timeout, std::chrono::milliseconds(3000));
  EXPECT_EQ(c->retention, Seconds(90 * 86400));

  Result<daemon::DaemonConfig> base = daemon::LoadDaemonConfig((SourceDir() / kBase / "gpuscaler.yaml").string());
  ASSERT_TRUE(base.ok()) << base.error().message();
  EXPECT_TRUE(base->dry_run) << "the base alone never calls the cloud";
}

TEST(DaemonConfigExample, DocumentedExamplesLoad) {
  // Every ```yaml block of docs/daemon.md that is a DaemonConfig.
  const std::string doc = ReadFile(SourceDir() / "docs/daemon.md");
  int examples = 0;
  for (size_t pos = doc.find("```yaml\n"); pos != std::string::npos; pos = doc.find("```yaml\n", pos)) {
    const size_t start = pos + 8, end = doc.find("```", start);
    ASSERT_NE(end, std::string::npos);
    const std::string block = doc.substr(start, end - start);
    pos = end + 3;
    if (block.find("kind: DaemonConfig") == std::string::npos) continue;
    ++examples;
    Result<daemon::DaemonConfig> c = daemon::ParseDaemonConfig(block, "docs/daemon.md example");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message());
  }
  EXPECT_GE(examples, 1);
}

}  // namespace
}  // namespace gpuscaler::kube_test::daemon_config_example_test
