// A TLS identity (certificate and private key, PEM) for HttpServer's HTTPS
// mode, made on the spot: what the cloud emulator serves when no
// certificate is given, so that clients that insist on HTTPS (the Azure
// SDKs refuse bearer tokens over plain HTTP) can be pointed at it.
#pragma once

#include <string>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::server {

struct TlsIdentity {
  std::string certificate_pem;
  std::string private_key_pem;
};

// A fresh self-signed certificate (an EC P-256 key, SHA-256, valid from an
// hour ago for `days` days) for `dns_names` and `ip_addresses` (its
// subjectAltName; the first name, or address, is also its CN). It is its own
// CA (basicConstraints CA:TRUE, keyCertSign), so a client that adds its PEM
// to its trusted roots (curl --cacert, Node's NODE_EXTRA_CA_CERTS) accepts
// it. kInternal when OpenSSL fails; kConfig for an address that is not one.
Result<TlsIdentity> MakeSelfSignedTlsIdentity(const std::vector<std::string>& dns_names,
                                              const std::vector<std::string>& ip_addresses, int days = 30);

}  // namespace gpuscaler::server
