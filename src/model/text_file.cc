#include "gpuscaler/model/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace gpuscaler {

Result<std::string> ReadTextFile(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Error::NotFound(std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) text.append(buf, got);
  // A directory opens fine and fails on the first read (EISDIR).
  if (std::ferror(f.get())) return Error::NotFound(std::strerror(errno));
  return text;
}

}  // namespace gpuscaler
