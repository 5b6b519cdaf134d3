// What the tests of the AWS cloud emulator's request handler share
// (emulator_ec2, _placement_groups, _asg, _spot and _scenario_test.cc):
// EmulatorTest, a CloudEmulator on a ManualClock driven without sockets:
// requests signed with SigV4 in, AWS-shaped answers out, parsed back with our
// own client parsers (CreateFleet, DescribeInstances, SQS JSON calls); the
// clock's start, test credentials, and an instant fleet request for pool
// "train".
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::sim::emulator_testing {

using cloud::QueryParams;

inline WallTime Start() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-02T10:00:00Z", &t));
  return t;
}

inline cloud::Credentials Creds(std::string id = "AKIDEXAMPLE",
                                std::string secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") {
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

inline cloud::CreateFleetRequest FleetRequest(std::vector<std::pair<std::string, std::string>> type_zone,
                                              int count, CapacityType capacity, std::string token = "") {
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

}  // namespace gpuscaler::sim::emulator_testing
