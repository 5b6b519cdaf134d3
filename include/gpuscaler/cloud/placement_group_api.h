// EC2 placement groups (API 2016-11-15): request builders (wire names as
// botocore writes them) and response parsers. The provider makes the
// cluster placement group a pool's gang launches go into (aws_provider.h).
//
// Pure functions over values; thread-safe. Parsers return kInvalidInput for
// bodies that are not the expected document.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// The strategy that packs instances close together in one Availability Zone.
inline constexpr const char* kClusterPlacementStrategy = "cluster";

// A placement group as EC2 describes it.
struct PlacementGroupInfo {
  std::string name;
  std::string id;        // "pg-…"
  std::string strategy;  // "cluster", "spread", "partition"
  std::string state;     // "pending", "available", "deleting", "deleted"
  std::map<std::string, std::string> tags;
};

// DescribePlacementGroups for these names (GroupName.N). EC2 answers an
// unknown name with the error InvalidPlacementGroup.Unknown (kNotFound).
QueryParams DescribePlacementGroupsQuery(const std::vector<std::string>& names);
Result<std::vector<PlacementGroupInfo>> ParseDescribePlacementGroups(std::string_view xml);

// CreatePlacementGroup `name` with `strategy` and `tags` on the group
// (TagSpecification ResourceType=placement-group). A name the account
// already has is the error InvalidPlacementGroup.Duplicate.
QueryParams CreatePlacementGroupQuery(const std::string& name, const std::string& strategy,
                                      const std::map<std::string, std::string>& tags);

}  // namespace gpuscaler::cloud
