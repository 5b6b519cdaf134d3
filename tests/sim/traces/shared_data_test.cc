// The readers on the real public files in ../shared/data (skipped when that
// folder is absent): every primary file loads, with the counts its README
// gives, and reading twice gives the same result.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "sim/trace_readers.h"

namespace gpuscaler::sim {
namespace {

std::string Shared(const std::string& relative) { return std::string(GPUSCALER_SHARED_DIR) + "/data/" + relative; }

#define SKIP_WITHOUT(path)                                                                  \
  if (!std::filesystem::exists(path)) {                                                     \
    GTEST_SKIP() << "shared data not available (" << path << "); skipping the real-data test"; \
  }

int64_t Skipped(const ReadStats& s, const std::string& reason) {
  auto it = s.skipped.find(reason);
  return it == s.skipped.end() ? 0 : it->second;
}

// Reads a trace, timing it; fails the test on error.
Trace Load(const std::string& path, TraceFormat format, const TraceOptions& o = {}) {
  const std::clock_t start = std::clock();  // CPU time: the machine is shared
  Result<Trace> t = ReadTrace(path, format, o);
  [[maybe_unused]] const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  if (!t.ok()) {
    ADD_FAILURE() << t.error().ToString();
    return {};
  }
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(seconds, 1.0) << path;
#endif
  return std::move(*t);
}

SpotMarket LoadMarket(const std::string& path, MarketFormat format, const MarketOptions& o = {}) {
  Result<SpotMarket> m = ReadSpotMarket(path, format, o);
  if (!m.ok()) {
    ADD_FAILURE() << m.error().ToString();
    return {};
  }
  return std::move(*m);
}

TEST(SharedData, OpenbPrimaryLoadsEveryPod) {
  const std::string path = Shared("traces/alibaba_gpu_v2023_openb_pods_primary.csv");
  SKIP_WITHOUT(path);
  const Trace t = Load(path, TraceFormat::kAlibabaOpenb);
  EXPECT_EQ(t.stats.rows_read, 3981);
  EXPECT_EQ(t.jobs.size(), 3981u);  // every pod has a deletion time and a positive duration
  EXPECT_EQ(Skipped(t.stats, "no deletion_time"), 0);
  EXPECT_EQ(Skipped(t.stats, "non-positive duration"), 0);
  ASSERT_FALSE(t.stats.warnings.empty());
  EXPECT_EQ(t.stats.warnings[0], "346 pods have no scheduled_time; their duration counts from creation_time");
  int inference = 0, fractional = 0;
  for (const TraceJob& j : t.jobs) {
    inference += j.unit.workload_class == "inference";
    fractional += j.unit.gpu_milli > 0;
    EXPECT_GT(j.duration.count(), 0);
  }
  EXPECT_EQ(inference, 2015);  // LS + Guaranteed
  EXPECT_EQ(fractional, 1438);
  EXPECT_EQ(t.jobs.front().submit, Seconds(0));
  EXPECT_LT(t.span, Seconds(11'491'200));  // the primary window is creation < 133 d
}

TEST(SharedData, OpenbSecondWindowStartsAtZeroAndSkipsOneEmptyPod) {
  const std::string path = Shared("traces/alibaba_gpu_v2023_openb_pods_second_window.csv");
  SKIP_WITHOUT(path);
  const Trace t = Load(path, TraceFormat::kAlibabaOpenb);
  EXPECT_EQ(t.stats.rows_read, 4171);
  EXPECT_EQ(Skipped(t.stats, "non-positive duration"), 1);
  EXPECT_EQ(t.jobs.size(), 4170u);
  EXPECT_EQ(t.jobs.front().submit, Seconds(0));
}

TEST(SharedData, DlrmPrimaryHasGpuAndCpuInstances) {
  const std::string path = Shared("traces/alibaba_gpu_v2025_dlrm_instances_primary.csv");
  SKIP_WITHOUT(path);
  const Trace t = Load(path, TraceFormat::kAlibabaDlrm);
  EXPECT_EQ(t.stats.rows_read, 13022);
  EXPECT_EQ(t.jobs.size(), 13022u);
  int gpu = 0, at_start = 0;
  for (const TraceJob& j : t.jobs) {
    gpu += j.unit.gpus > 0;
    at_start += j.submit == Seconds(0);
    EXPECT_GT(j.duration.count(), 0) << j.unit.id;
  }
  EXPECT_EQ(gpu, 4410);
  EXPECT_GE(at_start, 7280);
}

TEST(SharedData, HeliosPrimaryHasThreeVcsOfOneWeekOfMinutes) {
  const std::string path = Shared("traces/helios_earth_vc_minute_primary.csv");
  SKIP_WITHOUT(path);
  const Trace t = Load(path, TraceFormat::kHeliosMinute);
  ASSERT_EQ(t.series.size(), 3u);
  std::set<std::string> vcs;
  for (const DemandSeries& s : t.series) {
    vcs.insert(s.workload_class);
    EXPECT_EQ(s.points.size(), 10080u) << s.workload_class;
    EXPECT_EQ(s.points.back().t, Seconds(10079 * 60));
  }
  EXPECT_EQ(vcs, (std::set<std::string>{"vc6YE", "vcvlY", "vchbv"}));
  EXPECT_EQ(FormatRfc3339(*t.start_time), "2020-05-01T00:00:00Z");
}

TEST(SharedData, PhillyPrimarySplitsMultiMachineJobs) {
  const std::string path = Shared("traces/philly_sampled_jobs_primary.csv");
  SKIP_WITHOUT(path);
  const Trace t = Load(path, TraceFormat::kPhillyJobs);
  EXPECT_EQ(t.stats.rows_read, 1740);
  EXPECT_EQ(t.stats.rows_used, 1740);
  EXPECT_EQ(t.jobs.size(), 2305u);  // 247 multi-machine jobs become one job per machine
  for (const TraceJob& j : t.jobs) {
    EXPECT_LE(j.unit.gpus, 8) << j.unit.id;
    EXPECT_GE(j.duration, Seconds(3600)) << j.unit.id;  // DRE kept runtimes >= 60 min
  }
}

TEST(SharedData, GenaiPrimarySeriesLoad) {
  const std::string queue = Shared("traces/alibaba_v2026_genai_queue_size_primary.csv");
  SKIP_WITHOUT(queue);
  struct Case {
    std::string file;
    TraceFormat format;
    size_t points;
    int64_t first_sample;  // QPS rows start later than the other series
  } cases[] = {
      {"traces/alibaba_v2026_genai_queue_size_primary.csv", TraceFormat::kAlibabaGenaiQueue, 377, 1662858720},
      {"traces/alibaba_v2026_genai_qps_primary.csv", TraceFormat::kAlibabaGenaiQps, 364, 1662859176},
      {"traces/alibaba_v2026_genai_pod_gpu_duty_cycle_primary.csv", TraceFormat::kAlibabaGenaiDutyCycle, 379,
       1662858720},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const Trace t = Load(Shared(c.file), c.format);
    ASSERT_EQ(t.series.size(), 1u);
    EXPECT_EQ(t.series[0].points.size(), c.points);
    EXPECT_EQ(ToUnixSeconds(*t.start_time), c.first_sample);
    EXPECT_LT(t.span, Seconds(6 * 3600));
    // With the README's common t0 the series line up.
    TraceOptions aligned;
    aligned.origin_s = 1662858720;
    const Trace a = Load(Shared(c.file), c.format, aligned);
    EXPECT_EQ(a.series[0].points.front().t, Seconds(c.first_sample - 1662858720));
  }
}

TEST(SharedData, CblTracesLoadWithEveryZone) {
  const std::string primary = Shared("prices/spot_availability_aws_v100_1node_2023-02-15_primary.csv");
  SKIP_WITHOUT(primary);
  SpotMarket m = LoadMarket(primary, MarketFormat::kCblAvailability);
  EXPECT_EQ(m.stats.rows_read, 20158);
  std::set<std::string> zones;
  for (const AvailabilityPoint& p : m.availability) {
    zones.insert(p.zone);
    EXPECT_EQ(p.instance_type, "p3.2xlarge");
    EXPECT_GE(p.available_nodes, 0);
    EXPECT_LE(p.available_nodes, 1);
  }
  EXPECT_EQ(zones.size(), 9u);
  EXPECT_GT(m.availability.size(), 9u);  // it changes over 45 days

  m = LoadMarket(Shared("prices/spot_preemption_aws_v100_1node_2023-04-22_primary.csv"),
                 MarketFormat::kCblAvailability);
  EXPECT_EQ(m.stats.rows_read, 19961);
  std::set<std::string> priced;
  for (const PricePoint& p : m.prices) priced.insert(p.zone);
  EXPECT_EQ(priced, (std::set<std::string>{"us-east-1c", "us-west-2b", "us-west-2c"}));

  m = LoadMarket(Shared("prices/spot_availability_aws_k80_v100_1node_2022-10-26_second_window.csv"),
                 MarketFormat::kCblAvailability);
  std::set<std::string> types;
  for (const AvailabilityPoint& p : m.availability) types.insert(p.instance_type);
  EXPECT_EQ(types, (std::set<std::string>{"p2.xlarge", "p2.16xlarge", "p3.2xlarge", "p3.16xlarge"}));

  m = LoadMarket(Shared("prices/spot_availability_aws_v100_16node_2023-08-27_second_window.csv"),
                 MarketFormat::kCblAvailability);
  int max_nodes = 0;
  for (const AvailabilityPoint& p : m.availability) max_nodes = std::max(max_nodes, p.available_nodes);
  EXPECT_LE(max_nodes, 16);
  EXPECT_GT(max_nodes, 1);
  EXPECT_FALSE(m.stats.warnings.empty());  // us-east-2b is blank after tick 3247
}

TEST(SharedData, ParcaePrimaryHasItsRemovals) {
  const std::string path = Shared("prices/spot_events_aws_p3_parcae_primary.csv");
  SKIP_WITHOUT(path);
  const SpotMarket m = LoadMarket(path, MarketFormat::kParcaeEvents);
  EXPECT_EQ(m.stats.rows_read, 221);
  EXPECT_EQ(m.interruptions.size(), 100u);
  EXPECT_EQ(Skipped(m.stats, "add event"), 121);
  EXPECT_LT(m.interruptions.back().t, Seconds(6 * 3600));
}

TEST(SharedData, AwsAdvisorAndPriceHistoryLoad) {
  const std::string advisor = Shared("prices/aws_spot_advisor_gpu_2025-06-28_primary.csv");
  SKIP_WITHOUT(advisor);
  SpotMarket m = LoadMarket(advisor, MarketFormat::kAwsSpotAdvisor);
  EXPECT_EQ(m.stats.rows_read, 1428);
  EXPECT_EQ(m.risks.size(), 824u);
  EXPECT_EQ(Skipped(m.stats, "os not Linux"), 604);
  EXPECT_EQ(m.stats.warnings.size(), 1u);  // one p5.48xlarge row with -62 % savings
  for (const SpotRisk& r : m.risks) {
    EXPECT_GT(r.interruptions_per_hour, 0);
    EXPECT_LT(r.interruptions_per_hour, 0.001);
    EXPECT_LT(r.savings_fraction, 1.0);
  }
  for (const char* other : {"prices/aws_spot_advisor_gpu_2021-02-10_second_window.csv",
                            "prices/aws_spot_advisor_gpu_2024-02-28_second_window_b.csv"}) {
    SCOPED_TRACE(other);
    EXPECT_FALSE(LoadMarket(Shared(other), MarketFormat::kAwsSpotAdvisor).risks.empty());
  }

  m = LoadMarket(Shared("prices/aws_spot_price_history_gpu_2022-05-31.csv"), MarketFormat::kAwsSpotPriceHistory);
  EXPECT_EQ(m.stats.rows_read, 1890);
  EXPECT_EQ(m.prices.size(), 523u);
  EXPECT_EQ(FormatRfc3339(*m.start_time).substr(0, 13), "2022-05-31T18");
  EXPECT_LT(m.prices.back().t, Seconds(6 * 3600));
}

TEST(SharedData, GcpChangeLogsLoad) {
  const std::string primary = Shared("prices/gcp_gpu_vm_price_changes_2022-02_to_2024-06_primary.csv");
  SKIP_WITHOUT(primary);
  SpotMarket m = LoadMarket(primary, MarketFormat::kGcpSpotPrices);
  EXPECT_EQ(m.stats.rows_read, 2726);
  EXPECT_EQ(m.prices.size(), 1889u);
  m = LoadMarket(Shared("prices/gcp_gpu_vm_price_changes_2024-07_onward_second_window.csv"),
                 MarketFormat::kGcpSpotPrices);
  EXPECT_EQ(m.stats.rows_read, 14280);
  EXPECT_GT(m.prices.size(), 1000u);
}

TEST(SharedData, ReadingTwiceGivesTheSameTrace) {
  const std::string path = Shared("traces/alibaba_gpu_v2025_dlrm_instances_second_window.csv");
  SKIP_WITHOUT(path);
  const Trace a = Load(path, TraceFormat::kAlibabaDlrm);
  const Trace b = Load(path, TraceFormat::kAlibabaDlrm);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    ASSERT_EQ(a.jobs[i].unit.id, b.jobs[i].unit.id) << i;
    ASSERT_EQ(a.jobs[i].submit, b.jobs[i].submit) << i;
    ASSERT_EQ(a.jobs[i].duration, b.jobs[i].duration) << i;
  }
  EXPECT_EQ(a.stats.skipped, b.stats.skipped);
  EXPECT_EQ(Skipped(a.stats, "non-positive duration"), 16);
  EXPECT_TRUE(std::is_sorted(a.jobs.begin(), a.jobs.end(), [](const TraceJob& x, const TraceJob& y) {
    return std::tie(x.submit, x.unit.id) < std::tie(y.submit, y.unit.id);
  }));
}

TEST(SharedData, EverySecondWindowFileLoadsToo) {
  SKIP_WITHOUT(Shared("traces"));
  struct Case {
    std::string file;
    std::optional<TraceFormat> trace;
    std::optional<MarketFormat> market;
  } cases[] = {
      {"traces/alibaba_gpu_v2025_dlrm_instances_second_window.csv", TraceFormat::kAlibabaDlrm, {}},
      {"traces/helios_earth_vc_minute_second_window.csv", TraceFormat::kHeliosMinute, {}},
      {"traces/philly_sampled_jobs_second_window.csv", TraceFormat::kPhillyJobs, {}},
      {"traces/alibaba_v2026_genai_queue_size_second_window.csv", TraceFormat::kAlibabaGenaiQueue, {}},
      {"traces/alibaba_v2026_genai_qps_second_window.csv", TraceFormat::kAlibabaGenaiQps, {}},
      {"traces/alibaba_v2026_genai_pod_gpu_duty_cycle_second_window.csv", TraceFormat::kAlibabaGenaiDutyCycle, {}},
      {"prices/spot_preemption_aws_v100_4node_2023-08-03_second_window.csv", {}, MarketFormat::kCblAvailability},
      {"prices/spot_events_aws_p3_parcae_second_window.csv", {}, MarketFormat::kParcaeEvents},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    if (c.trace) {
      const Trace t = Load(Shared(c.file), *c.trace);
      EXPECT_GT(t.stats.rows_used, 0);
      EXPECT_FALSE(t.jobs.empty() && t.series.empty());
      EXPECT_EQ(t.jobs.empty() ? t.series.front().points.front().t : t.jobs.front().submit, Seconds(0));
    } else {
      const SpotMarket m = LoadMarket(Shared(c.file), *c.market);
      EXPECT_GT(m.stats.rows_used, 0);
      EXPECT_FALSE(m.availability.empty() && m.interruptions.empty());
    }
  }
}

TEST(SharedData, WindowOfTheOpenbPrimaryKeepsOnlyItsJobs) {
  const std::string path = Shared("traces/alibaba_gpu_v2023_openb_pods_primary.csv");
  SKIP_WITHOUT(path);
  TraceOptions o;
  o.window_start = Seconds(30 * 86400);
  o.window_end = Seconds(60 * 86400);
  o.max_jobs = 500;
  const Trace t = Load(path, TraceFormat::kAlibabaOpenb, o);
  EXPECT_LE(t.jobs.size(), 500u);
  EXPECT_FALSE(t.jobs.empty());
  for (const TraceJob& j : t.jobs) EXPECT_LT(j.submit, Seconds(30 * 86400));
  EXPECT_EQ(static_cast<int64_t>(t.jobs.size()) + Skipped(t.stats, "outside window") +
                Skipped(t.stats, "over max_jobs"),
            3981);
}

}  // namespace
}  // namespace gpuscaler::sim
