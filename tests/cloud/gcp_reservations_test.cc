// GcpProvider and Compute Engine reservations, against a fake transport
// answering with the v1 shapes: the Reservation resource as
// reservations.aggregatedList prints it (count and inUseCount as int64
// strings, zone and selfLink URLs), which of them gpuscaler targets, paging,
// the full-reservation error, and instances whose reservationAffinity names
// a reservation.
#include <gtest/gtest.h>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/gcp_provider.h"
#include "gpuscaler/model/clock.h"
#include "tests/cloud/fake_transport.h"

namespace gpuscaler::cloud {
namespace {

using nlohmann::json;
using testing::FakeTransport;

constexpr const char* kRsvEndpoint = "http://compute.test/compute/v1/";

WallTime RsvTime(const std::string& rfc3339) {
  WallTime t;
  EXPECT_TRUE(ParseRfc3339(rfc3339, &t)) << rfc3339;
  return t;
}

// A specific reservation as Compute Engine lists it.
json ReservationResource(const std::string& name, const std::string& zone, const std::string& count,
                         const std::string& in_use) {
  const std::string base = std::string("https://www.googleapis.com/compute/v1/projects/proj/zones/") + zone;
  return {{"kind", "compute#reservation"},
          {"id", "5012345678901234567"},
          {"creationTimestamp", "2026-12-01T06:00:00.000-08:00"},
          {"selfLink", base + "/reservations/" + name},
          {"zone", base},
          {"name", name},
          {"specificReservationRequired", true},
          {"status", "READY"},
          {"specificReservation",
           {{"instanceProperties",
             {{"machineType", "a3-highgpu-8g"},
              {"guestAccelerators", {{{"acceleratorType", "nvidia-h100-80gb"}, {"acceleratorCount", 8}}}}}},
            {"count", count},
            {"inUseCount", in_use},
            {"assuredCount", count}}},
          {"shareSettings", {{"shareType", "LOCAL"}}},
          {"satisfiesPzs", false}};
}

TEST(GcpReservationParse, MapsWhatGpuscalerTargetsAndSkipsTheRest) {
  struct Case {
    std::string name;
    std::function<void(json&)> edit;
    bool kept;
    int available = 0;
    std::optional<WallTime> end;
  };
  const std::vector<Case> cases = {
      {"a READY specific reservation", [](json&) {}, true, 3, std::nullopt},
      {"more in use than reserved", [](json& r) { r["specificReservation"]["inUseCount"] = "9"; }, true, 0,
       std::nullopt},
      {"counts as JSON numbers", [](json& r) { r["specificReservation"]["inUseCount"] = 4; }, true, 0,
       std::nullopt},
      {"deleteAtTime is its end", [](json& r) { r["deleteAtTime"] = "2026-12-08T00:00:00Z"; }, true, 3,
       RsvTime("2026-12-08T00:00:00Z")},
      {"deleteAfterDuration counts from its creation",
       [](json& r) {
         r["deleteAfterDuration"] = {{"seconds", "86400"}};
       },
       true, 3, RsvTime("2026-12-02T14:00:00Z")},
      {"still CREATING", [](json& r) { r["status"] = "CREATING"; }, false, 0, std::nullopt},
      {"being deleted", [](json& r) { r["status"] = "DELETING"; }, false, 0, std::nullopt},
      {"consumed automatically", [](json& r) { r["specificReservationRequired"] = false; }, false, 0,
       std::nullopt},
      {"an aggregate reservation",
       [](json& r) {
         r.erase("specificReservation");
         r["aggregateReservation"] = {{"vmFamily", "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP"}};
       },
       false, 0, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json r = ReservationResource("h100-train", "us-central1-a", "4", "1");
    c.edit(r);
    Result<std::optional<Reservation>> got = GcpProvider::ParseReservation(r);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    ASSERT_EQ(got->has_value(), c.kept);
    if (!c.kept) continue;
    const Reservation& res = **got;
    EXPECT_EQ(res.id, "h100-train");
    EXPECT_EQ(res.instance_type, "a3-highgpu-8g");
    EXPECT_EQ(res.zone, "us-central1-a");
    EXPECT_EQ(res.region, "us-central1");
    EXPECT_EQ(res.kind, ReservationKind::kDefault);
    EXPECT_EQ(res.total_count, 4);
    EXPECT_EQ(res.available_count, c.available);
    EXPECT_EQ(res.start, RsvTime("2026-12-01T14:00:00Z"));
    EXPECT_EQ(res.end, c.end);
    EXPECT_TRUE(res.tags.empty()) << "Compute Engine reservations have no labels";
    EXPECT_DOUBLE_EQ(res.usd_per_hour, 0) << "billed at the on-demand rate (ReservedOffering)";
  }
}

TEST(GcpReservationParse, AMalformedReservationIsAnError) {
  json no_count = ReservationResource("r", "us-central1-a", "4", "0");
  no_count["specificReservation"]["count"] = "four";
  EXPECT_EQ(GcpProvider::ParseReservation(no_count).error().category(), ErrorCategory::kInvalidInput);
  json no_type = ReservationResource("r", "us-central1-a", "4", "0");
  no_type["specificReservation"]["instanceProperties"].erase("machineType");
  EXPECT_FALSE(GcpProvider::ParseReservation(no_type).ok());
  EXPECT_FALSE(GcpProvider::ParseReservation(json{{"status", "READY"}}).ok());
}

TEST(GcpReservationErrors, OnlyAFullReservationIsCapacity) {
  const std::vector<GcpErrorItem> full = {
      {"CONDITION_NOT_MET",
       "Specified reservation 'h100-train' does not have available resources for the request.", ""}};
  EXPECT_TRUE(IsReservationFull(full[0]));
  EXPECT_EQ(GcpErrorFrom("createInstances", full, 0).category(), ErrorCategory::kCapacity);
  for (const std::string& other :
       {std::string("Specified reservation 'h100-train' does not exist."),
        std::string("Cannot insert instance to a reservation with status: CREATING, as "
                    "it requires reservation to be in READY state.")}) {
    SCOPED_TRACE(other);
    const std::vector<GcpErrorItem> items = {{"CONDITION_NOT_MET", other, ""}};
    EXPECT_FALSE(IsReservationFull(items[0]));
    EXPECT_EQ(GcpErrorFrom("createInstances", items, 0).category(), ErrorCategory::kConfig);
  }
}

class RsvTestToken final : public TokenSource {
 public:
  Result<AccessToken> Get(WallTime now) override { return AccessToken{"ya29.test", now + Seconds(3600)}; }
  std::string Name() const override { return "fixed"; }
};

class GcpReservationProvider : public ::testing::Test {
 protected:
  GcpReservationProvider() : clock_(RsvTime("2026-12-04T10:00:00Z")) {
    GcpClientOptions c;
    c.endpoint = kRsvEndpoint;
    client_ = std::make_unique<GcpClient>(c, transport_, token_, clock_, nullptr);
  }
  GcpProvider Provider(std::vector<std::string> zones) {
    GcpProviderOptions o;
    o.cluster_name = "prod";
    o.project = "proj";
    o.region = "us-central1";
    o.zones = std::move(zones);
    o.instance_template = "global/instanceTemplates/gpu-node";
    return GcpProvider(o, *client_);
  }
  static TransportResponse Ok(const json& j) {
    return {200, {{"Content-Type", "application/json"}}, j.dump()};
  }

  ManualClock clock_;
  FakeTransport transport_;
  RsvTestToken token_;
  std::unique_ptr<GcpClient> client_;
};

TEST_F(GcpReservationProvider, ListReservationsReadsEveryPageKeepsItsZonesAndSortsByName) {
  transport_.handler = [&](const TransportRequest& r) -> Result<TransportResponse> {
    const std::string path = r.url.substr(std::string(kRsvEndpoint).size());
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(path.rfind("projects/proj/aggregated/reservations?", 0), 0u) << path;
    if (path.find("pageToken=p2") == std::string::npos) {
      return Ok({{"kind", "compute#reservationAggregatedList"},
                 {"items",
                  {{"zones/us-central1-b",
                    {{"reservations", {ReservationResource("zeta", "us-central1-b", "2", "0")}}}},
                   {"zones/europe-west4-a",
                    {{"reservations", {ReservationResource("abroad", "europe-west4-a", "8", "0")}}}}}},
                 {"nextPageToken", "p2"}});
    }
    json automatic = ReservationResource("open", "us-central1-a", "2", "0");
    automatic["specificReservationRequired"] = false;
    return Ok(
        {{"kind", "compute#reservationAggregatedList"},
         {"items",
          {{"zones/us-central1-a",
            {{"reservations", {ReservationResource("alpha", "us-central1-a", "4", "3"), automatic}}}},
           {"zones/us-central1-c",
            {{"warning",
              {{"code", "NO_RESULTS_ON_PAGE"},
               {"message", "There are no results for scope 'zones/us-central1-c' on this page."}}}}}}}});
  };
  GcpProvider provider = Provider({"us-central1-a", "us-central1-b"});
  Result<std::vector<Reservation>> got = provider.ListReservations();
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 2u) << "another region's and the automatically consumed one are left out";
  EXPECT_EQ((*got)[0].id, "alpha");
  EXPECT_EQ((*got)[0].available_count, 1);
  EXPECT_EQ((*got)[1].id, "zeta");
  EXPECT_EQ((*got)[1].zone, "us-central1-b");
  EXPECT_EQ(transport_.requests.size(), 2u);
}

TEST_F(GcpReservationProvider, AFailedListingIsTheCallsError) {
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return TransportResponse{
        403,
        {{"Content-Type", "application/json"}},
        R"({"error":{"code":403,"message":"Required 'compute.reservations.list' permission for 'projects/proj'","errors":[{"message":"Required 'compute.reservations.list' permission for 'projects/proj'","domain":"global","reason":"forbidden"}]}})"};
  };
  GcpProvider provider = Provider({"us-central1-a"});
  Result<std::vector<Reservation>> got = provider.ListReservations();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().category(), ErrorCategory::kAuth);
  EXPECT_NE(got.error().message().find("compute.reservations.list"), std::string::npos);
}

TEST_F(GcpReservationProvider, AnInstanceTargetingAReservationIsListedOnItsReservedOffering) {
  auto instance = [](const std::string& name, json affinity) {
    json i = {{"kind", "compute#instance"},
              {"name", name},
              {"zone", std::string(kRsvEndpoint) + "projects/proj/zones/us-central1-a"},
              {"machineType",
               std::string(kRsvEndpoint) + "projects/proj/zones/us-central1-a/machineTypes/a3-highgpu-8g"},
              {"status", "RUNNING"},
              {"creationTimestamp", "2026-12-04T08:00:00.000-08:00"},
              {"labels", {{"gpuscaler-cluster", "prod"}, {"gpuscaler-pool", "train"}}},
              {"scheduling", {{"provisioningModel", "STANDARD"}}}};
    if (!affinity.is_null()) i["reservationAffinity"] = affinity;
    return i;
  };
  transport_.handler = [&](const TransportRequest&) -> Result<TransportResponse> {
    return Ok({{"kind", "compute#instanceAggregatedList"},
               {"items",
                {{"zones/us-central1-a",
                  {{"instances",
                    {instance("gs-prod-a-0", {{"consumeReservationType", "SPECIFIC_RESERVATION"},
                                              {"key", "compute.googleapis.com/reservation-name"},
                                              {"values", {"h100-train"}}}),
                     instance("gs-prod-b-0", {{"consumeReservationType", "ANY_RESERVATION"}}),
                     instance("gs-prod-c-0", nullptr)}}}}}}});
  };
  GcpProvider provider = Provider({"us-central1-a"});
  Result<std::vector<Instance>> got = provider.ListInstances();
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].offering.capacity_type, CapacityType::kReserved);
  EXPECT_EQ((*got)[0].offering.reservation_id, "h100-train");
  EXPECT_EQ((*got)[0].offering.Key(), "a3-highgpu-8g/us-central1-a/reserved/h100-train");
  EXPECT_EQ((*got)[1].offering.capacity_type, CapacityType::kOnDemand);
  EXPECT_EQ((*got)[2].offering.capacity_type, CapacityType::kOnDemand);
}

}  // namespace
}  // namespace gpuscaler::cloud
