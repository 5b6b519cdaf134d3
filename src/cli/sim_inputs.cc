#include "sim_inputs.h"

#include <utility>

#include "gpuscaler/policy/loader.h"
#include "sim/reservations_file.h"
#include "sim/trace_readers.h"

namespace gpuscaler::cli {
namespace {

template <typename Names>
std::string Listed(const Names& names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

Result<Catalog> LoadSimCatalog(const SimInputs& in, std::string* source) {
  if (in.catalog_file.empty()) return DefaultCatalog("", source);
  Result<Catalog> loaded = LoadCatalogFile(in.catalog_file);
  if (loaded) *source = in.catalog_file;
  return loaded;
}

Result<sim::Scenario> BuildSimScenario(const SimInputs& in, const Catalog& catalog, const std::string& catalog_source,
                                       const std::optional<Policy>& policy, const std::string& policy_source,
                                       std::vector<std::string>* warnings) {
  if (in.scenario.empty() == in.trace_file.empty()) {
    return Error::InvalidInput("give exactly one of a built-in scenario or a trace");
  }
  if (!in.trace_file.empty() && in.trace_format.empty()) return Error::InvalidInput("a trace needs its format");
  if (in.prices_file.empty() != in.prices_format.empty()) {
    return Error::InvalidInput("a spot market file and its format go together");
  }
  if (in.runtime_knowledge != "exact" && in.runtime_knowledge != "class") {
    return Error::InvalidInput("--runtime-knowledge must be exact or class, not '" + in.runtime_knowledge +
                               "'");
  }
  if (in.forecast != "learned" && in.forecast != "oracle") {
    return Error::InvalidInput("--forecast must be learned or oracle, not '" + in.forecast + "'");
  }
  const std::optional<int> days = in.days > 0 ? std::optional<int>(in.days) : std::nullopt;
  sim::Scenario scenario;
  if (!in.scenario.empty()) {
    Result<sim::Scenario> s = sim::MakeBuiltinScenario(in.scenario, in.seed, days, catalog);
    if (!s) return s.error();
    scenario = std::move(s).value();
    if (policy) {
      scenario.policy = *policy;
      scenario.policy_source = policy_source;
    }
  } else {
    std::optional<sim::TraceFormat> format = sim::ParseTraceFormat(in.trace_format);
    if (!format) {
      return Error::InvalidInput("unknown trace format '" + in.trace_format + "' (known: " +
                                 Listed(sim::TraceFormatNames()) + ")");
    }
    sim::TraceOptions trace_options;
    const std::optional<sim::MultiNodeJobs> multi_node = sim::ParseMultiNodeJobs(in.multi_node);
    if (!multi_node) {
      return Error::InvalidInput("--multi-node must be gang, split or whole, not '" + in.multi_node + "'");
    }
    trace_options.multi_node = *multi_node;
    Result<sim::Trace> trace = sim::ReadTrace(in.trace_file, *format, trace_options);
    if (!trace) return trace.error();
    for (const std::string& w : trace->stats.warnings) warnings->push_back(w);
    const size_t reader_warnings = trace->stats.warnings.size();
    sim::SpotMarket market;
    if (!in.prices_file.empty()) {
      std::optional<sim::MarketFormat> mf = sim::ParseMarketFormat(in.prices_format);
      if (!mf) {
        return Error::InvalidInput("unknown spot market format '" + in.prices_format + "' (known: " +
                                   Listed(sim::MarketFormatNames()) + ")");
      }
      sim::MarketOptions mo;
      if (!in.cbl_instance_types.empty()) {
        size_t start = 0;
        std::vector<std::string> types;
        while (start <= in.cbl_instance_types.size()) {
          const size_t comma = in.cbl_instance_types.find(',', start);
          const size_t end = comma == std::string::npos ? in.cbl_instance_types.size() : comma;
          if (end > start) types.push_back(in.cbl_instance_types.substr(start, end - start));
          start = end + 1;
        }
        if (types.empty()) return Error::InvalidInput("--cbl-instance-types: give at least one instance type");
        mo.instance_type = types.front();
        mo.also_instance_types.assign(types.begin() + 1, types.end());
      }
      if (in.cbl_nodes_when_up < 0) return Error::InvalidInput("--cbl-nodes-when-up must be >= 0");
      if (in.cbl_nodes_when_up > 0) mo.available_nodes_when_up = in.cbl_nodes_when_up;
      Result<sim::SpotMarket> m = sim::ReadSpotMarket(in.prices_file, *mf, mo);
      if (!m) return m.error();
      market = std::move(m).value();
    }
    scenario = sim::MakeTraceScenario(std::move(trace).value(), std::move(market), catalog,
                                      policy ? *policy : DefaultPolicy(), in.seed, days);
    // Building the scenario may add its own (jobs no pool may take).
    const std::vector<std::string>& all = scenario.trace.stats.warnings;
    for (size_t i = reader_warnings; i < all.size(); ++i) warnings->push_back(all[i]);
    if (scenario.trace.jobs.empty()) return Error::InvalidInput(in.trace_file + ": the trace has no jobs to replay");
  }
  if (!in.reservations_file.empty()) {
    Result<std::vector<Reservation>> reservations =
        sim::ReadReservationsFile(in.reservations_file, scenario.start, scenario.catalog);
    if (!reservations) return reservations.error();
    scenario.cloud.reservations = std::move(reservations).value();
  }
  scenario.catalog_source = catalog_source;
  scenario.runtimes_known = in.runtime_knowledge == "exact";
  scenario.forecast = in.forecast == "oracle" ? sim::ForecastSource::kOracle : sim::ForecastSource::kLearned;
  return scenario;
}

}  // namespace gpuscaler::cli
