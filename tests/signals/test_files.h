// Reads reference files from ../shared for the signals tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace gpuscaler::signals::testing {

inline std::filesystem::path ReferencePath(const std::string& relative) {
  return std::filesystem::path(GPUSCALER_SHARED_DIR) / "reference" / relative;
}

// The file's bytes, or empty when it does not exist.
inline std::optional<std::string> ReadReference(const std::string& relative) {
  std::ifstream in(ReferencePath(relative), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace gpuscaler::signals::testing

// Binds `var` to the reference file's text, or skips the test when absent.
#define GPUSCALER_READ_REFERENCE_OR_SKIP(var, relative)                                  \
  std::string var;                                                                       \
  if (auto contents_ = ::gpuscaler::signals::testing::ReadReference(relative)) {         \
    var = std::move(*contents_);                                                         \
  } else {                                                                               \
    GTEST_SKIP() << "reference file absent: "                                            \
                 << ::gpuscaler::signals::testing::ReferencePath(relative).string();     \
  }
