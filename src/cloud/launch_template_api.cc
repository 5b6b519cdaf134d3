#include "gpuscaler/cloud/launch_template_api.h"

#include <nlohmann/json.hpp>

#include "gpuscaler/net/http_client.h"
#include "query_params.h"
#include "xml_util.h"

namespace gpuscaler::cloud {
namespace {

void AddTags(QueryParams& q, const std::string& resource_type, const std::map<std::string, std::string>& tags) {
  if (tags.empty()) return;
  q.emplace_back("TagSpecification.1.ResourceType", resource_type);
  int n = 1;
  for (const auto& [k, v] : tags) {
    q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Key", k);
    q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Value", v);
    ++n;
  }
}

QueryParams VersionQuery(const char* action, const std::string& name, const std::string& version_description,
                         const std::string& client_token, const LaunchTemplateData& data) {
  QueryParams q = {{"Action", action}, {"Version", kEc2ApiVersion}};
  if (!client_token.empty()) q.emplace_back("ClientToken", client_token);
  q.emplace_back("LaunchTemplateName", name);
  if (!version_description.empty()) q.emplace_back("VersionDescription", version_description);
  for (auto& kv : LaunchTemplateDataParams(data)) q.push_back(std::move(kv));
  return q;
}

LaunchTemplateVersionInfo ReadVersion(pugi::xml_node v) {
  LaunchTemplateVersionInfo info;
  info.template_id = v.child_value("launchTemplateId");
  info.template_name = v.child_value("launchTemplateName");
  info.version_number = std::strtoll(v.child_value("versionNumber"), nullptr, 10);
  info.version_description = v.child_value("versionDescription");
  info.default_version = std::string_view(v.child_value("defaultVersion")) == "true";
  pugi::xml_node data = v.child("launchTemplateData");
  info.image_id = data.child_value("imageId");
  info.user_data_base64 = data.child_value("userData");
  for (pugi::xml_node g : data.child("securityGroupIdSet").children("item")) info.security_group_ids.push_back(g.text().get());
  return info;
}

}  // namespace

QueryParams LaunchTemplateDataParams(const LaunchTemplateData& d) {
  const std::string p = "LaunchTemplateData.";
  QueryParams q;
  if (!d.instance_profile.empty()) {
    q.emplace_back(p + (d.instance_profile.rfind("arn:", 0) == 0 ? "IamInstanceProfile.Arn" : "IamInstanceProfile.Name"),
                   d.instance_profile);
  }
  for (size_t i = 0; i < d.block_devices.size(); ++i) {
    const BlockDevice& b = d.block_devices[i];
    const std::string base = p + "BlockDeviceMapping." + std::to_string(i + 1) + ".";
    q.emplace_back(base + "DeviceName", b.device_name);
    q.emplace_back(base + "Ebs.Encrypted", b.encrypted ? "true" : "false");
    if (b.iops) q.emplace_back(base + "Ebs.Iops", std::to_string(*b.iops));
    q.emplace_back(base + "Ebs.VolumeSize", std::to_string(b.volume_size_gib));
    q.emplace_back(base + "Ebs.VolumeType", b.volume_type);
    if (b.throughput_mibps) q.emplace_back(base + "Ebs.Throughput", std::to_string(*b.throughput_mibps));
  }
  q.emplace_back(p + "ImageId", d.image_id);
  if (!d.user_data.empty()) q.emplace_back(p + "UserData", net::Base64Encode(d.user_data));
  for (size_t i = 0; i < d.security_group_ids.size(); ++i) {
    q.emplace_back(p + "SecurityGroupId." + std::to_string(i + 1), d.security_group_ids[i]);
  }
  if (d.require_imdsv2) q.emplace_back(p + "MetadataOptions.HttpTokens", "required");
  return q;
}

QueryParams CreateLaunchTemplateQuery(const std::string& name, const std::string& version_description,
                                      const std::string& client_token, const LaunchTemplateData& data,
                                      const std::map<std::string, std::string>& tags) {
  QueryParams q = VersionQuery("CreateLaunchTemplate", name, version_description, client_token, data);
  AddTags(q, "launch-template", tags);
  return q;
}

QueryParams CreateLaunchTemplateVersionQuery(const std::string& name, const std::string& version_description,
                                             const std::string& client_token, const LaunchTemplateData& data) {
  return VersionQuery("CreateLaunchTemplateVersion", name, version_description, client_token, data);
}

QueryParams ModifyLaunchTemplateQuery(const std::string& name, int64_t version) {
  return {{"Action", "ModifyLaunchTemplate"},
          {"Version", kEc2ApiVersion},
          {"LaunchTemplateName", name},
          {"SetDefaultVersion", std::to_string(version)}};
}

QueryParams DescribeLaunchTemplateVersionsQuery(const std::string& name, const std::vector<std::string>& versions) {
  QueryParams q = {{"Action", "DescribeLaunchTemplateVersions"}, {"Version", kEc2ApiVersion}, {"LaunchTemplateName", name}};
  for (size_t i = 0; i < versions.size(); ++i) q.emplace_back("LaunchTemplateVersion." + std::to_string(i + 1), versions[i]);
  return q;
}

Result<LaunchTemplateVersionInfo> ParseCreateLaunchTemplate(std::string_view body) {
  pugi::xml_document doc;
  if (Status s = xml::Load(doc, body, "CreateLaunchTemplateResponse"); !s.ok()) return s.error();
  pugi::xml_node t = doc.document_element().child("launchTemplate");
  LaunchTemplateVersionInfo info;
  info.template_id = t.child_value("launchTemplateId");
  info.template_name = t.child_value("launchTemplateName");
  info.version_number = std::strtoll(t.child_value("latestVersionNumber"), nullptr, 10);
  info.default_version = std::string_view(t.child_value("defaultVersionNumber")) == t.child_value("latestVersionNumber");
  if (info.template_id.empty() || info.version_number <= 0) {
    return Error::InvalidInput("CreateLaunchTemplate: no launchTemplateId or latestVersionNumber");
  }
  return info;
}

Result<LaunchTemplateVersionInfo> ParseCreateLaunchTemplateVersion(std::string_view body) {
  pugi::xml_document doc;
  if (Status s = xml::Load(doc, body, "CreateLaunchTemplateVersionResponse"); !s.ok()) return s.error();
  LaunchTemplateVersionInfo info = ReadVersion(doc.document_element().child("launchTemplateVersion"));
  if (info.version_number <= 0) return Error::InvalidInput("CreateLaunchTemplateVersion: no versionNumber");
  return info;
}

Result<std::vector<LaunchTemplateVersionInfo>> ParseDescribeLaunchTemplateVersions(std::string_view body) {
  return xml::ParseItems(body, "DescribeLaunchTemplateVersions", "launchTemplateVersionSet", ReadVersion);
}

QueryParams DescribeSecurityGroupsQuery(const DescribeSecurityGroupsRequest& r) {
  QueryParams q = {{"Action", "DescribeSecurityGroups"}, {"Version", kEc2ApiVersion}};
  AddFilters(q, r.filters, /*query_protocol=*/false);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<SecurityGroupsPage> ParseDescribeSecurityGroups(std::string_view body) {
  auto read = [](pugi::xml_node g, SecurityGroupsPage& page) {
    page.group_ids.push_back(g.child_value("groupId"));
    return Status::Ok();
  };
  return xml::ParsePage<SecurityGroupsPage>(body, xml::Protocol::kEc2, "DescribeSecurityGroups", "securityGroupInfo",
                                            read);
}

QueryParams DescribeSubnetsQuery(const DescribeSubnetsRequest& r) {
  QueryParams q = {{"Action", "DescribeSubnets"}, {"Version", kEc2ApiVersion}};
  AddList(q, "SubnetId", r.subnet_ids);
  AddFilters(q, r.filters, /*query_protocol=*/false);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<SubnetsPage> ParseDescribeSubnets(std::string_view body) {
  auto read = [](pugi::xml_node n, SubnetsPage& page) -> Status {
    SubnetInfo info{n.child_value("subnetId"), n.child_value("availabilityZone")};
    if (info.subnet_id.empty() || info.availability_zone.empty())
      return Error::Internal("DescribeSubnets: a subnet without subnetId or availabilityZone");
    page.subnets.push_back(std::move(info));
    return Status::Ok();
  };
  return xml::ParsePage<SubnetsPage>(body, xml::Protocol::kEc2, "DescribeSubnets", "subnetSet", read);
}

std::string GetParameterBody(const std::string& name) { return nlohmann::json{{"Name", name}}.dump(); }

Result<std::string> ParseGetParameter(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("Parameter") || !j["Parameter"].is_object() ||
      !j["Parameter"].contains("Value") || !j["Parameter"]["Value"].is_string()) {
    return Error::InvalidInput("GetParameter: answer has no Parameter.Value");
  }
  return j["Parameter"]["Value"].get<std::string>();
}

}  // namespace gpuscaler::cloud
