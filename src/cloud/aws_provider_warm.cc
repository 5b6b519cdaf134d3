// AwsProvider: warm capacity. Stopped fleet instances (StopInstances,
// StartInstances), the stoppable spot launches of spot warm capacity
// (RunInstances with a persistent Spot request), and Auto Scaling warm
// pools (PutWarmPool, DescribeWarmPool).
#include <algorithm>
#include <set>

#include "aws_provider_impl.h"
#include "gpuscaler/cloud/aws_provider.h"
#include "gpuscaler/cloud/capacity_reservation_api.h"

namespace gpuscaler::cloud {
namespace {

constexpr size_t kIdsPerCall = 1000;  // EC2's limit on StopInstances and StartInstances
// stateReason.code of an instance EC2 stopped on a Spot interruption.
constexpr const char* kSpotInterruptionStopReason = "Server.SpotInstanceShutdown";

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Sends `query(chunk)` for consecutive chunks of `ids`; `action` names the
// answer. EC2 answers an id it no longer knows (gone between the look and
// the call) with InvalidInstanceID.NotFound: the caller's unknown id, kConfig.
template <typename Query>
Status SendInChunks(AwsClient& client, const std::string& action, const std::vector<std::string>& ids,
                    Query query) {
  for (size_t begin = 0; begin < ids.size(); begin += kIdsPerCall) {
    const std::vector<std::string> chunk(ids.begin() + begin,
                                         ids.begin() + std::min(ids.size(), begin + kIdsPerCall));
    Result<std::string> body = client.Query("ec2", query(chunk));
    if (!body.ok()) {
      if (body.error().category() == ErrorCategory::kNotFound) return Error::Config(body.error().message());
      return body.error();
    }
    if (auto parsed = ParseInstanceStateChanges(*body, action); !parsed.ok()) return parsed.error();
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Ec2Instance>> AwsProvider::DescribeOwned(const std::string& verb,
                                                            std::vector<std::string> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Result<std::vector<Ec2Instance>> described = DescribeInstances({}, ids);
  if (!described.ok()) return described.error();
  std::set<std::string> known;
  std::vector<std::string> foreign;
  std::set<std::string> groups;  // of the instances without the cluster tag
  for (const Ec2Instance& e : *described) {
    known.insert(e.instance_id);
    if (TagOf(e.tags, kClusterTag) != options_.cluster_name && !TagOf(e.tags, kAsgGroupNameTag).empty()) {
      groups.insert(TagOf(e.tags, kAsgGroupNameTag));
    }
  }
  std::vector<std::string> unknown;
  for (const std::string& id : ids) {
    if (known.count(id) == 0) unknown.push_back(id);
  }
  if (!unknown.empty()) {
    return Error::Config(verb + ": unknown instance" + (unknown.size() == 1 ? " " : "s ") + Join(unknown) +
                         "; none " + (verb == "stop" ? "stopped" : "started"));
  }
  std::set<std::string> owned_groups;
  if (!groups.empty()) {
    Result<std::vector<AutoScalingGroup>> found =
        DescribeGroups(std::vector<std::string>(groups.begin(), groups.end()));
    if (!found.ok()) return found.error();
    for (const AutoScalingGroup& g : *found) {
      if (Owns(g)) owned_groups.insert(g.name);
    }
  }
  for (const Ec2Instance& e : *described) {
    if (TagOf(e.tags, kClusterTag) != options_.cluster_name &&
        owned_groups.count(TagOf(e.tags, kAsgGroupNameTag)) == 0) {
      foreign.push_back(e.instance_id);
    }
  }
  if (!foreign.empty()) {
    return Error::InvalidInput(verb + ": " + Join(foreign) + " not owned by cluster '" +
                               options_.cluster_name + "' (no " + kClusterTag +
                               " tag naming it, not in one of its Auto Scaling groups); none " +
                               (verb == "stop" ? "stopped" : "started"));
  }
  return described;
}

Status AwsProvider::LaunchStoppableSpot(const LaunchRequest& request, size_t index, int run,
                                        const LaunchTemplateRef& launch_template,
                                        const std::map<std::string, std::string>& subnet_by_zone,
                                        const std::map<std::string, std::string>& tags, int* remaining,
                                        LaunchResult* result) {
  const Offering& o = request.offerings[index];
  RunInstancesRequest run_request =
      OfferingRunRequest(request, index, run, launch_template, subnet_by_zone, tags, *remaining);
  run_request.market_type = "spot";
  run_request.spot_instance_type = "persistent";
  run_request.interruption_behavior = "stop";

  Result<std::string> body = client_.Query("ec2", RunInstancesQuery(run_request));
  Result<std::vector<Ec2Instance>> launched =
      body.ok() ? ParseRunInstances(*body) : Result<std::vector<Ec2Instance>>(body.error());
  if (!launched.ok()) {
    // No spot capacity here: the next offering, as a fleet run's error.
    if (launched.error().category() == ErrorCategory::kCapacity) {
      result->errors.push_back({o.Key(), Error(ErrorCategory::kCapacity,
                                               "RunInstances (persistent spot): " + launched.error().message())});
      return Status::Ok();
    }
    return launched.error().WithContext("RunInstances (persistent spot)");
  }
  TakeOfferingRun(*launched, request, index, tags, "RunInstances (persistent spot)", remaining, result);
  return Status::Ok();
}

Status AwsProvider::Stop(const std::vector<std::string>& instance_ids, WarmState state) {
  if (instance_ids.empty()) return Status::Ok();
  Result<std::vector<Ec2Instance>> described = DescribeOwned("stop", instance_ids);
  if (!described.ok()) return described.error();
  std::vector<std::string> running;
  for (const Ec2Instance& e : *described) {
    if (e.state != "stopping" && e.state != "stopped") running.push_back(e.instance_id);
  }
  const bool hibernate = state == WarmState::kHibernated;
  return SendInChunks(client_, "StopInstances", running, [&](const std::vector<std::string>& chunk) {
    return StopInstancesQuery(chunk, hibernate);
  });
}

Status AwsProvider::Start(const std::vector<std::string>& instance_ids) {
  if (instance_ids.empty()) return Status::Ok();
  Result<std::vector<Ec2Instance>> described = DescribeOwned("start", instance_ids);
  if (!described.ok()) return described.error();
  std::vector<std::string> stopped, stopping, reclaimed;
  for (const Ec2Instance& e : *described) {
    if (e.state == "stopped") stopped.push_back(e.instance_id);
    if (e.state == "stopping") stopping.push_back(e.instance_id);
    if ((e.state == "stopped" || e.state == "stopping") && e.state_reason_code == kSpotInterruptionStopReason)
      reclaimed.push_back(e.instance_id);
  }
  // Only EC2 starts a spot instance it stopped on interruption, once its
  // offering has capacity again: a shortage of that offering, for now.
  if (!reclaimed.empty()) {
    return Error::Capacity("start: " + Join(reclaimed) +
                           " stopped by a Spot interruption (EC2 starts it again once capacity is back); none "
                           "started");
  }
  // EC2 refuses to start an instance until it has stopped
  // (IncorrectInstanceState): worth another try shortly, not a config error.
  if (!stopping.empty())
    return Error::Transient("start: " + Join(stopping) + " still stopping; none started");
  return SendInChunks(client_, "StartInstances", stopped, StartInstancesQuery);
}

Status AwsProvider::PutWarmPool(const std::string& auto_scaling_group, int size, WarmState state) {
  const std::string& name = auto_scaling_group;
  if (size < 0) return Error::InvalidInput("warm pool of auto scaling group '" + name + "': negative size");
  Result<std::vector<AutoScalingGroup>> found = DescribeGroups({name});
  if (!found.ok()) return found.error();
  if (found->empty()) return Error::Config("warm pool: auto scaling group '" + name + "' not found");
  const AutoScalingGroup& g = found->front();
  if (!Owns(g)) {
    return Error::Config("warm pool: auto scaling group '" + name + "' is not tagged " + kClusterTag + "=" +
                         options_.cluster_name + " (tag it to let this installation manage its warm pool)");
  }
  const std::string pool_state = state == WarmState::kHibernated ? "Hibernated" : "Stopped";
  if (g.warm_pool && g.warm_pool->status.empty() && g.warm_pool->min_size == size &&
      g.warm_pool->max_group_prepared_capacity == size && g.warm_pool->pool_state == pool_state) {
    return Status::Ok();
  }
  PutWarmPoolRequest request;
  request.group = name;
  request.min_size = size;
  request.max_group_prepared_capacity = size;
  request.pool_state = pool_state;
  return SendEmpty(client_, PutWarmPoolQuery(request));
}

Result<std::vector<AsgInstance>> AwsProvider::WarmPoolInstances(const std::string& group) {
  std::vector<AsgInstance> out;
  DescribeWarmPoolRequest request;
  request.group = group;
  request.max_records = 50;
  Status described = ForEachPage(client_, "autoscaling", "DescribeWarmPool", request, DescribeWarmPoolQuery,
                                 ParseDescribeWarmPool, [&](const WarmPoolPage& page) {
                                   for (const AsgInstance& i : page.instances) {
                                     if (i.lifecycle_state.rfind("Warmed:Terminat", 0) != 0) out.push_back(i);
                                   }
                                 });
  if (!described.ok()) return described.error();
  return out;
}

Result<std::vector<std::string>> AwsProvider::WokenFor(const std::string& group, const std::string& token,
                                                       std::set<std::string>* in_service) {
  Result<std::vector<AutoScalingGroup>> found = DescribeGroups({group});
  if (!found.ok()) return found.error();
  for (const AutoScalingGroup& g : *found) {
    for (const AsgInstance& i : g.instances) {
      if (i.lifecycle_state.rfind("Terminating", 0) != 0) in_service->insert(i.instance_id);
    }
  }
  std::vector<std::string>& woken = woken_[token];
  auto before = warm_before_.find(token);
  if (before == warm_before_.end()) return woken;
  std::set<std::string> claimed;
  for (const auto& [other, ids] : woken_) claimed.insert(ids.begin(), ids.end());
  for (const std::string& id : *in_service) {
    if (before->second.count(id) != 0 && claimed.count(id) == 0) woken.push_back(id);
  }
  return woken;
}

}  // namespace gpuscaler::cloud
