// AwsProvider: what depends on ownership (the cluster tag) and on Auto
// Scaling groups: launching into a group, listing, terminating.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "aws_provider_impl.h"
#include "gpuscaler/cloud/aws_provider.h"

namespace gpuscaler::cloud {
namespace {

constexpr size_t kIdsPerFilter = 200;   // EC2's limit on one filter's values
constexpr size_t kGroupsPerCall = 50;   // names in one DescribeAutoScalingGroups
constexpr Seconds kActivityClockSkew{5};

// The states ListInstances lists: live, on the way out, and stopped (warm).
const std::vector<std::string>& ListedStates() {
  static const std::vector<std::string> states = {"pending", "running", "shutting-down", "stopping", "stopped"};
  return states;
}

bool HasTag(const std::map<std::string, std::string>& tags, const std::string& key, const std::string& value) {
  auto it = tags.find(key);
  return it != tags.end() && it->second == value;
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Oldest first (ties by id).
void SortByLaunch(std::vector<Ec2Instance>& instances) {
  std::sort(instances.begin(), instances.end(), [](const Ec2Instance& a, const Ec2Instance& b) {
    return std::tie(a.launch_time, a.instance_id) < std::tie(b.launch_time, b.instance_id);
  });
}

// Calls each(chunk) on consecutive slices of `items` of at most `size`.
template <typename F>
Status ForEachChunk(const std::vector<std::string>& items, size_t size, F each) {
  for (size_t begin = 0; begin < items.size(); begin += size) {
    const std::vector<std::string> chunk(items.begin() + begin, items.begin() + std::min(items.size(), begin + size));
    if (Status s = each(chunk); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

std::string TagOf(const std::map<std::string, std::string>& tags, const std::string& key) {
  auto it = tags.find(key);
  return it == tags.end() ? "" : it->second;
}

Status SendEmpty(AwsClient& client, const QueryParams& query) {
  Result<std::string> body = client.Query("autoscaling", query);
  if (!body.ok()) return body.error();
  return ParseEmptyResponse(*body, query.front().second);
}

ErrorCategory ActivityCategory(const ScalingActivity& a) {
  std::string word;
  for (char c : a.status_message + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (!word.empty() && ClassifyAwsError(word, 0) == ErrorCategory::kCapacity) return ErrorCategory::kCapacity;
    word.clear();
  }
  return ErrorCategory::kConfig;
}

std::string OfferingKeyFor(const LaunchRequest& r, const AutoScalingGroup& g, std::string_view message) {
  std::vector<const Offering*> candidates;
  for (const Offering& o : r.offerings) {
    const auto& types = g.instance_types;
    if (std::find(types.begin(), types.end(), o.instance_type) != types.end()) candidates.push_back(&o);
  }
  if (candidates.empty()) {
    for (const Offering& o : r.offerings) candidates.push_back(&o);
  }
  for (const Offering* o : candidates) {
    if (message.find(o->instance_type) != std::string_view::npos && message.find(o->zone) != std::string_view::npos) {
      return o->Key();
    }
  }
  return candidates.front()->Key();
}

Instance GroupInstance(const Ec2Instance& e, const LaunchRequest& r, const std::string& region) {
  Instance inst = ToInstance(e, {}, region);
  inst.pool = r.pool;
  for (const Offering& o : r.offerings) {
    if (o.instance_type == e.instance_type && o.zone == e.availability_zone && o.capacity_type == e.lifecycle) {
      inst.offering = o;
      break;
    }
  }
  return inst;
}

bool AwsProvider::Owns(const AutoScalingGroup& group) const {
  return HasTag(group.tags, kClusterTag, options_.cluster_name);
}

Result<std::vector<Ec2Instance>> AwsProvider::DescribeInstances(const std::vector<Filter>& filters,
                                                                const std::vector<std::string>& ids) {
  std::vector<Ec2Instance> out;
  auto describe = [&](std::vector<Filter> f) {
    DescribeInstancesRequest req;
    req.filters = std::move(f);
    req.max_results = 1000;
    return ForEachPage(client_, "ec2", "DescribeInstances", req, DescribeInstancesQuery, ParseDescribeInstances,
                       [&](const DescribeInstancesPage& page) {
                         out.insert(out.end(), page.instances.begin(), page.instances.end());
                       });
  };
  Status described = ids.empty() ? describe(filters) : ForEachChunk(ids, kIdsPerFilter, [&](const auto& chunk) {
    std::vector<Filter> f = filters;
    f.push_back({"instance-id", chunk});
    return describe(std::move(f));
  });
  if (!described.ok()) return described.error();
  return out;
}

Result<std::vector<AutoScalingGroup>> AwsProvider::DescribeGroups(const std::vector<std::string>& names) {
  std::vector<AutoScalingGroup> out;
  auto describe = [&](DescribeAutoScalingGroupsRequest req) {
    req.max_records = 100;
    return ForEachPage(client_, "autoscaling", "DescribeAutoScalingGroups", std::move(req),
                       DescribeAutoScalingGroupsQuery, ParseDescribeAutoScalingGroups,
                       [&](const AutoScalingGroupsPage& page) {
                         out.insert(out.end(), page.groups.begin(), page.groups.end());
                       });
  };
  DescribeAutoScalingGroupsRequest own;
  own.filters = {{std::string("tag:") + kClusterTag, {options_.cluster_name}}};
  Status described = names.empty() ? describe(own) : ForEachChunk(names, kGroupsPerCall, [&](const auto& chunk) {
    DescribeAutoScalingGroupsRequest req;
    req.names = chunk;
    return describe(std::move(req));
  });
  if (!described.ok()) return described.error();
  return out;
}

Result<std::vector<ScalingActivity>> AwsProvider::FailedActivities(const std::string& group, WallTime since) {
  DescribeScalingActivitiesRequest req;
  req.group = group;
  req.max_records = 100;
  Result<std::string> body = client_.Query("autoscaling", DescribeScalingActivitiesQuery(req));
  if (!body.ok()) return body.error();
  Result<ScalingActivitiesPage> page = ParseDescribeScalingActivities(*body);
  if (!page.ok()) return page.error();
  std::vector<ScalingActivity> failed;
  for (ScalingActivity& a : page->activities) {
    if (a.start_time >= since && (a.status_code == "Failed" || a.status_code == "Cancelled")) failed.push_back(a);
  }
  return failed;
}

Result<std::vector<Ec2Instance>> AwsProvider::GroupLaunchInstances(const std::string& group,
                                                                   const std::string& token) {
  Result<std::vector<Ec2Instance>> made =
      DescribeInstances({{std::string("tag:") + kAsgGroupNameTag, {group}},
                         {std::string("tag:") + kIntentTag, {token}},
                         {"instance-state-name", {"pending", "running"}}});
  if (!made.ok()) return made.error();
  if (warm_groups_.count(group) == 0) {
    SortByLaunch(*made);
    return made;
  }
  // The group refills its warm pool with instances that carry this launch's
  // intent tag (it propagates at launch): only those in service are the
  // launch's, with the warm instances it woke.
  std::set<std::string> in_service;
  Result<std::vector<std::string>> woken = WokenFor(group, token, &in_service);
  if (!woken.ok()) return woken.error();
  std::set<std::string> claimed;
  for (const auto& [other, ids] : woken_) {
    if (other != token) claimed.insert(ids.begin(), ids.end());
  }
  std::erase_if(*made, [&](const Ec2Instance& e) {
    return in_service.count(e.instance_id) == 0 || claimed.count(e.instance_id) != 0;
  });
  if (!woken->empty()) {
    Result<std::vector<Ec2Instance>> started = DescribeInstances({{"instance-state-name", {"pending", "running"}}}, *woken);
    if (!started.ok()) return started.error();
    for (Ec2Instance& e : *started) {
      const bool listed = std::any_of(made->begin(), made->end(),
                                      [&](const Ec2Instance& m) { return m.instance_id == e.instance_id; });
      if (!listed) made->push_back(std::move(e));
    }
  }
  SortByLaunch(*made);
  return made;
}

Result<LaunchResult> AwsProvider::LaunchInGroup(const LaunchRequest& request) {
  const std::string& name = request.auto_scaling_group;
  const std::string& token = request.idempotency_token;
  Result<std::vector<AutoScalingGroup>> found = DescribeGroups({name});
  if (!found.ok()) return found.error();
  if (found->empty()) return Error::Config("launch: auto scaling group '" + name + "' not found");
  const AutoScalingGroup& g = found->front();
  if (!Owns(g)) {
    return Error::Config("launch: auto scaling group '" + name + "' is not tagged " + kClusterTag + "=" +
                         options_.cluster_name + " (tag it to let this installation scale it)");
  }
  if (const std::string pool = TagOf(g.tags, kOwnerTag); !pool.empty() && pool != request.pool) {
    return Error::Config("launch: auto scaling group '" + name + "' is pool '" + pool + "' (its " + kOwnerTag +
                         " tag), not '" + request.pool + "'");
  }

  // The group's intent tags describe its last launch: this one's when they
  // name its token. A gang given back (or being given back) is never
  // raised again; a replay learns a gang from the tags when its request
  // does not say so (a restarted controller's does not).
  const bool tagged_for_token = TagOf(g.tags, kIntentTag) == token;
  const std::string gang_state = tagged_for_token ? TagOf(g.tags, kIntentGangTag) : "";
  if (given_back_.count(token) != 0 || gang_state == kGangGivingBack || gang_state == kGangGivenBack) {
    return GivenBackGang(request, g);
  }
  const bool gang = request.all_or_nothing || gang_state == kGangYes;

  LaunchResult result;
  std::optional<int> target;  // the desired capacity to set, if any
  if (raised_.count(token) == 0 && tagged_for_token) {
    // A launch this token started before a restart: finish its raise.
    const std::string tagged = TagOf(g.tags, kIntentDesiredTag);
    int desired = 0;
    if (std::from_chars(tagged.data(), tagged.data() + tagged.size(), desired).ec == std::errc() &&
        g.desired_capacity < desired) {
      target = std::min(desired, g.max_size);
    }
    raised_[token] = desired;
  } else if (raised_.count(token) == 0) {
    const int room = std::max(0, g.max_size - g.desired_capacity);
    if (gang && room < request.count) {
      return Error::Capacity("launch: a gang needs " + std::to_string(request.count) +
                             " nodes and auto scaling group '" + name + "' has room for " + std::to_string(room) +
                             " (MaxSize " + std::to_string(g.max_size) + ", desired capacity " +
                             std::to_string(g.desired_capacity) + "); nothing raised");
    }
    const int wanted = g.desired_capacity + request.count;
    const int next = std::min(wanted, g.max_size);
    const std::string at_max = "auto scaling group '" + name + "' is at its MaxSize " + std::to_string(g.max_size);
    if (next <= g.desired_capacity) return Error::Capacity("launch: " + at_max);
    if (next < wanted) {
      result.errors.push_back({OfferingKeyFor(request, g, ""),
                               Error::Capacity(at_max + ": " + std::to_string(wanted - next) + " of " +
                                               std::to_string(request.count) + " nodes not launched")});
    }
    // Tag first: a crash between the two calls leaves a tag naming this
    // token, and the replay finishes the raise instead of raising twice.
    const std::vector<AsgTag> tags = {{kIntentTag, token, true},
                                      {kIntentDesiredTag, std::to_string(next), false},
                                      {kIntentGangTag, gang ? kGangYes : kGangNo, false},
                                      {kOwnerTag, request.pool, true}};
    Status tagged = SendEmpty(client_, CreateOrUpdateTagsQuery(name, tags));
    if (!tagged.ok()) return tagged.error();
    target = next;
  }

  // The warm instances a raise puts in service carry the tags of their own
  // launch into the pool, not this launch's intent tag: what the pool holds
  // now tells them apart afterwards.
  if (g.warm_pool) warm_groups_.insert(name);
  if (target && g.warm_pool && warm_before_.count(token) == 0) {
    Result<std::vector<AsgInstance>> warm = WarmPoolInstances(name);
    if (!warm.ok()) return warm.error();
    std::set<std::string>& before = warm_before_[token];
    for (const AsgInstance& i : *warm) before.insert(i.instance_id);
  }
  const WallTime raised_at = clock_.WallNow();
  if (target) {
    if (Status set = SendEmpty(client_, SetDesiredCapacityQuery(name, *target, std::nullopt)); !set.ok()) {
      return set.error();
    }
    raised_[token] = *target;
  }
  if (gang) return AwaitGang(request, g, raised_at - kActivityClockSkew);
  if (target) {
    // From here on the group grows whatever else fails: report failures as
    // offering errors, never as a failed launch.
    Result<std::vector<ScalingActivity>> failed = FailedActivities(name, raised_at - kActivityClockSkew);
    if (!failed.ok()) result.errors.push_back({OfferingKeyFor(request, g, ""), failed.error()});
    std::set<std::string> reported;
    for (const ScalingActivity& a : failed.ok() ? *failed : std::vector<ScalingActivity>{}) {
      const std::string key = OfferingKeyFor(request, g, a.status_message);
      if (reported.insert(key).second) {
        result.errors.push_back({key, Error(ActivityCategory(a), "auto scaling group '" + name + "': " +
                                                                      a.description + ": " + a.status_message)});
      }
    }
  }

  Result<std::vector<Ec2Instance>> made = GroupLaunchInstances(name, token);
  if (!made.ok()) {
    result.errors.push_back({OfferingKeyFor(request, g, ""), made.error()});
    return result;
  }
  for (const Ec2Instance& e : *made) {
    if (static_cast<int>(result.instances.size()) == request.count) break;
    result.instances.push_back(GroupInstance(e, request, client_.options().region));
    launched_[e.instance_id] = result.instances.back().offering;
  }
  return result;
}

Result<std::vector<Instance>> AwsProvider::ListInstances() {
  Result<std::vector<Ec2Instance>> tagged =
      DescribeInstances({{std::string("tag:") + kClusterTag, {options_.cluster_name}},
                         {"tag-key", {kOwnerTag}},
                         {"instance-state-name", ListedStates()}});
  if (!tagged.ok()) return tagged.error();
  std::map<std::string, Instance> by_id;
  for (const Ec2Instance& e : *tagged) by_id[e.instance_id] = ToInstance(e, launched_, client_.options().region);

  Result<std::vector<AutoScalingGroup>> groups = DescribeGroups({});
  if (!groups.ok()) return groups.error();
  std::map<std::string, std::string> group_pool;  // by instance id, for group instances not listed yet
  std::set<std::string> warm;                     // in a group's warm pool
  for (const AutoScalingGroup& g : *groups) {
    const std::string pool = TagOf(g.tags, kOwnerTag);
    if (pool.empty()) continue;
    for (const AsgInstance& i : g.instances) {
      if (by_id.count(i.instance_id) == 0) group_pool[i.instance_id] = pool;
    }
    if (!g.warm_pool) continue;
    warm_groups_.insert(g.name);
    Result<std::vector<AsgInstance>> in_pool = WarmPoolInstances(g.name);
    if (!in_pool.ok()) return in_pool.error();
    for (const AsgInstance& i : *in_pool) {
      warm.insert(i.instance_id);
      if (by_id.count(i.instance_id) == 0) group_pool[i.instance_id] = pool;
    }
  }
  if (!group_pool.empty()) {
    std::vector<std::string> ids;
    for (const auto& [id, pool] : group_pool) ids.push_back(id);
    Result<std::vector<Ec2Instance>> members = DescribeInstances({{"instance-state-name", ListedStates()}}, ids);
    if (!members.ok()) return members.error();
    for (const Ec2Instance& e : *members) {
      Instance inst = ToInstance(e, launched_, client_.options().region);
      if (inst.pool.empty()) inst.pool = group_pool[e.instance_id];
      by_id[e.instance_id] = std::move(inst);
    }
  }
  // A warm pool instance still coming up (Warmed:Pending) runs, but serves
  // nothing until the group puts it in service.
  for (const std::string& id : warm) {
    if (auto it = by_id.find(id); it != by_id.end() && it->second.state != InstanceState::kShuttingDown) {
      it->second.state = InstanceState::kStopped;
    }
  }
  std::vector<Instance> out;
  for (auto& [id, inst] : by_id) out.push_back(std::move(inst));
  return out;
}

Status AwsProvider::Terminate(const std::vector<std::string>& instance_ids) {
  std::vector<std::string> ids = instance_ids;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty()) return Status::Ok();
  Result<std::vector<Ec2Instance>> described = DescribeInstances({}, ids);
  if (!described.ok()) return described.error();

  std::vector<std::string> group_names;
  for (const Ec2Instance& e : *described) {
    const std::string group = TagOf(e.tags, kAsgGroupNameTag);
    if (!group.empty() && std::find(group_names.begin(), group_names.end(), group) == group_names.end()) {
      group_names.push_back(group);
    }
  }
  std::map<std::string, AutoScalingGroup> groups;  // this cluster's, by name
  if (!group_names.empty()) {
    Result<std::vector<AutoScalingGroup>> found = DescribeGroups(group_names);
    if (!found.ok()) return found.error();
    for (AutoScalingGroup& g : *found) {
      if (Owns(g)) groups[g.name] = std::move(g);
    }
  }

  std::vector<std::string> foreign, plain, in_group, spot_requests;
  std::map<std::string, int> leaving;  // by group
  for (const Ec2Instance& e : *described) {
    auto g = groups.find(TagOf(e.tags, kAsgGroupNameTag));
    if (g == groups.end() && !HasTag(e.tags, kClusterTag, options_.cluster_name)) {
      foreign.push_back(e.instance_id);
      continue;
    }
    if (e.state == "shutting-down" || e.state == "terminated") continue;  // already on its way out
    const bool member =
        g != groups.end() && std::any_of(g->second.instances.begin(), g->second.instances.end(), [&](const AsgInstance& i) {
          return i.instance_id == e.instance_id && i.lifecycle_state.rfind("Terminating", 0) != 0;
        });
    if (member) {
      in_group.push_back(e.instance_id);
      ++leaving[g->first];
    } else {
      plain.push_back(e.instance_id);
      if (!e.spot_instance_request_id.empty() && TagOf(e.tags, kStopOnInterruptionTag) == "stop")
        spot_requests.push_back(e.spot_instance_request_id);
    }
  }
  if (!foreign.empty()) {
    return Error::InvalidInput("terminate: " + Join(foreign) + " not owned by cluster '" + options_.cluster_name +
                               "' (no " + kClusterTag + " tag naming it, not in one of its Auto Scaling groups); "
                               "nothing terminated");
  }
  for (const auto& [name, n] : leaving) {
    const AutoScalingGroup& g = groups.at(name);
    if (g.desired_capacity - n < g.min_size) {
      return Error::Config("terminate: auto scaling group '" + name + "' is at its MinSize " +
                           std::to_string(g.min_size) + " (desired " + std::to_string(g.desired_capacity) +
                           "): removing " + std::to_string(n) +
                           " would go below it; nothing terminated (lower the group's MinSize or raise the pool's "
                           "min_nodes)");
    }
  }
  for (const std::string& id : in_group) {
    Result<std::string> body = client_.Query("autoscaling", TerminateInstanceInAutoScalingGroupQuery(id, true));
    if (!body.ok()) return body.error();
    if (Result<std::string> activity = ParseTerminateInstanceInAutoScalingGroup(*body); !activity.ok()) {
      return activity.error();
    }
  }
  // A persistent Spot request whose instance is terminated opens again and
  // launches a replacement: cancelled first, and nothing is terminated
  // while it may still do so.
  Status cancelled = ForEachChunk(spot_requests, 1000, [&](const std::vector<std::string>& chunk) -> Status {
    const std::string context = "cancelling the spot requests of persistent spot instances";
    Result<std::string> body = client_.Query("ec2", CancelSpotInstanceRequestsQuery(chunk));
    if (body.ok()) return Status::Ok();
    if (body.error().category() != ErrorCategory::kNotFound) return body.error().WithContext(context);
    // A request EC2 no longer knows launches nothing: one by one, the others.
    for (const std::string& id : chunk) {
      Result<std::string> one = client_.Query("ec2", CancelSpotInstanceRequestsQuery({id}));
      if (!one.ok() && one.error().category() != ErrorCategory::kNotFound) return one.error().WithContext(context);
    }
    return Status::Ok();
  });
  if (!cancelled.ok()) return cancelled;
  return TerminateEc2(plain);
}

Status AwsProvider::TerminateEc2(const std::vector<std::string>& instance_ids) {
  return ForEachChunk(instance_ids, 1000, [&](const std::vector<std::string>& chunk) -> Status {
    auto body = client_.Query("ec2", TerminateInstancesQuery(chunk));
    if (body.ok()) return Status::Ok();
    if (body.error().category() != ErrorCategory::kNotFound) return body.error();
    // EC2 terminates none of a batch with an unknown id: one by one, and an
    // id it does not know is already gone.
    for (const std::string& id : chunk) {
      auto one = client_.Query("ec2", TerminateInstancesQuery({id}));
      if (!one.ok() && one.error().category() != ErrorCategory::kNotFound) return one.error();
    }
    return Status::Ok();
  });
}

}  // namespace gpuscaler::cloud
