#include "gpuscaler/signals/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>

#include "gpuscaler/model/text.h"

namespace gpuscaler::signals {

const std::string* Sample::FindLabel(std::string_view label_name) const {
  for (const Label& l : labels) {
    if (l.name == label_name) return &l.value;
  }
  return nullptr;
}

std::string_view Sample::LabelOr(std::string_view label_name, std::string_view fallback) const {
  const std::string* v = FindLabel(label_name);
  return v != nullptr ? std::string_view(*v) : fallback;
}

namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsMetricNameStart(char c) { return IsNameStart(c) || c == ':'; }
bool IsMetricNameChar(char c) { return IsNameChar(c) || c == ':'; }

// # TYPE names of both formats, and those only OpenMetrics has.
constexpr EnumName<MetricType> kTypeNames[] = {
    {MetricType::kCounter, "counter"}, {MetricType::kGauge, "gauge"},     {MetricType::kHistogram, "histogram"},
    {MetricType::kSummary, "summary"}, {MetricType::kUntyped, "untyped"}, {MetricType::kUntyped, "unknown"}};
constexpr EnumName<MetricType> kOpenMetricsOnlyTypeNames[] = {
    {MetricType::kInfo, "info"}, {MetricType::kStateSet, "stateset"}, {MetricType::kGaugeHistogram, "gaugehistogram"}};

// A cursor over one line. Errors are reported as a message; the caller adds
// the line number.
class LineParser {
 public:
  // `pool` holds Label objects reused across lines (their strings keep their
  // capacity), so a line's labels cost no allocation until the final copy.
  LineParser(std::string_view line, ExpositionFormat format, std::vector<Label>* pool)
      : s_(line), format_(format), pool_(pool) {}

  enum class Kind { kNothing, kSample, kEof };

  // Parses the line. On kSample fills *sample; HELP/TYPE go to *exposition.
  // Returns false with *error set when the line is malformed.
  bool Parse(Exposition* exposition, Sample* sample, Kind* kind, std::string* error) {
    error_ = error;
    *kind = Kind::kNothing;
    SkipBlanks();
    if (AtEnd()) return true;
    if (Peek() == '#') {
      ++i_;
      return ParseComment(exposition, kind);
    }
    if (!ParseSample(sample)) return false;
    *kind = Kind::kSample;
    return true;
  }

 private:
  bool AtEnd() const { return i_ >= s_.size(); }
  char Peek() const { return s_[i_]; }
  void SkipBlanks() {
    while (!AtEnd() && IsBlank(Peek())) ++i_;
  }
  bool Fail(std::string message) {
    *error_ = std::move(message);
    return false;
  }
  std::string_view Token() {
    size_t start = i_;
    while (!AtEnd() && !IsBlank(Peek())) ++i_;
    return s_.substr(start, i_ - start);
  }
  std::string_view MetricName() { return Name(IsMetricNameStart, IsMetricNameChar); }
  std::string_view LabelName() { return Name(IsNameStart, IsNameChar); }
  // A name whose first character satisfies `first` and the others `rest`;
  // empty (nothing consumed) when there is none here.
  std::string_view Name(bool (*first)(char), bool (*rest)(char)) {
    size_t start = i_;
    if (AtEnd() || !first(Peek())) return {};
    ++i_;
    while (!AtEnd() && rest(Peek())) ++i_;
    return s_.substr(start, i_ - start);
  }

  bool ParseComment(Exposition* exposition, Kind* kind) {
    SkipBlanks();
    std::string_view keyword = Token();
    bool is_help = keyword == "HELP";
    bool is_type = keyword == "TYPE";
    bool is_unit = keyword == "UNIT" && format_ == ExpositionFormat::kOpenMetrics;
    if (keyword == "EOF" && format_ == ExpositionFormat::kOpenMetrics) {
      SkipBlanks();
      if (AtEnd()) *kind = Kind::kEof;
      return true;
    }
    if (!is_help && !is_type && !is_unit) return true;  // a plain comment
    SkipBlanks();
    std::string_view name = MetricName();
    if (name.empty()) return Fail(std::string("# ") + std::string(keyword) + " without a metric name");
    if (!AtEnd() && !IsBlank(Peek())) {
      return Fail("invalid metric name in # " + std::string(keyword));
    }
    SkipBlanks();
    std::string_view rest = s_.substr(i_);
    if (is_unit) return true;
    if (is_help) {
      std::string text;
      text.reserve(rest.size());
      for (size_t k = 0; k < rest.size(); ++k) {
        if (rest[k] == '\\' && k + 1 < rest.size() && (rest[k + 1] == '\\' || rest[k + 1] == 'n')) {
          text.push_back(rest[k + 1] == 'n' ? '\n' : '\\');
          ++k;
        } else {
          text.push_back(rest[k]);
        }
      }
      while (!text.empty() && IsBlank(text.back())) text.pop_back();
      exposition->help[std::string(name)] = std::move(text);
      return true;
    }
    while (!rest.empty() && IsBlank(rest.back())) rest.remove_suffix(1);
    std::optional<MetricType> type = ValueNamed(rest, kTypeNames);
    if (!type && format_ == ExpositionFormat::kOpenMetrics) type = ValueNamed(rest, kOpenMetricsOnlyTypeNames);
    if (!type) return Fail("unknown metric type \"" + std::string(rest) + "\" for " + std::string(name));
    auto [it, inserted] = exposition->types.emplace(std::string(name), *type);
    if (!inserted) return Fail("second # TYPE line for " + std::string(name));
    return true;
  }

  bool ParseLabelValue(std::string* out) {
    // Opening quote already consumed. Most values have no escapes: copy them
    // in one go. Unknown escapes are kept as written, as Prometheus' own
    // parser does.
    size_t start = i_;
    while (!AtEnd() && Peek() != '"' && Peek() != '\\') ++i_;
    if (AtEnd()) return Fail("unterminated label value");
    out->assign(s_.data() + start, i_ - start);
    while (!AtEnd()) {
      char c = Peek();
      ++i_;
      if (c == '"') return true;
      if (c == '\\') {
        if (AtEnd()) break;
        char e = Peek();
        ++i_;
        if (e == 'n') {
          out->push_back('\n');
        } else if (e == '\\' || e == '"') {
          out->push_back(e);
        } else {
          out->push_back('\\');
          out->push_back(e);
        }
      } else {
        out->push_back(c);
      }
    }
    return Fail("unterminated label value");
  }

  bool ParseLabels() {
    // '{' already consumed.
    while (true) {
      SkipBlanks();
      if (AtEnd()) return Fail("unterminated label set");
      if (Peek() == '}') {
        ++i_;
        return true;
      }
      std::string_view name = LabelName();
      if (name.empty()) return Fail("invalid label name at column " + std::to_string(i_ + 1));
      SkipBlanks();
      if (AtEnd() || Peek() != '=') return Fail("expected '=' after label " + std::string(name));
      ++i_;
      SkipBlanks();
      if (AtEnd() || Peek() != '"') return Fail("expected '\"' for the value of label " + std::string(name));
      ++i_;
      if (used_ == pool_->size()) pool_->emplace_back();
      Label& label = (*pool_)[used_++];
      label.name.assign(name);
      if (!ParseLabelValue(&label.value)) return false;
      SkipBlanks();
      if (AtEnd()) return Fail("unterminated label set");
      if (Peek() == ',') {
        ++i_;
      } else if (Peek() != '}' && !IsNameStart(Peek())) {
        // A missing comma between two labels is accepted (Prometheus does);
        // anything else is not.
        return Fail(std::string("unexpected '") + Peek() + "' in label set");
      }
    }
  }

  bool ParseSample(Sample* sample) {
    std::string_view name = MetricName();
    if (name.empty()) return Fail("invalid metric name at column " + std::to_string(i_ + 1));
    sample->name.assign(name);
    sample->labels.clear();
    sample->timestamp_ms.reset();
    SkipBlanks();
    if (!AtEnd() && Peek() == '{') {
      ++i_;
      used_ = 0;
      if (!ParseLabels()) return false;
      // Exporters mostly write few labels, often already sorted: an insertion
      // sort beats std::sort here.
      std::vector<Label>& ls = *pool_;
      for (size_t k = 1; k < used_; ++k) {
        for (size_t j = k; j > 0 && ls[j].name < ls[j - 1].name; --j) std::swap(ls[j], ls[j - 1]);
      }
      for (size_t k = 1; k < used_; ++k) {
        if (ls[k].name == ls[k - 1].name) return Fail("duplicate label " + ls[k].name);
      }
      sample->labels.assign(ls.begin(), ls.begin() + static_cast<std::ptrdiff_t>(used_));
      SkipBlanks();
    }
    if (AtEnd()) return Fail("missing value for " + sample->name);
    std::string_view value = Token();
    if (!ParseSampleValue(value, &sample->value)) {
      return Fail("invalid value \"" + std::string(value) + "\" for " + sample->name);
    }
    SkipBlanks();
    if (AtEnd()) return true;
    if (format_ == ExpositionFormat::kOpenMetrics && Peek() == '#') return true;  // exemplar
    std::string_view ts = Token();
    if (format_ == ExpositionFormat::kOpenMetrics) {
      double seconds;
      if (!ParseSampleValue(ts, &seconds) || !std::isfinite(seconds)) {
        return Fail("invalid timestamp \"" + std::string(ts) + "\"");
      }
      sample->timestamp_ms = static_cast<int64_t>(std::llround(seconds * 1000.0));
    } else {
      int64_t ms = 0;
      auto [end, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), ms);
      if (ec != std::errc() || end != ts.data() + ts.size()) {
        return Fail("invalid timestamp \"" + std::string(ts) + "\" (want integer milliseconds)");
      }
      sample->timestamp_ms = ms;
    }
    SkipBlanks();
    if (AtEnd()) return true;
    if (format_ == ExpositionFormat::kOpenMetrics && Peek() == '#') return true;
    return Fail("unexpected text after the timestamp");
  }

  std::string_view s_;
  ExpositionFormat format_;
  size_t i_ = 0;
  std::string* error_ = nullptr;
  std::vector<Label>* pool_;
  size_t used_ = 0;
};

// Shared by the strict and lenient entry points.
Status ParseInto(std::string_view text, ExpositionFormat format, bool lenient, Exposition* out) {
  // A rough line count keeps reallocations down on large scrapes.
  out->samples.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  size_t pos = 0;
  int line_number = 0;
  Sample sample;
  std::vector<Label> label_pool;
  std::string error;
  while (pos < text.size()) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    size_t end = nl != nullptr ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineParser parser(line, format, &label_pool);
    LineParser::Kind kind;
    if (!parser.Parse(out, &sample, &kind, &error)) {
      std::string message = "line " + std::to_string(line_number) + ": " + error;
      if (!lenient) return Error::InvalidInput(std::move(message));
      ++out->skipped_lines;
      if (static_cast<int>(out->skipped_reasons.size()) < kMaxSkippedReasons) {
        out->skipped_reasons.push_back(std::move(message));
      }
      continue;
    }
    if (kind == LineParser::Kind::kEof) break;
    if (kind == LineParser::Kind::kSample) out->samples.push_back(std::move(sample));
  }
  return Status::Ok();
}

}  // namespace

bool ParseSampleValue(std::string_view text, double* out) {
  if (text.empty()) return false;
  bool negative = false;
  std::string_view body = text;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.empty() || body[0] == '+' || body[0] == '-') return false;
  if (EqualsIgnoreCase(body, "inf") || EqualsIgnoreCase(body, "infinity")) {
    *out = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    return true;
  }
  if (EqualsIgnoreCase(body, "nan")) {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  auto format = std::chars_format::general;
  if (body.size() > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X')) {
    body.remove_prefix(2);
    format = std::chars_format::hex;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, format);
  // Out-of-range magnitudes are still numbers to Go (±Inf or 0); only
  // syntax errors are rejected.
  if (ec == std::errc::result_out_of_range) {
    if (end != body.data() + body.size()) return false;
    size_t e = body.find_first_of(format == std::chars_format::hex ? "pP" : "eE");
    bool big = e == std::string_view::npos || e + 1 >= body.size() || body[e + 1] != '-';
    v = big ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (ec != std::errc() || end != body.data() + body.size()) {
    return false;
  }
  *out = negative ? -v : v;
  return true;
}

MetricType Exposition::TypeOf(std::string_view sample_name) const {
  auto find = [&](std::string_view family) -> const MetricType* {
    auto it = types.find(std::string(family));
    return it == types.end() ? nullptr : &it->second;
  };
  if (const MetricType* t = find(sample_name)) return *t;
  using T = MetricType;
  struct Suffix {
    std::string_view text;
    MetricType families[3];  // padded with kUntyped, which resolves the same
  };
  static constexpr Suffix kSuffixes[] = {
      {"_bucket", {T::kHistogram, T::kGaugeHistogram, T::kUntyped}},
      {"_sum", {T::kHistogram, T::kSummary, T::kUntyped}},
      {"_count", {T::kHistogram, T::kSummary, T::kUntyped}},
      {"_gsum", {T::kGaugeHistogram, T::kUntyped, T::kUntyped}},
      {"_gcount", {T::kGaugeHistogram, T::kUntyped, T::kUntyped}},
      {"_total", {T::kCounter, T::kUntyped, T::kUntyped}},
      {"_created", {T::kCounter, T::kHistogram, T::kSummary}},
      {"_info", {T::kInfo, T::kUntyped, T::kUntyped}},
  };
  for (const Suffix& s : kSuffixes) {
    if (!EndsWith(sample_name, s.text)) continue;
    const MetricType* t = find(sample_name.substr(0, sample_name.size() - s.text.size()));
    if (t != nullptr && std::find(std::begin(s.families), std::end(s.families), *t) != std::end(s.families)) {
      return *t;
    }
  }
  return MetricType::kUntyped;
}

Result<Exposition> ParseExposition(std::string_view text, ExpositionFormat format) {
  Exposition out;
  Status status = ParseInto(text, format, /*lenient=*/false, &out);
  if (!status.ok()) return status.error();
  return out;
}

Exposition ParseExpositionLenient(std::string_view text, ExpositionFormat format) {
  Exposition out;
  (void)ParseInto(text, format, /*lenient=*/true, &out);
  return out;
}

ExpositionFormat FormatFromContentType(std::string_view content_type) {
  size_t start = 0;
  while (start < content_type.size() && IsBlank(content_type[start])) ++start;
  std::string_view media = content_type.substr(start);
  media = media.substr(0, media.find(';'));
  while (!media.empty() && IsBlank(media.back())) media.remove_suffix(1);
  return EqualsIgnoreCase(media, "application/openmetrics-text") ? ExpositionFormat::kOpenMetrics
                                                                  : ExpositionFormat::kPrometheusText;
}

}  // namespace gpuscaler::signals
