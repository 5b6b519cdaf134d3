// SignalCollector without real servers: the pure answer functions, and
// Collect against fixture HTTP servers (auth, secrets, deadlines, URLs).
#include "gpuscaler/signals/collector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "signals/test_files.h"
#include "support/fixture_http_server.h"
#include "support/temp_dir.h"

namespace gpuscaler::signals {
namespace {

using gpuscaler::testing::FakeClock;
using gpuscaler::testing::FixtureHttpServer;
using gpuscaler::testing::FixtureRequest;
using gpuscaler::testing::FixtureResponse;
using gpuscaler::testing::TempDir;
using std::chrono::milliseconds;

constexpr char kSecret[] = "planted-secret-5b9e7c";

SignalQuery Prom(std::string promql) { return {.source = SignalSource::kPrometheus, .query = std::move(promql), .queue = ""}; }
SignalQuery Rabbit(std::string vhost, std::string queue) {
  return {.source = SignalSource::kRabbitMq, .query = "", .vhost = std::move(vhost), .queue = std::move(queue)};
}
SignalQuery Dcgm() { return {.source = SignalSource::kDcgm, .query = "", .queue = ""}; }

net::HttpResponse Http(int status, std::string body, std::string content_type = "application/json") {
  net::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = {{"Content-Type", std::move(content_type)}};
  return r;
}

FixtureResponse Json(std::string body, int status = 200) {
  FixtureResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

std::string VectorOf(const std::vector<std::pair<std::string, std::string>>& series, double t = 1782000000.5) {
  std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
  for (size_t i = 0; i < series.size(); ++i) {
    out += (i ? "," : "") + std::string(R"({"metric":{)") + series[i].first + R"(},"value":[)" + std::to_string(t) +
           R"(,")" + series[i].second + R"("]})";
  }
  return out + "]}}";
}

TEST(SeriesHostKey, PrefersHostLabelsThenTheOnlyLabelThenAllLabels) {
  struct Case {
    std::string name;
    std::vector<Label> labels;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"Hostname", {{"Hostname", "gpu-a"}, {"job", "dcgm"}}, "gpu-a"},
      {"hostname", {{"gpu", "0"}, {"hostname", "gpu-b"}}, "gpu-b"},
      {"node before instance", {{"instance", "10.0.0.1:9400"}, {"node", "ip-10-0-0-1"}}, "ip-10-0-0-1"},
      {"instance", {{"instance", "10.0.0.1:9400"}, {"job", "dcgm"}}, "10.0.0.1:9400"},
      {"only label", {{"queue", "celery"}}, "celery"},
      {"all labels", {{"__name__", "x"}, {"a", "1"}, {"b", "2"}}, "a=1,b=2"},
      {"none", {}, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(SeriesHostKey(c.labels), c.want);
  }
}

TEST(PrometheusAnswer, TurnsEachAnswerShapeIntoAReadingOrAnError) {
  struct Case {
    std::string name;
    Result<net::HttpResponse> answer;
    std::optional<double> want_value;  // empty: missing
    std::optional<ErrorCategory> want_category;
    std::map<std::string, double> want_hosts;
    std::string want_in_error;
  };
  const std::vector<Case> cases = {
      {"one series without labels", Http(200, VectorOf({{"", "42"}})), 42.0, std::nullopt, {}, ""},
      {"scalar", Http(200, R"({"status":"success","data":{"resultType":"scalar","result":[1782000000,"7"]}})"),
       7.0, std::nullopt, {}, ""},
      {"one host series", Http(200, VectorOf({{R"("Hostname":"gpu-a")", "0.5"}})), 0.5, std::nullopt,
       {{"gpu-a", 0.5}}, ""},
      {"several hosts: mean, and each host",
       Http(200, VectorOf({{R"("Hostname":"gpu-a")", "0.2"}, {R"("Hostname":"gpu-b")", "0.6"},
                           {R"("Hostname":"gpu-c")", "NaN"}})),
       0.4, std::nullopt, {{"gpu-a", 0.2}, {"gpu-b", 0.6}}, ""},
      {"no series is missing, not zero", Http(200, VectorOf({})), std::nullopt, ErrorCategory::kNotFound, {},
       "no series"},
      {"all NaN", Http(200, VectorOf({{"", "NaN"}})), std::nullopt, ErrorCategory::kNotFound, {}, "NaN"},
      {"bad PromQL is a config error with Prometheus' message",
       Http(400, R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected"})"),
       std::nullopt, ErrorCategory::kConfig, {}, "parse error: unexpected"},
      {"proxy 401 without JSON", Http(401, "Unauthorized", "text/plain"), std::nullopt, ErrorCategory::kAuth, {},
       "401"},
      {"503 without JSON", Http(503, "<html>down</html>", "text/html"), std::nullopt, ErrorCategory::kTransient, {},
       "503"},
      {"range vector", Http(200, R"({"status":"success","data":{"resultType":"matrix","result":[]}})"),
       std::nullopt, ErrorCategory::kConfig, {}, "instant vector"},
      {"connect failure", Error::Transient("127.0.0.1:9:connect: Connection refused"), std::nullopt,
       ErrorCategory::kTransient, {}, "prometheus: 127.0.0.1:9"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CollectedSignal got = PrometheusAnswer(Prom("q"), c.answer);
    EXPECT_EQ(got.total.source, "prometheus");
    EXPECT_EQ(got.total.key, "q");
    if (c.want_value) {
      ASSERT_TRUE(got.total.ok()) << got.total.error;
      EXPECT_DOUBLE_EQ(*got.total.value, *c.want_value);
      EXPECT_EQ(got.total.observed_at, FromUnixSeconds(1782000000));
      EXPECT_FALSE(got.error.has_value());
    } else {
      EXPECT_EQ(got.total.state, SignalState::kMissing);
      EXPECT_FALSE(got.total.value.has_value());
      ASSERT_TRUE(got.error.has_value());
      EXPECT_EQ(got.error->category(), *c.want_category) << got.error->ToString();
      EXPECT_NE(got.total.error.find(c.want_in_error), std::string::npos) << got.total.error;
    }
    EXPECT_EQ(got.by_host, c.want_hosts);
  }
}

TEST(PrometheusAnswer, UsesTheOldestSampleAsTheObservationTime) {
  const std::string body = R"({"status":"success","data":{"resultType":"vector","result":[
      {"metric":{"Hostname":"a"},"value":[1782000100.9,"1"]},
      {"metric":{"Hostname":"b"},"value":[1782000040.2,"3"]}]}})";
  CollectedSignal got = PrometheusAnswer(Prom("q"), Http(200, body));
  ASSERT_TRUE(got.total.ok());
  EXPECT_EQ(got.total.observed_at, FromUnixSeconds(1782000040));
}

TEST(RabbitMqAnswer, ReadsMessagesReadyAsTheBacklog) {
  const WallTime t = FromUnixSeconds(1782000000);
  CollectedSignal got = RabbitMqAnswer(
      Rabbit("/", "celery"),
      Http(200, R"({"name":"celery","vhost":"/","messages_ready":12,"messages_unacknowledged":3,"messages":15})"), t);
  ASSERT_TRUE(got.total.ok()) << got.total.error;
  EXPECT_EQ(*got.total.value, 12);
  EXPECT_EQ(got.total.key, "//celery");
  EXPECT_EQ(got.total.observed_at, t);
}

TEST(RabbitMqAnswer, FailuresAreMissingWithTheirCategory) {
  struct Case {
    std::string name;
    Result<net::HttpResponse> answer;
    ErrorCategory want;
  };
  const std::vector<Case> cases = {
      {"wrong password", Http(401, R"({"error":"not_authorized","reason":"Login failed"})"), ErrorCategory::kAuth},
      {"no such queue", Http(404, R"({"error":"Object Not Found","reason":"Not Found"})"), ErrorCategory::kNotFound},
      {"no counts yet", Http(200, R"({"name":"celery","vhost":"/"})"), ErrorCategory::kTransient},
      {"server down", Error::Transient("127.0.0.1:1: connect: Connection refused"), ErrorCategory::kTransient},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CollectedSignal got = RabbitMqAnswer(Rabbit("/", "celery"), c.answer, FromUnixSeconds(1782000000));
    EXPECT_EQ(got.total.state, SignalState::kMissing);
    EXPECT_FALSE(got.total.value.has_value());
    ASSERT_TRUE(got.error.has_value());
    EXPECT_EQ(got.error->category(), c.want) << got.error->ToString();
    EXPECT_EQ(got.total.error.rfind(std::string(ToString(c.want)) + ": rabbitmq", 0), 0u) << got.total.error;
  }
}

TEST(DcgmAnswer, AveragesUtilisationPerHostFromRealExporterShapes) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(rtx, "dcgm/samples/gpu-operator-v25.10-rtx4000ada-k8s.prom");
  GPUSCALER_READ_REFERENCE_OR_SKIP(a100, "dcgm/samples/nvidia-docs-a100-mig.prom");
  const WallTime t = FromUnixSeconds(1782000000);
  CollectedSignal got = DcgmAnswer(Dcgm(),
                                   {{"http://10.0.0.1:9400/metrics", Http(200, rtx, "text/plain; version=0.0.4")},
                                    {"http://10.0.0.2:9400/metrics", Http(200, a100, "text/plain; version=0.0.4")}},
                                   t);
  ASSERT_TRUE(got.total.ok()) << got.total.error;
  // RTX: DCGM_FI_DEV_GPU_UTIL 0 %; A100: no GPU_UTIL, GR_ENGINE_ACTIVE 0.995630.
  ASSERT_EQ(got.by_host.size(), 2u);
  EXPECT_DOUBLE_EQ(got.by_host.at("lke529760-766837-0a634ab30000"), 0.0);
  EXPECT_NEAR(got.by_host.at("ub20-a100-k8s"), 0.99563, 1e-9);
  EXPECT_NEAR(*got.total.value, 0.99563 / 2, 1e-9);
  EXPECT_EQ(got.total.observed_at, t);
  EXPECT_EQ(got.total.key, "DCGM_FI_DEV_GPU_UTIL");
}

TEST(DcgmAnswer, AnExporterThatFailsMakesTheTotalMissingButKeepsTheOtherHosts) {
  const std::string exposition =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"gpu-a\"} 50\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-2\",Hostname=\"gpu-a\"} 70\n";
  CollectedSignal got =
      DcgmAnswer(Dcgm(),
                 {{"http://10.0.0.1:9400/metrics", Http(200, exposition, "text/plain")},
                  {"http://10.0.0.2:9400/metrics", Error::Transient("10.0.0.2:9400: connect: timed out")}},
                 FromUnixSeconds(1782000000));
  EXPECT_EQ(got.total.state, SignalState::kMissing);
  ASSERT_TRUE(got.error.has_value());
  EXPECT_EQ(got.error->category(), ErrorCategory::kTransient);
  EXPECT_NE(got.total.error.find("1 of 2 exporters failed"), std::string::npos) << got.total.error;
  EXPECT_NE(got.total.error.find("10.0.0.2:9400"), std::string::npos) << got.total.error;
  ASSERT_EQ(got.by_host.size(), 1u);
  EXPECT_DOUBLE_EQ(got.by_host.at("gpu-a"), 0.6);
}

TEST(DcgmAnswer, UsesTheExporterHostWhenSeriesHaveNoHostLabel) {
  CollectedSignal got = DcgmAnswer(
      Dcgm(), {{"http://node-7:9400/metrics", Http(200, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 25\n")}},
      FromUnixSeconds(1782000000));
  ASSERT_TRUE(got.total.ok()) << got.total.error;
  EXPECT_DOUBLE_EQ(got.by_host.at("node-7"), 0.25);
}

TEST(DcgmAnswer, BlankValuesAreMissingNotIdle) {
  CollectedSignal got = DcgmAnswer(
      Dcgm(),
      {{"http://n:9400/metrics", Http(200, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 9223372036854775794\n")}},
      FromUnixSeconds(1782000000));
  EXPECT_EQ(got.total.state, SignalState::kMissing);
  ASSERT_TRUE(got.error.has_value());
  EXPECT_EQ(got.error->category(), ErrorCategory::kNotFound);
}

// Collect against fixture servers.

class CollectorFixture : public ::testing::Test {
 protected:
  FakeClock clock_;
  TempDir dir_;
};

TEST_F(CollectorFixture, SendsTheBearerTokenAndRereadsItsFileWhenItChanges) {
  std::mutex mu;
  std::vector<std::string> seen;
  FixtureHttpServer prom([&](const FixtureRequest& req) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(req.Header("Authorization"));
    return Json(VectorOf({{"", "3"}}));
  });
  const std::string token_file = dir_.Write("token", "first-token\n");
  SignalEndpoints ep;
  ep.prometheus.url = prom.url();
  ep.prometheus.bearer_token_file = token_file;
  SignalCollector collector(ep, clock_);
  ASSERT_TRUE(collector.CredentialsStatus().ok());
  ASSERT_TRUE(collector.Collect({Prom("sum(x)")})[0].total.ok());

  // Kubernetes swaps a mounted secret by replacing the file.
  const std::string next = dir_.Write("token.next", "second-token-longer\n");
  std::filesystem::rename(next, token_file);
  ASSERT_TRUE(collector.Collect({Prom("sum(x)")})[0].total.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"Bearer first-token", "Bearer second-token-longer"}));
}

TEST_F(CollectorFixture, QueriesPrometheusWithTheEncodedQueryAndBasicAuth) {
  std::string target, authorization;
  FixtureHttpServer prom([&](const FixtureRequest& req) {
    target = req.target;
    authorization = req.Header("Authorization");
    return Json(VectorOf({{R"("Hostname":"gpu-a")", "0.25"}, {R"("Hostname":"gpu-b")", "0.75"}}));
  });
  SignalEndpoints ep;
  ep.prometheus.url = prom.url() + "/";
  ep.prometheus.username = "reader";
  ep.prometheus.password_file = dir_.Write("pw", "pw-1\n");
  SignalCollector collector(ep, clock_);
  std::vector<CollectedSignal> got = collector.Collect({Prom("avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)")});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(got[0].total.ok()) << got[0].total.error;
  EXPECT_DOUBLE_EQ(*got[0].total.value, 0.5);
  EXPECT_EQ(got[0].by_host, (std::map<std::string, double>{{"gpu-a", 0.25}, {"gpu-b", 0.75}}));
  EXPECT_EQ(target, "/api/v1/query?query=avg%20by%20%28Hostname%29%20%28DCGM_FI_DEV_GPU_UTIL%29");
  EXPECT_EQ(authorization, net::BasicAuthorization("reader", "pw-1"));
}

TEST_F(CollectorFixture, ReadsRabbitMqWithCredentialsFromTheEnvironmentAndAnEncodedVhost) {
  std::string target, authorization;
  FixtureHttpServer rabbit([&](const FixtureRequest& req) {
    target = req.target;
    authorization = req.Header("Authorization");
    return Json(R"({"name":"q 1","vhost":"team a/gpu","messages_ready":9})");
  });
  SignalEndpoints ep;
  ep.rabbitmq.url = rabbit.url();
  ep.rabbitmq.username_env = "RABBIT_USER";
  ep.rabbitmq.password_env = "RABBIT_PASS";
  const std::map<std::string, std::string> env = {{"RABBIT_USER", "svc"}, {"RABBIT_PASS", "pw-env"}};
  SignalCollector collector(ep, clock_, [&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  clock_.Advance(Seconds(5));
  std::vector<CollectedSignal> got = collector.Collect({Rabbit("team a/gpu", "q 1")});
  ASSERT_TRUE(got[0].total.ok()) << got[0].total.error;
  EXPECT_EQ(*got[0].total.value, 9);
  EXPECT_EQ(got[0].total.observed_at, clock_.WallNow());
  EXPECT_EQ(target, "/api/queues/team%20a%2Fgpu/q%201");
  EXPECT_EQ(authorization, net::BasicAuthorization("svc", "pw-env"));
}

TEST_F(CollectorFixture, NeverPutsASecretInAnErrorEvenWhenTheServerEchoesIt) {
  FixtureHttpServer rabbit([](const FixtureRequest& req) {
    return Json(std::string(R"({"error":"not_authorized","reason":"bad login )") + kSecret + " " +
                    req.Header("Authorization") + R"("})",
                401);
  });
  FixtureHttpServer prom([](const FixtureRequest& req) {
    return Json(R"({"status":"error","errorType":"bad_data","error":"token )" + req.Header("Authorization") + R"("})",
                400);
  });
  SignalEndpoints ep;
  ep.rabbitmq.url = rabbit.url();
  ep.rabbitmq.username = "guest";
  ep.rabbitmq.password_file = dir_.Write("rabbit-pw", kSecret);
  ep.prometheus.url = prom.url();
  ep.prometheus.bearer_token_file = dir_.Write("prom-token", std::string(kSecret) + "-token");
  SignalCollector collector(ep, clock_);
  std::vector<CollectedSignal> got = collector.Collect({Rabbit("/", "celery"), Prom("up")});
  ASSERT_TRUE(got[0].error.has_value());
  EXPECT_EQ(got[0].error->category(), ErrorCategory::kAuth);
  ASSERT_TRUE(got[1].error.has_value());
  EXPECT_EQ(got[1].error->category(), ErrorCategory::kConfig);
  const std::string basic = net::BasicAuthorization("guest", kSecret).substr(6);
  for (const CollectedSignal& c : got) {
    for (const std::string& text : {c.total.error, c.error->message(), c.total.key}) {
      EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
      EXPECT_EQ(text.find(basic), std::string::npos) << text;
    }
    EXPECT_NE(c.total.error.find("[redacted]"), std::string::npos) << c.total.error;
  }
}

TEST_F(CollectorFixture, AnUnreadableCredentialFileIsAConfigErrorNamingTheFileNotItsContents) {
  SignalEndpoints ep;
  ep.rabbitmq.url = "http://127.0.0.1:1";
  ep.rabbitmq.username = "guest";
  ep.rabbitmq.password_file = (dir_.path() / "absent").string();
  SignalCollector collector(ep, clock_);
  Status st = collector.CredentialsStatus();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().category(), ErrorCategory::kConfig);
  EXPECT_NE(st.error().message().find("absent"), std::string::npos) << st.error().message();
  std::vector<CollectedSignal> got = collector.Collect({Rabbit("/", "celery")});
  EXPECT_EQ(got[0].total.state, SignalState::kMissing);
  ASSERT_TRUE(got[0].error.has_value());
  EXPECT_EQ(got[0].error->category(), ErrorCategory::kConfig);

  // Once the file appears, the next Collect uses it.
  dir_.Write("absent", "now-here");
  got = collector.Collect({Rabbit("/", "celery")});
  ASSERT_TRUE(got[0].error.has_value());
  EXPECT_EQ(got[0].error->category(), ErrorCategory::kTransient) << got[0].error->ToString();
  EXPECT_TRUE(collector.CredentialsStatus().ok());
}

// An unknown source never reaches the collector: the policy loader refuses
// it (PolicyLoader tests, "unknown source").
TEST_F(CollectorFixture, UnconfiguredSourcesAreConfigErrors) {
  SignalCollector collector(SignalEndpoints{}, clock_);
  std::vector<CollectedSignal> got = collector.Collect({Prom("up"), Rabbit("/", "q"), Dcgm()});
  ASSERT_EQ(got.size(), 3u);
  for (const CollectedSignal& c : got) {
    SCOPED_TRACE(std::string(ToString(c.query.source)));
    EXPECT_EQ(c.total.state, SignalState::kMissing);
    ASSERT_TRUE(c.error.has_value());
    EXPECT_EQ(c.error->category(), ErrorCategory::kConfig);
  }
}

TEST_F(CollectorFixture, SendsIdenticalRequestsOnceAndAnswersEveryQueryInOrder) {
  FixtureHttpServer prom([](const FixtureRequest& req) {
    return Json(VectorOf({{"", req.target.find("b") != std::string::npos ? "2" : "1"}}));
  });
  SignalEndpoints ep;
  ep.prometheus.url = prom.url();
  SignalCollector collector(ep, clock_);
  std::vector<CollectedSignal> got = collector.Collect({Prom("a"), Prom("b"), Prom("a")});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(*got[0].total.value, 1);
  EXPECT_EQ(*got[1].total.value, 2);
  EXPECT_EQ(*got[2].total.value, 1);
  EXPECT_EQ(got[2].query.query, "a");
  EXPECT_EQ(prom.requests(), 2);
}

TEST_F(CollectorFixture, ASourcePastItsDeadlineIsMissingWhileTheOthersAnswer) {
  FixtureHttpServer slow([](const FixtureRequest&) {
    FixtureResponse r;
    r.hang = true;
    return r;
  });
  FixtureHttpServer rabbit([](const FixtureRequest&) { return Json(R"({"name":"q","vhost":"/","messages_ready":4})"); });
  FixtureHttpServer exporter([](const FixtureRequest&) {
    FixtureResponse r;
    r.body = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"gpu-a\"} 80\n";
    return r;
  });
  SignalEndpoints ep;
  ep.prometheus.url = slow.url();
  ep.rabbitmq.url = rabbit.url();
  ep.rabbitmq.username = "guest";
  ep.dcgm.urls = {exporter.url() + "/metrics"};
  ep.timeout = milliseconds(300);
  SignalCollector collector(ep, clock_);
  const auto start = std::chrono::steady_clock::now();
  std::vector<CollectedSignal> got = collector.Collect({Prom("up"), Rabbit("/", "q"), Dcgm()});
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1500));
  ASSERT_TRUE(got[0].error.has_value());
  EXPECT_EQ(got[0].error->category(), ErrorCategory::kTransient);
  EXPECT_NE(got[0].total.error.find("timed out"), std::string::npos) << got[0].total.error;
  EXPECT_FALSE(got[0].total.value.has_value());
  ASSERT_TRUE(got[1].total.ok()) << got[1].total.error;
  EXPECT_EQ(*got[1].total.value, 4);
  ASSERT_TRUE(got[2].total.ok()) << got[2].total.error;
  EXPECT_DOUBLE_EQ(*got[2].total.value, 0.8);
  EXPECT_EQ(got[2].by_host, (std::map<std::string, double>{{"gpu-a", 0.8}}));
}

TEST_F(CollectorFixture, RejectsADcgmQueryItCannotAnswer) {
  SignalEndpoints ep;
  ep.dcgm.urls = {"http://127.0.0.1:1/metrics"};
  SignalCollector collector(ep, clock_);
  std::vector<CollectedSignal> got = collector.Collect({{.source = SignalSource::kDcgm, .query = "DCGM_FI_DEV_FB_USED", .queue = ""}});
  ASSERT_TRUE(got[0].error.has_value());
  EXPECT_EQ(got[0].error->category(), ErrorCategory::kConfig);
}

}  // namespace
}  // namespace gpuscaler::signals
