// A Prometheus metrics registry: counters, gauges and histograms in families
// with label sets, rendered in the text exposition format 0.0.4 (what
// Prometheus scrapes from /metrics; `promtool check metrics` accepts it).
// Plain C++: no Asio, no I/O.
//
//   MetricsRegistry reg;
//   Family& nodes = reg.Gauge("gpuscaler_nodes", "Nodes by pool and zone.", {"pool", "zone"});
//   nodes.With({"train", "us-east-1a"}).Set(3);               // values in label order
//   nodes.WithLabels({{"pool", "train"}, {"zone", "us-east-1b"}}).Inc();  // by name
//   nodes.Remove({"train", "us-east-1a"});                     // the pool left that zone
//   std::string text = reg.Render();
//
// Thread-safe: every method of every class here may be called from any
// thread. A Render sees each update either entirely or not at all (one
// histogram observation moves its bucket, _sum and _count together).
//
// Lifetimes: families live as long as the registry. A Metric& returned by
// With/WithLabels stays valid until that label set is removed (Remove or
// Clear on its family): code that removes label sets should call With()
// for each update instead of keeping the reference.
//
// Names are fixed by the code, not by input, so a bad metric or label name,
// a wrong number of label values or a type mismatch on re-registration is a
// bug: it asserts in debug builds and is repaired (padded, truncated,
// ignored) in release builds so that /metrics always stays parseable.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscaler::server {

enum class MetricType { kCounter, kGauge, kHistogram };

// One label set of a family: a counter, a gauge or a histogram.
class Metric {
 public:
  // Counters: adds `by` (a negative `by` is a bug and is ignored).
  // Gauges: adds `by`, which may be negative.
  void Inc(double by = 1.0);
  // Gauges: subtracts `by`.
  void Dec(double by = 1.0);
  // Gauges; also counters that mirror a count kept elsewhere (the value
  // must never go down, or Prometheus sees a counter reset).
  void Set(double value);
  // Histograms: counts `value` in the first bucket whose bound is >= value
  // (and always in +Inf), adds it to _sum.
  void Observe(double value);

  // Counters and gauges: the current value. Histograms: _sum.
  double value() const;
  // Histograms: _count (0 for the other types).
  uint64_t count() const;
  // Histograms: cumulative count of the bucket with that upper bound, as
  // rendered in _bucket{le=...}; +infinity gives count().
  uint64_t CumulativeCount(double upper_bound) const;

 private:
  friend class Family;
  friend class MetricsRegistry;
  MetricType type_ = MetricType::kGauge;
  std::mutex* mu_ = nullptr;                 // the family's
  const std::vector<double>* bounds_ = nullptr;  // the family's (histograms)
  double value_ = 0;                         // counters, gauges; _sum of a histogram
  std::vector<uint64_t> bucket_counts_;      // per finite bound, not cumulative
  uint64_t count_ = 0;                       // histograms
};

// A metric name, its HELP and TYPE, label names, and one Metric per label set.
class Family {
 public:
  // The metric for these label values, in the family's label order, created
  // at zero on first use.
  Metric& With(const std::vector<std::string>& label_values);
  Metric& With() { return With(std::vector<std::string>{}); }
  // The metric for these labels by name. A label left out is "" (which
  // Prometheus treats as absent); an unknown name is a bug.
  Metric& WithLabels(const std::map<std::string, std::string>& labels);

  // Drops one label set (a node that went away); unknown sets are ignored.
  void Remove(const std::vector<std::string>& label_values);
  void RemoveLabels(const std::map<std::string, std::string>& labels);
  // Drops every label set (a family rebuilt from scratch each tick). A
  // family without labels keeps its single metric, reset to zero.
  void Clear();
  // Gauges (and counters mirroring counts kept elsewhere): makes `values`
  // the family's exact contents in one step, so a concurrent Render never
  // sees the family half rebuilt (as Clear() then With() can). Label sets
  // not in `values` are dropped; metrics kept keep their identity.
  void Replace(const std::map<std::vector<std::string>, double>& values);

  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return labels_; }
  // Number of label sets.
  size_t size() const;

 private:
  friend class MetricsRegistry;
  std::vector<std::string> ValuesFromMap(const std::map<std::string, std::string>& labels) const;
  Metric& WithLocked(std::vector<std::string> label_values);

  std::string name_;
  std::string help_;
  MetricType type_ = MetricType::kGauge;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;  // histograms: finite, strictly increasing
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> metrics_;
};

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family, or returns the one already registered under `name`
  // (same type and labels expected). A family without labels starts with its
  // single metric at zero, so it is exported before the first update.
  // Counter names should end in _total (promtool's lint wants it).
  Family& Counter(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  Family& Gauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {});
  // `bucket_bounds`: upper bounds, sorted and de-duplicated here; +Inf is
  // implicit. Empty: DefaultBuckets(). A label named "le" is a bug.
  Family& Histogram(const std::string& name, const std::string& help, std::vector<double> bucket_bounds,
                    std::vector<std::string> labels = {});

  // The family registered under `name`, or nullptr.
  Family* Find(const std::string& name) const;

  // Every family in name order: HELP, TYPE, then its samples with label
  // sets in lexicographic order of their values. Ends with a newline.
  std::string Render() const;
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  // Prometheus' client defaults: .005 .01 .025 .05 .1 .25 .5 1 2.5 5 10 (seconds).
  static std::vector<double> DefaultBuckets();
  // `count` bounds: start, start*factor, start*factor^2, ...
  static std::vector<double> ExponentialBuckets(double start, double factor, int count);

 private:
  Family& Add(const std::string& name, const std::string& help, MetricType type, std::vector<std::string> labels,
              std::vector<double> bounds);
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;
};

// Label value escaping (backslash, double quote, newline) and HELP escaping
// (backslash, newline), as the exposition format wants.
std::string EscapeLabelValue(std::string_view v);
std::string EscapeHelp(std::string_view v);
// A sample value as Prometheus writes it: the shortest text that reads back
// as the same double ("1", "0.25", "1e-09"), or +Inf, -Inf, NaN.
std::string FormatSampleValue(double v);
// [a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]* without the reserved "__" prefix.
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

}  // namespace gpuscaler::server
