// Auto Scaling warm pools: stopped (or hibernated, or running) instances
// kept beside a group, put in service first when its desired capacity
// rises; PutWarmPool, DescribeWarmPool, DeleteWarmPool.
#include <algorithm>
#include <tuple>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {
namespace {

// The LifecycleState DescribeWarmPool shows for warm instance `i` of a pool
// whose instances wait in `pool_state`.
std::string WarmLifecycle(const EmulatedInstance& i, const std::string& pool_state) {
  if (i.state == "shutting-down" || i.state == "terminated") return "Warmed:Terminating";
  if (i.state == "stopped") return i.hibernated ? "Warmed:Hibernated" : "Warmed:Stopped";
  if (i.state == "running" && pool_state == "Running") return "Warmed:Running";
  return "Warmed:Pending";
}

// Whether a warm instance can go in service at once: stopped, or running in
// a Running pool. A pending one can too, once it runs; a stopping one cannot
// be started until it is stopped.
bool Ready(const EmulatedInstance& i) { return i.state == "stopped" || i.state == "running"; }

}  // namespace

int CloudEmulator::WarmTarget(const Group& g) const {
  if (!g.warm_pool || g.warm_pool->pending_delete) return 0;
  const WarmPool& w = *g.warm_pool;
  const int prepared = w.max_prepared ? *w.max_prepared : g.spec.max_size;
  return std::max({0, w.min_size, prepared - g.spec.desired_capacity});
}

CloudEmulator::Instance* CloudEmulator::TakeWarm(Group& g, const std::vector<std::string>& zones,
                                                 WallTime at) {
  if (!g.warm_pool) return nullptr;
  for (bool want_ready : {true, false}) {
    for (const std::string& zone : zones) {
      for (Instance& i : instances_) {
        if (i.info.group != g.spec.name || !i.info.in_warm_pool || i.info.zone != zone) continue;
        if (IsGone(i.info) || i.info.state == "stopping" || Ready(i.info) != want_ready) continue;
        if (i.info.state == "stopped") {
          auto room = Room(i.info.instance_type, zone, i.info.lifecycle, at);
          if (room && room->first <= 0) continue;
          StartInstance(i, at);
        }
        i.info.in_warm_pool = false;
        return &i;
      }
    }
  }
  return nullptr;
}

void CloudEmulator::LeaveService(Group& g, Instance& i, WallTime now) {
  if (!g.warm_pool || !g.warm_pool->reuse_on_scale_in || g.warm_pool->pending_delete) {
    Terminate(i, now);
    return;
  }
  i.info.in_warm_pool = true;
  // A pending one is stopped once it runs (ReconcileWarmPool).
  if (i.info.state == "running" && g.warm_pool->pool_state != "Running") {
    StopInstance(i, g.warm_pool->pool_state == "Hibernated", false, now);
  }
}

void CloudEmulator::ReconcileWarmPool(Group& g, WallTime now) {
  if (!g.warm_pool) return;
  WarmPool& w = *g.warm_pool;
  std::vector<Instance*> warm;
  for (Instance& i : instances_) {
    if (i.info.group == g.spec.name && i.info.in_warm_pool && !IsGone(i.info)) warm.push_back(&i);
  }
  if (w.pending_delete) {
    for (Instance* i : warm) Terminate(*i, now);
    const bool left = std::any_of(instances_.begin(), instances_.end(), [&](const Instance& i) {
      return i.info.group == g.spec.name && i.info.in_warm_pool && i.info.state != "terminated";
    });
    if (!left) g.warm_pool.reset();
    return;
  }
  // Instances launched into the pool stop once they have come up.
  if (w.pool_state != "Running") {
    for (Instance* i : warm) {
      if (i->info.state != "running") continue;
      StopInstance(*i, w.pool_state == "Hibernated", false, i->running_at);
      if (now >= *i->stopped_at) i->info.state = "stopped";
    }
  }
  const int target = WarmTarget(g);
  const std::string cause_head = "At " + FormatRfc3339(now) + " an instance was ";
  while (static_cast<int>(warm.size()) > target) {
    Terminate(*warm.back(), now);
    RecordActivity(g, {Uuid(), "Terminating EC2 instance: " + warm.back()->info.instance_id,
                       cause_head +
                           "taken out of the warm pool in response to a difference between the warm "
                           "pool's size and its target, shrinking it to " +
                           std::to_string(target) + ".",
                       "Successful", "", now});
    warm.pop_back();
  }
  if (static_cast<int>(warm.size()) >= target || now < g.warm_launch_at) return;
  const std::vector<std::string>& zones = g.spec.zones.empty() ? scenario_.zones : g.spec.zones;
  const std::vector<std::string> types =
      g.spec.instance_types.empty() ? std::vector<std::string>{g.spec.instance_type} : g.spec.instance_types;
  const std::map<std::string, std::string> tags = GroupLaunchTags(g);
  const std::string cause = cause_head +
                            "launched into the warm pool in response to a difference between the warm "
                            "pool's size and its target, increasing it to " +
                            std::to_string(target) + ".";
  while (static_cast<int>(warm.size()) < target) {
    std::vector<std::string> order = zones;
    auto in_zone = [&](const std::string& z) {
      return std::count_if(warm.begin(), warm.end(), [&](const Instance* i) { return i->info.zone == z; });
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](const auto& a, const auto& b) { return in_zone(a) < in_zone(b); });
    std::string reason;
    Instance* made = LaunchForGroup(order, types, tags, now, now, &reason);
    if (made == nullptr) {
      RecordActivity(g, {Uuid(), "Launching a new EC2 instance into warm pool.  Status Reason: " + reason,
                         cause, "Failed", reason, now});
      g.warm_launch_at = now + kGroupRetry;
      return;
    }
    made->info.group = g.spec.name;
    made->info.in_warm_pool = true;
    warm.push_back(made);
    RecordActivity(g, {Uuid(), "Launching a new EC2 instance into warm pool: " + made->info.instance_id,
                       cause, "Successful", "", now});
  }
  g.warm_launch_at = WallTime{};
}

std::string CloudEmulator::WarmPoolConfigurationXml(const WarmPool& w) {
  std::string out = "<WarmPoolConfiguration>";
  Leaf(out, "MaxGroupPreparedCapacity", w.max_prepared ? std::to_string(*w.max_prepared) : "-1");
  Leaf(out, "MinSize", std::to_string(w.min_size));
  Leaf(out, "PoolState", w.pool_state);
  if (w.pending_delete) Leaf(out, "Status", "PendingDelete");
  out += "<InstanceReusePolicy>";
  Leaf(out, "ReuseOnScaleIn", w.reuse_on_scale_in ? "true" : "false");
  out += "</InstanceReusePolicy></WarmPoolConfiguration>";
  return out;
}

EmulatorResponse CloudEmulator::PutWarmPool(const Params& p, WallTime now) {
  EmulatorResponse error;
  Group* g = RequiredGroup(p, &error);
  if (g == nullptr) return error;
  const std::string& name = g->spec.name;
  if (g->warm_pool && g->warm_pool->pending_delete) {
    return QueryError(400, "Sender", "ResourceInUse",
                      "The warm pool of Auto Scaling group '" + name + "' is being deleted.");
  }
  WarmPool w;
  if (p.Has("MinSize") && (!ParseInt(p.Get("MinSize"), &w.min_size) || w.min_size < 0)) {
    return QueryError(400, "Sender", "ValidationError", "MinSize must be a whole number of at least 0");
  }
  if (p.Has("MaxGroupPreparedCapacity")) {
    int prepared = 0;
    if (!ParseInt(p.Get("MaxGroupPreparedCapacity"), &prepared) || prepared < -1) {
      return QueryError(400, "Sender", "ValidationError",
                        "MaxGroupPreparedCapacity must be a whole number of at least -1");
    }
    if (prepared >= 0) w.max_prepared = prepared;
  }
  if (p.Has("PoolState")) w.pool_state = p.Get("PoolState");
  if (w.pool_state != "Stopped" && w.pool_state != "Running" && w.pool_state != "Hibernated") {
    return QueryError(
        400, "Sender", "ValidationError",
        "1 validation error detected: Value '" + w.pool_state +
            "' at 'poolState' failed to satisfy constraint: Member must satisfy enum value set: "
            "[Stopped, Running, Hibernated]");
  }
  w.reuse_on_scale_in = p.Get("InstanceReusePolicy.ReuseOnScaleIn") == "true";
  g->warm_pool = w;
  ReconcileGroup(*g, now);
  return AsgEmptyAnswer("PutWarmPool", Uuid(), /*result=*/true);
}

EmulatorResponse CloudEmulator::DescribeWarmPool(const Params& p) {
  EmulatorResponse error;
  const Group* g = RequiredGroup(p, &error);
  if (g == nullptr) return error;
  const std::string& name = g->spec.name;
  size_t offset = 0, max_records = 0;
  if (auto bad = AsgPaging(p, 50, &offset, &max_records)) return *bad;
  std::vector<const Instance*> warm;
  for (const Instance& i : instances_) {
    if (g->warm_pool && i.info.group == name && i.info.in_warm_pool && i.info.state != "terminated") {
      warm.push_back(&i);
    }
  }
  const size_t last = std::min(warm.size(), offset + max_records);
  std::string body = AsgOpen("DescribeWarmPool") + "  <DescribeWarmPoolResult>\n    ";
  if (g->warm_pool) body += WarmPoolConfigurationXml(*g->warm_pool);
  body += "<Instances>";
  for (size_t k = offset; k < last; ++k) {
    const EmulatedInstance& i = warm[k]->info;
    body += "<member>";
    Leaf(body, "InstanceId", i.instance_id);
    Leaf(body, "InstanceType", i.instance_type);
    Leaf(body, "AvailabilityZone", i.zone);
    Leaf(body, "LifecycleState", WarmLifecycle(i, g->warm_pool->pool_state));
    Leaf(body, "HealthStatus", "Healthy");
    body += "<LaunchTemplate>";
    Leaf(body, "LaunchTemplateName", g->spec.launch_template);
    Leaf(body, "Version", "$Latest");
    body += "</LaunchTemplate>";
    Leaf(body, "ProtectedFromScaleIn", "false");
    body += "</member>";
  }
  body += "</Instances>\n";
  if (last < warm.size()) Leaf(body, "NextToken", PageToken(last));
  body += "  </DescribeWarmPoolResult>\n  <ResponseMetadata>";
  Leaf(body, "RequestId", Uuid());
  body += "</ResponseMetadata>\n</DescribeWarmPoolResponse>\n";
  return {200, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::DeleteWarmPool(const Params& p, WallTime now) {
  EmulatorResponse error;
  Group* g = RequiredGroup(p, &error);
  if (g == nullptr) return error;
  const std::string& name = g->spec.name;
  if (!g->warm_pool) {
    return QueryError(400, "Sender", "ValidationError",
                      "No warm pool found for Auto Scaling group '" + name + "'.");
  }
  g->warm_pool->pending_delete = true;
  ReconcileGroup(*g, now);
  // ForceDelete: the pool goes now, its instances terminate without waiting.
  if (p.Get("ForceDelete") == "true") g->warm_pool.reset();
  return AsgEmptyAnswer("DeleteWarmPool", Uuid(), /*result=*/true);
}

}  // namespace gpuscaler::sim
