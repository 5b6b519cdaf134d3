// Parser for the Prometheus text exposition format (version 0.0.4) and the
// parts of OpenMetrics 1.0 that a scraper meets (exemplars, `# EOF`, `# UNIT`,
// timestamps in seconds).
//
// Pure functions over a string: no I/O, no clock, no global state; safe to
// call concurrently. The DCGM exporter and gpuscaler's own /metrics are read
// through it. Reference: docs/signals.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/status.h"

namespace gpuscaler::signals {

struct Label {
  std::string name;
  std::string value;  // unescaped
  bool operator==(const Label&) const = default;
};

// One line `name{labels} value [timestamp]`.
struct Sample {
  std::string name;
  std::vector<Label> labels;  // sorted by name, names unique
  double value = 0;           // may be NaN or +-Inf
  // Milliseconds since the Unix epoch, as written (OpenMetrics seconds are
  // converted). Absent when the line has none.
  std::optional<int64_t> timestamp_ms;

  // The label's value, or nullptr when the sample has no such label.
  const std::string* FindLabel(std::string_view label_name) const;
  // The label's value, or "" when absent (the exposition format treats an
  // empty value and an absent label alike).
  std::string_view LabelOr(std::string_view label_name, std::string_view fallback = {}) const;
};

enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kSummary, kInfo, kStateSet, kGaugeHistogram };

enum class ExpositionFormat {
  kPrometheusText,  // text/plain; version=0.0.4
  kOpenMetrics,     // application/openmetrics-text; version=1.0.0
};

// What a scrape holds.
struct Exposition {
  std::vector<Sample> samples;                // in input order
  std::map<std::string, MetricType> types;    // family name -> # TYPE
  std::map<std::string, std::string> help;    // family name -> # HELP (unescaped)
  // Only from ParseExpositionLenient: lines skipped as malformed, and the
  // first few reasons ("line N: message").
  int skipped_lines = 0;
  std::vector<std::string> skipped_reasons;

  // The declared type of the family a sample belongs to: `x_bucket`, `x_sum`,
  // `x_count` resolve to histogram/summary `x`; OpenMetrics `x_total` and
  // `x_created` to counter `x`. kUntyped when nothing is declared.
  MetricType TypeOf(std::string_view sample_name) const;
};

// How many skipped-line reasons the lenient parser keeps.
inline constexpr int kMaxSkippedReasons = 10;

// Parses a whole exposition. Accepts what Prometheus' own text parser
// accepts: blanks and tabs around tokens and braces, a trailing comma in a
// label set, `# HELP` without text, comments anywhere, a missing final
// newline, `\r\n` line ends. The first malformed line fails the whole parse
// with kInvalidInput "line N: message" (N counts from 1).
Result<Exposition> ParseExposition(std::string_view text,
                                   ExpositionFormat format = ExpositionFormat::kPrometheusText);

// Same grammar, but a malformed line is skipped and counted in
// skipped_lines instead of failing the parse. Never fails.
Exposition ParseExpositionLenient(std::string_view text,
                                  ExpositionFormat format = ExpositionFormat::kPrometheusText);

// The format a Content-Type header announces: OpenMetrics for
// "application/openmetrics-text...", the 0.0.4 text format otherwise.
ExpositionFormat FormatFromContentType(std::string_view content_type);

// Parses a sample value the way Prometheus does (Go's ParseFloat): decimal
// and exponent forms, optional sign, "NaN", "+Inf", "-Inf", "Inf" in any
// case, hex floats. False on anything else, including trailing text.
bool ParseSampleValue(std::string_view text, double* out);

}  // namespace gpuscaler::signals
