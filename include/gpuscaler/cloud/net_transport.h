// The real Transport: net::Fetch (blocking HTTP/1.1 client, http and https).
// Thread-safe (each call is independent).
#pragma once

#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/net/http_client.h"

namespace gpuscaler::cloud {

class NetTransport final : public Transport {
 public:
  explicit NetTransport(net::HttpClientOptions options = {}) : options_(std::move(options)) {}
  // Our Host header (the one SigV4 signed) replaces the client's default.
  Result<TransportResponse> Send(const TransportRequest& request) override;

 private:
  net::HttpClientOptions options_;
};

}  // namespace gpuscaler::cloud
