#include "gpuscaler/model/json_writer.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace gpuscaler {

void JsonWriter::BeforeValue() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_.push_back(',');
    has_items_.back() = true;
  }
}

void JsonWriter::Open(char bracket) {
  BeforeValue();
  out_.push_back(bracket);
  has_items_.push_back(false);
}

void JsonWriter::Close(char bracket) {
  has_items_.pop_back();
  out_.push_back(bracket);
}

JsonWriter& JsonWriter::BeginObject() {
  Open('{');
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  Close('}');
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Open('[');
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  Close(']');
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  BeforeValue();
  Escaped(key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::PlainKey(std::string_view key) {
  assert(std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }));
  BeforeValue();
  out_.push_back('"');
  out_.append(key);
  out_.append("\":");
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view value) {
  BeforeValue();
  Escaped(value);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::Double(double value) {
  BeforeValue();
  if (!std::isfinite(value)) {
    out_.append("null");
    return *this;
  }
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, value);
  const std::string_view digits(buf, static_cast<size_t>(r.ptr - buf));
  out_.append(digits);
  // nlohmann writes 3.0 for an integral double, so a reader keeps its type.
  if (digits.find_first_of(".e") == std::string_view::npos) out_.append(".0");
  return *this;
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_.append(value ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_.append("null");
  return *this;
}

JsonWriter& JsonWriter::StringArray(const std::vector<std::string>& values) {
  BeginArray();
  for (const std::string& v : values) String(v);
  return EndArray();
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
size_t Utf8Length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

void JsonWriter::Escaped(std::string_view s) {
  out_.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    // Runs of plain ASCII are copied in one go: almost every id and reason.
    size_t run = i;
    while (run < s.size()) {
      const unsigned char c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80) break;
      ++run;
    }
    out_.append(s.substr(i, run - i));
    i = run;
    if (i == s.size()) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out_.append("\\\""); ++i; continue;
      case '\\': out_.append("\\\\"); ++i; continue;
      case '\b': out_.append("\\b"); ++i; continue;
      case '\f': out_.append("\\f"); ++i; continue;
      case '\n': out_.append("\\n"); ++i; continue;
      case '\r': out_.append("\\r"); ++i; continue;
      case '\t': out_.append("\\t"); ++i; continue;
      default: break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out_.append(buf);
      ++i;
      continue;
    }
    const size_t n = Utf8Length(s, i);
    if (n == 0) {
      out_.append("\xEF\xBF\xBD");  // U+FFFD for one invalid byte
      ++i;
    } else {
      out_.append(s.substr(i, n));
      i += n;
    }
  }
  out_.push_back('"');
}

}  // namespace gpuscaler
