// AwsProvider: the cluster placement groups of gang launches.
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/placement_group_api.h"

namespace gpuscaler::cloud {

Result<std::optional<PlacementGroupInfo>> AwsProvider::FindPlacementGroup(const std::string& name) {
  Result<std::string> body = client_.Query("ec2", DescribePlacementGroupsQuery({name}));
  if (!body.ok()) {
    // EC2 answers a name it does not know with InvalidPlacementGroup.Unknown.
    if (body.error().category() == ErrorCategory::kNotFound) return std::optional<PlacementGroupInfo>();
    return body.error();
  }
  Result<std::vector<PlacementGroupInfo>> groups = ParseDescribePlacementGroups(*body);
  if (!groups.ok()) return groups.error();
  for (PlacementGroupInfo& g : *groups) {
    if (g.name == name) return std::optional<PlacementGroupInfo>(std::move(g));
  }
  return std::optional<PlacementGroupInfo>();
}

Status AwsProvider::EnsurePlacementGroup(const std::string& pool, const std::string& name) {
  if (placement_groups_.count(name) != 0) return Status::Ok();
  const std::string where = "pool '" + pool + "': placement group '" + name + "'";
  Result<std::optional<PlacementGroupInfo>> found = FindPlacementGroup(name);
  if (!found.ok()) return found.error().WithContext(where);
  if (!found->has_value()) {
    const std::map<std::string, std::string> tags = {{kClusterTag, options_.cluster_name}, {kOwnerTag, pool}};
    Result<std::string> created = client_.Query("ec2", CreatePlacementGroupQuery(name, kClusterPlacementStrategy, tags));
    if (!created.ok()) {
      // Another replica, or this call's lost first answer, may have made it
      // (EC2 then says InvalidPlacementGroup.Duplicate): read it back.
      Result<std::optional<PlacementGroupInfo>> again = FindPlacementGroup(name);
      if (!again.ok() || !again->has_value()) return created.error().WithContext(where);
      found = std::move(again);
    }
  }
  if (found->has_value() && (*found)->strategy != kClusterPlacementStrategy) {
    return Error::Config(where + " exists with strategy '" + (*found)->strategy +
                         "', not 'cluster': name another group in the policy, or delete that one");
  }
  placement_groups_.insert(name);
  return Status::Ok();
}

}  // namespace gpuscaler::cloud
