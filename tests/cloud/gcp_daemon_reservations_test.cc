// The daemon binary (provider gcp) with a pool that selects a Compute Engine
// specific reservation, against `gpuscaler cloud-emulator --provider gcp`:
// demand beyond the reservation fills its two slots first (bulkInsert with
// reservationAffinity SPECIFIC_RESERVATION) and buys the rest on-demand.
// The emulator's state says which instance holds a slot; the reservation
// and the instances' affinity are read back over HTTP, and with Google's
// Node.js client where it is installed (reservations.js readback).
#include <gtest/gtest.h>

#include "cloud/gcp_daemon_harness.h"
#include "cloud/gcp_node_client.h"

namespace gpuscaler::testing {
namespace {

constexpr int kRsvTickMs = 200;

class GcpDaemonReservations : public CliTest {
 protected:
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      daemon_->Wait(60s);
    }
    emulator_.reset();
    CliTest::TearDown();
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }
  // Live instances of the cluster: name -> the reservation it holds ("" none).
  std::map<std::string, std::string> LiveHolding() {
    std::map<std::string, std::string> out;
    std::optional<nlohmann::json> state = emulator_->State();
    if (!state) return out;
    for (const nlohmann::json& i : (*state)["instances"]) {
      const std::string status = i.value("status", "");
      if (i.value("deleted", false) || status == "STOPPING" || status == "TERMINATED") continue;
      out[i.value("name", "")] = i.value("reservation", "");
    }
    return out;
  }
  nlohmann::json Get(const std::string& path) {
    net::HttpRequest r;
    r.url = emulator_->compute_endpoint() + "projects/" + kGcpProject + "/" + path;
    r.headers = {{"Authorization", std::string("Bearer ") + kGcpTestToken}};
    Result<net::HttpResponse> a = net::Fetch(r);
    if (!a || a->status != 200) return nullptr;
    return nlohmann::json::parse(a->body, nullptr, false);
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<GcpEmulatorProcess> emulator_;
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(GcpDaemonReservations, APoolFillsItsReservationFirstThenBuysOnDemand) {
  emulator_ = std::make_unique<GcpEmulatorProcess>(
      dir_,
      "zones: [us-central1-a, us-central1-b]\noperation_latency: 1s\nboot_latency: 1s\ndelete_latency: 1s\n"
      "reservations:\n  - {name: l4-rsv, zone: us-central1-a, machine_type: g2-standard-8, count: 2}\n");
  ASSERT_TRUE(emulator_->ok()) << emulator_->log();
  emulator_->set_audit_db((dir_ / "audit.db").string());
  std::string policy = GcpPolicyYaml("[on-demand]", false);
  const std::string anchor = "    max_nodes: 20\n";
  policy.replace(policy.find(anchor), anchor.size(), anchor + "    reservations: [l4-rsv]\n");
  Write("policy.yaml", policy);
  Write("gpuscaler.yaml", GcpDaemonConfigYaml(*emulator_, prometheus_.url(), kGcpBarePools));
  daemon_ = StartGcpDaemon(dir_, *emulator_, kRsvTickMs, "", 1);
  ASSERT_TRUE(daemon_->started());

  prometheus_.Set(20);  // 4 GPUs: two reserved slots and two on-demand nodes
  ASSERT_TRUE(Eventually([&] { return LiveHolding().size() == 4; }, 90s)) << DaemonLog() << emulator_->log();
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 5)) << DaemonLog();
  const std::map<std::string, std::string> holding = LiveHolding();
  ASSERT_EQ(holding.size(), 4u) << DaemonLog();
  int reserved = 0;
  for (const auto& [name, reservation] : holding) {
    reserved += reservation == "l4-rsv";
    EXPECT_TRUE(reservation.empty() || reservation == "l4-rsv") << name << ": " << reservation;
  }
  EXPECT_EQ(reserved, 2) << "both slots taken, the rest on-demand";

  const nlohmann::json r = Get("zones/us-central1-a/reservations/l4-rsv");
  ASSERT_TRUE(r.is_object());
  EXPECT_EQ(r["specificReservation"]["inUseCount"], "2");

  const nlohmann::json specific = {{"consumeReservationType", "SPECIFIC_RESERVATION"},
                                   {"key", "compute.googleapis.com/reservation-name"},
                                   {"values", {"l4-rsv"}}};
  for (const auto& [name, reservation] : holding) {
    if (reservation.empty()) continue;
    const nlohmann::json inst = Get("zones/us-central1-a/instances/" + name);
    ASSERT_TRUE(inst.is_object()) << name;
    EXPECT_EQ(inst["reservationAffinity"], specific) << name;
    EXPECT_EQ(inst["scheduling"]["provisioningModel"], "STANDARD") << name;
  }

  // Google's own client sees the same.
  const std::string missing = NodeClientMissing();
  if (!missing.empty()) {
    if (RequireNodeClientUnderCi()) FAIL() << missing << " (CI=true)";
    GTEST_SKIP() << "googleapis readback skipped: " << missing;
  }
  const NodeRun run = RunNodeScript(
      dir_, "reservations.js",
      {emulator_->url(), emulator_->key_file().string(), "readback", "us-central1-a", "l4-rsv"});
  ASSERT_EQ(run.exit_code, 0) << run.stderr_text;
  SCOPED_TRACE(run.out.dump(2));
  EXPECT_EQ(run.out["reservation"]["inUseCount"], "2");
  EXPECT_EQ(run.out["reservation"]["count"], "2");
  int targeting = 0;
  for (const nlohmann::json& i : run.out["instances"]) {
    if (i["status"] == "STOPPING" || i["status"] == "TERMINATED") continue;
    if (i["reservationAffinity"] == specific) {
      ++targeting;
      EXPECT_EQ(i["zone"], "us-central1-a");
    } else {
      EXPECT_EQ(i["reservationAffinity"]["consumeReservationType"], "ANY_RESERVATION") << i.dump();
    }
  }
  EXPECT_EQ(targeting, 2);
}

}  // namespace
}  // namespace gpuscaler::testing
