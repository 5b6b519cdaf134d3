// FakeArm: an in-memory Azure Resource Manager for the AzureProvider tests,
// answering through a FakeTransport with the shapes of
// tests/cloud/testdata/azure/ (agent pools and their machines, scale sets
// and their VMs, long-running operations, error bodies). It keeps counts,
// tags, etags and members, so a launch, a replay and a termination can be
// checked against what the "cloud" holds afterwards.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/azure_client.h"
#include "gpuscaler/cloud/azure_provider.h"
#include "gpuscaler/model/text_file.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud::azure_testing {

using nlohmann::json;

inline constexpr const char* kArmTestEndpoint = "https://arm.test/";
inline constexpr const char* kSub = "00000000-0000-0000-0000-000000000000";
inline constexpr const char* kNodeGroup = "MC_rg1_clustername1_eastus";

inline json AzureTestData(const std::string& name) {
  Result<std::string> text =
      ReadTextFile(std::string(GPUSCALER_SOURCE_DIR) + "/tests/cloud/testdata/azure/" + name);
  if (!text) return json();
  return json::parse(*text);
}

inline TransportResponse ArmJson(int status, const json& body, HeaderList headers = {}) {
  headers.push_back({"Content-Type", "application/json; charset=utf-8"});
  return {status, std::move(headers), body.is_null() ? "" : body.dump()};
}

inline std::string Base36Suffix(int64_t n) {
  std::string out(6, '0');
  for (int i = 5; i >= 0 && n > 0; --i, n /= 36) out[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[n % 36];
  return out;
}

enum class LroStyle { kAsyncOperation, kLocation, kSynchronous };

class FakeArm {
 public:
  struct Group {
    json resource;
    std::vector<json> members;  // machines (AKS) or VMs (VMSS), both kept as VMs
    int64_t next_ordinal = 0;
  };
  struct Operation {
    int in_progress = 0;  // InProgress answers left
    json error;           // non-null: ends Failed with it
  };

  testing::FakeTransport transport;
  AzureDriver driver;
  std::map<std::string, Group> groups;
  LroStyle lro = LroStyle::kAsyncOperation;
  int polls_in_progress = 1;
  std::string retry_after = "1";
  // The next scale-up's operation ends Failed with this error after
  // creating only `grant` of the new members (VMSS: the rest as Failed VMs).
  std::optional<json> fail_next_scale;
  int grant = 0;
  int throttle_next = 0;      // answer this many calls 429 first
  int precondition_next = 0;  // change the etag under this many writes (412)
  int writes = 0;             // PUT / PATCH of a group
  int deletes = 0;            // deleteMachines / delete calls
  std::map<std::string, Operation> operations;

  explicit FakeArm(AzureDriver d) : driver(d) {
    transport.handler = [this](const TransportRequest& r) { return Handle(r); };
  }

  std::string GroupPath(const std::string& name) const {
    std::string base = std::string("subscriptions/") + kSub + "/resourceGroups/";
    if (driver == AzureDriver::kAks)
      return base + "rg1/providers/Microsoft.ContainerService/managedClusters/clustername1/agentPools/" + name;
    return base + "rg-k8s/providers/Microsoft.Compute/virtualMachineScaleSets/" + name;
  }
  std::string VmSetName(const std::string& group) const {
    return driver == AzureDriver::kAks ? "aks-" + group + "-25481572-vmss" : group;
  }
  std::string VmSetPath(const std::string& group) const {
    std::string base = std::string("subscriptions/") + kSub + "/resourceGroups/";
    return base + (driver == AzureDriver::kAks ? std::string(kNodeGroup) : std::string("rg-k8s")) +
           "/providers/Microsoft.Compute/virtualMachineScaleSets/" + VmSetName(group);
  }

  // A group from the test data: `spot`, its tags, count 0.
  void AddGroup(const std::string& name, const std::string& vm_size, bool spot, std::map<std::string, std::string> tags,
                std::vector<std::string> zones = {"1", "2"}) {
    Group g;
    if (driver == AzureDriver::kAks) {
      g.resource = AzureTestData("agent_pool.json");
      g.resource["name"] = name;
      g.resource["id"] = "/" + GroupPath(name);
      json& p = g.resource["properties"];
      p["vmSize"] = vm_size;
      p["scaleSetPriority"] = spot ? "Spot" : "Regular";
      if (!spot) p.erase("scaleSetEvictionPolicy"), p.erase("spotMaxPrice");
      p["tags"] = tags;
      p["availabilityZones"] = zones;
    } else {
      g.resource = AzureTestData("scale_set.json");
      g.resource["name"] = name;
      g.resource["id"] = "/" + GroupPath(name);
      g.resource["sku"]["name"] = vm_size;
      json& profile = g.resource["properties"]["virtualMachineProfile"];
      profile["priority"] = spot ? "Spot" : "Regular";
      profile["osProfile"]["computerNamePrefix"] = name + "-";
      if (!spot) profile.erase("evictionPolicy"), profile.erase("billingProfile");
      g.resource["tags"] = tags;
      g.resource["zones"] = zones;
    }
    groups[name] = std::move(g);
  }

  int Count(const std::string& name) const {
    const json& r = groups.at(name).resource;
    return driver == AzureDriver::kAks ? r["properties"]["count"].get<int>() : r["sku"]["capacity"].get<int>();
  }
  std::map<std::string, std::string> Tags(const std::string& name) const {
    const json& r = groups.at(name).resource;
    return (driver == AzureDriver::kAks ? r["properties"]["tags"] : r["tags"]).get<std::map<std::string, std::string>>();
  }
  std::vector<std::string> MemberNames(const std::string& name) const {
    std::vector<std::string> out;
    for (const json& vm : groups.at(name).members) out.push_back(vm["properties"]["osProfile"]["computerName"]);
    return out;
  }
  // Marks a member as a Spot VM being evicted (Deleting), or removes it.
  void Evict(const std::string& group, const std::string& node, bool gone) {
    auto& members = groups.at(group).members;
    for (auto it = members.begin(); it != members.end(); ++it) {
      if ((*it)["properties"]["osProfile"]["computerName"] != node) continue;
      if (gone) {
        members.erase(it);
        SetCount(group, Count(group) - 1);
      } else {
        (*it)["properties"]["provisioningState"] = "Deleting";
      }
      return;
    }
  }

 private:
  void SetCount(const std::string& name, int count) {
    json& r = groups.at(name).resource;
    (driver == AzureDriver::kAks ? r["properties"]["count"] : r["sku"]["capacity"]) = count;
  }
  void BumpEtag(const std::string& name) {
    json& r = groups.at(name).resource;
    json& etag = driver == AzureDriver::kAks ? r["properties"]["eTag"] : r["etag"];
    etag = etag.get<std::string>() + "+";
  }
  std::string Etag(const std::string& name) const {
    const json& r = groups.at(name).resource;
    return driver == AzureDriver::kAks ? r["properties"]["eTag"] : r["etag"];
  }
  json NewMember(const std::string& group, bool failed) {
    Group& g = groups.at(group);
    const int64_t ordinal = g.next_ordinal++;
    json vm = AzureTestData("scale_set_vm.json");
    const std::string computer = driver == AzureDriver::kAks ? VmSetName(group) + Base36Suffix(ordinal)
                                                              : group + "-" + Base36Suffix(ordinal);
    vm["instanceId"] = std::to_string(ordinal);
    vm["name"] = VmSetName(group) + "_" + std::to_string(ordinal);
    vm["id"] = "/" + VmSetPath(group) + "/virtualMachines/" + std::to_string(ordinal);
    vm["zones"] = json::array({"1"});
    vm["properties"]["osProfile"]["computerName"] = computer;
    vm["properties"]["instanceView"]["computerName"] = computer;
    if (failed) vm["properties"]["provisioningState"] = "Failed";
    return vm;
  }
  json AsMachine(const std::string& group, const json& vm) const {
    json m = AzureTestData("machine_list.json")["value"][0];
    const std::string name = vm["properties"]["osProfile"]["computerName"];
    m["name"] = name;
    m["id"] = "/" + GroupPath(group) + "/machines/" + name;
    m["zones"] = vm["zones"];
    m["properties"]["resourceId"] = vm["id"];
    return m;
  }
  TransportResponse Accepted(const json& body, std::optional<json> error) {
    const std::string id = "op" + std::to_string(operations.size() + 1);
    operations[id] = {polls_in_progress, error ? *error : json()};
    if (lro == LroStyle::kSynchronous && !error) return ArmJson(200, body);
    if (lro == LroStyle::kLocation)
      return ArmJson(202, nullptr,
                     {{"Location", std::string(kArmTestEndpoint) + "operationresults/" + id + "?api-version=2017-08-31"},
                      {"Retry-After", retry_after}});
    return ArmJson(201, body,
                   {{"Azure-AsyncOperation",
                     std::string(kArmTestEndpoint) + "operations/" + id + "?api-version=2017-08-31"},
                    {"Retry-After", retry_after}});
  }
  TransportResponse Poll(const std::string& id, bool location) {
    auto it = operations.find(id);
    if (it == operations.end()) return ArmJson(404, {{"error", {{"code", "NotFound"}, {"message", "no such operation"}}}});
    Operation& op = it->second;
    if (op.in_progress > 0) {
      --op.in_progress;
      if (location) return ArmJson(202, nullptr, {{"Retry-After", retry_after}});
      return ArmJson(200, AzureTestData("operation_in_progress.json"), {{"Retry-After", retry_after}});
    }
    if (location) {
      if (!op.error.is_null()) return ArmJson(400, {{"error", op.error}});
      return ArmJson(204, nullptr);
    }
    if (!op.error.is_null()) {
      json failed = AzureTestData("operation_failed_allocation.json");
      failed["error"] = op.error;
      return ArmJson(200, failed);
    }
    return ArmJson(200, AzureTestData("operation_succeeded.json"));
  }
  TransportResponse Write(const std::string& name, const TransportRequest& r) {
    ++writes;
    if (precondition_next > 0) {
      --precondition_next;
      BumpEtag(name);  // another writer got there first
    }
    if (HeaderValue(r.headers, "If-Match") != Etag(name))
      return ArmJson(412, AzureTestData("error_precondition_failed.json"));
    const json body = json::parse(r.body);
    const bool aks = driver == AzureDriver::kAks;
    const int count = aks ? body["properties"]["count"].get<int>() : body["sku"]["capacity"].get<int>();
    json& resource = groups.at(name).resource;
    (aks ? resource["properties"]["tags"] : resource["tags"]) = aks ? body["properties"]["tags"] : body["tags"];
    auto& members = groups.at(name).members;
    std::optional<json> error;
    const int old_count = Count(name);
    if (count > old_count) {
      int make = count - old_count;
      int good = make;
      if (fail_next_scale) {
        error = *fail_next_scale;
        fail_next_scale.reset();
        good = std::min(grant, make);
      }
      for (int i = 0; i < make; ++i) {
        if (i >= good && aks) break;  // AKS keeps no failed machines
        members.push_back(NewMember(name, i >= good));
      }
    }
    SetCount(name, count);
    BumpEtag(name);
    return Accepted(resource, error);
  }
  TransportResponse Delete(const std::string& name, const std::vector<std::string>& which, bool by_instance_id) {
    ++deletes;
    auto& members = groups.at(name).members;
    int removed = 0;
    for (const std::string& w : which) {
      for (auto it = members.begin(); it != members.end(); ++it) {
        const std::string key = by_instance_id ? (*it)["instanceId"].get<std::string>()
                                               : (*it)["properties"]["osProfile"]["computerName"].get<std::string>();
        if (key != w) continue;
        members.erase(it);
        ++removed;
        break;
      }
    }
    SetCount(name, Count(name) - removed);
    BumpEtag(name);
    const LroStyle saved = lro;
    lro = LroStyle::kLocation;  // deletions answer 202 with Location
    TransportResponse out = Accepted(nullptr, std::nullopt);
    lro = saved;
    return out;
  }

  Result<TransportResponse> Handle(const TransportRequest& r) {
    std::string rest = r.url.substr(std::string(kArmTestEndpoint).size());
    const size_t q = rest.find('?');
    const std::string path = rest.substr(0, q);
    const std::string query = q == std::string::npos ? "" : rest.substr(q + 1);
    if (throttle_next > 0) {
      --throttle_next;
      return ArmJson(429, AzureTestData("error_throttled.json"), {{"Retry-After", "17"}});
    }
    if (path.rfind("operations/", 0) == 0) return Poll(path.substr(11), false);
    if (path.rfind("operationresults/", 0) == 0) return Poll(path.substr(17), true);
    for (auto& [name, g] : groups) {
      const std::string base = GroupPath(name);
      if (path == base && r.method == "GET") return ArmJson(200, g.resource);
      if (path == base && (r.method == "PUT" || r.method == "PATCH")) return Write(name, r);
      if (path == base + "/machines" && r.method == "GET") {
        json list = {{"value", json::array()}};
        for (const json& vm : g.members) list["value"].push_back(AsMachine(name, vm));
        return ArmJson(200, list);
      }
      if (path == VmSetPath(name) + "/virtualMachines" && r.method == "GET") {
        json list = {{"value", g.members}};
        return ArmJson(200, list);
      }
      if (path == base + "/deleteMachines" && r.method == "POST")
        return Delete(name, json::parse(r.body)["machineNames"].get<std::vector<std::string>>(), false);
      if (path == base + "/delete" && r.method == "POST")
        return Delete(name, json::parse(r.body)["instanceIds"].get<std::vector<std::string>>(), true);
    }
    return ArmJson(404, {{"error", {{"code", "ResourceNotFound"}, {"message", "The Resource '" + path + "' was not found."}}}});
  }
};

}  // namespace gpuscaler::cloud::azure_testing
