// A fresh RSA key pair for GCP credential tests, and a service-account key
// file (JSON, as the Cloud console writes it) around it. Generated per test
// process: no key material is kept in the repository.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace gpuscaler::cloud::testing {

struct TestRsaKey {
  std::string private_pem;  // PKCS#8
  std::string public_pem;   // SubjectPublicKeyInfo
};

inline TestRsaKey MakeTestRsaKey() {
  TestRsaKey out;
  EVP_PKEY* pkey = EVP_RSA_gen(2048);
  if (pkey == nullptr) return out;
  auto to_string = [](BIO* bio) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string s(data, static_cast<size_t>(n));
    BIO_free(bio);
    return s;
  };
  BIO* priv = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  out.private_pem = to_string(priv);
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(pub, pkey);
  out.public_pem = to_string(pub);
  EVP_PKEY_free(pkey);
  return out;
}

// One key per test process (2048-bit generation takes tens of milliseconds).
inline const TestRsaKey& SharedTestRsaKey() {
  static const TestRsaKey key = MakeTestRsaKey();
  return key;
}

inline std::string ServiceAccountKeyJson(const std::string& token_uri, const std::string& private_pem,
                                         const std::string& project = "gpu-project") {
  return nlohmann::json{
      {"type", "service_account"},
      {"project_id", project},
      {"private_key_id", "0123456789abcdef0123456789abcdef01234567"},
      {"private_key", private_pem},
      {"client_email", "gpuscaler@" + project + ".iam.gserviceaccount.com"},
      {"client_id", "112233445566778899000"},
      {"auth_uri", "https://accounts.google.com/o/oauth2/auth"},
      {"token_uri", token_uri},
      {"auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"},
      {"client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/gpuscaler%40" + project +
                                   ".iam.gserviceaccount.com"},
      {"universe_domain", "googleapis.com"}}
      .dump(2);
}

// True when `signature` is a valid RS256 signature of `data` by the key.
inline bool VerifyRs256(const std::string& public_pem, const std::string& data,
                        const std::string& signature) {
  BIO* bio = BIO_new_mem_buf(public_pem.data(), static_cast<int>(public_pem.size()));
  EVP_PKEY* pkey = PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (pkey == nullptr) return false;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, pkey) == 1 &&
      EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  return ok;
}

}  // namespace gpuscaler::cloud::testing
