// EC2 launch templates (API 2016-11-15) and SSM GetParameter: request
// builders (wire names as botocore writes them) and response parsers. The
// provider uses them to keep one launch template per pool with a node
// template (aws_provider.h); SSM resolves AMI ids from public parameters.
//
// Pure functions over values; thread-safe. Parsers return kInvalidInput for
// bodies that are not the expected document.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// The launch template data gpuscaler sets (LaunchTemplateData.*).
struct LaunchTemplateData {
  std::string image_id;
  std::string user_data;  // plain text; base64-encoded on the wire
  // A name, or an ARN ("arn:…", sent as IamInstanceProfile.Arn).
  std::string instance_profile;
  std::vector<std::string> security_group_ids;
  std::vector<BlockDevice> block_devices;
  bool require_imdsv2 = true;  // MetadataOptions.HttpTokens=required
};

// The LaunchTemplateData.* parameters of `data`, in a fixed order (the
// content hash of a rendered template is taken over them).
QueryParams LaunchTemplateDataParams(const LaunchTemplateData& data);

// CreateLaunchTemplate with `tags` on the template (TagSpecification
// ResourceType=launch-template). `client_token` ≤ 64 ASCII characters.
QueryParams CreateLaunchTemplateQuery(const std::string& name, const std::string& version_description,
                                      const std::string& client_token, const LaunchTemplateData& data,
                                      const std::map<std::string, std::string>& tags);
QueryParams CreateLaunchTemplateVersionQuery(const std::string& name, const std::string& version_description,
                                             const std::string& client_token, const LaunchTemplateData& data);
// Makes `version` the template's default (SetDefaultVersion).
QueryParams ModifyLaunchTemplateQuery(const std::string& name, int64_t version);
// The named versions ("$Default", "$Latest", "3") of template `name`.
QueryParams DescribeLaunchTemplateVersionsQuery(const std::string& name, const std::vector<std::string>& versions);

// One version of a launch template (or the template itself, from
// CreateLaunchTemplate: version_number is then its latest version).
struct LaunchTemplateVersionInfo {
  std::string template_id;
  std::string template_name;
  int64_t version_number = 0;
  std::string version_description;
  bool default_version = false;
  std::string image_id;
  std::string user_data_base64;
  std::vector<std::string> security_group_ids;
};
Result<LaunchTemplateVersionInfo> ParseCreateLaunchTemplate(std::string_view xml);
Result<LaunchTemplateVersionInfo> ParseCreateLaunchTemplateVersion(std::string_view xml);
Result<std::vector<LaunchTemplateVersionInfo>> ParseDescribeLaunchTemplateVersions(std::string_view xml);

// DescribeSecurityGroups by filters (a node template's tag selectors:
// "tag:<key>" = value), paged.
struct DescribeSecurityGroupsRequest {
  std::vector<Filter> filters;
  std::string next_token;
};
QueryParams DescribeSecurityGroupsQuery(const DescribeSecurityGroupsRequest& request);
struct SecurityGroupsPage {
  std::vector<std::string> group_ids;  // in document order
  std::string next_token;              // empty: last page
};
Result<SecurityGroupsPage> ParseDescribeSecurityGroups(std::string_view xml);

// DescribeSubnets by ids (SubnetId.N) and filters ("tag:<key>" = value),
// paged: a node template's subnets with their zones.
struct DescribeSubnetsRequest {
  std::vector<std::string> subnet_ids;
  std::vector<Filter> filters;
  std::string next_token;
};
QueryParams DescribeSubnetsQuery(const DescribeSubnetsRequest& request);
struct SubnetInfo {
  std::string subnet_id;
  std::string availability_zone;
};
struct SubnetsPage {
  std::vector<SubnetInfo> subnets;  // in document order
  std::string next_token;           // empty: last page
};
Result<SubnetsPage> ParseDescribeSubnets(std::string_view xml);

// SSM (JSON protocol awsJson1_1, X-Amz-Target AmazonSSM.GetParameter).
inline constexpr const char* kSsmJsonContentType = "application/x-amz-json-1.1";
inline constexpr const char* kSsmGetParameterTarget = "AmazonSSM.GetParameter";
// {"Name": name}
std::string GetParameterBody(const std::string& name);
// The parameter's Value; kInvalidInput when the answer has none.
Result<std::string> ParseGetParameter(std::string_view json);

}  // namespace gpuscaler::cloud
