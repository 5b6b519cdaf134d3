// How the cloud module's caches of short-lived credentials (AWS web
// identity and IMDS credentials, Google access tokens) use what they hold: a
// cached credential is answered until kRefreshAhead before it expires; when
// fetching a new one fails, the cached one keeps being answered while it has
// not expired, and the next call tries again. Private to src/cloud; callers
// hold whatever lock guards their cache.
#pragma once

#include <optional>
#include <utility>

#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/cloud/gcp_credentials.h"

namespace gpuscaler::cloud {

// A credential is fetched again this long before it expires.
inline constexpr Seconds kRefreshAhead{300};

// When a credential expires; nullopt: never (long-term keys).
inline std::optional<WallTime> ExpiryOf(const Credentials& c) { return c.expiration; }
inline std::optional<WallTime> ExpiryOf(const AccessToken& t) { return t.expiry; }

// Whether `cached` may be answered without fetching a new one.
template <class Credential>
bool Fresh(const std::optional<Credential>& cached, WallTime now) {
  if (!cached) return false;
  const std::optional<WallTime> expiry = ExpiryOf(*cached);
  return !expiry || now + kRefreshAhead < *expiry;
}

// Whether `cached` is still valid at `now`.
template <class Credential>
bool Unexpired(const std::optional<Credential>& cached, WallTime now) {
  if (!cached) return false;
  const std::optional<WallTime> expiry = ExpiryOf(*cached);
  return !expiry || now < *expiry;
}

// The answer when fetching failed with `error`: the cached credential while
// it is unexpired, else `error`.
template <class Credential>
Result<Credential> CachedOr(const std::optional<Credential>& cached, Error error, WallTime now) {
  if (Unexpired(cached, now)) return *cached;
  return error;
}

// The answer to a fetch: a fetched credential replaces the cached one (and
// counts in *refreshes); a failed fetch answers CachedOr.
template <class Credential>
Result<Credential> KeepFetched(std::optional<Credential>& cached, Result<Credential> fetched, WallTime now,
                               int* refreshes) {
  if (!fetched) return CachedOr(cached, fetched.error(), now);
  ++*refreshes;
  cached = std::move(fetched).value();
  return *cached;
}

}  // namespace gpuscaler::cloud
