// `gpuscaler cloud-emulator --provider` and the scenario's `provider` key:
// which emulator starts, and the errors for a conflict or a bad scenario.
#include <gtest/gtest.h>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace {

using namespace std::chrono_literals;

class CloudEmulatorProvider : public CliTest {
 protected:
  // Starts the emulator, waits for it to listen, stops it; its first stdout line.
  std::string Banner(const std::vector<std::string>& extra) {
    std::vector<std::string> argv{GPUSCALER_BINARY, "cloud-emulator", "--listen",
                                  "127.0.0.1:0",    "--port-file",    (dir_ / "port").string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ChildProcess p(argv, dir_ / "out", dir_ / "err");
    const uint16_t port = WaitForPortFile(dir_ / "port", 60s);
    EXPECT_NE(port, 0) << ReadAll(dir_ / "err");
    p.Signal(SIGTERM);
    p.Wait(20s);
    std::filesystem::remove(dir_ / "port");
    const std::string out = ReadAll(dir_ / "out");
    return out.substr(0, out.find('\n'));
  }
};

TEST_F(CloudEmulatorProvider, TheScenarioOrTheFlagChoosesComputeEngine) {
  const auto gcp = Write("gcp.yaml", "provider: gcp\nproject: my-project\n");
  EXPECT_NE(Banner({"--scenario", gcp.string()}).find("(Compute Engine, project my-project)"),
            std::string::npos);
  EXPECT_NE(Banner({"--provider", "gcp"}).find("(Compute Engine, project gpuscaler-test)"),
            std::string::npos);
  EXPECT_NE(Banner({}).find("(region us-east-1)"), std::string::npos) << "AWS stays the default";
  const auto aws = Write("aws.yaml", "provider: aws\nregion: eu-west-1\n");
  EXPECT_NE(Banner({"--scenario", aws.string()}).find("(region eu-west-1)"), std::string::npos);
}

TEST_F(CloudEmulatorProvider, ConflictsAndBadScenariosAreNamed) {
  const auto gcp = Write("gcp.yaml", "provider: gcp\n");
  ProcessResult conflict = Gpuscaler({"cloud-emulator", "--provider", "aws", "--scenario", gcp.string()});
  EXPECT_EQ(conflict.exit_code, 2);
  EXPECT_NE(conflict.err.find("--provider aws but " + gcp.string() + " says provider: gcp"),
            std::string::npos)
      << conflict.err;

  const auto bad = Write(
      "bad.yaml", "provider: gcp\nzones: [us-central1-a]\ncapacity:\n  - {zone: us-east1-b, limit: 1}\n");
  ProcessResult r = Gpuscaler({"cloud-emulator", "--scenario", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("capacity[0] (line 4): zone 'us-east1-b' is not one of `zones`"), std::string::npos)
      << r.err;

  const auto aws_keys = Write("aws-keys.yaml", "region: us-east-1\n");
  ProcessResult wrong = Gpuscaler({"cloud-emulator", "--provider", "gcp", "--scenario", aws_keys.string()});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("unknown key 'region'"), std::string::npos) << wrong.err;

  const auto other = Write("other.yaml", "provider: openstack\n");
  ProcessResult unknown = Gpuscaler({"cloud-emulator", "--scenario", other.string()});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("provider (line 1): must be aws, gcp or azure, got 'openstack'"), std::string::npos)
      << unknown.err;

  const auto azure_keys = Write("azure-keys.yaml", "provider: azure\nzones: [us-central1-a]\n");
  ProcessResult azure_wrong = Gpuscaler({"cloud-emulator", "--scenario", azure_keys.string()});
  EXPECT_EQ(azure_wrong.exit_code, 2);
  EXPECT_NE(azure_wrong.err.find("unknown key 'zones'"), std::string::npos) << azure_wrong.err;

  ProcessResult tls_for_aws = Gpuscaler({"cloud-emulator", "--provider", "aws", "--tls-ca-out", "ca.pem"});
  EXPECT_EQ(tls_for_aws.exit_code, 2);
  EXPECT_NE(tls_for_aws.err.find("are for --provider azure"), std::string::npos) << tls_for_aws.err;
}

}  // namespace
}  // namespace gpuscaler::testing
