// Fuzzes the Prometheus text exposition parser (0.0.4 and OpenMetrics; the
// first input byte picks the format) and the DCGM reader over what it gives.
//
// Invariants: never throws; strict and lenient parsing agree (the strict
// parse fails with "line N: ..." exactly when the lenient one skips a line,
// and otherwise they give the same samples); labels come sorted with unique
// names; an accepted 0.0.4 text written back out sample by sample parses to
// the same samples; DCGM utilization stays in [0, 1] and nodes come ordered.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "gpuscaler/signals/dcgm.h"
#include "gpuscaler/signals/exposition.h"

namespace {

using gpuscaler::signals::Sample;

bool SameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

bool SameSample(const Sample& a, const Sample& b) {
  return a.name == b.name && a.labels == b.labels && SameValue(a.value, b.value) &&
         a.timestamp_ms == b.timestamp_ms;
}

// The 0.0.4 line for a sample, escaping label values as the format says.
std::string Line(const Sample& s) {
  std::string out = s.name;
  if (!s.labels.empty()) {
    out += '{';
    for (size_t i = 0; i < s.labels.size(); ++i) {
      if (i) out += ',';
      out += s.labels[i].name + "=\"";
      for (char c : s.labels[i].value) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
      }
      out += '"';
    }
    out += '}';
  }
  char value[64];
  if (std::isnan(s.value)) std::snprintf(value, sizeof value, "NaN");
  else if (std::isinf(s.value)) std::snprintf(value, sizeof value, "%sInf", s.value > 0 ? "+" : "-");
  else std::snprintf(value, sizeof value, "%.17g", s.value);
  out += ' ';
  out += value;
  if (s.timestamp_ms) out += ' ' + std::to_string(*s.timestamp_ms);
  return out + '\n';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  namespace sig = gpuscaler::signals;
  const sig::ExpositionFormat format =
      (data[0] & 1) ? sig::ExpositionFormat::kOpenMetrics : sig::ExpositionFormat::kPrometheusText;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);

  gpuscaler::Result<sig::Exposition> strict = sig::ParseExposition(text, format);
  const sig::Exposition lenient = sig::ParseExpositionLenient(text, format);
  FUZZ_CHECK(lenient.skipped_reasons.size() <= static_cast<size_t>(sig::kMaxSkippedReasons), "too many reasons");
  FUZZ_CHECK(lenient.skipped_lines >= static_cast<int>(lenient.skipped_reasons.size()), "reasons > skipped");
  if (!strict.ok()) {
    FUZZ_CHECK(strict.error().message().rfind("line ", 0) == 0, "error without line: %s",
               strict.error().message().c_str());
    FUZZ_CHECK(lenient.skipped_lines > 0, "strict failed (%s), lenient skipped nothing",
               strict.error().message().c_str());
  } else {
    FUZZ_CHECK(lenient.skipped_lines == 0, "strict accepted, lenient skipped %d", lenient.skipped_lines);
    FUZZ_CHECK(lenient.samples.size() == strict->samples.size(), "sample counts differ");
    for (size_t i = 0; i < strict->samples.size(); ++i)
      FUZZ_CHECK(SameSample(strict->samples[i], lenient.samples[i]), "sample %zu differs", i);
  }
  for (const Sample& s : lenient.samples) {
    FUZZ_CHECK(!s.name.empty(), "sample without a name");
    for (size_t i = 1; i < s.labels.size(); ++i)
      FUZZ_CHECK(s.labels[i - 1].name < s.labels[i].name, "labels of %s unsorted or repeated", s.name.c_str());
  }

  if (strict.ok() && format == sig::ExpositionFormat::kPrometheusText) {
    std::string written;
    for (const Sample& s : strict->samples) written += Line(s);
    gpuscaler::Result<sig::Exposition> back = sig::ParseExposition(written);
    FUZZ_CHECK(back.ok(), "written samples do not parse: %s\n%s", back.error().message().c_str(), written.c_str());
    FUZZ_CHECK(back->samples.size() == strict->samples.size(), "round trip lost samples");
    for (size_t i = 0; i < back->samples.size(); ++i)
      FUZZ_CHECK(SameSample(back->samples[i], strict->samples[i]), "round trip changed: %s", Line(back->samples[i]).c_str());
  }

  sig::DcgmOptions options;
  options.default_hostname = "node-a";
  const sig::DcgmReadings dcgm = sig::ReadDcgm(lenient.samples, options);
  for (size_t i = 0; i < dcgm.nodes.size(); ++i) {
    if (i) FUZZ_CHECK(dcgm.nodes[i - 1].hostname < dcgm.nodes[i].hostname, "nodes unordered or repeated");
    const sig::NodeGpuReadings& n = dcgm.nodes[i];
    if (n.mean_utilization)
      FUZZ_CHECK(*n.mean_utilization >= 0 && *n.mean_utilization <= 1, "node mean %g", *n.mean_utilization);
    for (const auto* list : {&n.gpus, &n.mig_instances})
      for (const sig::GpuReading& g : *list)
        if (g.utilization) FUZZ_CHECK(*g.utilization >= 0 && *g.utilization <= 1, "utilization %g", *g.utilization);
  }
  for (const sig::PodGpuUsage& p : dcgm.pods)
    if (p.mean_utilization) FUZZ_CHECK(*p.mean_utilization >= 0 && *p.mean_utilization <= 1, "pod mean");
  return 0;
}
