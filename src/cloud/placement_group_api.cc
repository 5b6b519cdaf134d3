#include "gpuscaler/cloud/placement_group_api.h"

#include "gpuscaler/cloud/ec2_api.h"
#include "query_params.h"
#include "xml_util.h"

namespace gpuscaler::cloud {

QueryParams DescribePlacementGroupsQuery(const std::vector<std::string>& names) {
  QueryParams q = {{"Action", "DescribePlacementGroups"}, {"Version", kEc2ApiVersion}};
  for (size_t i = 0; i < names.size(); ++i) q.emplace_back("GroupName." + std::to_string(i + 1), names[i]);
  return q;
}

Result<std::vector<PlacementGroupInfo>> ParseDescribePlacementGroups(std::string_view body) {
  return xml::ParseItems(body, "DescribePlacementGroups", "placementGroupSet", [](pugi::xml_node item) {
    PlacementGroupInfo g;
    g.name = item.child_value("groupName");
    g.id = item.child_value("groupId");
    g.strategy = item.child_value("strategy");
    g.state = item.child_value("state");
    for (pugi::xml_node t : item.child("tagSet").children("item")) g.tags[t.child_value("key")] = t.child_value("value");
    return g;
  });
}

QueryParams CreatePlacementGroupQuery(const std::string& name, const std::string& strategy,
                                      const std::map<std::string, std::string>& tags) {
  QueryParams q = {{"Action", "CreatePlacementGroup"}, {"Version", kEc2ApiVersion}};
  q.emplace_back("GroupName", name);
  q.emplace_back("Strategy", strategy);
  if (!tags.empty()) {
    q.emplace_back("TagSpecification.1.ResourceType", "placement-group");
    int n = 1;
    for (const auto& [key, value] : tags) {
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Key", key);
      q.emplace_back("TagSpecification.1.Tag." + std::to_string(n) + ".Value", value);
      ++n;
    }
  }
  return q;
}

}  // namespace gpuscaler::cloud
