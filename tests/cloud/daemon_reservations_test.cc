// The daemon binary (provider aws) against `gpuscaler cloud-emulator` with
// capacity reservations, read back with the real `aws` CLI:
//  - a pool selecting a targeted ODCR of 2 slots, with demand for 4 nodes:
//    the reservation is filled (the instances' CapacityReservationId), the
//    other 2 nodes are on-demand, and no more;
//  - a pool selecting a Capacity Block (on-demand capacity of the type is 0):
//    nothing is launched on the block before its start, and its nodes come
//    up once it has started. (The early take-back 30 minutes before a
//    block's end is the emulator's, tested in emulator_reservations_test.cc:
//    the planner puts work on a block only when it ends well before that.)
#include <gtest/gtest.h>

#include "cloud/aws_cli_harness.h"
#include "cloud/daemon_harness.h"
#include "gpuscaler/cloud/aws_query.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;
constexpr const char* kOdcr = "cr-0d0000000000000001";
constexpr const char* kBlock = "cr-0b0000000000000002";

// A live or ended instance as the aws CLI shows it.
struct CliInstance {
  std::string id;
  std::string state;
  std::string reservation;  // CapacityReservationId, "" none
  WallTime launch{};
};

class DaemonReservations : public AwsCliTest {
 protected:
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      daemon_->Wait(60s);
    }
    AwsCliTest::TearDown();
  }

  // The pool of PolicyYaml (g5.xlarge, on-demand) selecting `reservation`.
  static std::string Policy(const std::string& reservation) {
    std::string policy = PolicyYaml("[on-demand]", false);
    const std::string anchor = "    max_nodes: 20\n";
    policy.replace(policy.find(anchor), anchor.size(), anchor + "    reservations: [" + reservation + "]\n");
    return policy;
  }

  void Start(const std::string& policy, const QueueDepthServer& prometheus) {
    std::ofstream(dir_ / "policy.yaml") << policy;
    std::ofstream(dir_ / "gpuscaler.yaml") << DaemonConfigYaml(emulator_->url(), prometheus.url());
    daemon_ = StartDaemon(dir_, kTickMs, "", 1);
    ASSERT_FALSE(WaitUntilServing(*daemon_, dir_).has_value()) << ReadAll(dir_ / "daemon1.err");
  }

  std::vector<CliInstance> Instances() {
    std::vector<CliInstance> out;
    Run r = Aws({"ec2", "describe-instances"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const json& res : r.out.value("Reservations", json::array())) {
      for (const json& i : res.value("Instances", json::array())) {
        CliInstance c;
        c.id = i.value("InstanceId", "");
        c.state = i["State"].value("Name", "");
        c.reservation = i.value("CapacityReservationId", "");
        EXPECT_TRUE(cloud::ParseAwsTime(i.value("LaunchTime", ""), &c.launch)) << i.dump();
        out.push_back(c);
      }
    }
    return out;
  }
  static bool Live(const CliInstance& i) { return i.state == "pending" || i.state == "running"; }

  json Reservation(const std::string& id) {
    Run r = Aws({"ec2", "describe-capacity-reservations", "--capacity-reservation-ids", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out["CapacityReservations"].empty() ? json::object() : r.out["CapacityReservations"][0];
  }

  // When the emulator answered each `action` request (second precision).
  std::vector<WallTime> RequestTimes(const std::string& action) {
    std::vector<WallTime> out;
    for (const json& r : emulator_->Requests()) {
      if (r["action"] != action) continue;
      WallTime t;
      if (ParseRfc3339(r["time"].get<std::string>(), &t)) out.push_back(t);
    }
    return out;
  }

  std::unique_ptr<ChildProcess> daemon_;
};

class TargetedReservation : public DaemonReservations {
 protected:
  std::string Scenario() const override {
    return "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
           "capacity_reservations:\n"
           "  - {id: cr-0d0000000000000001, instance_type: g5.xlarge, zone: us-east-1a, count: 2,\n"
           "     instance_match_criteria: targeted}\n";
  }
};

TEST_F(TargetedReservation, IsFilledFirstAndTheRestRunsOnDemand) {
  QueueDepthServer demand(20);  // 4 one-GPU nodes
  Start(Policy(kOdcr), demand);
  auto live = [&] {
    std::vector<CliInstance> out;
    for (const CliInstance& i : Instances()) {
      if (Live(i)) out.push_back(i);
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return live().size() >= 4; }, 60s)) << ReadAll(dir_ / "daemon1.err");
  // Settled: ten more ticks launch nothing more.
  ASSERT_TRUE(WaitForMoreDaemonTicks(dir_, 10)) << ReadAll(dir_ / "daemon1.err");
  const std::vector<CliInstance> now = live();
  ASSERT_EQ(now.size(), 4u);
  int on_slots = 0;
  for (const CliInstance& i : now) on_slots += i.reservation == kOdcr ? 1 : 0;
  EXPECT_EQ(on_slots, 2) << "both slots used, the other nodes on plain on-demand";
  for (const CliInstance& i : now) {
    EXPECT_TRUE(i.reservation.empty() || i.reservation == kOdcr) << i.id << " in " << i.reservation;
  }
  EXPECT_EQ(Reservation(kOdcr)["AvailableInstanceCount"], 0);
  // The slots were bought through the reservation (RunInstances), not by
  // chance: on-demand fleets land in no targeted reservation.
  EXPECT_FALSE(RequestTimes("RunInstances").empty());
  EXPECT_FALSE(RequestTimes("CreateFleet").empty());
}

class CapacityBlock : public DaemonReservations {
 protected:
  // The block opens 15 s after the emulator starts and lasts 6 hours. No
  // on-demand g5.xlarge capacity, so the block is the only way to get a node.
  std::string Scenario() const override {
    return "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\n"
           "capacity:\n  - {instance_type: g5.xlarge, capacity_type: on-demand, limit: 0}\n"
           "capacity_reservations:\n"
           "  - {id: cr-0b0000000000000002, instance_type: g5.xlarge, zone: us-east-1a, count: 2,\n"
           "     type: capacity-block, start: 15s, end: 6h}\n";
  }
};

TEST_F(CapacityBlock, IsLaunchedOnOnlyFromItsStart) {
  const json block = Reservation(kBlock);
  WallTime start;
  ASSERT_TRUE(cloud::ParseAwsTime(block.value("StartDate", ""), &start)) << block.dump();
  EXPECT_EQ(block["State"], "scheduled");
  QueueDepthServer demand(10);  // 2 nodes
  Start(Policy(kBlock), demand);
  ASSERT_LT(std::chrono::system_clock::now(), start)
      << "the daemon started too late to see the block's start";

  auto on_block = [&] {
    int n = 0;
    for (const CliInstance& i : Instances()) n += Live(i) && i.reservation == kBlock ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(Eventually([&] { return on_block() == 2; }, 60s)) << ReadAll(dir_ / "daemon1.err");
  for (const CliInstance& i : Instances()) {
    EXPECT_EQ(i.reservation, kBlock) << i.id << ": no node but on the block (no on-demand capacity)";
    EXPECT_GE(i.launch, start) << i.id << " launched before the block's start";
  }
  // The daemon read reservations before the start, and sent no launch into
  // the block until then.
  const std::vector<WallTime> reads = RequestTimes("DescribeCapacityReservations");
  EXPECT_TRUE(std::any_of(reads.begin(), reads.end(), [&](WallTime t) { return t < start; }));
  for (WallTime t : RequestTimes("RunInstances"))
    EXPECT_GE(t, start) << "a launch on the block before its start";

  EXPECT_EQ(Reservation(kBlock)["State"], "active");
  EXPECT_EQ(Reservation(kBlock)["AvailableInstanceCount"], 0);
}

}  // namespace
}  // namespace gpuscaler::testing
