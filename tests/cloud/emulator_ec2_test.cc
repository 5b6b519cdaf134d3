// The AWS emulator's EC2 calls, without sockets: SigV4 checked, instant fleets
// (pending then running, tagged, idempotent by client token, partial under
// capacity limits, all or nothing with MinTargetCapacity in one zone),
// DescribeInstances filters and pages, termination through shutting-down, and
// markup escaped in the XML answers.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "sim/cloud_emulator/emulator.h"
#include "tests/cloud/emulator_fixture.h"

namespace gpuscaler::sim::emulator_ec2_test {
namespace {

using cloud::QueryParams;
using emulator_testing::Creds;
using emulator_testing::EmulatorTest;
using emulator_testing::FleetRequest;

TEST_F(EmulatorTest, ChecksSigV4) {
  Emu();
  struct Case {
    const char* name;
    std::function<EmulatorResponse()> call;
    int status;
    const char* code;
  };
  const QueryParams q = cloud::DescribeInstancesQuery({});
  const std::vector<Case> cases = {
      {"valid", [&] { return Query("ec2", q); }, 200, ""},
      {"unknown key: scope only", [&] { return Query("ec2", q, Creds("AKIDOTHER", "whatever")); }, 200, ""},
      {"wrong secret", [&] { return Query("ec2", q, Creds("AKIDEXAMPLE", "nope")); }, 403, "SignatureDoesNotMatch"},
      {"wrong service", [&] { return Query("autoscaling", q); }, 401, "AuthFailure"},
      {"unsigned",
       [&] {
         return emu_->Handle({"POST", "/", {{"Host", "h"}}, cloud::EncodeForm(q)});
       },
       401, "MissingAuthenticationToken"},
      {"wrong region",
       [&] {
         EmulatorRequest r{"POST", "/", {{"Host", "h"}}, cloud::EncodeForm(q)};
         return Signed("ec2", r, Creds(), "eu-west-1");
       },
       401, "AuthFailure"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EmulatorResponse r = c.call();
    EXPECT_EQ(r.status, c.status) << r.body;
    if (c.status != 200) {
      auto e = cloud::ParseErrorBody(r.body);
      ASSERT_TRUE(e.has_value());
      EXPECT_EQ(e->code, c.code);
      EXPECT_EQ(cloud::ErrorFromResponse("X", r.status, r.body).category(), ErrorCategory::kAuth);
    }
  }
  EXPECT_EQ(emu_->stats().auth_failures, 4);
}

TEST_F(EmulatorTest, InstantFleetLaunchesPendingThenRunningWithTags) {
  Emu();
  auto fleet = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kOnDemand, "tok-1"));
  ASSERT_EQ(fleet.instances.size(), 1u);
  EXPECT_EQ(fleet.instances[0].instance_ids.size(), 2u);
  EXPECT_EQ(fleet.instances[0].where.availability_zone, "us-east-1a");
  EXPECT_TRUE(fleet.errors.empty());
  EXPECT_EQ(fleet.fleet_id.rfind("fleet-", 0), 0u);
  auto listed = Describe();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].state, "pending");
  EXPECT_EQ(listed[0].tags.at("gpuscaler.io/pool"), "train");
  EXPECT_EQ(listed[0].client_token, "tok-1");
  EXPECT_EQ(listed[0].instance_id.size(), 19u);  // i- and 17 hex digits
  clock_.Advance(Seconds(30));
  listed = Describe();
  EXPECT_EQ(listed[0].state, "running");
  EXPECT_EQ(listed[0].state_code, 16);
}

TEST_F(EmulatorTest, EscapesMarkupInXmlAnswers) {
  Emu();
  cloud::CreateFleetRequest req = FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kOnDemand);
  req.instance_tags = {{"note", "a<b & 'c' > \"d\""}};
  Fleet(req);
  EmulatorResponse resp = Query("ec2", cloud::DescribeInstancesQuery({}));
  EXPECT_NE(resp.body.find("<value>a&lt;b &amp; &apos;c&apos; &gt; &quot;d&quot;</value>"), std::string::npos) << resp.body;
  auto listed = Describe();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].tags.at("note"), "a<b & 'c' > \"d\"");
}

TEST_F(EmulatorTest, SameClientTokenSameInstances) {
  Emu();
  auto first = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kSpot, "same"));
  clock_.Advance(Seconds(5));
  auto again = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kSpot, "same"));
  EXPECT_EQ(first.fleet_id, again.fleet_id);
  EXPECT_EQ(first.instances[0].instance_ids, again.instances[0].instance_ids);
  EXPECT_EQ(emu_->Instances().size(), 2u);
  Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kSpot, "other"));
  EXPECT_EQ(emu_->Instances().size(), 3u);
  EXPECT_EQ(Describe()[0].lifecycle, CapacityType::kSpot);
}

TEST_F(EmulatorTest, RejectsClientTokensLongerThanEc2Allows) {
  Emu();
  EmulatorResponse r = Query(
      "ec2", cloud::CreateFleetQuery(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kOnDemand,
                                                  std::string(65, 't'))));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("InvalidParameterValue"), std::string::npos);
  EXPECT_TRUE(emu_->Instances().empty());
}

TEST_F(EmulatorTest, CapacityLimitsGivePartialFulfilmentAndFallbacks) {
  EmulatorScenario s;
  s.capacity = {{"g5.xlarge", "us-east-1a", CapacityType::kSpot, 1, "InsufficientInstanceCapacity", {}, {}},
                {"g5.xlarge", "us-east-1b", CapacityType::kSpot, 1, "InsufficientInstanceCapacity", {}, {}},
                {"p4d.24xlarge", "", std::nullopt, 0, "Unsupported", {}, {}}};
  Emu(s);
  // Spot, capacity-optimized keeps the override order: a (1 of 3), then b (1 of 2).
  auto fleet = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}, {"g5.xlarge", "us-east-1b"}}, 3, CapacityType::kSpot));
  ASSERT_EQ(fleet.instances.size(), 2u);
  EXPECT_EQ(fleet.instances[0].where.availability_zone, "us-east-1a");
  EXPECT_EQ(fleet.instances[1].where.availability_zone, "us-east-1b");
  ASSERT_EQ(fleet.errors.size(), 2u);
  EXPECT_EQ(fleet.errors[0].code, "InsufficientInstanceCapacity");
  EXPECT_EQ(fleet.errors[0].category, ErrorCategory::kCapacity);
  EXPECT_EQ(fleet.errors[0].where.lifecycle, CapacityType::kSpot);
  // On-demand is a separate pool.
  auto od = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kOnDemand));
  EXPECT_EQ(od.instances.at(0).instance_ids.size(), 2u);
  // Nothing at all: HTTP 200, errors only.
  auto none = Fleet(FleetRequest({{"p4d.24xlarge", "us-east-1c"}}, 1, CapacityType::kOnDemand));
  EXPECT_TRUE(none.instances.empty());
  ASSERT_EQ(none.errors.size(), 1u);
  EXPECT_EQ(none.errors[0].code, "Unsupported");
  // Terminating frees capacity.
  ASSERT_EQ(Query("ec2", cloud::TerminateInstancesQuery({fleet.instances[0].instance_ids[0]})).status, 200);
  auto again = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kSpot));
  EXPECT_EQ(again.instances.size(), 1u);
}

// A gang's fleet: MinTargetCapacity with SingleAvailabilityZone launches all
// in one zone or nothing, as EC2's instant fleet does.
TEST_F(EmulatorTest, MinTargetCapacityInOneZoneLaunchesAllOrNothing) {
  EmulatorScenario s;
  s.capacity = {{"g5.12xlarge", "us-east-1a", CapacityType::kSpot, 3, "InsufficientInstanceCapacity", {}, {}},
                {"g5.12xlarge", "us-east-1b", CapacityType::kSpot, 3, "InsufficientInstanceCapacity", {}, {}}};
  Emu(s);
  cloud::CreateFleetRequest gang =
      FleetRequest({{"g5.12xlarge", "us-east-1a"}, {"g5.12xlarge", "us-east-1b"}}, 4, CapacityType::kSpot, "gang-1");
  gang.min_target_capacity = 4;
  auto short_everywhere = Fleet(gang);
  EXPECT_TRUE(short_everywhere.instances.empty()) << "3 and 3 are not 4 in one zone";
  ASSERT_EQ(short_everywhere.errors.size(), 2u);
  EXPECT_EQ(short_everywhere.errors[0].code, "InsufficientInstanceCapacity");
  EXPECT_TRUE(emu_->Instances().empty());
  // Without the minimum the same request takes what each zone has.
  cloud::CreateFleetRequest loose = gang;
  loose.min_target_capacity.reset();
  loose.client_token = "loose-1";
  auto partial = Fleet(loose);
  ASSERT_EQ(partial.instances.size(), 2u);
  EXPECT_EQ(partial.instances[0].instance_ids.size() + partial.instances[1].instance_ids.size(), 4u);
  // Room for four in us-east-1b only: all four there.
  EmulatorScenario roomy;
  roomy.capacity = {{"g5.12xlarge", "us-east-1a", CapacityType::kSpot, 3, "InsufficientInstanceCapacity", {}, {}},
                    {"g5.12xlarge", "us-east-1b", CapacityType::kSpot, 4, "InsufficientInstanceCapacity", {}, {}}};
  Emu(roomy);
  gang.client_token = "gang-2";
  auto whole = Fleet(gang);
  ASSERT_EQ(whole.instances.size(), 1u);
  EXPECT_EQ(whole.instances[0].where.availability_zone, "us-east-1b");
  EXPECT_EQ(whole.instances[0].instance_ids.size(), 4u);
  EXPECT_TRUE(whole.errors.empty());
}

TEST_F(EmulatorTest, DescribeInstancesFiltersAndPages) {
  Emu();
  Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 7, CapacityType::kOnDemand));
  auto other = FleetRequest({{"g6.xlarge", "us-east-1b"}}, 2, CapacityType::kOnDemand);
  other.instance_tags = {{"gpuscaler.io/pool", "infer"}};
  Fleet(other);
  cloud::DescribeInstancesRequest req;
  req.filters = {{"tag:gpuscaler.io/pool", {"train"}}};
  req.max_results = 5;
  EmulatorResponse r1 = Query("ec2", cloud::DescribeInstancesQuery(req));
  auto p1 = cloud::ParseDescribeInstances(r1.body);
  ASSERT_TRUE(p1.ok());
  EXPECT_EQ(p1->instances.size(), 5u);
  ASSERT_FALSE(p1->next_token.empty());
  req.next_token = p1->next_token;
  auto p2 = cloud::ParseDescribeInstances(Query("ec2", cloud::DescribeInstancesQuery(req)).body);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->instances.size(), 2u);
  EXPECT_TRUE(p2->next_token.empty());

  cloud::DescribeInstancesRequest by_key;
  by_key.filters = {{"tag-key", {"gpuscaler.io/*"}}, {"instance-type", {"g6.xlarge"}}};
  EXPECT_EQ(Describe(by_key).size(), 2u);
  cloud::DescribeInstancesRequest bad;
  bad.filters = {{"no-such-filter", {"x"}}};
  EXPECT_EQ(Query("ec2", cloud::DescribeInstancesQuery(bad)).status, 400);
  cloud::DescribeInstancesRequest missing;
  missing.instance_ids = {"i-00000000000000000"};
  EmulatorResponse nf = Query("ec2", cloud::DescribeInstancesQuery(missing));
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeInstances", nf.status, nf.body).category(), ErrorCategory::kNotFound);
}

TEST_F(EmulatorTest, TerminateGoesThroughShuttingDown) {
  Emu();
  auto fleet = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kOnDemand));
  const std::string id = fleet.instances.at(0).instance_ids.at(0);
  clock_.Advance(Seconds(60));
  EmulatorResponse r = Query("ec2", cloud::TerminateInstancesQuery({id}));
  auto changes = cloud::ParseTerminateInstances(r.body);
  ASSERT_TRUE(changes.ok()) << r.body;
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].previous_state, "running");
  EXPECT_EQ((*changes)[0].current_state, "shutting-down");
  clock_.Advance(Seconds(10));
  EXPECT_EQ(Describe()[0].state, "terminated");
  // Idempotent for a known id; unknown ids are InvalidInstanceID.NotFound.
  auto again = cloud::ParseTerminateInstances(Query("ec2", cloud::TerminateInstancesQuery({id})).body);
  EXPECT_EQ((*again)[0].current_state, "terminated");
  EmulatorResponse nf = Query("ec2", cloud::TerminateInstancesQuery({id, "i-0123456789abcdef0"}));
  EXPECT_EQ(nf.status, 400);
  EXPECT_EQ(cloud::ParseErrorBody(nf.body)->code, "InvalidInstanceID.NotFound");
  // Terminated instances drop out of listings after an hour.
  clock_.Advance(Seconds(3600));
  EXPECT_TRUE(Describe().empty());
}

}  // namespace
}  // namespace gpuscaler::sim::emulator_ec2_test
