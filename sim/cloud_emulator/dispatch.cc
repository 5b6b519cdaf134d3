#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/sigv4.h"
#include "gpuscaler/cloud/sqs_api.h"
#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

EmulatorResponse CloudEmulator::Ec2Error(int status, const std::string& code, const std::string& message) {
  std::string body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error>";
  Leaf(body, "Code", code);
  Leaf(body, "Message", message);
  body += "</Error></Errors>";
  Leaf(body, "RequestID", Uuid());
  body += "</Response>";
  return {status, kXmlContentType, {}, body};
}

EmulatorResponse CloudEmulator::QueryError(int status, const std::string& type, const std::string& code,
                                           const std::string& message) {
  std::string body = std::string("<ErrorResponse xmlns=\"") + kAsgNs + "\">\n  <Error>";
  Leaf(body, "Type", type);
  Leaf(body, "Code", code);
  Leaf(body, "Message", message);
  body += "</Error>\n  ";
  Leaf(body, "RequestId", Uuid());
  body += "\n</ErrorResponse>\n";
  return {status, "text/xml", {}, body};
}

EmulatorResponse CloudEmulator::SqsError(int status, const std::string& code, const std::string& query_code,
                                         const std::string& message) {
  nlohmann::json j = {{"__type", "com.amazonaws.sqs#" + code}, {"message", message}};
  return {status, cloud::kSqsJsonContentType, {{"x-amzn-query-error", query_code + ";Sender"}}, j.dump()};
}

std::optional<EmulatorResponse> CloudEmulator::CheckAuth(const EmulatorRequest& request, std::string_view service) {
  auto fail = [&](int status, const std::string& code, const std::string& message) -> EmulatorResponse {
    ++stats_.auth_failures;
    if (service == "sqs") return SqsError(status, code, code, message);
    if (service == "autoscaling") return QueryError(status, "Sender", code, message);
    return Ec2Error(status, code, message);
  };
  const std::string authz = cloud::HeaderValue(request.headers, "Authorization");
  if (authz.empty()) return fail(401, "MissingAuthenticationToken", "Request is missing Authentication Token");
  auto parsed = cloud::ParseAuthorization(authz);
  if (!parsed.ok()) return fail(400, "IncompleteSignature", "Authorization header is not a SigV4 signature");
  if (parsed->region != scenario_.region) {
    return fail(401, "AuthFailure", "Credential should be scoped to a valid region, not '" + parsed->region + "'.");
  }
  if (parsed->service != service) {
    return fail(401, "AuthFailure",
                "Credential should be scoped to correct service: '" + std::string(service) + "'.");
  }
  auto secret = scenario_.credentials.find(parsed->access_key_id);
  if (secret == scenario_.credentials.end()) return std::nullopt;
  cloud::SigningRequest sr;
  sr.method = request.method;
  const size_t q = request.target.find('?');
  sr.path = request.target.substr(0, q);
  if (q != std::string::npos) sr.query = request.target.substr(q + 1);
  sr.headers = request.headers;
  sr.body = request.body;
  cloud::SigningParams params;
  params.region = parsed->region;
  params.service = parsed->service;
  const std::string date = cloud::HeaderValue(request.headers, "X-Amz-Date");
  if (date.size() != 16) return fail(400, "IncompleteSignature", "X-Amz-Date is missing or malformed");
  const std::string rfc = date.substr(0, 4) + "-" + date.substr(4, 2) + "-" + date.substr(6, 2) + "T" +
                          date.substr(9, 2) + ":" + date.substr(11, 2) + ":" + date.substr(13, 2) + "Z";
  if (!ParseRfc3339(rfc, &params.time) || cloud::AmzDay(params.time) != parsed->day) {
    return fail(400, "IncompleteSignature", "X-Amz-Date does not match the credential scope date");
  }
  // The path as the client signed it: the decoded one, re-encoded by the canonicaliser.
  sr.path = cloud::UriDecode(sr.path);
  const std::string creq = cloud::CanonicalRequestFor(sr, params, parsed->signed_headers);
  const std::string want = cloud::Signature(secret->second, cloud::StringToSign(creq, params), params);
  if (want != parsed->signature) {
    return fail(403, "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.");
  }
  return std::nullopt;
}

std::vector<EmulatorRequestRecord> CloudEmulator::Requests() const {
  std::lock_guard lock(mu_);
  return {requests_.begin(), requests_.end()};
}

EmulatorResponse CloudEmulator::Handle(const EmulatorRequest& request) {
  std::lock_guard lock(mu_);
  if (request.method == "GET" && request.target == "/_emulator/requests") {
    nlohmann::json out = nlohmann::json::array();
    for (const EmulatorRequestRecord& r : requests_) {
      out.push_back({{"steady_ms", std::chrono::duration_cast<std::chrono::milliseconds>(r.steady.time_since_epoch()).count()},
                     {"time", FormatRfc3339(r.time)},
                     {"service", r.service},
                     {"action", r.action},
                     {"client_token", r.client_token},
                     {"status", r.status},
                     {"error_code", r.error_code}});
    }
    return {200, "application/json", {}, out.dump()};
  }
  EmulatorRequestRecord record;
  EmulatorResponse response = Dispatch(request, &record);
  {
    record.status = response.status;
    if (response.status >= 300) {
      // Query errors say <Code>…</Code>; SQS's JSON errors "__type": "…#Code".
      const std::string& b = response.body;
      if (size_t at = b.find("<Code>"); at != std::string::npos) {
        const size_t end = b.find("</Code>", at);
        if (end != std::string::npos) record.error_code = b.substr(at + 6, end - at - 6);
      } else if (size_t hash = b.find('#'); hash != std::string::npos) {
        record.error_code = b.substr(hash + 1, b.find('"', hash) - hash - 1);
      }
    }
    requests_.push_back(std::move(record));
    if (requests_.size() > 100000) requests_.pop_front();
  }
  return response;
}

EmulatorResponse CloudEmulator::Dispatch(const EmulatorRequest& request, EmulatorRequestRecord* record) {
  const WallTime now = clock_.WallNow();
  record->time = now;
  record->steady = clock_.Now();
  AdvanceLocked(now);
  ++stats_.requests;

  const std::string target = cloud::HeaderValue(request.headers, "X-Amz-Target");
  if (target.rfind(cloud::kSqsTargetPrefix, 0) == 0) {
    record->service = "sqs";
    record->action = target.substr(std::string_view(cloud::kSqsTargetPrefix).size());
    if (auto denied = CheckAuth(request, "sqs")) return *denied;
    return Sqs(request, std::string_view(target).substr(std::string_view(cloud::kSqsTargetPrefix).size()), now);
  }

  constexpr std::string_view kSsmPrefix = "AmazonSSM.";
  if (target.rfind(kSsmPrefix, 0) == 0) {
    record->service = "ssm";
    record->action = target.substr(kSsmPrefix.size());
    if (auto denied = CheckAuth(request, "ssm")) return *denied;
    return Ssm(request, std::string_view(target).substr(kSsmPrefix.size()));
  }

  Params p;
  const size_t qmark = request.target.find('?');
  if (qmark != std::string::npos) p.q = cloud::DecodeForm(request.target.substr(qmark + 1));
  for (auto& kv : cloud::DecodeForm(request.body)) p.q.push_back(std::move(kv));
  const std::string action = p.Get("Action");
  static const std::vector<std::string> kEc2 = {"CreateFleet",
                                                "TerminateInstances",
                                                "DescribeInstances",
                                                "DescribeSpotPriceHistory",
                                                "CreateLaunchTemplate",
                                                "CreateLaunchTemplateVersion",
                                                "ModifyLaunchTemplate",
                                                "DescribeLaunchTemplates",
                                                "DescribeLaunchTemplateVersions",
                                                "DescribeSecurityGroups",
                                                "DescribeSubnets",
                                                "CreatePlacementGroup",
                                                "DescribePlacementGroups",
                                                "DescribeCapacityReservations",
                                                "RunInstances",
                                                "StopInstances",
                                                "StartInstances",
                                                "CancelSpotInstanceRequests"};
  static const std::vector<std::string> kAsg = {"SetDesiredCapacity", "DescribeAutoScalingGroups",
                                                "TerminateInstanceInAutoScalingGroup", "DescribeScalingActivities",
                                                "CreateOrUpdateTags", "PutWarmPool", "DescribeWarmPool", "DeleteWarmPool"};
  const bool ec2 = std::find(kEc2.begin(), kEc2.end(), action) != kEc2.end();
  const bool asg = std::find(kAsg.begin(), kAsg.end(), action) != kAsg.end();
  record->service = asg ? "autoscaling" : "ec2";
  record->action = action;
  if (action == "CreateFleet" || action == "RunInstances") record->client_token = p.Get("ClientToken");
  if (!ec2 && !asg) {
    if (action.empty()) return Ec2Error(400, "MissingAction", "The request must contain the parameter Action");
    return Ec2Error(400, "InvalidAction", "The action " + action + " is not valid for this web service.");
  }
  if (auto denied = CheckAuth(request, ec2 ? "ec2" : "autoscaling")) return *denied;

  ++api_calls_;
  const bool throttle_nth = scenario_.throttle_every > 0 && api_calls_ % scenario_.throttle_every == 0;
  std::uniform_real_distribution<double> u(0, 1);
  const bool throttle_rand = scenario_.throttle_rate > 0 && u(rng_) < scenario_.throttle_rate;
  if (throttle_nth || throttle_rand) {
    ++stats_.throttled;
    return ec2 ? Ec2Error(503, "RequestLimitExceeded", "Request limit exceeded.")
               : QueryError(400, "Sender", "Throttling", "Rate exceeded");
  }
  if (scenario_.server_error_rate > 0 && u(rng_) < scenario_.server_error_rate) {
    ++stats_.server_errors;
    return ec2 ? Ec2Error(503, "Unavailable", "The server is overloaded and can't handle the request.")
               : QueryError(500, "Receiver", "InternalFailure", "An internal error occurred.");
  }

  if (action == "CreateFleet") return CreateFleet(p, now);
  if (action == "TerminateInstances") return TerminateInstances(p, now);
  if (action == "DescribeInstances") return DescribeInstances(p);
  if (action == "DescribeSpotPriceHistory") return DescribeSpotPriceHistory(p);
  if (action == "CreateLaunchTemplate") return CreateLaunchTemplate(p, now);
  if (action == "CreateLaunchTemplateVersion") return CreateLaunchTemplateVersion(p, now);
  if (action == "ModifyLaunchTemplate") return ModifyLaunchTemplate(p);
  if (action == "DescribeLaunchTemplates") return DescribeLaunchTemplates(p);
  if (action == "DescribeLaunchTemplateVersions") return DescribeLaunchTemplateVersions(p);
  if (action == "DescribeSecurityGroups") return DescribeSecurityGroups(p);
  if (action == "DescribeSubnets") return DescribeSubnets(p);
  if (action == "CreatePlacementGroup") return CreatePlacementGroup(p, now);
  if (action == "DescribePlacementGroups") return DescribePlacementGroups(p);
  if (action == "DescribeCapacityReservations") return DescribeCapacityReservations(p);
  if (action == "RunInstances") return RunInstances(p, now);
  if (action == "SetDesiredCapacity") return SetDesiredCapacity(p, now);
  if (action == "DescribeAutoScalingGroups") return DescribeAutoScalingGroups(p);
  if (action == "DescribeScalingActivities") return DescribeScalingActivities(p);
  if (action == "CreateOrUpdateTags") return CreateOrUpdateTags(p);
  if (action == "StopInstances") return StopInstances(p, now);
  if (action == "StartInstances") return StartInstances(p, now);
  if (action == "CancelSpotInstanceRequests") return CancelSpotInstanceRequests(p);
  if (action == "PutWarmPool") return PutWarmPool(p, now);
  if (action == "DescribeWarmPool") return DescribeWarmPool(p);
  if (action == "DeleteWarmPool") return DeleteWarmPool(p, now);
  return TerminateInstanceInAutoScalingGroup(p, now);
}

}  // namespace gpuscaler::sim
