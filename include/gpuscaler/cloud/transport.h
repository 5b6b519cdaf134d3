// The HTTP seam of the AWS code: one blocking request/response exchange.
//
// AwsProvider, the STS and IMDS credential providers use it. Real: a thin
// adapter over net::Fetch (src/cloud/net_transport.cc). Tests: a fake, or the
// cloud emulator's handler called in process (no sockets). Implementations
// say whether they are thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct TransportRequest {
  std::string method;  // "POST"
  std::string url;     // "https://ec2.us-east-1.amazonaws.com/"
  HeaderList headers;  // in order; names as sent
  std::string body;
};

struct TransportResponse {
  int status = 0;
  HeaderList headers;
  std::string body;
};

// First value of header `name` (case-insensitive), or "".
std::string HeaderValue(const HeaderList& headers, std::string_view name);

class Transport {
 public:
  virtual ~Transport() = default;
  // An answer of any HTTP status is a success here; an Error means no answer
  // (connect failure, timeout: kTransient). Errors never carry the request's
  // headers or body (they hold signatures and tokens).
  virtual Result<TransportResponse> Send(const TransportRequest& request) = 0;
};

}  // namespace gpuscaler::cloud
