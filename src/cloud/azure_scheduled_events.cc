#include "gpuscaler/cloud/azure_scheduled_events.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "gpuscaler/cloud/azure_provider.h"

namespace gpuscaler::cloud {

Result<std::vector<AzureScheduledEvent>> ParseAzureScheduledEvents(std::string_view body) {
  const nlohmann::json doc = nlohmann::json::parse(body, nullptr, false);
  if (!doc.is_object() || !doc.contains("Events") || !doc["Events"].is_array())
    return Error::InvalidInput("scheduled events: not a document with Events");
  std::vector<AzureScheduledEvent> out;
  for (const nlohmann::json& e : doc["Events"]) {
    if (!e.is_object()) return Error::InvalidInput("scheduled events: an event is not an object");
    AzureScheduledEvent event;
    auto text = [&](const char* key) {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    event.event_id = text("EventId");
    event.event_type = text("EventType");
    event.event_status = text("EventStatus");
    if (auto r = e.find("Resources"); r != e.end() && r->is_array()) {
      for (const nlohmann::json& name : *r) {
        if (name.is_string()) event.resources.push_back(name.get<std::string>());
      }
    }
    event.not_before = ParseRfc1123Time(text("NotBefore"));
    out.push_back(std::move(event));
  }
  return out;
}

std::optional<WallTime> ParseRfc1123Time(std::string_view text) {
  static constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  char weekday[4] = {}, month[4] = {}, zone[4] = {};
  int day = 0, year = 0, hour = 0, minute = 0, second = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%3s, %d %3s %d %d:%d:%d %3s", weekday, &day, month, &year, &hour, &minute,
                  &second, zone) != 8 ||
      std::string_view(zone) != "GMT" || s.size() < 4 || s[3] != ',')
    return std::nullopt;
  unsigned month_number = 0;
  for (unsigned m = 0; m < kMonths.size(); ++m) {
    if (std::string_view(month) == kMonths[m]) month_number = m + 1;
  }
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(month_number),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (month_number == 0 || !date.ok() || hour > 23 || minute > 59 || second > 60 || hour < 0 || minute < 0 ||
      second < 0)
    return std::nullopt;
  const std::chrono::sys_seconds t = std::chrono::sys_days(date) + std::chrono::hours(hour) +
                                     std::chrono::minutes(minute) + std::chrono::seconds(second);
  return std::chrono::time_point_cast<WallTime::duration>(t);
}

std::optional<std::string> AzureVmNameOfComputerName(std::string_view computer_name) {
  const std::optional<int64_t> ordinal = AzureProvider::MachineOrdinal(computer_name);
  if (!ordinal || computer_name.size() <= 6) return std::nullopt;
  return std::string(computer_name.substr(0, computer_name.size() - 6)) + "_" + std::to_string(*ordinal);
}

}  // namespace gpuscaler::cloud
