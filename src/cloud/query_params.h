// Building AWS Query-protocol parameters (EC2, Auto Scaling): optional
// values, numbered lists and filters. Private to src/cloud.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"

namespace gpuscaler::cloud {

// A value as the Query protocol writes it.
inline std::string QueryText(int v) { return std::to_string(v); }
inline std::string QueryText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
inline std::string QueryText(WallTime t) { return AwsTime(t); }
inline std::string QueryText(bool b) { return b ? "true" : "false"; }

// Optional parameters: sent only when set (an engaged optional, a non-empty
// string).
template <typename T>
void AddIfSet(QueryParams& q, std::string key, const std::optional<T>& value) {
  if (value) q.emplace_back(std::move(key), QueryText(*value));
}
inline void AddIfSet(QueryParams& q, std::string key, const std::string& value) {
  if (!value.empty()) q.emplace_back(std::move(key), value);
}

// A list the Query way: "<prefix>.1", "<prefix>.2", … in order.
inline void AddList(QueryParams& q, const std::string& prefix, const std::vector<std::string>& values) {
  for (size_t i = 0; i < values.size(); ++i) q.emplace_back(prefix + "." + std::to_string(i + 1), values[i]);
}

// EC2's "Filter.N.Name" / "Filter.N.Value.M", or with `query_protocol` Auto
// Scaling's "Filters.member.N.Name" / "Filters.member.N.Values.member.M".
inline void AddFilters(QueryParams& q, const std::vector<Filter>& filters, bool query_protocol) {
  for (size_t i = 0; i < filters.size(); ++i) {
    const std::string base =
        query_protocol ? "Filters.member." + std::to_string(i + 1) : "Filter." + std::to_string(i + 1);
    q.emplace_back(base + ".Name", filters[i].name);
    AddList(q, base + (query_protocol ? ".Values.member" : ".Value"), filters[i].values);
  }
}

}  // namespace gpuscaler::cloud
