#include "sim/trace_readers.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "gpuscaler/model/text_file.h"
#include "sim/traces/csv.h"
#include "sim/traces/readers_impl.h"

namespace gpuscaler::sim {
namespace {

// One row per format: its name and its reader.
template <typename Format, typename Reader>
struct FormatEntry {
  Format format;
  std::string_view name;
  Reader* read;
};

constexpr FormatEntry<TraceFormat, internal::TraceReader> kTraceFormats[] = {
    {TraceFormat::kGpuscalerJobs, "gpuscaler-jobs", internal::ReadGpuscalerJobs},
    {TraceFormat::kGpuscalerSeries, "gpuscaler-series", internal::ReadGpuscalerSeries},
    {TraceFormat::kAlibabaOpenb, "alibaba-openb", internal::ReadOpenb},
    {TraceFormat::kAlibabaDlrm, "alibaba-dlrm", internal::ReadDlrm},
    {TraceFormat::kHeliosMinute, "helios-minute", internal::ReadHeliosMinute},
    {TraceFormat::kPhillyJobs, "philly-jobs", internal::ReadPhillyJobs},
    {TraceFormat::kAlibabaGenaiQueue, "alibaba-genai-queue", internal::ReadGenaiQueue},
    {TraceFormat::kAlibabaGenaiQps, "alibaba-genai-qps", internal::ReadGenaiQps},
    {TraceFormat::kAlibabaGenaiDutyCycle, "alibaba-genai-duty-cycle", internal::ReadGenaiDutyCycle},
};

constexpr FormatEntry<MarketFormat, internal::MarketReader> kMarketFormats[] = {
    {MarketFormat::kCblAvailability, "cbl-availability", internal::ReadCblAvailability},
    {MarketFormat::kParcaeEvents, "parcae-events", internal::ReadParcaeEvents},
    {MarketFormat::kAwsSpotAdvisor, "aws-spot-advisor", internal::ReadAwsSpotAdvisor},
    {MarketFormat::kAwsSpotPriceHistory, "aws-spot-price-history", internal::ReadAwsSpotPriceHistory},
    {MarketFormat::kGcpSpotPrices, "gcp-spot-prices", internal::ReadGcpSpotPrices},
};

template <typename Entry, size_t N, typename Format>
const Entry* FindFormat(const Entry (&table)[N], Format format) {
  for (const Entry& e : table) {
    if (e.format == format) return &e;
  }
  return nullptr;
}

template <typename Entry, size_t N>
auto ParseFormatName(const Entry (&table)[N], std::string_view name)
    -> std::optional<decltype(Entry::format)> {
  for (const Entry& e : table) {
    if (e.name == name) return e.format;
  }
  return std::nullopt;
}

template <typename Entry, size_t N>
std::vector<std::string_view> FormatNames(const Entry (&table)[N]) {
  std::vector<std::string_view> names;
  for (const Entry& e : table) names.push_back(e.name);
  return names;
}

template <typename Options>
Status CheckWindow(const Options& o) {
  if (o.window_start && *o.window_start < Seconds(0)) {
    return Error::Config("trace window start must be >= 0");
  }
  if (o.window_end && *o.window_end <= o.window_start.value_or(Seconds(0))) {
    return Error::Config("trace window end must be after its start");
  }
  return Status::Ok();
}

// Rebases a step function's points (sorted by t) into the window: the value
// in force at `start` is kept as a point at `start`; returns how many points
// were dropped.
template <typename Point, typename Key>
int64_t WindowSteps(std::vector<Point>* points, int64_t start, std::optional<int64_t> end, Key key) {
  using K = decltype(key(std::declval<const Point&>()));
  std::map<K, size_t> carry;  // key -> index of the last point before start
  std::vector<Point> kept;
  kept.reserve(points->size());
  int64_t dropped = 0;
  std::map<K, bool> has_point_at_start;
  for (size_t i = 0; i < points->size(); ++i) {
    const Point& p = (*points)[i];
    if (p.t.count() < start) {
      auto [it, inserted] = carry.emplace(key(p), i);
      if (!inserted) {
        it->second = i;
        ++dropped;
      }
    } else if (end && p.t.count() >= *end) {
      ++dropped;
    } else {
      if (p.t.count() == start) has_point_at_start[key(p)] = true;
      kept.push_back(p);
    }
  }
  std::vector<Point> carried;
  for (const auto& [k, index] : carry) {
    if (has_point_at_start.count(k)) {
      ++dropped;
      continue;
    }
    Point p = (*points)[index];
    p.t = Seconds(start);
    carried.push_back(std::move(p));
  }
  kept.insert(kept.begin(), carried.begin(), carried.end());
  for (Point& p : kept) p.t -= Seconds(start);
  *points = std::move(kept);
  return dropped;
}

// Checks the window, reads `text` as a table through the format's reader and
// returns its output, or the first problem the reader recorded.
template <typename Out, typename Entry, size_t N, typename Options>
Result<Out> ParseTable(const Entry (&table)[N], decltype(Entry::format) format, std::string_view text,
                       const std::string& file_name, const Options& options) {
  if (Status s = CheckWindow(options); !s.ok()) return s.error();
  const Entry* entry = FindFormat(table, format);
  if (entry == nullptr) return Error::Internal("unknown format");
  Result<csv::Table> t = csv::Table::Open(text, file_name);
  if (!t) return t.error();
  Out out;
  out.source = file_name;
  entry->read(*t, options, &out);
  if (t->failed()) return t->error();
  out.stats.rows_read = t->rows_read();
  return out;
}

// ParseTable on the contents of `path`; kNotFound when it cannot be read.
template <typename Out, typename Entry, size_t N, typename Options>
Result<Out> ReadTable(const Entry (&table)[N], decltype(Entry::format) format, const std::string& path,
                      const Options& options) {
  Result<std::string> text = ReadTextFile(path);
  if (!text) return Error::NotFound("cannot open '" + path + "': " + text.error().message());
  return ParseTable<Out>(table, format, *text, path, options);
}

}  // namespace

std::string_view ToString(TraceFormat format) {
  const auto* entry = FindFormat(kTraceFormats, format);
  return entry != nullptr ? entry->name : "unknown";
}

std::string_view ToString(MarketFormat format) {
  const auto* entry = FindFormat(kMarketFormats, format);
  return entry != nullptr ? entry->name : "unknown";
}

std::optional<TraceFormat> ParseTraceFormat(std::string_view name) {
  return ParseFormatName(kTraceFormats, name);
}

std::optional<MarketFormat> ParseMarketFormat(std::string_view name) {
  return ParseFormatName(kMarketFormats, name);
}

std::optional<MultiNodeJobs> ParseMultiNodeJobs(std::string_view text) {
  if (text == "gang") return MultiNodeJobs::kGang;
  if (text == "split") return MultiNodeJobs::kSplit;
  if (text == "whole") return MultiNodeJobs::kWhole;
  return std::nullopt;
}

const std::vector<std::string_view>& TraceFormatNames() {
  static const std::vector<std::string_view> names = FormatNames(kTraceFormats);
  return names;
}

const std::vector<std::string_view>& MarketFormatNames() {
  static const std::vector<std::string_view> names = FormatNames(kMarketFormats);
  return names;
}

Result<Trace> ParseTrace(std::string text, const std::string& file_name, TraceFormat format,
                         const TraceOptions& options) {
  return ParseTable<Trace>(kTraceFormats, format, text, file_name, options);
}

Result<Trace> ReadTrace(const std::string& path, TraceFormat format, const TraceOptions& options) {
  return ReadTable<Trace>(kTraceFormats, format, path, options);
}

Result<SpotMarket> ParseSpotMarket(std::string text, const std::string& file_name, MarketFormat format,
                                   const MarketOptions& options) {
  return ParseTable<SpotMarket>(kMarketFormats, format, text, file_name, options);
}

Result<SpotMarket> ReadSpotMarket(const std::string& path, MarketFormat format, const MarketOptions& options) {
  return ReadTable<SpotMarket>(kMarketFormats, format, path, options);
}

std::string AlibabaGpuToCatalog(std::string_view alibaba_name) {
  static const std::map<std::string_view, std::string_view> kMap{
      {"V100M16", "v100-16gb"}, {"V100M32", "v100-32gb"}, {"T4", "t4"}, {"A10", "a10g"},
      {"G1", ""},               {"G2", ""},               {"G3", ""},
  };
  const auto it = kMap.find(alibaba_name);
  return std::string(it == kMap.end() ? alibaba_name : it->second);
}

std::optional<std::string> CblInstanceType(std::string_view gpu_count) {
  static const std::map<std::string_view, std::string_view> kMap{
      {"v100_1", "p3.2xlarge"}, {"v100_4", "p3.8xlarge"}, {"v100_8", "p3.16xlarge"},
      {"k80_1", "p2.xlarge"},   {"k80_8", "p2.16xlarge"},
  };
  const auto it = kMap.find(gpu_count);
  if (it == kMap.end()) return std::nullopt;
  return std::string(it->second);
}

namespace internal {

DemandUnit MakeUnit(std::string id, std::string workload_class, Seconds duration) {
  DemandUnit unit;
  unit.id = std::move(id);
  unit.workload_class = std::move(workload_class);
  unit.expected_runtime = duration;
  return unit;
}

void ApplyJobOverrides(const TraceOptions& o, DemandUnit* unit) {
  if (o.interruptible) unit->interruptible = *o.interruptible;
  if (o.checkpoint_interval) unit->checkpoint_interval = *o.checkpoint_interval;
}

void FinishTrace(Trace* trace, const TraceOptions& o, DefaultOrigin origin_mode, bool absolute_times) {
  int64_t origin = 0;
  if (o.origin_s) {
    origin = *o.origin_s;
  } else if (origin_mode == DefaultOrigin::kEarliest) {
    int64_t earliest = std::numeric_limits<int64_t>::max();
    for (const TraceJob& j : trace->jobs) earliest = std::min<int64_t>(earliest, j.submit.count());
    for (const DemandSeries& s : trace->series) {
      for (const DemandPoint& p : s.points) earliest = std::min<int64_t>(earliest, p.t.count());
    }
    if (earliest != std::numeric_limits<int64_t>::max()) origin = earliest;
  }
  const int64_t start = o.window_start.value_or(Seconds(0)).count();
  std::optional<int64_t> end;
  if (o.window_end) end = o.window_end->count();
  if (absolute_times) trace->start_time = FromUnixSeconds(origin + start);

  std::vector<TraceJob>& jobs = trace->jobs;
  // Sort an index, then move each job once: a TraceJob is a few hundred
  // bytes, too large to swap about while sorting.
  std::vector<uint32_t> order;
  order.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    TraceJob& j = jobs[i];
    const int64_t t = j.submit.count() - origin;
    if (t < start || (end && t >= *end)) continue;
    j.submit = Seconds(t - start);
    order.push_back(static_cast<uint32_t>(i));
  }
  Skip(&trace->stats, "outside window", static_cast<int64_t>(jobs.size() - order.size()));
  std::sort(order.begin(), order.end(), [&jobs](uint32_t a, uint32_t b) {
    return std::tie(jobs[a].submit, jobs[a].unit.id, a) < std::tie(jobs[b].submit, jobs[b].unit.id, b);
  });
  if (o.max_jobs > 0 && static_cast<int64_t>(order.size()) > o.max_jobs) {
    Skip(&trace->stats, "over max_jobs", static_cast<int64_t>(order.size()) - o.max_jobs);
    order.resize(static_cast<size_t>(o.max_jobs));
  }
  std::vector<TraceJob> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(std::move(jobs[i]));
  jobs = std::move(sorted);

  int64_t dropped_points = 0;
  for (DemandSeries& s : trace->series) {
    for (DemandPoint& p : s.points) p.t -= Seconds(origin);
    std::stable_sort(s.points.begin(), s.points.end(),
                     [](const DemandPoint& a, const DemandPoint& b) { return a.t < b.t; });
    dropped_points += WindowSteps(&s.points, start, end, [](const DemandPoint&) { return 0; });
  }
  Skip(&trace->stats, "outside window", dropped_points);
  std::erase_if(trace->series, [](const DemandSeries& s) { return s.points.empty(); });
  std::sort(trace->series.begin(), trace->series.end(), [](const DemandSeries& a, const DemandSeries& b) {
    return std::tie(a.workload_class, a.unit) < std::tie(b.workload_class, b.unit);
  });

  Seconds span{0};
  if (!trace->jobs.empty()) span = trace->jobs.back().submit;
  for (const DemandSeries& s : trace->series) span = std::max(span, s.points.back().t);
  trace->span = span;
}

void FinishMarket(SpotMarket* market, const MarketOptions& o, bool absolute_times,
                  std::optional<int64_t> earliest_row) {
  const int64_t origin = o.origin_s ? *o.origin_s : earliest_row.value_or(0);
  const int64_t start = o.window_start.value_or(Seconds(0)).count();
  std::optional<int64_t> end;
  if (o.window_end) end = o.window_end->count();
  const bool has_times = !market->prices.empty() || !market->availability.empty() ||
                         !market->interruptions.empty();
  if (absolute_times && has_times) market->start_time = FromUnixSeconds(origin + start);

  for (auto& p : market->prices) p.t -= Seconds(origin);
  for (auto& p : market->availability) p.t -= Seconds(origin);
  for (auto& e : market->interruptions) e.t -= Seconds(origin);

  const auto price_order = [](const PricePoint& a, const PricePoint& b) {
    return std::tie(a.t, a.instance_type, a.zone, a.capacity_type) <
           std::tie(b.t, b.instance_type, b.zone, b.capacity_type);
  };
  // Availability points and interruption events: time, type, zone.
  const auto point_order = [](const auto& a, const auto& b) {
    return std::tie(a.t, a.instance_type, a.zone) < std::tie(b.t, b.instance_type, b.zone);
  };
  std::stable_sort(market->prices.begin(), market->prices.end(), price_order);
  std::stable_sort(market->availability.begin(), market->availability.end(), point_order);
  std::stable_sort(market->interruptions.begin(), market->interruptions.end(), point_order);
  std::sort(market->risks.begin(), market->risks.end(), [](const SpotRisk& a, const SpotRisk& b) {
    return std::tie(a.region, a.instance_type) < std::tie(b.region, b.instance_type);
  });

  int64_t dropped = WindowSteps(&market->prices, start, end, [](const PricePoint& p) {
    return std::make_tuple(p.instance_type, p.zone, p.capacity_type);
  });
  dropped += WindowSteps(&market->availability, start, end,
                         [](const AvailabilityPoint& p) { return std::make_pair(p.instance_type, p.zone); });
  // Carried-in points moved to 0 ahead of the rest; restore the total order.
  std::stable_sort(market->prices.begin(), market->prices.end(), price_order);
  std::stable_sort(market->availability.begin(), market->availability.end(), point_order);
  std::vector<InterruptionEvent> events;
  events.reserve(market->interruptions.size());
  for (InterruptionEvent& e : market->interruptions) {
    const int64_t t = e.t.count();
    if (t < start || (end && t >= *end)) {
      ++dropped;
      continue;
    }
    e.t -= Seconds(start);
    events.push_back(std::move(e));
  }
  market->interruptions = std::move(events);
  Skip(&market->stats, "outside window", dropped);
}

}  // namespace internal
}  // namespace gpuscaler::sim
