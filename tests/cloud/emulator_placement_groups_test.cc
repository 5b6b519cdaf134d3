// The AWS emulator's placement groups, without sockets: made once, described by
// name and tag, a fleet into an unknown group refused whole, one into a known
// group placed in it, and a cluster group holding instances only in the zone
// of those it holds until it is empty.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/placement_group_api.h"
#include "sim/cloud_emulator/emulator.h"
#include "tests/cloud/emulator_fixture.h"

namespace gpuscaler::sim::emulator_placement_groups_test {
namespace {

using cloud::QueryParams;
using emulator_testing::EmulatorTest;
using emulator_testing::FleetRequest;

// Placement groups as EC2 keeps them: made once (a second create is
// InvalidPlacementGroup.Duplicate), described by name (an unknown name is
// InvalidPlacementGroup.Unknown) and filter; a fleet into an unknown group
// is refused whole, one into a known group puts its instances there.
TEST_F(EmulatorTest, PlacementGroupsAreMadeOnceDescribedAndHoldTheirFleetsInstances) {
  Emu({});
  EmulatorResponse made =
      Query("ec2", cloud::CreatePlacementGroupQuery("gangs", "cluster", {{"gpuscaler.io/cluster", "prod"}}));
  ASSERT_EQ(made.status, 200) << made.body;
  EXPECT_NE(made.body.find("<groupId>pg-"), std::string::npos) << made.body;
  EmulatorResponse again = Query("ec2", cloud::CreatePlacementGroupQuery("gangs", "cluster", {}));
  EXPECT_EQ(again.status, 400);
  EXPECT_NE(again.body.find("<Code>InvalidPlacementGroup.Duplicate</Code>"), std::string::npos) << again.body;
  EmulatorResponse unknown = Query("ec2", cloud::DescribePlacementGroupsQuery({"nope"}));
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("<Code>InvalidPlacementGroup.Unknown</Code>"), std::string::npos) << unknown.body;
  EXPECT_EQ(cloud::ClassifyAwsError("InvalidPlacementGroup.Unknown", 400), ErrorCategory::kNotFound);
  auto groups = cloud::ParseDescribePlacementGroups(Query("ec2", cloud::DescribePlacementGroupsQuery({"gangs"})).body);
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].name, "gangs");
  EXPECT_EQ((*groups)[0].strategy, "cluster");
  EXPECT_EQ((*groups)[0].state, "available");
  EXPECT_EQ((*groups)[0].tags.at("gpuscaler.io/cluster"), "prod");
  QueryParams by_tag = cloud::DescribePlacementGroupsQuery({});
  by_tag.emplace_back("Filter.1.Name", "tag:gpuscaler.io/cluster");
  by_tag.emplace_back("Filter.1.Value.1", "staging");
  auto none = cloud::ParseDescribePlacementGroups(Query("ec2", by_tag).body);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  cloud::CreateFleetRequest into_unknown = FleetRequest({{"p5.48xlarge", "us-east-1a"}}, 2, CapacityType::kOnDemand, "pg-1");
  into_unknown.overrides[0].placement_group = "missing";
  EmulatorResponse refused = Query("ec2", cloud::CreateFleetQuery(into_unknown));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("<Code>InvalidPlacementGroup.Unknown</Code>"), std::string::npos) << refused.body;
  EXPECT_TRUE(emu_->Instances().empty());

  cloud::CreateFleetRequest into_gangs = into_unknown;
  into_gangs.overrides[0].placement_group = "gangs";
  into_gangs.client_token = "pg-2";
  auto fleet = Fleet(into_gangs);
  ASSERT_EQ(fleet.instances.size(), 1u);
  for (const cloud::Ec2Instance& i : Describe()) EXPECT_EQ(i.placement_group, "gangs") << i.instance_id;
  EXPECT_EQ(Describe().size(), 2u);
}

// EC2 keeps a cluster placement group in the zone of its instances: an
// override in another zone fails with InvalidPlacementGroup.InUse (the fleet
// takes the group's zone when it may), until the group is empty again.
TEST_F(EmulatorTest, AClusterPlacementGroupTakesInstancesOnlyInTheZoneOfThoseItHolds) {
  Emu();
  ASSERT_EQ(Query("ec2", cloud::CreatePlacementGroupQuery("gangs", "cluster", {})).status, 200);
  auto in_group = [](std::vector<std::pair<std::string, std::string>> where, int count, const std::string& token) {
    cloud::CreateFleetRequest r = FleetRequest(std::move(where), count, CapacityType::kOnDemand, token);
    for (cloud::FleetOverride& o : r.overrides) o.placement_group = "gangs";
    return r;
  };
  auto first = Fleet(in_group({{"p5.48xlarge", "us-east-1a"}}, 2, "pg-a"));
  ASSERT_EQ(first.instances.size(), 1u);

  auto other_zone = Fleet(in_group({{"p5.48xlarge", "us-east-1b"}}, 2, "pg-b"));
  EXPECT_TRUE(other_zone.instances.empty());
  ASSERT_EQ(other_zone.errors.size(), 1u);
  EXPECT_EQ(other_zone.errors[0].code, "InvalidPlacementGroup.InUse");
  EXPECT_EQ(other_zone.errors[0].message,
            "The placement group 'gangs' is in use in another availability zone: us-east-1a");

  auto either = Fleet(in_group({{"p5.48xlarge", "us-east-1b"}, {"p5.48xlarge", "us-east-1a"}}, 1, "pg-ab"));
  ASSERT_EQ(either.instances.size(), 1u);
  EXPECT_EQ(either.instances[0].where.availability_zone, "us-east-1a");

  std::vector<std::string> ids;
  for (const cloud::Ec2Instance& i : Describe()) ids.push_back(i.instance_id);
  ASSERT_EQ(Query("ec2", cloud::TerminateInstancesQuery(ids)).status, 200);
  auto while_shutting_down = Fleet(in_group({{"p5.48xlarge", "us-east-1b"}}, 1, "pg-b2"));
  EXPECT_TRUE(while_shutting_down.instances.empty()) << "shutting-down instances are still in the group";
  clock_.Advance(Seconds(60));
  auto emptied = Fleet(in_group({{"p5.48xlarge", "us-east-1b"}}, 1, "pg-b3"));
  ASSERT_EQ(emptied.instances.size(), 1u);
  EXPECT_EQ(emptied.instances[0].where.availability_zone, "us-east-1b");
}

}  // namespace
}  // namespace gpuscaler::sim::emulator_placement_groups_test
