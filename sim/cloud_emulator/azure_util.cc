// Wire helpers of the AzureEmulator: ARM error bodies, times, headers.
#include <cctype>
#include <ctime>

#include "sim/cloud_emulator/azure_impl.h"

namespace gpuscaler::sim::azure {

EmulatorResponse Json(const std::string& body, int status) {
  return {status, "application/json; charset=utf-8", {}, body};
}

EmulatorResponse ArmError(int status, const std::string& code, const std::string& message) {
  nlohmann::json j = {{"error", {{"code", code}, {"message", message}}}};
  EmulatorResponse r = Json(j.dump(), status);
  r.headers.emplace_back("x-ms-failure-cause", status >= 500 ? "service" : "gateway");
  return r;
}

EmulatorResponse ResourceNotFound(const std::string& type, const std::string& name, const std::string& rg) {
  return ArmError(404, "ResourceNotFound",
                  "The Resource '" + type + "/" + name + "' under resource group '" + rg +
                      "' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix");
}

namespace {

std::tm AzUtc(WallTime t, long* micros) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  *micros = static_cast<long>(us % 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string IsoTime(WallTime t) {
  long micros = 0;
  const std::tm tm = AzUtc(t, &micros);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%07ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros * 10);
  return buf;
}

std::string Rfc1123Time(WallTime t) {
  long micros = 0;
  const std::tm tm = AzUtc(t, &micros);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool EqualsNoCase(std::string_view a, std::string_view b) { return Lower(a) == Lower(b); }

std::string Header(const EmulatorRequest& request, std::string_view name) {
  for (const auto& [k, v] : request.headers) {
    if (EqualsNoCase(k, name)) return v;
  }
  return "";
}

std::map<std::string, std::string> StringMap(const nlohmann::json& j, const char* key) {
  std::map<std::string, std::string> out;
  if (!j.is_object() || !j.contains(key) || j[key].is_null()) return out;
  for (const auto& [k, v] : j[key].items()) out[k] = v.get<std::string>();
  return out;
}

}  // namespace gpuscaler::sim::azure
