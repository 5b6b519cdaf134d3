#include "gpuscaler/model/text_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

namespace gpuscaler {
namespace {

std::string ByteCount(uint64_t bytes) {
  std::string out = std::to_string(bytes) + " bytes";
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    out += " (" + std::to_string(bytes >> 20) + " MiB)";
  }
  return out;
}

Error TooLarge(const std::string& path, std::optional<uint64_t> size, uint64_t max_bytes) {
  return Error::Config(
      path + (size ? " is " + std::to_string(*size) + " bytes, more than the " : " has more than the ") +
      ByteCount(max_bytes) + " a configuration file may have");
}

// No `max_bytes`: no limit.
Result<std::string> ReadAll(const std::string& path, std::optional<uint64_t> max_bytes) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Error::NotFound(std::strerror(errno));
  struct stat st {};
  if (max_bytes && ::fstat(::fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) > *max_bytes) {
    return TooLarge(path, static_cast<uint64_t>(st.st_size), *max_bytes);
  }
  std::string text;
  char buf[1 << 16];
  size_t got;
  // One byte past the cap tells a file that grew since fstat, or a pipe, from
  // one exactly at the cap.
  const uint64_t stop_at = max_bytes ? *max_bytes + 1 : UINT64_MAX;
  while (text.size() < stop_at &&
         (got = std::fread(buf, 1, std::min<uint64_t>(sizeof buf, stop_at - text.size()), f.get())) > 0) {
    text.append(buf, got);
  }
  // A directory opens fine and fails on the first read (EISDIR).
  if (std::ferror(f.get())) return Error::NotFound(std::strerror(errno));
  if (max_bytes && text.size() > *max_bytes) return TooLarge(path, std::nullopt, *max_bytes);
  return text;
}

}  // namespace

Result<std::string> ReadTextFile(const std::string& path) { return ReadAll(path, std::nullopt); }

Result<std::string> ReadConfigFile(const std::string& path, uint64_t max_bytes) {
  return ReadAll(path, max_bytes);
}

}  // namespace gpuscaler
