// Node templates: the user data that joins a node to EKS with exactly the
// pool's labels and taints (AL2023 NodeConfig, Bottlerocket TOML), the
// default AMI parameters, the launch template wire shapes (against bodies
// botocore 1.43 serialises) and the SSM answer.
#include "gpuscaler/cloud/node_template.h"

#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/launch_template_api.h"
#include "gpuscaler/model/text_file.h"

namespace gpuscaler::cloud {
namespace {

EksCluster Cluster() {
  return {"prod", "1.31", "https://ABC.gr7.us-east-1.eks.amazonaws.com", "LS0tLS1CRUdJTg==", "10.100.0.0/16"};
}

NodeTemplate Template() {
  NodeTemplate t;
  t.ami_id = "ami-0abc";
  t.instance_profile = "gpu-node";
  t.security_groups = {"sg-1"};
  return t;
}

const std::vector<Taint> kGpuTaint = {{"nvidia.com/gpu", "true", "NoSchedule"}};

// The NodeConfig document of an AL2023 user data (the one MIME part).
YAML::Node NodeConfigOf(const std::string& user_data) {
  const std::string part_header = "Content-Type: application/node.eks.aws\n\n";
  const size_t begin = user_data.find(part_header);
  EXPECT_NE(begin, std::string::npos) << user_data;
  const size_t body = begin + part_header.size();
  const size_t end = user_data.find("\n--//--", body);
  EXPECT_NE(end, std::string::npos) << user_data;
  return YAML::Load(user_data.substr(body, end - body));
}

TEST(NodeTemplate, Al2023JoinsWithExactlyThePoolsLabelsAndTaints) {
  const auto labels = NodeLabels("prod", "gpu", {{"team", "ml"}}, Template());
  auto ud = RenderUserData(Cluster(), "al2023", labels, kGpuTaint);
  ASSERT_TRUE(ud.ok()) << ud.error().ToString();
  EXPECT_EQ(ud->rfind("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n", 0), 0u) << *ud;
  YAML::Node config = NodeConfigOf(*ud);
  EXPECT_EQ(config["apiVersion"].as<std::string>(), "node.eks.aws/v1alpha1");
  EXPECT_EQ(config["kind"].as<std::string>(), "NodeConfig");
  EXPECT_EQ(config["spec"]["cluster"]["name"].as<std::string>(), "prod");
  EXPECT_EQ(config["spec"]["cluster"]["apiServerEndpoint"].as<std::string>(), Cluster().api_server_endpoint);
  EXPECT_EQ(config["spec"]["cluster"]["certificateAuthority"].as<std::string>(), "LS0tLS1CRUdJTg==");
  EXPECT_EQ(config["spec"]["cluster"]["cidr"].as<std::string>(), "10.100.0.0/16");
  std::vector<std::string> flags = config["spec"]["kubelet"]["flags"].as<std::vector<std::string>>();
  EXPECT_EQ(flags, (std::vector<std::string>{
                       "--node-labels=gpuscaler.io/cluster=prod,gpuscaler.io/pool=gpu,team=ml",
                       "--register-with-taints=nvidia.com/gpu=true:NoSchedule"}));
}

TEST(NodeTemplate, Al2023WithoutTaintsHasNoTaintFlagAndMigPoolsGetTheOperatorLabel) {
  NodeTemplate t = Template();
  t.mig_config = "all-1g.10gb";
  auto ud = RenderUserData(Cluster(), "al2023", NodeLabels("prod", "mig", {}, t), {});
  ASSERT_TRUE(ud.ok());
  std::vector<std::string> flags = NodeConfigOf(*ud)["spec"]["kubelet"]["flags"].as<std::vector<std::string>>();
  EXPECT_EQ(flags, (std::vector<std::string>{
                       "--node-labels=gpuscaler.io/cluster=prod,gpuscaler.io/pool=mig,nvidia.com/mig.config=all-1g.10gb"}));
}

TEST(NodeTemplate, BottlerocketSettingsCarryLabelsTaintsAndClusterDns) {
  const std::vector<Taint> taints = {{"nvidia.com/gpu", "true", "NoSchedule"},
                                     {"nvidia.com/gpu", "true", "NoExecute"},
                                     {"dedicated", "", "PreferNoSchedule"}};
  auto ud = RenderUserData(Cluster(), "bottlerocket", NodeLabels("prod", "gpu", {{"team", "ml"}}, Template()), taints);
  ASSERT_TRUE(ud.ok());
  EXPECT_EQ(*ud,
            "[settings.kubernetes]\n"
            "cluster-name = \"prod\"\n"
            "api-server = \"https://ABC.gr7.us-east-1.eks.amazonaws.com\"\n"
            "cluster-certificate = \"LS0tLS1CRUdJTg==\"\n"
            "cluster-dns-ip = \"10.100.0.10\"\n"
            "\n[settings.kubernetes.node-labels]\n"
            "\"gpuscaler.io/cluster\" = \"prod\"\n"
            "\"gpuscaler.io/pool\" = \"gpu\"\n"
            "\"team\" = \"ml\"\n"
            "\n[settings.kubernetes.node-taints]\n"
            "\"dedicated\" = [\":PreferNoSchedule\"]\n"
            "\"nvidia.com/gpu\" = [\"true:NoSchedule\", \"true:NoExecute\"]\n");
}

TEST(NodeTemplate, RenderingNeedsTheClusterAndAKnownFamily) {
  EksCluster none;
  none.name = "prod";
  auto missing = RenderUserData(none, "al2023", {}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(missing.error().message().find("cloud.eks"), std::string::npos);
  auto family = RenderUserData(Cluster(), "ubuntu", {}, {});
  ASSERT_FALSE(family.ok());
  EXPECT_NE(family.error().message().find("ubuntu"), std::string::npos);
}

TEST(NodeTemplate, DefaultAmisAreTheEksOptimizedNvidiaParameters) {
  EXPECT_EQ(DefaultAmiParameter("al2023", "1.31"),
            "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/nvidia/recommended/image_id");
  EXPECT_EQ(DefaultAmiParameter("bottlerocket", "1.31"), "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/latest/image_id");
}

TEST(NodeTemplate, ContentHashFollowsLabelsTaintsAndImageOnly) {
  auto hash = [](const std::map<std::string, std::string>& labels, const std::vector<Taint>& taints,
                 const std::string& image) {
    auto t = RenderLaunchTemplate(Cluster(), "gpu", labels, taints, Template(), image);
    EXPECT_TRUE(t.ok());
    return t->content_hash;
  };
  const std::string base = hash({{"team", "ml"}}, kGpuTaint, "ami-0abc");
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(hash({{"team", "ml"}}, kGpuTaint, "ami-0abc"), base);
  EXPECT_NE(hash({{"team", "cv"}}, kGpuTaint, "ami-0abc"), base);
  EXPECT_NE(hash({{"team", "ml"}}, {}, "ami-0abc"), base);
  EXPECT_NE(hash({{"team", "ml"}}, kGpuTaint, "ami-0def"), base);
  auto t = RenderLaunchTemplate(Cluster(), "gpu", {}, {}, Template(), "ami-0abc");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->name, "gpuscaler-prod-gpu");
  EXPECT_EQ(t->tags, (std::map<std::string, std::string>{{"gpuscaler.io/cluster", "prod"}, {"gpuscaler.io/pool", "gpu"}}));
}

TEST(LaunchTemplateQuery, BodiesMatchBotocore) {
  LaunchTemplateData d;
  d.image_id = "ami-0abc";
  d.user_data = "hi";
  d.instance_profile = "gpu-node";
  d.security_group_ids = {"sg-1", "sg-2"};
  BlockDevice b;
  b.device_name = "/dev/xvda";
  b.volume_size_gib = 200;
  b.iops = 4000;
  b.throughput_mibps = 250;
  d.block_devices = {b};
  // Produced by botocore 1.43's ec2 serializer from the same values.
  EXPECT_EQ(EncodeForm(CreateLaunchTemplateQuery("gpuscaler-prod-gpu", "gpuscaler content sha256:ab", "tok-1", d,
                                                 {{"gpuscaler.io/cluster", "prod"}, {"gpuscaler.io/pool", "gpu"}})),
            "Action=CreateLaunchTemplate&Version=2016-11-15&ClientToken=tok-1&LaunchTemplateName=gpuscaler-prod-gpu&"
            "VersionDescription=gpuscaler%20content%20sha256%3Aab&LaunchTemplateData.IamInstanceProfile.Name=gpu-node&"
            "LaunchTemplateData.BlockDeviceMapping.1.DeviceName=%2Fdev%2Fxvda&"
            "LaunchTemplateData.BlockDeviceMapping.1.Ebs.Encrypted=true&LaunchTemplateData.BlockDeviceMapping.1.Ebs."
            "Iops=4000&LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize=200&LaunchTemplateData."
            "BlockDeviceMapping.1.Ebs.VolumeType=gp3&LaunchTemplateData.BlockDeviceMapping.1.Ebs.Throughput=250&"
            "LaunchTemplateData.ImageId=ami-0abc&LaunchTemplateData.UserData=aGk%3D&LaunchTemplateData."
            "SecurityGroupId.1=sg-1&LaunchTemplateData.SecurityGroupId.2=sg-2&LaunchTemplateData.MetadataOptions."
            "HttpTokens=required&TagSpecification.1.ResourceType=launch-template&TagSpecification.1.Tag.1.Key="
            "gpuscaler.io%2Fcluster&TagSpecification.1.Tag.1.Value=prod&TagSpecification.1.Tag.2.Key=gpuscaler.io%"
            "2Fpool&TagSpecification.1.Tag.2.Value=gpu");
  EXPECT_EQ(EncodeForm(ModifyLaunchTemplateQuery("gpuscaler-prod-gpu", 3)),
            "Action=ModifyLaunchTemplate&Version=2016-11-15&LaunchTemplateName=gpuscaler-prod-gpu&SetDefaultVersion=3");
  EXPECT_EQ(EncodeForm(DescribeLaunchTemplateVersionsQuery("gpuscaler-prod-gpu", {"$Default"})),
            "Action=DescribeLaunchTemplateVersions&Version=2016-11-15&LaunchTemplateName=gpuscaler-prod-gpu&"
            "LaunchTemplateVersion.1=%24Default");
  d.instance_profile = "arn:aws:iam::123456789012:instance-profile/gpu-node";
  EXPECT_EQ(FormValue(LaunchTemplateDataParams(d), "LaunchTemplateData.IamInstanceProfile.Arn"), d.instance_profile);
}

TEST(LaunchTemplateParse, VersionsAndCreateAnswers) {
  auto versions = ParseDescribeLaunchTemplateVersions(R"(<?xml version="1.0" encoding="UTF-8"?>
<DescribeLaunchTemplateVersionsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <requestId>r-1</requestId>
  <launchTemplateVersionSet><item>
    <launchTemplateId>lt-0abc</launchTemplateId><launchTemplateName>gpuscaler-prod-gpu</launchTemplateName>
    <versionNumber>3</versionNumber><versionDescription>gpuscaler content sha256:ab</versionDescription>
    <defaultVersion>true</defaultVersion>
    <launchTemplateData><imageId>ami-0abc</imageId><userData>aGk=</userData></launchTemplateData>
  </item></launchTemplateVersionSet>
</DescribeLaunchTemplateVersionsResponse>)");
  ASSERT_TRUE(versions.ok()) << versions.error().ToString();
  ASSERT_EQ(versions->size(), 1u);
  EXPECT_EQ((*versions)[0].template_id, "lt-0abc");
  EXPECT_EQ((*versions)[0].version_number, 3);
  EXPECT_EQ((*versions)[0].version_description, "gpuscaler content sha256:ab");
  EXPECT_TRUE((*versions)[0].default_version);
  EXPECT_EQ((*versions)[0].image_id, "ami-0abc");
  EXPECT_EQ((*versions)[0].user_data_base64, "aGk=");

  auto created = ParseCreateLaunchTemplate(R"(<CreateLaunchTemplateResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
  <launchTemplate><launchTemplateId>lt-0abc</launchTemplateId><launchTemplateName>n</launchTemplateName>
  <defaultVersionNumber>1</defaultVersionNumber><latestVersionNumber>1</latestVersionNumber></launchTemplate>
</CreateLaunchTemplateResponse>)");
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->version_number, 1);
  EXPECT_FALSE(ParseCreateLaunchTemplate("<CreateLaunchTemplateResponse/>").ok());
  EXPECT_FALSE(ParseCreateLaunchTemplateVersion("<Other/>").ok());
}

TEST(SsmParse, GetParameterValueAndNotFound) {
  EXPECT_EQ(GetParameterBody("/aws/service/x"), R"({"Name":"/aws/service/x"})");
  auto v = ParseGetParameter(R"({"Parameter":{"Name":"/aws/service/x","Type":"String","Value":"ami-0abc","Version":7}})");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "ami-0abc");
  EXPECT_FALSE(ParseGetParameter(R"({"Parameter":{}})").ok());
  EXPECT_EQ(ClassifyAwsError("ParameterNotFound", 400), ErrorCategory::kNotFound);
  EXPECT_EQ(ClassifyAwsError("InvalidLaunchTemplateName.NotFoundException", 400), ErrorCategory::kNotFound);
  auto err = ErrorFromResponse("GetParameter", 400, R"({"__type":"ParameterNotFound","message":""})");
  EXPECT_EQ(err.category(), ErrorCategory::kNotFound);
}

}  // namespace
}  // namespace gpuscaler::cloud

namespace gpuscaler::cloud {
namespace {

// The IAM policy docs/kubernetes.md shows is the one the EKS example ships,
// and it grants the launch template and SSM calls only on this cluster's
// templates and the public EKS parameters.
TEST(IamPolicy, DocsAndManifestAgreeAndScopeTheTemplateCalls) {
  const std::string root = GPUSCALER_SOURCE_DIR;
  Result<std::string> doc = ReadTextFile(root + "/docs/kubernetes.md");
  Result<std::string> file = ReadTextFile(root + "/config/kubernetes/overlays/eks-example/iam-policy.json");
  ASSERT_TRUE(doc.ok() && file.ok());
  const std::string marker = "`gpuscaler-controller-policy.json`:\n\n```json\n";
  const size_t begin = doc->find(marker);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc->find("\n```", begin + marker.size());
  const nlohmann::json documented = nlohmann::json::parse(doc->substr(begin + marker.size(), end - begin - marker.size()));
  const nlohmann::json shipped = nlohmann::json::parse(*file);
  EXPECT_EQ(documented, shipped);

  std::map<std::string, nlohmann::json> by_action;
  for (const nlohmann::json& statement : shipped["Statement"]) {
    const nlohmann::json actions = statement["Action"].is_array() ? statement["Action"] : nlohmann::json::array({statement["Action"]});
    for (const nlohmann::json& a : actions) by_action[a.get<std::string>()] = statement;
  }
  ASSERT_TRUE(by_action.count("ec2:CreateLaunchTemplate"));
  EXPECT_EQ(by_action["ec2:CreateLaunchTemplate"]["Condition"]["StringEquals"]["aws:RequestTag/gpuscaler.io/cluster"],
            "ml-cluster");
  for (const char* action : {"ec2:CreateLaunchTemplateVersion", "ec2:ModifyLaunchTemplate"}) {
    ASSERT_TRUE(by_action.count(action)) << action;
    EXPECT_EQ(by_action[action]["Condition"]["StringEquals"]["aws:ResourceTag/gpuscaler.io/cluster"], "ml-cluster")
        << action;
  }
  ASSERT_TRUE(by_action.count("ec2:DescribeLaunchTemplateVersions"));
  // Pools with reservations read them; the launch into one is RunInstances
  // from the launch template, tagged at launch.
  ASSERT_TRUE(by_action.count("ec2:DescribeCapacityReservations"));
  ASSERT_TRUE(by_action.count("ec2:RunInstances"));
  ASSERT_TRUE(by_action.count("ec2:DescribeSecurityGroups"));
  ASSERT_TRUE(by_action.count("ssm:GetParameter"));
  for (const nlohmann::json& arn : by_action["ssm:GetParameter"]["Resource"]) {
    EXPECT_EQ(arn.get<std::string>().rfind("arn:aws:ssm:us-east-1::parameter/aws/service/", 0), 0u) << arn;
  }
  const nlohmann::json tag_actions = by_action["ec2:CreateTags"]["Condition"]["StringEquals"]["ec2:CreateAction"];
  EXPECT_NE(std::find(tag_actions.begin(), tag_actions.end(), "CreateLaunchTemplate"), tag_actions.end());
  // Placement groups: read anywhere, created only with this cluster's tag
  // (tagged at creation).
  ASSERT_TRUE(by_action.count("ec2:DescribePlacementGroups"));
  ASSERT_TRUE(by_action.count("ec2:CreatePlacementGroup"));
  EXPECT_EQ(by_action["ec2:CreatePlacementGroup"]["Condition"]["StringEquals"]["aws:RequestTag/gpuscaler.io/cluster"],
            "ml-cluster");
  EXPECT_NE(std::find(tag_actions.begin(), tag_actions.end(), "CreatePlacementGroup"), tag_actions.end());
  // Auto Scaling groups: every tag key the provider writes on one.
  ASSERT_TRUE(by_action.count("autoscaling:CreateOrUpdateTags"));
  const nlohmann::json group_tag_keys =
      by_action["autoscaling:CreateOrUpdateTags"]["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"];
  for (const char* key : {kIntentTag, kIntentDesiredTag, kIntentGangTag, kOwnerTag}) {
    EXPECT_NE(std::find(group_tag_keys.begin(), group_tag_keys.end(), key), group_tag_keys.end()) << key;
  }
  // Warm pools: stop and start only this cluster's instances, as terminate;
  // size only its groups' warm pools.
  for (const char* action : {"ec2:StopInstances", "ec2:StartInstances", "ec2:TerminateInstances"}) {
    ASSERT_TRUE(by_action.count(action)) << action;
    EXPECT_EQ(by_action[action]["Condition"]["StringEquals"]["aws:ResourceTag/gpuscaler.io/cluster"], "ml-cluster")
        << action;
  }
  ASSERT_TRUE(by_action.count("autoscaling:PutWarmPool"));
  EXPECT_EQ(by_action["autoscaling:PutWarmPool"]["Condition"]["StringEquals"]["aws:ResourceTag/gpuscaler.io/cluster"],
            "ml-cluster");
  EXPECT_TRUE(by_action.count("autoscaling:DescribeWarmPool"));
}

}  // namespace
}  // namespace gpuscaler::cloud
