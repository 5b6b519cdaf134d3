#include "gpuscaler/cli/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "gpuscaler/model/json_writer.h"

namespace gpuscaler {

std::string JsonEscape(const std::string& text) {
  // The JSON writer's escaping (nlohmann's, with invalid UTF-8 as U+FFFD, so
  // a log line stays valid JSON), without its quotes.
  JsonWriter writer;
  writer.String(text);
  std::string quoted = std::move(writer).Take();
  return quoted.substr(1, quoted.size() - 2);
}

namespace {

// %v (the message) must be escaped for JSON; spdlog's pattern language cannot
// do that, so a custom flag does it.
class JsonMessageFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string escaped = JsonEscape(std::string(msg.payload.data(), msg.payload.size()));
    dest.append(escaped.data(), escaped.data() + escaped.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

Status SetupLogging(const std::string& format, const std::string& level) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return Error::Config("--log-level: unknown level '" + level +
                         "' (trace, debug, info, warn, error, off)");
  }
  if (format != "auto" && format != "text" && format != "json") {
    return Error::Config("--log-format: unknown format '" + format + "' (text, json)");
  }
  auto logger = spdlog::stderr_color_mt("gpuscaler");
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"ts":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","logger":"%n","msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %v");
  }
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
  return {};
}

}  // namespace gpuscaler
