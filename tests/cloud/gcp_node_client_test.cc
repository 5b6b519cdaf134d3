// Google's own Node.js client (googleapis + google-auth-library, pinned in
// tests/cloud/gcp_node_client/package-lock.json and installed by
// scripts/setup.sh) against `gpuscaler cloud-emulator --provider gcp`,
// started by the test on a free loopback port: our reading of the Compute
// Engine API, the Cloud Billing Catalog (services.skus.list) and the OAuth
// JWT-bearer flow is checked by code we did not
// write. The test makes a fresh RSA service-account key (OpenSSL) whose
// token_uri is the emulator's /token, a second key the emulator does not
// know, runs client.js and checks each step's answer.
//
// reservations.js reads and consumes Compute Engine reservations with it;
// warm.js stops, starts, suspends and resumes managed instance group members.
//
// Skipped when `node` is not on PATH or the packages are not installed,
// except under CI=true where that fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli/process.h"
#include "cloud/gcp_node_client.h"
#include "cloud/gcp_test_key.h"

namespace gpuscaler::testing {
namespace {

using cloud::testing::TestRsaKey;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kEmail = "gpuscaler@gpuscaler-test.iam.gserviceaccount.com";

std::string Indent(const std::string& text, const std::string& pad) {
  std::string out;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) out += pad + line + "\n";
  return out;
}

class GcpNodeClient : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    node_ = FindOnPath("node");
    const bool ci = std::getenv("CI") != nullptr && std::string(std::getenv("CI")) == "true";
    if (node_.empty()) {
      if (ci) FAIL() << "node is not on PATH (CI=true): scripts/setup.sh installs it";
      GTEST_SKIP() << "node is not on PATH";
    }
    if (!std::filesystem::exists(NodeModules() / "googleapis" / "package.json")) {
      if (ci)
        FAIL() << "googleapis is not installed in " << NodeModules() << " (CI=true): run scripts/setup.sh";
      GTEST_SKIP() << "googleapis is not installed in " << NodeModules() << ": run scripts/setup.sh";
    }
  }
  void TearDown() override {
    if (emulator_) {
      emulator_->Signal(SIGTERM);
      emulator_->Wait(20s);
    }
    CliTest::TearDown();
  }

  void StartEmulator(const std::string& scenario) {
    const auto path = Write("scenario.yaml", scenario);
    emulator_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{GPUSCALER_BINARY, "cloud-emulator", "--provider", "gcp", "--listen",
                                 "127.0.0.1:0", "--scenario", path.string(), "--port-file",
                                 (dir_ / "emulator.port").string()},
        dir_ / "emulator.out", dir_ / "emulator.err");
    port_ = WaitForPortFile(dir_ / "emulator.port", 60s);
    ASSERT_NE(port_, 0) << "the emulator did not start: " << ReadAll(dir_ / "emulator.err");
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // A service-account key file as the IAM console writes it.
  std::filesystem::path KeyFile(const std::string& name, const TestRsaKey& key) {
    json k = {{"type", "service_account"},
              {"project_id", "gpuscaler-test"},
              {"private_key_id", "0123456789abcdef"},
              {"private_key", key.PrivatePem()},
              {"client_email", kEmail},
              {"client_id", "100000000000000000001"},
              {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
              {"token_uri", Url() + "/token"}};
    return Write(name, k.dump(2));
  }

  json RunClient(const std::filesystem::path& key, const std::filesystem::path& stranger) {
    const std::string script = std::string(GPUSCALER_SOURCE_DIR) + "/tests/cloud/gcp_node_client/client.js";
    const std::string cmd = "NODE_PATH=" + ShellQuote(NodeModules().string()) + " " + ShellQuote(node_) +
                            " " + ShellQuote(script) + " " + ShellQuote(Url()) + " " +
                            ShellQuote(key.string()) + " " + ShellQuote(stranger.string()) + " >" +
                            ShellQuote((dir_ / "client.out").string()) + " 2>" +
                            ShellQuote((dir_ / "client.err").string());
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    EXPECT_EQ(code, 0) << ReadAll(dir_ / "client.err");
    json out = json::parse(ReadAll(dir_ / "client.out"), nullptr, false);
    EXPECT_TRUE(out.is_object()) << ReadAll(dir_ / "client.out") << ReadAll(dir_ / "client.err");
    return out.is_object() ? out : json::object();
  }

  std::string node_;
  std::unique_ptr<ChildProcess> emulator_;
  uint16_t port_ = 0;
};

TEST_F(GcpNodeClient, GoogleapisDrivesTheEmulatorThroughTheJwtTokenFlow) {
  TestRsaKey key, stranger;
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "provider: gcp\nproject: gpuscaler-test\nzones: [us-central1-a, us-central1-b, us-central1-c]\n"
      "operation_latency: 1s\nboot_latency: 1s\ndelete_latency: 1s\n"
      "service_accounts:\n  - email: " +
      std::string(kEmail) + "\n    public_key: |\n" + Indent(key.PublicPem(), "      ") +
      "managed_instance_groups:\n"
      "  - {name: l4-pool, zone: us-central1-a, machine_type: g2-standard-8, provisioning_model: SPOT,\n"
      "     termination_action: DELETE, labels: {gpuscaler-cluster: prod, gpuscaler-pool: l4}}\n"
      "capacity:\n"
      "  - {machine_type: a3-highgpu-8g, zone: us-central1-c, limit: 0}\n"
      "  - {machine_type: g2-standard-8, zone: us-central1-a, limit: 1}\n"
      "  - {machine_type: a2-highgpu-8g, zone: us-central1-a, limit: 2}\n"
      "preemptions:\n  - {at: 0s, machine_type: g2-standard-4, count: 1, notice: 30s}\n"
      "billing_catalog:\n  skus:\n"
      "    - {sku_id: AAAA-0000-0001, description: Spot Preemptible G2 Instance Core running in Americas,\n"
      "       resource_group: CPU, regions: [us-central1, us-east1], usd: 0.01, from: -2h}\n"
      "    - {sku_id: AAAA-0000-0002, description: Spot Preemptible G2 Instance Ram running in Americas,\n"
      "       resource_group: RAM, regions: [us-central1, us-east1], unit: GiBy.h, usd: 0.001, from: -2h}\n"
      "    - {sku_id: AAAA-0000-0003, description: Nvidia L4 GPU attached to Spot Preemptible VMs running in "
      "Americas,\n"
      "       resource_group: GPU, regions: [us-central1, us-east1], usd: 1.25, from: -2h}\n"));
  const json out = RunClient(KeyFile("key.json", key), KeyFile("stranger.json", stranger));
  SCOPED_TRACE(out.dump(2));

  // The token flow: a signed JWT for the registered key gets a Bearer token;
  // the same email with another key is refused as Google refuses it.
  EXPECT_EQ(out["token"]["token_prefix"], "ya29.");
  EXPECT_EQ(out["stranger_token"]["error"]["oauth"], "invalid_grant");
  EXPECT_EQ(out["unauthenticated"]["error"]["code"], 401);

  // MIG createInstances: an operation the client reads with get and wait;
  // the second member finds no capacity (limit 1) and says so.
  EXPECT_EQ(out["mig_create"]["operationType"], "compute.instanceGroupManagers.createInstances");
  EXPECT_EQ(out["mig_create"]["done_status"], "DONE");
  EXPECT_TRUE(out["mig_create"]["error"].is_null());
  const json& members = out["list_managed"]["members"];
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0]["name"], "node-a");
  EXPECT_EQ(members[1]["name"], "node-b");
  EXPECT_EQ(members[1]["currentAction"], "CREATING");
  EXPECT_EQ(members[1]["errors"], json::array({"ZONE_RESOURCE_POOL_EXHAUSTED"}));
  EXPECT_EQ(out["list_managed"]["targetSize"], 2);

  // bulkInsert with a requestId, twice: one operation, two Spot VMs.
  EXPECT_EQ(out["bulk_insert"]["same_operation"], true);
  EXPECT_EQ(out["bulk_insert"]["created"], 2);
  EXPECT_EQ(out["bulk_insert"]["labels"]["gpuscaler-pool"], "bare");
  EXPECT_EQ(out["bulk_insert"]["scheduling"]["provisioningModel"], "SPOT");
  EXPECT_EQ(out["bulk_insert"]["scheduling"]["instanceTerminationAction"], "DELETE");

  EXPECT_EQ(out["capacity"]["status"], "DONE");
  EXPECT_EQ(out["capacity"]["codes"], json::array({"ZONE_RESOURCE_POOL_EXHAUSTED"}));

  // A compact placement resource policy, made through a regional operation;
  // its name is taken once.
  const json& policy = out["placement_policy"];
  EXPECT_NE(policy["operation_region"].get<std::string>().find("/regions/us-central1"), std::string::npos);
  EXPECT_EQ(policy["done_status"], "DONE");
  EXPECT_TRUE(policy["error"].is_null());
  EXPECT_EQ(policy["name"], "train-gangs");
  EXPECT_EQ(policy["collocation"], "COLLOCATED");
  EXPECT_EQ(policy["policy_status"], "READY");
  EXPECT_EQ(policy["duplicate_code"], 409);
  EXPECT_EQ(policy["unknown_code"], 404);

  // bulkInsert minCount: 3 of 3 where 2 fit creates none and says why; 2 of
  // 2 creates both, and they show the placement policy.
  const json& gang = out["min_count"];
  EXPECT_EQ(gang["short_codes"], json::array({"ZONE_RESOURCE_POOL_EXHAUSTED"}));
  EXPECT_EQ(gang["short_created"], 0);
  EXPECT_EQ(gang["short_get"], 404);
  EXPECT_TRUE(gang["fit_error"].is_null());
  EXPECT_EQ(gang["fit_created"], 2);
  ASSERT_EQ(gang["member_policies"].size(), 1u) << gang.dump();
  EXPECT_NE(gang["member_policies"][0].get<std::string>().find(
                "/projects/gpuscaler-test/regions/us-central1/resourcePolicies/train-gangs"),
            std::string::npos);

  // aggregatedList by label, one per page: the MIG's VM and the two bare ones.
  EXPECT_EQ(out["aggregated_list"]["names"], json::array({"bare-0001", "bare-0002", "node-a"}));
  EXPECT_GE(out["aggregated_list"]["pages"], 3);

  EXPECT_EQ(out["mig_delete"]["operationType"], "compute.instanceGroupManagers.deleteInstances");
  EXPECT_EQ(out["mig_delete"]["targetSize"], 1);
  EXPECT_EQ(out["delete"]["operationType"], "delete");
  EXPECT_EQ(out["delete"]["done_status"], "DONE");
  EXPECT_EQ(out["delete"]["get_after"], 404);

  // services.skus.list of the Cloud Billing Catalog, one SKU per page.
  const json& billing = out["billing_skus"];
  ASSERT_TRUE(billing.contains("skus")) << billing.dump();
  ASSERT_EQ(billing["skus"].size(), 3u);
  EXPECT_EQ(billing["pages"], 3);
  const json& gpu = billing["skus"][2];
  EXPECT_EQ(gpu["skuId"], "AAAA-0000-0003");
  EXPECT_EQ(gpu["description"], "Nvidia L4 GPU attached to Spot Preemptible VMs running in Americas");
  EXPECT_EQ(gpu["usageType"], "Preemptible");
  EXPECT_EQ(gpu["resourceGroup"], "GPU");
  EXPECT_EQ(gpu["serviceRegions"], json::array({"us-central1", "us-east1"}));
  EXPECT_EQ(gpu["usageUnit"], "h");
  EXPECT_EQ(gpu["units"], "1");
  EXPECT_EQ(gpu["nanos"], 250000000);
  EXPECT_EQ(gpu["currencyCode"], "USD");
  EXPECT_EQ(billing["skus"][1]["usageUnit"], "GiBy.h");
  EXPECT_FALSE(gpu["effectiveTime"].get<std::string>().empty());

  EXPECT_EQ(out["preempted"]["count"], 1);
  EXPECT_EQ(out["preempted"]["status"], "DONE");
  EXPECT_NE(out["preempted"]["targetLink"].get<std::string>().find("/zones/us-central1-b/instances/victim-"),
            std::string::npos);
}

// A reservation of two g2-standard-8 in us-central1-a, and a group whose
// template targets it: googleapis reads the Reservation and the template's
// reservationAffinity, fills the reservation with bulkInsert and sees the
// third instance and the group's member refused as Compute Engine refuses
// them.
TEST_F(GcpNodeClient, GoogleapisReadsAndConsumesReservations) {
  TestRsaKey key;
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "provider: gcp\nproject: gpuscaler-test\nzones: [us-central1-a, us-central1-b]\n"
      "operation_latency: 1s\nboot_latency: 1s\n"
      "service_accounts:\n  - email: " +
      std::string(kEmail) + "\n    public_key: |\n" + Indent(key.PublicPem(), "      ") +
      "reservations:\n"
      "  - {name: l4-rsv, zone: us-central1-a, machine_type: g2-standard-8, count: 2}\n"
      "  - {name: h100-b, zone: us-central1-b, machine_type: a3-highgpu-8g, count: 4}\n"
      "managed_instance_groups:\n"
      "  - {name: l4-rsv-group, zone: us-central1-a, machine_type: g2-standard-8, instance_template: l4-rsv-tmpl,\n"
      "     reservation_affinity: {type: SPECIFIC_RESERVATION, reservation: l4-rsv}}\n"));
  const NodeRun run = RunNodeScript(dir_, "reservations.js", {Url(), KeyFile("key.json", key).string(), "emulator"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& out = run.out;
  SCOPED_TRACE(out.dump(2));

  const json& got = out["get"];
  EXPECT_EQ(got["kind"], "compute#reservation");
  EXPECT_EQ(got["name"], "l4-rsv");
  EXPECT_EQ(got["status"], "READY");
  EXPECT_EQ(got["specificReservationRequired"], true);
  EXPECT_EQ(got["count"], "2");
  EXPECT_EQ(got["inUseCount"], "0");
  EXPECT_EQ(got["machineType"], "g2-standard-8");
  EXPECT_EQ(got["zone"], "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a");
  EXPECT_EQ(out["list"]["kind"], "compute#reservationList");
  EXPECT_EQ(out["list"]["names"], json::array({"l4-rsv"}));
  EXPECT_EQ(out["aggregated"]["names"], json::array({"zones/us-central1-a/l4-rsv", "zones/us-central1-b/h100-b"}));
  EXPECT_EQ(out["aggregated"]["pages"], 2);

  // Three asked for at once, two slots: refused with Compute Engine's error;
  // two fit.
  const json& consume = out["consume"];
  EXPECT_EQ(consume["refused_created"], 0);
  EXPECT_EQ(consume["created"], 2);
  ASSERT_EQ(consume["errors"].size(), 1u);
  EXPECT_EQ(consume["errors"][0]["code"], "CONDITION_NOT_MET");
  EXPECT_EQ(consume["errors"][0]["message"],
            "Specified reservation 'l4-rsv' does not have available resources for the request.");
  EXPECT_EQ(consume["inUseCount"], "2");
  const json specific = {{"consumeReservationType", "SPECIFIC_RESERVATION"},
                         {"key", "compute.googleapis.com/reservation-name"},
                         {"values", {"l4-rsv"}}};
  EXPECT_EQ(consume["reservationAffinity"], specific);

  EXPECT_EQ(out["template"]["name"], "l4-rsv-tmpl");
  EXPECT_EQ(out["template"]["reservationAffinity"], specific);
  EXPECT_EQ(out["group_full"]["name"], "grp-1");
  EXPECT_EQ(out["group_full"]["currentAction"], "CREATING");
  ASSERT_EQ(out["group_full"]["errors"].size(), 1u);
  EXPECT_EQ(out["group_full"]["errors"][0]["code"], "CONDITION_NOT_MET");
}

// Two groups, of L4 VMs and of VMs without GPUs: googleapis stops and
// starts a member of one, suspends and resumes a member of the other, and
// reads each state on the way, the groups' stopped and suspended target
// sizes, and the calls Compute Engine refuses (suspending a VM with GPUs, a
// stranger to the group).
TEST_F(GcpNodeClient, GoogleapisStopsStartsSuspendsAndResumesGroupMembers) {
  TestRsaKey key;
  ASSERT_NO_FATAL_FAILURE(StartEmulator(
      "provider: gcp\nproject: gpuscaler-test\nzones: [us-central1-a]\n"
      "operation_latency: 1s\nboot_latency: 1s\nstop_latency: 2s\nstart_latency: 3s\n"
      "service_accounts:\n  - email: " +
      std::string(kEmail) + "\n    public_key: |\n" + Indent(key.PublicPem(), "      ") +
      "managed_instance_groups:\n"
      "  - {name: l4-pool, zone: us-central1-a, machine_type: g2-standard-8}\n"
      "  - {name: cpu-pool, zone: us-central1-a, machine_type: n2-standard-8}\n"));
  const NodeRun run = RunNodeScript(dir_, "warm.js", {Url(), KeyFile("key.json", key).string()});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  const json& out = run.out;
  SCOPED_TRACE(out.dump(2));
  auto seen = [&](const char* step, const std::string& pair) {
    const json& s = out[step]["seen"];
    return s.is_array() && std::find(s.begin(), s.end(), pair) != s.end();
  };
  auto last = [&](const char* step) {
    const json& s = out[step]["seen"];
    return s.is_array() && !s.empty() ? s.back().get<std::string>() : std::string("(none)");
  };
  ASSERT_TRUE(out["create"]["l4"].is_array()) << "creating the members failed";
  EXPECT_EQ(out["create"]["l4"].back(), "NONE/RUNNING");
  EXPECT_EQ(out["create"]["cpu"].back(), "NONE/RUNNING");

  EXPECT_EQ(out["stop"]["operationType"], "compute.instanceGroupManagers.stopInstances");
  EXPECT_EQ(out["stop"]["done_status"], "DONE");
  EXPECT_TRUE(out["stop"]["error"].is_null());
  EXPECT_EQ(out["stop"]["group"], json({{"targetSize", 0}, {"targetStoppedSize", 1}, {"targetSuspendedSize", 0}}));
  EXPECT_TRUE(seen("stop", "STOPPING/STOPPING"));
  EXPECT_EQ(last("stop"), "NONE/TERMINATED");
  EXPECT_EQ(out["stop"]["status"], "TERMINATED");
  EXPECT_TRUE(out["stop"]["lastStopTimestamp"].is_string());

  EXPECT_EQ(out["start"]["operationType"], "compute.instanceGroupManagers.startInstances");
  EXPECT_EQ(out["start"]["group"], json({{"targetSize", 1}, {"targetStoppedSize", 0}, {"targetSuspendedSize", 0}}));
  EXPECT_TRUE(seen("start", "STARTING/STAGING") || seen("start", "STARTING/PROVISIONING"));
  EXPECT_EQ(last("start"), "NONE/RUNNING");
  EXPECT_EQ(out["start"]["id"], out["create"]["id"]) << "the same VM";

  EXPECT_EQ(out["suspend"]["operationType"], "compute.instanceGroupManagers.suspendInstances");
  EXPECT_TRUE(seen("suspend", "SUSPENDING/SUSPENDING"));
  EXPECT_EQ(last("suspend"), "NONE/SUSPENDED");
  EXPECT_EQ(out["suspend"]["status"], "SUSPENDED");
  EXPECT_EQ(out["suspend"]["group"], json({{"targetSize", 0}, {"targetStoppedSize", 0}, {"targetSuspendedSize", 1}}));

  EXPECT_EQ(out["resume"]["operationType"], "compute.instanceGroupManagers.resumeInstances");
  EXPECT_TRUE(seen("resume", "RESUMING/STAGING") || seen("resume", "RESUMING/PROVISIONING"));
  EXPECT_EQ(last("resume"), "NONE/RUNNING");
  EXPECT_EQ(out["resume"]["group"], json({{"targetSize", 1}, {"targetStoppedSize", 0}, {"targetSuspendedSize", 0}}));

  EXPECT_EQ(out["suspend_gpu"]["error"]["code"], 400);
  EXPECT_EQ(out["suspend_gpu"]["error"]["reason"], "unsupportedOperation");
  EXPECT_EQ(out["stop_stranger"]["error"]["code"], 400);
  EXPECT_EQ(out["stop_stranger"]["error"]["reason"], "invalid");
}

}  // namespace
}  // namespace gpuscaler::testing
