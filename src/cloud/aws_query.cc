#include "gpuscaler/cloud/aws_query.h"

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <array>

#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/model/json_fields.h"

namespace gpuscaler::cloud {

std::string EncodeForm(const QueryParams& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (!out.empty()) out.push_back('&');
    out += UriEncode(k);
    out.push_back('=');
    out += UriEncode(v);
  }
  return out;
}

QueryParams DecodeForm(std::string_view body) {
  QueryParams out;
  auto decode = [](std::string_view s) {
    std::string plus(s);
    for (char& c : plus) {
      if (c == '+') c = ' ';
    }
    return UriDecode(plus);
  };
  size_t start = 0;
  while (start < body.size()) {
    size_t amp = body.find('&', start);
    if (amp == std::string_view::npos) amp = body.size();
    std::string_view part = body.substr(start, amp - start);
    start = amp + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    out.emplace_back(decode(part.substr(0, eq)),
                     eq == std::string_view::npos ? std::string() : decode(part.substr(eq + 1)));
  }
  return out;
}

std::optional<std::string> FormValue(const QueryParams& params, std::string_view key) {
  for (const auto& [k, v] : params) {
    if (k == key) return v;
  }
  return std::nullopt;
}

std::string AwsTime(WallTime t) { return FormatRfc3339(t); }

bool ParseAwsTime(std::string_view text, WallTime* out) {
  std::string s(text);
  // Drop fractional seconds: "…:55.000Z" -> "…:55Z".
  if (size_t dot = s.find('.'); dot != std::string::npos && dot > 10) {
    size_t end = dot + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    s.erase(dot, end - dot);
  }
  return ParseRfc3339(s, out);
}

std::optional<AwsErrorBody> ParseErrorBody(std::string_view body) {
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  if (body[first] == '{') {
    auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("__type")) return std::nullopt;
    AwsErrorBody e;
    const std::string type = StringAt(j, "__type");
    e.code = type.substr(type.find('#') == std::string::npos ? 0 : type.find('#') + 1);
    if (j.contains("message") && j["message"].is_string()) e.message = j["message"];
    if (j.contains("Message") && j["Message"].is_string()) e.message = j["Message"];
    return e;
  }
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return std::nullopt;
  pugi::xml_node root = doc.document_element();
  pugi::xml_node error;
  AwsErrorBody e;
  if (std::string_view(root.name()) == "Response") {
    error = root.child("Errors").child("Error");
    e.request_id = root.child_value("RequestID");
  } else if (std::string_view(root.name()) == "ErrorResponse") {
    error = root.child("Error");
    e.request_id = root.child_value("RequestId");
  }
  if (!error) return std::nullopt;
  e.code = error.child_value("Code");
  e.message = error.child_value("Message");
  return e;
}

ErrorCategory ClassifyAwsError(std::string_view code, int http_status) {
  // ReservationCapacityExceeded: a targeted capacity reservation without
  // enough free slots for the launch.
  static constexpr std::array<std::string_view, 9> kCapacity = {
      "InsufficientInstanceCapacity", "InsufficientCapacity",  "UnfulfillableCapacity", "SpotMaxPriceTooLow",
      "MaxSpotInstanceCountExceeded", "InstanceLimitExceeded", "VcpuLimitExceeded",     "Unsupported",
      "ReservationCapacityExceeded"};
  static constexpr std::array<std::string_view, 14> kThrottle = {
      "Throttling",        "ThrottlingException",          "ThrottledException",
      "RequestThrottledException", "TooManyRequestsException", "ProvisionedThroughputExceededException",
      "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
      "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
      "EC2ThrottledException"};
  static constexpr std::array<std::string_view, 12> kAuth = {
      "UnauthorizedOperation", "AuthFailure", "InvalidClientTokenId", "SignatureDoesNotMatch",
      "AccessDenied", "AccessDeniedException", "ExpiredToken", "ExpiredTokenException",
      "IncompleteSignature", "MissingAuthenticationToken", "InvalidAccessKeyId", "RequestExpired"};
  auto in = [&](const auto& list) {
    for (std::string_view c : list) {
      if (c == code) return true;
    }
    return false;
  };
  if (in(kCapacity)) return ErrorCategory::kCapacity;
  if (in(kThrottle)) return ErrorCategory::kThrottled;
  if (in(kAuth)) return ErrorCategory::kAuth;
  if (code == "ResourceContention" || code == "ServiceUnavailable" || code == "InternalError" ||
      code == "InternalFailure" || http_status >= 500) {
    return ErrorCategory::kTransient;
  }
  if (code.size() > 9 && code.substr(code.size() - 9) == ".NotFound") return ErrorCategory::kNotFound;
  // Launch templates (InvalidLaunchTemplateName.NotFoundException) and SSM
  // (ParameterNotFound) spell it differently.
  if (code.size() > 18 && code.substr(code.size() - 18) == ".NotFoundException") return ErrorCategory::kNotFound;
  if (code == "ParameterNotFound") return ErrorCategory::kNotFound;
  // EC2's answer for a placement group name it does not know.
  if (code == "InvalidPlacementGroup.Unknown") return ErrorCategory::kNotFound;
  if (code.empty() && (http_status == 401 || http_status == 403)) return ErrorCategory::kAuth;
  if (code.empty() && http_status == 429) return ErrorCategory::kThrottled;
  return ErrorCategory::kConfig;
}

Error ErrorFromResponse(std::string_view action, int http_status, std::string_view body) {
  std::string prefix = std::string(action) + ": HTTP " + std::to_string(http_status);
  if (auto e = ParseErrorBody(body)) {
    std::string msg = prefix + ": " + e->code;
    if (!e->message.empty()) msg += ": " + e->message;
    if (!e->request_id.empty()) msg += " (request " + e->request_id + ")";
    return Error(ClassifyAwsError(e->code, http_status), msg);
  }
  return Error(ClassifyAwsError("", http_status), prefix + " (no AWS error body)");
}

}  // namespace gpuscaler::cloud
