// Process-wide logging setup (spdlog). Human-readable lines on a terminal,
// JSON lines (one object per line, for Kubernetes log collectors) with
// --log-format json. Logs go to stderr; stdout is kept for command output.
#pragma once

#include <string>

#include "gpuscaler/status.h"

namespace gpuscaler {

enum class LogFormat { kAuto, kText, kJson };

// `format`: "auto" (text), "text" or "json". `level`: trace, debug, info,
// warn, error, off. kConfig error on an unknown value.
Status SetupLogging(const std::string& format, const std::string& level);

// Escapes `text` for use inside a JSON string literal (no quotes added).
std::string JsonEscape(const std::string& text);

}  // namespace gpuscaler
