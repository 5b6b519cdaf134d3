// EC2 / Auto Scaling / SQS request builders against botocore's own bodies,
// and the response parsers against recorded AWS XML
// (../shared/reference/aws/), plus the error-code categories.
#include "gpuscaler/cloud/ec2_api.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/placement_group_api.h"
#include "gpuscaler/cloud/sqs_api.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {
namespace {

namespace fs = std::filesystem;
const fs::path kAws = fs::path(GPUSCALER_SHARED_DIR) / "reference" / "aws";

std::optional<std::string> Shared(const std::string& rel) {
  auto r = ReadTextFile((kAws / rel).string());
  if (!r.ok()) return std::nullopt;
  return *r;
}

#define SHARED_OR_SKIP(var, rel)                                          \
  auto var##_opt = Shared(rel);                                           \
  if (!var##_opt) GTEST_SKIP() << "no " << (kAws / rel) << " (../shared absent)"; \
  const std::string& var = *var##_opt

TEST(Ec2Query, CreateFleetBodyMatchesBotocore) {
  SHARED_OR_SKIP(want, "botocore-serialized/ec2-CreateFleet.body.txt");
  CreateFleetRequest r;
  r.spot_allocation_strategy = "capacity-optimized";
  r.launch_template.name = "ec2-fleet-lt1";
  for (const char* type : {"c5.large", "c5d.large", "m5.large", "m5d.large"}) {
    for (const char* subnet : {"subnet-fae8c380", "subnet-e7188bab", "subnet-49e41922"}) {
      FleetOverride o;
      o.instance_type = type;
      o.subnet_id = subnet;
      r.overrides.push_back(o);
    }
  }
  r.total_target_capacity = 20;
  r.on_demand_target_capacity = 5;
  r.default_capacity_type = CapacityType::kSpot;
  r.client_token = "550e8400-e29b-41d4-a716-446655440000";
  EXPECT_EQ(EncodeForm(CreateFleetQuery(r)), want);
}

TEST(Ec2Query, CreateFleetWithZonesTagsAndStrategies) {
  CreateFleetRequest r;
  r.launch_template.id = "lt-0abc";
  r.launch_template.version = "3";
  FleetOverride a;
  a.instance_type = "g5.12xlarge";
  a.availability_zone = "us-east-1b";
  a.priority = 1;
  r.overrides = {a};
  r.total_target_capacity = 2;
  r.default_capacity_type = CapacityType::kOnDemand;
  r.on_demand_allocation_strategy = "lowest-price";
  r.spot_allocation_strategy = "price-capacity-optimized";
  r.client_token = "tok-1";
  r.instance_tags = {{"gpuscaler.io/pool", "train"}, {"Name", "gpu"}};
  const QueryParams q = CreateFleetQuery(r);
  EXPECT_EQ(FormValue(q, "Type"), "instant");
  EXPECT_EQ(FormValue(q, "SpotOptions.AllocationStrategy"), "price-capacity-optimized");
  EXPECT_EQ(FormValue(q, "OnDemandOptions.AllocationStrategy"), "lowest-price");
  EXPECT_EQ(FormValue(q, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"), "lt-0abc");
  EXPECT_EQ(FormValue(q, "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version"), "3");
  EXPECT_EQ(FormValue(q, "LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone"), "us-east-1b");
  EXPECT_EQ(FormValue(q, "LaunchTemplateConfigs.1.Overrides.1.Priority"), "1");
  EXPECT_EQ(FormValue(q, "TargetCapacitySpecification.DefaultTargetCapacityType"), "on-demand");
  EXPECT_EQ(FormValue(q, "TagSpecification.1.ResourceType"), "instance");
  EXPECT_EQ(FormValue(q, "TagSpecification.1.Tag.1.Key"), "Name");
  EXPECT_EQ(FormValue(q, "TagSpecification.1.Tag.2.Key"), "gpuscaler.io/pool");
  EXPECT_EQ(FormValue(q, "TagSpecification.1.Tag.2.Value"), "train");
  EXPECT_EQ(FormValue(q, "ClientToken"), "tok-1");
  EXPECT_FALSE(FormValue(q, "OnDemandOptions.MinTargetCapacity")) << "no minimum unless asked";
  // Round trip through the wire form.
  EXPECT_EQ(DecodeForm(EncodeForm(q)), q);

  // A gang's fleet: at least all of it, in one zone, in the options of its
  // capacity type.
  r.min_target_capacity = 2;
  const QueryParams od = CreateFleetQuery(r);
  EXPECT_EQ(FormValue(od, "OnDemandOptions.MinTargetCapacity"), "2");
  EXPECT_EQ(FormValue(od, "OnDemandOptions.SingleAvailabilityZone"), "true");
  r.default_capacity_type = CapacityType::kSpot;
  const QueryParams spot = CreateFleetQuery(r);
  EXPECT_EQ(FormValue(spot, "SpotOptions.MinTargetCapacity"), "2");
  EXPECT_EQ(FormValue(spot, "SpotOptions.SingleAvailabilityZone"), "true");
  EXPECT_FALSE(FormValue(spot, "OnDemandOptions.MinTargetCapacity"));
  EXPECT_FALSE(FormValue(spot, "LaunchTemplateConfigs.1.Overrides.1.Placement.GroupName")) << "none unless asked";

  // Into a placement group: every override names it (botocore's wire name).
  r.overrides[0].placement_group = "train-gangs";
  EXPECT_EQ(FormValue(CreateFleetQuery(r), "LaunchTemplateConfigs.1.Overrides.1.Placement.GroupName"), "train-gangs");
}

// The bodies botocore 1.43 writes for the same calls (its serializer, run
// on these parameters; the wire names are GroupName.N and
// TagSpecification.N.Tag.M).
TEST(Ec2Query, PlacementGroupBodiesMatchBotocore) {
  EXPECT_EQ(EncodeForm(CreatePlacementGroupQuery("train-gangs", "cluster",
                                                 {{"gpuscaler.io/cluster", "prod"}, {"gpuscaler.io/pool", "gpu"}})),
            "Action=CreatePlacementGroup&Version=2016-11-15&GroupName=train-gangs&Strategy=cluster"
            "&TagSpecification.1.ResourceType=placement-group&TagSpecification.1.Tag.1.Key=gpuscaler.io%2Fcluster"
            "&TagSpecification.1.Tag.1.Value=prod&TagSpecification.1.Tag.2.Key=gpuscaler.io%2Fpool"
            "&TagSpecification.1.Tag.2.Value=gpu");
  EXPECT_EQ(EncodeForm(DescribePlacementGroupsQuery({"train-gangs"})),
            "Action=DescribePlacementGroups&Version=2016-11-15&GroupName.1=train-gangs");
  auto groups = ParseDescribePlacementGroups(
      R"(<DescribePlacementGroupsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>d4904fd9-82c2-4ea5-adfe-a9cc3EXAMPLE</requestId>
  <placementGroupSet><item><groupName>train-gangs</groupName><strategy>cluster</strategy>
    <state>available</state><groupId>pg-0123456789abcdef0</groupId>
    <tagSet><item><key>gpuscaler.io/cluster</key><value>prod</value></item></tagSet></item></placementGroupSet>
</DescribePlacementGroupsResponse>)");
  ASSERT_TRUE(groups.ok()) << groups.error().ToString();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].id, "pg-0123456789abcdef0");
  EXPECT_EQ((*groups)[0].strategy, "cluster");
  EXPECT_EQ((*groups)[0].tags.at("gpuscaler.io/cluster"), "prod");
}

TEST(Ec2Query, OtherBodiesMatchBotocore) {
  SHARED_OR_SKIP(terminate, "botocore-serialized/ec2-TerminateInstances.body.txt");
  EXPECT_EQ(EncodeForm(TerminateInstancesQuery({"i-1234567890abcdef0", "i-0598c7d356eba48d7"})), terminate);

  SHARED_OR_SKIP(prices, "botocore-serialized/ec2-DescribeSpotPriceHistory.body.txt");
  DescribeSpotPriceHistoryRequest p;
  p.instance_types = {"p4d.24xlarge", "g5.xlarge"};
  p.product_descriptions = {"Linux/UNIX"};
  p.availability_zone = "us-east-1a";
  WallTime start, end;
  ASSERT_TRUE(ParseRfc3339("2024-01-01T00:00:00Z", &start));
  ASSERT_TRUE(ParseRfc3339("2024-01-02T00:00:00Z", &end));
  p.start_time = start;
  p.end_time = end;
  p.max_results = 100;
  p.filters = {{"product-description", {"Linux/UNIX"}}};
  EXPECT_EQ(EncodeForm(DescribeSpotPriceHistoryQuery(p)), prices);

  SHARED_OR_SKIP(desired, "botocore-serialized/autoscaling-SetDesiredCapacity.body.txt");
  EXPECT_EQ(EncodeForm(SetDesiredCapacityQuery("my-auto-scaling-group", 2, true)), desired);

  SHARED_OR_SKIP(groups, "botocore-serialized/autoscaling-DescribeAutoScalingGroups.body.txt");
  DescribeAutoScalingGroupsRequest g;
  g.names = {"my-asg", "gpu-pool-a"};
  g.max_records = 50;
  EXPECT_EQ(EncodeForm(DescribeAutoScalingGroupsQuery(g)), groups);
}

TEST(Ec2Query, DescribeInstancesUsesFlatFiltersAndNextToken) {
  DescribeInstancesRequest r;
  r.filters = {{"tag:gpuscaler.io/pool", {"train", "infer"}}, {"instance-state-name", {"pending", "running"}}};
  r.max_results = 100;
  r.next_token = "abc/+=";
  EXPECT_EQ(EncodeForm(DescribeInstancesQuery(r)),
            "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3Agpuscaler.io%2Fpool&"
            "Filter.1.Value.1=train&Filter.1.Value.2=infer&Filter.2.Name=instance-state-name&"
            "Filter.2.Value.1=pending&Filter.2.Value.2=running&MaxResults=100&NextToken=abc%2F%2B%3D");
  DescribeAutoScalingGroupsRequest g;
  g.filters = {{"tag:team", {"ml"}}};
  EXPECT_EQ(EncodeForm(DescribeAutoScalingGroupsQuery(g)),
            "Action=DescribeAutoScalingGroups&Version=2011-01-01&Filters.member.1.Name=tag%3Ateam&"
            "Filters.member.1.Values.member.1=ml");
  EXPECT_EQ(EncodeForm(TerminateInstanceInAutoScalingGroupQuery("i-1", true)),
            "Action=TerminateInstanceInAutoScalingGroup&Version=2011-01-01&InstanceId=i-1&"
            "ShouldDecrementDesiredCapacity=true");
  EXPECT_EQ(EncodeForm(CreateOrUpdateTagsQuery("gpu-a", {{"gpuscaler.io/intent", "a-7-0", true}})),
            "Action=CreateOrUpdateTags&Version=2011-01-01&Tags.member.1.ResourceId=gpu-a&"
            "Tags.member.1.ResourceType=auto-scaling-group&Tags.member.1.Key=gpuscaler.io%2Fintent&"
            "Tags.member.1.Value=a-7-0&Tags.member.1.PropagateAtLaunch=true");
  DescribeScalingActivitiesRequest a;
  a.group = "gpu-a";
  a.max_records = 20;
  EXPECT_EQ(EncodeForm(DescribeScalingActivitiesQuery(a)),
            "Action=DescribeScalingActivities&Version=2011-01-01&AutoScalingGroupName=gpu-a&MaxRecords=20");
}

TEST(Ec2Parse, RecordedSpotPriceHistory) {
  SHARED_OR_SKIP(xml, "botocore-fixtures/responses-ec2-describe-spot-price-history.xml");
  SHARED_OR_SKIP(expected, "botocore-fixtures/responses-ec2-describe-spot-price-history.expected.json");
  auto want = nlohmann::json::parse(expected);
  auto page = ParseDescribeSpotPriceHistory(xml);
  ASSERT_TRUE(page.ok()) << page.error().ToString();
  ASSERT_EQ(page->prices.size(), want["SpotPriceHistory"].size());
  EXPECT_EQ(page->next_token, want["NextToken"]);
  for (size_t i = 0; i < page->prices.size(); ++i) {
    const auto& w = want["SpotPriceHistory"][i];
    const SpotPricePoint& p = page->prices[i];
    ASSERT_EQ(p.instance_type, w["InstanceType"]) << i;
    ASSERT_EQ(p.availability_zone, w["AvailabilityZone"]) << i;
    ASSERT_EQ(p.product_description, w["ProductDescription"]) << i;
    ASSERT_DOUBLE_EQ(p.usd_per_hour, std::stod(w["SpotPrice"].get<std::string>())) << i;
    WallTime t;
    ASSERT_TRUE(ParseAwsTime(w["Timestamp"].get<std::string>(), &t));
    ASSERT_EQ(p.time, t) << i;
  }
}

TEST(Ec2Parse, RecordedRunInstancesInstanceShape) {
  SHARED_OR_SKIP(xml, "botocore-fixtures/responses-ec2-run-instances.xml");
  auto instances = ParseInstancesSet(xml);
  ASSERT_TRUE(instances.ok());
  ASSERT_EQ(instances->size(), 1u);
  EXPECT_EQ((*instances)[0].instance_id, "i-0ee0356c");
  EXPECT_EQ((*instances)[0].instance_type, "m1.small");
  EXPECT_EQ((*instances)[0].availability_zone, "us-east-1b");
  EXPECT_EQ((*instances)[0].subnet_id, "subnet-b2a249da");
  EXPECT_EQ((*instances)[0].state, "pending");
  EXPECT_EQ((*instances)[0].state_code, 0);
  EXPECT_EQ(FormatRfc3339((*instances)[0].launch_time), "2011-12-20T08:29:31Z");
}

TEST(Ec2Parse, RecordedEmptyAutoScalingGroupsAndErrorShapes) {
  SHARED_OR_SKIP(groups, "botocore-fixtures/responses-autoscaling-describe-auto-scaling-groups.xml");
  auto page = ParseDescribeAutoScalingGroups(groups);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->groups.empty());
  EXPECT_TRUE(page->next_token.empty());

  SHARED_OR_SKIP(ec2_error, "botocore-fixtures/errors-ec2-describe-instances.xml");
  auto e = ParseErrorBody(ec2_error);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "InvalidInstanceID.Malformed");
  EXPECT_EQ(e->message, "Invalid id: \"foobar\"");
  EXPECT_EQ(e->request_id, "dfb14b43-9a55-4d8e-b676-e8034d12bbeb");
  Error err = ErrorFromResponse("DescribeInstances", 400, ec2_error);
  EXPECT_EQ(err.category(), ErrorCategory::kConfig);
  EXPECT_NE(err.message().find("InvalidInstanceID.Malformed"), std::string::npos);
  // A document that is an error where a result was expected.
  EXPECT_EQ(ParseDescribeInstances(ec2_error).error().category(), ErrorCategory::kConfig);

  SHARED_OR_SKIP(asg_error, "botocore-fixtures/errors-autoscaling-delete-policy.xml");
  e = ParseErrorBody(asg_error);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "ValidationError");
  EXPECT_EQ(e->request_id, "9e27be2f-b7e3-11e2-a0e4-f9780ed1763e");
}

TEST(Ec2Parse, ErrorCodesMapToCategories) {
  struct Case {
    const char* code;
    int status;
    ErrorCategory want;
  };
  const Case cases[] = {
      {"InsufficientInstanceCapacity", 500, ErrorCategory::kCapacity},
      {"SpotMaxPriceTooLow", 400, ErrorCategory::kCapacity},
      {"MaxSpotInstanceCountExceeded", 400, ErrorCategory::kCapacity},
      {"InstanceLimitExceeded", 400, ErrorCategory::kCapacity},
      {"Unsupported", 400, ErrorCategory::kCapacity},
      {"RequestLimitExceeded", 503, ErrorCategory::kThrottled},
      {"Throttling", 400, ErrorCategory::kThrottled},
      {"UnauthorizedOperation", 403, ErrorCategory::kAuth},
      {"AuthFailure", 401, ErrorCategory::kAuth},
      {"InvalidClientTokenId", 403, ErrorCategory::kAuth},
      {"SignatureDoesNotMatch", 403, ErrorCategory::kAuth},
      {"InternalError", 500, ErrorCategory::kTransient},
      {"Whatever", 503, ErrorCategory::kTransient},
      {"", 502, ErrorCategory::kTransient},
      {"InvalidInstanceID.NotFound", 400, ErrorCategory::kNotFound},
      {"ValidationError", 400, ErrorCategory::kConfig},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code);
    EXPECT_EQ(ClassifyAwsError(c.code, c.status), c.want);
  }
  EXPECT_EQ(ErrorFromResponse("X", 502, "<html>bad gateway</html>").category(), ErrorCategory::kTransient);
  EXPECT_EQ(ErrorFromResponse("X", 400, R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no"})")
                .message(),
            "X: HTTP 400: QueueDoesNotExist: no");
}

constexpr const char* kPartialFleet = R"(<?xml version="1.0" encoding="UTF-8"?>
<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>5d4b1ab4-1c4e-4b8a-9f3e-0c2f4b9a1d2e</requestId>
    <fleetId>fleet-12a34b55-67cd-8ef9-ba9b-9208dEXAMPLE</fleetId>
    <errorSet>
        <item>
            <launchTemplateAndOverrides>
                <launchTemplateSpecification>
                    <launchTemplateId>lt-01234a567b8910abcEXAMPLE</launchTemplateId>
                    <version>1</version>
                </launchTemplateSpecification>
                <overrides>
                    <instanceType>c4.xlarge</instanceType>
                    <availabilityZone>us-east-1a</availabilityZone>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>on-demand</lifecycle>
            <errorCode>InsufficientInstanceCapacity</errorCode>
            <errorMessage/>
        </item>
    </errorSet>
    <fleetInstanceSet>
        <item>
            <launchTemplateAndOverrides>
                <launchTemplateSpecification>
                    <launchTemplateId>lt-01234a567b8910abcEXAMPLE</launchTemplateId>
                    <version>1</version>
                </launchTemplateSpecification>
                <overrides>
                    <instanceType>c5.large</instanceType>
                    <availabilityZone>us-east-1a</availabilityZone>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>on-demand</lifecycle>
            <instanceIds>
                <item>i-1234567890abcdef0</item>
                <item>i-9876543210abcdef9</item>
            </instanceIds>
            <instanceType>c5.large</instanceType>
        </item>
    </fleetInstanceSet>
</CreateFleetResponse>)";

// The doc sample create-fleet-instant-partial, in the model's XML shape.
TEST(Ec2Parse, InstantFleetPartialFulfilment) {
  auto r = ParseCreateFleet(kPartialFleet);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->fleet_id, "fleet-12a34b55-67cd-8ef9-ba9b-9208dEXAMPLE");
  ASSERT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(r->instances[0].where.instance_type, "c5.large");
  EXPECT_EQ(r->instances[0].where.availability_zone, "us-east-1a");
  EXPECT_EQ(r->instances[0].where.lifecycle, CapacityType::kOnDemand);
  EXPECT_EQ(r->instances[0].instance_ids, (std::vector<std::string>{"i-1234567890abcdef0", "i-9876543210abcdef9"}));
  ASSERT_EQ(r->errors.size(), 1u);
  EXPECT_EQ(r->errors[0].code, "InsufficientInstanceCapacity");
  EXPECT_EQ(r->errors[0].category, ErrorCategory::kCapacity);
  EXPECT_EQ(r->errors[0].where.instance_type, "c4.xlarge");
}

TEST(Ec2Parse, DescribeInstancesAcrossReservationsWithTagsAndToken) {
  constexpr const char* kXml = R"(<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r</requestId>
  <reservationSet>
    <item><reservationId>r-1</reservationId><instancesSet>
      <item><instanceId>i-a</instanceId><instanceType>g5.xlarge</instanceType>
        <instanceState><code>16</code><name>running</name></instanceState>
        <placement><availabilityZone>us-east-1b</availabilityZone></placement>
        <launchTime>2026-01-01T00:00:00.000Z</launchTime><instanceLifecycle>spot</instanceLifecycle>
        <clientToken>tok</clientToken>
        <tagSet><item><key>gpuscaler.io/pool</key><value>train</value></item></tagSet></item>
    </instancesSet></item>
    <item><reservationId>r-2</reservationId><instancesSet>
      <item><instanceId>i-b</instanceId><instanceType>p4d.24xlarge</instanceType>
        <instanceState><code>0</code><name>pending</name></instanceState>
        <placement><availabilityZone>us-east-1c</availabilityZone></placement></item>
    </instancesSet></item>
  </reservationSet>
  <nextToken>page2</nextToken>
</DescribeInstancesResponse>)";
  auto page = ParseDescribeInstances(kXml);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->instances.size(), 2u);
  EXPECT_EQ(page->instances[0].lifecycle, CapacityType::kSpot);
  EXPECT_EQ(page->instances[0].tags.at("gpuscaler.io/pool"), "train");
  EXPECT_EQ(page->instances[0].state_code, 16);
  EXPECT_EQ(page->instances[0].client_token, "tok");
  EXPECT_EQ(page->instances[1].lifecycle, CapacityType::kOnDemand);
  EXPECT_EQ(page->instances[1].availability_zone, "us-east-1c");
  EXPECT_EQ(page->next_token, "page2");
  EXPECT_FALSE(ParseDescribeInstances("<nope").ok());
  EXPECT_EQ(ParseDescribeInstances("<TerminateInstancesResponse/>").error().category(), ErrorCategory::kInvalidInput);
}

TEST(Ec2Parse, AutoScalingGroupsWithInstancesAndActivity) {
  constexpr const char* kXml = R"(<DescribeAutoScalingGroupsResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">
  <DescribeAutoScalingGroupsResult><AutoScalingGroups><member>
    <AutoScalingGroupName>gpu-a</AutoScalingGroupName><MinSize>0</MinSize><MaxSize>10</MaxSize>
    <DesiredCapacity>2</DesiredCapacity>
    <AvailabilityZones><member>us-east-1a</member><member>us-east-1b</member></AvailabilityZones>
    <Instances><member><InstanceId>i-1</InstanceId><InstanceType>g5.xlarge</InstanceType>
      <AvailabilityZone>us-east-1a</AvailabilityZone><LifecycleState>InService</LifecycleState>
      <HealthStatus>Healthy</HealthStatus><ProtectedFromScaleIn>true</ProtectedFromScaleIn></member></Instances>
    <Tags><member><Key>team</Key><Value>ml</Value></member></Tags>
  </member></AutoScalingGroups><NextToken>n2</NextToken></DescribeAutoScalingGroupsResult>
  <ResponseMetadata><RequestId>x</RequestId></ResponseMetadata></DescribeAutoScalingGroupsResponse>)";
  auto page = ParseDescribeAutoScalingGroups(kXml);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->groups.size(), 1u);
  const AutoScalingGroup& g = page->groups[0];
  EXPECT_EQ(g.name, "gpu-a");
  EXPECT_EQ(g.max_size, 10);
  EXPECT_EQ(g.desired_capacity, 2);
  EXPECT_EQ(g.availability_zones.size(), 2u);
  ASSERT_EQ(g.instances.size(), 1u);
  EXPECT_TRUE(g.instances[0].protected_from_scale_in);
  EXPECT_EQ(g.instances[0].lifecycle_state, "InService");
  EXPECT_EQ(g.tags.at("team"), "ml");
  EXPECT_EQ(page->next_token, "n2");
  EXPECT_TRUE(ParseEmptyResponse(
                  R"(<SetDesiredCapacityResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/"><ResponseMetadata><RequestId>x</RequestId></ResponseMetadata></SetDesiredCapacityResponse>)",
                  "SetDesiredCapacity")
                  .ok());
  EXPECT_TRUE(g.instance_types.empty());
  auto activity = ParseTerminateInstanceInAutoScalingGroup(
      R"(<TerminateInstanceInAutoScalingGroupResponse><TerminateInstanceInAutoScalingGroupResult><Activity><ActivityId>act-1</ActivityId></Activity></TerminateInstanceInAutoScalingGroupResult></TerminateInstanceInAutoScalingGroupResponse>)");
  ASSERT_TRUE(activity.ok());
  EXPECT_EQ(*activity, "act-1");
}

TEST(Ec2Parse, AutoScalingGroupMixedInstancesPolicyAndScalingActivities) {
  auto groups = ParseDescribeAutoScalingGroups(R"(<DescribeAutoScalingGroupsResponse><DescribeAutoScalingGroupsResult>
  <AutoScalingGroups><member><AutoScalingGroupName>gpu-m</AutoScalingGroupName>
    <MixedInstancesPolicy><LaunchTemplate>
      <LaunchTemplateSpecification><LaunchTemplateName>gpu-nodes</LaunchTemplateName><Version>$Latest</Version></LaunchTemplateSpecification>
      <Overrides><member><InstanceType>g6.xlarge</InstanceType></member><member><InstanceType>g5.xlarge</InstanceType></member></Overrides>
    </LaunchTemplate></MixedInstancesPolicy>
  </member><member><AutoScalingGroupName>gpu-t</AutoScalingGroupName>
    <LaunchTemplate><LaunchTemplateId>lt-0abc</LaunchTemplateId></LaunchTemplate>
  </member></AutoScalingGroups></DescribeAutoScalingGroupsResult></DescribeAutoScalingGroupsResponse>)");
  ASSERT_TRUE(groups.ok()) << groups.error().ToString();
  ASSERT_EQ(groups->groups.size(), 2u);
  EXPECT_EQ(groups->groups[0].launch_template, "gpu-nodes");
  EXPECT_EQ(groups->groups[0].instance_types, (std::vector<std::string>{"g6.xlarge", "g5.xlarge"}));
  EXPECT_EQ(groups->groups[1].launch_template, "lt-0abc");
  EXPECT_TRUE(groups->groups[1].instance_types.empty());

  auto page = ParseDescribeScalingActivities(R"(<DescribeScalingActivitiesResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">
  <DescribeScalingActivitiesResult><Activities><member>
    <ActivityId>act-2</ActivityId><AutoScalingGroupName>gpu-m</AutoScalingGroupName>
    <Description>Launching a new EC2 instance.  Status Reason: Could not launch On-Demand Instances.</Description>
    <Cause>At 2026-12-02T10:00:00Z an instance was started</Cause>
    <StartTime>2026-12-02T10:00:01.123Z</StartTime><EndTime>2026-12-02T10:00:02Z</EndTime>
    <StatusCode>Failed</StatusCode>
    <StatusMessage>Could not launch On-Demand Instances. InsufficientInstanceCapacity - no g6.xlarge</StatusMessage>
    <Progress>100</Progress>
  </member><member>
    <ActivityId>act-1</ActivityId><StartTime>2026-12-02T10:00:00Z</StartTime><StatusCode>InProgress</StatusCode>
  </member></Activities><NextToken>n2</NextToken></DescribeScalingActivitiesResult></DescribeScalingActivitiesResponse>)");
  ASSERT_TRUE(page.ok()) << page.error().ToString();
  ASSERT_EQ(page->activities.size(), 2u);
  const ScalingActivity& a = page->activities[0];
  EXPECT_EQ(a.activity_id, "act-2");
  EXPECT_EQ(a.group, "gpu-m");
  EXPECT_EQ(a.status_code, "Failed");
  EXPECT_NE(a.status_message.find("InsufficientInstanceCapacity"), std::string::npos);
  WallTime t;
  ASSERT_TRUE(ParseRfc3339("2026-12-02T10:00:01Z", &t));
  EXPECT_EQ(a.start_time, t);
  ASSERT_TRUE(a.end_time.has_value());
  EXPECT_FALSE(page->activities[1].end_time.has_value());
  EXPECT_EQ(page->next_token, "n2");
  EXPECT_FALSE(ParseDescribeScalingActivities("<DescribeScalingActivitiesResponse/>").ok());
}

TEST(Sqs, ReceiveMessageAndEventBridgeInterruption) {
  SHARED_OR_SKIP(event, "examples/eventbridge-ec2-spot-instance-interruption-warning.json");
  std::string body = event;
  body.replace(body.find("yyyy-mm-ddThh:mm:ssZ"), 20, "2026-12-02T10:00:00Z");
  body.replace(body.find("\"action\""), 8, "\"terminate\"");
  nlohmann::json answer = {{"Messages", {{{"MessageId", "m1"}, {"ReceiptHandle", "rh1"}, {"MD5OfBody", Md5Hex(body)}, {"Body", body}}}}};
  auto msgs = ParseReceiveMessage(answer.dump());
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ((*msgs)[0].receipt_handle, "rh1");
  auto e = ParseEventBridgeEvent((*msgs)[0].body);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->kind, Ec2EventKind::kSpotInterruption);
  EXPECT_EQ(e->instance_id, "i-1234567890abcdef0");
  EXPECT_EQ(e->action, "terminate");
  EXPECT_EQ(FormatRfc3339(e->time), "2026-12-02T10:00:00Z");

  SHARED_OR_SKIP(rebalance, "examples/eventbridge-ec2-instance-rebalance-recommendation.json");
  auto r = ParseEventBridgeEvent(rebalance);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, Ec2EventKind::kRebalanceRecommendation);

  EXPECT_TRUE(ParseReceiveMessage("{}").ok());
  EXPECT_TRUE(ParseReceiveMessage("{}")->empty());
  EXPECT_FALSE(ParseReceiveMessage("[").ok());
  EXPECT_EQ(Md5Hex(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(nlohmann::json::parse(ReceiveMessageBody("http://q/1/e", 10, 0))["MaxNumberOfMessages"], 10);
}

}  // namespace
}  // namespace gpuscaler::cloud
