// RS256 JSON Web Tokens, shared by the Google service-account assertion
// (gcp_credentials.cc) and the Entra ID client certificate assertion
// (azure_credentials.cc). Private to src/cloud.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// "<base64url(header)>.<base64url(claims)>.<base64url(signature)>", the
// signature RSASSA-PKCS1-v1_5 with SHA-256 by `pem_private_key` (PKCS#8 or
// PKCS#1 PEM). kAuth naming `who` (never the key) when the key does not load
// as an RSA private key or signing fails.
Result<std::string> SignRs256Jwt(const nlohmann::json& header, const nlohmann::json& claims,
                                 std::string_view pem_private_key, std::string_view who);

}  // namespace gpuscaler::cloud
