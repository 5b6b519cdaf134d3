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

// An instance EC2 listed: with the offering it was launched as when this
// provider launched it, else the offering EC2 describes; `pool` from its
// gpuscaler.io/pool tag.
Instance ToInstance(const Ec2Instance& e, const std::map<std::string, Offering>& launched, const std::string& region);

}  // namespace gpuscaler::cloud
