// The real `aws` CLI (botocore) against `gpuscaler cloud-emulator` with
// capacity reservations: describe-capacity-reservations (fields, filters),
// run-instances into a targeted ODCR and a Capacity Block, the error of a
// full reservation, and describe-instances showing where each instance
// runs. Skipped when `aws` is not on PATH, except under CI=true.
#include "cloud/aws_cli_harness.h"

namespace gpuscaler::testing::cli_reservations {
namespace {

constexpr const char* kOdcr = "cr-0d0000000000000001";
constexpr const char* kBlock = "cr-0b0000000000000002";

class AwsCliReservations : public AwsCliTest {
 protected:
  std::string Scenario() const override {
    return R"(
zones: [us-east-1a, us-east-1b]
launch_latency: 1s
capacity_reservations:
  - {id: cr-0d0000000000000001, instance_type: g5.xlarge, zone: us-east-1a, count: 2,
     instance_match_criteria: targeted, tags: {team: ml}}
  - {id: cr-0b0000000000000002, instance_type: p5.48xlarge, zone: us-east-1b, count: 1,
     type: capacity-block, start: -1h, end: 2h, tags: {team: llm}}
)";
  }

  json Reservation(const std::string& id) {
    Run r = Aws({"ec2", "describe-capacity-reservations", "--capacity-reservation-ids", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out["CapacityReservations"].size(), 1u) << r.raw;
    return r.out["CapacityReservations"].empty() ? json::object() : r.out["CapacityReservations"][0];
  }
};

TEST_F(AwsCliReservations, DescribesReservationsAsEc2Does) {
  Run all = Aws({"ec2", "describe-capacity-reservations"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  ASSERT_EQ(all.out["CapacityReservations"].size(), 2u) << all.raw;
  const json odcr = Reservation(kOdcr);
  EXPECT_EQ(odcr["InstanceType"], "g5.xlarge");
  EXPECT_EQ(odcr["AvailabilityZone"], "us-east-1a");
  EXPECT_EQ(odcr["TotalInstanceCount"], 2);
  EXPECT_EQ(odcr["AvailableInstanceCount"], 2);
  EXPECT_EQ(odcr["State"], "active");
  EXPECT_EQ(odcr["InstanceMatchCriteria"], "targeted");
  EXPECT_EQ(odcr["ReservationType"], "default");
  EXPECT_EQ(odcr["EndDateType"], "unlimited");
  EXPECT_FALSE(odcr.contains("EndDate"));
  ASSERT_EQ(odcr["Tags"].size(), 1u);
  EXPECT_EQ(odcr["Tags"][0]["Key"], "team");
  const json block = Reservation(kBlock);
  EXPECT_EQ(block["ReservationType"], "capacity-block");
  EXPECT_EQ(block["EndDateType"], "limited");
  EXPECT_TRUE(block.contains("StartDate") && block.contains("EndDate")) << block.dump();

  Run by_tag = Aws({"ec2", "describe-capacity-reservations", "--filters", "Name=tag:team,Values=llm"});
  ASSERT_EQ(by_tag.exit_code, 0) << by_tag.err;
  ASSERT_EQ(by_tag.out["CapacityReservations"].size(), 1u);
  EXPECT_EQ(by_tag.out["CapacityReservations"][0]["CapacityReservationId"], kBlock);
  Run by_type = Aws({"ec2", "describe-capacity-reservations", "--filters",
                     "Name=instance-type,Values=g5.xlarge", "Name=state,Values=active"});
  ASSERT_EQ(by_type.exit_code, 0) << by_type.err;
  ASSERT_EQ(by_type.out["CapacityReservations"].size(), 1u);
  EXPECT_EQ(by_type.out["CapacityReservations"][0]["CapacityReservationId"], kOdcr);
  // The CLI pages on its own (NextToken) when asked for small pages.
  Run paged = Aws({"ec2", "describe-capacity-reservations", "--page-size", "1"});
  ASSERT_EQ(paged.exit_code, 0) << paged.err;
  EXPECT_EQ(paged.out["CapacityReservations"].size(), 2u);
}

TEST_F(AwsCliReservations, RunInstancesTakesSlotsAndDescribeInstancesShowsThem) {
  const std::string target = std::string("CapacityReservationPreference=capacity-reservations-only,") +
                             "CapacityReservationTarget={CapacityReservationId=" + kOdcr + "}";
  Run run = Aws({"ec2", "run-instances", "--launch-template", "LaunchTemplateName=gpu-nodes",
                 "--instance-type", "g5.xlarge", "--placement", "AvailabilityZone=us-east-1a", "--count", "2",
                 "--capacity-reservation-specification", target, "--client-token", "cli-odcr-1"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(run.out["Instances"].size(), 2u) << run.raw;
  EXPECT_EQ(run.out["Instances"][0]["CapacityReservationId"], kOdcr);
  EXPECT_EQ(Reservation(kOdcr)["AvailableInstanceCount"], 0);

  Run full = Aws({"ec2", "run-instances", "--launch-template", "LaunchTemplateName=gpu-nodes",
                  "--instance-type", "g5.xlarge", "--placement", "AvailabilityZone=us-east-1a", "--count",
                  "1", "--capacity-reservation-specification", target});
  EXPECT_NE(full.exit_code, 0);
  EXPECT_NE(full.err.find("ReservationCapacityExceeded"), std::string::npos) << full.err;

  Run block =
      Aws({"ec2", "run-instances", "--launch-template", "LaunchTemplateName=gpu-nodes", "--instance-type",
           "p5.48xlarge", "--placement", "AvailabilityZone=us-east-1b", "--count", "1",
           "--instance-market-options", "MarketType=capacity-block", "--capacity-reservation-specification",
           std::string("CapacityReservationTarget={CapacityReservationId=") + kBlock + "}"});
  ASSERT_EQ(block.exit_code, 0) << block.err;

  Run listed = Aws({"ec2", "describe-instances"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::map<std::string, int> by_reservation;
  for (const json& res : listed.out["Reservations"]) {
    for (const json& i : res["Instances"]) {
      const std::string cr = i.value("CapacityReservationId", "");
      ++by_reservation[cr];
      if (cr == kOdcr) {
        EXPECT_EQ(i["CapacityReservationSpecification"]["CapacityReservationPreference"],
                  "capacity-reservations-only");
        EXPECT_EQ(i["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"],
                  kOdcr);
        EXPECT_FALSE(i.contains("InstanceLifecycle"));
      } else if (cr == kBlock) {
        EXPECT_EQ(i["InstanceLifecycle"], "capacity-block");
      }
    }
  }
  EXPECT_EQ(by_reservation[kOdcr], 2);
  EXPECT_EQ(by_reservation[kBlock], 1);
  EXPECT_EQ(by_reservation.size(), 2u);
}

}  // namespace
}  // namespace gpuscaler::testing::cli_reservations
