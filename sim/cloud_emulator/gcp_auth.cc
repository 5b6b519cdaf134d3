// Google's OAuth 2.0 token endpoint (JWT-bearer grant, RFC 7523, as Google
// answers it), the GCE metadata server's token path, and the Bearer check
// in front of every Compute call.
#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/transport.h"
#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {
namespace {

constexpr const char* kJwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer";
// How far iat may lie ahead of our clock, and exp behind it.
constexpr Seconds kClockSkew{300};

EmulatorResponse OAuthError(const std::string& error, const std::string& description, int status = 400) {
  nlohmann::json j = {{"error", error}, {"error_description", description}};
  return {status, "application/json; charset=utf-8", {}, j.dump()};
}

}  // namespace

std::string GcpEmulator::IssueToken(const std::string& email, WallTime now) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, static_cast<uint64_t>(rng_()),
                static_cast<uint64_t>(rng_()));
  const std::string token = std::string("ya29.emulated.") + buf;
  tokens_[token] = Token{email, now + scenario_.token_lifetime};
  ++stats_.tokens_issued;
  return token;
}

EmulatorResponse GcpEmulator::TokenEndpoint(const EmulatorRequest& request, WallTime now) {
  if (request.method != "POST")
    return OAuthError("invalid_request", "The token endpoint takes POST only.", 405);
  const auto form = gcp::ParseQuery(request.body);
  auto field = [&](const char* k) {
    auto it = form.find(k);
    return it == form.end() ? std::string() : it->second;
  };
  const std::string grant = field("grant_type");
  if (grant != kJwtBearer) return OAuthError("unsupported_grant_type", "Invalid grant_type: " + grant);
  const std::string assertion = field("assertion");
  const size_t dot1 = assertion.find('.');
  const size_t dot2 = dot1 == std::string::npos ? dot1 : assertion.find('.', dot1 + 1);
  if (dot2 == std::string::npos || assertion.find('.', dot2 + 1) != std::string::npos) {
    return OAuthError("invalid_grant", "Invalid JWT: the assertion is not header.claims.signature.");
  }
  auto header_raw = gcp::Base64UrlDecode(std::string_view(assertion).substr(0, dot1));
  auto claims_raw = gcp::Base64UrlDecode(std::string_view(assertion).substr(dot1 + 1, dot2 - dot1 - 1));
  auto signature = gcp::Base64UrlDecode(std::string_view(assertion).substr(dot2 + 1));
  if (!header_raw || !claims_raw || !signature)
    return OAuthError("invalid_grant", "Invalid JWT: not base64url.");
  const nlohmann::json header = nlohmann::json::parse(*header_raw, nullptr, false);
  const nlohmann::json claims = nlohmann::json::parse(*claims_raw, nullptr, false);
  if (!header.is_object() || !claims.is_object())
    return OAuthError("invalid_grant", "Invalid JWT: not JSON.");
  if (header.value("alg", "") != "RS256") {
    return OAuthError("invalid_grant",
                      "Invalid JWT: the algorithm must be RS256, got '" + header.value("alg", "") + "'.");
  }
  const std::string iss = claims.value("iss", "");
  const GcpServiceAccount* account = nullptr;
  for (const GcpServiceAccount& a : scenario_.service_accounts) {
    if (a.email == iss) account = &a;
  }
  if (account == nullptr) return OAuthError("invalid_grant", "Invalid grant: account not found");
  if (Status s =
          gcp::VerifyRs256(account->public_key_pem, std::string_view(assertion).substr(0, dot2), *signature);
      !s.ok()) {
    return OAuthError("invalid_grant", s.error().message());
  }
  const std::string aud = claims.value("aud", "");
  const bool aud_ok = scenario_.token_audience.empty()
                          ? aud.size() >= 6 && aud.compare(aud.size() - 6, 6, "/token") == 0
                          : aud == scenario_.token_audience;
  if (!aud_ok) {
    return OAuthError("invalid_grant", "Invalid JWT: Failed audience check. The right audience is " +
                                           (scenario_.token_audience.empty() ? std::string("…/token")
                                                                             : scenario_.token_audience));
  }
  if (!claims.contains("iat") || !claims["iat"].is_number_integer() || !claims.contains("exp") ||
      !claims["exp"].is_number_integer()) {
    return OAuthError("invalid_grant", "Invalid JWT: iat and exp are required integers.");
  }
  const int64_t iat = claims["iat"].get<int64_t>(), exp = claims["exp"].get<int64_t>();
  constexpr int64_t kYear3000 = 32503680000;  // keeps the arithmetic below far from overflow
  if (iat < 0 || exp < 0 || iat > kYear3000 || exp > kYear3000) {
    return OAuthError("invalid_grant", "Invalid JWT: iat and exp must be seconds since 1970.");
  }
  const int64_t t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  if (exp <= iat || exp > iat + 3600 || iat > t + kClockSkew.count() || exp < t - kClockSkew.count()) {
    return OAuthError(
        "invalid_grant",
        "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
        "Check your iat and exp values in the JWT claim.");
  }
  if (claims.value("scope", "").empty() && claims.value("target_audience", "").empty()) {
    return OAuthError("invalid_scope", "Empty or missing scope not allowed.");
  }
  nlohmann::json out = {{"access_token", IssueToken(iss, now)},
                        {"expires_in", scenario_.token_lifetime.count()},
                        {"token_type", "Bearer"}};
  return {200, "application/json; charset=utf-8", {}, out.dump()};
}

EmulatorResponse GcpEmulator::Metadata(const EmulatorRequest& request, const std::string& path,
                                       WallTime now) {
  if (cloud::HeaderValue(request.headers, "Metadata-Flavor") != "Google") {
    return {403, "text/html; charset=UTF-8", {}, "Missing required header \"Metadata-Flavor\": \"Google\"\n"};
  }
  const cloud::HeaderList flavor = {{"Metadata-Flavor", "Google"}};
  const std::string default_sa = "instance/service-accounts/default/";
  if (path == "project/project-id") return {200, "application/text", flavor, scenario_.project};
  if (path.rfind(default_sa, 0) == 0 && !scenario_.metadata_account.empty()) {
    const std::string what = path.substr(default_sa.size());
    if (what == "email") return {200, "application/text", flavor, scenario_.metadata_account};
    if (what == "token") {
      nlohmann::json out = {{"access_token", IssueToken(scenario_.metadata_account, now)},
                            {"expires_in", scenario_.token_lifetime.count()},
                            {"token_type", "Bearer"}};
      return {200, "application/json", flavor, out.dump()};
    }
  }
  return {404, "text/html; charset=UTF-8", flavor, "Not Found\n"};
}

std::optional<EmulatorResponse> GcpEmulator::CheckBearer(const EmulatorRequest& request, WallTime now) {
  const std::string authz = cloud::HeaderValue(request.headers, "Authorization");
  if (authz.rfind("Bearer ", 0) != 0) {
    ++stats_.auth_failures;
    return gcp::ErrorResponse(
        401, "required",
        "Request is missing required authentication credential. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential.");
  }
  const std::string token = authz.substr(7);
  for (const std::string& t : scenario_.access_tokens) {
    if (t == token) return std::nullopt;
  }
  auto it = tokens_.find(token);
  if (it == tokens_.end() || now >= it->second.expires) {
    ++stats_.auth_failures;
    return gcp::ErrorResponse(401, "authError", "Invalid Credentials");
  }
  return std::nullopt;
}

}  // namespace gpuscaler::sim
