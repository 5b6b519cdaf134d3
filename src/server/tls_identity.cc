// Self-signed TLS identities with OpenSSL's C API (EVP keys, X509 builder).
#include "gpuscaler/server/tls_identity.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace gpuscaler::server {
namespace {

template <typename T, void (*Free)(T*)>
struct OpenSslDeleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO, BIO_free_all>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION, X509_EXTENSION_free>>;

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : std::string();
}

// Adds a v3 extension written in OpenSSL's config syntax ("CA:TRUE").
bool AddTlsExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext && X509_add_ext(cert, ext.get(), -1) == 1;
}

bool PlainAddress(const std::string& ip) {
  ASN1_OCTET_STRING* parsed = a2i_IPADDRESS(ip.c_str());
  if (parsed == nullptr) return false;
  ASN1_OCTET_STRING_free(parsed);
  return true;
}

}  // namespace

Result<TlsIdentity> MakeSelfSignedTlsIdentity(const std::vector<std::string>& dns_names,
                                              const std::vector<std::string>& ip_addresses, int days) {
  std::string san;
  for (const std::string& d : dns_names) san += (san.empty() ? "DNS:" : ",DNS:") + d;
  for (const std::string& ip : ip_addresses) {
    if (!PlainAddress(ip)) return Error::Config("TLS certificate: '" + ip + "' is not an IP address");
    san += (san.empty() ? "IP:" : ",IP:") + ip;
  }
  if (san.empty()) return Error::Config("TLS certificate: no name or address to issue it for");
  const std::string cn = !dns_names.empty() ? dns_names.front() : ip_addresses.front();

  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return Error::Internal("TLS certificate: cannot make an EC P-256 key");
  X509Ptr cert(X509_new());
  if (!cert) return Error::Internal("TLS certificate: X509_new failed");
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial_bytes[16];
  RAND_bytes(serial_bytes, sizeof serial_bytes);
  serial_bytes[0] &= 0x7f;  // positive
  BIGNUM* serial = BN_bin2bn(serial_bytes, sizeof serial_bytes, nullptr);
  BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert.get()));
  BN_free(serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("gpuscaler emulator"),
                             -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  if (!AddTlsExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddTlsExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !AddTlsExtension(cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddTlsExtension(cert.get(), NID_subject_key_identifier, "hash") ||
      !AddTlsExtension(cert.get(), NID_subject_alt_name, san)) {
    return Error::Internal("TLS certificate: cannot add its extensions");
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) return Error::Internal("TLS certificate: signing failed");

  TlsIdentity out;
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Error::Internal("TLS certificate: cannot write PEM");
  }
  out.certificate_pem = BioText(cert_bio.get());
  out.private_key_pem = BioText(key_bio.get());
  return out;
}

}  // namespace gpuscaler::server
