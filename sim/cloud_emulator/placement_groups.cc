// EC2 placement groups of the CloudEmulator.
#include <algorithm>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

void PlacementGroupXml(std::string& out, const std::string& region, const std::string& account,
                       const std::string& id, const std::string& name, const std::string& strategy,
                       const std::map<std::string, std::string>& tags) {
  Leaf(out, "groupName", name);
  Leaf(out, "strategy", strategy);
  Leaf(out, "state", "available");
  Leaf(out, "groupId", id);
  TagSet(out, tags);
  Leaf(out, "groupArn", "arn:aws:ec2:" + region + ":" + account + ":placement-group/" + name);
}

}  // namespace

EmulatorResponse CloudEmulator::CreatePlacementGroup(const Params& p, WallTime /*now*/) {
  const std::string name = p.Get("GroupName");
  if (name.empty() || name.size() > 255) {
    return Ec2Error(400, "InvalidParameterValue", "Placement group name must be 1 to 255 characters.");
  }
  const std::string strategy = p.Has("Strategy") ? p.Get("Strategy") : "cluster";
  if (strategy != "cluster" && strategy != "spread" && strategy != "partition") {
    return Ec2Error(400, "InvalidParameterValue",
                    "Value (" + strategy + ") for parameter strategy is invalid. Expecting one of cluster, spread, partition.");
  }
  if (placement_groups_.count(name) != 0) {
    return Ec2Error(400, "InvalidPlacementGroup.Duplicate", "The Placement Group '" + name + "' already exists.");
  }
  PlacementGroup g;
  g.id = NewId("pg-", 17);
  g.name = name;
  g.strategy = strategy;
  for (int n = 1; p.Has("TagSpecification." + std::to_string(n) + ".ResourceType"); ++n) {
    const std::string ts = "TagSpecification." + std::to_string(n) + ".";
    if (p.Get(ts + "ResourceType") != "placement-group") {
      return Ec2Error(400, "InvalidParameterValue",
                      "'" + p.Get(ts + "ResourceType") + "' is not a valid taggable resource type for this operation.");
    }
    for (int m = 1; p.Has(ts + "Tag." + std::to_string(m) + ".Key"); ++m) {
      g.tags[p.Get(ts + "Tag." + std::to_string(m) + ".Key")] = p.Get(ts + "Tag." + std::to_string(m) + ".Value");
    }
  }
  std::string body = Ec2Open("CreatePlacementGroup", Uuid());
  Leaf(body, "return", "true");
  body += "<placementGroup>";
  PlacementGroupXml(body, scenario_.region, scenario_.account_id, g.id, g.name, g.strategy, g.tags);
  body += "</placementGroup>\n</CreatePlacementGroupResponse>\n";
  placement_groups_[name] = std::move(g);
  return {200, kXmlContentType, {}, body};
}

std::string CloudEmulator::PlacementGroupZone(const std::string& name) const {
  for (const Instance& i : instances_) {
    if (i.info.placement_group == name && i.info.state != "terminated") return i.info.zone;
  }
  return "";
}

EmulatorResponse CloudEmulator::DescribePlacementGroups(const Params& p) {
  const std::vector<std::string> names = p.List("GroupName");
  const std::vector<std::string> ids = p.List("GroupId");
  for (const std::string& name : names) {
    if (placement_groups_.count(name) == 0) {
      return Ec2Error(400, "InvalidPlacementGroup.Unknown", "The Placement Group '" + name + "' is unknown.");
    }
  }
  const std::vector<cloud::Filter> filters = p.Filters("Filter", "Value");
  std::string body = Ec2Open("DescribePlacementGroups", Uuid());
  body += "<placementGroupSet>";
  for (const auto& [name, g] : placement_groups_) {
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), g.id) == ids.end()) continue;
    if (!MatchesFilters(filters, g.tags,
                        {{"group-name", g.name}, {"group-id", g.id}, {"strategy", g.strategy}, {"state", "available"}})) {
      continue;
    }
    body += "<item>";
    PlacementGroupXml(body, scenario_.region, scenario_.account_id, g.id, g.name, g.strategy, g.tags);
    body += "</item>";
  }
  body += "</placementGroupSet>\n</DescribePlacementGroupsResponse>\n";
  return {200, kXmlContentType, {}, body};
}

}  // namespace gpuscaler::sim
