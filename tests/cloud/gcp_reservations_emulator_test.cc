// Compute Engine reservations in the emulator, without sockets: the
// Reservation resource (get, list, aggregatedList), what an instance's
// reservationAffinity consumes and the errors Compute Engine gives, a
// group whose template targets a reservation, the scenario keys; then the
// GcpProvider against the emulator in process: a reserved launch fills the
// reservation and moves on to on-demand, the slots come back on
// termination, and a group launch checks the group's template.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/gcp_provider.h"
#include "sim/cloud_emulator/gcp_emulator.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::sim {
namespace {

using nlohmann::json;

constexpr const char* kRsvBase = "/compute/v1/projects/gpuscaler-test/";
constexpr const char* kRsvZone = "us-central1-a";

// Two reservations in us-central1-a: "h100" (2 × a3-highgpu-8g, targeted
// only) and "open-l4" (2 × g2-standard-8, consumed automatically), a
// CREATING one, and a group whose template targets "h100".
constexpr const char* kRsvScenario =
    "access_tokens: [test-token]\noperation_latency: 0s\nboot_latency: 1s\ndelete_latency: 1s\n"
    "reservations:\n"
    "  - {name: h100, zone: us-central1-a, machine_type: a3-highgpu-8g, count: 2,\n"
    "     accelerators: [{type: nvidia-h100-80gb, count: 8}]}\n"
    "  - {name: open-l4, zone: us-central1-a, machine_type: g2-standard-8, count: 2,\n"
    "     specific_reservation_required: false}\n"
    "  - {name: soon, zone: us-central1-b, machine_type: a3-highgpu-8g, count: 4, status: CREATING,\n"
    "     delete_at: 1h}\n"
    "managed_instance_groups:\n"
    "  - {name: h100-rsv, zone: us-central1-a, machine_type: a3-highgpu-8g, instance_template: "
    "h100-rsv-tmpl,\n"
    "     reservation_affinity: {type: SPECIFIC_RESERVATION, reservation: h100}}\n"
    "  - {name: h100-plain, zone: us-central1-a, machine_type: a3-highgpu-8g, instance_template: plain}\n"
    "capacity:\n  - {machine_type: a3-highgpu-8g, zone: us-central1-a, limit: 0}\n";

WallTime RsvStart() {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339("2026-12-04T10:00:00Z", &t));
  return t;
}

class GcpReservationsEmulator : public ::testing::Test {
 protected:
  GcpReservationsEmulator() : clock_(RsvStart()) {
    auto s = ParseGcpScenario(kRsvScenario);
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    emu_ = std::make_unique<GcpEmulator>(std::move(*s), clock_);
  }

  std::pair<int, json> Call(const std::string& method, const std::string& path, const json& body = nullptr) {
    EmulatorRequest r;
    r.method = method;
    r.target = kRsvBase + path;
    r.headers = {{"Authorization", "Bearer test-token"}};
    if (!body.is_null()) r.body = body.dump();
    const EmulatorResponse a = emu_->Handle(r);
    return {a.status, json::parse(a.body, nullptr, false)};
  }
  json Get(const std::string& path) {
    auto [status, body] = Call("GET", path);
    EXPECT_EQ(status, 200) << path << ": " << body.dump();
    return body;
  }
  // bulkInsert of `names` with `affinity` (null: none given) and
  // `min_count`; the answer.
  std::pair<int, json> Insert(const std::vector<std::string>& names, const std::string& machine_type,
                              const json& affinity, const std::string& model = "STANDARD",
                              size_t min_count = 1) {
    json per = json::object();
    for (const std::string& n : names) per[n] = json::object();
    json props = {{"machineType", machine_type}, {"scheduling", {{"provisioningModel", model}}}};
    if (!affinity.is_null()) props["reservationAffinity"] = affinity;
    return Call("POST", std::string("zones/") + kRsvZone + "/instances/bulkInsert",
                {{"count", names.size()},
                 {"minCount", std::to_string(min_count)},
                 {"perInstanceProperties", per},
                 {"instanceProperties", props}});
  }
  static json Specific(const std::string& name) {
    return {{"consumeReservationType", "SPECIFIC_RESERVATION"},
            {"key", "compute.googleapis.com/reservation-name"},
            {"values", {name}}};
  }
  std::string InUse(const std::string& name) {
    return Get(std::string("zones/") + kRsvZone + "/reservations/" +
               name)["specificReservation"]["inUseCount"];
  }

  ManualClock clock_;
  std::unique_ptr<GcpEmulator> emu_;
};

TEST_F(GcpReservationsEmulator, ServesReservationsInComputeEnginesShape) {
  const json r = Get("zones/us-central1-a/reservations/h100");
  EXPECT_EQ(r["kind"], "compute#reservation");
  EXPECT_EQ(r["name"], "h100");
  EXPECT_EQ(r["zone"], "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a");
  EXPECT_EQ(
      r["selfLink"],
      "https://www.googleapis.com/compute/v1/projects/gpuscaler-test/zones/us-central1-a/reservations/h100");
  EXPECT_EQ(r["status"], "READY");
  EXPECT_EQ(r["specificReservationRequired"], true);
  EXPECT_EQ(r["specificReservation"]["count"], "2") << "int64 fields are JSON strings";
  EXPECT_EQ(r["specificReservation"]["inUseCount"], "0");
  EXPECT_EQ(r["specificReservation"]["instanceProperties"]["machineType"], "a3-highgpu-8g");
  EXPECT_EQ(r["specificReservation"]["instanceProperties"]["guestAccelerators"][0]["acceleratorCount"], 8);
  EXPECT_EQ(r["creationTimestamp"].get<std::string>().substr(0, 19), "2026-12-04T10:00:00");
  EXPECT_FALSE(r.contains("deleteAtTime"));
  EXPECT_EQ(Call("GET", "zones/us-central1-a/reservations/nope").first, 404);

  const json list = Get("zones/us-central1-a/reservations");
  EXPECT_EQ(list["kind"], "compute#reservationList");
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(Get("zones/us-central1-a/reservations?filter=name%20%3D%20open-l4")["items"].size(), 1u);

  // aggregatedList: one page per reservation with maxResults=1.
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    const json page =
        Get("aggregated/reservations?maxResults=1" + (token.empty() ? "" : "&pageToken=" + token));
    EXPECT_EQ(page["kind"], "compute#reservationAggregatedList");
    for (const auto& [scope, v] : page["items"].items()) {
      for (const json& res : v.value("reservations", json::array()))
        names.push_back(scope + "/" + res["name"].get<std::string>());
    }
    token = page.value("nextPageToken", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"zones/us-central1-a/h100", "zones/us-central1-a/open-l4",
                                             "zones/us-central1-b/soon"}));
  const json soon = Get("zones/us-central1-b/reservations/soon");
  EXPECT_EQ(soon["status"], "CREATING");
  EXPECT_EQ(soon["deleteAtTime"].get<std::string>().substr(0, 19), "2026-12-04T11:00:00");
  clock_.Advance(std::chrono::hours(1));
  EXPECT_EQ(Call("GET", "zones/us-central1-b/reservations/soon").first, 404) << "deleted at deleteAtTime";
}

TEST_F(GcpReservationsEmulator, ASpecificAffinityTakesSlotsUntilTheReservationIsFull) {
  // No on-demand a3-highgpu-8g capacity in the zone (limit 0): the
  // reservation's slots are held apart from it. Three at once (minCount 3)
  // do not fit in two slots: none is created, and the operation says why.
  auto [status, op] = Insert({"r-1", "r-2", "r-3"}, "a3-highgpu-8g", Specific("h100"), "STANDARD", 3);
  ASSERT_EQ(status, 200) << op.dump();
  ASSERT_TRUE(op.contains("error")) << op.dump();
  ASSERT_EQ(op["error"]["errors"].size(), 1u) << op.dump();
  EXPECT_EQ(op["error"]["errors"][0]["code"], "CONDITION_NOT_MET");
  EXPECT_EQ(op["error"]["errors"][0]["message"],
            "Specified reservation 'h100' does not have available resources for the request.");
  EXPECT_EQ(op["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-a"]
              ["createdVmCount"],
            0);
  EXPECT_EQ(InUse("h100"), "0");
  // minCount 1: the two that fit are created.
  auto [partial, op1] = Insert({"r-1", "r-2", "r-3"}, "a3-highgpu-8g", Specific("h100"));
  ASSERT_EQ(partial, 200) << op1.dump();
  const json& where = op1["instancesBulkInsertOperationMetadata"]["perLocationStatus"]["zones/us-central1-a"];
  EXPECT_EQ(where["createdVmCount"], 2);
  EXPECT_EQ(where["failedToCreateVmCount"], 1);
  EXPECT_EQ(InUse("h100"), "2");
  const json inst = Get("zones/us-central1-a/instances/r-1");
  EXPECT_EQ(inst["reservationAffinity"], Specific("h100"));

  // Deleting an instance gives its slot back once it is gone.
  ASSERT_EQ(Call("DELETE", "zones/us-central1-a/instances/r-1").first, 200);
  EXPECT_EQ(InUse("h100"), "2") << "a STOPPING instance still holds its slot";
  clock_.Advance(std::chrono::seconds(2));
  EXPECT_EQ(InUse("h100"), "1");
  auto [again, op2] = Insert({"r-4"}, "a3-highgpu-8g", Specific("h100"));
  ASSERT_EQ(again, 200);
  EXPECT_FALSE(op2.contains("error")) << op2.dump();
  EXPECT_EQ(InUse("h100"), "2");
}

TEST_F(GcpReservationsEmulator, RefusesWhatComputeEngineRefuses) {
  struct Case {
    std::string name;
    std::string machine_type;
    json affinity;
    std::string model;
    int http;
    std::string message;  // the operation's CONDITION_NOT_MET message, or the 400's start
  };
  const std::vector<Case> cases = {
      {"an unknown reservation", "a3-highgpu-8g", Specific("nope"), "STANDARD", 200,
       "Specified reservation 'nope' does not exist."},
      {"another machine type", "a3-highgpu-4g", Specific("h100"), "STANDARD", 200,
       "No available resources in specified reservations 'h100'"},
      {"a Spot VM", "a3-highgpu-8g", Specific("h100"), "SPOT", 200,
       "Spot VMs and preemptible instances cannot consume reservations."},
      {"a reservation consumed automatically", "g2-standard-8", Specific("open-l4"), "STANDARD", 400,
       "Invalid value for field 'resource.instanceProperties.reservationAffinity'"},
      {"a specific affinity without a name",
       "a3-highgpu-8g",
       {{"consumeReservationType", "SPECIFIC_RESERVATION"},
        {"key", "compute.googleapis.com/reservation-name"}},
       "STANDARD",
       400,
       "Invalid value for field 'resource.instanceProperties.reservationAffinity.values'"},
      {"an unknown consume type",
       "a3-highgpu-8g",
       {{"consumeReservationType", "SOME_RESERVATION"}},
       "STANDARD",
       400,
       "Invalid value for field 'resource.instanceProperties.reservationAffinity.consumeReservationType'"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [status, body] = Insert({"x-" + std::to_string(++n)}, c.machine_type, c.affinity, c.model);
    ASSERT_EQ(status, c.http) << body.dump();
    if (c.http == 200) {
      ASSERT_EQ(body["error"]["errors"].size(), 1u) << body.dump();
      EXPECT_EQ(body["error"]["errors"][0]["code"], "CONDITION_NOT_MET");
      EXPECT_EQ(body["error"]["errors"][0]["message"], c.message);
    } else {
      EXPECT_EQ(body["error"]["message"].get<std::string>().rfind(c.message, 0), 0u) << body.dump();
    }
  }
  EXPECT_EQ(InUse("h100"), "0");
}

TEST_F(GcpReservationsEmulator, AnyAffinityFillsOnlyAutomaticallyConsumedReservations) {
  ASSERT_EQ(Insert({"any-1"}, "g2-standard-8", nullptr).first, 200);
  ASSERT_EQ(Insert({"spot-1"}, "g2-standard-8", nullptr, "SPOT").first, 200);
  ASSERT_EQ(Insert({"none-1"}, "g2-standard-8", {{"consumeReservationType", "NO_RESERVATION"}}).first, 200);
  EXPECT_EQ(InUse("open-l4"), "1") << "only the STANDARD instance with the default affinity";
  EXPECT_EQ(Get("zones/us-central1-a/instances/any-1")["reservationAffinity"]["consumeReservationType"],
            "ANY_RESERVATION");
  auto [status, op] = Insert({"any-2"}, "a3-highgpu-8g", nullptr);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(op["error"]["errors"][0]["code"], "ZONE_RESOURCE_POOL_EXHAUSTED")
      << "a targeted-only reservation is not consumed by ANY_RESERVATION";
}

TEST_F(GcpReservationsEmulator, AGroupsTemplateAffinityFillsTheReservationAndReportsItFull) {
  auto [status, op] = Call("POST", "zones/us-central1-a/instanceGroupManagers/h100-rsv/createInstances",
                           {{"instances", {{{"name", "m-1"}}, {{"name", "m-2"}}, {{"name", "m-3"}}}}});
  ASSERT_EQ(status, 200) << op.dump();
  auto [listed, list] =
      Call("POST", "zones/us-central1-a/instanceGroupManagers/h100-rsv/listManagedInstances");
  ASSERT_EQ(listed, 200);
  ASSERT_EQ(list["managedInstances"].size(), 3u);
  EXPECT_EQ(list["managedInstances"][0]["instanceStatus"], "STAGING");
  EXPECT_EQ(list["managedInstances"][1]["instanceStatus"], "STAGING");
  const json& third = list["managedInstances"][2];
  EXPECT_FALSE(third.contains("instanceStatus"));
  EXPECT_EQ(third["lastAttempt"]["errors"]["errors"][0]["code"], "CONDITION_NOT_MET");
  EXPECT_EQ(third["lastAttempt"]["errors"]["errors"][0]["message"],
            "Specified reservation 'h100' does not have available resources for the request.");
  EXPECT_EQ(InUse("h100"), "2");
  EXPECT_EQ(Get("zones/us-central1-a/instances/m-1")["reservationAffinity"], Specific("h100"));

  const json tmpl = Get("global/instanceTemplates/h100-rsv-tmpl");
  EXPECT_EQ(tmpl["kind"], "compute#instanceTemplate");
  EXPECT_EQ(tmpl["properties"]["machineType"], "a3-highgpu-8g");
  EXPECT_EQ(tmpl["properties"]["reservationAffinity"], Specific("h100"));
  EXPECT_EQ(Get("global/instanceTemplates/plain")["properties"]["reservationAffinity"],
            (json{{"consumeReservationType", "ANY_RESERVATION"}}));
  EXPECT_EQ(Call("GET", "global/instanceTemplates/nope").first, 404);
}

TEST(GcpReservationsScenario, ErrorsNameTheReservationAndKey) {
  struct Case {
    std::string yaml;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"reservations:\n  - {name: r, zone: us-central1-a, count: 2}\n", "reservations[0]"},
      {"reservations:\n  - {name: r, zone: us-central1-a, machine_type: m, count: 2, status: ACTIVE}\n",
       "status must be CREATING, READY, DELETING or UPDATING"},
      {"reservations:\n  - {name: r, zone: mars-1a, machine_type: m, count: 2}\n", "is not one of `zones`"},
      {"reservations:\n  - {name: r, zone: us-central1-a, machine_type: m, count: 2, in_use_elsewhere: 3}\n",
       "in_use_elsewhere <= count"},
      {"reservations:\n  - {name: r, zone: us-central1-a, machine_type: m, count: 1}\n"
       "  - {name: r, zone: us-central1-a, machine_type: m, count: 1}\n",
       "duplicate reservation"},
      {"managed_instance_groups:\n  - {name: g, zone: us-central1-a, reservation_affinity: {type: "
       "SPECIFIC_RESERVATION}}\n",
       "a reservation name goes with type SPECIFIC_RESERVATION"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto s = ParseGcpScenario(c.yaml);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message().find(c.want), std::string::npos) << s.error().message();
  }
}

// The GcpProvider over the emulator in process; the client's sleeps move
// the manual clock.
class GcpReservationsProvider : public GcpReservationsEmulator {
 protected:
  GcpReservationsProvider() {
    transport_.handler = [this](const cloud::TransportRequest& r) -> Result<cloud::TransportResponse> {
      EmulatorRequest e{r.method, r.url.substr(std::string("http://emulator.test").size()), r.headers,
                        r.body};
      EmulatorResponse a = emu_->Handle(e);
      return cloud::TransportResponse{a.status, {{"Content-Type", a.content_type}}, a.body};
    };
    cloud::GcpClientOptions c;
    c.endpoint = "http://emulator.test/compute/v1/";
    client_ = std::make_unique<cloud::GcpClient>(
        c, transport_, token_, clock_, [this](std::chrono::milliseconds d) {
          clock_.Advance(std::max(Seconds(1), std::chrono::duration_cast<Seconds>(d)));
        });
  }
  std::unique_ptr<cloud::GcpProvider> Provider(
      const std::map<std::string, cloud::GcpPoolTarget>& pools = {}) {
    cloud::GcpProviderOptions o;
    o.cluster_name = "test";
    o.project = "gpuscaler-test";
    o.region = "us-central1";
    o.zones = {"us-central1-a", "us-central1-b"};
    o.instance_template = "global/instanceTemplates/gpu-node";
    o.pools = pools;
    o.operation_timeout = Seconds(30);
    o.poll_interval = std::chrono::milliseconds(1000);
    return std::make_unique<cloud::GcpProvider>(o, *client_);
  }
  static Offering Reserved(const std::string& type, const std::string& reservation) {
    Offering o;
    o.instance_type = type;
    o.region = "us-central1";
    o.zone = kRsvZone;
    o.capacity_type = CapacityType::kReserved;
    o.reservation_id = reservation;
    return o;
  }
  static Offering OnDemand(const std::string& type, const std::string& zone) {
    Offering o;
    o.instance_type = type;
    o.region = "us-central1";
    o.zone = zone;
    return o;
  }

  cloud::testing::FakeTransport transport_;
  struct Token final : cloud::TokenSource {
    Result<cloud::AccessToken> Get(WallTime now) override {
      return cloud::AccessToken{"test-token", now + Seconds(3600)};
    }
    std::string Name() const override { return "test"; }
  } token_;
  std::unique_ptr<cloud::GcpClient> client_;
};

TEST_F(GcpReservationsProvider, AReservedLaunchFillsTheReservationThenMovesOnAndTerminationGivesSlotsBack) {
  auto provider = Provider();
  Result<std::vector<Reservation>> before = provider->ListReservations();
  ASSERT_TRUE(before.ok()) << before.error().ToString();
  ASSERT_EQ(before->size(), 1u) << "h100 only: open-l4 is consumed automatically, soon is CREATING";
  EXPECT_EQ((*before)[0].id, "h100");
  EXPECT_EQ((*before)[0].available_count, 2);

  LaunchRequest request;
  request.pool = "train";
  request.count = 3;
  request.idempotency_token = "launch-1";
  request.offerings = {Reserved("a3-highgpu-8g", "h100"), OnDemand("a3-highgpu-8g", "us-central1-b")};
  Result<LaunchResult> launched = provider->Launch(request);
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->instances.size(), 3u);
  int reserved = 0;
  for (const Instance& i : launched->instances)
    reserved += i.offering.capacity_type == CapacityType::kReserved;
  EXPECT_EQ(reserved, 2);
  ASSERT_EQ(launched->errors.size(), 1u);
  EXPECT_EQ(launched->errors[0].offering_key, "a3-highgpu-8g/us-central1-a/reserved/h100");
  EXPECT_EQ(launched->errors[0].error.category(), ErrorCategory::kCapacity)
      << launched->errors[0].error.ToString();

  Result<std::vector<Reservation>> full = provider->ListReservations();
  ASSERT_TRUE(full.ok());
  EXPECT_EQ((*full)[0].available_count, 0);

  // A second process (no memory of the launch) sees the slots from the
  // instances' reservationAffinity.
  auto restarted = Provider();
  Result<std::vector<Instance>> listed = restarted->ListInstances();
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  std::vector<std::string> on_reservation;
  for (const Instance& i : *listed) {
    if (i.offering.capacity_type == CapacityType::kReserved) {
      EXPECT_EQ(i.offering.reservation_id, "h100");
      on_reservation.push_back(i.instance_id);
    }
  }
  ASSERT_EQ(on_reservation.size(), 2u);
  ASSERT_TRUE(restarted->Terminate({on_reservation[0]}).ok());
  clock_.Advance(Seconds(5));
  EXPECT_EQ((*restarted->ListReservations())[0].available_count, 1);
}

TEST_F(GcpReservationsProvider, AGroupPoolLaunchesIntoItsReservationGroupOnlyWhenTheTemplateTargetsIt) {
  cloud::GcpPoolTarget good;
  good.migs = {{"us-central1-b", "l4-b"}};
  good.reservation_migs = {{"h100", "h100-rsv"}};
  auto provider = Provider({{"train", good}});
  LaunchRequest request;
  request.pool = "train";
  request.count = 1;
  request.idempotency_token = "launch-g";
  request.offerings = {Reserved("a3-highgpu-8g", "h100")};
  Result<LaunchResult> launched = provider->Launch(request);
  ASSERT_TRUE(launched.ok()) << launched.error().ToString();
  ASSERT_EQ(launched->instances.size(), 1u)
      << (launched->errors.empty() ? "" : launched->errors[0].error.ToString());
  EXPECT_EQ(launched->instances[0].offering.reservation_id, "h100");
  EXPECT_EQ(InUse("h100"), "1");

  cloud::GcpPoolTarget wrong = good;
  wrong.reservation_migs = {{"h100", "h100-plain"}};
  auto misconfigured = Provider({{"train", wrong}});
  request.idempotency_token = "launch-w";
  Result<LaunchResult> refused = misconfigured->Launch(request);
  ASSERT_FALSE(refused.ok() && !refused->instances.empty());
  const Error& e = refused.ok() ? refused->errors.at(0).error : refused.error();
  EXPECT_EQ(e.category(), ErrorCategory::kConfig) << e.ToString();
  EXPECT_NE(e.message().find("does not consume the reservation"), std::string::npos) << e.ToString();
  EXPECT_EQ(InUse("h100"), "1") << "nothing launched into the plain group";
}

}  // namespace
}  // namespace gpuscaler::sim
