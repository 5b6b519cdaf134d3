// Certificates made in the test (OpenSSL API, no CLI, nothing on disk unless
// the test writes it): a throw-away CA and a server certificate it signs, for
// HTTPS tests against FixtureHttpServer.
#pragma once

#include <string>
#include <vector>

namespace gpuscaler::testing {

struct TestPki {
  std::string ca_cert_pem;      // trust this (HttpClientOptions::ca_file) to accept the server
  std::string server_cert_pem;  // signed by the CA
  std::string server_key_pem;
};

// A P-256 CA ("gpuscaler test CA") and a server certificate for the given
// DNS names and IP addresses (subjectAltName), valid from an hour ago for a
// day. Aborts on an OpenSSL failure.
TestPki MakeTestPki(const std::vector<std::string>& dns_names, const std::vector<std::string>& ip_addresses);

}  // namespace gpuscaler::testing
