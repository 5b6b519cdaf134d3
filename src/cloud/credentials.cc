#include "gpuscaler/cloud/credentials.h"

namespace gpuscaler::cloud {

std::string Credentials::Redacted() const {
  std::string out = access_key_id.size() > 4 ? "…" + access_key_id.substr(access_key_id.size() - 4) : "…";
  out += session_token.empty() ? " session=no" : " session=yes";
  if (expiration) out += " expires=" + FormatRfc3339(*expiration);
  return out;
}

}  // namespace gpuscaler::cloud
