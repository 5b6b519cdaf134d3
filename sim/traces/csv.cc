#include "sim/traces/csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "gpuscaler/model/text.h"
#include "gpuscaler/model/time.h"

namespace gpuscaler::sim::csv {

Tokenizer::Tokenizer(std::string_view text) : text_(text) {
  if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
}

bool Tokenizer::Next() {
  fields_.clear();
  spans_.clear();
  scratch_.clear();
  if (!error_.empty()) return false;
  const size_t n = text_.size();
  // Blank lines carry no record.
  while (pos_ < n && (text_[pos_] == '\n' || text_[pos_] == '\r')) {
    if (text_[pos_] == '\r' && pos_ + 1 < n && text_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++next_line_;
  }
  if (pos_ >= n) return false;
  record_line_ = next_line_;
  while (true) {
    if (pos_ < n && text_[pos_] == '"') {
      ++pos_;
      const size_t begin = scratch_.size();
      while (true) {
        const size_t quote = text_.find('"', pos_);
        if (quote == std::string_view::npos) {
          error_ = "unterminated quoted field";
          return false;
        }
        for (size_t i = pos_; i < quote; ++i) {
          if (text_[i] == '\n') ++next_line_;
        }
        scratch_.append(text_.data() + pos_, quote - pos_);
        pos_ = quote + 1;
        if (pos_ < n && text_[pos_] == '"') {
          scratch_.push_back('"');
          ++pos_;
          continue;
        }
        break;
      }
      spans_.push_back({true, begin, scratch_.size() - begin});
    } else {
      // A quote inside an unquoted field is kept as a literal character.
      const size_t begin = pos_;
      while (pos_ < n) {
        const char c = text_[pos_];
        if (c == ',' || c == '\n' || c == '\r') break;
        ++pos_;
      }
      spans_.push_back({false, begin, pos_ - begin});
    }
    if (pos_ >= n) break;
    const char c = text_[pos_];
    if (c == ',') {
      ++pos_;
      continue;
    }
    if (c == '\r' || c == '\n') {
      ++pos_;
      if (c == '\r' && pos_ < n && text_[pos_] == '\n') ++pos_;
      ++next_line_;
      break;
    }
    error_ = "unexpected character after a closing quote: '";
    error_.push_back(c);
    error_.push_back('\'');
    return false;
  }
  fields_.reserve(spans_.size());
  for (const Span& s : spans_) {
    fields_.push_back(s.in_scratch ? std::string_view(scratch_).substr(s.begin, s.size)
                                   : text_.substr(s.begin, s.size));
  }
  return true;
}

Result<Table> Table::Open(std::string_view text, std::string file_name) {
  Table table(text, std::move(file_name));
  if (!table.tok_.Next()) {
    const std::string why = table.tok_.error().empty() ? "empty file, expected a header row" : table.tok_.error();
    return Error::InvalidInput(table.file_name_ + ":1: " + why);
  }
  for (std::string_view name : table.tok_.fields()) {
    std::string column(name);
    for (const std::string& seen : table.header_) {
      if (seen == column) {
        return Error::InvalidInput(table.file_name_ + ":" + std::to_string(table.tok_.line()) +
                                   ": duplicate column '" + column + "'");
      }
    }
    table.header_.push_back(std::move(column));
  }
  return table;
}

int Table::Find(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

int Table::Require(std::string_view name) {
  const int col = Find(name);
  if (col < 0) FailHeader("missing column '" + std::string(name) + "'");
  return col;
}

void Table::FailHeader(std::string_view message) {
  if (!error_) error_ = Error::InvalidInput(file_name_ + ":1: " + std::string(message));
}

size_t Table::EstimatedRows() const {
  return static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n'));
}

bool Table::Next() {
  if (error_) return false;
  if (!tok_.Next()) {
    if (!tok_.error().empty()) {
      error_ = Error::InvalidInput(file_name_ + ":" + std::to_string(tok_.line()) + ": " + tok_.error());
    }
    return false;
  }
  ++rows_read_;
  if (tok_.fields().size() != header_.size()) {
    error_ = Error::InvalidInput(file_name_ + ":" + std::to_string(tok_.line()) + ": expected " +
                                 std::to_string(header_.size()) + " fields, got " +
                                 std::to_string(tok_.fields().size()));
    return false;
  }
  return true;
}

std::string_view Table::Field(int col) const {
  if (col < 0 || static_cast<size_t>(col) >= tok_.fields().size()) return {};
  return tok_.fields()[col];
}

void Table::Fail(int col, std::string_view message) {
  if (error_) return;
  std::string m = file_name_ + ":" + std::to_string(tok_.line()) + ": ";
  if (col >= 0 && static_cast<size_t>(col) < header_.size()) m += "column '" + header_[col] + "': ";
  m += message;
  error_ = Error::InvalidInput(std::move(m));
}

void Table::FailBadValue(int col, std::string_view what) {
  Fail(col, Quote(Field(col)) + " is not " + std::string(what));
}

template <typename T>
T Table::Parse(int col, std::string_view what) {
  const std::string_view s = Trim(Field(col));
  T v = 0;
  const char* begin = s.data();
  const char* end = s.data() + s.size();
  if (!s.empty() && *begin == '+') ++begin;
  const auto r = std::from_chars(begin, end, v);
  if (s.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(static_cast<double>(v))) {
    FailBadValue(col, what);
    return 0;
  }
  return v;
}

int64_t Table::Int(int col) { return Parse<int64_t>(col, "an integer"); }

double Table::Double(int col) { return Parse<double>(col, "a number"); }

namespace {

std::string RangeText(double lo, double hi) {
  std::ostringstream out;
  out << std::setprecision(15) << '[' << lo << ", " << hi << ']';
  return out.str();
}

}  // namespace

int64_t Table::IntIn(int col, int64_t lo, int64_t hi) {
  const int64_t v = Int(col);
  if (failed()) return 0;
  if (v < lo || v > hi) {
    Fail(col, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + Quote(Field(col)));
    return 0;
  }
  return v;
}

double Table::NumberIn(int col, double lo, double hi) {
  const double v = Double(col);
  if (failed()) return 0;
  if (!(v >= lo && v <= hi)) {
    Fail(col, "must be in " + RangeText(lo, hi) + ", got " + Quote(Field(col)));
    return 0;
  }
  return v;
}

bool Table::Bool(int col) {
  const std::string_view s = Trim(Field(col));
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (lower == "true" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "0" || lower == "no") return false;
  FailBadValue(col, "a boolean (true/false)");
  return false;
}

int64_t Table::Timestamp(int col) {
  WallTime t;
  if (!ParseRfc3339(std::string(Trim(Field(col))), &t)) {
    FailBadValue(col, "an RFC 3339 time");
    return 0;
  }
  return ToUnixSeconds(t);
}

int64_t Table::Round(double v) {
  // Beyond ±2^53 s (285 million years) a trace is garbage anyway; clamp so
  // the conversion is defined.
  constexpr double kLimit = 9.0e15;
  if (v > kLimit) v = kLimit;
  if (v < -kLimit) v = -kLimit;
  return std::llround(v);
}

std::string Quote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('\'');
  out.append(value);
  out.push_back('\'');
  return out;
}

std::vector<std::string> SplitList(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = Trim(text.substr(start, end - start));
    if (!part.empty()) out.emplace_back(part);
    start = end + 1;
  }
  return out;
}

}  // namespace gpuscaler::sim::csv
