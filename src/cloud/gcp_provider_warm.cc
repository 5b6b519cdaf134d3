// GcpProvider: warm pools (Stop, Start through the managed instance group's
// standby actions) and the states ListInstances gives group members that
// are stopping, stopped or suspended.
#include <algorithm>
#include <chrono>
#include <set>
#include <tuple>

#include "gcp_provider_impl.h"
#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {

using nlohmann::json;

namespace {

bool Stopped(const std::string& status) { return status == "STOPPING" || status == "TERMINATED"; }
bool Suspended(const std::string& status) { return status == "SUSPENDING" || status == "SUSPENDED"; }
bool Up(const std::string& status) {
  return status == "PROVISIONING" || status == "STAGING" || status == "RUNNING" || status == "REPAIRING";
}

}  // namespace

Result<std::map<std::string, GcpProvider::WarmMember>> GcpProvider::WarmMembers(
    const std::vector<std::string>& ids, bool starting) {
  const std::string what = starting ? "start" : "stop";
  Result<std::vector<json>> found =
      AggregatedInstances(std::string("labels.") + kGcpClusterLabel + " = \"" + cluster_label_ + "\"");
  if (!found) return found.error().WithContext(what + ": listing this cluster's instances");
  std::map<std::string, WarmMember> out;
  for (const json& r : *found) {
    if (StringAt(ObjectAt(r, "labels"), kGcpClusterLabel) != cluster_label_) continue;
    const std::string name = StringAt(r, "name");
    if (std::find(ids.begin(), ids.end(), name) == ids.end()) continue;
    out[name] = {LastSegment(StringAt(r, "zone")), LastSegment(MetadataItem(r, "created-by")),
                 StringAt(r, "status")};
  }
  for (const std::string& id : ids) {
    auto it = out.find(id);
    if (it == out.end()) {
      return Error::Config(what + ": no instance " + id + " of cluster " + options_.cluster_name);
    }
    if (it->second.mig.empty()) {
      return Error::Config(what + " " + id +
                           ": not in a managed instance group; warm nodes on Compute Engine need a pool "
                           "with groups (cloud.gcp.pools.<pool>.migs or mig_pattern)");
    }
  }
  return out;
}

Status GcpProvider::StandbyCall(const std::string& zone, const std::string& mig, const std::string& verb,
                                const std::vector<std::string>& names) {
  // The same node is stopped and started again and again, so the requestId
  // is the call's own (the client's retries of it reuse it): the group, the
  // names, this process's count of such calls and the time.
  std::string seed = verb + "/" + zone + "/" + mig;
  json body = {{"instances", json::array()}};
  for (const std::string& n : names) {
    body["instances"].push_back("zones/" + zone + "/instances/" + n);
    seed += "/" + n;
  }
  seed += "#" + std::to_string(++standby_calls_) + "@" +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                             client_.clock().WallNow().time_since_epoch())
                             .count());
  // Without force, the group keeps its standbyPolicy.initialDelaySec: a
  // node stopped right after its launch initializes first.
  if (verb == "stopInstances") body["forceStop"] = false;
  if (verb == "suspendInstances") body["forceSuspend"] = false;
  const std::string what = verb + " on group " + mig;
  Result<json> sent = client_.Call(
      "POST", ZonePath(zone) + "/instanceGroupManagers/" + mig + "/" + verb + "?requestId=" + RequestId(seed),
      body);
  if (!sent) return sent.error().WithContext(what);
  Result<GcpOperation> op = Wait(*sent);
  if (!op) return op.error().WithContext(what);
  if (!op->errors.empty()) return GcpErrorFrom(what, op->errors, op->http_error_status);
  return Status::Ok();
}

Status GcpProvider::Stop(const std::vector<std::string>& instance_ids, WarmState state) {
  if (instance_ids.empty()) return Status::Ok();
  Result<std::map<std::string, WarmMember>> members = WarmMembers(instance_ids, false);
  if (!members) return members.error();
  const std::string verb = state == WarmState::kHibernated ? "suspendInstances" : "stopInstances";
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> batches;
  std::vector<std::string> not_running;
  for (const auto& [name, m] : *members) {
    if (Stopped(m.status) || Suspended(m.status)) continue;  // already stopping, stopped or suspended
    if (m.status != "RUNNING") {
      not_running.push_back(name + " (" + m.status + ")");
      continue;
    }
    batches[{m.zone, m.mig}].push_back(name);
  }
  for (const auto& [where, names] : batches) {
    const auto& [zone, mig] = where;
    if (Status s = StandbyCall(zone, mig, verb, names); !s.ok()) return s.error().WithContext("stop");
  }
  if (!not_running.empty()) {
    std::string list;
    for (const std::string& n : not_running) list += (list.empty() ? "" : ", ") + n;
    // A group stops only running instances; these are still starting.
    return Error::Transient("stop: not running yet: " + list);
  }
  return Status::Ok();
}

std::map<std::string, std::vector<GcpErrorItem>> GcpProvider::FollowWake(
    const std::string& zone, const std::string& mig, const std::vector<std::string>& names) {
  std::map<std::string, std::vector<GcpErrorItem>> failed;
  std::set<std::string> up;
  const SteadyTime deadline = client_.clock().Now() + options_.operation_timeout;
  while (true) {
    Result<json> managed = ListManaged(zone, mig);
    if (!managed) break;  // the start was accepted; the group carries it out
    for (const json& m : *managed) {
      std::string name = StringAt(m, "name");
      if (name.empty()) name = LastSegment(StringAt(m, "instance"));
      if (std::find(names.begin(), names.end(), name) == names.end()) continue;
      const std::string action = StringAt(m, "currentAction");
      auto errors = ParseGcpErrorItems(ObjectAt(ObjectAt(m, "lastAttempt"), "errors"));
      if ((action == "STARTING" || action == "RESUMING") && !errors.empty()) {
        failed[name] = std::move(errors);
        up.erase(name);
      } else if (Up(StringAt(m, "instanceStatus"))) {
        up.insert(name);
        failed.erase(name);
      }
    }
    if (up.size() + failed.size() >= names.size() || client_.clock().Now() >= deadline) break;
    client_.Sleep(options_.poll_interval);
  }
  return failed;
}

Status GcpProvider::Start(const std::vector<std::string>& instance_ids) {
  if (instance_ids.empty()) return Status::Ok();
  Result<std::map<std::string, WarmMember>> members = WarmMembers(instance_ids, true);
  if (!members) return members.error();
  // (zone, group, verb) -> names.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<std::string>> batches;
  for (const auto& [name, m] : *members) {
    if (Up(m.status)) continue;  // already pending or running
    batches[{m.zone, m.mig, Suspended(m.status) ? "resumeInstances" : "startInstances"}].push_back(name);
  }
  std::vector<GcpErrorItem> errors;
  size_t failed = 0, asked = 0;
  for (const auto& [key, names] : batches) {
    const auto& [zone, mig, verb] = key;
    if (Status s = StandbyCall(zone, mig, verb, names); !s.ok()) return s.error().WithContext("start");
    asked += names.size();
    for (auto& [name, items] : FollowWake(zone, mig, names)) {
      ++failed;
      errors.insert(errors.end(), items.begin(), items.end());
    }
  }
  if (failed == 0) return Status::Ok();
  // The group would retry them until capacity comes; the caller wants all
  // or none: every instance of the call goes back to its pool.
  std::string also;
  for (const auto& [key, names] : batches) {
    const auto& [zone, mig, verb] = key;
    const std::string back = verb == "resumeInstances" ? "suspendInstances" : "stopInstances";
    if (Status s = StandbyCall(zone, mig, back, names); !s.ok())
      also += "; giving back to group " + mig + " also failed (" + s.error().message() + ")";
  }
  return GcpErrorFrom("start: " + std::to_string(failed) + " of " + std::to_string(asked) +
                          " instance(s) could not start, and all of them went back to the warm pool" + also,
                      errors, 0);
}

Result<std::map<std::string, InstanceState>> GcpProvider::StandbyStates(const std::vector<json>& resources) {
  // (zone, group) -> its members that are stopping, stopped or suspended.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> asked;
  for (const json& r : resources) {
    const std::string status = StringAt(r, "status");
    if (!Stopped(status) && !Suspended(status)) continue;
    const std::string mig = LastSegment(MetadataItem(r, "created-by"));
    if (!mig.empty()) asked[{LastSegment(StringAt(r, "zone")), mig}].push_back(StringAt(r, "name"));
  }
  std::map<std::string, InstanceState> out;
  for (const auto& [where, names] : asked) {
    const auto& [zone, mig] = where;
    for (const std::string& n : names) out[n] = InstanceState::kShuttingDown;
    Result<json> managed = ListManaged(zone, mig);
    if (!managed) {
      if (managed.error().category() == ErrorCategory::kNotFound) continue;  // the group is gone
      return managed.error().WithContext("group " + mig);
    }
    for (const json& m : *managed) {
      std::string name = StringAt(m, "name");
      if (name.empty()) name = LastSegment(StringAt(m, "instance"));
      auto it = out.find(name);
      if (it == out.end()) continue;
      // Stopping or suspending through the group, or at rest in its
      // standby pool: warm. Being started: pending. Anything else (being
      // deleted, preempted, recreated; gone from the group): shutting down.
      const std::string action = StringAt(m, "currentAction");
      const std::string status = StringAt(m, "instanceStatus");
      if (action == "STOPPING" || action == "SUSPENDING" ||
          (action == "NONE" && (status == "TERMINATED" || status == "SUSPENDED"))) {
        it->second = InstanceState::kStopped;
      } else if (action == "STARTING" || action == "RESUMING") {
        it->second = InstanceState::kPending;
      }
    }
  }
  return out;
}

}  // namespace gpuscaler::cloud
