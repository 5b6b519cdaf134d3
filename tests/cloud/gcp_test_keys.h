// Test-only service-account keys: a fresh RSA key made with OpenSSL, its
// PEM forms, and RS256-signed JWTs, for driving the Compute Engine
// emulator's token endpoint.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpuscaler::testing {

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

}  // namespace gpuscaler::testing
