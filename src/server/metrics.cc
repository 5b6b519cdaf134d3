#include "gpuscaler/server/metrics.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>

#include "gpuscaler/model/text.h"

namespace gpuscaler::server {

void Metric::Inc(double by) {
  std::lock_guard<std::mutex> lock(*mu_);
  if (type_ == MetricType::kHistogram) {
    assert(false && "Inc on a histogram");
    return;
  }
  if (type_ == MetricType::kCounter && !(by >= 0)) {
    assert(false && "a counter only goes up");
    return;
  }
  value_ += by;
}

void Metric::Dec(double by) {
  std::lock_guard<std::mutex> lock(*mu_);
  if (type_ != MetricType::kGauge) {
    assert(false && "Dec on a counter or histogram");
    return;
  }
  value_ -= by;
}

void Metric::Set(double value) {
  std::lock_guard<std::mutex> lock(*mu_);
  if (type_ == MetricType::kHistogram) {
    assert(false && "Set on a histogram");
    return;
  }
  value_ = value;
}

void Metric::Observe(double value) {
  std::lock_guard<std::mutex> lock(*mu_);
  if (type_ != MetricType::kHistogram) {
    assert(false && "Observe on a counter or gauge");
    return;
  }
  // Bounds are few (tens): a linear scan beats a binary search here. NaN
  // compares false everywhere and lands only in +Inf, as in Prometheus'
  // own clients.
  for (size_t i = 0; i < bounds_->size(); ++i) {
    if (value <= (*bounds_)[i]) {
      ++bucket_counts_[i];
      break;
    }
  }
  ++count_;
  value_ += value;
}

double Metric::value() const {
  std::lock_guard<std::mutex> lock(*mu_);
  return value_;
}

uint64_t Metric::count() const {
  std::lock_guard<std::mutex> lock(*mu_);
  return count_;
}

uint64_t Metric::CumulativeCount(double upper_bound) const {
  std::lock_guard<std::mutex> lock(*mu_);
  if (type_ != MetricType::kHistogram) return 0;
  if (std::isinf(upper_bound) && upper_bound > 0) return count_;
  uint64_t total = 0;
  for (size_t i = 0; i < bounds_->size() && (*bounds_)[i] <= upper_bound; ++i) total += bucket_counts_[i];
  return total;
}

// ---------------------------------------------------------------------------

std::vector<std::string> Family::ValuesFromMap(const std::map<std::string, std::string>& labels) const {
  std::vector<std::string> values(labels_.size());
  size_t matched = 0;
  for (size_t i = 0; i < labels_.size(); ++i) {
    auto it = labels.find(labels_[i]);
    if (it != labels.end()) {
      values[i] = it->second;
      ++matched;
    }
  }
  assert(matched == labels.size() && "a label name the family does not have");
  (void)matched;
  return values;
}

Metric& Family::WithLocked(std::vector<std::string> label_values) {
  assert(label_values.size() == labels_.size() && "wrong number of label values");
  label_values.resize(labels_.size());
  std::unique_ptr<Metric>& m = metrics_[std::move(label_values)];
  if (!m) {
    m = std::make_unique<Metric>();
    m->type_ = type_;
    m->mu_ = &mu_;
    if (type_ == MetricType::kHistogram) {
      m->bounds_ = &bounds_;
      m->bucket_counts_.assign(bounds_.size(), 0);
    }
  }
  return *m;
}

Metric& Family::With(const std::vector<std::string>& label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  return WithLocked(label_values);
}

Metric& Family::WithLabels(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> values = ValuesFromMap(labels);
  std::lock_guard<std::mutex> lock(mu_);
  return WithLocked(std::move(values));
}

void Family::Remove(const std::vector<std::string>& label_values) {
  std::lock_guard<std::mutex> lock(mu_);
  metrics_.erase(label_values);
}

void Family::RemoveLabels(const std::map<std::string, std::string>& labels) { Remove(ValuesFromMap(labels)); }

void Family::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  if (labels_.empty() && !metrics_.empty()) {
    // Keep the object: callers may hold the reference of a label-less metric.
    Metric& m = *metrics_.begin()->second;
    m.value_ = 0;
    m.count_ = 0;
    std::fill(m.bucket_counts_.begin(), m.bucket_counts_.end(), 0);
    return;
  }
  metrics_.clear();
}

void Family::Replace(const std::map<std::vector<std::string>, double>& values) {
  std::lock_guard<std::mutex> lock(mu_);
  assert(type_ != MetricType::kHistogram && "Replace on a histogram");
  if (type_ == MetricType::kHistogram) return;
  for (auto it = metrics_.begin(); it != metrics_.end();) {
    it = values.count(it->first) ? std::next(it) : metrics_.erase(it);
  }
  for (const auto& [label_values, v] : values) WithLocked(label_values).value_ = v;
}

size_t Family::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_.size();
}

// ---------------------------------------------------------------------------

namespace {

bool IsNameChar(char c, bool allow_colon, bool allow_digit) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':') ||
         (allow_digit && c >= '0' && c <= '9');
}

std::vector<double> CleanBounds(std::vector<double> bounds) {
  if (bounds.empty()) bounds = MetricsRegistry::DefaultBuckets();
  // +Inf is always rendered last by Render; NaN cannot be a bound.
  bounds.erase(std::remove_if(bounds.begin(), bounds.end(), [](double b) { return std::isnan(b) || std::isinf(b); }),
               bounds.end());
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty() || !IsNameChar(name[0], true, false)) return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsNameChar(c, true, true); });
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || !IsNameChar(name[0], false, false) || name.substr(0, 2) == "__") return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return IsNameChar(c, false, true); });
}

Family& MetricsRegistry::Add(const std::string& name, const std::string& help, MetricType type,
                             std::vector<std::string> labels, std::vector<double> bounds) {
  assert(IsValidMetricName(name));
  for ([[maybe_unused]] const std::string& l : labels) {
    assert(IsValidLabelName(l));
    assert(!(type == MetricType::kHistogram && l == "le"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Family>& f = families_[name];
  if (f) {
    assert(f->type_ == type && f->labels_ == labels && "metric registered twice with another shape");
    return *f;
  }
  f = std::make_unique<Family>();
  f->name_ = name;
  f->help_ = help;
  f->type_ = type;
  f->labels_ = std::move(labels);
  if (type == MetricType::kHistogram) f->bounds_ = CleanBounds(std::move(bounds));
  if (f->labels_.empty()) f->With();
  return *f;
}

Family& MetricsRegistry::Counter(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return Add(name, help, MetricType::kCounter, std::move(labels), {});
}

Family& MetricsRegistry::Gauge(const std::string& name, const std::string& help, std::vector<std::string> labels) {
  return Add(name, help, MetricType::kGauge, std::move(labels), {});
}

Family& MetricsRegistry::Histogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                   std::vector<std::string> labels) {
  return Add(name, help, MetricType::kHistogram, std::move(labels), std::move(bounds));
}

Family* MetricsRegistry::Find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  return it == families_.end() ? nullptr : it->second.get();
}

std::vector<double> MetricsRegistry::DefaultBuckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

std::vector<double> MetricsRegistry::ExponentialBuckets(double start, double factor, int count) {
  assert(start > 0 && factor > 1 && count > 0);
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

// ---------------------------------------------------------------------------

namespace {

// Backslash and newline always; the double quote only where the text is quoted.
std::string Escaped(std::string_view v, bool quoted) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quoted) out += "\\\"";
    else out += c;
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) { return Escaped(v, /*quoted=*/true); }

std::string EscapeHelp(std::string_view v) { return Escaped(v, /*quoted=*/false); }

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";  // also -0
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  assert(r.ec == std::errc());
  return std::string(buf, r.ptr);
}

namespace {

// {a="x",b="y"} (with `le` last for buckets), or "" without labels.
void AppendLabels(std::string& out, const std::vector<std::string>& names, const std::vector<std::string>& values,
                  std::string_view le = {}) {
  if (names.empty() && le.empty()) return;
  out += '{';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (!le.empty()) {
    if (!names.empty()) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, std::string_view suffix,
                  const std::vector<std::string>& names, const std::vector<std::string>& values,
                  std::string_view value, std::string_view le = {}) {
  out += name;
  out += suffix;
  AppendLabels(out, names, values, le);
  out += ' ';
  out += value;
  out += '\n';
}

constexpr EnumName<MetricType> kTypeNames[] = {
    {MetricType::kCounter, "counter"}, {MetricType::kGauge, "gauge"}, {MetricType::kHistogram, "histogram"}};

}  // namespace

std::string MetricsRegistry::Render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + EscapeHelp(f->help_) + "\n";
    out += "# TYPE " + name + " " + std::string(NameOf(f->type_, kTypeNames, "untyped")) + "\n";
    std::lock_guard<std::mutex> flock(f->mu_);
    for (const auto& [values, m] : f->metrics_) {
      if (f->type_ != MetricType::kHistogram) {
        AppendSample(out, name, "", f->labels_, values, FormatSampleValue(m->value_));
        continue;
      }
      uint64_t cumulative = 0;
      for (size_t i = 0; i < f->bounds_.size(); ++i) {
        cumulative += m->bucket_counts_[i];
        AppendSample(out, name, "_bucket", f->labels_, values, std::to_string(cumulative),
                     FormatSampleValue(f->bounds_[i]));
      }
      const std::string count = std::to_string(m->count_);
      AppendSample(out, name, "_bucket", f->labels_, values, count, "+Inf");
      AppendSample(out, name, "_sum", f->labels_, values, FormatSampleValue(m->value_));
      AppendSample(out, name, "_count", f->labels_, values, count);
    }
  }
  return out;
}

}  // namespace gpuscaler::server
