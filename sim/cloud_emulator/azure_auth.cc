// Microsoft Entra ID's v2.0 token endpoint (client credentials: a secret or
// a client assertion), the Instance Metadata Service (managed identity
// tokens, scheduled events) and the Bearer check in front of every ARM call.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/azure_impl.h"
#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

constexpr const char* kAzJwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
// How far nbf may lie ahead of our clock, and exp behind it.
constexpr Seconds kAzClockSkew{300};

// Entra ID's error body: {"error","error_description":"AADSTS…: …","error_codes":[…]}.
EmulatorResponse AadError(int status, const std::string& error, int aadsts, const std::string& description) {
  json j = {{"error", error},
            {"error_description", "AADSTS" + std::to_string(aadsts) + ": " + description},
            {"error_codes", {aadsts}}};
  return azure::Json(j.dump(), status);
}

int64_t AzEpoch(WallTime t) { return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count(); }

bool AzAudienceHas(const json& aud, const std::function<bool(const std::string&)>& ok) {
  if (aud.is_string()) return ok(aud.get<std::string>());
  if (aud.is_array()) {
    for (const json& a : aud) {
      if (a.is_string() && ok(a.get<std::string>())) return true;
    }
  }
  return false;
}

}  // namespace

std::string AzureEmulator::IssueToken(const std::string& client_id, WallTime now) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, static_cast<uint64_t>(rng_()),
                static_cast<uint64_t>(rng_()));
  const std::string token = std::string("eyJ0eXAiOiJKV1QiLCJlbXVsYXRlZCI6dHJ1ZX0.") + buf;
  tokens_[token] = Token{client_id, now + scenario_.token_lifetime};
  ++stats_.tokens_issued;
  return token;
}

EmulatorResponse AzureEmulator::TokenEndpoint(const EmulatorRequest& request, const std::string& tenant,
                                              WallTime now) {
  if (request.method != "POST") return AadError(405, "invalid_request", 900561, "The endpoint only accepts POST.");
  if (!azure::EqualsNoCase(tenant, scenario_.tenant)) {
    return AadError(400, "invalid_tenant", 90002, "Tenant '" + tenant + "' not found.");
  }
  const auto form = gcp::ParseQuery(request.body);
  auto field = [&](const char* k) {
    auto it = form.find(k);
    return it == form.end() ? std::string() : it->second;
  };
  if (field("grant_type") != "client_credentials") {
    return AadError(400, "unsupported_grant_type", 70003,
                    "The app requested an unsupported grant type '" + field("grant_type") + "'.");
  }
  const std::string scope = field("scope");
  if (scope.size() < 9 || scope.compare(scope.size() - 9, 9, "/.default") != 0) {
    return AadError(400, "invalid_scope", 1002012,
                    "The provided value for scope " + scope + " is not valid. Client credential flows must have a "
                    "scope value with /.default suffixed to the resource identifier (application ID URI).");
  }
  const std::string client_id = field("client_id");
  const AzureClient* client = nullptr;
  for (const AzureClient& c : scenario_.clients) {
    if (azure::EqualsNoCase(c.client_id, client_id)) client = &c;
  }
  if (client == nullptr) {
    ++stats_.auth_failures;
    return AadError(400, "unauthorized_client", 700016,
                    "Application with identifier '" + client_id + "' was not found in the directory '" + tenant +
                        "'.");
  }
  const std::string secret = field("client_secret");
  const std::string assertion_type = field("client_assertion_type");
  if (!assertion_type.empty()) {
    if (assertion_type != kAzJwtBearerAssertion) {
      return AadError(400, "invalid_request", 50027, "Invalid client_assertion_type '" + assertion_type + "'.");
    }
    return ClientAssertion(*client, field("client_assertion"), tenant, now);
  }
  if (secret.empty() || client->client_secret.empty() || secret != client->client_secret) {
    ++stats_.auth_failures;
    return AadError(401, "invalid_client", 7000215,
                    "Invalid client secret provided. Ensure the secret being sent in the request is the client "
                    "secret value, not the client secret ID, for a secret added to app '" + client_id + "'.");
  }
  json out = {{"token_type", "Bearer"},
              {"expires_in", scenario_.token_lifetime.count()},
              {"ext_expires_in", scenario_.token_lifetime.count()},
              {"access_token", IssueToken(client->client_id, now)}};
  return azure::Json(out.dump());
}

EmulatorResponse AzureEmulator::ClientAssertion(const AzureClient& client, const std::string& assertion,
                                                const std::string& tenant, WallTime now) {
  auto invalid = [&](int code, const std::string& why) {
    ++stats_.auth_failures;
    return AadError(401, "invalid_client", code, why);
  };
  const size_t dot1 = assertion.find('.');
  const size_t dot2 = dot1 == std::string::npos ? dot1 : assertion.find('.', dot1 + 1);
  if (dot2 == std::string::npos) return invalid(50027, "JWT token is invalid or malformed.");
  auto header_raw = gcp::Base64UrlDecode(std::string_view(assertion).substr(0, dot1));
  auto claims_raw = gcp::Base64UrlDecode(std::string_view(assertion).substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = gcp::Base64UrlDecode(std::string_view(assertion).substr(dot2 + 1));
  if (!header_raw || !claims_raw || !signature) return invalid(50027, "JWT token is invalid or malformed.");
  const json header = json::parse(*header_raw, nullptr, false);
  const json claims = json::parse(*claims_raw, nullptr, false);
  if (!header.is_object() || !claims.is_object()) return invalid(50027, "JWT token is invalid or malformed.");
  const std::string iss = claims.value("iss", "");
  const std::string sub = claims.value("sub", "");
  const bool federated = !client.federated_issuer.empty() && iss == client.federated_issuer;
  std::string key_pem;
  if (federated) {
    if (sub != client.federated_subject ||
        !AzAudienceHas(claims.value("aud", json()),
                       [&](const std::string& a) { return a == client.federated_audience; })) {
      return invalid(700213, "No matching federated identity record found for presented assertion subject '" + sub +
                                 "'. Check your federated identity credential Subject, Audience and Issuer "
                                 "against the presented assertion.");
    }
    key_pem = client.federated_key_pem;
  } else {
    if (client.certificate_pem.empty()) {
      return invalid(700027, "The certificate with identifier used to sign the client assertion is not registered "
                             "on application. [Reason - The key was not found.]");
    }
    if (iss != client.client_id || sub != client.client_id) {
      return invalid(700023, "Client assertion audience claim does not match Realm issuer, or iss/sub is not the "
                             "client id.");
    }
    // The aud a client assertion must carry: the token endpoint's URL.
    const std::string suffix = "/" + tenant + "/oauth2/v2.0/token";
    if (!AzAudienceHas(claims.value("aud", json()), [&](const std::string& a) {
          return a.size() >= suffix.size() && azure::EqualsNoCase(a.substr(a.size() - suffix.size()), suffix);
        })) {
      return invalid(700016, "Client assertion audience claim does not match the token endpoint " + suffix + ".");
    }
    key_pem = client.certificate_pem;
  }
  if (!key_pem.empty()) {
    if (header.value("alg", "") != "RS256") return invalid(5002738, "Unsupported JWT signing algorithm.");
    Status verified =
        gcp::VerifyRs256(key_pem, std::string_view(assertion).substr(0, dot2), *signature);
    if (!verified.ok()) {
      return invalid(7000274, "Key was found, but use of the key to verify the signature failed.");
    }
  }
  const int64_t t = AzEpoch(now);
  const int64_t exp = claims.value("exp", int64_t{0});
  const int64_t nbf = claims.value("nbf", int64_t{0});
  if (exp == 0 || exp + kAzClockSkew.count() < t || nbf > t + kAzClockSkew.count()) {
    return invalid(700024, "Client assertion is not within its valid time range. Current time: " +
                               azure::IsoTime(now) + ", assertion valid from " + std::to_string(nbf) +
                               ", expiry time of assertion " + std::to_string(exp) + ".");
  }
  json out = {{"token_type", "Bearer"},
              {"expires_in", scenario_.token_lifetime.count()},
              {"ext_expires_in", scenario_.token_lifetime.count()},
              {"access_token", IssueToken(client.client_id, now)}};
  return azure::Json(out.dump());
}

EmulatorResponse AzureEmulator::ImdsToken(const EmulatorRequest& request, WallTime now) {
  if (request.method != "GET") return azure::Json(R"({"error":"invalid_request","error_description":"GET only"})", 405);
  if (!azure::EqualsNoCase(azure::Header(request, "Metadata"), "true")) {
    return azure::Json(R"({"error":"invalid_request","error_description":"Required metadata header not specified"})",
                       400);
  }
  const size_t q = request.target.find('?');
  const auto query = gcp::ParseQuery(q == std::string::npos ? "" : request.target.substr(q + 1));
  auto param = [&](const char* k) {
    auto it = query.find(k);
    return it == query.end() ? std::string() : it->second;
  };
  if (param("api-version").empty() || param("resource").empty()) {
    return azure::Json(
        R"({"error":"invalid_request","error_description":"Required query variable 'resource' or 'api-version' is missing"})",
        400);
  }
  const std::string wanted = param("client_id");
  if (scenario_.managed_identity_client_id.empty() ||
      (!wanted.empty() && !azure::EqualsNoCase(wanted, scenario_.managed_identity_client_id))) {
    return azure::Json(R"({"error":"invalid_request","error_description":"Identity not found"})", 400);
  }
  const std::string token = IssueToken(scenario_.managed_identity_client_id, now);
  const std::string lifetime = std::to_string(scenario_.token_lifetime.count());
  json out = {{"access_token", token},
              {"client_id", scenario_.managed_identity_client_id},
              {"expires_in", lifetime},
              {"expires_on", std::to_string(AzEpoch(now + scenario_.token_lifetime))},
              {"ext_expires_in", lifetime},
              {"not_before", std::to_string(AzEpoch(now))},
              {"resource", param("resource")},
              {"token_type", "Bearer"}};
  return azure::Json(out.dump());
}

EmulatorResponse AzureEmulator::ScheduledEvents(const EmulatorRequest& request, WallTime now) {
  if (!azure::EqualsNoCase(azure::Header(request, "Metadata"), "true")) {
    return azure::Json(R"({"error":"Bad request. Required metadata header not specified"})", 400);
  }
  // Acknowledgements ({"StartRequests":[{"EventId"}]}) change nothing here:
  // a Preempt starts at its NotBefore regardless.
  if (request.method == "POST") return {200, "", {}, ""};
  if (request.method != "GET") return azure::Json(R"({"error":"Bad request"})", 405);
  const size_t q = request.target.find('?');
  const auto query = gcp::ParseQuery(q == std::string::npos ? "" : request.target.substr(q + 1));
  // Which VM asks: the emulator's `vm` parameter or X-Emulator-Vm header
  // (its ARM name "{scale set}_{id}" or its computer name); neither: all.
  std::string who = query.count("vm") != 0 ? query.at("vm") : azure::Header(request, "X-Emulator-Vm");
  // A Preempt shows Scheduled until NotBefore, then Started while the VM
  // is still there (a Deallocate eviction) for at most this long.
  constexpr Seconds kStartedShown{15};
  int incarnation = 1;
  json events = json::array();
  for (const ScheduledEvent& e : events_) {
    const Vm& vm = instances_[e.vm];
    ++incarnation;  // noticed
    const bool started = now >= e.not_before;
    if (started) ++incarnation;
    const bool shown = !started || (vm.deallocated_at && now < e.not_before + kStartedShown);
    if (!shown) {
      if (started) ++incarnation;  // and gone from the document
      continue;
    }
    if (!who.empty() && !azure::EqualsNoCase(who, vm.info.name) && !azure::EqualsNoCase(who, vm.info.computer_name))
      continue;
    events.push_back({{"EventId", e.event_id},
                      {"EventStatus", started ? "Started" : "Scheduled"},
                      {"EventType", "Preempt"},
                      {"ResourceType", "VirtualMachine"},
                      {"Resources", {vm.info.name}},
                      {"NotBefore", started ? "" : azure::Rfc1123Time(e.not_before)},
                      {"Description", "The Spot VM is being evicted."},
                      {"EventSource", "Platform"},
                      {"DurationInSeconds", -1}});
  }
  json out = {{"DocumentIncarnation", incarnation}, {"Events", events}};
  return azure::Json(out.dump());
}

std::optional<EmulatorResponse> AzureEmulator::CheckBearer(const EmulatorRequest& request, WallTime now) {
  const std::string auth = azure::Header(request, "Authorization");
  auto deny = [&](const std::string& code, const std::string& message) {
    ++stats_.auth_failures;
    EmulatorResponse r = azure::ArmError(401, code, message);
    r.headers.emplace_back("WWW-Authenticate", "Bearer authorization_uri=\"https://login.microsoftonline.com/" +
                                                   scenario_.tenant + "\", error=\"invalid_token\"");
    return r;
  };
  if (auth.empty()) return deny("AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.");
  if (auth.size() < 8 || !azure::EqualsNoCase(auth.substr(0, 7), "Bearer ")) {
    return deny("AuthenticationFailed", "Authentication failed. The 'Authorization' header is not a Bearer token.");
  }
  auto it = tokens_.find(auth.substr(7));
  if (it == tokens_.end()) return deny("InvalidAuthenticationToken", "The access token is invalid.");
  if (now >= it->second.expires) {
    return deny("ExpiredAuthenticationToken", "The access token expiry UTC time '" +
                                                  azure::IsoTime(it->second.expires) +
                                                  "' is earlier than current UTC time '" + azure::IsoTime(now) + "'.");
  }
  return std::nullopt;
}

}  // namespace gpuscaler::sim
