#include "gpuscaler/server/router.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <nlohmann/json.hpp>

namespace gpuscaler::server {

namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return v;
  }
  return "";
}

std::string HttpRequest::Param(const std::string& name, const std::string& fallback) const {
  auto it = query.find(name);
  return it == query.end() ? fallback : it->second;
}

HttpResponse HttpResponse::Text(std::string body, int status) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Json(std::string body, int status) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Html(std::string body) {
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Error(int status, std::string_view message) {
  return Json(nlohmann::json{{"error", std::string(message)}}.dump(), status);
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
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value = eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    (*query)[std::move(key)] = std::move(value);
  }
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte of the longer string is read whatever the contents, so the
  // time tells only the lengths (tokens have a public, fixed length anyway).
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

Router& Router::Add(std::string method, std::string path, bool prefix, bool mutating, Handler h) {
  routes_.push_back({std::move(method), std::move(path), prefix, mutating, std::move(h)});
  return *this;
}

HttpResponse Router::Handle(const HttpRequest& request) const {
  const bool head = request.method == "HEAD";
  const std::string& method = head ? std::string("GET") : request.method;
  std::string allow;
  const Route* match = nullptr;
  for (const Route& r : routes_) {
    const bool path_ok = r.prefix ? request.path.rfind(r.path, 0) == 0 : request.path == r.path;
    if (!path_ok) continue;
    if (r.method == method) {
      match = &r;
      break;
    }
    if (allow.find(r.method) == std::string::npos) allow += (allow.empty() ? "" : ", ") + r.method;
  }
  if (match == nullptr) {
    if (allow.empty()) return HttpResponse::Error(404, "no such path: " + request.path);
    HttpResponse r = HttpResponse::Error(405, request.method + " is not allowed on " + request.path);
    if (allow.find("GET") != std::string::npos) allow += ", HEAD";
    r.headers.emplace_back("Allow", allow);
    return r;
  }
  if (match->mutating) {
    if (token_.empty()) return HttpResponse::Error(403, "mutating endpoints are disabled: no API token is configured");
    const std::string auth = request.Header("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    const bool ok = auth.size() > kBearer.size() && IEquals(auth.substr(0, kBearer.size()), kBearer) &&
                    ConstantTimeEquals(std::string_view(auth).substr(kBearer.size()), token_);
    if (!ok) {
      HttpResponse r = HttpResponse::Error(401, "a valid bearer token is required");
      r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"gpuscaler\"");
      return r;
    }
  }
  HttpResponse response;
  try {
    response = match->handler(request);
  } catch (const std::exception& e) {
    spdlog::error("http {} {}: handler failed: {}", request.method, request.path, e.what());
    response = HttpResponse::Error(500, "internal error");
  } catch (...) {
    spdlog::error("http {} {}: handler failed", request.method, request.path);
    response = HttpResponse::Error(500, "internal error");
  }
  if (head) response.body.clear();
  return response;
}

}  // namespace gpuscaler::server
