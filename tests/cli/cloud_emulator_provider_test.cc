// `gpuscaler cloud-emulator --provider` and the scenario's `provider` key:
// which emulator starts, and the errors for a conflict or a bad scenario;
// the Azure emulator's HTTPS with a given certificate or a self-signed one.
#include <gtest/gtest.h>

#include "cli/process.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/server/tls_identity.h"

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

TEST_F(CloudEmulatorProvider, AzureServesHttpsWithAGivenOrASelfSignedCertificate) {
  const auto azure = Write("azure.yaml", "provider: azure\nsubscription: sub-1\nlocation: westeurope\n");
  EXPECT_NE(Banner({"--scenario", azure.string(), "--tls-ca-out", (dir_ / "self.pem").string()})
                .find("listening on https://127.0.0.1:"),
            std::string::npos);
  EXPECT_NE(ReadAll(dir_ / "self.pem").find("-----BEGIN CERTIFICATE-----"), std::string::npos);

  // A certificate of our own: what a client trusting it gets is an ARM answer
  // (401: no token), over TLS.
  auto identity = server::MakeSelfSignedTlsIdentity({"localhost"}, {"127.0.0.1"});
  ASSERT_TRUE(identity.ok());
  const auto cert = Write("cert.pem", identity->certificate_pem);
  const auto key = Write("key.pem", identity->private_key_pem);
  ChildProcess p({GPUSCALER_BINARY, "cloud-emulator", "--provider", "azure", "--listen", "127.0.0.1:0", "--port-file",
                  (dir_ / "port").string(), "--tls-cert", cert.string(), "--tls-key", key.string()},
                 dir_ / "out", dir_ / "err");
  const uint16_t port = WaitForPortFile(dir_ / "port", 60s);
  ASSERT_NE(port, 0) << ReadAll(dir_ / "err");
  net::HttpClientOptions o;
  o.ca_pem = identity->certificate_pem;
  auto r = net::Fetch({"GET", "https://127.0.0.1:" + std::to_string(port) +
                                  "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/"
                                  "Microsoft.Compute/virtualMachineScaleSets/x?api-version=2026-04-01",
                       {}, ""},
                      o);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->status, 401);
  EXPECT_NE(r->body.find("AuthenticationFailed"), std::string::npos) << r->body;
  p.Signal(SIGTERM);
  p.Wait(20s);

  ProcessResult half = Gpuscaler({"cloud-emulator", "--provider", "azure", "--tls-cert", cert.string()});
  EXPECT_EQ(half.exit_code, 2);
  EXPECT_NE(half.err.find("--tls-cert and --tls-key go together"), std::string::npos) << half.err;
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
