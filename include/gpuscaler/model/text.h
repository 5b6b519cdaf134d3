// Small text helpers shared by every module: trimming, ASCII case-insensitive
// comparison, splitting, lowercase hex, and name tables for enums.
//
// Byte-based and independent of the C locale: only ASCII characters are
// white space or letters; bytes >= 0x80 are ordinary bytes. Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscaler {

// `text` without its leading and trailing ASCII white space: space, '\t',
// '\n', '\v', '\f' and '\r' (the set std::isspace accepts in the "C" locale).
// The result views `text`.
std::string_view Trim(std::string_view text);

// True when `a` and `b` are equal up to the case of ASCII letters
// ("Content-Length" and "content-length"); other bytes compare exactly.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The pieces of `text` between occurrences of `separator`, in order: n
// separators give n + 1 pieces, empty ones included ("a,,b" -> "a", "", "b";
// "" -> one empty piece). The pieces view `text`.
std::vector<std::string_view> Split(std::string_view text, char separator);

// Two lowercase hex digits per byte, most significant first:
// "\x01\xab" -> "01ab".
std::string HexLower(std::string_view bytes);

// One entry of a table naming the values of an enum, so that one table
// serves both directions (to text and back). A value may have several names:
// NameOf gives the first, ValueNamed accepts each.
template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

// The first name of `value` in `names`, or `fallback` when it has none.
template <typename E, size_t N>
constexpr std::string_view NameOf(E value, const EnumName<E> (&names)[N], std::string_view fallback = {}) {
  for (const EnumName<E>& n : names) {
    if (n.value == value) return n.name;
  }
  return fallback;
}

// The value called `name` in `names` (exact, case-sensitive), or nullopt.
template <typename E, size_t N>
constexpr std::optional<E> ValueNamed(std::string_view name, const EnumName<E> (&names)[N]) {
  for (const EnumName<E>& n : names) {
    if (n.name == name) return n.value;
  }
  return std::nullopt;
}

}  // namespace gpuscaler
