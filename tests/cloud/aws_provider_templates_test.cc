// AwsProvider and pools with a node template, against the cloud emulator in
// process: the pool's launch template is created before its first launch,
// reused while unchanged (also by a fresh process), versioned when labels
// change, its AMI resolved through SSM; errors name the pool and launch
// nothing.
#include <gtest/gtest.h>

#include "cloud/emulated_aws.h"
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/launch_template_api.h"
#include "gpuscaler/kube/config.h"

namespace gpuscaler::cloud {
namespace {

using emulated::Start;
using sim::CloudEmulator;
using sim::EmulatorScenario;

constexpr const char* kDefaultAmiParameter =
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id";

class NodeTemplateLaunch : public ::testing::Test {
 protected:
  NodeTemplateLaunch() : clock_(Start()) {
    EmulatorScenario s;
    s.ssm_parameters = {{kDefaultAmiParameter, "ami-0eks131"}, {"/team/ml/ami", "ami-0team"}};
    s.security_groups = {{"sg-0node", "nodes", {{"karpenter.sh/discovery", "prod"}, {"tier", "gpu"}}},
                         {"sg-0cluster", "cluster", {{"karpenter.sh/discovery", "prod"}}},
                         {"sg-0other", "other", {{"karpenter.sh/discovery", "staging"}, {"tier", "gpu"}}}};
    s.subnets = {{"subnet-0a", "us-east-1a"}, {"subnet-0b", "us-east-1b"}, {"subnet-0a2", "us-east-1a"},
                 {"subnet-0c", "us-east-1c"}};
    s.subnet_tags = {{"subnet-0a", {{"karpenter.sh/discovery", "prod"}}},
                     {"subnet-0b", {{"karpenter.sh/discovery", "prod"}}},
                     {"subnet-0a2", {{"karpenter.sh/discovery", "staging"}}},
                     {"subnet-0c", {{"karpenter.sh/discovery", "staging"}}}};
    emulator_ = std::make_unique<CloudEmulator>(std::move(s), clock_);
    aws_ = StartProcess();
  }

  std::unique_ptr<emulated::Installation> StartProcess(bool with_eks = true) {
    AwsProviderOptions o = emulated::ProviderOptions("prod");
    if (with_eks) o.eks = {"", "1.31", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "LS0tLS1CRUdJTg==", "10.100.0.0/16"};
    return std::make_unique<emulated::Installation>(*emulator_, clock_, o);
  }

  LaunchRequest Request(std::string token, std::map<std::string, std::string> labels = {{"team", "ml"}}) {
    LaunchRequest r = emulated::TrainRequest("", 1, std::move(token));
    r.pool = "gpu";
    NodeTemplate t;
    t.instance_profile = "gpu-node";
    t.security_groups = {"sg-0123"};
    r.node_template = t;
    r.node_labels = std::move(labels);
    r.node_taints = {{"nvidia.com/gpu", "true", "NoSchedule"}};
    return r;
  }

  // Requests for `action`, answered with success or not.
  int Calls(const std::string& action) const {
    int n = 0;
    for (const sim::EmulatorRequestRecord& r : emulator_->Requests()) n += r.action == action;
    return n;
  }

  // The template's versions as EC2 describes them, newest first.
  std::vector<LaunchTemplateVersionInfo> Versions(const std::string& spec = "") {
    auto body = aws_->client.Query("ec2", DescribeLaunchTemplateVersionsQuery(
                                              "gpuscaler-prod-gpu", spec.empty() ? std::vector<std::string>{}
                                                                                 : std::vector<std::string>{spec}));
    EXPECT_TRUE(body.ok()) << body.error().ToString();
    if (!body.ok()) return {};
    auto versions = ParseDescribeLaunchTemplateVersions(*body);
    EXPECT_TRUE(versions.ok());
    return versions.ok() ? *versions : std::vector<LaunchTemplateVersionInfo>{};
  }

  std::string UserData(const LaunchTemplateVersionInfo& v) {
    return kube::Base64Decode(v.user_data_base64).value_or("(not base64)");
  }

  ManualClock clock_;
  std::unique_ptr<CloudEmulator> emulator_;
  std::unique_ptr<emulated::Installation> aws_;
};

TEST_F(NodeTemplateLaunch, FirstLaunchCreatesThePoolsTemplateAndLaunchesFromIt) {
  auto r = aws_->provider.Launch(Request("d1-0"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->instances.size(), 1u);
  EXPECT_EQ(Calls("CreateLaunchTemplate"), 1);
  EXPECT_EQ(Calls("GetParameter"), 1);
  std::vector<LaunchTemplateVersionInfo> versions = Versions();
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(versions[0].image_id, "ami-0eks131");  // the EKS-optimized NVIDIA AMI for 1.31
  EXPECT_TRUE(versions[0].default_version);
  EXPECT_EQ(versions[0].version_description.rfind(kTemplateHashPrefix, 0), 0u);
  const std::string user_data = UserData(versions[0]);
  EXPECT_NE(user_data.find("--node-labels=gpuscaler.io/cluster=prod,gpuscaler.io/pool=gpu,team=ml"),
            std::string::npos)
      << user_data;
  EXPECT_NE(user_data.find("--register-with-taints=nvidia.com/gpu=true:NoSchedule"), std::string::npos);
  const sim::EmulatedInstance launched = emulator_->Instances().at(0);
  EXPECT_EQ(launched.launch_template, "gpuscaler-prod-gpu");
  EXPECT_EQ(launched.launch_template_version, "1");
}

TEST_F(NodeTemplateLaunch, NoNewVersionWhileUnchangedEvenForAFreshProcess) {
  ASSERT_TRUE(aws_->provider.Launch(Request("d1-0")).ok());
  ASSERT_TRUE(aws_->provider.Launch(Request("d2-0")).ok());
  EXPECT_EQ(Calls("DescribeLaunchTemplateVersions"), 1);  // not found; the second launch asks nothing
  EXPECT_EQ(Calls("GetParameter"), 1);

  aws_ = StartProcess();  // a restart: reads the default version, finds the same content
  ASSERT_TRUE(aws_->provider.Launch(Request("d3-0")).ok());
  EXPECT_EQ(Calls("CreateLaunchTemplate"), 1);
  EXPECT_EQ(Calls("CreateLaunchTemplateVersion"), 0);
  EXPECT_EQ(Calls("ModifyLaunchTemplate"), 0);
  EXPECT_EQ(Versions().size(), 1u);
  for (const sim::EmulatedInstance& i : emulator_->Instances()) EXPECT_EQ(i.launch_template_version, "1");
}

TEST_F(NodeTemplateLaunch, ChangedLabelsMakeANewDefaultVersionThatLaunchesUse) {
  ASSERT_TRUE(aws_->provider.Launch(Request("d1-0")).ok());
  ASSERT_TRUE(aws_->provider.Launch(Request("d2-0", {{"team", "cv"}})).ok());
  EXPECT_EQ(Calls("CreateLaunchTemplateVersion"), 1);
  EXPECT_EQ(Calls("ModifyLaunchTemplate"), 1);
  std::vector<LaunchTemplateVersionInfo> def = Versions("$Default");
  ASSERT_EQ(def.size(), 1u);
  EXPECT_EQ(def[0].version_number, 2);
  EXPECT_NE(UserData(def[0]).find(",team=cv\""), std::string::npos) << UserData(def[0]);
  EXPECT_EQ(emulator_->Instances().at(1).launch_template_version, "2");

  // Back to the first labels: a third version with that content (the
  // template was created with it, not versioned); then the second labels
  // again: their version's ClientToken gives version 2 back, the default
  // again.
  ASSERT_TRUE(aws_->provider.Launch(Request("d3-0")).ok());
  EXPECT_EQ(Versions("$Default").at(0).version_number, 3);
  EXPECT_EQ(emulator_->Instances().at(2).launch_template_version, "3");
  ASSERT_TRUE(aws_->provider.Launch(Request("d4-0", {{"team", "cv"}})).ok());
  EXPECT_EQ(Versions().size(), 3u);
  EXPECT_EQ(Versions("$Default").at(0).version_number, 2);
  EXPECT_EQ(emulator_->Instances().at(3).launch_template_version, "2");
}

TEST_F(NodeTemplateLaunch, AnAmiIdNeedsNoSsmAndAnSsmParameterIsRead) {
  LaunchRequest by_id = Request("d1-0");
  by_id.node_template->ami_id = "ami-0pinned";
  ASSERT_TRUE(aws_->provider.Launch(by_id).ok());
  EXPECT_EQ(Calls("GetParameter"), 0);
  EXPECT_EQ(Versions("$Default").at(0).image_id, "ami-0pinned");

  LaunchRequest by_parameter = Request("d2-0");
  by_parameter.node_template->ami_ssm_parameter = "/team/ml/ami";
  ASSERT_TRUE(aws_->provider.Launch(by_parameter).ok());
  EXPECT_EQ(Calls("GetParameter"), 1);
  EXPECT_EQ(Versions("$Default").at(0).image_id, "ami-0team");
}

TEST_F(NodeTemplateLaunch, SecurityGroupSelectorsResolveToEveryGroupWithAllTheirTags) {
  LaunchRequest r = Request("d1-0");
  r.node_template->security_group_selectors = {{{"karpenter.sh/discovery", "prod"}},
                                               {{"karpenter.sh/discovery", "prod"}, {"tier", "gpu"}}};
  ASSERT_TRUE(aws_->provider.Launch(r).ok());
  EXPECT_EQ(Calls("DescribeSecurityGroups"), 2);
  EXPECT_EQ(Versions("$Default").at(0).security_group_ids,
            (std::vector<std::string>{"sg-0123", "sg-0cluster", "sg-0node"}));

  LaunchRequest none = Request("d2-0");
  none.pool = "empty";
  none.node_template->security_group_selectors = {{{"karpenter.sh/discovery", "nowhere"}}};
  auto e = aws_->provider.Launch(none);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(e.error().message().find("pool 'empty'"), std::string::npos) << e.error().message();
  EXPECT_NE(e.error().message().find("no security group has the tags karpenter.sh/discovery=nowhere"),
            std::string::npos)
      << e.error().message();
  EXPECT_EQ(Calls("CreateFleet"), 1);
}

TEST_F(NodeTemplateLaunch, SubnetsByIdsAndTagsPutEachZonesLaunchesInItsSubnet) {
  LaunchRequest r = Request("d1-0");
  r.count = 2;  // offerings in us-east-1a and us-east-1b
  r.node_template->subnet_selectors = {{{"karpenter.sh/discovery", "prod"}}};
  Result<LaunchResult> launched = aws_->provider.Launch(r);
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_FALSE(launched->instances.empty());
  for (const sim::EmulatedInstance& i : emulator_->Instances()) {
    EXPECT_EQ(i.subnet_id, i.zone == "us-east-1a" ? "subnet-0a" : "subnet-0b") << i.instance_id;
  }
  for (const Instance& i : launched->instances) EXPECT_FALSE(i.offering.zone.empty());
  EXPECT_EQ(Calls("DescribeSubnets"), 1);
  // Resolved once while the template's subnets stay the same.
  LaunchRequest again = r;
  again.idempotency_token = "d3-0";
  ASSERT_TRUE(aws_->provider.Launch(again).ok());
  EXPECT_EQ(Calls("DescribeSubnets"), 1);

  // By id: the zone comes from DescribeSubnets.
  LaunchRequest by_id = Request("d4-0");
  by_id.pool = "by-id";
  by_id.offerings = {by_id.offerings.at(0)};
  by_id.offerings[0].zone = "us-east-1c";
  by_id.node_template->subnets = {"subnet-0c"};
  ASSERT_TRUE(aws_->provider.Launch(by_id).ok());
  bool in_c = false;
  for (const sim::EmulatedInstance& i : emulator_->Instances()) in_c |= i.subnet_id == "subnet-0c";
  EXPECT_TRUE(in_c);
}

TEST_F(NodeTemplateLaunch, SubnetErrorsNameThePoolAndZoneAndLaunchNothing) {
  struct Case {
    std::string name;
    std::vector<std::string> ids;
    std::vector<std::map<std::string, std::string>> selectors;
    std::string zone;
    ErrorCategory category;
    std::string want;
  } cases[] = {
      {"no subnet in the zone", {}, {{{"karpenter.sh/discovery", "prod"}}}, "us-east-1c", ErrorCategory::kConfig,
       "pool 'gpu': node_template.subnets: no subnet in zone us-east-1c"},
      {"two subnets in one zone", {"subnet-0a"}, {{{"karpenter.sh/discovery", "staging"}}}, "us-east-1a",
       ErrorCategory::kConfig, "zone us-east-1a has 2 subnets (subnet-0a, subnet-0a2); name one subnet per zone"},
      {"a selector that matches none", {}, {{{"karpenter.sh/discovery", "nowhere"}}}, "us-east-1a",
       ErrorCategory::kConfig, "no subnet has the tags karpenter.sh/discovery=nowhere"},
      {"an unknown id", {"subnet-0missing"}, {}, "us-east-1a", ErrorCategory::kNotFound, "subnet-0missing"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LaunchRequest r = Request("e" + std::to_string(++n) + "-0");
    r.offerings = {r.offerings.at(0)};
    r.offerings[0].zone = c.zone;
    r.node_template->subnets = c.ids;
    r.node_template->subnet_selectors = c.selectors;
    Result<LaunchResult> e = aws_->provider.Launch(r);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.error().category(), c.category) << e.error().ToString();
    EXPECT_NE(e.error().message().find("pool 'gpu'"), std::string::npos) << e.error().message();
    EXPECT_NE(e.error().message().find(c.want), std::string::npos) << e.error().message();
  }
  EXPECT_EQ(Calls("CreateFleet"), 0);
  EXPECT_EQ(Calls("CreateLaunchTemplate"), 0);
  EXPECT_TRUE(emulator_->Instances().empty());
}

TEST_F(NodeTemplateLaunch, ErrorsNameThePoolAndLaunchNothing) {
  LaunchRequest missing = Request("d1-0");
  missing.node_template->ami_ssm_parameter = "/nowhere";
  auto r = aws_->provider.Launch(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().category(), ErrorCategory::kNotFound);
  EXPECT_NE(r.error().message().find("pool 'gpu'"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("/nowhere"), std::string::npos) << r.error().message();

  auto no_eks = StartProcess(/*with_eks=*/false);
  auto e = no_eks->provider.Launch(Request("d2-0"));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(e.error().message().find("pool 'gpu'"), std::string::npos);
  EXPECT_NE(e.error().message().find("cloud.eks"), std::string::npos);

  AwsProviderOptions no_template = emulated::ProviderOptions("prod");
  no_template.launch_template = {};
  emulated::Installation bare(*emulator_, clock_, no_template);
  LaunchRequest plain = emulated::TrainRequest("", 1, "d3-0");
  auto p = bare.provider.Launch(plain);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(p.error().message().find("pool 'train'"), std::string::npos);

  EXPECT_EQ(Calls("CreateFleet"), 0);
  EXPECT_TRUE(emulator_->Instances().empty());
}

TEST_F(NodeTemplateLaunch, EmulatorKeepsClientTokensIdempotentAndFleetChecksVersions) {
  LaunchTemplateData d;
  d.image_id = "ami-1";
  auto first = aws_->client.Query("ec2", CreateLaunchTemplateQuery("gpuscaler-x", "", "tok", d, {}));
  auto again = aws_->client.Query("ec2", CreateLaunchTemplateQuery("gpuscaler-x", "", "tok", d, {}));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(ParseCreateLaunchTemplate(*first)->template_id, ParseCreateLaunchTemplate(*again)->template_id);
  d.image_id = "ami-2";
  auto mismatch = aws_->client.Query("ec2", CreateLaunchTemplateQuery("gpuscaler-x", "", "tok", d, {}));
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.error().message().find("IdempotentParameterMismatch"), std::string::npos);
  auto exists = aws_->client.Query("ec2", CreateLaunchTemplateQuery("gpuscaler-x", "", "other", d, {}));
  ASSERT_FALSE(exists.ok());
  EXPECT_NE(exists.error().message().find("AlreadyExists"), std::string::npos);

  CreateFleetRequest fleet;
  fleet.launch_template = {"", "gpuscaler-x", "7"};
  fleet.overrides = {{"g5.xlarge", "us-east-1a", "", std::nullopt, ""}};
  fleet.total_target_capacity = 1;
  auto no_version = aws_->client.Query("ec2", CreateFleetQuery(fleet));
  ASSERT_FALSE(no_version.ok());
  EXPECT_NE(no_version.error().message().find("VersionNotFound"), std::string::npos);
}

}  // namespace
}  // namespace gpuscaler::cloud
