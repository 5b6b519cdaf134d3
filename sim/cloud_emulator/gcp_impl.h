// Helpers shared by the GcpEmulator's translation units (not a public API).
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cloud_emulator/gcp_emulator.h"

namespace gpuscaler::sim::gcp {

inline constexpr const char* kComputeBase = "https://www.googleapis.com/compute/v1/";

// A 200 answer with a Compute Engine JSON body.
EmulatorResponse Json(const std::string& body);

// 404 notFound: "The resource '<resource>' was not found".
EmulatorResponse NotFound(const std::string& resource);

// 400 invalid: "Invalid value for field '<field>': '<value>'. <why>".
EmulatorResponse Invalid(const std::string& field, const std::string& value, const std::string& why);

// The part after the last '/' of a URL or path (all of `s` when it has none).
std::string LastSegment(const std::string& s);

// RFC 1035 labels, as Compute Engine requires of resource names.
bool ValidName(const std::string& n);

// A requestId Compute Engine takes: a UUID other than the zero UUID.
bool ValidUuid(const std::string& s);

// "us-central1-a" -> "us-central1".
std::string RegionOf(const std::string& zone);

// Google's JSON error body: {"error":{"code":status,"message":message,
// "errors":[{"message","domain","reason"}],"status":rpc_status}}.
EmulatorResponse ErrorResponse(int status, const std::string& reason, const std::string& message,
                               const std::string& domain = "global");

// The RFC 3339 time Compute Engine prints ("2026-12-04T10:00:00.000-00:00"
// style; we print UTC with a Z offset as "+00:00").
std::string Timestamp(WallTime t);

// Query parameters of a target ("a=1&b=x%20y" -> {a: "1", b: "x y"}).
std::map<std::string, std::string> ParseQuery(std::string_view query);

// A list filter: `field op value` expressions joined by AND or whitespace,
// each optionally in parentheses; op is =, != or : (has); a value is a
// quoted string or a bare word, and a trailing * matches any suffix. The
// fields a resource has come from `field(name)` (nullopt: no such field).
class Filter {
 public:
  // nullopt and `*error` set when the text is not such a filter.
  static std::optional<Filter> Parse(const std::string& text, std::string* error);
  bool Matches(const std::function<std::optional<std::string>(const std::string&)>& field) const;

 private:
  struct Term {
    std::string field;
    std::string op;
    std::string value;
  };
  std::vector<Term> terms_;
};

// What a list call asks for: `filter` (none when absent or empty),
// maxResults (1..500, default 500) and pageToken (an offset we handed out).
struct ListQuery {
  std::optional<Filter> filter;
  size_t offset = 0;
  size_t max_results = 500;
  // Where the page that starts at `offset` ends in a list of `total` items.
  size_t PageEnd(size_t total) const { return std::min(total, offset + max_results); }
};
// The list parameters of `q` into `*out`; the error answer when one is
// malformed.
std::optional<EmulatorResponse> ParseListQuery(const std::map<std::string, std::string>& q, ListQuery* out);

// The pageToken that resumes a list at `offset` ("o<offset>").
std::string PageToken(size_t offset);

// The key an affinity names a specific reservation by.
inline constexpr const char* kReservationNameKey = "compute.googleapis.com/reservation-name";

// A reservationAffinity object (`field` names it in errors) into *out; the
// 400 answer when it is malformed (an unknown consumeReservationType, a
// specific one without exactly one value or with another key).
std::optional<EmulatorResponse> ParseReservationAffinity(const nlohmann::json& j, const std::string& field,
                                                         GcpReservationAffinity* out);
// bulkInsert's instanceProperties.reservationAffinity (ANY_RESERVATION when
// absent) into *out; the 400 answer when it is malformed or names a
// reservation of `zone` that may only be consumed automatically (Compute
// Engine refuses that call itself).
std::optional<EmulatorResponse> BulkInsertAffinity(const nlohmann::json& props, const std::string& zone,
                                                   const GcpScenario& scenario, GcpReservationAffinity* out);
// The reservationAffinity object as instances and templates show it.
nlohmann::json ReservationAffinityJson(const GcpReservationAffinity& affinity);

// Base64url without padding (JWT), decoded; nullopt when malformed.
std::optional<std::string> Base64UrlDecode(std::string_view text);

// Verifies an RS256 (RSASSA-PKCS1-v1_5 over SHA-256) signature of `data`
// with a PEM public key or certificate; an error says what failed.
Status VerifyRs256(const std::string& public_key_pem, std::string_view data, std::string_view signature);

}  // namespace gpuscaler::sim::gcp

namespace gpuscaler::sim {

// /compute/v1/projects/{project}/zones/{zone}/{collection}[/{name}[/{verb}]]
// or /compute/v1/projects/{project}/aggregated/{collection}.
struct GcpEmulator::Path {
  std::string project;
  std::string zone;
  bool aggregated = false;
  std::string collection;
  std::string name;
  std::string verb;
  std::string resource() const {
    std::string r = "projects/" + project + "/zones/" + zone + "/" + collection;
    if (!name.empty()) r += "/" + name;
    return r;
  }
};

}  // namespace gpuscaler::sim
