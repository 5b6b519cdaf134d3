#include "gpuscaler/store/database_url.h"

#include <utility>

namespace gpuscaler {
namespace {

std::optional<std::string>& DefaultPassword() {
  static std::optional<std::string> password;
  return password;
}

}  // namespace

void SetDefaultDatabasePassword(std::optional<std::string> password) {
  DefaultPassword() = std::move(password);
}

std::optional<std::string> DefaultDatabasePassword() { return DefaultPassword(); }

bool IsPostgresUrl(std::string_view db) {
  return db.substr(0, 13) == "postgresql://" || db.substr(0, 11) == "postgres://";
}

std::string RedactDatabaseUrl(std::string_view db) {
  if (!IsPostgresUrl(db)) return std::string(db);
  std::string url(db);
  const size_t scheme_end = url.find("://") + 3;
  // user:password@ in the authority (before the path, query or fragment).
  const size_t authority_end = url.find_first_of("/?#", scheme_end);
  const size_t at = url.rfind('@', authority_end == std::string::npos ? url.size() : authority_end);
  if (at != std::string::npos && at >= scheme_end) {
    const size_t colon = url.find(':', scheme_end);
    if (colon != std::string::npos && colon < at) url.replace(colon + 1, at - colon - 1, "***");
  }
  // password=… among the query parameters.
  for (size_t q = url.find('?'); q != std::string::npos; q = url.find('&', q + 1)) {
    const size_t name = q + 1;
    if (url.compare(name, 9, "password=") != 0) continue;
    const size_t value = name + 9;
    const size_t end = url.find_first_of("&#", value);
    url.replace(value, (end == std::string::npos ? url.size() : end) - value, "***");
  }
  return url;
}

}  // namespace gpuscaler
