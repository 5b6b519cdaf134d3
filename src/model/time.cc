#include "gpuscaler/model/time.h"

#include <cctype>
#include <cstdio>

namespace gpuscaler {

std::string FormatRfc3339(WallTime t) {
  // Not strftime("%Y"): glibc writes year 226 as "226", which no RFC 3339
  // reader (ours included) accepts; the year is always four digits here.
  using namespace std::chrono;
  const sys_days day = floor<days>(t);
  const year_month_day ymd(day);
  const hh_mm_ss<seconds> hms(t - day);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

namespace {

bool ParseFixedInt(const std::string& s, size_t pos, size_t len, int* out) {
  if (pos + len > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + len; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool ParseRfc3339(const std::string& text, WallTime* out) {
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!ParseFixedInt(text, 0, 4, &y) || text.size() < 10 || text[4] != '-' ||
      !ParseFixedInt(text, 5, 2, &mo) || text[7] != '-' || !ParseFixedInt(text, 8, 2, &d)) {
    return false;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return false;
  size_t pos = 10;
  int offset_s = 0;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != ' ') return false;
    if (!ParseFixedInt(text, pos + 1, 2, &h) || text.size() < pos + 9 || text[pos + 3] != ':' ||
        !ParseFixedInt(text, pos + 4, 2, &mi) || text[pos + 6] != ':' ||
        !ParseFixedInt(text, pos + 7, 2, &sec)) {
      return false;
    }
    if (h > 23 || mi > 59 || sec > 60) return false;
    pos += 9;
    if (pos < text.size() && text[pos] == '.') {  // fractional seconds: dropped
      ++pos;
      while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    }
    if (pos < text.size()) {
      if (text[pos] == 'Z' && pos + 1 == text.size()) {
        // UTC
      } else if ((text[pos] == '+' || text[pos] == '-') && text.size() == pos + 6 &&
                 text[pos + 3] == ':') {
        int oh, om;
        if (!ParseFixedInt(text, pos + 1, 2, &oh) || !ParseFixedInt(text, pos + 4, 2, &om)) {
          return false;
        }
        offset_s = (oh * 3600 + om * 60) * (text[pos] == '+' ? 1 : -1);
      } else {
        return false;
      }
    }
  }
  using namespace std::chrono;
  year_month_day ymd{year(y), month(static_cast<unsigned>(mo)), day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return false;
  const WallTime t = sys_days(ymd) + hours(h) + minutes(mi) + Seconds(sec) - Seconds(offset_s);
  // An offset can carry 0000-01-01 or 9999-12-31 out of the four-digit
  // years RFC 3339 writes; such an instant could not be written back.
  static const WallTime kFirst = sys_days(year(0) / 1 / 1);
  static const WallTime kLast = sys_days(year(9999) / 12 / 31) + hours(23) + minutes(59) + Seconds(59);
  if (t < kFirst || t > kLast) return false;
  *out = t;
  return true;
}

bool ParseDuration(const std::string& text, Seconds* out) {
  if (text.empty()) return false;
  bool all_digits = true;
  for (char c : text) all_digits = all_digits && std::isdigit(static_cast<unsigned char>(c));
  if (all_digits) {
    if (text.size() > 12) return false;
    *out = Seconds(std::stoll(text));
    return true;
  }
  long long total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i - start > 12) return false;
    long long n = std::stoll(text.substr(start, i - start));
    long long unit_ms;
    if (text.compare(i, 2, "ms") == 0) {
      unit_ms = 1;
      i += 2;
    } else if (i < text.size()) {
      switch (text[i]) {
        case 's': unit_ms = 1000; break;
        case 'm': unit_ms = 60'000; break;
        case 'h': unit_ms = 3'600'000; break;
        case 'd': unit_ms = 86'400'000; break;
        default: return false;
      }
      ++i;
    } else {
      return false;  // "1h30": a trailing number without a unit is ambiguous
    }
    total_ms += n * unit_ms;
  }
  *out = Seconds(total_ms / 1000);
  return true;
}

std::string FormatDuration(Seconds d) {
  long long s = d.count();
  if (s == 0) return "0s";
  std::string out;
  if (s < 0) {
    out = "-";
    s = -s;
  }
  const long long h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (sec) out += std::to_string(sec) + "s";
  return out;
}

}  // namespace gpuscaler
