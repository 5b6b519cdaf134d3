#include "gpuscaler/signals/exposition.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "signals/test_files.h"

namespace gpuscaler::signals {
namespace {

std::vector<Label> L(std::initializer_list<std::pair<const char*, const char*>> pairs) {
  std::vector<Label> out;
  for (auto [n, v] : pairs) out.push_back({n, v});
  return out;
}

TEST(Exposition, ParsesTheFormatDocumentExample) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "prometheus/exposition/exposition-formats-doc-example.prom");
  Result<Exposition> got = ParseExposition(text);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->samples.size(), 2u + 1 + 1 + 1 + 8 + 7);
  const Sample& first = got->samples[0];
  EXPECT_EQ(first.name, "http_requests_total");
  EXPECT_EQ(first.labels, L({{"code", "200"}, {"method", "post"}}));
  EXPECT_EQ(first.value, 1027);
  EXPECT_EQ(first.timestamp_ms, 1395066363000);
  const Sample& escaped = got->samples[2];
  EXPECT_EQ(escaped.LabelOr("path"), "C:\\DIR\\FILE.TXT");
  EXPECT_EQ(escaped.LabelOr("error"), "Cannot find file:\n\"FILE.TXT\"");
  EXPECT_DOUBLE_EQ(escaped.value, 1.458255915e9);
  EXPECT_FALSE(got->samples[3].timestamp_ms.has_value());
  const Sample& weird = got->samples[4];
  EXPECT_TRUE(std::isinf(weird.value) && weird.value > 0);
  EXPECT_EQ(weird.timestamp_ms, -3982045);
  EXPECT_EQ(got->types.at("http_request_duration_seconds"), MetricType::kHistogram);
  EXPECT_EQ(got->TypeOf("http_request_duration_seconds_bucket"), MetricType::kHistogram);
  EXPECT_EQ(got->TypeOf("telemetry_requests_metrics_latency_microseconds_count"), MetricType::kSummary);
  EXPECT_EQ(got->TypeOf("metric_without_timestamp_and_labels"), MetricType::kUntyped);
  EXPECT_EQ(got->help.at("http_requests_total"), "The total number of HTTP requests.");
  EXPECT_EQ(got->samples[10].LabelOr("le"), "+Inf");
}

TEST(Exposition, AcceptsWhatPrometheusOwnParserAccepts) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "prometheus/exposition/prometheus-promparse-test-input.lenient.txt");
  Result<Exposition> got = ParseExposition(text);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->types.at("go_gc_duration_seconds"), MetricType::kSummary);  // "# \tTYPE"
  EXPECT_EQ(got->types.at("some_counter_total"), MetricType::kCounter);
  EXPECT_EQ(got->help.at("nohelp1"), "");
  bool saw_spaced = false, saw_no_comma = false, saw_tab_ts = false, saw_colon = false;
  for (const Sample& s : got->samples) {
    if (s.name == "go_gc_duration_seconds" && s.labels == L({{"a", "b"}, {"quantile", "1.0"}})) saw_spaced = true;
    if (s.name == "go_gc_duration_seconds" && s.labels == L({{"a", "b"}, {"quantile", "2.0"}})) saw_no_comma = true;
    if (s.name == "go_goroutines") {
      saw_tab_ts = true;
      EXPECT_EQ(s.value, 33);
      EXPECT_EQ(s.timestamp_ms, 123123);
    }
    if (s.name == "some:aggregate:rate5m") {
      saw_colon = true;
      EXPECT_EQ(s.value, 1);
    }
    if (s.name == "testmetric" && s.FindLabel("label") != nullptr) {
      EXPECT_EQ(s.LabelOr("label"), "\"bar\"");
    }
  }
  EXPECT_TRUE(saw_spaced);
  EXPECT_TRUE(saw_no_comma);
  EXPECT_TRUE(saw_tab_ts);
  EXPECT_TRUE(saw_colon);
}

TEST(Exposition, ParsesARealPrometheusScrapeQuickly) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "prometheus/exposition/prometheus-textparse-testdata.alltypes.237mfs.prom.txt");
  Result<Exposition> got = ParseExposition(text);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->types.size(), 237u);
  EXPECT_EQ(got->samples.size(), 1857u);
  // Every histogram's +Inf bucket equals its _count.
  int checked = 0;
  for (const Sample& s : got->samples) {
    if (s.name.size() > 7 && s.name.ends_with("_bucket") && s.LabelOr("le") == "+Inf") {
      std::string count_name = s.name.substr(0, s.name.size() - 7) + "_count";
      std::vector<Label> rest;
      for (const Label& l : s.labels) {
        if (l.name != "le") rest.push_back(l);
      }
      for (const Sample& c : got->samples) {
        if (c.name == count_name && c.labels == rest) {
          EXPECT_EQ(c.value, s.value) << count_name;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(Exposition, ParsesOpenMetricsScrapesWithExemplarsAndEof) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(text, "prometheus/exposition/prometheus-textparse-testdata.alltypes.5mfs.om.txt");
  Result<Exposition> got = ParseExposition(text, ExpositionFormat::kOpenMetrics);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->TypeOf("promhttp_metric_handler_errors_total"), MetricType::kCounter);
  EXPECT_EQ(got->TypeOf("rpc_durations_histogram_seconds_created"), MetricType::kHistogram);
  bool saw_exemplar_line = false;
  for (const Sample& s : got->samples) {
    if (s.name == "rpc_durations_histogram_seconds_bucket" && s.LabelOr("le") == "-0.0002899999999999998") {
      saw_exemplar_line = true;
      EXPECT_EQ(s.value, 3);
      EXPECT_FALSE(s.timestamp_ms.has_value());
    }
  }
  EXPECT_TRUE(saw_exemplar_line);
  // The 0.0.4 grammar has no exemplars: the lenient parser skips those lines.
  Exposition lenient = ParseExpositionLenient(text);
  EXPECT_GT(lenient.skipped_lines, 0);
  EXPECT_LT(lenient.samples.size(), got->samples.size());

  GPUSCALER_READ_REFERENCE_OR_SKIP(histogram, "prometheus/exposition/prometheus-textparse-testdata.1histogram.om.txt");
  Result<Exposition> h = ParseExposition(histogram, ExpositionFormat::kOpenMetrics);
  ASSERT_TRUE(h.ok()) << h.error().ToString();
  EXPECT_FALSE(h->samples.empty());
}

TEST(Exposition, StopsAtOpenMetricsEof) {
  Result<Exposition> got = ParseExposition("a 1\n# EOF\nthis is not parsed\n", ExpositionFormat::kOpenMetrics);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->samples.size(), 1u);
}

TEST(Exposition, ConvertsOpenMetricsSecondsTimestampsToMilliseconds) {
  Result<Exposition> got = ParseExposition("a 1 1.5\n", ExpositionFormat::kOpenMetrics);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->samples[0].timestamp_ms, 1500);
}

TEST(Exposition, ParsesEdgeCaseLines) {
  struct Case {
    const char* line;
    const char* name;
    std::vector<Label> labels;
    double value;
    std::optional<int64_t> ts;
  } cases[] = {
      {"a 1", "a", {}, 1, std::nullopt},
      {"a{} 1", "a", {}, 1, std::nullopt},
      {"a{b=\"\"} 1", "a", L({{"b", ""}}), 1, std::nullopt},
      {"a{z=\"1\",b=\"2\",} 1", "a", L({{"b", "2"}, {"z", "1"}}), 1, std::nullopt},
      {"a{b=\"x\\\\y\\\"z\\nw\"} 1", "a", L({{"b", "x\\y\"z\nw"}}), 1, std::nullopt},
      {"a{b=\"x\\ty\"} 1", "a", L({{"b", "x\\ty"}}), 1, std::nullopt},
      {"a{b=\"}{,=\"} 1", "a", L({{"b", "}{,="}}), 1, std::nullopt},
      {"a 1e3", "a", {}, 1000, std::nullopt},
      {"a -1.5E-3", "a", {}, -0.0015, std::nullopt},
      {"a +5", "a", {}, 5, std::nullopt},
      {"a 0x10", "a", {}, 16, std::nullopt},
      {"a 1 -5", "a", {}, 1, -5},
      {"a\t1\t2", "a", {}, 1, 2},
      {"  a 1  ", "a", {}, 1, std::nullopt},
      {"a 1\r", "a", {}, 1, std::nullopt},
      {"a{b=\"1\"}2", "a", L({{"b", "1"}}), 2, std::nullopt},
      {"a 9223372036854775794", "a", {}, 9223372036854775794.0, std::nullopt},
      {"a 1e999", "a", {}, HUGE_VAL, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.line);
    Result<Exposition> got = ParseExposition(c.line);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    ASSERT_EQ(got->samples.size(), 1u);
    const Sample& s = got->samples[0];
    EXPECT_EQ(s.name, c.name);
    EXPECT_EQ(s.labels, c.labels);
    EXPECT_DOUBLE_EQ(s.value, c.value);
    EXPECT_EQ(s.timestamp_ms, c.ts);
  }
}

TEST(Exposition, ParsesSpecialValuesInAnyCase) {
  struct Case {
    const char* text;
    double want;  // NaN means "is NaN"
  } cases[] = {
      {"NaN", NAN}, {"nan", NAN}, {"+Inf", HUGE_VAL}, {"-Inf", -HUGE_VAL}, {"Inf", HUGE_VAL},
      {"inf", HUGE_VAL}, {"+infinity", HUGE_VAL}, {"0", 0}, {"-0", 0}, {".5", 0.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    double v = 123;
    ASSERT_TRUE(ParseSampleValue(c.text, &v));
    if (std::isnan(c.want)) {
      EXPECT_TRUE(std::isnan(v));
    } else {
      EXPECT_EQ(v, c.want);
    }
  }
  for (const char* bad : {"", "+", "-", "++1", "1x", "1.2.3", "0x", "Infx", "NaN1", "1_000", " 1"}) {
    SCOPED_TRACE(bad);
    double v;
    EXPECT_FALSE(ParseSampleValue(bad, &v));
  }
}

TEST(Exposition, RejectsMalformedLinesWithTheLineNumber) {
  struct Case {
    const char* text;
    const char* want_message_part;
  } cases[] = {
      {"ok 1\n\n{a=\"b\"} 1\n", "line 3: invalid metric name"},
      {"a{b=\"c} 1\n", "line 1: unterminated label value"},
      {"a{b=\"c\" 1\n", "line 1: unexpected '1'"},
      {"a{b} 1\n", "line 1: expected '='"},
      {"a{b=c} 1\n", "line 1: expected '\"'"},
      {"a{1b=\"c\"} 1\n", "line 1: invalid label name"},
      {"a{b=\"1\",b=\"2\"} 1\n", "line 1: duplicate label b"},
      {"a\n", "line 1: missing value"},
      {"a{b=\"1\"}\n", "line 1: missing value"},
      {"a one\n", "line 1: invalid value \"one\""},
      {"a 1 1.5\n", "line 1: invalid timestamp \"1.5\""},
      {"a 1 2 3\n", "line 1: unexpected text after the timestamp"},
      {"# TYPE a gauge\n# TYPE a counter\n", "line 2: second # TYPE line for a"},
      {"# TYPE a widget\n", "line 1: unknown metric type \"widget\""},
      {"# TYPE\n", "line 1: # TYPE without a metric name"},
      {"# TYPE a info\n", "unknown metric type \"info\""},
      {"a 1 # {trace=\"x\"} 1\n", "line 1: invalid timestamp \"#\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    Result<Exposition> got = ParseExposition(c.text);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_NE(got.error().message().find(c.want_message_part), std::string::npos) << got.error().message();
  }
}

TEST(Exposition, LenientParserSkipsAndCountsBadLines) {
  Exposition got = ParseExpositionLenient("a 1\nbad line here\nb{x=\"1\"} 2\n{oops} 3\nc 3\n");
  EXPECT_EQ(got.samples.size(), 3u);
  EXPECT_EQ(got.skipped_lines, 2);
  ASSERT_EQ(got.skipped_reasons.size(), 2u);
  EXPECT_EQ(got.skipped_reasons[0].rfind("line 2: ", 0), 0u) << got.skipped_reasons[0];
  EXPECT_EQ(got.skipped_reasons[1].rfind("line 4: ", 0), 0u) << got.skipped_reasons[1];
}

TEST(Exposition, LenientParserKeepsOnlyTheFirstReasons) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "@bad\n";
  Exposition got = ParseExpositionLenient(text);
  EXPECT_EQ(got.skipped_lines, 50);
  EXPECT_EQ(static_cast<int>(got.skipped_reasons.size()), kMaxSkippedReasons);
}

TEST(Exposition, UnescapesHelpText) {
  Result<Exposition> got = ParseExposition("# HELP a line one\\nline \\\\two \\q\n");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->help.at("a"), "line one\nline \\two \\q");
}

TEST(Exposition, ChoosesFormatFromContentType) {
  EXPECT_EQ(FormatFromContentType("text/plain; version=0.0.4; charset=utf-8"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(FormatFromContentType("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(FormatFromContentType(" Application/OpenMetrics-Text"), ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(FormatFromContentType(""), ExpositionFormat::kPrometheusText);
}

// A large fleet's DCGM scrape: every line comes back with its labels and
// value (its speed is bench/signals/exposition_bench).
TEST(Exposition, ParsesAScrapeOfTenThousandDcgmLines) {
  std::mt19937 rng(42);
  std::string text = "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  std::vector<int> values;
  for (int i = 0; i < 10000; ++i) {
    values.push_back(static_cast<int>(rng() % 101));
    text += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(i % 8) + "\",UUID=\"GPU-" + std::to_string(i) +
            "\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node-" + std::to_string(i / 8) +
            "\",container=\"c\",namespace=\"ns\",pod=\"p-" + std::to_string(i) + "\"} " +
            std::to_string(values.back()) + "\n";
  }
  Result<Exposition> got = ParseExposition(text);
  ASSERT_TRUE(got.ok()) << got.error().message();
  ASSERT_EQ(got->samples.size(), 10000u);
  for (size_t i : {size_t{0}, size_t{4711}, size_t{9999}}) {
    const auto& s = got->samples[i];
    EXPECT_EQ(s.name, "DCGM_FI_DEV_GPU_UTIL");
    EXPECT_EQ(s.value, values[i]);
    EXPECT_EQ(s.labels.size(), 8u);
  }
  EXPECT_EQ(got->TypeOf("DCGM_FI_DEV_GPU_UTIL"), MetricType::kGauge);
}

}  // namespace
}  // namespace gpuscaler::signals
