// GcpProvider against a fake transport that answers with the Compute Engine
// v1 shapes (Operation, InstanceGroupManagersListManagedInstancesResponse,
// InstanceAggregatedList, Region quotas, error bodies) as Google documents
// them.
#include "gpuscaler/cloud/gcp_provider.h"

#include <gtest/gtest.h>

#include <functional>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/clock.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud {
namespace {

using nlohmann::json;
using testing::FakeTransport;

constexpr const char* kEndpoint = "http://compute.test/compute/v1/";
constexpr const char* kZoneA = "us-central1-a";
constexpr const char* kZoneB = "us-central1-b";

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

Call Parse(const TransportRequest& r) {
  Call c;
  c.method = r.method;
  std::string rest = r.url.substr(std::string(kEndpoint).size());
  const size_t q = rest.find('?');
  c.path = rest.substr(0, q);
  if (q != std::string::npos) c.query = DecodeForm(rest.substr(q + 1));
  if (!r.body.empty()) c.body = json::parse(r.body);
  return c;
}

TransportResponse Ok(const json& j) { return {200, {{"Content-Type", "application/json"}}, j.dump()}; }

TransportResponse HttpError(int status, const std::string& reason, const std::string& message) {
  return {status,
          {{"Content-Type", "application/json"}},
          json{{"error",
                {{"code", status},
                 {"message", message},
                 {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}}}}}
              .dump()};
}

json Operation(const std::string& name, const std::string& zone, const std::string& type,
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

json InstanceResource(const std::string& name, const std::string& zone, const std::string& machine_type,
                      const std::string& cluster_label, const std::string& pool_label, bool spot,
                      const std::string& status = "RUNNING", json metadata_items = json::array()) {
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

json Aggregated(const std::map<std::string, std::vector<json>>& by_zone, const std::string& next = "") {
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

Offering Offer(const std::string& type, const std::string& zone, CapacityType ct) {
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

// Plain character checks: <regex> draws GCC 12's -Wmaybe-uninitialized in
// the -O1 sanitizer build.
bool IsLabelValue(const std::string& v) {
  if (v.size() > 63) return false;
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// RFC 1035 label: [a-z]([-a-z0-9]{0,61}[a-z0-9])?
bool IsRfc1035Name(const std::string& v) {
  if (v.empty() || v.size() > 63 || !(v.front() >= 'a' && v.front() <= 'z')) return false;
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return v.back() != '-';
}

// A name-based (version 5) UUID: 8-4-4-4-12 lowercase hex, version nibble 5,
// variant 8..b.
bool IsVersion5Uuid(const std::string& v) {
  if (v.size() != 36) return false;
  for (size_t i = 0; i < v.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash != (v[i] == '-')) return false;
    if (!dash && !((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f'))) return false;
  }
  return v[14] == '5' && (v[19] == '8' || v[19] == '9' || v[19] == 'a' || v[19] == 'b');
}

TEST(GcpNames, LabelValuesAreValidAndDeterministic) {
  EXPECT_EQ(GcpProvider::LabelValue("prod"), "prod");
  EXPECT_EQ(GcpProvider::LabelValue("gpu_a100-spot"), "gpu_a100-spot");
  const std::string upper = GcpProvider::LabelValue("Prod");
  EXPECT_TRUE(IsLabelValue(upper)) << upper;
  EXPECT_TRUE(upper.starts_with("prod-")) << upper;
  EXPECT_NE(upper, "prod");  // two names never share a label
  EXPECT_NE(GcpProvider::LabelValue("a.b"), GcpProvider::LabelValue("a/b"));
  const std::string long_name(100, 'x');
  const std::string cut = GcpProvider::LabelValue(long_name);
  EXPECT_EQ(cut.size(), 63u);
  EXPECT_TRUE(IsLabelValue(cut));
  EXPECT_NE(cut, GcpProvider::LabelValue(long_name + "y"));
  EXPECT_EQ(GcpProvider::LabelValue("Prod"), upper);
}

TEST(GcpNames, InstanceNamesRequestIdsAndFamilies) {
  const std::string token = "prod-8c1d6f0e-4a59-4c4e-9d5b-13d1c0f3a8e2-d1234-l0";
  const std::string n0 = GcpProvider::InstanceName("prod", token, 0);
  EXPECT_EQ(n0, "gs-prod-" + GcpProvider::IntentHash(token) + "-0");
  EXPECT_TRUE(IsRfc1035Name(n0));
  EXPECT_NE(n0, GcpProvider::InstanceName("prod", token + "x", 0));
  EXPECT_NE(n0, GcpProvider::InstanceName("prod", token, 1));
  const std::string odd = GcpProvider::InstanceName("My_Very_Long_Cluster_Name_For_Tests", token, 117);
  EXPECT_TRUE(IsRfc1035Name(odd)) << odd;
  EXPECT_LE(odd.size(), 63u);

  const std::string id = GcpProvider::RequestId("seed");
  EXPECT_TRUE(IsVersion5Uuid(id)) << id;
  EXPECT_EQ(id, GcpProvider::RequestId("seed"));
  EXPECT_NE(id, GcpProvider::RequestId("seed2"));

  EXPECT_EQ(GcpProvider::MachineFamily("a2-highgpu-1g"), "a2-highgpu");
  EXPECT_EQ(GcpProvider::MachineFamily("g2-standard-8"), "g2-standard");
  EXPECT_EQ(GcpProvider::MachineFamily("a3-megagpu-8g"), "a3-megagpu");
}

TEST(GcpErrors, ClassificationTable) {
  EXPECT_EQ(ClassifyGcpError("ZONE_RESOURCE_POOL_EXHAUSTED", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("QUOTA_EXCEEDED", 0), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("quotaExceeded", 403), ErrorCategory::kCapacity);
  EXPECT_EQ(ClassifyGcpError("rateLimitExceeded", 403), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("userRateLimitExceeded", 403), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("", 429), ErrorCategory::kThrottled);
  EXPECT_EQ(ClassifyGcpError("backendError", 503), ErrorCategory::kTransient);
  EXPECT_EQ(ClassifyGcpError("", 502), ErrorCategory::kTransient);
  EXPECT_EQ(ClassifyGcpError("forbidden", 403), ErrorCategory::kAuth);
  EXPECT_EQ(ClassifyGcpError("authError", 401), ErrorCategory::kAuth);
  EXPECT_EQ(ClassifyGcpError("notFound", 404), ErrorCategory::kNotFound);
  EXPECT_EQ(ClassifyGcpError("invalid", 400), ErrorCategory::kConfig);

  const Error e = GcpErrorFromResponse("POST x", 403,
                                       HttpError(403, "forbidden",
                                                 "Required 'compute.instances.create' permission for "
                                                 "'projects/proj/zones/us-central1-a/instances/x'")
                                           .body);
  EXPECT_EQ(e.category(), ErrorCategory::kAuth);
  EXPECT_NE(e.message().find("HTTP 403"), std::string::npos);
  EXPECT_NE(e.message().find("compute.instances.create"), std::string::npos);

  // Quota metric from the message, or from errorDetails.
  auto items = ParseGcpErrorItems(
      json{{"errors",
            {{{"code", "QUOTA_EXCEEDED"},
              {"message", "Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 16.0 in region us-central1."}},
             {{"code", "QUOTA_EXCEEDED"},
              {"message", "Quota exceeded"},
              {"errorDetails",
               {{{"quotaInfo", {{"metricName", "compute.googleapis.com/gpus_per_gpu_family"}}}}}}}}}});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].quota_metric, "NVIDIA_A100_GPUS");
  EXPECT_EQ(items[1].quota_metric, "compute.googleapis.com/gpus_per_gpu_family");
}

// A managed instance group pool: createInstances with named instances, a
// requestId, the operation waited for, the new instances followed.
TEST_F(GcpProviderTest, MigLaunchCreatesNamedInstancesAndFollowsThem) {
  GcpProvider& p = Provider(MigPools());
  std::vector<std::string> created;
  int list_calls = 0;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    EXPECT_EQ(HeaderValue(r.headers, "Authorization"), "Bearer ya29.test");
    Call c = Parse(r);
    if (c.path.ends_with("/listManagedInstances")) {
      json managed = json::array();
      if (c.path.find("gke-ml-a100-a") != std::string::npos) {
        ++list_calls;
        for (const std::string& n : created) {
          json m = {{"instance", std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/" + n},
                    {"name", n},
                    {"currentAction", list_calls > 2 ? "NONE" : "CREATING"}};
          if (list_calls > 2) m["instanceStatus"] = "RUNNING";
          managed.push_back(m);
        }
      }
      return Ok({{"managedInstances", managed}});
    }
    if (c.path.ends_with("/createInstances")) {
      for (const json& i : c.body["instances"]) created.push_back(i["name"]);
      return Ok(Operation("operation-create-1", kZoneA, "compute.instanceGroupManagers.createInstances",
                          "RUNNING"));
    }
    if (c.path.ends_with("/operations/operation-create-1/wait")) {
      return Ok(
          Operation("operation-create-1", kZoneA, "compute.instanceGroupManagers.createInstances", "DONE"));
    }
    return HttpError(404, "notFound", "The resource '" + c.path + "' was not found");
  };
  const LaunchRequest req = Request("a100", 2, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)});
  auto result = p.Launch(req);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  EXPECT_TRUE(result->errors.empty());
  const std::string n0 = GcpProvider::InstanceName("prod", req.idempotency_token, 0);
  const std::string n1 = GcpProvider::InstanceName("prod", req.idempotency_token, 1);
  EXPECT_EQ(result->instances[0].instance_id, n0);
  EXPECT_EQ(result->instances[1].instance_id, n1);
  EXPECT_EQ(result->instances[0].state, InstanceState::kRunning);
  EXPECT_EQ(result->instances[0].offering.Key(), "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(result->instances[0].tags.at(kClusterTag), "prod");

  auto creates = Calls("POST", "/createInstances");
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/createInstances");
  EXPECT_TRUE(IsVersion5Uuid(creates[0].Q("requestId"))) << creates[0].Q("requestId");
  const json& first = creates[0].body["instances"][0];
  EXPECT_EQ(first["name"], n0);
  EXPECT_EQ(first["preservedState"]["metadata"]["gpuscaler-intent"], req.idempotency_token);
  EXPECT_EQ(first["preservedState"]["metadata"]["gpuscaler-pool"], "a100");
  // Waited on the operation, then followed listManagedInstances until RUNNING.
  EXPECT_EQ(Calls("POST", "/operations/operation-create-1/wait").size(), 1u);
  EXPECT_GE(list_calls, 3);

  // The same token again (a retry, or a restarted process replaying the
  // intent): the instances are found, nothing is created.
  auto again = p.Launch(req);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->instances.size(), 2u);
  EXPECT_EQ(Calls("POST", "/createInstances").size(), 1u);
  // A fresh provider (a restart) finds them too.
  GcpProviderOptions restarted = MigPools();
  restarted.cluster_name = "prod";
  restarted.project = "proj";
  restarted.region = "us-central1";
  GcpProvider fresh(restarted, *client_);
  auto replayed = fresh.Launch(req);
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(replayed->instances.size(), 2u);
  EXPECT_EQ(Calls("POST", "/createInstances").size(), 1u);
}

// A zone without capacity: the group's instances show lastAttempt.errors;
// they are taken out of the group and the next zone is tried.
TEST_F(GcpProviderTest, MigZoneExhaustionCancelsAndFallsBack) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  std::map<std::string, std::vector<std::string>>& created = migs.created;
  std::vector<std::string>& deleted = migs.deleted;
  ServeMigs(&migs, [](const std::string& mig, size_t, const std::string& n) {
    json m = {{"name", n}, {"currentAction", "CREATING"}};
    if (mig == "a") {
      m["lastAttempt"] = {
          {"errors",
           {{"errors",
             {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"},
               {"message",
                "The zone 'projects/proj/zones/us-central1-a' does not have enough resources "
                "available to fulfill the request.  Try a different zone, or try again later."}}}}}}};
    } else {
      m["instanceStatus"] = "PROVISIONING";
      m["currentAction"] = "NONE";
    }
    return m;
  });
  auto result = p.Launch(Request("a100", 2,
                                 {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot),
                                  Offer("a2-highgpu-1g", kZoneB, CapacityType::kSpot)}));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  for (const Instance& i : result->instances) EXPECT_EQ(i.offering.zone, kZoneB);
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].offering_key, "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(result->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(result->errors[0].error.message().find("ZONE_RESOURCE_POOL_EXHAUSTED"), std::string::npos);
  // Exactly the failed instances were taken out of group a.
  EXPECT_EQ(deleted, created["a"]);
  auto deletes = Calls("POST", "/deleteInstances");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/deleteInstances");
  // Zone b's names are other slots than the cancelled ones.
  for (const std::string& n : created["b"]) {
    EXPECT_EQ(std::find(created["a"].begin(), created["a"].end(), n), created["a"].end());
  }
}

// A gang into a managed group (createInstances has no all-or-nothing form):
// one member of three fails, so the two that came up are deleted as well and
// nothing is returned; the error says so. The next zone then gets all three.
TEST_F(GcpProviderTest, AGangIntoAManagedGroupThatDoesNotComeUpWholeIsGivenBack) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  std::map<std::string, std::vector<std::string>>& created = migs.created;
  std::vector<std::string>& deleted = migs.deleted;
  ServeMigs(&migs, [](const std::string& mig, size_t i, const std::string& n) {
    json m = {{"name", n}};
    if (mig == "a" && i == 2) {
      m["lastAttempt"] = {
          {"errors", {{"errors", {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"}, {"message", "no room"}}}}}}};
    } else {
      m["instanceStatus"] = "RUNNING";
    }
    return m;
  });
  LaunchRequest gang = Request("a100", 3, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand)});
  gang.all_or_nothing = true;
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_TRUE(result->instances.empty()) << "a partial gang is never kept";
  EXPECT_EQ(deleted, created["a"]) << "all three given back, the two running ones too";
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(result->errors[0].error.message().find(
                "a gang needs all 3 nodes; 2 came up within 20 s (1 failed), and "
                "every one of them is given back"),
            std::string::npos)
      << result->errors[0].error.message();

  gang.idempotency_token = "token-2";
  gang.offerings = {Offer("a2-highgpu-1g", kZoneB, CapacityType::kOnDemand)};
  result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->instances.size(), 3u) << "whole in zone b";
}

// The give-back is one offering's failure: the same Launch goes on to the
// next offering (a gang's fallbacks), which gets the whole gang.
TEST_F(GcpProviderTest, AGangGivenBackInOneGroupFallsBackToTheNextOfferingInTheSameLaunch) {
  GcpProvider& p = Provider(MigPools());
  MigGroups migs;
  ServeMigs(&migs, [](const std::string& mig, size_t i, const std::string& n) {
    json m = {{"name", n}};
    if (mig == "a" && i == 0) {
      m["lastAttempt"] = {{"errors", {{"errors", {{{"code", "ZONE_RESOURCE_POOL_EXHAUSTED"}, {"message", "no room"}}}}}}};
    } else {
      m["instanceStatus"] = "RUNNING";
    }
    return m;
  });
  LaunchRequest gang = Request("a100", 2,
                               {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand),
                                Offer("a2-highgpu-1g", kZoneB, CapacityType::kOnDemand)});
  gang.all_or_nothing = true;
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 2u);
  for (const Instance& i : result->instances) EXPECT_EQ(i.offering.zone, kZoneB);
  EXPECT_EQ(migs.deleted, migs.created["a"]) << "both of group a's given back";
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].offering_key, "a2-highgpu-1g/us-central1-a/on-demand");
}

// A bare pool: bulkInsert of named Spot VMs with labels and metadata.
TEST_F(GcpProviderTest, BulkInsertSpotVmsWithLabels) {
  GcpProvider& p = Provider(BarePools());
  json made = json::array();
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      const json& props = c.body["instanceProperties"];
      json items = json::array();
      for (const auto& [k, v] : props["metadata"]["items"].items()) items.push_back(v);
      for (const auto& [name, v] : c.body["perInstanceProperties"].items()) {
        json inst = InstanceResource(name, kZoneA, "a2-highgpu-1g", props["labels"]["gpuscaler-cluster"],
                                     props["labels"]["gpuscaler-pool"], true, "PROVISIONING", items);
        inst["labels"]["gpuscaler-intent"] = props["labels"]["gpuscaler-intent"];
        made.push_back(inst);
      }
      return Ok(Operation("op-bulk", kZoneA, "bulkInsert", "DONE"));
    }
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated({{kZoneA, std::vector<json>(made.begin(), made.end())}}));
    }
    return HttpError(404, "notFound", "not found");
  };
  const LaunchRequest req = Request("l4-spot", 3, {Offer("g2-standard-8", kZoneA, CapacityType::kSpot)});
  auto result = p.Launch(req);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  ASSERT_EQ(result->instances.size(), 3u);
  auto bulk = Calls("POST", "/instances/bulkInsert");
  ASSERT_EQ(bulk.size(), 1u);
  EXPECT_EQ(bulk[0].path, "projects/proj/zones/us-central1-a/instances/bulkInsert");
  EXPECT_FALSE(bulk[0].Q("requestId").empty());
  const json& b = bulk[0].body;
  EXPECT_EQ(b["count"], "3");  // int64: a JSON string
  EXPECT_EQ(b["minCount"], "1");
  EXPECT_EQ(b["sourceInstanceTemplate"], "global/instanceTemplates/gpu-node");
  EXPECT_EQ(b["perInstanceProperties"].size(), 3u);
  EXPECT_TRUE(
      b["perInstanceProperties"].contains(GcpProvider::InstanceName("prod", req.idempotency_token, 2)));
  const json& props = b["instanceProperties"];
  EXPECT_EQ(props["machineType"], "g2-standard-8");
  EXPECT_EQ(props["scheduling"]["provisioningModel"], "SPOT");
  EXPECT_EQ(props["scheduling"]["instanceTerminationAction"], "DELETE");
  EXPECT_EQ(props["scheduling"]["onHostMaintenance"], "TERMINATE");
  EXPECT_EQ(props["labels"]["gpuscaler-cluster"], "prod");
  EXPECT_EQ(props["labels"]["gpuscaler-pool"], "l4-spot");
  EXPECT_EQ(props["labels"]["gpuscaler-intent"], GcpProvider::IntentHash(req.idempotency_token));
  // The created instances were read back by their intent label.
  auto lists = Calls("GET", "aggregated/instances");
  ASSERT_FALSE(lists.empty());
  EXPECT_EQ(lists.back().Q("filter"),
            "labels.gpuscaler-intent = \"" + GcpProvider::IntentHash(req.idempotency_token) + "\"");
  EXPECT_EQ(result->instances[0].tags.at(kIntentTag), req.idempotency_token);

  // On-demand: STANDARD, no termination action.
  made = json::array();
  ASSERT_TRUE(
      p.Launch(Request("l4", 1, {Offer("g2-standard-8", kZoneA, CapacityType::kOnDemand)}, "tok-2")).ok());
  const json od = Calls("POST", "/instances/bulkInsert").back().body["instanceProperties"]["scheduling"];
  EXPECT_EQ(od["provisioningModel"], "STANDARD");
  EXPECT_FALSE(od.contains("instanceTerminationAction"));
}

// A gang's bulkInsert: minCount = count (all or none), and with a placement
// group the compact placement policy, created first when the region has
// none (a regional operation, waited for) and named in instanceProperties.
TEST_F(GcpProviderTest, AGangsBulkInsertIsAllOrNothingUnderItsCompactPlacementPolicy) {
  GcpProvider& p = Provider(BarePools());
  bool policy_exists = false;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    const std::string policies = "projects/proj/regions/us-central1/resourcePolicies";
    if (c.method == "GET" && c.path == policies + "/train-gangs") {
      if (!policy_exists)
        return HttpError(404, "notFound", "The resource '" + policies + "/train-gangs' was not found");
      return Ok({{"kind", "compute#resourcePolicy"},
                 {"name", "train-gangs"},
                 {"groupPlacementPolicy", {{"collocation", "COLLOCATED"}}},
                 {"status", "READY"}});
    }
    if (c.method == "POST" && c.path == policies) {
      policy_exists = true;
      json op = Operation("op-policy", kZoneA, "insert", "RUNNING", policies + "/train-gangs");
      op.erase("zone");
      op["region"] = std::string(kEndpoint) + "projects/proj/regions/us-central1";
      return Ok(op);
    }
    if (c.path == "projects/proj/regions/us-central1/operations/op-policy/wait") {
      json op = Operation("op-policy", kZoneA, "insert", "DONE", policies + "/train-gangs");
      op.erase("zone");
      op["region"] = std::string(kEndpoint) + "projects/proj/regions/us-central1";
      return Ok(op);
    }
    if (c.path.ends_with("/instances/bulkInsert"))
      return Ok(Operation("op-bulk", kZoneA, "bulkInsert", "DONE"));
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(404, "notFound", "not found");
  };
  LaunchRequest gang = Request("train", 4, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)});
  gang.all_or_nothing = true;
  gang.placement_group = "train-gangs";
  auto result = p.Launch(gang);
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_TRUE(result->instances.empty()) << "none came: the zone had no room for all four";

  auto inserts = Calls("POST", "/resourcePolicies");
  ASSERT_EQ(inserts.size(), 1u);
  EXPECT_TRUE(IsVersion5Uuid(inserts[0].Q("requestId"))) << inserts[0].Q("requestId");
  EXPECT_EQ(inserts[0].body["name"], "train-gangs");
  EXPECT_EQ(inserts[0].body["groupPlacementPolicy"]["collocation"], "COLLOCATED");
  EXPECT_EQ(Calls("POST", "/operations/op-policy/wait").size(), 1u) << "the insert was waited for";
  auto bulk = Calls("POST", "/instances/bulkInsert");
  ASSERT_EQ(bulk.size(), 1u);
  EXPECT_EQ(bulk[0].body["count"], "4");
  EXPECT_EQ(bulk[0].body["minCount"], "4");
  EXPECT_EQ(bulk[0].body["instanceProperties"]["resourcePolicies"], json::array({"train-gangs"}));

  // The policy is known now: the next gang reads nothing and makes nothing.
  gang.idempotency_token = "prod-inst1-d43-l0";
  ASSERT_TRUE(p.Launch(gang).ok());
  EXPECT_EQ(Calls("POST", "/resourcePolicies").size(), 1u);
  EXPECT_EQ(Calls("GET", "/resourcePolicies/train-gangs").size(), 1u);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").back().body["minCount"], "4");

  // A lone node's launch: minCount 1, no policy.
  ASSERT_TRUE(
      p.Launch(Request("train", 2, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)}, "tok-lone")).ok());
  const json lone = Calls("POST", "/instances/bulkInsert").back().body;
  EXPECT_EQ(lone["minCount"], "1");
  EXPECT_FALSE(lone["instanceProperties"].contains("resourcePolicies"));
}

// A policy of that name that is no compact placement is refused before
// anything is created; a pool with groups cannot take a placement group.
TEST_F(GcpProviderTest, APlacementGroupThatIsNoCompactPolicyOrOnAGroupPoolIsAConfigError) {
  GcpProviderOptions o = BarePools();
  o.pools["a100"].migs = {{kZoneA, "gke-ml-a100-a"}};
  GcpProvider& p = Provider(o);
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/regions/us-central1/resourcePolicies/nightly") {
      return Ok({{"name", "nightly"}, {"snapshotSchedulePolicy", json::object()}, {"status", "READY"}});
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    if (c.path.ends_with("/listManagedInstances")) return Ok(json::object());
    return HttpError(404, "notFound", "not found");
  };
  LaunchRequest gang = Request("train", 2, {Offer("a3-highgpu-8g", kZoneA, CapacityType::kSpot)});
  gang.all_or_nothing = true;
  gang.placement_group = "nightly";
  auto refused = p.Launch(gang);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(refused.error().message().find("not a compact placement policy"), std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(Calls("POST", "/instances/bulkInsert").empty());

  gang.pool = "a100";
  auto grouped = p.Launch(gang);
  ASSERT_FALSE(grouped.ok());
  EXPECT_EQ(grouped.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(grouped.error().message().find("placement_group needs bare instances"), std::string::npos)
      << grouped.error().message();
  EXPECT_TRUE(Calls("POST", "/createInstances").empty());
}

// QUOTA_EXCEEDED: a capacity error for the offering, and the quota blocks
// the region's offerings of that family and capacity type without another
// create call until regions.get shows the quota changed.
TEST_F(GcpProviderTest, QuotaExceededBlocksWithoutRetryingUntilTheQuotaChanges) {
  GcpProvider& p = Provider(BarePools());
  double limit = 8;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      if (limit < 16) {
        return Ok(Operation(
            "op-bulk", kZoneA, "bulkInsert", "DONE", "",
            {{{"code", "QUOTA_EXCEEDED"},
              {"message",
               "Quota 'PREEMPTIBLE_NVIDIA_A100_GPUS' exceeded.  Limit: 8.0 in region us-central1."}}}));
      }
      return Ok(Operation("op-bulk-2", kZoneA, "bulkInsert", "DONE"));
    }
    if (c.path == "projects/proj/regions/us-central1") {
      return Ok({{"kind", "compute#region"},
                 {"name", "us-central1"},
                 {"quotas",
                  {{{"metric", "CPUS"}, {"limit", 2400.0}, {"usage", 96.0}},
                   {{"metric", "PREEMPTIBLE_NVIDIA_A100_GPUS"}, {"limit", limit}, {"usage", 8.0}}}}});
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(404, "notFound", "not found");
  };
  auto first = p.Launch(Request("a100", 2, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}, "t1"));
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  EXPECT_TRUE(first->instances.empty());
  ASSERT_EQ(first->errors.size(), 1u);
  EXPECT_EQ(first->errors[0].error.category(), ErrorCategory::kCapacity);
  EXPECT_NE(first->errors[0].error.message().find("QUOTA_EXCEEDED"), std::string::npos);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);

  // Ten more launches of the family in the region, other zone and type
  // included: no create call at all.
  for (int i = 0; i < 10; ++i) {
    auto again = p.Launch(Request("a100", 1,
                                  {Offer("a2-highgpu-2g", kZoneB, CapacityType::kSpot),
                                   Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)},
                                  "t-" + std::to_string(i)));
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->errors.size(), 2u);
    EXPECT_EQ(again->errors[0].error.category(), ErrorCategory::kCapacity);
    EXPECT_NE(again->errors[0].error.message().find("until the quota changes"), std::string::npos);
    EXPECT_NE(again->errors[0].error.message().find("usage 8 of limit 8"), std::string::npos);
  }
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  EXPECT_EQ(p.quota_blocked_offerings(), 20);
  // Another family, or on-demand, is not blocked.
  ASSERT_TRUE(
      p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kOnDemand)}, "od")).ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 2u);

  // The quota is raised: the next launch goes out again.
  limit = 16;
  auto raised =
      p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}, "t-raised"));
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 3u);
}

// Without regions.get (no permission, or an emulator without it) the block
// lasts quota_recheck.
TEST_F(GcpProviderTest, AQuotaBlockThatCannotBeReadBackEndsAfterQuotaRecheck) {
  GcpProviderOptions o = BarePools();
  o.quota_recheck = std::chrono::seconds(600);
  GcpProvider& p = Provider(o);
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path.ends_with("/instances/bulkInsert")) {
      return Ok(
          Operation("op-bulk", kZoneA, "bulkInsert", "DONE", "",
                    {{{"code", "QUOTA_EXCEEDED"},
                      {"message", "Quota 'NVIDIA_L4_GPUS' exceeded.  Limit: 1.0 in region us-central1."}}}));
    }
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    return HttpError(403, "forbidden",
                     "Required 'compute.regions.get' permission for 'projects/proj/regions/us-central1'");
  };
  auto launch = [&](const std::string& token) {
    return p.Launch(Request("l4", 1, {Offer("g2-standard-8", kZoneA, CapacityType::kOnDemand)}, token));
  };
  ASSERT_TRUE(launch("q1").ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  clock_.Advance(Seconds(599));
  auto blocked = launch("q2");
  ASSERT_TRUE(blocked.ok());
  ASSERT_EQ(blocked->errors.size(), 1u);
  EXPECT_NE(blocked->errors[0].error.message().find("quota NVIDIA_L4_GPUS in us-central1 exhausted"),
            std::string::npos)
      << blocked->errors[0].error.message();
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);
  clock_.Advance(Seconds(1));
  ASSERT_TRUE(launch("q3").ok());
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 2u);
}

TEST_F(GcpProviderTest, ThrottlingIsRetriedWithBackoffAndAuthFailsTheLaunch) {
  GcpProvider& p = Provider(BarePools());
  int throttles = 2;
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      if (throttles-- > 0) return HttpError(403, "rateLimitExceeded", "Rate Limit Exceeded");
      return Ok(Aggregated({}));
    }
    if (c.path.ends_with("/instances/bulkInsert")) {
      return HttpError(
          403, "forbidden",
          "Required 'compute.instances.create' permission for 'projects/proj/zones/us-central1-a'");
    }
    return HttpError(404, "notFound", "not found");
  };
  auto result = p.Launch(Request("a100", 1,
                                 {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot),
                                  Offer("a2-highgpu-1g", kZoneB, CapacityType::kSpot)}));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(result.error().message().find("compute.instances.create"), std::string::npos);
  EXPECT_EQ(result.error().message().find("ya29"), std::string::npos);
  // Two throttled answers retried (with a pause), then the auth error stops
  // the launch before the second offering.
  EXPECT_EQ(client_->retries(), 2);
  EXPECT_EQ(sleeps_.size(), 2u);
  EXPECT_EQ(Calls("POST", "/instances/bulkInsert").size(), 1u);

  // 503 on every try: kTransient after max_attempts.
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return HttpError(503, "backendError", "Backend Error");
  };
  auto down = p.ListInstances();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().category(), ErrorCategory::kTransient);
  EXPECT_NE(down.error().message().find("after 3 attempts"), std::string::npos);
  // 429 on every try: kThrottled.
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return HttpError(429, "rateLimitExceeded", "Too Many Requests");
  };
  EXPECT_EQ(p.ListInstances().error().category(), ErrorCategory::kThrottled);
}

TEST_F(GcpProviderTest, ListInstancesOnlyThisClustersLabelledInstances) {
  GcpProvider& p = Provider(MigPools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path != "projects/proj/aggregated/instances") return HttpError(404, "notFound", "not found");
    EXPECT_EQ(c.Q("filter"), "labels.gpuscaler-cluster = \"prod\"");
    EXPECT_EQ(c.Q("returnPartialSuccess"), "true");
    if (c.Q("pageToken").empty()) {
      return Ok(Aggregated(
          {{kZoneA,
            {InstanceResource(
                 "gke-ml-a100-a-x1", kZoneA, "a2-highgpu-1g", "prod", "a100", true, "RUNNING",
                 {{{"key", "created-by"},
                   {"value", "projects/123/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a"}}}),
             // Another installation's (a server that ignored the filter).
             InstanceResource("other-1", kZoneA, "a2-highgpu-1g", "staging", "a100", true)}}},
          "page-2"));
    }
    EXPECT_EQ(c.Q("pageToken"), "page-2");
    return Ok(Aggregated(
        {{kZoneB,
          {InstanceResource("gs-prod-abc-0", kZoneB, "g2-standard-8", "prod", "l4", false, "STAGING",
                            {{{"key", "gpuscaler-intent"}, {"value", "prod-inst-d7-l0"}},
                             {{"key", "gpuscaler-pool"}, {"value", "l4"}}}),
           // Labelled with the cluster but no pool: not gpuscaler's.
           InstanceResource("hand-made", kZoneB, "g2-standard-8", "prod", "", false)}}}));
  };
  auto listed = p.ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  ASSERT_EQ(listed->size(), 2u);
  const Instance& mig = (*listed)[0];
  EXPECT_EQ(mig.instance_id, "gke-ml-a100-a-x1");
  EXPECT_EQ(mig.pool, "a100");
  EXPECT_EQ(mig.offering.Key(), "a2-highgpu-1g/us-central1-a/spot");
  EXPECT_EQ(mig.offering.region, "us-central1");
  EXPECT_EQ(mig.state, InstanceState::kRunning);
  EXPECT_EQ(mig.launch_time, FromUnixSeconds(1'796'400'000));  // 2026-12-04T16:00:00Z
  EXPECT_EQ(mig.tags.at(kClusterTag), "prod");
  EXPECT_EQ(mig.tags.at(kOwnerTag), "a100");
  const Instance& bare = (*listed)[1];
  EXPECT_EQ(bare.instance_id, "gs-prod-abc-0");
  EXPECT_EQ(bare.offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ(bare.state, InstanceState::kPending);
  EXPECT_EQ(bare.tags.at(kIntentTag), "prod-inst-d7-l0");
}

TEST_F(GcpProviderTest, TerminateDeletesExactlyTheChosenOwnInstances) {
  GcpProvider& p = Provider(MigPools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA,
            {InstanceResource(
                 "mig-x1", kZoneA, "a2-highgpu-1g", "prod", "a100", true, "RUNNING",
                 {{{"key", "created-by"},
                   {"value", "projects/123/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a"}}}),
             InstanceResource("mig-x2", kZoneA, "a2-highgpu-1g", "prod", "a100", true),
             InstanceResource("mig-x3", kZoneA, "a2-highgpu-1g", "prod", "a100", true),
             InstanceResource("bare-1", kZoneA, "g2-standard-8", "prod", "l4", false),
             InstanceResource("leaving", kZoneA, "g2-standard-8", "prod", "l4", false, "STOPPING")}}}));
    }
    if (c.path.ends_with("/deleteInstances")) {
      return Ok(Operation("op-del", kZoneA, "compute.instanceGroupManagers.deleteInstances", "DONE"));
    }
    if (c.method == "DELETE") return Ok(Operation("op-del-bare", kZoneA, "delete", "DONE"));
    return HttpError(404, "notFound", "not found");
  };
  // mig-x3 stays; "foreign-1" is not this cluster's (never touched); "leaving" is already stopping.
  ASSERT_TRUE(p.Terminate({"mig-x2", "bare-1", "foreign-1", "mig-x1", "leaving"}).ok());
  auto deletes = Calls("POST", "/deleteInstances");
  ASSERT_EQ(deletes.size(), 1u);
  EXPECT_EQ(deletes[0].path,
            "projects/proj/zones/us-central1-a/instanceGroupManagers/gke-ml-a100-a/deleteInstances");
  EXPECT_EQ(deletes[0].body["instances"],
            json({"zones/us-central1-a/instances/mig-x1", "zones/us-central1-a/instances/mig-x2"}));
  auto bare = Calls("DELETE", "/instances/bare-1");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].path, "projects/proj/zones/us-central1-a/instances/bare-1");
  EXPECT_EQ(Calls("DELETE", "").size(), 1u);
  for (const TransportRequest& r : transport_.requests) {
    EXPECT_EQ(r.url.find("foreign-1"), std::string::npos);
    EXPECT_EQ(r.url.find("leaving"), std::string::npos);
  }
}

TEST_F(GcpProviderTest, PreemptionsFromTheOperationsList) {
  GcpProvider& p = Provider(MigPools());
  json ops = json::array();
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA, {InstanceResource("spot-1", kZoneA, "a2-highgpu-1g", "prod", "a100", true)}}}));
    }
    if (c.path.ends_with("/operations")) {
      EXPECT_EQ(c.Q("filter"), "operationType = \"compute.instances.preempted\"");
      if (c.path.find(kZoneA) == std::string::npos) return Ok({{"items", json::array()}});
      return Ok({{"kind", "compute#operationList"}, {"items", ops}});
    }
    return HttpError(404, "notFound", "not found");
  };
  ASSERT_TRUE(p.ListInstances().ok());
  auto none = p.PollInterruptions();
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  json preempted =
      Operation("systemevent-1796400100000-spot-1", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/spot-1");
  preempted["insertTime"] = "2026-12-04T16:01:40.000Z";
  json foreign =
      Operation("systemevent-2", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/someone-elses");
  foreign["insertTime"] = "2026-12-04T16:01:40.000Z";
  ops = {preempted, foreign};
  auto notices = p.PollInterruptions();
  ASSERT_TRUE(notices.ok());
  ASSERT_EQ(notices->size(), 1u);
  EXPECT_EQ((*notices)[0].instance_id, "spot-1");
  EXPECT_EQ((*notices)[0].notice_time, FromUnixSeconds(1'796'400'100));
  EXPECT_EQ((*notices)[0].deadline, FromUnixSeconds(1'796'400'130));
  EXPECT_FALSE((*notices)[0].rebalance);
  // Reported once.
  EXPECT_TRUE(p.PollInterruptions()->empty());
  EXPECT_TRUE(p.SpotPrices(FromUnixSeconds(0))->empty());
}

// After a restart the first poll may come before the inventory is listed: a
// preemption of the last minutes names an instance the provider does not
// know yet. It is not taken for another cluster's and forgotten: once the
// instances are listed, the next poll reports it.
TEST_F(GcpProviderTest, APreemptionSeenBeforeTheFirstListingIsReportedOnceTheInstanceIsKnown) {
  GcpProvider& p = Provider(MigPools());
  clock_.Advance(Seconds(100));
  json preempted =
      Operation("systemevent-1796400040000-spot-1", kZoneA, "compute.instances.preempted", "DONE",
                std::string(kEndpoint) + "projects/proj/zones/us-central1-a/instances/spot-1");
  preempted["insertTime"] = FormatRfc3339(clock_.WallNow() - Seconds(60));
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") {
      return Ok(Aggregated(
          {{kZoneA, {InstanceResource("spot-1", kZoneA, "a2-highgpu-1g", "prod", "a100", true)}}}));
    }
    if (c.path.ends_with("/operations")) {
      if (c.path.find(kZoneA) == std::string::npos) return Ok({{"items", json::array()}});
      return Ok({{"kind", "compute#operationList"}, {"items", json::array({preempted})}});
    }
    return HttpError(404, "notFound", "not found");
  };
  auto before = p.PollInterruptions();
  ASSERT_TRUE(before.ok()) << before.error().ToString();
  EXPECT_TRUE(before->empty());
  ASSERT_TRUE(p.ListInstances().ok());
  auto after = p.PollInterruptions();
  ASSERT_TRUE(after.ok()) << after.error().ToString();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].instance_id, "spot-1");
  EXPECT_TRUE(p.PollInterruptions()->empty());  // once
}

// An operation that stays RUNNING: waited for at most operation_timeout
// (wait, then get), and the accepted instances are returned as pending.
TEST_F(GcpProviderTest, OperationWaitIsBounded) {
  GcpProvider& p = Provider(BarePools());
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    Call c = Parse(r);
    if (c.path == "projects/proj/aggregated/instances") return Ok(Aggregated({}));
    if (c.path.find("/operations/op-slow") != std::string::npos || c.path.ends_with("/bulkInsert")) {
      return Ok(Operation("op-slow", kZoneA, "bulkInsert", "RUNNING"));
    }
    return HttpError(404, "notFound", "not found");
  };
  const WallTime start = clock_.WallNow();
  auto result = p.Launch(Request("l4", 2, {Offer("g2-standard-8", kZoneA, CapacityType::kSpot)}));
  ASSERT_TRUE(result.ok()) << result.error().ToString();
  EXPECT_EQ(result->instances.size(), 2u);
  EXPECT_TRUE(result->errors.empty());
  EXPECT_EQ(result->instances[0].state, InstanceState::kPending);
  EXPECT_FALSE(Calls("POST", "/operations/op-slow/wait").empty());
  EXPECT_EQ(Calls("GET", "/operations/op-slow").size(), 1u);  // the final read
  EXPECT_LE(clock_.WallNow() - start, Seconds(25));
}

TEST_F(GcpProviderTest, ConfigurationErrorsNameThePool) {
  GcpProvider& p = Provider();  // no pools, no instance template
  auto none = p.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", kZoneA, CapacityType::kSpot)}));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(none.error().message().find("pool 'a100'"), std::string::npos);

  GcpProvider& q = Provider(MigPools());
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return Ok({{"managedInstances", json::array()}});
  };
  auto no_group =
      q.Launch(Request("a100", 1, {Offer("a2-highgpu-1g", "us-central1-f", CapacityType::kSpot)}));
  ASSERT_FALSE(no_group.ok());
  EXPECT_EQ(no_group.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(no_group.error().message().find("no managed instance group in zone us-central1-f"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuscaler::cloud
