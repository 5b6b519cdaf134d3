// EC2 StopInstances/StartInstances and the Auto Scaling warm pool calls
// (ec2_api.h).
#include "gpuscaler/cloud/ec2_api.h"
#include "query_params.h"
#include "warm_pool_xml.h"
#include "xml_util.h"

namespace gpuscaler::cloud {

QueryParams StopInstancesQuery(const std::vector<std::string>& ids, bool hibernate) {
  QueryParams q = {{"Action", "StopInstances"}, {"Version", kEc2ApiVersion}};
  AddList(q, "InstanceId", ids);
  if (hibernate) q.emplace_back("Hibernate", "true");
  return q;
}

QueryParams StartInstancesQuery(const std::vector<std::string>& ids) {
  QueryParams q = {{"Action", "StartInstances"}, {"Version", kEc2ApiVersion}};
  AddList(q, "InstanceId", ids);
  return q;
}

Result<std::vector<InstanceStateChange>> ParseInstanceStateChanges(std::string_view body,
                                                                   const std::string& action) {
  return xml::ParseItems(body, action, "instancesSet", [](pugi::xml_node item) {
    return InstanceStateChange{item.child_value("instanceId"),
                               item.child("previousState").child_value("name"),
                               item.child("currentState").child_value("name")};
  });
}

std::optional<WarmPoolConfig> ParseWarmPoolConfiguration(pugi::xml_node n) {
  if (!n) return std::nullopt;
  WarmPoolConfig c;
  c.min_size = xml::Int(n, "MinSize");
  if (const int prepared = xml::Int(n, "MaxGroupPreparedCapacity", -1); prepared >= 0) {
    c.max_group_prepared_capacity = prepared;
  }
  if (*n.child_value("PoolState") != '\0') c.pool_state = n.child_value("PoolState");
  c.reuse_on_scale_in =
      std::string_view(n.child("InstanceReusePolicy").child_value("ReuseOnScaleIn")) == "true";
  c.status = n.child_value("Status");
  return c;
}

QueryParams PutWarmPoolQuery(const PutWarmPoolRequest& r) {
  QueryParams q = {
      {"Action", "PutWarmPool"}, {"Version", kAutoScalingApiVersion}, {"AutoScalingGroupName", r.group}};
  AddIfSet(q, "MaxGroupPreparedCapacity", r.max_group_prepared_capacity);
  AddIfSet(q, "MinSize", r.min_size);
  AddIfSet(q, "PoolState", r.pool_state);
  AddIfSet(q, "InstanceReusePolicy.ReuseOnScaleIn", r.reuse_on_scale_in);
  return q;
}

QueryParams DescribeWarmPoolQuery(const DescribeWarmPoolRequest& r) {
  QueryParams q = {
      {"Action", "DescribeWarmPool"}, {"Version", kAutoScalingApiVersion}, {"AutoScalingGroupName", r.group}};
  AddIfSet(q, "MaxRecords", r.max_records);
  AddIfSet(q, "NextToken", r.next_token);
  return q;
}

Result<WarmPoolPage> ParseDescribeWarmPool(std::string_view body) {
  pugi::xml_document doc;
  Result<pugi::xml_node> result = xml::QueryResult(doc, body, "DescribeWarmPool");
  if (!result.ok()) return result.error();
  WarmPoolPage page;
  page.config = ParseWarmPoolConfiguration(result->child("WarmPoolConfiguration"));
  for (pugi::xml_node i : result->child("Instances").children("member")) {
    page.instances.push_back({i.child_value("InstanceId"), i.child_value("InstanceType"),
                              i.child_value("AvailabilityZone"), i.child_value("LifecycleState"),
                              i.child_value("HealthStatus"),
                              std::string_view(i.child_value("ProtectedFromScaleIn")) == "true"});
  }
  page.next_token = result->child_value("NextToken");
  return page;
}

QueryParams DeleteWarmPoolQuery(const std::string& group, bool force_delete) {
  QueryParams q = {
      {"Action", "DeleteWarmPool"}, {"Version", kAutoScalingApiVersion}, {"AutoScalingGroupName", group}};
  if (force_delete) q.emplace_back("ForceDelete", "true");
  return q;
}

}  // namespace gpuscaler::cloud
