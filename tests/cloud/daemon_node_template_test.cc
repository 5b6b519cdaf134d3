// The bar for node templates: the daemon (provider aws, cloud.eks set) with a
// pool that has labels {team: ml}, the taint nvidia.com/gpu=true:NoSchedule
// and a node_template creates the pool's launch template on `gpuscaler
// cloud-emulator` before its first launch; the real aws CLI reads it back,
// and its user data joins nodes with exactly those labels and taints plus
// gpuscaler's own. A policy reload that changes the labels makes a new
// default version, and the next launch uses it.
// Skipped when `aws` is not on PATH, except under CI=true where that fails.
#include <yaml-cpp/yaml.h>

#include "cloud/aws_cli_harness.h"
#include "gpuscaler/kube/config.h"

namespace gpuscaler::testing {
namespace {

constexpr int kTickMs = 200;
constexpr const char* kAmiParameter =
    "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id";
constexpr const char* kCa = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==";

std::string Policy(const std::string& team) {
  std::string policy = PolicyYaml("[on-demand]", false);
  const std::string at = "    max_nodes: 20\n";
  policy.insert(policy.find(at) + at.size(),
                "    labels: {team: " + team + "}\n"
                "    taints: [{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]\n"
                "    node_template:\n"
                "      instance_profile: gpu-node\n"
                "      security_groups: [sg-0123456789abcdef0, {tags: {karpenter.sh/discovery: test}}]\n"
                "      subnets: [{tags: {karpenter.sh/discovery: test}}]\n"
                "      block_devices: [{device_name: /dev/xvda, volume_size_gib: 200, volume_type: gp3}]\n");
  return policy;
}

class DaemonNodeTemplate : public AwsCliTest {
 protected:
  std::string Scenario() const override {
    return "zones: [us-east-1a, us-east-1b]\nlaunch_latency: 1s\nterminate_latency: 1s\n"
           "ssm_parameters: {\"" + std::string(kAmiParameter) + "\": ami-0eks131nvidia}\n"
           "security_groups:\n"
           "  - {id: sg-0cluster, tags: {karpenter.sh/discovery: test}}\n"
           "  - {id: sg-0elsewhere, tags: {karpenter.sh/discovery: other}}\n"
           // Another installation's subnet sorts first in us-east-1a: the
           // emulator's own pick for a launch that names no subnet.
           "subnets: {subnet-00other: us-east-1a, subnet-0aaa: us-east-1a, subnet-0bbb: us-east-1b}\n"
           "subnet_tags:\n"
           "  subnet-00other: {karpenter.sh/discovery: other}\n"
           "  subnet-0aaa: {karpenter.sh/discovery: test, Name: gpu-a}\n"
           "  subnet-0bbb: {karpenter.sh/discovery: test}\n";
  }
  void TearDown() override {
    if (daemon_) {
      daemon_->Signal(SIGTERM);
      daemon_->Wait(60s);
    }
    daemon_.reset();
    AwsCliTest::TearDown();
  }
  std::string DaemonLog() const { return ReadAll(dir_ / "daemon1.err"); }
  size_t Live() {
    size_t n = 0;
    for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) n += i.live();
    return n;
  }

  // The $Default version of the pool's template, as the aws CLI reads it.
  json DefaultVersion() {
    Run r = Aws({"ec2", "describe-launch-template-versions", "--launch-template-name", "gpuscaler-test-gpu",
                 "--versions", "$Default"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0 || r.out["LaunchTemplateVersions"].size() != 1) return json();
    return r.out["LaunchTemplateVersions"][0];
  }

  // The kubelet flags of the NodeConfig in a version's user data.
  std::vector<std::string> KubeletFlags(const json& version) {
    std::optional<std::string> user_data =
        kube::Base64Decode(version["LaunchTemplateData"]["UserData"].get<std::string>());
    EXPECT_TRUE(user_data.has_value());
    const std::string part = "Content-Type: application/node.eks.aws\n\n";
    const size_t begin = user_data->find(part);
    const size_t end = user_data->find("\n--//--");
    EXPECT_NE(begin, std::string::npos) << *user_data;
    EXPECT_NE(end, std::string::npos) << *user_data;
    if (begin == std::string::npos || end == std::string::npos) return {};
    YAML::Node config = YAML::Load(user_data->substr(begin + part.size(), end - begin - part.size()));
    EXPECT_EQ(config["kind"].as<std::string>(), "NodeConfig");
    EXPECT_EQ(config["spec"]["cluster"]["name"].as<std::string>(), "test");
    EXPECT_EQ(config["spec"]["cluster"]["apiServerEndpoint"].as<std::string>(), "https://ABC.gr7.us-east-1.eks.amazonaws.com");
    EXPECT_EQ(config["spec"]["cluster"]["certificateAuthority"].as<std::string>(), kCa);
    EXPECT_EQ(config["spec"]["cluster"]["cidr"].as<std::string>(), "10.100.0.0/16");
    return config["spec"]["kubelet"]["flags"].as<std::vector<std::string>>();
  }

  QueueDepthServer prometheus_{0};
  std::unique_ptr<ChildProcess> daemon_;
};

TEST_F(DaemonNodeTemplate, CreatesThePoolsTemplateThatJoinsWithExactlyItsLabelsAndTaints) {
  Write("policy.yaml", Policy("ml"));
  Write("gpuscaler.yaml", DaemonConfigYaml(emulator_->url(), prometheus_.url(),
                                           "  eks:\n    kubernetes_version: \"1.31\"\n"
                                           "    api_server_endpoint: https://ABC.gr7.us-east-1.eks.amazonaws.com\n"
                                           "    certificate_authority: " + std::string(kCa) + "\n"
                                           "    service_cidr: 10.100.0.0/16\n"));
  daemon_ = StartDaemon(dir_, kTickMs, "", 1);
  ASSERT_TRUE(daemon_->started());
  if (std::optional<int> exited = WaitUntilServing(*daemon_, dir_)) {
    daemon_.reset();
    FAIL() << "the daemon exited with " << *exited << ":\n" << DaemonLog();
  }

  prometheus_.Set(10);  // 2 GPUs
  ASSERT_TRUE(Eventually([&] { return Live() == 2; }, 60s)) << DaemonLog();

  json version = DefaultVersion();
  ASSERT_FALSE(version.is_null());
  EXPECT_EQ(version["VersionNumber"], 1);
  EXPECT_EQ(version["LaunchTemplateData"]["ImageId"], "ami-0eks131nvidia");
  EXPECT_EQ(version["LaunchTemplateData"]["IamInstanceProfile"]["Name"], "gpu-node");
  EXPECT_EQ(version["LaunchTemplateData"]["SecurityGroupIds"], json::array({"sg-0123456789abcdef0", "sg-0cluster"}));
  EXPECT_EQ(version["LaunchTemplateData"]["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"], 200);
  EXPECT_EQ(version["LaunchTemplateData"]["MetadataOptions"]["HttpTokens"], "required");
  EXPECT_EQ(KubeletFlags(version),
            (std::vector<std::string>{"--node-labels=gpuscaler.io/cluster=test,gpuscaler.io/pool=gpu,team=ml",
                                      "--register-with-taints=nvidia.com/gpu=true:NoSchedule"}));

  Run templates = Aws({"ec2", "describe-launch-templates", "--launch-template-names", "gpuscaler-test-gpu"});
  ASSERT_EQ(templates.exit_code, 0) << templates.err;
  const json& t = templates.out["LaunchTemplates"][0];
  EXPECT_EQ(t["DefaultVersionNumber"], 1);
  EXPECT_EQ(t["Tags"], json::parse(R"([{"Key":"gpuscaler.io/cluster","Value":"test"},
                                       {"Key":"gpuscaler.io/pool","Value":"gpu"}])"));

  Run instances = Aws({"ec2", "describe-instances", "--filters", "Name=tag:gpuscaler.io/pool,Values=gpu"});
  ASSERT_EQ(instances.exit_code, 0) << instances.err;
  for (const json& reservation : instances.out["Reservations"]) {
    for (const json& i : reservation["Instances"]) {
      bool from_template = false;
      for (const json& tag : i["Tags"]) {
        from_template |= tag["Key"] == "aws:ec2launchtemplate:id" && tag["Value"] == t["LaunchTemplateId"];
      }
      EXPECT_TRUE(from_template) << i.dump();
    }
  }
  // The pool's subnets, one per zone, found by their tag: what the aws CLI
  // reads from DescribeSubnets, and where every instance went.
  Run subnets = Aws({"ec2", "describe-subnets", "--filters", "Name=tag:karpenter.sh/discovery,Values=test"});
  ASSERT_EQ(subnets.exit_code, 0) << subnets.err;
  std::map<std::string, std::string> subnet_of_zone;
  for (const json& sn : subnets.out["Subnets"]) subnet_of_zone[sn["AvailabilityZone"]] = sn["SubnetId"];
  EXPECT_EQ(subnet_of_zone, (std::map<std::string, std::string>{{"us-east-1a", "subnet-0aaa"},
                                                                {"us-east-1b", "subnet-0bbb"}}));
  Run one = Aws({"ec2", "describe-subnets", "--subnet-ids", "subnet-0aaa"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(one.out["Subnets"].size(), 1u);
  EXPECT_EQ(one.out["Subnets"][0]["State"], "available");
  EXPECT_EQ(one.out["Subnets"][0]["Tags"], json::parse(R"([{"Key":"Name","Value":"gpu-a"},
                                                           {"Key":"karpenter.sh/discovery","Value":"test"}])"));
  Run missing = Aws({"ec2", "describe-subnets", "--subnet-ids", "subnet-0nowhere"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("InvalidSubnetID.NotFound"), std::string::npos) << missing.err;
  for (const json& reservation : instances.out["Reservations"]) {
    for (const json& i : reservation["Instances"]) {
      EXPECT_EQ(i["SubnetId"], subnet_of_zone[i["Placement"]["AvailabilityZone"].get<std::string>()]) << i.dump();
    }
  }
  Run parameter = Aws({"ssm", "get-parameter", "--name", kAmiParameter});
  ASSERT_EQ(parameter.exit_code, 0) << parameter.err;
  EXPECT_EQ(parameter.out["Parameter"]["Value"], "ami-0eks131nvidia");

  // A reload that changes the labels: the next launch makes version 2, the
  // default, and launches from it.
  Write("policy.yaml", Policy("cv"));
  // The demand rises only once the daemon runs the new policy: raised
  // together, a loaded machine can tick on the new demand first.
  ASSERT_TRUE(Eventually([&] { return DaemonLog().find("policy reloaded") != std::string::npos; }, 60s))
      << DaemonLog();
  prometheus_.Set(15);  // 3 GPUs
  ASSERT_TRUE(Eventually([&] { return Live() == 3; }, 60s)) << DaemonLog();
  version = DefaultVersion();
  EXPECT_EQ(version["VersionNumber"], 2);
  EXPECT_EQ(KubeletFlags(version),
            (std::vector<std::string>{"--node-labels=gpuscaler.io/cluster=test,gpuscaler.io/pool=gpu,team=cv",
                                      "--register-with-taints=nvidia.com/gpu=true:NoSchedule"}));
  int from_version_2 = 0;
  for (const CloudInstance& i : emulator_->Instances().value_or(std::vector<CloudInstance>{})) {
    auto v = i.tags.find("aws:ec2launchtemplate:version");
    from_version_2 += v != i.tags.end() && v->second == "2";
  }
  EXPECT_EQ(from_version_2, 1) << DaemonLog();
}

}  // namespace
}  // namespace gpuscaler::testing
