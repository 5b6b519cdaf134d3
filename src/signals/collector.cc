#include "gpuscaler/signals/collector.h"

#include <sys/stat.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "gpuscaler/model/text.h"
#include "gpuscaler/model/text_file.h"
#include "gpuscaler/net/async_http.h"
#include "gpuscaler/net/url.h"
#include "gpuscaler/signals/dcgm.h"
#include "gpuscaler/signals/prometheus_api.h"
#include "gpuscaler/signals/rabbitmq.h"

namespace gpuscaler::signals {
namespace asio = boost::asio;

namespace {

constexpr std::string_view kPrometheus = "prometheus";
constexpr std::string_view kRabbitMq = "rabbitmq";
constexpr std::string_view kDcgm = "dcgm";

std::string KeyOf(const SignalQuery& q) {
  if (q.source == SignalSource::kRabbitMq) return q.vhost + "/" + q.queue;
  if (q.source == SignalSource::kDcgm) return std::string(kDcgmGpuUtil);
  return q.query;
}

CollectedSignal Missing(const SignalQuery& q, Error error) {
  CollectedSignal c;
  c.query = q;
  c.total = MakeMissingReading(std::string(ToString(q.source)), KeyOf(q), error.ToString());
  c.error = std::move(error);
  return c;
}

CollectedSignal Value(const SignalQuery& q, double value, WallTime observed_at) {
  CollectedSignal c;
  c.query = q;
  c.total = MakeReading(std::string(ToString(q.source)), KeyOf(q), value, observed_at);
  return c;
}

// Why a query to a JSON API source (Prometheus, RabbitMQ) cannot be sent, or
// nothing: no base URL configured (signals.<source>.url), the source's
// credentials could not be read, or the query lacks something
// (`query_problem`; empty when it is complete).
std::optional<Error> Unsendable(std::string_view source, const std::string& base_url,
                                const std::optional<Error>& auth_error, std::string_view query_problem) {
  const std::string name(source);
  if (base_url.empty()) return Error::Config(name + ": no URL configured (signals." + name + ".url)");
  if (auth_error) return *auth_error;
  if (!query_problem.empty()) return Error::Config(name + ": " + std::string(query_problem));
  return std::nullopt;
}

WallTime FromUnixSecondsFloor(double seconds) { return FromUnixSeconds(static_cast<int64_t>(std::floor(seconds))); }

// A credential: fixed (a literal or an environment variable read once), or a
// file read again whenever it changes.
class Credential {
 public:
  Credential() = default;
  static Credential Fixed(std::string value) {
    Credential c;
    c.configured_ = true;
    c.value_ = std::move(value);
    return c;
  }
  static Credential FromEnvironment(const std::string& what, const std::string& variable,
                                    const EnvironmentLookup& env) {
    Credential c;
    c.configured_ = true;
    if (std::optional<std::string> v = env(variable)) {
      c.value_ = Trim(*v);
    } else {
      c.error_ = Error::Config(what + ": environment variable " + variable + " is not set");
    }
    return c;
  }
  static Credential FromFile(std::string what, std::string path) {
    Credential c;
    c.configured_ = true;
    c.what_ = std::move(what);
    c.path_ = std::move(path);
    c.Refresh();
    return c;
  }

  // Re-reads the file when its identity, size or mtime changed.
  void Refresh() {
    if (path_.empty()) return;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
      Result<std::string> text = ReadConfigFile(path_);  // for the OS's reason
      error_ = Error::Config(what_ + " " + path_ + ": " + (text ? "cannot stat" : text.error().message()));
      stamp_.reset();
      return;
    }
    const Stamp now{st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec};
    if (stamp_ && *stamp_ == now && !error_) return;
    Result<std::string> text = ReadConfigFile(path_);
    if (!text) {
      error_ = Error::Config(what_ + " " + path_ + ": " + text.error().message());
      stamp_.reset();
      return;
    }
    value_ = Trim(*text);
    error_.reset();
    stamp_ = now;
  }

  bool configured() const { return configured_; }
  const std::optional<Error>& error() const { return error_; }
  const std::string& value() const { return value_; }

 private:
  struct Stamp {
    dev_t dev;
    ino_t ino;
    off_t size;
    time_t mtime_s;
    long mtime_ns;
    bool operator==(const Stamp&) const = default;
  };
  bool configured_ = false;
  std::string what_;
  std::string path_;
  std::string value_;
  std::optional<Error> error_;
  std::optional<Stamp> stamp_;
};

// What one Collect needs from the credentials, copied under the lock.
struct AuthSnapshot {
  std::optional<std::string> prometheus_authorization;
  std::optional<Error> prometheus_error;
  std::optional<std::string> rabbitmq_authorization;
  std::optional<Error> rabbitmq_error;
  std::vector<std::string> secrets;  // every value to scrub from messages
};

void AddSecret(std::vector<std::string>& secrets, const std::string& value) {
  if (!value.empty()) secrets.push_back(value);
}

std::string Scrub(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
      text.replace(at, secret.size(), "[redacted]");
      at += 10;
    }
  }
  return text;
}

void ScrubSignal(CollectedSignal& c, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  c.total.error = Scrub(std::move(c.total.error), secrets);
  if (c.error) c.error = Error(c.error->category(), Scrub(c.error->message(), secrets));
}

Error WithSource(std::string_view source, const Error& e) {
  if (e.message().rfind(std::string(source), 0) == 0) return e;
  return e.WithContext(source);
}

struct PendingFetch {
  net::HttpRequest request;
  net::HttpClientOptions options;
  std::optional<Result<net::HttpResponse>> answer;
  WallTime received{};
};

asio::awaitable<void> RunFetch(PendingFetch* fetch, const Clock* clock) {
  fetch->answer = co_await net::AsyncFetch(fetch->request, fetch->options);
  fetch->received = clock->WallNow();
}

}  // namespace

std::optional<std::string> ProcessEnvironment(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string SeriesHostKey(const std::vector<Label>& labels) {
  for (std::string_view name : {"Hostname", "hostname", "node", "instance"}) {
    for (const Label& l : labels) {
      if (l.name == name) return l.value;
    }
  }
  std::vector<const Label*> named;
  for (const Label& l : labels) {
    if (l.name != "__name__") named.push_back(&l);
  }
  if (named.size() == 1) return named.front()->value;
  std::string key;
  for (const Label* l : named) key += (key.empty() ? "" : ",") + l->name + "=" + l->value;
  return key;
}

CollectedSignal PrometheusAnswer(const SignalQuery& query, const Result<net::HttpResponse>& answer) {
  if (!answer) return Missing(query, WithSource(kPrometheus, answer.error()));
  const net::HttpResponse& res = *answer;
  // Prometheus sends its JSON envelope with 400/422/503 too: its own error
  // (bad_data -> kConfig, with Prometheus' message) beats the bare status.
  Result<PromQueryResult> parsed = ParsePromQueryResponse(res.body);
  if (!parsed) {
    if (res.status / 100 != 2 && parsed.error().category() == ErrorCategory::kInvalidInput) {
      return Missing(query, HttpStatusError(kPrometheus, res.status, res.body));
    }
    return Missing(query, WithSource(kPrometheus, parsed.error()));
  }
  if (res.status / 100 != 2) return Missing(query, HttpStatusError(kPrometheus, res.status, res.body));
  const PromQueryResult& r = *parsed;
  if (r.type == PromResultType::kMatrix || r.type == PromResultType::kString) {
    return Missing(query, Error::Config("prometheus: the query returned a " +
                                        std::string(r.type == PromResultType::kMatrix ? "range vector" : "string") +
                                        "; a signal query must return an instant vector or a scalar"));
  }
  if (r.series.empty()) {
    return Missing(query, Error::NotFound("prometheus: no series (the query matched nothing)"));
  }
  CollectedSignal c;
  c.query = query;
  std::map<std::string, std::pair<double, int>> hosts;  // key -> (sum, count): series that share a key
  double sum = 0;
  int finite = 0;
  std::optional<double> oldest_s;
  for (const PromSeries& s : r.series) {
    if (s.points.empty() || std::isnan(s.points.back().value)) continue;
    const PromPoint& p = s.points.back();
    sum += p.value;
    ++finite;
    oldest_s = oldest_s ? std::min(*oldest_s, p.timestamp_s) : p.timestamp_s;
    if (std::string key = SeriesHostKey(s.metric); !key.empty()) {
      auto& [host_sum, n] = hosts[key];
      host_sum += p.value;
      ++n;
    }
  }
  if (finite == 0) {
    return Missing(query, Error::NotFound("prometheus: every one of the " + std::to_string(r.series.size()) +
                                          " series is NaN"));
  }
  for (const auto& [key, sn] : hosts) c.by_host[key] = sn.first / sn.second;
  c.total = MakeReading(std::string(ToString(query.source)), KeyOf(query), sum / finite, FromUnixSecondsFloor(*oldest_s));
  return c;
}

Result<std::vector<PromPoint>> PrometheusRangeAnswer(const Result<net::HttpResponse>& answer) {
  if (!answer) return WithSource(kPrometheus, answer.error());
  const net::HttpResponse& res = *answer;
  Result<PromQueryResult> parsed = ParsePromQueryResponse(res.body);
  if (!parsed) {
    if (res.status / 100 != 2 && parsed.error().category() == ErrorCategory::kInvalidInput) {
      return HttpStatusError(kPrometheus, res.status, res.body);
    }
    return WithSource(kPrometheus, parsed.error());
  }
  if (res.status / 100 != 2) return HttpStatusError(kPrometheus, res.status, res.body);
  return SingleRangeSeries(*parsed);
}

CollectedSignal RabbitMqAnswer(const SignalQuery& query, const Result<net::HttpResponse>& answer, WallTime received) {
  if (!answer) return Missing(query, WithSource(kRabbitMq, answer.error()));
  if (answer->status / 100 != 2) return Missing(query, HttpStatusError(kRabbitMq, answer->status, answer->body));
  Result<QueueStats> stats = ParseQueueResponse(answer->body);
  if (!stats) return Missing(query, WithSource(kRabbitMq, stats.error()));
  if (!stats->messages_ready) {
    return Missing(query, Error::Transient("rabbitmq: queue '" + query.queue + "' in vhost '" + query.vhost +
                                           "' has no messages_ready yet (statistics not collected)"));
  }
  return Value(query, static_cast<double>(*stats->messages_ready), received);
}

CollectedSignal DcgmAnswer(const SignalQuery& query,
                           const std::vector<std::pair<std::string, Result<net::HttpResponse>>>& scrapes,
                           WallTime received) {
  struct HostSum {
    double utilisation_sum = 0;  // sum over GPUs of their utilisation
    int gpus = 0;
  };
  std::map<std::string, HostSum> hosts;
  std::vector<Error> failures;
  for (const auto& [url, answer] : scrapes) {
    Result<net::Url> parsed_url = net::ParseUrl(url);
    const std::string peer = parsed_url ? parsed_url->HostPort() : url;
    if (!answer) {
      failures.push_back(answer.error());
      continue;
    }
    if (answer->status / 100 != 2) {
      failures.push_back(HttpStatusError("dcgm exporter " + peer, answer->status, answer->body));
      continue;
    }
    const Exposition scrape =
        ParseExpositionLenient(answer->body, FormatFromContentType(answer->Header("Content-Type")));
    DcgmOptions options;
    if (parsed_url) options.default_hostname = parsed_url->host;
    for (const NodeGpuReadings& node : ReadDcgm(scrape.samples, options).nodes) {
      if (!node.mean_utilization || node.gpus_with_utilization == 0) continue;
      HostSum& h = hosts[node.hostname];
      h.utilisation_sum += *node.mean_utilization * node.gpus_with_utilization;
      h.gpus += node.gpus_with_utilization;
    }
  }
  CollectedSignal c;
  c.query = query;
  double sum = 0;
  int gpus = 0;
  for (const auto& [host, h] : hosts) {
    c.by_host[host] = h.utilisation_sum / h.gpus;
    sum += h.utilisation_sum;
    gpus += h.gpus;
  }
  if (!failures.empty()) {
    std::string message = "dcgm: " + std::to_string(failures.size()) + " of " + std::to_string(scrapes.size()) +
                          " exporters failed, so the fleet mean is unknown: ";
    for (size_t i = 0; i < failures.size(); ++i) message += (i ? "; " : "") + failures[i].message();
    Error e(failures.front().category(), message);
    c.total = MakeMissingReading(std::string(ToString(query.source)), KeyOf(query), e.ToString());
    c.error = std::move(e);
    return c;
  }
  if (gpus == 0) {
    CollectedSignal missing = Missing(query, Error::NotFound("dcgm: no GPU utilisation in the scrapes of " +
                                                              std::to_string(scrapes.size()) + " exporters"));
    missing.by_host = std::move(c.by_host);
    return missing;
  }
  c.total = MakeReading(std::string(ToString(query.source)), KeyOf(query), sum / gpus, received);
  return c;
}

struct SignalCollector::State {
  SignalEndpoints endpoints;
  std::mutex mu;  // guards the credentials
  Credential prometheus_token;
  Credential prometheus_password;
  Credential rabbitmq_user;
  Credential rabbitmq_password;

  AuthSnapshot Snapshot() {
    std::lock_guard<std::mutex> lock(mu);
    for (Credential* c : {&prometheus_token, &prometheus_password, &rabbitmq_user, &rabbitmq_password}) c->Refresh();
    AuthSnapshot a;
    if (prometheus_token.configured()) {
      if (prometheus_token.error()) {
        a.prometheus_error = prometheus_token.error();
      } else {
        a.prometheus_authorization = net::BearerAuthorization(prometheus_token.value());
      }
    } else if (!endpoints.prometheus.username.empty()) {
      if (prometheus_password.error()) {
        a.prometheus_error = prometheus_password.error();
      } else {
        a.prometheus_authorization =
            net::BasicAuthorization(endpoints.prometheus.username, prometheus_password.value());
      }
    }
    if (rabbitmq_user.error()) {
      a.rabbitmq_error = rabbitmq_user.error();
    } else if (rabbitmq_password.error()) {
      a.rabbitmq_error = rabbitmq_password.error();
    } else if (rabbitmq_user.configured() || rabbitmq_password.configured()) {
      a.rabbitmq_authorization = net::BasicAuthorization(rabbitmq_user.value(), rabbitmq_password.value());
    }
    AddSecret(a.secrets, prometheus_token.value());
    AddSecret(a.secrets, prometheus_password.value());
    AddSecret(a.secrets, rabbitmq_password.value());
    // A server could echo the header: its encoded form is secret too.
    for (const std::optional<std::string>* h : {&a.prometheus_authorization, &a.rabbitmq_authorization}) {
      if (*h) AddSecret(a.secrets, h->value().substr(h->value().find(' ') + 1));
    }
    return a;
  }
};

SignalCollector::SignalCollector(SignalEndpoints endpoints, const Clock& clock, EnvironmentLookup env)
    : state_(std::make_unique<State>()), clock_(clock) {
  State& s = *state_;
  s.endpoints = std::move(endpoints);
  const PrometheusEndpoint& p = s.endpoints.prometheus;
  if (!p.bearer_token_file.empty()) {
    s.prometheus_token = Credential::FromFile("prometheus bearer_token_file", p.bearer_token_file);
  }
  if (!p.password_file.empty()) {
    s.prometheus_password = Credential::FromFile("prometheus password_file", p.password_file);
  }
  const RabbitMqEndpoint& r = s.endpoints.rabbitmq;
  if (!r.username.empty()) {
    s.rabbitmq_user = Credential::Fixed(r.username);
  } else if (!r.username_file.empty()) {
    s.rabbitmq_user = Credential::FromFile("rabbitmq username_file", r.username_file);
  } else if (!r.username_env.empty()) {
    s.rabbitmq_user = Credential::FromEnvironment("rabbitmq username_env", r.username_env, env);
  }
  if (!r.password_file.empty()) {
    s.rabbitmq_password = Credential::FromFile("rabbitmq password_file", r.password_file);
  } else if (!r.password_env.empty()) {
    s.rabbitmq_password = Credential::FromEnvironment("rabbitmq password_env", r.password_env, env);
  }
}

SignalCollector::~SignalCollector() = default;

Status SignalCollector::CredentialsStatus() const {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  for (const Credential* c : {&s.prometheus_token, &s.prometheus_password, &s.rabbitmq_user, &s.rabbitmq_password}) {
    if (c->error()) return *c->error();
  }
  return Status::Ok();
}

std::vector<CollectedSignal> SignalCollector::Collect(const std::vector<SignalQuery>& queries) {
  const SignalEndpoints& ep = state_->endpoints;
  const AuthSnapshot auth = state_->Snapshot();

  // Plan: each query maps to fetches (deduplicated by URL), or fails now.
  std::vector<std::unique_ptr<PendingFetch>> fetches;
  std::map<std::string, size_t> fetch_by_url;
  auto add_fetch = [&](const std::string& url, const std::optional<std::string>& authorization,
                       const net::HttpClientOptions& options, std::string_view accept) {
    auto [it, inserted] = fetch_by_url.emplace(url, fetches.size());
    if (inserted) {
      auto f = std::make_unique<PendingFetch>();
      f->request.url = url;
      if (authorization) f->request.headers.emplace_back("Authorization", *authorization);
      if (!accept.empty()) f->request.headers.emplace_back("Accept", std::string(accept));
      f->options = options;
      fetches.push_back(std::move(f));
    }
    return it->second;
  };
  net::HttpClientOptions plain_options;
  plain_options.timeout = ep.timeout;
  plain_options.max_body_bytes = ep.max_body_bytes;
  net::HttpClientOptions prometheus_options = plain_options;
  prometheus_options.ca_file = ep.prometheus.ca_file;
  prometheus_options.insecure_skip_verify = ep.prometheus.insecure_skip_verify;

  std::vector<std::optional<CollectedSignal>> results(queries.size());
  std::vector<std::vector<size_t>> fetches_of(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const SignalQuery& q = queries[i];
    if (q.source == SignalSource::kPrometheus) {
      if (std::optional<Error> e = Unsendable(kPrometheus, ep.prometheus.url, auth.prometheus_error,
                                              q.query.empty() ? "empty query" : "")) {
        results[i] = Missing(q, *e);
      } else {
        fetches_of[i].push_back(
            add_fetch(PromQueryUrl(ep.prometheus.url, q.query), auth.prometheus_authorization, prometheus_options, "application/json"));
      }
    } else if (q.source == SignalSource::kRabbitMq) {
      if (std::optional<Error> e = Unsendable(kRabbitMq, ep.rabbitmq.url, auth.rabbitmq_error,
                                              q.queue.empty() ? "no queue named" : "")) {
        results[i] = Missing(q, *e);
      } else {
        fetches_of[i].push_back(
            add_fetch(QueueUrl(ep.rabbitmq.url, q.vhost, q.queue), auth.rabbitmq_authorization, plain_options, "application/json"));
      }
    } else {
      if (ep.dcgm.urls.empty()) {
        results[i] = Missing(q, Error::Config("dcgm: no exporter URLs configured (signals.dcgm.urls)"));
      } else if (!q.query.empty() && q.query != kDcgmGpuUtil) {
        results[i] = Missing(q, Error::Config("dcgm: query '" + q.query + "' is not supported (leave it empty or use " +
                                              std::string(kDcgmGpuUtil) + ")"));
      } else {
        for (const std::string& url : ep.dcgm.urls) {
          // No Accept header: an exporter then answers its default text format.
          fetches_of[i].push_back(add_fetch(url, std::nullopt, plain_options, ""));
        }
      }
    }
  }

  if (!fetches.empty()) {
    asio::io_context io(1);
    for (const std::unique_ptr<PendingFetch>& f : fetches) {
      // AsyncFetch never throws; detached is safe.
      asio::co_spawn(io, RunFetch(f.get(), &clock_), asio::detached);
    }
    io.run();
    for (const std::unique_ptr<PendingFetch>& f : fetches) {
      if (!f->answer) f->answer = Error::Internal("http client: no result");
    }
  }
  auto answer_of = [&](size_t f) -> const Result<net::HttpResponse>& { return *fetches[f]->answer; };

  std::vector<CollectedSignal> out;
  out.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const SignalQuery& q = queries[i];
    if (!results[i]) {
      if (q.source == SignalSource::kPrometheus) {
        results[i] = PrometheusAnswer(q, answer_of(fetches_of[i].front()));
      } else if (q.source == SignalSource::kRabbitMq) {
        results[i] = RabbitMqAnswer(q, answer_of(fetches_of[i].front()), fetches[fetches_of[i].front()]->received);
      } else {
        std::vector<std::pair<std::string, Result<net::HttpResponse>>> scrapes;
        WallTime received = clock_.WallNow();
        for (size_t f : fetches_of[i]) {
          scrapes.emplace_back(fetches[f]->request.url, answer_of(f));
          received = std::min(received, fetches[f]->received);
        }
        results[i] = DcgmAnswer(q, scrapes, received);
      }
    }
    ScrubSignal(*results[i], auth.secrets);
    out.push_back(std::move(*results[i]));
  }
  return out;
}

Result<std::vector<PromPoint>> SignalCollector::QueryRange(const std::string& promql, WallTime start, WallTime end,
                                                           Seconds step) {
  const SignalEndpoints& ep = state_->endpoints;
  const AuthSnapshot auth = state_->Snapshot();
  if (step.count() <= 0) return Error::InvalidInput("prometheus: range step must be > 0");
  if (std::optional<Error> e =
          Unsendable(kPrometheus, ep.prometheus.url, auth.prometheus_error, promql.empty() ? "empty query" : "")) {
    return *e;
  }
  net::HttpClientOptions options;
  options.timeout = ep.timeout;
  options.max_body_bytes = ep.max_body_bytes;
  options.ca_file = ep.prometheus.ca_file;
  options.insecure_skip_verify = ep.prometheus.insecure_skip_verify;
  std::vector<PromPoint> out;
  const int64_t last = ToUnixSeconds(end);
  for (int64_t from = ToUnixSeconds(start); from <= last;) {
    // Both ends are included: a chunk of kMaxRangePoints points.
    const int64_t to = std::min(last, from + (kMaxRangePoints - 1) * step.count());
    PendingFetch fetch;
    fetch.request.url = PromQueryRangeUrl(ep.prometheus.url, promql, from, to, step.count());
    if (auth.prometheus_authorization) fetch.request.headers.emplace_back("Authorization", *auth.prometheus_authorization);
    fetch.request.headers.emplace_back("Accept", "application/json");
    fetch.options = options;
    {
      asio::io_context io(1);
      asio::co_spawn(io, RunFetch(&fetch, &clock_), asio::detached);
      io.run();
    }
    if (!fetch.answer) fetch.answer = Error::Internal("http client: no result");
    Result<std::vector<PromPoint>> points = PrometheusRangeAnswer(*fetch.answer);
    if (!points) {
      // A chunk without data is a gap in the history, not a failure.
      if (points.error().category() == ErrorCategory::kNotFound) {
        from = to + step.count();
        continue;
      }
      return Error(points.error().category(), Scrub(points.error().message(), auth.secrets));
    }
    for (const PromPoint& p : *points) {
      if (out.empty() || p.timestamp_s > out.back().timestamp_s) out.push_back(p);
    }
    from = to + step.count();
  }
  return out;
}

}  // namespace gpuscaler::signals
