// FakeTransport: answers from a handler, records every request.
#pragma once

#include <functional>
#include <vector>

#include "gpuscaler/cloud/transport.h"

namespace gpuscaler::cloud::testing {

class FakeTransport final : public Transport {
 public:
  std::vector<TransportRequest> requests;
  std::function<Result<TransportResponse>(const TransportRequest&)> handler;

  Result<TransportResponse> Send(const TransportRequest& request) override {
    requests.push_back(request);
    if (!handler) return Error::Transient("fake transport: no handler");
    return handler(request);
  }
};

}  // namespace gpuscaler::cloud::testing
