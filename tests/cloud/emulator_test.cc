// The cloud emulator's request handler, without sockets: signed requests in,
// AWS-shaped answers out, parsed back with our own client parsers.
#include "sim/cloud_emulator/emulator.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/placement_group_api.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"

namespace gpuscaler::sim {
namespace {

using cloud::QueryParams;

WallTime Start() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-02T10:00:00Z", &t));
  return t;
}

cloud::Credentials Creds(std::string id = "AKIDEXAMPLE", std::string secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") {
  cloud::Credentials c;
  c.access_key_id = std::move(id);
  c.secret_access_key = std::move(secret);
  return c;
}

class EmulatorTest : public ::testing::Test {
 protected:
  EmulatorTest() : clock_(Start()) {}

  CloudEmulator& Emu(EmulatorScenario s = {}) {
    emu_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    return *emu_;
  }

  EmulatorResponse Signed(const std::string& service, EmulatorRequest r, const cloud::Credentials& c, std::string region = "us-east-1") {
    cloud::SigningRequest sr;
    sr.method = r.method;
    sr.path = r.target;
    sr.headers = r.headers;
    sr.body = r.body;
    cloud::SigningParams p;
    p.region = region;
    p.service = service;
    p.time = clock_.WallNow();
    EXPECT_TRUE(cloud::Sign(sr, c, p).ok());
    r.headers = sr.headers;
    return emu_->Handle(r);
  }

  EmulatorResponse Query(const std::string& service, const QueryParams& q, const cloud::Credentials& c = Creds()) {
    EmulatorRequest r;
    r.method = "POST";
    r.target = "/";
    r.headers = {{"Host", "127.0.0.1:4566"}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}};
    r.body = cloud::EncodeForm(q);
    return Signed(service, r, c);
  }

  EmulatorResponse SqsCall(const std::string& op, const nlohmann::json& body) {
    EmulatorRequest r;
    r.method = "POST";
    r.target = "/";
    r.headers = {{"Host", "127.0.0.1:4566"}, {"Content-Type", cloud::kSqsJsonContentType}, {"X-Amz-Target", "AmazonSQS." + op}};
    r.body = body.dump();
    return Signed("sqs", r, Creds());
  }

  cloud::CreateFleetResponse Fleet(const cloud::CreateFleetRequest& req) {
    EmulatorResponse resp = Query("ec2", cloud::CreateFleetQuery(req));
    EXPECT_EQ(resp.status, 200) << resp.body;
    auto parsed = cloud::ParseCreateFleet(resp.body);
    EXPECT_TRUE(parsed.ok()) << resp.body;
    return parsed.ok() ? *parsed : cloud::CreateFleetResponse{};
  }

  std::vector<cloud::Ec2Instance> Describe(const cloud::DescribeInstancesRequest& req = {}) {
    EmulatorResponse resp = Query("ec2", cloud::DescribeInstancesQuery(req));
    auto page = cloud::ParseDescribeInstances(resp.body);
    EXPECT_TRUE(page.ok()) << resp.body;
    return page.ok() ? page->instances : std::vector<cloud::Ec2Instance>{};
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emu_;
};

cloud::CreateFleetRequest FleetRequest(std::vector<std::pair<std::string, std::string>> type_zone, int count,
                                       CapacityType capacity, std::string token = "") {
  cloud::CreateFleetRequest r;
  r.launch_template.name = "gpu-nodes";
  for (auto& [t, z] : type_zone) {
    cloud::FleetOverride o;
    o.instance_type = t;
    o.availability_zone = z;
    r.overrides.push_back(o);
  }
  r.total_target_capacity = count;
  r.default_capacity_type = capacity;
  r.spot_allocation_strategy = "capacity-optimized";
  r.on_demand_allocation_strategy = "lowest-price";
  r.client_token = std::move(token);
  r.instance_tags = {{"gpuscaler.io/pool", "train"}};
  return r;
}

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

TEST_F(EmulatorTest, ThrottlesAndFailsAsScripted) {
  EmulatorScenario s;
  s.throttle_every = 2;
  Emu(s);
  const QueryParams q = cloud::DescribeInstancesQuery({});
  EXPECT_EQ(Query("ec2", q).status, 200);
  EmulatorResponse t = Query("ec2", q);
  EXPECT_EQ(t.status, 503);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeInstances", t.status, t.body).category(), ErrorCategory::kThrottled);
  EXPECT_EQ(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({})).status, 200);
  EmulatorResponse ta = Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({}));
  EXPECT_EQ(ta.status, 400);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeAutoScalingGroups", ta.status, ta.body).category(), ErrorCategory::kThrottled);
  EXPECT_EQ(emu_->stats().throttled, 2);

  EmulatorScenario f;
  f.server_error_rate = 1.0;
  Emu(f);
  EmulatorResponse e = Query("ec2", q);
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(cloud::ErrorFromResponse("DescribeInstances", e.status, e.body).category(), ErrorCategory::kTransient);
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

TEST_F(EmulatorTest, SpotPriceHistoryWindowAndPaging) {
  EmulatorScenario s;
  for (int h = 0; h < 6; ++h) {
    s.spot_prices.push_back({"g5.xlarge", "us-east-1a", 0.40 + 0.01 * h, Start() - Seconds(3600 * (5 - h))});
  }
  s.spot_prices.push_back({"g6.xlarge", "us-east-1b", 0.30, Start() - Seconds(7200)});
  s.spot_prices.push_back({"g5.xlarge", "us-east-1a", 0.99, Start() + Seconds(3600)});  // the future
  Emu(s);
  cloud::DescribeSpotPriceHistoryRequest req;
  req.instance_types = {"g5.xlarge"};
  req.start_time = Start() - Seconds(3600 * 2 + 60);  // in force then: the -3h price
  auto page = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(req)).body);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->prices.size(), 4u);  // -2h, -1h, 0h and the one before the window
  EXPECT_DOUBLE_EQ(page->prices[0].usd_per_hour, 0.45);
  EXPECT_EQ(page->prices[0].time, Start());
  EXPECT_DOUBLE_EQ(page->prices[3].usd_per_hour, 0.42);
  EXPECT_TRUE(page->next_token.empty());

  cloud::DescribeSpotPriceHistoryRequest paged;
  paged.max_results = 3;
  std::vector<cloud::SpotPricePoint> all;
  for (int n = 0; n < 5; ++n) {
    auto p = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(paged)).body);
    ASSERT_TRUE(p.ok());
    all.insert(all.end(), p->prices.begin(), p->prices.end());
    if (p->next_token.empty()) break;
    paged.next_token = p->next_token;
  }
  EXPECT_EQ(all.size(), 7u);  // everything up to now; the future price is not history yet
  clock_.Advance(Seconds(3600));
  paged = {};
  auto later = cloud::ParseDescribeSpotPriceHistory(Query("ec2", cloud::DescribeSpotPriceHistoryQuery(paged)).body);
  EXPECT_DOUBLE_EQ(later->prices[0].usd_per_hour, 0.99);
}

TEST_F(EmulatorTest, AutoScalingGroups) {
  EmulatorScenario s;
  s.groups = {{"gpu-a", 0, 4, 1, "g5.xlarge", {"us-east-1a", "us-east-1b"}, {{"team", "ml"}}},
              {"gpu-b", 1, 2, 1, "g6.xlarge", {}, {}}};
  Emu(s);
  EmulatorResponse set = Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 3, true));
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_TRUE(cloud::ParseEmptyResponse(set.body, "SetDesiredCapacity").ok());
  cloud::DescribeAutoScalingGroupsRequest req;
  req.names = {"gpu-a"};
  auto page = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(req)).body);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->groups.size(), 1u);
  const cloud::AutoScalingGroup& g = page->groups[0];
  EXPECT_EQ(g.desired_capacity, 3);
  ASSERT_EQ(g.instances.size(), 3u);
  EXPECT_EQ(g.instances[0].lifecycle_state, "Pending");
  EXPECT_EQ(g.tags.at("team"), "ml");
  int in_a = 0;
  for (const auto& i : g.instances) in_a += i.availability_zone == "us-east-1a";
  EXPECT_TRUE(in_a == 1 || in_a == 2);  // balanced over two zones

  EmulatorResponse over = Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 5, std::nullopt));
  EXPECT_EQ(over.status, 400);
  EXPECT_NE(over.body.find("above max value 4"), std::string::npos);
  EXPECT_EQ(cloud::ErrorFromResponse("SetDesiredCapacity", over.status, over.body).category(), ErrorCategory::kConfig);

  EmulatorResponse term = Query("autoscaling", cloud::TerminateInstanceInAutoScalingGroupQuery(g.instances[0].instance_id, true));
  ASSERT_EQ(term.status, 200) << term.body;
  EXPECT_FALSE(cloud::ParseTerminateInstanceInAutoScalingGroup(term.body)->empty());
  clock_.Advance(Seconds(60));
  page = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(req)).body);
  EXPECT_EQ(page->groups[0].desired_capacity, 2);
  EXPECT_EQ(page->groups[0].instances.size(), 2u);

  // Tag filters; at min size a decrementing terminate is refused.
  cloud::DescribeAutoScalingGroupsRequest tagged;
  tagged.filters = {{"tag:team", {"ml"}}};
  EXPECT_EQ(cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery(tagged)).body)->groups.size(), 1u);
  auto b = cloud::ParseDescribeAutoScalingGroups(Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({{"gpu-b"}, {}, {}, ""})).body);
  EXPECT_EQ(Query("autoscaling", cloud::TerminateInstanceInAutoScalingGroupQuery(b->groups[0].instances[0].instance_id, true)).status, 400);
}

TEST_F(EmulatorTest, GroupsLaunchAfterTheDelayWithinCapacityAndRecordActivities) {
  EmulatorScenario s;
  s.group_launch_delay = Seconds(20);
  s.capacity = {{"g6.xlarge", "us-east-1a", std::nullopt, 1, "InsufficientInstanceCapacity", {}, {}}};
  ScriptedGroup g{"gpu-a", 0, 4, 0, "", {"us-east-1a"}, {{"team", "ml"}}};
  g.instance_types = {"g6.xlarge"};
  g.propagate_at_launch = false;
  s.groups = {g};
  Emu(s);
  auto group = [&] {
    auto page = cloud::ParseDescribeAutoScalingGroups(
        Query("autoscaling", cloud::DescribeAutoScalingGroupsQuery({{"gpu-a"}, {}, {}, ""})).body);
    EXPECT_TRUE(page.ok() && page->groups.size() == 1);
    return page->groups.at(0);
  };
  auto activities = [&] {
    cloud::DescribeScalingActivitiesRequest req;
    req.group = "gpu-a";
    EmulatorResponse r = Query("autoscaling", cloud::DescribeScalingActivitiesQuery(req));
    auto page = cloud::ParseDescribeScalingActivities(r.body);
    EXPECT_TRUE(page.ok()) << r.body;
    return page.ok() ? page->activities : std::vector<cloud::ScalingActivity>{};
  };
  EXPECT_EQ(group().instance_types, std::vector<std::string>{"g6.xlarge"});
  EXPECT_EQ(group().launch_template, "gpu-nodes");
  ASSERT_EQ(Query("autoscaling", cloud::SetDesiredCapacityQuery("gpu-a", 2, std::nullopt)).status, 200);
  EmulatorResponse tagged =
      Query("autoscaling", cloud::CreateOrUpdateTagsQuery("gpu-a", {{"gpuscaler.io/intent", "t1", true}}));
  EXPECT_TRUE(cloud::ParseEmptyResponse(tagged.body, "CreateOrUpdateTags").ok()) << tagged.body;
  EXPECT_TRUE(group().instances.empty());  // not before the delay
  EXPECT_TRUE(activities().empty());

  clock_.Advance(Seconds(25));
  const cloud::AutoScalingGroup launched = group();
  ASSERT_EQ(launched.instances.size(), 1u);  // the capacity limit
  EXPECT_EQ(launched.tags.at("gpuscaler.io/intent"), "t1");
  const auto listed = Describe();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].launch_time, Start() + Seconds(20));
  EXPECT_EQ(listed[0].tags.at("gpuscaler.io/intent"), "t1");
  EXPECT_EQ(listed[0].tags.at(cloud::kAsgGroupNameTag), "gpu-a");
  EXPECT_EQ(listed[0].tags.count("team"), 0u);  // not propagated
  auto acts = activities();
  ASSERT_EQ(acts.size(), 2u);
  EXPECT_EQ(acts[0].status_code, "Failed");  // newest first
  EXPECT_NE(acts[0].status_message.find("InsufficientInstanceCapacity"), std::string::npos);
  EXPECT_NE(acts[0].status_message.find("g6.xlarge"), std::string::npos);
  EXPECT_EQ(acts[1].status_code, "Successful");
  EXPECT_EQ(acts[1].description, "Launching a new EC2 instance: " + listed[0].instance_id);

  clock_.Advance(Seconds(4));  // retried 10 s after the failure, not before
  EXPECT_EQ(activities().size(), 2u);
  clock_.Advance(Seconds(10));
  EXPECT_EQ(activities().size(), 3u);

  EmulatorResponse unknown = Query("autoscaling", cloud::CreateOrUpdateTagsQuery("gpu-x", {{"k", "v", false}}));
  EXPECT_EQ(unknown.status, 400);
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

TEST_F(EmulatorTest, SpotInterruptionsArriveOnTheQueue) {
  EmulatorScenario s;
  s.interruptions = {{Seconds(60), "g5.xlarge", "us-east-1a", 1, Seconds(120)}};
  Emu(s);
  auto fleet = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 2, CapacityType::kSpot));
  const std::string victim = fleet.instances.at(0).instance_ids.at(0);
  EmulatorResponse url = SqsCall("GetQueueUrl", {{"QueueName", "gpuscaler-interruptions"}});
  ASSERT_EQ(url.status, 200);
  const std::string queue = nlohmann::json::parse(url.body)["QueueUrl"];
  EXPECT_EQ(queue, "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions");
  EXPECT_EQ(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body, "{}");

  clock_.Advance(Seconds(61));
  EmulatorResponse got = SqsCall("ReceiveMessage", nlohmann::json::parse(cloud::ReceiveMessageBody(queue, 10, 0)));
  auto msgs = cloud::ParseReceiveMessage(got.body);
  ASSERT_TRUE(msgs.ok()) << got.body;
  ASSERT_EQ(msgs->size(), 1u);
  EXPECT_EQ((*msgs)[0].md5_of_body, cloud::Md5Hex((*msgs)[0].body));
  auto event = cloud::ParseEventBridgeEvent((*msgs)[0].body);
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->kind, cloud::Ec2EventKind::kSpotInterruption);
  EXPECT_EQ(event->instance_id, victim);
  EXPECT_EQ(event->time, Start() + Seconds(61));
  // Invisible until the visibility timeout passes, then delivered again.
  EXPECT_EQ(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body, "{}");
  clock_.Advance(Seconds(30));
  auto again = cloud::ParseReceiveMessage(SqsCall("ReceiveMessage", {{"QueueUrl", queue}}).body);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(SqsCall("DeleteMessage", {{"QueueUrl", queue}, {"ReceiptHandle", (*again)[0].receipt_handle}}).status, 200);
  EXPECT_EQ(SqsCall("DeleteMessage", {{"QueueUrl", queue}, {"ReceiptHandle", "bogus"}}).status, 400);
  EmulatorResponse no_queue = SqsCall("ReceiveMessage", {{"QueueUrl", "http://x/1/other"}});
  EXPECT_EQ(no_queue.status, 400);
  EXPECT_EQ(cloud::ParseErrorBody(no_queue.body)->code, "QueueDoesNotExist");

  clock_.Advance(Seconds(120));  // the 2-minute notice is over
  for (const auto& i : Describe()) {
    EXPECT_EQ(i.state, i.instance_id == victim ? "terminated" : "running") << i.instance_id;
  }
  EXPECT_FALSE(emu_->Interrupt("i-nope").ok());
}

TEST_F(EmulatorTest, ScriptedInterruptionsWaitForMatchingInstances) {
  EmulatorScenario s;
  s.interruptions = {{Seconds(0), "g5.xlarge", "", 2, Seconds(120)}};
  Emu(s);
  Describe();  // armed, nothing to hit yet
  auto first = Fleet(FleetRequest({{"g5.xlarge", "us-east-1a"}}, 1, CapacityType::kSpot));
  Fleet(FleetRequest({{"g5.xlarge", "us-east-1b"}}, 1, CapacityType::kOnDemand));  // not spot: spared
  clock_.Advance(Seconds(10));
  auto second = Fleet(FleetRequest({{"g5.xlarge", "us-east-1b"}}, 2, CapacityType::kSpot));
  Describe();
  const std::string queue = "http://127.0.0.1:4566/123456789012/gpuscaler-interruptions";
  auto msgs = cloud::ParseReceiveMessage(SqsCall("ReceiveMessage", {{"QueueUrl", queue}, {"MaxNumberOfMessages", 10}}).body);
  ASSERT_TRUE(msgs.ok());
  ASSERT_EQ(msgs->size(), 2u);  // count 2: the first spot instance, then the older of the next two
  EXPECT_EQ(cloud::ParseEventBridgeEvent((*msgs)[0].body)->instance_id, first.instances[0].instance_ids[0]);
  EXPECT_EQ(cloud::ParseEventBridgeEvent((*msgs)[1].body)->instance_id, second.instances[0].instance_ids[0]);
}

TEST(EmulatorScenarioFile, ParsesEveryKeyAndRejectsUnknownOnes) {
  const std::string yaml = R"(
region: us-west-2
zones: [us-west-2a, us-west-2b]
subnets: {subnet-aaa: us-west-2a}
launch_latency: 45s
terminate_latency: 5s
seed: 7
throttle: {every: 4, rate: 0.1}
server_error_rate: 0.05
capacity:
  - {instance_type: g5.xlarge, zone: us-west-2a, capacity_type: spot, limit: 0, error: InsufficientInstanceCapacity, until: 10m}
interruptions:
  - {at: 2m, instance_type: g5.xlarge, count: 2}
spot_prices:
  - {instance_type: g5.xlarge, zone: us-west-2a, price: 0.41, at: "2026-12-01T00:00:00Z"}
  - {instance_type: g5.xlarge, zone: us-west-2a, price: 0.43, at: 30m}
on_demand_prices: {g5.xlarge: 1.006}
auto_scaling_groups:
  - {name: gpu-a, min: 0, max: 5, desired: 1, instance_type: g5.xlarge, tags: {team: ml}}
  - {name: gpu-b, launch_template: gpu-mixed, instance_types: [g6.xlarge, g5.xlarge], propagate_at_launch: false}
group_launch_delay: 15s
queue: interruptions
visibility_timeout: 10s
credentials: {AKIDTEST: secret}
ssm_parameters: {/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id: ami-0eks}
security_groups: [{id: sg-0node, name: nodes, tags: {karpenter.sh/discovery: prod}}]
)";
  auto s = ParseEmulatorScenario(yaml, Start());
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  EXPECT_EQ(s->region, "us-west-2");
  EXPECT_EQ(s->zones.size(), 2u);
  EXPECT_EQ(s->launch_latency, Seconds(45));
  EXPECT_EQ(s->throttle_every, 4);
  ASSERT_EQ(s->capacity.size(), 1u);
  EXPECT_EQ(s->capacity[0].capacity_type, CapacityType::kSpot);
  EXPECT_EQ(s->capacity[0].until, Seconds(600));
  EXPECT_EQ(s->interruptions[0].count, 2);
  EXPECT_EQ(s->spot_prices[1].time, Start() + Seconds(1800));
  EXPECT_EQ(s->groups[0].tags.at("team"), "ml");
  EXPECT_EQ(s->groups[1].launch_template, "gpu-mixed");
  EXPECT_EQ(s->groups[1].instance_types, (std::vector<std::string>{"g6.xlarge", "g5.xlarge"}));
  EXPECT_FALSE(s->groups[1].propagate_at_launch);
  EXPECT_EQ(s->group_launch_delay, Seconds(15));
  EXPECT_EQ(s->queue_name, "interruptions");
  EXPECT_EQ(s->credentials.at("AKIDTEST"), "secret");
  EXPECT_EQ(s->ssm_parameters.at("/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id"),
            "ami-0eks");
  ASSERT_EQ(s->security_groups.size(), 1u);
  EXPECT_EQ(s->security_groups[0].tags.at("karpenter.sh/discovery"), "prod");
  EXPECT_FALSE(ParseEmulatorScenario("security_groups: [{name: x}]", Start()).ok());

  EXPECT_EQ(ParseEmulatorScenario("regoin: x", Start()).error().category(), ErrorCategory::kConfig);
  EXPECT_FALSE(ParseEmulatorScenario("capacity: [{zone: a}]", Start()).ok());
  EXPECT_FALSE(ParseEmulatorScenario("launch_latency: soon", Start()).ok());
  EXPECT_FALSE(ParseEmulatorScenario("[", Start()).ok());
  EXPECT_TRUE(ParseEmulatorScenario("", Start()).ok());
}

}  // namespace
}  // namespace gpuscaler::sim
