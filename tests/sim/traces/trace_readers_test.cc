#include "sim/trace_readers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sim/traces/fixture_path.h"

namespace gpuscaler::sim {
namespace {

using testing::Fixture;

Trace MustRead(const std::string& name, TraceFormat format, const TraceOptions& o = {}) {
  Result<Trace> t = ReadTrace(Fixture(name), format, o);
  if (!t.ok()) {
    ADD_FAILURE() << name << ": " << t.error().ToString();
    return {};
  }
  return std::move(*t);
}

std::vector<std::string> Ids(const Trace& t) {
  std::vector<std::string> ids;
  for (const TraceJob& j : t.jobs) ids.push_back(j.unit.id);
  return ids;
}

std::vector<std::pair<int64_t, double>> Points(const DemandSeries& s) {
  std::vector<std::pair<int64_t, double>> out;
  for (const DemandPoint& p : s.points) out.emplace_back(p.t.count(), p.value);
  return out;
}

// Every field a reader sets, one line per job: what determinism tests compare.
std::string Dump(const Trace& t) {
  std::ostringstream out;
  for (const TraceJob& j : t.jobs) {
    const DemandUnit& u = j.unit;
    out << u.id << ' ' << j.submit.count() << ' ' << j.duration.count() << ' ' << u.workload_class << ' '
        << u.gpus << ' ' << u.gpu_milli << ' ' << u.mig_profile << ' ' << u.cpu_milli << ' ' << u.memory_mib
        << ' ' << u.priority << ' ' << u.interruptible << ' ' << u.checkpoint_interval.count();
    for (const std::string& m : u.gpu_models) out << ' ' << m;
    out << '\n';
  }
  for (const DemandSeries& s : t.series) {
    out << s.workload_class << '/' << s.unit;
    for (const DemandPoint& p : s.points) out << ' ' << p.t.count() << '=' << p.value;
    out << '\n';
  }
  return out.str();
}

TEST(TraceFormats, ParseEveryNameBackToItsFormat) {
  ASSERT_EQ(TraceFormatNames().size(), 9u);
  for (std::string_view name : TraceFormatNames()) {
    SCOPED_TRACE(name);
    std::optional<TraceFormat> f = ParseTraceFormat(name);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(ToString(*f), name);
  }
  for (std::string_view name : MarketFormatNames()) {
    SCOPED_TRACE(name);
    std::optional<MarketFormat> f = ParseMarketFormat(name);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(ToString(*f), name);
  }
  EXPECT_EQ(ParseTraceFormat("openb"), std::nullopt);
  EXPECT_EQ(ParseTraceFormat("alibaba-openb"), TraceFormat::kAlibabaOpenb);
  EXPECT_EQ(ParseMarketFormat("gcp-spot-prices"), MarketFormat::kGcpSpotPrices);
}

TEST(TraceReaders, MissingFileIsNotFound) {
  Result<Trace> t = ReadTrace(Fixture("no_such_file.csv"), TraceFormat::kGpuscalerJobs);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().category(), ErrorCategory::kNotFound);
}

TEST(GpuscalerJobs, ReadsEveryColumnOfTheFixture) {
  const Trace t = MustRead("jobs.csv", TraceFormat::kGpuscalerJobs);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"infer-a", "notebook,1", "train-b", "mig-1"}));
  EXPECT_EQ(t.source, Fixture("jobs.csv"));
  EXPECT_EQ(t.span, Seconds(300));
  EXPECT_FALSE(t.start_time.has_value());
  EXPECT_EQ(t.stats.rows_read, 4);
  EXPECT_EQ(t.stats.rows_used, 4);
  EXPECT_TRUE(t.stats.skipped.empty());

  const TraceJob& infer = t.jobs[0];
  EXPECT_EQ(infer.submit, Seconds(0));
  EXPECT_EQ(infer.duration, Seconds(86400));
  EXPECT_EQ(infer.unit.expected_runtime, Seconds(86400));
  EXPECT_EQ(infer.unit.gpus, 1);
  EXPECT_EQ(infer.unit.gpu_milli, 0);
  EXPECT_EQ(infer.unit.cpu_milli, 4000);
  EXPECT_EQ(infer.unit.memory_mib, 16384);
  EXPECT_EQ(infer.unit.workload_class, "inference");
  EXPECT_EQ(infer.unit.priority, 10);
  EXPECT_FALSE(infer.unit.interruptible);
  EXPECT_EQ(infer.unit.checkpoint_interval, Seconds(0));

  const TraceJob& notebook = t.jobs[1];
  EXPECT_EQ(notebook.submit, Seconds(120));
  EXPECT_EQ(notebook.unit.gpus, 0);
  EXPECT_EQ(notebook.unit.gpu_milli, 250);
  EXPECT_EQ(notebook.unit.gpu_models, std::vector<std::string>{"t4"});
  EXPECT_EQ(notebook.unit.workload_class, "interactive \"dev\"");
  EXPECT_TRUE(notebook.unit.interruptible);
  EXPECT_EQ(notebook.unit.checkpoint_interval, Seconds(1800));  // empty: the default

  const TraceJob& train = t.jobs[2];
  EXPECT_EQ(train.unit.gpus, 8);
  EXPECT_EQ(train.unit.gpu_models, (std::vector<std::string>{"a100-80gb", "h100-80gb"}));
  EXPECT_EQ(train.unit.min_gpu_memory_mib, 81920);
  EXPECT_EQ(train.unit.checkpoint_interval, Seconds(900));
  EXPECT_EQ(train.unit.priority, 5);

  const TraceJob& mig = t.jobs[3];
  EXPECT_EQ(mig.submit, Seconds(300));  // 300.4 rounded
  EXPECT_EQ(mig.unit.mig_profile, "1g.10gb");
  EXPECT_EQ(mig.unit.workload_class, "batch");
  EXPECT_EQ(mig.unit.priority, 0);
  EXPECT_TRUE(mig.unit.interruptible);
}

TEST(GpuscalerJobs, ReadsRfc3339SubmitTimesWithCrlfAndOptionalColumnsDefaulted) {
  const Trace t = MustRead("jobs_rfc3339_crlf.csv", TraceFormat::kGpuscalerJobs);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"j0", "j1", "j2"}));
  EXPECT_EQ(t.jobs[0].submit, Seconds(0));  // 01:00+01:00 is 00:00Z
  EXPECT_EQ(t.jobs[1].submit, Seconds(0));
  EXPECT_EQ(t.jobs[2].submit, Seconds(600));
  EXPECT_EQ(t.jobs[2].unit.workload_class, "default");
  EXPECT_EQ(t.jobs[1].unit.gpus, 2);
  ASSERT_TRUE(t.start_time.has_value());
  EXPECT_EQ(FormatRfc3339(*t.start_time), "2026-03-01T00:00:00Z");
}

TEST(GpuscalerJobs, RejectsMalformedFixturesWithFileAndLine) {
  struct Case {
    std::string file;
    std::string want;
  } cases[] = {
      {"jobs_malformed.csv", ":3: column 'gpus': 'two' is not an integer"},
      {"jobs_unknown_column.csv", ":1: unknown column 'gpu'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Result<Trace> t = ReadTrace(Fixture(c.file), TraceFormat::kGpuscalerJobs);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_EQ(t.error().message(), Fixture(c.file) + c.want);
  }
}

TEST(TraceReaders, RejectMalformedRowsNamingColumnAndValue) {
  struct Case {
    std::string name;
    TraceFormat format;
    std::string text;
    std::string want;
  } cases[] = {
      {"missing required column", TraceFormat::kGpuscalerJobs, "id,submit_s\na,0\n",
       "t.csv:1: missing column 'duration_s'"},
      {"missing time column", TraceFormat::kGpuscalerJobs, "id,duration_s\na,1\n",
       "t.csv:1: missing column 'submit_s' (or 'submit')"},
      {"both time columns", TraceFormat::kGpuscalerJobs, "id,submit_s,submit,duration_s\n",
       "t.csv:1: columns 'submit_s' and 'submit' are exclusive"},
      {"zero duration", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\na,0,0\n",
       "t.csv:2: column 'duration_s': must be > 0, got '0'"},
      {"negative submit", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\na,-5,10\n",
       "t.csv:2: column 'submit_s': must be >= 0, got '-5'"},
      {"empty id", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\n,0,10\n", "t.csv:2: column 'id': empty"},
      {"fraction and whole GPUs", TraceFormat::kGpuscalerJobs,
       "id,submit_s,duration_s,gpus,gpu_milli\na,0,10,1,500\n",
       "t.csv:2: column 'gpu_milli': set with gpus = 1; a job asks for whole GPUs or a fraction"},
      {"gpu_milli of a whole GPU", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s,gpu_milli\na,0,10,1000\n",
       "t.csv:2: column 'gpu_milli': must be below 1000 (use gpus for whole GPUs), got '1000'"},
      {"mig with gpus", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s,gpus,mig_profile\na,0,10,1,1g.10gb\n",
       "t.csv:2: column 'mig_profile': set with gpus or gpu_milli; a MIG job asks for one instance of "
       "'1g.10gb' only"},
      {"duplicate id", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\na,0,10\na,5,10\n",
       "t.csv:3: column 'id': duplicate id 'a' (first on line 2)"},
      {"bad time", TraceFormat::kGpuscalerJobs, "id,submit,duration_s\na,yesterday,10\n",
       "t.csv:2: column 'submit': 'yesterday' is not an RFC 3339 time"},
      {"bad boolean", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s,interruptible\na,0,10,maybe\n",
       "t.csv:2: column 'interruptible': 'maybe' is not a boolean (true/false)"},
      {"bad capacity type", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s,capacity_type\na,0,10,cheap\n",
       "t.csv:2: column 'capacity_type': 'cheap' is not on-demand or spot"},
      {"field count", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\na,0,10,4\n",
       "t.csv:2: expected 3 fields, got 4"},
      {"unterminated quote", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s\n\"a,0,10\n",
       "t.csv:2: unterminated quoted field"},
      {"line counts quoted line breaks", TraceFormat::kGpuscalerJobs,
       "id,submit_s,duration_s\n\"a\nb\",0,10\nc,0,x\n", "t.csv:4: column 'duration_s': 'x' is not a number"},
      {"empty file", TraceFormat::kGpuscalerJobs, "", "t.csv:1: empty file, expected a header row"},
      {"series negative value", TraceFormat::kGpuscalerSeries, "t_s,class,value,unit\n0,a,-1,gpus\n",
       "t.csv:2: column 'value': must be >= 0, got '-1'"},
      {"series second value at one instant", TraceFormat::kGpuscalerSeries,
       "t_s,class,value\n0,a,1\n60,a,2\n0,a,3\n",
       "t.csv:4: column 't_s': second value for class 'a' at '0' (first on line 2)"},
      {"series unknown column", TraceFormat::kGpuscalerSeries, "t_s,class,value,units\n",
       "t.csv:1: unknown column 'units'"},
      {"openb bad num_gpu", TraceFormat::kAlibabaOpenb,
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1000,1024,x,1000,,LS,Running,0,10,0\n",
       "t.csv:2: column 'num_gpu': 'x' is not a number"},
      {"openb share without GPU", TraceFormat::kAlibabaOpenb,
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1000,1024,0,500,,BE,Running,0,10,0\n",
       "t.csv:2: column 'gpu_milli': '500' with num_gpu 0"},
      {"dlrm bad role", TraceFormat::kAlibabaDlrm,
       "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,creation_time,scheduled_time,"
       "deletion_time\ni,XN,app,1,1,1,,,\n",
       "t.csv:2: column 'role': 'XN' is not HN or CN"},
      {"dlrm fractional multi-GPU", TraceFormat::kAlibabaDlrm,
       "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,creation_time,scheduled_time,"
       "deletion_time\ni,HN,app,1,1.5,1,,,\n",
       "t.csv:2: column 'gpu_request': '1.5' is neither whole GPUs nor a fraction of one"},
      // 1e30 GPUs would overflow the cast to int.
      {"dlrm GPUs beyond any machine", TraceFormat::kAlibabaDlrm,
       "instance_sn,role,app_name,cpu_request,gpu_request,memory_request,creation_time,scheduled_time,"
       "deletion_time\ni,HN,app,1,1e30,1,,,\n",
       "t.csv:2: column 'gpu_request': must be in [0, 1048576], got '1e30'"},
      {"openb GPUs beyond any machine", TraceFormat::kAlibabaOpenb,
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
       "scheduled_time\np,1000,1024,3e9,0,,LS,Running,0,10,0\n",
       "t.csv:2: column 'num_gpu': must be in [0, 1048576], got '3e9'"},
      {"jobs GPUs beyond an int", TraceFormat::kGpuscalerJobs, "id,submit_s,duration_s,gpus\na,0,10,4294967297\n",
       "t.csv:2: column 'gpus': must be in [0, 1048576], got '4294967297'"},
      {"jobs priority beyond an int", TraceFormat::kGpuscalerJobs,
       "id,submit_s,duration_s,priority\na,0,10,99999999999\n",
       "t.csv:2: column 'priority': must be in [-1000000000, 1000000000], got '99999999999'"},
      {"helios missing column", TraceFormat::kHeliosMinute, "vc,time,running_gpu_num\n",
       "t.csv:1: missing column 'pending_gpu_num'"},
      {"helios duplicate minute", TraceFormat::kHeliosMinute,
       "vc,time,running_gpu_num,pending_gpu_num\nv,2020-05-01 00:00:00,1,0\nv,2020-05-01 00:00:00,2,0\n",
       "t.csv:3: column 'time': second row for vc 'v' at '2020-05-01 00:00:00' (first on line 2)"},
      {"philly bad submit", TraceFormat::kPhillyJobs,
       "jobid,submitted_time,runtime_min,num_gpus\nj,2017-13-01 00:00:00,60,8\n",
       "t.csv:2: column 'submitted_time': '2017-13-01 00:00:00' is not an RFC 3339 time"},
      {"philly zero machines", TraceFormat::kPhillyJobs,
       "jobid,submitted_time,runtime_min,num_gpus,num_machines\nj,2017-10-01 00:00:00,60,8,0\n",
       "t.csv:2: column 'num_machines': must be >= 1, got '0'"},
      {"genai queue negative", TraceFormat::kAlibabaGenaiQueue,
       "value,container_ip,timestamp_anon\n-1,,1662858720.0\n", "t.csv:2: column 'value': must be >= 0, got '-1'"},
      {"genai qps bad timestamp", TraceFormat::kAlibabaGenaiQps,
       "timestamp_anon,value,container_ip,request_type\nnoon,1,,API Requests\n",
       "t.csv:2: column 'timestamp_anon': 'noon' is not a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Result<Trace> t = ParseTrace(c.text, "t.csv", c.format);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().category(), ErrorCategory::kInvalidInput);
    EXPECT_EQ(t.error().message(), c.want);
  }
}

TEST(TraceReaders, RejectAContradictoryWindow) {
  TraceOptions o;
  o.window_start = Seconds(100);
  o.window_end = Seconds(100);
  Result<Trace> t = ParseTrace("id,submit_s,duration_s\n", "t.csv", TraceFormat::kGpuscalerJobs, o);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().category(), ErrorCategory::kConfig);
}

TEST(TraceReaders, WindowRebasesJobsAndMaxJobsKeepsTheFirst) {
  TraceOptions o;
  o.window_start = Seconds(100);
  o.window_end = Seconds(300);
  Trace t = MustRead("jobs.csv", TraceFormat::kGpuscalerJobs, o);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"notebook,1", "train-b"}));
  EXPECT_EQ(t.jobs[0].submit, Seconds(20));
  EXPECT_EQ(t.stats.skipped.at("outside window"), 2);
  o.max_jobs = 1;
  t = MustRead("jobs.csv", TraceFormat::kGpuscalerJobs, o);
  ASSERT_EQ(Ids(t), std::vector<std::string>{"notebook,1"});
  EXPECT_EQ(t.stats.skipped.at("over max_jobs"), 1);
}

TEST(TraceReaders, OutputOrderDoesNotDependOnRowOrder) {
  // Seeded shuffles of the fixture's rows all read to the same trace.
  const std::vector<std::string> rows = {
      "train-b,120,3600,8,0,,a100-80gb|h100-80gb,81920,32000,262144,training,5,true,900",
      "infer-a,0,86400,1,,,,,4000,16384,inference,10,false,0",
      "\"notebook,1\",120,1800,0,250,,t4,,2000,8192,x,0,yes,",
      "mig-1,300.4,600,0,0,1g.10gb,,,1000,4096,batch,,,",
      "train-a,120,60,1,0,,,,0,0,training,0,true,60",
  };
  const std::string header =
      "id,submit_s,duration_s,gpus,gpu_milli,mig_profile,gpu_models,min_gpu_memory_mib,cpu_milli,memory_mib,"
      "class,priority,interruptible,checkpoint_interval_s\n";
  std::string reference;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<std::string> shuffled = rows;
    std::mt19937 rng(seed);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::string text = header;
    for (const std::string& r : shuffled) text += r + "\n";
    Result<Trace> t = ParseTrace(text, "s.csv", TraceFormat::kGpuscalerJobs);
    ASSERT_TRUE(t.ok()) << t.error().ToString();
    if (reference.empty()) reference = Dump(*t);
    EXPECT_EQ(Dump(*t), reference);
  }
  EXPECT_NE(reference.find("train-a"), std::string::npos);
}

TEST(GpuscalerSeries, GroupsPointsByClassAndUnit) {
  const Trace t = MustRead("series.csv", TraceFormat::kGpuscalerSeries);
  ASSERT_EQ(t.series.size(), 2u);
  EXPECT_EQ(t.series[0].workload_class, "batch");
  EXPECT_EQ(t.series[0].unit, "jobs");
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 12}}));
  EXPECT_EQ(t.series[1].workload_class, "inference");
  EXPECT_EQ(t.series[1].unit, "gpus");
  EXPECT_EQ(Points(t.series[1]), (std::vector<std::pair<int64_t, double>>{{0, 4}, {60, 6}, {120, 2.5}}));
  EXPECT_EQ(t.span, Seconds(120));
}

TEST(GpuscalerSeries, WindowCarriesTheValueInForceAtItsStart) {
  TraceOptions o;
  o.window_start = Seconds(90);
  const Trace t = MustRead("series.csv", TraceFormat::kGpuscalerSeries, o);
  ASSERT_EQ(t.series.size(), 2u);
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 12}}));
  EXPECT_EQ(Points(t.series[1]), (std::vector<std::pair<int64_t, double>>{{0, 6}, {30, 2.5}}));
  EXPECT_EQ(t.stats.skipped.at("outside window"), 1);  // inference's point at 0
}

TEST(AlibabaOpenb, MapsPodsAndCountsWhatItSkips) {
  const Trace t = MustRead("openb_pods.csv", TraceFormat::kAlibabaOpenb);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"pod-eight", "pod-whole", "pod-share", "pod-undisclosed", "pod-cpu"}));
  EXPECT_EQ(t.stats.rows_read, 7);
  EXPECT_EQ(t.stats.rows_used, 5);
  EXPECT_EQ(t.stats.skipped, (std::map<std::string, int64_t>{{"no deletion_time", 1}, {"non-positive duration", 1}}));
  ASSERT_FALSE(t.stats.warnings.empty());
  EXPECT_EQ(t.stats.warnings[0], "1 pods have no scheduled_time; their duration counts from creation_time");

  const TraceJob& eight = t.jobs[0];  // created 100 = the earliest, so offset 0
  EXPECT_EQ(eight.submit, Seconds(0));
  EXPECT_EQ(eight.duration, Seconds(6900));  // deletion - scheduled
  EXPECT_EQ(eight.unit.gpus, 8);
  EXPECT_EQ(eight.unit.gpu_models, std::vector<std::string>{"v100-32gb"});
  EXPECT_EQ(eight.unit.workload_class, "batch");  // Burstable
  EXPECT_TRUE(eight.unit.interruptible);

  const TraceJob& whole = t.jobs[1];
  EXPECT_EQ(whole.duration, Seconds(950));
  EXPECT_EQ(whole.unit.gpus, 1);
  EXPECT_EQ(whole.unit.gpu_milli, 0);
  EXPECT_EQ(whole.unit.cpu_milli, 12000);
  EXPECT_EQ(whole.unit.memory_mib, 16384);
  EXPECT_EQ(whole.unit.workload_class, "inference");
  EXPECT_FALSE(whole.unit.interruptible);
  EXPECT_EQ(whole.unit.priority, 1);
  EXPECT_EQ(whole.unit.labels.at("qos"), "LS");

  const TraceJob& share = t.jobs[2];
  EXPECT_EQ(share.submit, Seconds(100));
  EXPECT_EQ(share.duration, Seconds(300));  // deletion - creation: never scheduled
  EXPECT_EQ(share.unit.gpus, 0);
  EXPECT_EQ(share.unit.gpu_milli, 460);
  EXPECT_EQ(share.unit.gpu_models, (std::vector<std::string>{"v100-16gb", "t4"}));

  const TraceJob& undisclosed = t.jobs[3];
  EXPECT_TRUE(undisclosed.unit.gpu_models.empty());  // G2 listed: no constraint
  EXPECT_EQ(undisclosed.unit.workload_class, "inference");  // Guaranteed

  const TraceJob& cpu = t.jobs[4];
  EXPECT_EQ(cpu.unit.gpus, 0);
  EXPECT_EQ(cpu.unit.gpu_milli, 0);
}

TEST(AlibabaOpenb, OptionsDropCpuOnlyPodsAndOverrideInterruptibility) {
  TraceOptions o;
  o.skip_cpu_only = true;
  o.interruptible = true;
  o.latency_sensitive_class = "serving";
  const Trace t = MustRead("openb_pods.csv", TraceFormat::kAlibabaOpenb, o);
  EXPECT_EQ(t.jobs.size(), 4u);
  EXPECT_EQ(t.stats.skipped.at("cpu-only"), 1);
  for (const TraceJob& j : t.jobs) EXPECT_TRUE(j.unit.interruptible) << j.unit.id;
  EXPECT_EQ(t.jobs[1].unit.workload_class, "serving");
}

TEST(AlibabaOpenb, RejectsMalformedFixtures) {
  struct Case {
    std::string file;
    std::string want;
  } cases[] = {
      {"openb_missing_column.csv", ":1: missing column 'qos'"},
      {"openb_malformed.csv", ":3: column 'qos': 'XX' is not LS, BE, Burstable or Guaranteed"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    Result<Trace> t = ReadTrace(Fixture(c.file), TraceFormat::kAlibabaOpenb);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message(), Fixture(c.file) + c.want);
  }
}

TEST(AlibabaGpuNames, MapToCatalogShortNames) {
  EXPECT_EQ(AlibabaGpuToCatalog("V100M16"), "v100-16gb");
  EXPECT_EQ(AlibabaGpuToCatalog("V100M32"), "v100-32gb");
  EXPECT_EQ(AlibabaGpuToCatalog("T4"), "t4");
  EXPECT_EQ(AlibabaGpuToCatalog("A10"), "a10g");
  EXPECT_EQ(AlibabaGpuToCatalog("P100"), "P100");
  EXPECT_EQ(AlibabaGpuToCatalog("G1"), "");
  EXPECT_EQ(AlibabaGpuToCatalog("G3"), "");
  EXPECT_EQ(AlibabaGpuToCatalog(""), "");
}

TEST(AlibabaDlrm, ReadsInstancesThatExistAtStartOrRunToTheEnd) {
  const Trace t = MustRead("dlrm_instances.csv", TraceFormat::kAlibabaDlrm);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"inst-0", "inst-1", "inst-2", "inst-3"}));
  EXPECT_EQ(t.stats.skipped, (std::map<std::string, int64_t>{{"non-positive duration", 1}}));
  EXPECT_EQ(t.stats.rows_used, 4);
  // No deletion: runs to the largest time in the file (5000).
  EXPECT_EQ(t.jobs[0].submit, Seconds(0));
  EXPECT_EQ(t.jobs[0].duration, Seconds(5000));
  EXPECT_EQ(t.jobs[0].unit.gpus, 1);
  EXPECT_EQ(t.jobs[0].unit.cpu_milli, 12000);
  EXPECT_EQ(t.jobs[0].unit.memory_mib, 120 * 1024);
  EXPECT_EQ(t.jobs[0].unit.labels.at("app"), "app_0");
  EXPECT_FALSE(t.jobs[0].unit.interruptible);
  EXPECT_EQ(t.jobs[0].unit.workload_class, "inference");
  EXPECT_EQ(t.jobs[1].unit.gpus, 0);  // CN
  EXPECT_EQ(t.jobs[1].duration, Seconds(5000));
  EXPECT_EQ(t.jobs[2].submit, Seconds(475));
  EXPECT_EQ(t.jobs[2].duration, Seconds(1390));  // deletion - scheduled
  EXPECT_EQ(t.jobs[3].unit.gpu_milli, 500);
  EXPECT_EQ(t.jobs[3].duration, Seconds(3900));
  EXPECT_EQ(t.stats.warnings.size(), 2u);
}

TEST(AlibabaDlrm, EndOptionCutsOpenEndedInstances) {
  TraceOptions o;
  o.dlrm_end_s = 1000;
  const Trace t = MustRead("dlrm_instances.csv", TraceFormat::kAlibabaDlrm, o);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"inst-0", "inst-1", "inst-2"}));
  EXPECT_EQ(t.jobs[0].duration, Seconds(1000));
  EXPECT_EQ(t.stats.skipped.at("non-positive duration"), 2);
}

TEST(HeliosMinute, SumsRunningAndPendingGpusPerVc) {
  const Trace t = MustRead("helios_minute.csv", TraceFormat::kHeliosMinute);
  ASSERT_EQ(t.series.size(), 2u);
  EXPECT_EQ(t.series[0].workload_class, "vcA");
  EXPECT_EQ(t.series[0].unit, "gpus");
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 24}, {60, 24}}));
  EXPECT_EQ(Points(t.series[1]), (std::vector<std::pair<int64_t, double>>{{0, 162}, {60, 170}, {120, 178}}));
  ASSERT_TRUE(t.start_time.has_value());
  EXPECT_EQ(FormatRfc3339(*t.start_time), "2020-05-01T00:00:00Z");
  EXPECT_EQ(t.span, Seconds(120));
  EXPECT_TRUE(t.jobs.empty());
}

TEST(HeliosMinute, RejectsANegativeCount) {
  Result<Trace> t = ReadTrace(Fixture("helios_malformed.csv"), TraceFormat::kHeliosMinute);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message(), Fixture("helios_malformed.csv") + ":3: column 'pending_gpu_num': must be >= 0, got '-4'");
}

TEST(PhillyJobs, MultiMachineJobsBecomeGangsAndZeroRuntimeIsSkipped) {
  const Trace t = MustRead("philly_jobs.csv", TraceFormat::kPhillyJobs);
  ASSERT_EQ(Ids(t), (std::vector<std::string>{"app_1", "app_3/0", "app_3/1"}));
  EXPECT_EQ(t.jobs[0].submit, Seconds(0));
  EXPECT_EQ(t.jobs[0].duration, Seconds(3630));
  EXPECT_EQ(t.jobs[0].unit.gpus, 4);
  EXPECT_EQ(t.jobs[0].unit.workload_class, "training");
  EXPECT_TRUE(t.jobs[0].unit.interruptible);
  EXPECT_EQ(t.jobs[1].submit, Seconds(1800));
  EXPECT_EQ(t.jobs[1].duration, Seconds(7200));
  EXPECT_EQ(t.jobs[1].unit.gpus, 8);
  ASSERT_TRUE(t.jobs[1].unit.gang);
  EXPECT_EQ(*t.jobs[1].unit.gang, (GangMembership{"app_3", 2, true, false}));
  EXPECT_EQ(t.jobs[2].unit.gang, t.jobs[1].unit.gang);
  EXPECT_FALSE(t.jobs[0].unit.gang);
  EXPECT_EQ(t.stats.skipped, (std::map<std::string, int64_t>{{"non-positive duration", 1}}));
  EXPECT_EQ(FormatRfc3339(*t.start_time), "2017-10-01T00:00:00Z");

  TraceOptions split;
  split.multi_node = MultiNodeJobs::kSplit;
  const Trace independent = MustRead("philly_jobs.csv", TraceFormat::kPhillyJobs, split);
  ASSERT_EQ(Ids(independent), Ids(t));
  EXPECT_FALSE(independent.jobs[1].unit.gang);
  EXPECT_EQ(independent.jobs[1].unit.gpus, 8);

  TraceOptions whole;
  whole.multi_node = MultiNodeJobs::kWhole;
  const Trace w = MustRead("philly_jobs.csv", TraceFormat::kPhillyJobs, whole);
  ASSERT_EQ(Ids(w), (std::vector<std::string>{"app_1", "app_3"}));
  EXPECT_EQ(w.jobs[1].unit.gpus, 16);
}

TEST(AlibabaGenai, QueueSizeIsASeriesOfJobs) {
  const Trace t = MustRead("genai_queue.csv", TraceFormat::kAlibabaGenaiQueue);
  ASSERT_EQ(t.series.size(), 1u);
  EXPECT_EQ(t.series[0].workload_class, "genai");
  EXPECT_EQ(t.series[0].unit, "jobs");
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 0}, {57, 2}, {114, 1.5}}));
  EXPECT_EQ(ToUnixSeconds(*t.start_time), 1662858720);
}

TEST(AlibabaGenai, QpsSumsContainersPerTimestampAndAveragesWiderBins) {
  Trace t = MustRead("genai_qps.csv", TraceFormat::kAlibabaGenaiQps);
  ASSERT_EQ(t.series.size(), 1u);
  EXPECT_EQ(t.series[0].unit, "qps");
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 1.75}, {57, 2}, {114, 4}}));
  EXPECT_EQ(t.stats.rows_used, 6);
  TraceOptions o;
  o.bin = Seconds(60);
  t = MustRead("genai_qps.csv", TraceFormat::kAlibabaGenaiQps, o);
  EXPECT_EQ(Points(t.series[0]), (std::vector<std::pair<int64_t, double>>{{0, 1.875}, {60, 4}}));
}

TEST(AlibabaGenai, DutyCycleIsMeanUtilizationAsAFraction) {
  const Trace t = MustRead("genai_duty_cycle.csv", TraceFormat::kAlibabaGenaiDutyCycle);
  ASSERT_EQ(t.series.size(), 1u);
  EXPECT_EQ(t.series[0].unit, "utilization");
  ASSERT_EQ(t.series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(t.series[0].points[0].value, 0.25);
  EXPECT_DOUBLE_EQ(t.series[0].points[1].value, 0.6);
  Result<Trace> bad = ReadTrace(Fixture("genai_duty_cycle_malformed.csv"), TraceFormat::kAlibabaGenaiDutyCycle);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            Fixture("genai_duty_cycle_malformed.csv") + ":3: column 'value': must be in [0, 100], got '150.0'");
}

TEST(TraceReaders, ReadOneHundredThousandJobsWellUnderASecond) {
  std::mt19937_64 rng(42);
  std::string text = "id,submit_s,duration_s,gpus,gpu_models,cpu_milli,memory_mib,class,interruptible\n";
  constexpr int kJobs = 100'000;
  for (int i = 0; i < kJobs; ++i) {
    text += "job-" + std::to_string(i) + "," + std::to_string(rng() % 2'592'000) + "," +
            std::to_string(60 + rng() % 86'400) + "," + std::to_string(1 + rng() % 8) + ",a10g|l4," +
            std::to_string(1000 * (1 + rng() % 32)) + ",16384," + (i % 3 ? "batch" : "inference") + ",true\n";
  }
  // CPU time, not wall time: the build machine is shared.
  const std::clock_t start = std::clock();
  Result<Trace> t = ParseTrace(std::move(text), "big.csv", TraceFormat::kGpuscalerJobs);
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  ASSERT_TRUE(t.ok()) << t.error().ToString();
  EXPECT_EQ(t->jobs.size(), static_cast<size_t>(kJobs));
  EXPECT_TRUE(std::is_sorted(t->jobs.begin(), t->jobs.end(),
                             [](const TraceJob& a, const TraceJob& b) { return a.submit < b.submit; }));
#if !defined(__SANITIZE_ADDRESS__)  // the bound is for Release builds
  EXPECT_LT(seconds, 1.0);
#endif
  RecordProperty("parse_seconds", std::to_string(seconds));
}

}  // namespace
}  // namespace gpuscaler::sim
