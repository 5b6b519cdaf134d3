// AwsProvider's reserved capacity against the cloud emulator, in process on
// a ManualClock: ListReservations, launches that fill a reservation before
// falling back, a Capacity Block only inside its window, idempotent
// replays, listing after a restart, and Auto Scaling pools refusing
// reserved offerings.
#include <gtest/gtest.h>

#include <algorithm>

#include "cloud/emulated_aws.h"
#include "gpuscaler/model/reservation.h"

namespace gpuscaler::cloud::provider_reservations {
namespace {

using emulated::Off;
using emulated::Start;

constexpr const char* kOdcr = "cr-0d0000000000000001";
constexpr const char* kBlock = "cr-0b0000000000000002";

constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1s
capacity_reservations:
  - {id: cr-0d0000000000000001, instance_type: g5.xlarge, zone: us-east-1a, count: 2,
     instance_match_criteria: targeted, tags: {team: ml}}
  - {id: cr-0b0000000000000002, instance_type: p5.48xlarge, zone: us-east-1b, count: 2,
     type: capacity-block, start: 1h, end: 3h}
)";

Offering Reserved(std::string type, std::string zone, std::string reservation) {
  Offering o = Off(std::move(type), std::move(zone), CapacityType::kReserved, 1.006);
  o.reservation_id = std::move(reservation);
  return o;
}

class AwsProviderReservations : public ::testing::Test {
 protected:
  AwsProviderReservations() : clock_(Start()) {
    Result<sim::EmulatorScenario> s = sim::ParseEmulatorScenario(kScenario, Start());
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emulator_ = std::make_unique<sim::CloudEmulator>(*s, clock_);
    Restart();
  }
  // A new process: a provider that has launched and listed nothing yet.
  void Restart() {
    aws_ = std::make_unique<emulated::Installation>(*emulator_, clock_, emulated::ProviderOptions("test"));
  }
  static LaunchRequest Request(std::vector<Offering> offerings, int count, std::string token) {
    LaunchRequest r;
    r.pool = "train";
    r.offerings = std::move(offerings);
    r.count = count;
    r.tags = {{kIntentTag, token}};
    r.idempotency_token = std::move(token);
    return r;
  }
  int Actions(const std::string& action) {
    int n = 0;
    for (const sim::EmulatorRequestRecord& r : emulator_->Requests()) n += r.action == action;
    return n;
  }

  ManualClock clock_;
  std::unique_ptr<sim::CloudEmulator> emulator_;
  std::unique_ptr<emulated::Installation> aws_;
};

TEST_F(AwsProviderReservations, ListReservationsMapsWhatEc2Describes) {
  Result<std::vector<Reservation>> listed = aws_->provider.ListReservations();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  const Reservation& block = (*listed)[0];  // sorted by id: cr-0b… first
  EXPECT_EQ(block.id, kBlock);
  EXPECT_EQ(block.kind, ReservationKind::kCapacityBlock);
  EXPECT_EQ(block.instance_type, "p5.48xlarge");
  EXPECT_EQ(block.zone, "us-east-1b");
  EXPECT_EQ(block.region, "us-east-1");
  EXPECT_EQ(block.start, Start() + Seconds(3600));
  ASSERT_TRUE(block.end.has_value());
  EXPECT_EQ(*block.end, Start() + Seconds(3 * 3600));
  EXPECT_FALSE(block.OpenAt(clock_.WallNow()));  // scheduled: listed, not open yet
  const Reservation& odcr = (*listed)[1];
  EXPECT_EQ(odcr.kind, ReservationKind::kDefault);
  EXPECT_EQ(odcr.total_count, 2);
  EXPECT_EQ(odcr.available_count, 2);
  EXPECT_FALSE(odcr.end.has_value());
  EXPECT_EQ(odcr.tags.at("team"), "ml");
  EXPECT_EQ(odcr.usd_per_hour, 0);  // the controller prices it at the on-demand rate

  clock_.AdvanceTo(Start() + Seconds(3 * 3600));
  listed = aws_->provider.ListReservations();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u) << "an expired block takes no launch and is not listed";
  EXPECT_EQ((*listed)[0].id, kOdcr);
}

TEST_F(AwsProviderReservations, FillsTheReservationFirstThenFallsBackToOnDemand) {
  const Offering reserved = Reserved("g5.xlarge", "us-east-1a", kOdcr);
  LaunchRequest r =
      Request({reserved, Off("g5.xlarge", "us-east-1a", CapacityType::kOnDemand, 1.006)}, 3, "d-1/0");
  Result<LaunchResult> got = aws_->provider.Launch(r);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->instances.size(), 3u);
  int on_slots = 0;
  for (const Instance& i : got->instances) {
    if (i.offering.capacity_type != CapacityType::kReserved) continue;
    ++on_slots;
    EXPECT_EQ(i.offering.reservation_id, kOdcr);
  }
  EXPECT_EQ(on_slots, 2);
  ASSERT_EQ(got->errors.size(), 1u);
  EXPECT_EQ(got->errors[0].offering_key, reserved.Key());
  EXPECT_EQ(got->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_EQ(Actions("RunInstances"), 1);
  EXPECT_EQ(Actions("CreateFleet"), 1);

  // What EC2 holds: two instances in the reservation, targeted, tagged.
  int targeted = 0;
  for (const sim::EmulatedInstance& e : emulator_->Instances()) {
    EXPECT_EQ(e.tags.at(kOwnerTag), "train");
    EXPECT_EQ(e.tags.at(kClusterTag), "test");
    if (e.capacity_reservation_id != kOdcr) continue;
    ++targeted;
    EXPECT_EQ(e.capacity_reservation_preference, "capacity-reservations-only");
    EXPECT_FALSE(e.capacity_block);
  }
  EXPECT_EQ(targeted, 2);

  // A replay (same token) returns the same instances and launches none.
  Result<LaunchResult> again = aws_->provider.Launch(r);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->instances.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(again->instances[k].instance_id, got->instances[k].instance_id);
  EXPECT_EQ(emulator_->Instances().size(), 3u);

  // After a restart the listing still says which nodes hold slots.
  Restart();
  Result<std::vector<Instance>> listed = aws_->provider.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 3u);
  int listed_on_slots = 0;
  for (const Instance& i : *listed) {
    if (i.offering.capacity_type == CapacityType::kReserved && i.offering.reservation_id == kOdcr)
      ++listed_on_slots;
  }
  EXPECT_EQ(listed_on_slots, 2);
  Result<std::vector<Reservation>> reservations = aws_->provider.ListReservations();
  ASSERT_TRUE(reservations.ok());
  EXPECT_EQ(reservations->back().available_count, 0);
}

TEST_F(AwsProviderReservations, LaunchesOnACapacityBlockOnlyInsideItsWindow) {
  const Offering block = Reserved("p5.48xlarge", "us-east-1b", kBlock);
  const Offering on_demand = Off("p5.48xlarge", "us-east-1b", CapacityType::kOnDemand, 98.32);
  // Before its start the block refuses (InsufficientInstanceCapacity): the
  // launch moves on. The provider learns the block's kind by describing it.
  Result<LaunchResult> early = aws_->provider.Launch(Request({block, on_demand}, 1, "d-2/0"));
  ASSERT_TRUE(early.ok()) << early.error().ToString();
  ASSERT_EQ(early->instances.size(), 1u);
  EXPECT_EQ(early->instances[0].offering.capacity_type, CapacityType::kOnDemand);
  ASSERT_EQ(early->errors.size(), 1u);
  EXPECT_EQ(early->errors[0].offering_key, block.Key());
  EXPECT_EQ(early->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(early->errors[0].error.message().find("InsufficientInstanceCapacity"), std::string::npos);

  clock_.Advance(Seconds(3600));
  Result<LaunchResult> inside = aws_->provider.Launch(Request({block}, 2, "d-3/0"));
  ASSERT_TRUE(inside.ok()) << inside.error().ToString();
  ASSERT_EQ(inside->instances.size(), 2u);
  EXPECT_TRUE(inside->errors.empty());
  int on_block = 0;
  for (const sim::EmulatedInstance& e : emulator_->Instances()) {
    if (e.capacity_reservation_id != kBlock) continue;
    ++on_block;
    EXPECT_TRUE(e.capacity_block) << "launched without MarketType=capacity-block";
    EXPECT_GE(e.launch_time, Start() + Seconds(3600));
  }
  EXPECT_EQ(on_block, 2);
}

TEST_F(AwsProviderReservations, AnAutoScalingPoolRefusesReservedOfferings) {
  LaunchRequest r = Request({Reserved("g5.xlarge", "us-east-1a", kOdcr)}, 1, "d-4/0");
  r.auto_scaling_group = "gpu-a";
  Result<LaunchResult> got = aws_->provider.Launch(r);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(got.error().message().find("pool 'train'"), std::string::npos) << got.error().message();
  EXPECT_NE(got.error().message().find(kOdcr), std::string::npos);
  EXPECT_EQ(Actions("RunInstances") + Actions("SetDesiredCapacity"), 0);
}

}  // namespace
}  // namespace gpuscaler::cloud::provider_reservations
