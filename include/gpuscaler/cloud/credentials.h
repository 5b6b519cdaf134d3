// AWS credentials: the key pair (plus session token for temporary
// credentials) that SigV4 signs with, and where they come from.
//
// Secrets never leave this module as text: Credentials has no stream
// operator, errors name the source (file, variable, endpoint) and never a
// value, and Redacted() is the only printable form. Values only; the
// providers below are not thread-safe unless they say so.
#pragma once

#include <optional>
#include <string>

#include "gpuscaler/model/time.h"

namespace gpuscaler::cloud {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;          // empty for long-term keys
  std::optional<WallTime> expiration;  // unset: does not expire

  bool empty() const { return access_key_id.empty() || secret_access_key.empty(); }
  // "AKID…(4 last chars) session=yes expires=…": safe for logs.
  std::string Redacted() const;
};

}  // namespace gpuscaler::cloud
