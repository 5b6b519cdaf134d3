#include "gpuscaler/signals/prometheus_api.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "gpuscaler/net/url.h"

namespace gpuscaler::signals {
namespace {

using nlohmann::json;

Error ApiError(std::string_view error_type, std::string_view message) {
  std::string text = "prometheus " + std::string(error_type.empty() ? "error" : error_type) + ": " +
                     std::string(message);
  if (error_type == "bad_data") return Error::Config(std::move(text));
  if (error_type == "timeout" || error_type == "canceled" || error_type == "unavailable") {
    return Error::Transient(std::move(text));
  }
  if (error_type == "execution") return Error::InvalidInput(std::move(text));
  if (error_type == "not_found") return Error::NotFound(std::move(text));
  if (error_type == "internal" || error_type == "not_acceptable") return Error::Internal(std::move(text));
  return Error::Transient(std::move(text));
}

// Parses one [<time>, "<value>"] sample onto the end of *out.
Status AppendPoint(const json& j, std::vector<PromPoint>* out) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number() || !j[1].is_string()) {
    return Error::InvalidInput("prometheus: sample is not [<time>, \"<value>\"]");
  }
  PromPoint p;
  p.timestamp_s = j[0].get<double>();
  const std::string& v = j[1].get_ref<const std::string&>();
  if (!ParseSampleValue(v, &p.value)) {
    return Error::InvalidInput("prometheus: invalid sample value \"" + v + "\"");
  }
  out->push_back(p);
  return Status::Ok();
}

Status ParseMetric(const json& j, std::vector<Label>* out) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Error::InvalidInput("prometheus: \"metric\" is not an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) {
      return Error::InvalidInput("prometheus: label " + it.key() + " is not a string");
    }
    out->push_back({it.key(), it.value().get<std::string>()});
  }
  std::sort(out->begin(), out->end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  return Status::Ok();
}

void ReadStrings(const json& j, const char* key, std::vector<std::string>* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  for (const json& s : *it) {
    if (s.is_string()) out->push_back(s.get<std::string>());
  }
}

Result<PromQueryResult> ParseSuccess(const json& root) {
  PromQueryResult out;
  ReadStrings(root, "warnings", &out.warnings);
  ReadStrings(root, "infos", &out.infos);
  auto data = root.find("data");
  if (data == root.end() || !data->is_object()) return Error::InvalidInput("prometheus: no \"data\" object");
  auto type = data->find("resultType");
  auto result = data->find("result");
  if (type == data->end() || !type->is_string() || result == data->end()) {
    return Error::InvalidInput("prometheus: \"data\" lacks resultType or result");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "scalar" || t == "string") {
    if (t == "string") {
      if (!result->is_array() || result->size() != 2 || !(*result)[0].is_number() || !(*result)[1].is_string()) {
        return Error::InvalidInput("prometheus: string result is not [<time>, \"<text>\"]");
      }
      out.type = PromResultType::kString;
      out.string_timestamp_s = (*result)[0].get<double>();
      out.string_value = (*result)[1].get<std::string>();
      return out;
    }
    PromSeries scalar;
    if (Status s = AppendPoint(*result, &scalar.points); !s.ok()) return s.error();
    out.type = PromResultType::kScalar;
    out.series.push_back(std::move(scalar));
    return out;
  }
  bool vector = t == "vector";
  if (!vector && t != "matrix") return Error::InvalidInput("prometheus: unknown resultType \"" + t + "\"");
  out.type = vector ? PromResultType::kVector : PromResultType::kMatrix;
  if (!result->is_array()) return Error::InvalidInput("prometheus: result is not an array");
  out.series.reserve(result->size());
  int histograms = 0;
  // A vector series has one "value", a matrix series an array of "values";
  // native histograms come as "histogram" / "histograms" instead.
  const std::string points_key = vector ? "value" : "values";
  const std::string histogram_key = vector ? "histogram" : "histograms";
  for (const json& item : *result) {
    if (!item.is_object()) return Error::InvalidInput("prometheus: series is not an object");
    PromSeries series;
    auto metric = item.find("metric");
    if (metric != item.end()) {
      Status s = ParseMetric(*metric, &series.metric);
      if (!s.ok()) return s.error();
    }
    auto points = item.find(points_key);
    if (points == item.end()) {
      if (item.contains(histogram_key)) {
        ++histograms;
        continue;
      }
      return Error::InvalidInput("prometheus: " + t + " series without \"" + points_key + "\"");
    }
    if (vector) {
      if (Status s = AppendPoint(*points, &series.points); !s.ok()) return s.error();
    } else {
      if (!points->is_array()) return Error::InvalidInput("prometheus: \"values\" is not an array");
      series.points.reserve(points->size());
      for (const json& v : *points) {
        if (Status s = AppendPoint(v, &series.points); !s.ok()) return s.error();
      }
    }
    out.series.push_back(std::move(series));
  }
  if (histograms > 0) {
    out.warnings.push_back("gpuscaler: dropped " + std::to_string(histograms) + " native-histogram series");
  }
  return out;
}

}  // namespace

Result<PromQueryResult> ParsePromQueryResponse(std::string_view body) {
  json root = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error::InvalidInput("prometheus: response is not JSON");
  if (!root.is_object()) return Error::InvalidInput("prometheus: response is not a JSON object");
  auto status = root.find("status");
  if (status == root.end() || !status->is_string()) {
    return Error::InvalidInput("prometheus: response has no \"status\"");
  }
  const std::string& s = status->get_ref<const std::string&>();
  if (s == "error") {
    auto type = root.find("errorType");
    auto message = root.find("error");
    std::string_view error_type =
        type != root.end() && type->is_string() ? std::string_view(type->get_ref<const std::string&>()) : "";
    std::string_view text = message != root.end() && message->is_string()
                                ? std::string_view(message->get_ref<const std::string&>())
                                : "(no message)";
    return ApiError(error_type, text);
  }
  if (s != "success") return Error::InvalidInput("prometheus: unknown status \"" + s + "\"");
  try {
    return ParseSuccess(root);
  } catch (const json::exception& e) {
    return Error::InvalidInput(std::string("prometheus: ") + e.what());
  }
}

Result<PromPoint> SingleValue(const PromQueryResult& result) {
  if (result.type == PromResultType::kMatrix || result.type == PromResultType::kString) {
    return Error::InvalidInput("prometheus: expected a vector or scalar result");
  }
  if (result.series.empty() || result.series.front().points.empty()) {
    return Error::NotFound("prometheus: query returned no series");
  }
  if (result.series.size() > 1) {
    return Error::InvalidInput("prometheus: query returned " + std::to_string(result.series.size()) +
                               " series; aggregate it to one (e.g. sum(...))");
  }
  const PromPoint& p = result.series.front().points.front();
  if (std::isnan(p.value)) return Error::NotFound("prometheus: query value is NaN");
  return p;
}

Result<std::vector<PromPoint>> SingleRangeSeries(const PromQueryResult& result) {
  if (result.type != PromResultType::kMatrix) return Error::InvalidInput("prometheus: expected a matrix result");
  if (result.series.empty()) return Error::NotFound("prometheus: range query returned no series");
  if (result.series.size() > 1) {
    return Error::InvalidInput("prometheus: range query returned " + std::to_string(result.series.size()) +
                               " series; aggregate it to one (e.g. sum(...))");
  }
  std::vector<PromPoint> out;
  for (const PromPoint& p : result.series.front().points) {
    if (!std::isnan(p.value)) out.push_back(p);
  }
  return out;
}

std::string PromQueryRangeUrl(std::string_view base_url, std::string_view promql, int64_t start_unix_s,
                              int64_t end_unix_s, int64_t step_s) {
  while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
  return std::string(base_url) + "/api/v1/query_range?query=" + net::PercentEncode(promql) +
         "&start=" + std::to_string(start_unix_s) + "&end=" + std::to_string(end_unix_s) +
         "&step=" + std::to_string(step_s) + "s";
}

std::string PromQueryUrl(std::string_view base_url, std::string_view promql, std::optional<int64_t> time_unix_s) {
  while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
  std::string url = std::string(base_url) + "/api/v1/query?query=" + net::PercentEncode(promql);
  if (time_unix_s.has_value()) url += "&time=" + std::to_string(*time_unix_s);
  return url;
}

}  // namespace gpuscaler::signals
