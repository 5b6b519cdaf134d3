// EC2 launch templates and SSM GetParameter.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/launch_template_api.h"
#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

constexpr const char* kDataPrefix = "LaunchTemplateData.";

cloud::QueryParams DataParams(const cloud::QueryParams& q) {
  cloud::QueryParams out;
  const std::string_view prefix = kDataPrefix;
  for (const auto& [k, v] : q) {
    if (k.rfind(prefix, 0) == 0) out.emplace_back(k.substr(prefix.size()), v);
  }
  return out;
}

std::string DataValue(const cloud::QueryParams& data, const std::string& key) {
  for (const auto& [k, v] : data) {
    if (k == key) return v;
  }
  return "";
}

bool HasDataPrefix(const cloud::QueryParams& data, const std::string& prefix) {
  return std::any_of(data.begin(), data.end(), [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
}

// <launchTemplateData> as EC2 describes it (the fields gpuscaler sets).
std::string DataXml(const cloud::QueryParams& d) {
  std::string out = "<launchTemplateData>";
  if (HasDataPrefix(d, "IamInstanceProfile.")) {
    out += "<iamInstanceProfile>";
    if (std::string arn = DataValue(d, "IamInstanceProfile.Arn"); !arn.empty()) Leaf(out, "arn", arn);
    if (std::string name = DataValue(d, "IamInstanceProfile.Name"); !name.empty()) Leaf(out, "name", name);
    out += "</iamInstanceProfile>";
  }
  if (HasDataPrefix(d, "BlockDeviceMapping.")) {
    out += "<blockDeviceMappingSet>";
    for (int n = 1; HasDataPrefix(d, "BlockDeviceMapping." + std::to_string(n) + "."); ++n) {
      const std::string b = "BlockDeviceMapping." + std::to_string(n) + ".";
      out += "<item>";
      Leaf(out, "deviceName", DataValue(d, b + "DeviceName"));
      out += "<ebs>";
      for (const char* field : {"Encrypted", "Iops", "VolumeSize", "VolumeType", "Throughput"}) {
        std::string value = DataValue(d, b + "Ebs." + field);
        std::string element(field);
        element[0] = static_cast<char>(element[0] - 'A' + 'a');
        if (!value.empty()) Leaf(out, element, value);
      }
      out += "</ebs></item>";
    }
    out += "</blockDeviceMappingSet>";
  }
  if (std::string image = DataValue(d, "ImageId"); !image.empty()) Leaf(out, "imageId", image);
  if (std::string user_data = DataValue(d, "UserData"); !user_data.empty()) Leaf(out, "userData", user_data);
  if (HasDataPrefix(d, "SecurityGroupId.")) {
    out += "<securityGroupIdSet>";
    for (int n = 1; HasDataPrefix(d, "SecurityGroupId." + std::to_string(n)); ++n) {
      Leaf(out, "item", DataValue(d, "SecurityGroupId." + std::to_string(n)));
    }
    out += "</securityGroupIdSet>";
  }
  if (std::string tokens = DataValue(d, "MetadataOptions.HttpTokens"); !tokens.empty()) {
    out += "<metadataOptions>";
    Leaf(out, "httpTokens", tokens);
    out += "</metadataOptions>";
  }
  out += "</launchTemplateData>";
  return out;
}

bool ValidTemplateName(const std::string& name) {
  return name.size() >= 3 && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '(' || c == ')' || c == '.' || c == '-' ||
                  c == '/' || c == '_';
         });
}

}  // namespace

CloudEmulator::LaunchTemplate* CloudEmulator::FindTemplate(const Params& p, const std::string& prefix) {
  const std::string id = p.Get(prefix + "LaunchTemplateId");
  if (!id.empty()) {
    for (auto& [name, t] : templates_) {
      if (t.id == id) return &t;
    }
    return nullptr;
  }
  auto it = templates_.find(p.Get(prefix + "LaunchTemplateName"));
  return it == templates_.end() ? nullptr : &it->second;
}

const CloudEmulator::TemplateVersion* CloudEmulator::FindVersion(const LaunchTemplate& t,
                                                                 const std::string& spec) const {
  int64_t number = 0;
  if (spec.empty() || spec == "$Default") {
    number = t.default_version;
  } else if (spec == "$Latest") {
    number = static_cast<int64_t>(t.versions.size());
  } else {
    int n = 0;
    if (!ParseInt(spec, &n)) return nullptr;
    number = n;
  }
  if (number < 1 || number > static_cast<int64_t>(t.versions.size())) return nullptr;
  return &t.versions[static_cast<size_t>(number - 1)];
}

std::optional<EmulatorResponse> CloudEmulator::Replay(const std::string& action, const Params& p) {
  const std::string token = p.Get("ClientToken");
  if (token.empty()) return std::nullopt;
  auto it = template_answers_.find(action + " " + token);
  if (it == template_answers_.end()) return std::nullopt;
  cloud::QueryParams rest;
  for (const auto& kv : p.q) {
    if (kv.first != "ClientToken") rest.push_back(kv);
  }
  if (cloud::EncodeForm(rest) != it->second.first) {
    return Ec2Error(400, "IdempotentParameterMismatch",
                    "The client token you have provided is associated with a resource that is already deleted or "
                    "has different parameters.");
  }
  return it->second.second;
}

void CloudEmulator::Remember(const std::string& action, const Params& p, const EmulatorResponse& answer) {
  const std::string token = p.Get("ClientToken");
  if (token.empty() || answer.status != 200) return;
  cloud::QueryParams rest;
  for (const auto& kv : p.q) {
    if (kv.first != "ClientToken") rest.push_back(kv);
  }
  template_answers_[action + " " + token] = {cloud::EncodeForm(rest), answer};
}

namespace {

std::string TemplateXml(const std::string& element, const std::string& id, const std::string& name, WallTime created,
                        const std::string& account, int64_t default_version, int64_t latest,
                        const std::map<std::string, std::string>& tags) {
  std::string out = "<" + element + ">";
  Leaf(out, "launchTemplateId", id);
  Leaf(out, "launchTemplateName", name);
  Leaf(out, "createTime", Ec2Time(created));
  Leaf(out, "createdBy", "arn:aws:iam::" + account + ":root");
  Leaf(out, "defaultVersionNumber", std::to_string(default_version));
  Leaf(out, "latestVersionNumber", std::to_string(latest));
  TagSet(out, tags);
  out += "</" + element + ">";
  return out;
}

}  // namespace

EmulatorResponse CloudEmulator::CreateLaunchTemplate(const Params& p, WallTime now) {
  if (auto earlier = Replay("CreateLaunchTemplate", p)) return *earlier;
  const std::string name = p.Get("LaunchTemplateName");
  if (!ValidTemplateName(name)) {
    return Ec2Error(400, "InvalidLaunchTemplateName.MalformedException",
                    "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, "
                    "and the following characters: - ( ) . / _.'");
  }
  if (templates_.count(name) > 0) {
    return Ec2Error(400, "InvalidLaunchTemplateName.AlreadyExistsException",
                    "Launch template name already in use.");
  }
  LaunchTemplate t;
  t.id = NewId("lt-", 17);
  t.name = name;
  t.created = now;
  t.versions.push_back({1, p.Get("VersionDescription"), DataParams(p.q), now});
  for (int n = 1; p.Has("TagSpecification." + std::to_string(n) + ".ResourceType"); ++n) {
    const std::string ts = "TagSpecification." + std::to_string(n) + ".";
    if (p.Get(ts + "ResourceType") != "launch-template") continue;
    for (int m = 1; p.Has(ts + "Tag." + std::to_string(m) + ".Key"); ++m) {
      t.tags[p.Get(ts + "Tag." + std::to_string(m) + ".Key")] = p.Get(ts + "Tag." + std::to_string(m) + ".Value");
    }
  }
  std::string body = Ec2Open("CreateLaunchTemplate", Uuid());
  body += TemplateXml("launchTemplate", t.id, t.name, t.created, scenario_.account_id, 1, 1, t.tags);
  body += "</CreateLaunchTemplateResponse>\n";
  templates_[name] = std::move(t);
  EmulatorResponse answer{200, kXmlContentType, {}, body};
  Remember("CreateLaunchTemplate", p, answer);
  return answer;
}

EmulatorResponse CloudEmulator::CreateLaunchTemplateVersion(const Params& p, WallTime now) {
  if (auto earlier = Replay("CreateLaunchTemplateVersion", p)) return *earlier;
  LaunchTemplate* t = FindTemplate(p);
  if (t == nullptr) {
    return Ec2Error(400, "InvalidLaunchTemplateName.NotFoundException",
                    "The specified launch template, with template name " + p.Get("LaunchTemplateName") +
                        ", does not exist.");
  }
  TemplateVersion v{static_cast<int64_t>(t->versions.size()) + 1, p.Get("VersionDescription"), DataParams(p.q), now};
  std::string body = Ec2Open("CreateLaunchTemplateVersion", Uuid());
  body += "<launchTemplateVersion>";
  Leaf(body, "launchTemplateId", t->id);
  Leaf(body, "launchTemplateName", t->name);
  Leaf(body, "versionNumber", std::to_string(v.number));
  if (!v.description.empty()) Leaf(body, "versionDescription", v.description);
  Leaf(body, "createTime", Ec2Time(now));
  Leaf(body, "createdBy", "arn:aws:iam::" + scenario_.account_id + ":root");
  Leaf(body, "defaultVersion", "false");
  body += DataXml(v.data);
  body += "</launchTemplateVersion>\n</CreateLaunchTemplateVersionResponse>\n";
  t->versions.push_back(std::move(v));
  EmulatorResponse answer{200, kXmlContentType, {}, body};
  Remember("CreateLaunchTemplateVersion", p, answer);
  return answer;
}

EmulatorResponse CloudEmulator::ModifyLaunchTemplate(const Params& p) {
  LaunchTemplate* t = FindTemplate(p);
  if (t == nullptr) {
    return Ec2Error(400, "InvalidLaunchTemplateName.NotFoundException",
                    "At least one of the launch templates specified in the request does not exist.");
  }
  if (p.Has("SetDefaultVersion")) {
    const TemplateVersion* v = FindVersion(*t, p.Get("SetDefaultVersion"));
    if (v == nullptr) {
      return Ec2Error(400, "InvalidLaunchTemplateId.VersionNotFound",
                      "Could not find launch template version " + p.Get("SetDefaultVersion") + ".");
    }
    t->default_version = v->number;
  }
  std::string body = Ec2Open("ModifyLaunchTemplate", Uuid());
  body += TemplateXml("launchTemplate", t->id, t->name, t->created, scenario_.account_id, t->default_version,
                      static_cast<int64_t>(t->versions.size()), t->tags);
  body += "</ModifyLaunchTemplateResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeLaunchTemplates(const Params& p) {
  const std::vector<std::string> names = p.List("LaunchTemplateName");
  const std::vector<std::string> ids = p.List("LaunchTemplateId");
  std::string items;
  for (const auto& [name, t] : templates_) {
    const bool named = std::find(names.begin(), names.end(), name) != names.end();
    const bool by_id = std::find(ids.begin(), ids.end(), t.id) != ids.end();
    if ((!names.empty() || !ids.empty()) && !named && !by_id) continue;
    items += TemplateXml("item", t.id, t.name, t.created, scenario_.account_id, t.default_version,
                         static_cast<int64_t>(t.versions.size()), t.tags);
  }
  for (const std::string& name : names) {
    if (templates_.count(name) == 0) {
      return Ec2Error(400, "InvalidLaunchTemplateName.NotFoundException",
                      "At least one of the launch templates specified in the request does not exist.");
    }
  }
  std::string body = Ec2Open("DescribeLaunchTemplates", Uuid());
  body += "<launchTemplates>" + items + "</launchTemplates>\n</DescribeLaunchTemplatesResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeLaunchTemplateVersions(const Params& p) {
  const LaunchTemplate* t = FindTemplate(p);
  if (t == nullptr) {
    return Ec2Error(400, "InvalidLaunchTemplateName.NotFoundException",
                    "At least one of the launch templates specified in the request does not exist.");
  }
  std::vector<const TemplateVersion*> chosen;
  const std::vector<std::string> specs = p.List("LaunchTemplateVersion");
  for (const std::string& spec : specs) {
    const TemplateVersion* v = FindVersion(*t, spec);
    if (v == nullptr) {
      return Ec2Error(400, "InvalidLaunchTemplateId.VersionNotFound",
                      "Could not find launch template version " + spec + ".");
    }
    if (std::find(chosen.begin(), chosen.end(), v) == chosen.end()) chosen.push_back(v);
  }
  if (specs.empty()) {
    for (auto it = t->versions.rbegin(); it != t->versions.rend(); ++it) chosen.push_back(&*it);
  }
  std::string body = Ec2Open("DescribeLaunchTemplateVersions", Uuid());
  body += "<launchTemplateVersionSet>";
  for (const TemplateVersion* v : chosen) {
    body += "<item>";
    Leaf(body, "launchTemplateId", t->id);
    Leaf(body, "launchTemplateName", t->name);
    Leaf(body, "versionNumber", std::to_string(v->number));
    if (!v->description.empty()) Leaf(body, "versionDescription", v->description);
    Leaf(body, "createTime", Ec2Time(v->created));
    Leaf(body, "createdBy", "arn:aws:iam::" + scenario_.account_id + ":root");
    Leaf(body, "defaultVersion", v->number == t->default_version ? "true" : "false");
    body += DataXml(v->data);
    body += "</item>";
  }
  body += "</launchTemplateVersionSet>\n</DescribeLaunchTemplateVersionsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeSecurityGroups(const Params& p) {
  const std::vector<cloud::Filter> filters = p.Filters("Filter", "Value");
  const std::vector<std::string> ids = p.List("GroupId");
  auto matches = [&](const ScriptedSecurityGroup& g) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), g.id) == ids.end()) return false;
    return MatchesFilters(filters, g.tags, {{"group-id", g.id}, {"group-name", g.name}});
  };
  std::string body = Ec2Open("DescribeSecurityGroups", Uuid());
  body += "<securityGroupInfo>";
  for (const ScriptedSecurityGroup& g : scenario_.security_groups) {
    if (!matches(g)) continue;
    body += "<item>";
    Leaf(body, "ownerId", scenario_.account_id);
    Leaf(body, "groupId", g.id);
    Leaf(body, "groupName", g.name.empty() ? g.id : g.name);
    Leaf(body, "groupDescription", g.name.empty() ? g.id : g.name);
    TagSet(body, g.tags);
    body += "</item>";
  }
  body += "</securityGroupInfo>\n</DescribeSecurityGroupsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::DescribeSubnets(const Params& p) {
  const std::vector<cloud::Filter> filters = p.Filters("Filter", "Value");
  const std::vector<std::string> ids = p.List("SubnetId");
  for (const std::string& id : ids) {
    if (scenario_.subnets.count(id) == 0)
      return Ec2Error(400, "InvalidSubnetID.NotFound", "The subnet ID '" + id + "' does not exist");
  }
  static const std::map<std::string, std::string> kNoTags;
  auto matches = [&](const std::string& id, const std::string& zone) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), id) == ids.end()) return false;
    auto tags_it = scenario_.subnet_tags.find(id);
    const std::map<std::string, std::string>& tags = tags_it == scenario_.subnet_tags.end() ? kNoTags : tags_it->second;
    return MatchesFilters(
        filters, tags,
        {{"subnet-id", id}, {"availability-zone", zone}, {"availabilityZone", zone}, {"state", "available"}});
  };
  std::string body = Ec2Open("DescribeSubnets", Uuid());
  body += "<subnetSet>";
  int index = 0;
  for (const auto& [id, zone] : scenario_.subnets) {
    ++index;
    if (!matches(id, zone)) continue;
    body += "<item>";
    Leaf(body, "subnetId", id);
    Leaf(body, "subnetArn", "arn:aws:ec2:" + scenario_.region + ":" + scenario_.account_id + ":subnet/" + id);
    Leaf(body, "state", "available");
    Leaf(body, "ownerId", scenario_.account_id);
    Leaf(body, "vpcId", "vpc-0emulated");
    Leaf(body, "cidrBlock", "10.0." + std::to_string(index) + ".0/24");
    Leaf(body, "availableIpAddressCount", "251");
    Leaf(body, "availabilityZone", zone);
    Leaf(body, "defaultForAz", "false");
    Leaf(body, "mapPublicIpOnLaunch", "false");
    if (auto tags = scenario_.subnet_tags.find(id); tags != scenario_.subnet_tags.end()) TagSet(body, tags->second);
    body += "</item>";
  }
  body += "</subnetSet>\n</DescribeSubnetsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::Ssm(const EmulatorRequest& request, std::string_view op) {
  auto error = [](int status, const std::string& type, const std::string& message) {
    nlohmann::json j = {{"__type", type}, {"message", message}};
    return EmulatorResponse{status, cloud::kSsmJsonContentType, {}, j.dump()};
  };
  if (op != "GetParameter") return error(400, "InvalidAction", "The emulator serves only GetParameter.");
  auto j = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("Name") || !j["Name"].is_string()) {
    return error(400, "ValidationException", "1 validation error detected: Value null at 'name' failed to satisfy "
                                             "constraint: Member must not be null");
  }
  const std::string name = j["Name"];
  auto it = scenario_.ssm_parameters.find(name);
  if (it == scenario_.ssm_parameters.end()) return error(400, "ParameterNotFound", "");
  const std::string arn_name = name.rfind('/', 0) == 0 ? name.substr(1) : name;
  const bool public_parameter = name.rfind("/aws/service/", 0) == 0;
  nlohmann::json parameter = {
      {"Name", name},
      {"Type", "String"},
      {"Value", it->second},
      {"Version", 1},
      {"LastModifiedDate", std::chrono::duration<double>(start_.time_since_epoch()).count()},
      {"ARN", "arn:aws:ssm:" + scenario_.region + ":" + (public_parameter ? "" : scenario_.account_id) +
                  ":parameter/" + arn_name},
      {"DataType", it->second.rfind("ami-", 0) == 0 ? "aws:ec2:image" : "text"}};
  return {200, cloud::kSsmJsonContentType, {}, nlohmann::json{{"Parameter", parameter}}.dump()};
}

}  // namespace gpuscaler::sim
