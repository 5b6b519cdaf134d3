// The Cloud Billing Catalog API of the GcpEmulator: services.skus.list of
// the Compute Engine service, with Google's Sku shape (docs/gcp-emulator.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "sim/cloud_emulator/gcp_impl.h"

namespace gpuscaler::sim {

using nlohmann::json;

namespace {

constexpr const char* kBillingComputeService = "6F81-5844-456A";
constexpr int kBillingMaxPageSize = 5000;

EmulatorResponse BillingJson(const json& body) {
  return {200, "application/json; charset=UTF-8", {}, body.dump()};
}

// The error shape of Google's newer APIs (google.rpc.Status as JSON), which
// the Cloud Billing API answers: no errors[] list; an ErrorInfo detail with
// the reason when there is one.
EmulatorResponse BillingError(int code, const std::string& status, const std::string& message,
                              const std::string& reason = "") {
  json error = {{"code", code}, {"message", message}, {"status", status}};
  if (!reason.empty()) {
    error["details"] = json::array({{{"@type", "type.googleapis.com/google.rpc.ErrorInfo"},
                                     {"reason", reason},
                                     {"domain", "googleapis.com"},
                                     {"metadata", {{"service", "cloudbilling.googleapis.com"}}}}});
  }
  return {code, "application/json; charset=UTF-8", {}, json{{"error", error}}.dump()};
}

// "XXXX-XXXX-XXXX" from the description (FNV-1a), as Google's ids look.
std::string MadeSkuId(const std::string& description) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : description) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04X-%04X-%04X", static_cast<unsigned>((h >> 32) & 0xFFFF),
                static_cast<unsigned>((h >> 16) & 0xFFFF), static_cast<unsigned>(h & 0xFFFF));
  return buf;
}

// The pricingExpression's unit descriptions and base unit, per usage unit.
json UnitFields(const std::string& unit) {
  if (unit == "h")
    return {{"usageUnitDescription", "hour"},
            {"baseUnit", "s"},
            {"baseUnitDescription", "second"},
            {"baseUnitConversionFactor", 3600}};
  if (unit == "GiBy.h")
    return {{"usageUnitDescription", "gibibyte hour"},
            {"baseUnit", "By.s"},
            {"baseUnitDescription", "byte second"},
            {"baseUnitConversionFactor", 3865470566400.0}};
  if (unit == "GiBy.mo")
    return {{"usageUnitDescription", "gibibyte month"},
            {"baseUnit", "By.s"},
            {"baseUnitDescription", "byte second"},
            {"baseUnitConversionFactor", 2783138807808000.0}};
  return {{"usageUnitDescription", unit}};
}

// RFC 3339 with milliseconds, as the catalog prints effectiveTime.
std::string EffectiveTime(WallTime t) {
  std::string s = FormatRfc3339(t);
  if (!s.empty() && s.back() == 'Z') s.replace(s.size() - 1, 1, ".000Z");
  return s;
}

json SkuJson(const GcpBillingSku& sku, double usd, WallTime effective) {
  const std::string id = sku.sku_id.empty() ? MadeSkuId(sku.description) : sku.sku_id;
  // Money: whole units as an int64 string, the rest in nanos.
  const double whole = std::floor(usd);
  int64_t units = static_cast<int64_t>(whole);
  int64_t nanos = std::llround((usd - whole) * 1e9);
  if (nanos >= 1000000000) {
    ++units;
    nanos -= 1000000000;
  }
  json expression = {
      {"usageUnit", sku.usage_unit},
      {"displayQuantity", 1},
      {"tieredRates",
       json::array({{{"startUsageAmount", 0},
                     {"unitPrice",
                      {{"currencyCode", "USD"}, {"units", std::to_string(units)}, {"nanos", nanos}}}}})}};
  expression.update(UnitFields(sku.usage_unit));
  return {
      {"name", std::string("services/") + kBillingComputeService + "/skus/" + id},
      {"skuId", id},
      {"description", sku.description},
      {"category",
       {{"serviceDisplayName", "Compute Engine"},
        {"resourceFamily", sku.resource_family},
        {"resourceGroup", sku.resource_group},
        {"usageType", sku.usage_type}}},
      {"serviceRegions", sku.regions},
      {"pricingInfo",
       json::array(
           {{{"summary", ""},
             {"pricingExpression", expression},
             {"aggregationInfo",
              {{"aggregationLevel", "ACCOUNT"}, {"aggregationInterval", "MONTHLY"}, {"aggregationCount", 1}}},
             {"currencyConversionRate", 1},
             {"effectiveTime", EffectiveTime(effective)}}})},
      {"serviceProviderName", "Google"},
      {"geoTaxonomy",
       {{"type", sku.regions.size() > 1 ? "MULTI_REGIONAL" : "REGIONAL"}, {"regions", sku.regions}}}};
}

// A non-negative integer query value; nullopt when it is not one.
std::optional<size_t> BillingCount(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return static_cast<size_t>(std::strtoul(text.c_str(), nullptr, 10));
}

}  // namespace

EmulatorResponse GcpEmulator::BillingCatalog(const EmulatorRequest& request, const std::string& path,
                                             const std::string& query, WallTime now) {
  ++stats_.billing_calls;
  const std::string skus_path = std::string("/v1/services/") + kBillingComputeService + "/skus";
  if (path.rfind("/v1/services/", 0) != 0 || path.size() < 5 ||
      path.compare(path.size() - 5, 5, "/skus") != 0)
    return BillingError(404, "NOT_FOUND", "The requested URL " + path + " was not found on this server.");
  if (request.method != "GET") return BillingError(405, "METHOD_NOT_ALLOWED", "Method not allowed.");
  if (auto denied = CheckBearer(request, now)) return *denied;
  const GcpBillingCatalog& catalog = scenario_.billing_catalog;
  if (catalog.error_code != 0) {
    return BillingError(catalog.error_code, catalog.error_status, catalog.error_message,
                        catalog.error_reason);
  }
  if (path != skus_path) return BillingError(404, "NOT_FOUND", "Service not found: " + path.substr(4));

  const auto params = gcp::ParseQuery(query);
  auto param = [&](const char* key) {
    auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  };
  if (const std::string currency = param("currencyCode"); !currency.empty() && currency != "USD")
    return BillingError(400, "INVALID_ARGUMENT", "The emulator prices in USD only, not " + currency + ".");
  if (!param("startTime").empty() || !param("endTime").empty())
    return BillingError(400, "INVALID_ARGUMENT", "startTime and endTime (price history) are not emulated.");
  size_t page_size = kBillingMaxPageSize;
  if (const std::string text = param("pageSize"); !text.empty()) {
    const std::optional<size_t> n = BillingCount(text);
    if (!n) return BillingError(400, "INVALID_ARGUMENT", "Invalid value for pageSize: " + text);
    if (*n > 0) page_size = std::min<size_t>(*n, kBillingMaxPageSize);
  }
  page_size = std::min<size_t>(page_size, static_cast<size_t>(std::max(1, catalog.max_page_size)));
  size_t offset = 0;
  if (const std::string token = param("pageToken"); !token.empty()) {
    const std::optional<size_t> at = token[0] == 'o' ? BillingCount(token.substr(1)) : std::nullopt;
    if (!at) return BillingError(400, "INVALID_ARGUMENT", "Invalid page token: " + token);
    offset = *at;
  }

  // The SKUs with a price in force now, in scenario order.
  std::vector<json> listed;
  for (const GcpBillingSku& sku : catalog.skus) {
    const std::pair<Seconds, double>* in_force = nullptr;
    for (const auto& step : sku.prices) {
      if (start_ + step.first <= now) in_force = &step;
    }
    if (in_force != nullptr) listed.push_back(SkuJson(sku, in_force->second, start_ + in_force->first));
  }
  if (offset > listed.size())
    return BillingError(400, "INVALID_ARGUMENT", "Invalid page token: " + param("pageToken"));
  json out = {{"skus", json::array()}};
  for (size_t i = offset; i < listed.size() && i < offset + page_size; ++i) out["skus"].push_back(listed[i]);
  out["nextPageToken"] = offset + page_size < listed.size() ? gcp::PageToken(offset + page_size) : "";
  return BillingJson(out);
}

}  // namespace gpuscaler::sim
