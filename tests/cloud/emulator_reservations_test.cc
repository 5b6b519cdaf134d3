// The emulator's capacity reservations, driven with our signed client in
// process on a ManualClock: the scenario keys, DescribeCapacityReservations,
// slots taken by RunInstances and CreateFleet and given back at
// termination, open ODCRs, and a Capacity Block's window and early end.
#include <gtest/gtest.h>

#include <algorithm>

#include "cloud/emulated_aws.h"
#include "gpuscaler/cloud/capacity_reservation_api.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/model/reservation.h"

namespace gpuscaler::cloud::emulator_reservations {
namespace {

using emulated::Start;

constexpr const char* kOdcr = "cr-0d0000000000000001";   // targeted, g5.xlarge in 1a, 2 slots
constexpr const char* kBlock = "cr-0b0000000000000002";  // p5.48xlarge in 1b, 2 slots, 1h..3h
constexpr const char* kOpen = "cr-0e0000000000000003";   // open, g5.xlarge in 1b, 1 slot

constexpr const char* kScenario = R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1s
terminate_latency: 10s
capacity_reservations:
  - {id: cr-0d0000000000000001, instance_type: g5.xlarge, zone: us-east-1a, count: 2,
     instance_match_criteria: targeted, tags: {team: ml}}
  - {id: cr-0b0000000000000002, instance_type: p5.48xlarge, zone: us-east-1b, count: 2,
     type: capacity-block, start: 1h, end: 3h, tags: {team: llm}}
  - {id: cr-0e0000000000000003, instance_type: g5.xlarge, zone: us-east-1b, count: 1}
)";

class EmulatorReservations : public ::testing::Test {
 protected:
  EmulatorReservations() : clock_(Start()) {
    Result<sim::EmulatorScenario> s = sim::ParseEmulatorScenario(kScenario, Start());
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emulator_ = std::make_unique<sim::CloudEmulator>(*s, clock_);
    aws_ = std::make_unique<emulated::Installation>(*emulator_, clock_, emulated::ProviderOptions("test"));
  }

  std::vector<CapacityReservationInfo> Describe(DescribeCapacityReservationsRequest r = {}) {
    Result<std::string> body = aws_->client.Query("ec2", DescribeCapacityReservationsQuery(r));
    EXPECT_TRUE(body.ok()) << body.error().ToString();
    if (!body.ok()) return {};
    Result<CapacityReservationsPage> page = ParseDescribeCapacityReservations(*body);
    EXPECT_TRUE(page.ok()) << page.error().ToString();
    return page.ok() ? page->reservations : std::vector<CapacityReservationInfo>{};
  }
  CapacityReservationInfo One(const std::string& id) {
    DescribeCapacityReservationsRequest r;
    r.ids = {id};
    std::vector<CapacityReservationInfo> all = Describe(r);
    EXPECT_EQ(all.size(), 1u);
    return all.empty() ? CapacityReservationInfo{} : all[0];
  }

  static RunInstancesRequest Into(const std::string& reservation, std::string type, std::string zone,
                                  int max) {
    RunInstancesRequest r;
    r.launch_template.name = "gpu-nodes";
    r.instance_type = std::move(type);
    r.availability_zone = std::move(zone);
    r.max_count = max;
    r.capacity_reservation_preference = kReservationsOnly;
    r.capacity_reservation_id = reservation;
    return r;
  }
  Result<std::vector<Ec2Instance>> Run(const RunInstancesRequest& r) {
    Result<std::string> body = aws_->client.Query("ec2", RunInstancesQuery(r));
    if (!body.ok()) return body.error();
    return ParseRunInstances(*body);
  }
  std::vector<Ec2Instance> Instances() {
    Result<std::string> body = aws_->client.Query("ec2", DescribeInstancesQuery({}));
    EXPECT_TRUE(body.ok());
    Result<DescribeInstancesPage> page =
        body.ok() ? ParseDescribeInstances(*body) : Result<DescribeInstancesPage>(body.error());
    return page.ok() ? page->instances : std::vector<Ec2Instance>{};
  }

  ManualClock clock_;
  std::unique_ptr<sim::CloudEmulator> emulator_;
  std::unique_ptr<emulated::Installation> aws_;
};

TEST(EmulatorReservationScenario, DeclaresReservationsAndRefusesBadOnes) {
  Result<sim::EmulatorScenario> s = sim::ParseEmulatorScenario(kScenario, Start());
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  ASSERT_EQ(s->capacity_reservations.size(), 3u);
  const sim::ScriptedCapacityReservation& block = s->capacity_reservations[1];
  EXPECT_EQ(block.type, "capacity-block");
  EXPECT_EQ(block.match, "targeted");  // a block is always targeted
  EXPECT_EQ(block.start, Start() + Seconds(3600));
  ASSERT_TRUE(block.end.has_value());
  EXPECT_EQ(*block.end, Start() + Seconds(3 * 3600));
  EXPECT_EQ(s->capacity_reservations[2].match, "open");  // EC2's default for an ODCR
  EXPECT_EQ(s->capacity_reservations[0].start, Start());
  struct Case {
    const char* name;
    const char* entry;
    const char* problem;
  };
  const Case cases[] = {
      {"block without end", "{id: cr-1, instance_type: p5.48xlarge, zone: us-east-1a, type: capacity-block}",
       "needs an end"},
      {"open block",
       "{id: cr-1, instance_type: p5.48xlarge, zone: us-east-1a, type: capacity-block, end: 1h, "
       "instance_match_criteria: open}",
       "always targeted"},
      {"unknown zone", "{id: cr-1, instance_type: g5.xlarge, zone: us-west-2a}",
       "not one of the scenario's zones"},
      {"bad id", "{id: r-1, instance_type: g5.xlarge, zone: us-east-1a}", "cr-"},
      {"bad type", "{id: cr-1, instance_type: g5.xlarge, zone: us-east-1a, type: spot}",
       "default or capacity-block"},
      {"end before start", "{id: cr-1, instance_type: g5.xlarge, zone: us-east-1a, start: 2h, end: 1h}",
       "after start"},
      {"unknown key", "{id: cr-1, instance_type: g5.xlarge, zone: us-east-1a, price: 3}",
       "unknown key 'price'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<sim::EmulatorScenario> bad = sim::ParseEmulatorScenario(
        std::string("zones: [us-east-1a]\ncapacity_reservations:\n  - ") + c.entry + "\n", Start());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find(c.problem), std::string::npos) << bad.error().message();
    EXPECT_NE(bad.error().message().find("capacity_reservations[0]"), std::string::npos)
        << bad.error().message();
  }
  Result<sim::EmulatorScenario> twice = sim::ParseEmulatorScenario(
      "capacity_reservations:\n  - {id: cr-1, instance_type: g5.xlarge, zone: us-east-1a}\n"
      "  - {id: cr-1, instance_type: g5.xlarge, zone: us-east-1b}\n",
      Start());
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("used twice"), std::string::npos);
}

TEST_F(EmulatorReservations, DescribeShowsStatesCountsFiltersAndPages) {
  std::vector<CapacityReservationInfo> all = Describe();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(One(kBlock).state, "scheduled");
  EXPECT_EQ(One(kBlock).reservation_type, "capacity-block");
  EXPECT_EQ(One(kOdcr).state, "active");
  EXPECT_EQ(One(kOdcr).instance_match_criteria, "targeted");
  EXPECT_EQ(One(kOdcr).available_instance_count, 2);
  EXPECT_FALSE(One(kOdcr).end_date.has_value());

  DescribeCapacityReservationsRequest by_tag;
  by_tag.filters = {{"tag:team", {"llm"}}};
  ASSERT_EQ(Describe(by_tag).size(), 1u);
  EXPECT_EQ(Describe(by_tag)[0].id, kBlock);
  DescribeCapacityReservationsRequest filtered;
  filtered.filters = {
      {"state", {"active"}}, {"instance-type", {"g5.*"}}, {"availability-zone", {"us-east-1b"}}};
  ASSERT_EQ(Describe(filtered).size(), 1u);
  EXPECT_EQ(Describe(filtered)[0].id, kOpen);

  DescribeCapacityReservationsRequest paged;
  paged.max_results = 2;
  Result<std::string> first = aws_->client.Query("ec2", DescribeCapacityReservationsQuery(paged));
  ASSERT_TRUE(first.ok());
  Result<CapacityReservationsPage> page = ParseDescribeCapacityReservations(*first);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->reservations.size(), 2u);
  ASSERT_FALSE(page->next_token.empty());
  paged.next_token = page->next_token;
  EXPECT_EQ(Describe(paged).size(), 1u);

  DescribeCapacityReservationsRequest unknown;
  unknown.ids = {"cr-0000000000000000f"};
  Result<std::string> missing = aws_->client.Query("ec2", DescribeCapacityReservationsQuery(unknown));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("InvalidCapacityReservationId.NotFound"), std::string::npos);
  DescribeCapacityReservationsRequest bad_filter;
  bad_filter.filters = {{"color", {"red"}}};
  EXPECT_FALSE(aws_->client.Query("ec2", DescribeCapacityReservationsQuery(bad_filter)).ok());

  clock_.Advance(Seconds(3600));
  EXPECT_EQ(One(kBlock).state, "active");
  clock_.Advance(Seconds(2 * 3600));
  EXPECT_EQ(One(kBlock).state, "expired");
  EXPECT_EQ(One(kBlock).available_instance_count, 0);
}

TEST_F(EmulatorReservations, TargetedLaunchesTakeSlotsUntilFullAndTerminationGivesThemBack) {
  Result<std::vector<Ec2Instance>> got = Run(Into(kOdcr, "g5.xlarge", "us-east-1a", 3));
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 2u);  // MaxCount 3, MinCount 1: as many as the reservation holds
  EXPECT_EQ((*got)[0].capacity_reservation_id, kOdcr);
  EXPECT_EQ((*got)[0].capacity_reservation_preference, "capacity-reservations-only");
  EXPECT_EQ(One(kOdcr).available_instance_count, 0);
  for (const Ec2Instance& e : Instances()) EXPECT_EQ(e.capacity_reservation_id, kOdcr) << e.instance_id;

  Result<std::vector<Ec2Instance>> full = Run(Into(kOdcr, "g5.xlarge", "us-east-1a", 1));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.error().category(), ErrorCategory::kCapacity);
  EXPECT_NE(full.error().message().find("ReservationCapacityExceeded"), std::string::npos)
      << full.error().message();
  // Another type or zone does not fit the reservation either.
  Result<std::vector<Ec2Instance>> elsewhere = Run(Into(kOdcr, "g5.xlarge", "us-east-1b", 1));
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_NE(elsewhere.error().message().find("ReservationCapacityExceeded"), std::string::npos);
  // A target with any other preference is refused.
  RunInstancesRequest open_and_target = Into(kOdcr, "g5.xlarge", "us-east-1a", 1);
  open_and_target.capacity_reservation_preference = "open";
  Result<std::vector<Ec2Instance>> mixed = Run(open_and_target);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message().find("InvalidParameterCombination"), std::string::npos);

  ASSERT_TRUE(aws_->client.Query("ec2", TerminateInstancesQuery({(*got)[0].instance_id})).ok());
  EXPECT_EQ(One(kOdcr).available_instance_count, 0) << "a shutting-down instance still holds its slot";
  clock_.Advance(Seconds(11));
  EXPECT_EQ(One(kOdcr).available_instance_count, 1);
  Result<std::vector<Ec2Instance>> again = Run(Into(kOdcr, "g5.xlarge", "us-east-1a", 1));
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ(again->size(), 1u);
}

TEST_F(EmulatorReservations, OpenReservationsTakeMatchingOnDemandLaunchesUnlessTheyOptOut) {
  CreateFleetRequest fleet;
  fleet.launch_template.name = "gpu-nodes";
  fleet.overrides = {{"g5.xlarge", "us-east-1b", "", std::nullopt, ""}};
  fleet.total_target_capacity = 2;
  Result<std::string> body = aws_->client.Query("ec2", CreateFleetQuery(fleet));
  ASSERT_TRUE(body.ok()) << body.error().ToString();
  std::vector<Ec2Instance> listed = Instances();
  ASSERT_EQ(listed.size(), 2u);
  const int in_open = static_cast<int>(std::count_if(
      listed.begin(), listed.end(), [](const Ec2Instance& e) { return e.capacity_reservation_id == kOpen; }));
  EXPECT_EQ(in_open, 1);  // one slot; the other runs as plain on-demand
  EXPECT_EQ(One(kOpen).available_instance_count, 0);
  // The targeted ODCR in us-east-1a takes nothing it is not asked for.
  fleet.overrides = {{"g5.xlarge", "us-east-1a", "", std::nullopt, ""}};
  fleet.total_target_capacity = 1;
  ASSERT_TRUE(aws_->client.Query("ec2", CreateFleetQuery(fleet)).ok());
  EXPECT_EQ(One(kOdcr).available_instance_count, 2);
}

TEST_F(EmulatorReservations, ACapacityBlockOpensAtItsStartAndTakesItsInstancesBackHalfAnHourBeforeItsEnd) {
  RunInstancesRequest block = Into(kBlock, "p5.48xlarge", "us-east-1b", 2);
  block.market_type = kCapacityBlockMarket;
  Result<std::vector<Ec2Instance>> early = Run(block);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.error().category(), ErrorCategory::kCapacity);
  EXPECT_NE(early.error().message().find("InsufficientInstanceCapacity"), std::string::npos);

  clock_.Advance(Seconds(3600));
  Result<std::vector<Ec2Instance>> no_market = Run(Into(kBlock, "p5.48xlarge", "us-east-1b", 2));
  ASSERT_FALSE(no_market.ok());
  EXPECT_NE(no_market.error().message().find("InvalidParameterCombination"), std::string::npos);
  Result<std::vector<Ec2Instance>> got = Run(block);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_TRUE((*got)[0].capacity_block);
  EXPECT_EQ((*got)[0].capacity_reservation_id, kBlock);

  const WallTime reclaim = Start() + Seconds(3 * 3600) - kBlockEndNotice;
  clock_.AdvanceTo(reclaim - Seconds(1));
  for (const Ec2Instance& e : Instances()) EXPECT_EQ(e.state, "running") << e.instance_id;
  clock_.AdvanceTo(reclaim);
  for (const Ec2Instance& e : Instances()) EXPECT_EQ(e.state, "shutting-down") << e.instance_id;
  EXPECT_EQ(One(kBlock).state, "active");
  clock_.Advance(Seconds(60));
  Result<std::vector<Ec2Instance>> late = Run(block);
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message().find("InsufficientInstanceCapacity"), std::string::npos);
  clock_.AdvanceTo(Start() + Seconds(3 * 3600));
  EXPECT_EQ(One(kBlock).state, "expired");
}

TEST_F(EmulatorReservations, FleetsReachReservationsThroughTheirLaunchTemplates) {
  auto make_template = [&](const std::string& name, const std::string& target, bool block) {
    QueryParams q = {{"Action", "CreateLaunchTemplate"},
                     {"Version", kEc2ApiVersion},
                     {"LaunchTemplateName", name},
                     {"LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget."
                      "CapacityReservationId",
                      target}};
    if (block) q.emplace_back("LaunchTemplateData.InstanceMarketOptions.MarketType", "capacity-block");
    ASSERT_TRUE(aws_->client.Query("ec2", q).ok());
  };
  make_template("to-odcr", kOdcr, false);
  make_template("to-block", kBlock, true);
  CreateFleetRequest fleet;
  fleet.launch_template.name = "to-odcr";
  fleet.overrides = {{"g5.xlarge", "us-east-1a", "", std::nullopt, ""}};
  fleet.total_target_capacity = 3;
  Result<std::string> body = aws_->client.Query("ec2", CreateFleetQuery(fleet));
  ASSERT_TRUE(body.ok()) << body.error().ToString();
  Result<CreateFleetResponse> odcr = ParseCreateFleet(*body);
  ASSERT_TRUE(odcr.ok());
  ASSERT_EQ(odcr->instances.size(), 1u);
  EXPECT_EQ(odcr->instances[0].instance_ids.size(), 2u);
  ASSERT_EQ(odcr->errors.size(), 1u);
  EXPECT_EQ(odcr->errors[0].code, "ReservationCapacityExceeded");

  // DefaultTargetCapacityType=capacity-block, before and inside the window.
  fleet.launch_template.name = "to-block";
  fleet.overrides = {{"p5.48xlarge", "us-east-1b", "", std::nullopt, ""}};
  fleet.total_target_capacity = 1;
  QueryParams q = CreateFleetQuery(fleet);
  for (auto& [k, v] : q) {
    if (k == "TargetCapacitySpecification.DefaultTargetCapacityType") v = "capacity-block";
  }
  Result<std::string> early = aws_->client.Query("ec2", q);
  ASSERT_TRUE(early.ok()) << early.error().ToString();
  Result<CreateFleetResponse> before = ParseCreateFleet(*early);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->instances.empty());
  ASSERT_EQ(before->errors.size(), 1u);
  EXPECT_EQ(before->errors[0].code, "InsufficientInstanceCapacity");
  clock_.Advance(Seconds(3600));
  Result<std::string> inside = aws_->client.Query("ec2", q);
  ASSERT_TRUE(inside.ok());
  Result<CreateFleetResponse> during = ParseCreateFleet(*inside);
  ASSERT_TRUE(during.ok());
  ASSERT_EQ(during->instances.size(), 1u);
  EXPECT_EQ(One(kBlock).available_instance_count, 1);
  // A block fleet whose template targets no reservation is refused.
  fleet.launch_template.name = "gpu-nodes";
  QueryParams untargeted = CreateFleetQuery(fleet);
  for (auto& [k, v] : untargeted) {
    if (k == "TargetCapacitySpecification.DefaultTargetCapacityType") v = "capacity-block";
  }
  EXPECT_FALSE(aws_->client.Query("ec2", untargeted).ok());
}

}  // namespace
}  // namespace gpuscaler::cloud::emulator_reservations
