// AwsProvider: the launch templates of pools with a node template.
#include <algorithm>

#include <set>

#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/launch_template_api.h"
#include "gpuscaler/cloud/sigv4.h"
#include "aws_provider_impl.h"

namespace gpuscaler::cloud {
namespace {

// ≤ 64 characters, the same for the same action, template name and content,
// so a retried or concurrent create makes one template or version, not two.
// A version whose content the template had before gets the earlier version
// back, which is then made the default again: the same content.
std::string TemplateClientToken(std::string_view action, const std::string& name, const std::string& content_hash) {
  return "gpuscaler-" + Sha256Hex(std::string(action) + "\n" + name + "\n" + content_hash).substr(0, 40);
}

// Lists, page by page, what the node template selector `tags` matches
// (`action` with a "tag:<key>" filter per tag); `each(page)` takes a page and
// says how many it held. kConfig "no <what> has the tags k=v, …" when nothing
// matches: a selector that matches nothing is a misconfiguration.
template <typename Request, typename Page, typename Each>
Status ForEachTagged(AwsClient& client, std::string_view action, std::string_view what,
                     const std::map<std::string, std::string>& tags, QueryParams (*query)(const Request&),
                     Result<Page> (*parse)(std::string_view), Each each) {
  Request request;
  std::string described;
  for (const auto& [key, value] : tags) {
    request.filters.push_back({"tag:" + key, {value}});
    described += (described.empty() ? "" : ", ") + key + "=" + value;
  }
  size_t matched = 0;
  Status listed = ForEachPage(client, "ec2", action, request, query, parse,
                              [&](const Page& page) { matched += each(page); });
  if (!listed.ok()) return listed;
  if (matched == 0) return Error::Config("no " + std::string(what) + " has the tags " + described);
  return Status::Ok();
}

}  // namespace

Result<std::string> AwsProvider::ResolveImage(const NodeTemplate& t) {
  if (!t.ami_id.empty()) return t.ami_id;
  const std::string parameter = t.ami_ssm_parameter.empty()
                                    ? DefaultAmiParameter(t.ami_family, options_.eks.kubernetes_version)
                                    : t.ami_ssm_parameter;
  Result<std::string> body =
      client_.Json("ssm", kSsmGetParameterTarget, GetParameterBody(parameter), kSsmJsonContentType);
  if (!body.ok()) return body.error().WithContext("AMI from SSM parameter " + parameter);
  Result<std::string> value = ParseGetParameter(*body);
  if (!value.ok()) return value.error().WithContext("AMI from SSM parameter " + parameter);
  if (value->rfind("ami-", 0) != 0) {
    return Error::Config("SSM parameter " + parameter + " holds '" + *value + "', not an AMI id (ami-…)");
  }
  return value;
}

Result<std::vector<std::string>> AwsProvider::ResolveSecurityGroups(const NodeTemplate& t) {
  std::vector<std::string> ids = t.security_groups;
  for (const std::map<std::string, std::string>& tags : t.security_group_selectors) {
    // No group is a misconfiguration, not "no security group": a node
    // without its groups would not reach the cluster.
    Status listed = ForEachTagged(client_, "DescribeSecurityGroups", "security group", tags,
                                  DescribeSecurityGroupsQuery, ParseDescribeSecurityGroups,
                                  [&](const SecurityGroupsPage& page) {
                                    ids.insert(ids.end(), page.group_ids.begin(), page.group_ids.end());
                                    return page.group_ids.size();
                                  });
    if (!listed.ok()) return listed.error();
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

Result<const std::map<std::string, std::string>*> AwsProvider::PoolSubnets(const std::string& pool,
                                                                          const NodeTemplate& t) {
  if (t.subnets.empty() && t.subnet_selectors.empty()) return nullptr;
  std::string key;
  for (const std::string& id : t.subnets) key += id + ";";
  for (const std::map<std::string, std::string>& tags : t.subnet_selectors) {
    key += "tags:";
    for (const auto& [k, v] : tags) key += k + "=" + v + ",";
    key += ";";
  }
  auto known = pool_subnets_.find(pool);
  if (known != pool_subnets_.end() && known->second.source_key == key) return &known->second.by_zone;

  const std::string context = "pool '" + pool + "': node_template.subnets";
  std::map<std::string, std::set<std::string>> by_zone;
  auto collect = [&](const SubnetsPage& page) {
    for (const SubnetInfo& s : page.subnets) by_zone[s.availability_zone].insert(s.subnet_id);
  };
  if (!t.subnets.empty()) {
    DescribeSubnetsRequest request;
    request.subnet_ids = t.subnets;
    Status listed = ForEachPage(client_, "ec2", "DescribeSubnets", request, DescribeSubnetsQuery,
                                ParseDescribeSubnets, collect);
    if (!listed.ok()) return listed.error().WithContext(context);
  }
  for (const std::map<std::string, std::string>& tags : t.subnet_selectors) {
    Status listed = ForEachTagged(client_, "DescribeSubnets", "subnet", tags, DescribeSubnetsQuery,
                                  ParseDescribeSubnets, [&](const SubnetsPage& page) {
                                    collect(page);
                                    return page.subnets.size();
                                  });
    if (!listed.ok()) return listed.error().WithContext(context);
  }
  ResolvedSubnets resolved;
  resolved.source_key = key;
  for (const auto& [zone, ids] : by_zone) {
    if (ids.size() > 1) {
      std::string listed;
      for (const std::string& id : ids) listed += (listed.empty() ? "" : ", ") + id;
      return Error::Config(context + ": zone " + zone + " has " + std::to_string(ids.size()) + " subnets (" +
                           listed + "); name one subnet per zone");
    }
    resolved.by_zone[zone] = *ids.begin();
  }
  ResolvedSubnets& stored = pool_subnets_[pool];
  stored = std::move(resolved);
  return &stored.by_zone;
}

Result<LaunchTemplateRef> AwsProvider::EnsureLaunchTemplate(const LaunchRequest& request) {
  const std::string context = "pool '" + request.pool + "': launch template";
  auto fail = [&](const Error& e) { return e.WithContext(context); };
  if (!options_.eks.configured() || options_.eks.kubernetes_version.empty()) {
    return Error::Config(context + ": the pool has a node_template, so the daemon configuration needs cloud.eks "
                                   "(kubernetes_version, api_server_endpoint, certificate_authority, service_cidr)");
  }
  EksCluster cluster = options_.eks;
  cluster.name = options_.cluster_name;
  const NodeTemplate& t = *request.node_template;
  // Rendered once with the AMI's source in place of its id: when that is
  // unchanged, so is the template (an SSM parameter is read again only then).
  const std::string ami_source = !t.ami_id.empty() ? t.ami_id
                                 : !t.ami_ssm_parameter.empty()
                                     ? "ssm:" + t.ami_ssm_parameter
                                     : "ssm:" + DefaultAmiParameter(t.ami_family, cluster.kubernetes_version);
  // Likewise each selector stands for the groups it matches.
  NodeTemplate sources = t;
  for (const std::map<std::string, std::string>& tags : t.security_group_selectors) {
    std::string selector = "tags:";
    for (const auto& [key, value] : tags) selector += key + "=" + value + ";";
    sources.security_groups.push_back(selector);
  }
  Result<RenderedLaunchTemplate> unresolved =
      RenderLaunchTemplate(cluster, request.pool, request.node_labels, request.node_taints, sources, ami_source);
  if (!unresolved.ok()) return fail(unresolved.error());
  auto known = templates_.find(request.pool);
  if (known != templates_.end() && known->second.source_key == unresolved->content_hash) return known->second.ref;

  Result<std::string> image = ResolveImage(t);
  if (!image.ok()) return fail(image.error());
  Result<std::vector<std::string>> groups = ResolveSecurityGroups(t);
  if (!groups.ok()) return fail(groups.error());
  NodeTemplate resolved = t;
  resolved.security_groups = std::move(groups).value();
  Result<RenderedLaunchTemplate> rendered =
      RenderLaunchTemplate(cluster, request.pool, request.node_labels, request.node_taints, resolved, *image);
  if (!rendered.ok()) return fail(rendered.error());
  const std::string description = kTemplateHashPrefix + rendered->content_hash;

  int64_t version = 0;
  Result<std::string> current =
      client_.Query("ec2", DescribeLaunchTemplateVersionsQuery(rendered->name, {"$Default"}));
  if (!current.ok() && current.error().category() != ErrorCategory::kNotFound) return fail(current.error());
  if (!current.ok()) {
    Result<std::string> created = client_.Query(
        "ec2", CreateLaunchTemplateQuery(rendered->name, description,
                                         TemplateClientToken("CreateLaunchTemplate", rendered->name, rendered->content_hash),
                                         rendered->data, rendered->tags));
    Result<LaunchTemplateVersionInfo> info =
        created.ok() ? ParseCreateLaunchTemplate(*created) : Result<LaunchTemplateVersionInfo>(created.error());
    if (!info.ok()) return fail(info.error());
    version = info->version_number;
  } else {
    Result<std::vector<LaunchTemplateVersionInfo>> versions = ParseDescribeLaunchTemplateVersions(*current);
    if (!versions.ok()) return fail(versions.error());
    if (!versions->empty() && versions->front().version_description == description) {
      version = versions->front().version_number;
    } else {
      Result<std::string> created =
          client_.Query("ec2", CreateLaunchTemplateVersionQuery(
                                   rendered->name, description,
                                   TemplateClientToken("CreateLaunchTemplateVersion", rendered->name, rendered->content_hash),
                                   rendered->data));
      Result<LaunchTemplateVersionInfo> info = created.ok() ? ParseCreateLaunchTemplateVersion(*created)
                                                            : Result<LaunchTemplateVersionInfo>(created.error());
      if (!info.ok()) return fail(info.error());
      version = info->version_number;
      Result<std::string> modified = client_.Query("ec2", ModifyLaunchTemplateQuery(rendered->name, version));
      if (modified.ok()) {
        if (Status s = ParseEmptyResponse(*modified, "ModifyLaunchTemplate"); !s.ok()) return fail(s.error());
      } else {
        return fail(modified.error());
      }
    }
  }
  LaunchTemplateRef ref;
  ref.name = rendered->name;
  ref.version = std::to_string(version);
  templates_[request.pool] = {unresolved->content_hash, ref};
  return ref;
}

}  // namespace gpuscaler::cloud
