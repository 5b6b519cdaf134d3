// DescribeCapacityReservations and RunInstances: request bodies against the
// bodies botocore 1.43.11's own EC2 serializer writes for the same
// parameters (recorded here; botocore member order), and the parsers
// against EC2-shaped answers: AWS's documented describe-capacity-reservations
// example (EC2 user guide, "View the state of a Capacity Reservation")
// written in the EC2 protocol's XML, and the recorded RunInstances answer
// in ../shared/reference/aws.
#include "gpuscaler/cloud/capacity_reservation_api.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud::reservation_api {
namespace {

TEST(CapacityReservationQuery, DescribeBodyMatchesBotocore) {
  DescribeCapacityReservationsRequest r;
  r.ids = {"cr-1", "cr-2"};
  r.next_token = "n1";
  r.max_results = 1000;
  r.filters = {{"state", {"active", "scheduled"}}};
  EXPECT_EQ(
      EncodeForm(DescribeCapacityReservationsQuery(r)),
      "Action=DescribeCapacityReservations&Version=2016-11-15&CapacityReservationId.1=cr-1&"
      "CapacityReservationId.2=cr-2&NextToken=n1&MaxResults=1000&Filter.1.Name=state&Filter.1.Value.1=active&"
      "Filter.1.Value.2=scheduled");
}

TEST(CapacityReservationQuery, RunInstancesIntoABlockMatchesBotocore) {
  RunInstancesRequest r;
  r.instance_type = "p5.48xlarge";
  r.max_count = 3;
  r.min_count = 1;
  r.availability_zone = "us-east-1a";
  r.instance_tags = {{"gpuscaler.io/pool", "train"}};
  r.launch_template.name = "gpu-nodes";
  r.market_type = kCapacityBlockMarket;
  r.capacity_reservation_preference = kReservationsOnly;
  r.capacity_reservation_id = "cr-0123456789abcdef0";
  r.client_token = "tok-0";
  EXPECT_EQ(
      EncodeForm(RunInstancesQuery(r)),
      "Action=RunInstances&Version=2016-11-15&InstanceType=p5.48xlarge&MaxCount=3&MinCount=1&"
      "Placement.AvailabilityZone=us-east-1a&TagSpecification.1.ResourceType=instance&"
      "TagSpecification.1.Tag.1.Key=gpuscaler.io%2Fpool&TagSpecification.1.Tag.1.Value=train&"
      "LaunchTemplate.LaunchTemplateName=gpu-nodes&LaunchTemplate.Version=%24Latest&"
      "InstanceMarketOptions.MarketType=capacity-block&"
      "CapacityReservationSpecification.CapacityReservationPreference=capacity-reservations-only&"
      "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId=cr-0123456789abcdef0&"
      "ClientToken=tok-0");
}

TEST(CapacityReservationQuery, RunInstancesIntoAnOdcrBySubnetMatchesBotocore) {
  RunInstancesRequest r;
  r.instance_type = "g5.xlarge";
  r.max_count = 2;
  r.min_count = 2;
  r.placement_group = "pg";
  r.subnet_id = "subnet-1";
  r.launch_template.id = "lt-1";
  r.launch_template.version = "3";
  r.capacity_reservation_preference = kReservationsOnly;
  r.capacity_reservation_id = "cr-9";
  EXPECT_EQ(EncodeForm(RunInstancesQuery(r)),
            "Action=RunInstances&Version=2016-11-15&InstanceType=g5.xlarge&MaxCount=2&MinCount=2&"
            "Placement.GroupName=pg&SubnetId=subnet-1&LaunchTemplate.LaunchTemplateId=lt-1&LaunchTemplate."
            "Version=3&"
            "CapacityReservationSpecification.CapacityReservationPreference=capacity-reservations-only&"
            "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId=cr-9");
}

// AWS's example output (two ODCRs, one cancelled), as EC2 sends it on the
// wire, plus a Capacity Block with an end and tags.
constexpr const char* kDescribeAnswer = R"(<?xml version="1.0" encoding="UTF-8"?>
<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>2fe1a7a2-1b0c-4a25-9f2c-6f0c4bEXAMPLE</requestId>
  <capacityReservationSet>
    <item>
      <capacityReservationId>cr-1234abcd56EXAMPLE</capacityReservationId>
      <endDateType>unlimited</endDateType>
      <availabilityZone>eu-west-1a</availabilityZone>
      <instanceMatchCriteria>open</instanceMatchCriteria>
      <tagSet/>
      <ephemeralStorage>false</ephemeralStorage>
      <createDate>2019-08-16T09:03:18.000Z</createDate>
      <startDate>2019-08-16T09:03:18.000Z</startDate>
      <availableInstanceCount>1</availableInstanceCount>
      <instancePlatform>Linux/UNIX</instancePlatform>
      <totalInstanceCount>1</totalInstanceCount>
      <state>active</state>
      <tenancy>default</tenancy>
      <ebsOptimized>true</ebsOptimized>
      <instanceType>a1.medium</instanceType>
    </item>
    <item>
      <capacityReservationId>cr-abcdEXAMPLE9876ef</capacityReservationId>
      <endDateType>unlimited</endDateType>
      <availabilityZone>eu-west-1a</availabilityZone>
      <instanceMatchCriteria>open</instanceMatchCriteria>
      <ephemeralStorage>false</ephemeralStorage>
      <createDate>2019-08-07T11:34:19.000Z</createDate>
      <startDate>2019-08-07T11:34:19.000Z</startDate>
      <availableInstanceCount>3</availableInstanceCount>
      <instancePlatform>Linux/UNIX</instancePlatform>
      <totalInstanceCount>3</totalInstanceCount>
      <state>cancelled</state>
      <tenancy>default</tenancy>
      <ebsOptimized>true</ebsOptimized>
      <instanceType>m5.large</instanceType>
    </item>
    <item>
      <capacityReservationId>cr-0b10c0000000000001</capacityReservationId>
      <instanceType>p5.48xlarge</instanceType>
      <availabilityZone>us-east-1a</availabilityZone>
      <totalInstanceCount>4</totalInstanceCount>
      <availableInstanceCount>4</availableInstanceCount>
      <state>scheduled</state>
      <startDate>2026-12-03T11:30:00.000Z</startDate>
      <endDate>2026-12-10T11:30:00.000Z</endDate>
      <endDateType>limited</endDateType>
      <instanceMatchCriteria>targeted</instanceMatchCriteria>
      <tagSet><item><key>team</key><value>llm</value></item></tagSet>
      <reservationType>capacity-block</reservationType>
    </item>
  </capacityReservationSet>
  <nextToken>page-2</nextToken>
</DescribeCapacityReservationsResponse>
)";

TEST(CapacityReservationParse, ReadsEveryFieldTheProviderMaps) {
  Result<CapacityReservationsPage> page = ParseDescribeCapacityReservations(kDescribeAnswer);
  ASSERT_TRUE(page.ok()) << page.error().ToString();
  ASSERT_EQ(page->reservations.size(), 3u);
  EXPECT_EQ(page->next_token, "page-2");
  const CapacityReservationInfo& odcr = page->reservations[0];
  EXPECT_EQ(odcr.id, "cr-1234abcd56EXAMPLE");
  EXPECT_EQ(odcr.instance_type, "a1.medium");
  EXPECT_EQ(odcr.availability_zone, "eu-west-1a");
  EXPECT_EQ(odcr.total_instance_count, 1);
  EXPECT_EQ(odcr.available_instance_count, 1);
  EXPECT_EQ(odcr.state, "active");
  EXPECT_EQ(odcr.instance_match_criteria, "open");
  EXPECT_EQ(odcr.reservation_type, "");  // an answer from before Capacity Blocks
  EXPECT_FALSE(odcr.end_date.has_value());
  EXPECT_EQ(FormatRfc3339(odcr.start_date), "2019-08-16T09:03:18Z");
  EXPECT_EQ(page->reservations[1].state, "cancelled");
  const CapacityReservationInfo& block = page->reservations[2];
  EXPECT_EQ(block.reservation_type, "capacity-block");
  EXPECT_EQ(block.instance_match_criteria, "targeted");
  ASSERT_TRUE(block.end_date.has_value());
  EXPECT_EQ(FormatRfc3339(*block.end_date), "2026-12-10T11:30:00Z");
  EXPECT_EQ(block.tags.at("team"), "llm");
}

TEST(CapacityReservationParse, RefusesItemsItCannotPlaceInTime) {
  std::string bad = kDescribeAnswer;
  bad.replace(bad.find("2026-12-10T11:30:00.000Z"), 24, "next week");
  EXPECT_FALSE(ParseDescribeCapacityReservations(bad).ok());
  const std::string error =
      R"(<Response><Errors><Error><Code>InvalidCapacityReservationId.NotFound</Code><Message>no</Message></Error></Errors><RequestID>x</RequestID></Response>)";
  Result<CapacityReservationsPage> e = ParseDescribeCapacityReservations(error);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().category(), ErrorCategory::kNotFound);
}

TEST(CapacityReservationParse, RunInstancesAnswerFromAws) {
  const auto path = std::filesystem::path(GPUSCALER_SHARED_DIR) / "reference" / "aws" / "botocore-fixtures" /
                    "responses-ec2-run-instances.xml";
  Result<std::string> xml = ReadTextFile(path.string());
  if (!xml.ok()) GTEST_SKIP() << "no " << path << " (../shared absent)";
  Result<std::vector<Ec2Instance>> launched = ParseRunInstances(*xml);
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->size(), 1u);
  EXPECT_EQ((*launched)[0].instance_id, "i-0ee0356c");
  EXPECT_EQ((*launched)[0].state, "pending");
  EXPECT_EQ((*launched)[0].capacity_reservation_id, "");
  EXPECT_FALSE(ParseRunInstances("<DescribeInstancesResponse/>").ok());
}

TEST(CapacityReservationParse, InstancesShowTheirReservationAndBlock) {
  const std::string xml = R"(<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r</requestId><reservationSet><item><reservationId>r-1</reservationId><instancesSet><item>
    <instanceId>i-1</instanceId><instanceState><code>16</code><name>running</name></instanceState>
    <instanceType>p5.48xlarge</instanceType><placement><availabilityZone>us-east-1a</availabilityZone></placement>
    <instanceLifecycle>capacity-block</instanceLifecycle>
    <capacityReservationId>cr-0b10c0000000000001</capacityReservationId>
    <capacityReservationSpecification><capacityReservationPreference>capacity-reservations-only</capacityReservationPreference>
      <capacityReservationTarget><capacityReservationId>cr-0b10c0000000000001</capacityReservationId></capacityReservationTarget>
    </capacityReservationSpecification>
  </item></instancesSet></item></reservationSet></DescribeInstancesResponse>)";
  Result<DescribeInstancesPage> page = ParseDescribeInstances(xml);
  ASSERT_TRUE(page.ok()) << page.error().ToString();
  ASSERT_EQ(page->instances.size(), 1u);
  const Ec2Instance& i = page->instances[0];
  EXPECT_EQ(i.capacity_reservation_id, "cr-0b10c0000000000001");
  EXPECT_EQ(i.capacity_reservation_preference, "capacity-reservations-only");
  EXPECT_TRUE(i.capacity_block);
  EXPECT_EQ(i.lifecycle, CapacityType::kOnDemand);  // a block instance is no spot instance
}

TEST(CapacityReservationErrors, AFullReservationIsACapacityError) {
  EXPECT_EQ(ClassifyAwsError("ReservationCapacityExceeded", 400), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyAwsError("InvalidCapacityReservationId.NotFound", 400), ErrorCategory::kNotFound);
}

}  // namespace
}  // namespace gpuscaler::cloud::reservation_api
