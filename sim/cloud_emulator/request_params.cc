#include <algorithm>
#include <cstdlib>

#include "sim/cloud_emulator/emulator_impl.h"

namespace gpuscaler::sim {

bool Glob(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '*') {
    for (size_t i = 0; i <= text.size(); ++i) {
      if (Glob(pattern.substr(1), text.substr(i))) return true;
    }
    return false;
  }
  if (text.empty()) return false;
  if (pattern[0] != '?' && pattern[0] != text[0]) return false;
  return Glob(pattern.substr(1), text.substr(1));
}

bool AnyGlob(const std::vector<std::string>& patterns, std::string_view text) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return Glob(p, text); });
}

std::optional<bool> MatchesTagFilter(const cloud::Filter& f, const std::map<std::string, std::string>& tags) {
  if (f.name.rfind("tag:", 0) == 0) {
    auto t = tags.find(f.name.substr(4));
    return t != tags.end() && AnyGlob(f.values, t->second);
  }
  if (f.name == "tag-key") {
    return std::any_of(tags.begin(), tags.end(), [&](const auto& kv) { return AnyGlob(f.values, kv.first); });
  }
  return std::nullopt;
}

bool MatchesFilters(const std::vector<cloud::Filter>& filters, const std::map<std::string, std::string>& tags,
                    std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  for (const cloud::Filter& f : filters) {
    std::optional<bool> ok = MatchesTagFilter(f, tags);
    for (const auto& [name, value] : fields) {
      if (f.name == name) ok = AnyGlob(f.values, value);
    }
    if (!ok.value_or(false)) return false;
  }
  return true;
}

bool ParseInt(const std::string& s, int* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  *out = static_cast<int>(v);
  return true;
}

std::string PageToken(size_t offset) { return "emu-" + std::to_string(offset); }
bool ParsePageToken(const std::string& token, size_t* offset) {
  if (token.rfind("emu-", 0) != 0) return false;
  int v = 0;
  if (!ParseInt(token.substr(4), &v) || v < 0) return false;
  *offset = static_cast<size_t>(v);
  return true;
}

std::string CloudEmulator::Params::Get(const std::string& key) const { return cloud::FormValue(q, key).value_or(""); }

bool CloudEmulator::Params::Has(const std::string& key) const { return cloud::FormValue(q, key).has_value(); }

bool CloudEmulator::Params::HasPrefix(const std::string& prefix) const {
  return std::any_of(q.begin(), q.end(), [&](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
}

std::vector<std::string> CloudEmulator::Params::List(const std::string& prefix) const {
  std::vector<std::string> out;
  for (int n = 1;; ++n) {
    auto v = cloud::FormValue(q, prefix + "." + std::to_string(n));
    if (!v) break;
    out.push_back(*v);
  }
  return out;
}

std::vector<cloud::Filter> CloudEmulator::Params::Filters(const std::string& prefix, const std::string& values) const {
  std::vector<cloud::Filter> out;
  for (int n = 1;; ++n) {
    const std::string filter = prefix + "." + std::to_string(n) + ".";
    if (!Has(filter + "Name")) break;
    out.push_back({Get(filter + "Name"), List(filter + values)});
  }
  return out;
}

}  // namespace gpuscaler::sim
