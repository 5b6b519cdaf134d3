// Private to src/cloud: what the AwsProvider's files share.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "gpuscaler/cloud/aws_client.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/cloud/provider.h"

namespace gpuscaler::cloud {

// Pages through a Describe call: sends query(request) to `service`, parses
// the answer with `parse`, hands each page to `each`, and asks again with the
// page's next token until a page has none.
template <typename Request, typename Page, typename Each>
Status ForEachPage(AwsClient& client, std::string_view service, std::string_view action, Request request,
                   QueryParams (*query)(const Request&), Result<Page> (*parse)(std::string_view), Each each) {
  for (int page = 0;; ++page) {
    if (page > 10000) return Error::Internal(std::string(action) + ": too many pages");
    Result<std::string> body = client.Query(service, query(request));
    if (!body.ok()) return body.error();
    Result<Page> parsed = parse(*body);
    if (!parsed.ok()) return parsed.error();
    each(*parsed);
    if (parsed->next_token.empty()) return Status::Ok();
    request.next_token = parsed->next_token;
  }
}

// A launch request's tag asking for spot instances the cloud stops instead
// of ending when it reclaims them (value "stop"): the controller's
// kWarmInterruptionTag (solver/warm_pool.h), which this module cannot
// include. On EC2 a persistent Spot request with interruption behavior stop.
inline constexpr const char* kStopOnInterruptionTag = "gpuscaler.io/interruption-behavior";

// The value of tag `key`, or "" when there is none.
std::string TagOf(const std::map<std::string, std::string>& tags, const std::string& key);

// Sends an Auto Scaling call that answers nothing but its request id.
Status SendEmpty(AwsClient& client, const QueryParams& query);

// kCapacity when the activity's status message names a capacity error code
// ("… InsufficientInstanceCapacity - We currently do not have …"), else kConfig.
ErrorCategory ActivityCategory(const ScalingActivity& a);

// The offering an Auto Scaling error is reported against: among the
// request's offerings of a type the group launches (all when it names no
// types or none matches), the first whose type and zone `message` names,
// else the first.
std::string OfferingKeyFor(const LaunchRequest& r, const AutoScalingGroup& g, std::string_view message);

// An instance a group launched for `r`: priced as the request's offering of
// the same type, zone and capacity type when there is one.
Instance GroupInstance(const Ec2Instance& e, const LaunchRequest& r, const std::string& region);

// An instance EC2 listed: with the offering it was launched as when this
// provider launched it, else the offering EC2 describes; `pool` from its
// gpuscaler.io/pool tag.
Instance ToInstance(const Ec2Instance& e, const std::map<std::string, Offering>& launched, const std::string& region);

}  // namespace gpuscaler::cloud
