// GcpProvider: listing, termination, preemptions.
#include <algorithm>
#include <cstdio>

#include "gcp_provider_impl.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/net/url.h"

namespace gpuscaler::cloud {

using nlohmann::json;

namespace {

// Preemption operations are remembered this long (far beyond the 30 s
// notice) so one is reported once.
constexpr std::chrono::hours kRememberOperations{2};
// On the first poll, preemptions this much older than the process are old
// news (the instances are gone; a restart must not report them again).
constexpr Seconds kFirstPollLookBack{120};

bool Stopping(const std::string& status) {
  return status == "STOPPING" || status == "TERMINATED" || status == "SUSPENDING" || status == "SUSPENDED";
}

}  // namespace

std::string FormatQuota(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

Result<std::vector<json>> GcpProvider::AggregatedInstances(const std::string& filter) {
  std::vector<json> out;
  std::string page;
  do {
    std::string path = "projects/" + options_.project +
                       "/aggregated/instances?filter=" + net::PercentEncode(filter) +
                       "&returnPartialSuccess=true";
    if (!page.empty()) path += "&pageToken=" + net::PercentEncode(page);
    Result<json> got = client_.Call("GET", path);
    if (!got) return got.error();
    const json& items = ObjectAt(*got, "items");
    for (auto scope = items.begin(); scope != items.end(); ++scope) {
      for (const json& inst : ArrayAt(scope.value(), "instances")) out.push_back(inst);
    }
    page = StringAt(*got, "nextPageToken");
  } while (!page.empty());
  return out;
}

std::string GcpProvider::PoolFromLabel(const std::string& label) const {
  for (const auto& [pool, target] : options_.pools) {
    if (LabelValue(pool) == label) return pool;
  }
  for (const auto& [name, l] : launched_) {
    if (LabelValue(l.pool) == label) return l.pool;
  }
  return label;
}

Instance GcpProvider::ToInstance(const json& r) const {
  Instance inst;
  inst.instance_id = StringAt(r, "name");
  const json& labels = ObjectAt(r, "labels");
  inst.pool = MetadataItem(r, kGcpPoolLabel);
  if (inst.pool.empty()) inst.pool = PoolFromLabel(StringAt(labels, kGcpPoolLabel));
  const std::string zone = LastSegment(StringAt(r, "zone"));
  auto known = launched_.find(inst.instance_id);
  if (known != launched_.end()) {
    inst.offering = known->second.offering;
    if (inst.pool.empty()) inst.pool = known->second.pool;
  } else {
    inst.offering.instance_type = LastSegment(StringAt(r, "machineType"));
    inst.offering.zone = zone;
    inst.offering.region = RegionOfZone(zone);
    const json& scheduling = ObjectAt(r, "scheduling");
    const bool preemptible = scheduling.contains("preemptible") && scheduling["preemptible"].is_boolean() &&
                             scheduling["preemptible"].get<bool>();
    inst.offering.capacity_type = StringAt(scheduling, "provisioningModel") == "SPOT" || preemptible
                                      ? CapacityType::kSpot
                                      : CapacityType::kOnDemand;
    // An instance that targets a reservation holds one of its slots (its
    // affinity is its template's when a group made it).
    if (std::string reservation = SpecificReservationOf(r); !reservation.empty()) {
      inst.offering.capacity_type = CapacityType::kReserved;
      inst.offering.reservation_id = std::move(reservation);
    }
  }
  WallTime created;
  inst.launch_time =
      ParseRfc3339(StringAt(r, "creationTimestamp"), &created) ? created : client_.clock().WallNow();
  const std::string status = StringAt(r, "status");
  inst.state = status == "RUNNING" ? InstanceState::kRunning
               : Stopping(status)  ? InstanceState::kShuttingDown
                                   : InstanceState::kPending;  // PROVISIONING, STAGING, REPAIRING
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    if (it.value().is_string()) inst.tags[it.key()] = it.value().get<std::string>();
  }
  inst.tags[kOwnerTag] = inst.pool;
  inst.tags[kClusterTag] = options_.cluster_name;
  if (std::string token = MetadataItem(r, kGcpIntentLabel); !token.empty()) {
    inst.tags[kIntentTag] = token;
  } else if (known != launched_.end()) {
    inst.tags[kIntentTag] = known->second.token;
  }
  return inst;
}

Result<std::vector<Instance>> GcpProvider::ListInstances() {
  Result<std::vector<json>> found =
      AggregatedInstances(std::string("labels.") + kGcpClusterLabel + " = \"" + cluster_label_ + "\"");
  if (!found) return found.error().WithContext("listing instances");
  // The filter is the server's; ownership is checked here as well.
  std::erase_if(*found, [&](const json& r) {
    const json& labels = ObjectAt(r, "labels");
    return StringAt(labels, kGcpClusterLabel) != cluster_label_ || StringAt(labels, kGcpPoolLabel).empty();
  });
  Result<std::map<std::string, InstanceState>> standby = StandbyStates(*found);
  if (!standby) return standby.error().WithContext("listing instances");
  std::vector<Instance> out;
  std::map<std::string, std::string> known;
  for (const json& r : *found) {
    out.push_back(ToInstance(r));
    if (auto s = standby->find(out.back().instance_id); s != standby->end()) out.back().state = s->second;
    known[out.back().instance_id] = out.back().offering.zone;
  }
  known_ = std::move(known);
  std::sort(out.begin(), out.end(),
            [](const Instance& a, const Instance& b) { return a.instance_id < b.instance_id; });
  return out;
}

Status GcpProvider::Terminate(const std::vector<std::string>& instance_ids) {
  if (instance_ids.empty()) return Status::Ok();
  Result<std::vector<json>> found =
      AggregatedInstances(std::string("labels.") + kGcpClusterLabel + " = \"" + cluster_label_ + "\"");
  if (!found) return found.error().WithContext("terminate: listing this cluster's instances");
  std::map<std::string, Owned> owned;
  for (const json& r : *found) {
    if (StringAt(ObjectAt(r, "labels"), kGcpClusterLabel) != cluster_label_) continue;
    Owned o;
    o.zone = LastSegment(StringAt(r, "zone"));
    o.pool = ToInstance(r).pool;
    o.status = StringAt(r, "status");
    o.created_by_mig = LastSegment(MetadataItem(r, "created-by"));
    owned[StringAt(r, "name")] = o;
  }
  // Which stopping members are warm (stopped or suspended through their
  // group) rather than already going away; unknown when the groups cannot
  // be read, and then none is (the next call deletes them).
  Result<std::map<std::string, InstanceState>> standby = StandbyStates(*found);
  // (zone, group) -> names; group "" means bare instances.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> batches;
  for (const std::string& id : instance_ids) {
    if (auto o = owned.find(id); o != owned.end()) {
      std::string mig = o->second.created_by_mig;
      if (mig.empty()) {
        const GcpPoolTarget target = TargetFor(o->second.pool);
        if (target.uses_migs()) mig = MigFor(target, o->second.pool, o->second.zone);
      }
      // A warm member is deleted like a running one; anything else that is
      // stopping is already going away (deleted, preempted).
      if (Stopping(o->second.status) &&
          !(standby && standby->count(id) > 0 && standby->at(id) != InstanceState::kShuttingDown))
        continue;
      batches[{o->second.zone, mig}].push_back(id);
    } else if (auto l = launched_.find(id); l != launched_.end() && !l->second.mig.empty()) {
      // Launched into a group and not created yet: deleting it cancels it.
      batches[{l->second.zone, l->second.mig}].push_back(id);
    }
    // Otherwise gone already, or not this cluster's: never touched.
  }
  for (auto& [where, names] : batches) {
    const auto& [zone, mig] = where;
    std::sort(names.begin(), names.end());
    if (!mig.empty()) {
      if (Status s = DeleteFromMig(zone, mig, names); !s.ok()) return s.error().WithContext("terminate");
      continue;
    }
    for (const std::string& name : names) {
      Result<json> op = client_.Call("DELETE", ZonePath(zone) + "/instances/" + name +
                                                   "?requestId=" + RequestId("delete/" + zone + "/" + name));
      if (!op) {
        if (op.error().category() == ErrorCategory::kNotFound) continue;
        return op.error().WithContext("terminate " + name);
      }
      Result<GcpOperation> done = Wait(*op);
      if (!done) return done.error().WithContext("terminate " + name);
      if (!done->errors.empty()) {
        Error e = GcpErrorFrom("terminate " + name, done->errors, done->http_error_status);
        if (e.category() != ErrorCategory::kNotFound) return e;
      }
    }
  }
  for (const std::string& id : instance_ids) launched_.erase(id);
  return Status::Ok();
}

Result<std::vector<InterruptionNotice>> GcpProvider::PollInterruptions() {
  const WallTime now = client_.clock().WallNow();
  if (!first_poll_) first_poll_ = now;
  std::set<std::string> zones(options_.zones.begin(), options_.zones.end());
  for (const auto& [name, zone] : known_) zones.insert(zone);
  for (const auto& [name, l] : launched_) zones.insert(l.zone);
  const std::string filter = "operationType = \"compute.instances.preempted\"";
  std::vector<InterruptionNotice> out;
  for (const std::string& zone : zones) {
    std::string page;
    do {
      std::string path = ZonePath(zone) + "/operations?filter=" + net::PercentEncode(filter);
      if (!page.empty()) path += "&pageToken=" + net::PercentEncode(page);
      Result<json> got = client_.Call("GET", path);
      if (!got) {
        if (!out.empty()) return out;  // keep what was found
        return got.error().WithContext("preemptions in " + zone);
      }
      for (const json& j : ArrayAt(*got, "items")) {
        Result<GcpOperation> op = ParseGcpOperation(j);
        if (!op || op->operation_type != "compute.instances.preempted") continue;
        // Ownership first: an operation on an instance not known yet (the
        // inventory is listed after a restart) is looked at again next poll.
        const std::string name = LastSegment(op->target_link);
        if (known_.count(name) == 0 && launched_.count(name) == 0) continue;
        if (!seen_operations_.emplace(op->name, client_.clock().Now()).second) continue;
        WallTime at;
        if (!ParseRfc3339(op->insert_time, &at)) at = now;
        if (at + kFirstPollLookBack < *first_poll_) continue;
        out.push_back({name, at, at + options_.interruption_notice});
      }
      page = StringAt(*got, "nextPageToken");
    } while (!page.empty());
  }
  const SteadyTime forget_before = client_.clock().Now() - kRememberOperations;
  std::erase_if(seen_operations_, [&](const auto& kv) { return kv.second < forget_before; });
  std::sort(out.begin(), out.end(), [](const InterruptionNotice& a, const InterruptionNotice& b) {
    return std::tie(a.notice_time, a.instance_id) < std::tie(b.notice_time, b.instance_id);
  });
  return out;
}

}  // namespace gpuscaler::cloud
