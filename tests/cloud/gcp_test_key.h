// Test-only Google service-account keys: a fresh RSA key made with OpenSSL
// (generated per test process: no key material is kept in the repository),
// its PEM forms, RS256-signed JWTs, and a key file (JSON, as the Cloud
// console writes it) around it.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpuscaler::cloud::testing {

class TestRsaKey {
 public:
  TestRsaKey() : key_(EVP_RSA_gen(2048), &EVP_PKEY_free) {
    if (!key_) throw std::runtime_error("EVP_RSA_gen failed");
  }
  std::string PublicPem() const { return Pem(false); }
  std::string PrivatePem() const { return Pem(true); }  // PKCS#8, as Google's key files hold it

  // "<b64url(header)>.<b64url(claims)>.<b64url(RS256 signature)>".
  std::string SignJwt(const std::string& header_json, const std::string& claims_json) const {
    const std::string signing_input = Base64Url(header_json) + "." + Base64Url(claims_json);
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    size_t len = 0;
    if (EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
        EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(signing_input.data()),
                       signing_input.size()) != 1) {
      throw std::runtime_error("EVP_DigestSign failed");
    }
    std::string sig(len, '\0');
    if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                       reinterpret_cast<const unsigned char*>(signing_input.data()),
                       signing_input.size()) != 1) {
      throw std::runtime_error("EVP_DigestSign failed");
    }
    sig.resize(len);
    return signing_input + "." + Base64Url(sig);
  }

  static std::string Base64Url(std::string_view bytes) {
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
      const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                         static_cast<uint8_t>(bytes[i + 2]);
      for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
    }
    if (i + 1 == bytes.size()) {
      const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
      out += kAlphabet[(v >> 18) & 63];
      out += kAlphabet[(v >> 12) & 63];
    } else if (i + 2 == bytes.size()) {
      const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
      out += kAlphabet[(v >> 18) & 63];
      out += kAlphabet[(v >> 12) & 63];
      out += kAlphabet[(v >> 6) & 63];
    }
    return out;
  }

 private:
  std::string Pem(bool private_key) const {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    const int ok =
        private_key ? PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr)
                    : PEM_write_bio_PUBKEY(bio.get(), key_.get());
    if (ok != 1) throw std::runtime_error("PEM_write failed");
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(n));
  }

  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key_;
};

// One key per test process (2048-bit generation takes tens of milliseconds).
inline const TestRsaKey& SharedTestRsaKey() {
  static const TestRsaKey key;
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
