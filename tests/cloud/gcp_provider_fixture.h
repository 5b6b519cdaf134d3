// What the GcpProvider tests against a fake transport share (gcp_provider_names,
// _groups, _bulk_insert, _errors and _instances_test.cc): GcpProviderTest, a
// GcpProvider over a FakeTransport on a ManualClock (retry pauses recorded, not
// slept); the Compute Engine v1 shapes the fake answers with, as Google
// documents them (Operation, Instance, InstanceAggregatedList, error bodies);
// Call to read back what the provider sent; and IsVersion5Uuid for requestIds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/model/clock.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud::gcp_provider_testing {

using nlohmann::json;
using testing::FakeTransport;

inline constexpr const char* kEndpoint = "http://compute.test/compute/v1/";
inline constexpr const char* kZoneA = "us-central1-a";
inline constexpr const char* kZoneB = "us-central1-b";

class FixedToken final : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) override { return AccessToken{"ya29.test", now + Seconds(3600)}; }
  std::string Name() const override { return "fixed"; }
};

struct Call {
  std::string method;
  std::string path;  // after the endpoint, without the query
  QueryParams query;
  json body;

  std::string Q(const std::string& key) const { return FormValue(query, key).value_or(""); }
};

inline Call Parse(const TransportRequest& r) {
  Call c;
  c.method = r.method;
  std::string rest = r.url.substr(std::string(kEndpoint).size());
  const size_t q = rest.find('?');
  c.path = rest.substr(0, q);
  if (q != std::string::npos) c.query = DecodeForm(rest.substr(q + 1));
  if (!r.body.empty()) c.body = json::parse(r.body);
  return c;
}

inline TransportResponse Ok(const json& j) { return {200, {{"Content-Type", "application/json"}}, j.dump()}; }

inline TransportResponse HttpError(int status, const std::string& reason, const std::string& message) {
  return {status,
          {{"Content-Type", "application/json"}},
          json{{"error",
                {{"code", status},
                 {"message", message},
                 {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}}}}}
              .dump()};
}

inline json Operation(const std::string& name, const std::string& zone, const std::string& type,
                      const std::string& status, const std::string& target = "", json errors = nullptr) {
  json op = {{"kind", "compute#operation"},
             {"id", "4012345678901234567"},
             {"name", name},
             {"zone", std::string(kEndpoint) + "projects/proj/zones/" + zone},
             {"operationType", type},
             {"targetLink", target},
             {"status", status},
             {"progress", status == "DONE" ? 100 : 0},
             {"insertTime", "2026-12-04T08:00:00.000-08:00"},
             {"selfLink", std::string(kEndpoint) + "projects/proj/zones/" + zone + "/operations/" + name}};
  if (!errors.is_null()) {
    op["error"] = {{"errors", errors}};
    op["httpErrorStatusCode"] = 400;
    op["httpErrorMessage"] = "BAD REQUEST";
  }
  return op;
}

inline json InstanceResource(const std::string& name, const std::string& zone,
                             const std::string& machine_type, const std::string& cluster_label,
                             const std::string& pool_label, bool spot, const std::string& status = "RUNNING",
                             json metadata_items = json::array()) {
  json labels = json::object();
  if (!cluster_label.empty()) labels["gpuscaler-cluster"] = cluster_label;
  if (!pool_label.empty()) labels["gpuscaler-pool"] = pool_label;
  return {{"kind", "compute#instance"},
          {"id", "7712345678901234567"},
          {"name", name},
          {"zone", std::string(kEndpoint) + "projects/proj/zones/" + zone},
          {"machineType",
           std::string(kEndpoint) + "projects/proj/zones/" + zone + "/machineTypes/" + machine_type},
          {"status", status},
          {"creationTimestamp", "2026-12-04T08:00:00.000-08:00"},
          {"labels", labels},
          {"metadata", {{"kind", "compute#metadata"}, {"items", metadata_items}}},
          {"scheduling", spot ? json{{"provisioningModel", "SPOT"},
                                     {"instanceTerminationAction", "DELETE"},
                                     {"preemptible", true}}
                              : json{{"provisioningModel", "STANDARD"}}}};
}

inline json Aggregated(const std::map<std::string, std::vector<json>>& by_zone,
                       const std::string& next = "") {
  json items = json::object();
  for (const auto& [zone, instances] : by_zone) items["zones/" + zone] = {{"instances", instances}};
  items["zones/europe-west4-a"] = {
      {"warning",
       {{"code", "NO_RESULTS_ON_PAGE"},
        {"message", "There are no results for scope 'zones/europe-west4-a' on this page."}}}};
  json out = {{"kind", "compute#instanceAggregatedList"}, {"items", items}};
  if (!next.empty()) out["nextPageToken"] = next;
  return out;
}

inline Offering Offer(const std::string& type, const std::string& zone, CapacityType ct) {
  Offering o;
  o.instance_type = type;
  o.zone = zone;
  o.region = "us-central1";
  o.capacity_type = ct;
  return o;
}

class GcpProviderTest : public ::testing::Test {
 protected:
  GcpProviderTest() : clock_(FromUnixSeconds(1'796'400'000)) {}

  GcpProvider& Provider(GcpProviderOptions o = {}) {
    GcpClientOptions c;
    c.endpoint = kEndpoint;
    c.retry.max_attempts = 3;
    client_ =
        std::make_unique<GcpClient>(c, transport_, tokens_, clock_, [this](std::chrono::milliseconds d) {
          sleeps_.push_back(d);
          clock_.Advance(Seconds((d.count() + 999) / 1000));
        });
    if (o.cluster_name.empty()) o.cluster_name = "prod";
    if (o.project.empty()) o.project = "proj";
    if (o.region.empty()) o.region = "us-central1";
    if (o.zones.empty()) o.zones = {kZoneA, kZoneB};
    o.operation_timeout = std::chrono::seconds(20);
    provider_ = std::make_unique<GcpProvider>(o, *client_);
    return *provider_;
  }

  static GcpProviderOptions MigPools() {
    GcpProviderOptions o;
    o.pools["a100"].migs = {{kZoneA, "gke-ml-a100-a"}, {kZoneB, "gke-ml-a100-b"}};
    return o;
  }
  static GcpProviderOptions BarePools() {
    GcpProviderOptions o;
    o.instance_template = "global/instanceTemplates/gpu-node";
    return o;
  }

  // MigPools()'s groups gke-ml-a100-a ("a", zone a) and -b ("b", zone b):
  // createInstances adds every name asked for, deleteInstances takes names
  // out, and listManagedInstances shows each live instance as `shown` says
  // (its group, its index among the group's creations, its name).
  struct MigGroups {
    std::map<std::string, std::vector<std::string>> created;  // group -> names
    std::vector<std::string> deleted;
  };
  using ShowMember = std::function<json(const std::string& group, size_t index, const std::string& name)>;
  void ServeMigs(MigGroups* migs, ShowMember shown) {
    transport_.handler = [migs, shown](const TransportRequest& r) -> Result<TransportResponse> {
      Call c = Parse(r);
      const std::string mig = c.path.find("gke-ml-a100-a") != std::string::npos ? "a" : "b";
      if (c.path.ends_with("/listManagedInstances")) {
        json managed = json::array();
        const std::vector<std::string>& names = migs->created[mig];
        for (size_t i = 0; i < names.size(); ++i) {
          if (std::find(migs->deleted.begin(), migs->deleted.end(), names[i]) != migs->deleted.end())
            continue;
          managed.push_back(shown(mig, i, names[i]));
        }
        return Ok({{"managedInstances", managed}});
      }
      if (c.path.ends_with("/createInstances")) {
        for (const json& i : c.body["instances"]) migs->created[mig].push_back(i["name"]);
        return Ok(Operation("op-create-" + mig, mig == "a" ? kZoneA : kZoneB,
                            "compute.instanceGroupManagers.createInstances", "DONE"));
      }
      if (c.path.ends_with("/deleteInstances")) {
        EXPECT_EQ(c.body["skipInstancesOnValidationError"], true);
        for (const json& i : c.body["instances"]) migs->deleted.push_back(LastSegment(i.get<std::string>()));
        return Ok(Operation("op-delete", kZoneA, "compute.instanceGroupManagers.deleteInstances", "DONE"));
      }
      return HttpError(404, "notFound", "not found");
    };
  }

  LaunchRequest Request(const std::string& pool, int count, std::vector<Offering> offerings,
                        const std::string& token = "prod-inst1-d42-l0") {
    LaunchRequest r;
    r.pool = pool;
    r.count = count;
    r.offerings = std::move(offerings);
    r.idempotency_token = token;
    r.tags = {{kIntentTag, token}, {kOwnerTag, pool}};
    return r;
  }

  std::vector<Call> Calls(const std::string& method, const std::string& path_suffix) const {
    std::vector<Call> out;
    for (const TransportRequest& r : transport_.requests) {
      Call c = Parse(r);
      if (c.method == method && c.path.ends_with(path_suffix)) out.push_back(c);
    }
    return out;
  }

  ManualClock clock_;
  FakeTransport transport_;
  FixedToken tokens_;
  std::vector<std::chrono::milliseconds> sleeps_;
  std::unique_ptr<GcpClient> client_;
  std::unique_ptr<GcpProvider> provider_;
};

// A name-based (version 5) UUID: 8-4-4-4-12 lowercase hex, version nibble 5,
// variant 8..b.
inline bool IsVersion5Uuid(const std::string& v) {
  if (v.size() != 36) return false;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (v[i] == '-')) return false;
    if (!dash && !((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f'))) return false;
  }
  return v[14] == '5' && (v[19] == '8' || v[19] == '9' || v[19] == 'a' || v[19] == 'b');
}

}  // namespace gpuscaler::cloud::gcp_provider_testing
