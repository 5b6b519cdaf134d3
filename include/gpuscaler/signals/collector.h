// SignalCollector: reads the policy's signal queries (queue depth, GPU
// utilisation) from the live sources, all at once on one io_context, each
// request with the endpoints' deadline, and returns one CollectedSignal per
// query. Freshness is not judged here (signal.h JudgeFreshness does that
// against the policy); a source that fails gives a kMissing reading carrying
// why, never a zero.
//
// Sources (docs/signals.md has the full rules):
//  - "prometheus": GET <url>/api/v1/query?query=<PromQL>. The sample
//    timestamp is the observation time. One series (or a scalar): its value.
//    Several series (`avg by (Hostname) (...)`): by_host gets one value per
//    series and `total` is their mean (utilisation semantics: a queue-depth
//    query must aggregate to one series itself, e.g. `sum(...)`).
//  - "rabbitmq": GET <url>/api/queues/<vhost>/<queue> with basic auth. The
//    value is messages_ready (the backlog waiting for a worker; unacked
//    messages are already being worked on), observed when the answer arrived.
//  - "dcgm": every exporter URL is scraped once per Collect; per host the
//    mean GPU utilisation in [0,1] (DCGM_FI_DEV_GPU_UTIL / 100, else the
//    profiling ratio), `total` the mean over all GPUs. If any exporter fails,
//    `total` is missing (the hosts that answered stay in by_host).
//
// Credentials come from files or the environment named in the endpoints,
// never from the policy. They are read at construction and a file is read
// again when it changes (its size, mtime or inode: Kubernetes swaps mounted
// secrets through a symlink). They never appear in a reading, an error or a
// log line: every message built from a server's answer is scrubbed of them.
//
// Thread-safe: Collect may run on several threads at once (each call has its
// own io_context; the credential cache is locked).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/model/clock.h"
#include "gpuscaler/net/http_client.h"
#include "gpuscaler/policy/policy.h"
#include "gpuscaler/signals/endpoints.h"
#include "gpuscaler/signals/exposition.h"
#include "gpuscaler/signals/prometheus_api.h"
#include "gpuscaler/signals/signal.h"
#include "gpuscaler/status.h"

namespace gpuscaler::signals {

struct CollectedSignal {
  SignalQuery query;
  // The one value: queue depth, or mean utilisation in [0,1] (dcgm) or as
  // the query returns it (prometheus). kMissing with the error when it
  // failed. key: the PromQL, "vhost/queue", or DCGM_FI_DEV_GPU_UTIL.
  SignalReading total;
  // Per node, when the answer has several series or comes from DCGM.
  std::map<std::string, double> by_host;
  // Why `total` is missing, with its category (kAuth, kConfig, kTransient,
  // kNotFound, ...); empty when total has a value.
  std::optional<Error> error;
};

// Looks up an environment variable; empty when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process environment (getenv).
std::optional<std::string> ProcessEnvironment(const std::string& name);

class SignalCollector {
 public:
  // Reads the credentials named in `endpoints` (files now, environment
  // variables now and only now). `clock` must outlive the collector; it
  // stamps RabbitMQ and DCGM readings. Never fails: a credential that cannot
  // be read makes that source's readings missing with a kConfig error, and
  // CredentialsStatus() reports it.
  SignalCollector(SignalEndpoints endpoints, const Clock& clock, EnvironmentLookup env = ProcessEnvironment);
  ~SignalCollector();
  SignalCollector(const SignalCollector&) = delete;
  SignalCollector& operator=(const SignalCollector&) = delete;

  // kConfig naming the first credential file or variable that could not be
  // read (never its contents); ok when all could. For a fail-fast start.
  Status CredentialsStatus() const;

  // One result per query, in order. Identical requests are sent once.
  // Unknown source, or a source without a URL: kMissing with kConfig.
  std::vector<CollectedSignal> Collect(const std::vector<SignalQuery>& queries);

  // The history of a Prometheus query (GET <url>/api/v1/query_range) from
  // `start` to `end` every `step` (> 0), in time order; requests of at most
  // kMaxRangePoints steps each, one after the other (Prometheus refuses
  // more than 11,000 points per series). The query must give one series.
  // Errors name the source and carry Prometheus' message (a bad query is
  // kConfig); the first failing request ends the read.
  Result<std::vector<PromPoint>> QueryRange(const std::string& promql, WallTime start, WallTime end, Seconds step);
  static constexpr int64_t kMaxRangePoints = 10000;

 private:
  struct State;
  std::unique_ptr<State> state_;
  const Clock& clock_;
};

// The pure halves of Collect, for tests: one source's HTTP answer (or
// failure) turned into a CollectedSignal. `received` is when it arrived.
CollectedSignal PrometheusAnswer(const SignalQuery& query, const Result<net::HttpResponse>& answer);
// A range query's answer (or failure) as its one series' points.
Result<std::vector<PromPoint>> PrometheusRangeAnswer(const Result<net::HttpResponse>& answer);
CollectedSignal RabbitMqAnswer(const SignalQuery& query, const Result<net::HttpResponse>& answer, WallTime received);
// `scrapes`: each exporter's URL and answer, in the configured order.
CollectedSignal DcgmAnswer(const SignalQuery& query,
                           const std::vector<std::pair<std::string, Result<net::HttpResponse>>>& scrapes,
                           WallTime received);

// The by_host key of a Prometheus series: the value of its Hostname,
// hostname, node or instance label (first found), else of its only label,
// else `name=value,...` of all its labels ("" for none).
std::string SeriesHostKey(const std::vector<Label>& labels);

}  // namespace gpuscaler::signals
