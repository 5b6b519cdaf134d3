// TempDir: a fresh folder under the system temp dir, removed with everything
// in it when the object goes away.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace gpuscaler::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gpuscaler-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `contents` to `name` inside the folder; returns the full path.
  std::string Write(const std::string& name, const std::string& contents) const {
    const std::filesystem::path p = path_ / name;
    std::ofstream(p, std::ios::binary | std::ios::trunc) << contents;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace gpuscaler::testing
