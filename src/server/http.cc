#include "gpuscaler/server/http.h"

#include <nlohmann/json.hpp>

#include "gpuscaler/model/text.h"

namespace gpuscaler::server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string FindHeader(const std::vector<std::pair<std::string, std::string>>& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

}  // namespace

std::string HttpRequest::Header(std::string_view name) const { return FindHeader(headers, name); }

std::string HttpRequest::Param(const std::string& name, const std::string& fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

HttpRequest HttpRequest::Make(std::string method, std::string target, std::string body) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  ParseTarget(r.target, &r.path, &r.query);
  r.body = std::move(body);
  return r;
}

std::string HttpResponse::Header(std::string_view name) const { return FindHeader(headers, name); }

HttpResponse HttpResponse::Text(std::string body, int status) {
  return {.status = status, .content_type = "text/plain; charset=utf-8", .body = std::move(body)};
}

HttpResponse HttpResponse::Json(std::string body, int status) {
  return {.status = status, .content_type = "application/json", .body = std::move(body)};
}

HttpResponse HttpResponse::Html(std::string body, int status) {
  return {.status = status, .content_type = "text/html; charset=utf-8", .body = std::move(body)};
}

HttpResponse HttpResponse::Error(int status, std::string_view message) {
  // Messages often quote the request (a path with %FF in it): replace bad
  // UTF-8 rather than let nlohmann throw on the I/O thread.
  return Json(nlohmann::json{{"error", std::string(message)}}.dump(-1, ' ', false,
                                                                   nlohmann::json::error_handler_t::replace),
              status);
}

std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int hi = HexValue(text[i + 1]);
      const int lo = HexValue(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

void ParseTarget(std::string_view target, std::string* path, std::map<std::string, std::string>* query) {
  const size_t q = target.find('?');
  *path = PercentDecode(target.substr(0, q), false);
  query->clear();
  if (q == std::string_view::npos) return;
  std::string_view rest = target.substr(q + 1);
  if (const size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  for (std::string_view pair : Split(rest, '&')) {
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    (*query)[std::move(key)] = std::move(value);
  }
}

}  // namespace gpuscaler::server
