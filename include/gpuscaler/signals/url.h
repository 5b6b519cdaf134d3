// Percent-encoding for the URLs the signal clients build (RFC 3986).
#pragma once

#include <string>
#include <string_view>

namespace gpuscaler {

// Keeps the unreserved characters (A-Z a-z 0-9 - . _ ~) and writes every
// other byte as %XX: "/" -> "%2F", " " -> "%20", "%" -> "%25". Safe both for
// one path segment and for a query-string component.
std::string PercentEncode(std::string_view text);

}  // namespace gpuscaler
