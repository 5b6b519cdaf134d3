// Spot-market readers: Can't Be Late availability, Parcae events, AWS spot
// advisor bands, AWS spot price history, GCP price change log
// (docs/traces.md).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/traces/csv.h"
#include "sim/traces/readers_impl.h"

namespace gpuscaler::sim::internal {
namespace {

// Hours in the advisor's "trailing month".
constexpr double kHoursPerMonth = 720.0;

struct AdvisorBand {
  std::string_view label;
  double midpoint_share_per_month;  // open top band: taken as 25 %
};
constexpr std::array<AdvisorBand, 5> kAdvisorBands{{
    {"<5%", 0.025}, {"5-10%", 0.075}, {"10-15%", 0.125}, {"15-20%", 0.175}, {">20%", 0.25},
}};

}  // namespace

void ReadCblAvailability(csv::Table& t, const MarketOptions& o, SpotMarket* market) {
  const int c_elapsed = t.Require("elapsed_s");
  if (t.failed()) return;

  struct Column {
    int index;
    bool is_price;
    std::string instance_type;
    std::string zone;
    std::optional<double> last;  // last value emitted (changes only)
    bool zone_only = false;      // typed by o.instance_type
  };
  std::vector<Column> columns;
  std::map<std::string, std::string> zone_type;  // zone -> type of its plain column
  for (size_t i = 0; i < t.header().size(); ++i) {
    const std::string& name = t.header()[i];
    if (name == "tick" || name == "elapsed_s") continue;
    Column c{static_cast<int>(i), false, o.instance_type, name, std::nullopt, false};
    if (name.rfind("price_", 0) == 0) {
      c.is_price = true;
      c.zone = name.substr(6);
    } else {
      const std::vector<std::string> parts = csv::SplitList(name, '_');
      if (parts.size() == 3) {
        std::optional<std::string> type = CblInstanceType(parts[1] + "_" + parts[2]);
        if (!type) {
          t.FailHeader("column '" + name + "': unknown GPU '" + parts[1] + "_" + parts[2] +
                       "' (known: v100_1, v100_4, v100_8, k80_1, k80_8)");
          return;
        }
        c.zone = parts[0];
        c.instance_type = *type;
      } else if (parts.size() != 1) {
        t.FailHeader("column '" + name + "': expected <zone>, <zone>_<gpu>_<count> or price_<zone>");
        return;
      } else {
        c.zone_only = true;
      }
      zone_type[c.zone] = c.instance_type;
    }
    if (c.zone.empty()) {
      t.FailHeader("column '" + name + "': no zone");
      return;
    }
    columns.push_back(std::move(c));
  }
  if (zone_type.empty()) {
    t.FailHeader("no availability columns");
    return;
  }

  int64_t empty_cells = 0;
  std::optional<int64_t> previous_t, earliest;
  while (t.Next()) {
    const int64_t at = t.SecondsValue(c_elapsed);
    if (!earliest) earliest = at;
    if (!t.failed() && previous_t && at <= *previous_t) {
      t.Fail(c_elapsed, csv::Quote(t.Field(c_elapsed)) + " is not after the previous row's " +
                            std::to_string(*previous_t));
    }
    for (Column& c : columns) {
      if (t.failed()) break;
      if (t.Empty(c.index)) {
        ++empty_cells;
        continue;
      }
      const double v = t.Double(c.index);
      if (t.failed()) break;
      if (v < 0) {
        t.Fail(c.index, "must be >= 0, got " + csv::Quote(t.Field(c.index)));
        break;
      }
      if (c.is_price) {
        if (c.last && *c.last == v) continue;
        c.last = v;
        market->prices.push_back({Seconds(at), c.instance_type, c.zone, CapacityType::kSpot, v});
      } else {
        // The range check first: casting a double beyond int64 is undefined.
        if (v > std::numeric_limits<int>::max()) {
          t.Fail(c.index, csv::Quote(t.Field(c.index)) + " is more nodes than an int holds");
          break;
        }
        if (v != static_cast<double>(static_cast<int64_t>(v))) {
          t.Fail(c.index, csv::Quote(t.Field(c.index)) + " is not a whole number of nodes");
          break;
        }
        int nodes = static_cast<int>(v);
        if (o.available_nodes_when_up && nodes > 0) nodes = *o.available_nodes_when_up;
        if (c.last && *c.last == nodes) continue;
        c.last = nodes;
        market->availability.push_back({Seconds(at), c.instance_type, c.zone, nodes});
        if (c.zone_only) {
          for (const std::string& also : o.also_instance_types) {
            if (also != c.instance_type) market->availability.push_back({Seconds(at), also, c.zone, nodes});
          }
        }
      }
    }
    if (t.failed()) break;
    previous_t = at;
    ++market->stats.rows_used;
  }
  if (t.failed()) return;
  Warn(&market->stats, empty_cells, "cells are empty (no probe data); the last value stays in force");
  FinishMarket(market, o, false, earliest);
}

void ReadParcaeEvents(csv::Table& t, const MarketOptions& o, SpotMarket* market) {
  const int c_time = t.Require("time_ms"), c_event = t.Require("event"), c_node = t.Require("node");
  std::optional<int64_t> earliest;
  while (t.Next()) {
    const double ms = t.Double(c_time);
    if (!t.failed() && ms < 0) t.Fail(c_time, "must be >= 0, got " + csv::Quote(t.Field(c_time)));
    const int64_t at = csv::Table::Round(ms / 1000.0);
    if (!t.failed()) earliest = std::min(earliest.value_or(at), at);
    const std::string_view event = t.Field(c_event);
    if (!t.failed() && event != "add" && event != "remove") {
      t.Fail(c_event, csv::Quote(event) + " is not add or remove");
    }
    if (!t.failed() && t.Empty(c_node)) t.Fail(c_node, "empty");
    if (t.failed()) break;
    if (event == "add") {
      Skip(&market->stats, "add event");
      continue;
    }
    market->interruptions.push_back({Seconds(at), o.instance_type, o.zone});
    ++market->stats.rows_used;
  }
  if (t.failed()) return;
  FinishMarket(market, o, false, earliest);
}

void ReadAwsSpotAdvisor(csv::Table& t, const MarketOptions& o, SpotMarket* market) {
  const int c_region = t.Require("region"), c_os = t.Require("os"), c_type = t.Require("instance_type");
  const int c_savings = t.Require("savings_pct_vs_ondemand"), c_band = t.Require("interruption_range_index");
  const int c_label = t.Find("interruption_range_label");
  std::map<std::pair<std::string, std::string>, int64_t> first_line;
  int64_t negative_savings = 0;
  while (t.Next()) {
    if (t.Empty(c_region)) t.Fail(c_region, "empty");
    if (t.Empty(c_type)) t.Fail(c_type, "empty");
    const double savings_pct = t.Double(c_savings);
    if (!t.failed() && savings_pct >= 100) {
      t.Fail(c_savings, "must be below 100, got " + csv::Quote(t.Field(c_savings)));
    }
    const int64_t band = t.Int(c_band);
    if (!t.failed() && (band < 0 || band >= static_cast<int64_t>(kAdvisorBands.size()))) {
      t.Fail(c_band, "must be 0..4, got " + csv::Quote(t.Field(c_band)));
    }
    if (!t.failed() && c_label >= 0 && t.Field(c_label) != kAdvisorBands[band].label) {
      t.Fail(c_label, csv::Quote(t.Field(c_label)) + " does not match interruption_range_index " +
                          std::to_string(band) + " ('" + std::string(kAdvisorBands[band].label) + "')");
    }
    if (t.failed()) break;
    if (t.Field(c_os) != "Linux") {
      Skip(&market->stats, "os not Linux");
      continue;
    }
    auto key = std::make_pair(std::string(t.Field(c_region)), std::string(t.Field(c_type)));
    auto [it, inserted] = first_line.emplace(key, t.line());
    if (!inserted) {
      t.Fail(c_type, "duplicate " + csv::Quote(key.second) + " in region " + csv::Quote(key.first) + " (first on line " +
                         std::to_string(it->second) + ")");
      break;
    }
    // The advisor lists a few spot prices above on-demand (negative
    // savings); the band is still valid, the discount is none.
    if (savings_pct < 0) ++negative_savings;
    market->risks.push_back({key.second, key.first,
                             kAdvisorBands[band].midpoint_share_per_month / kHoursPerMonth,
                             std::max(0.0, savings_pct) / 100.0});
    ++market->stats.rows_used;
  }
  if (t.failed()) return;
  Warn(&market->stats, negative_savings,
       "rows have negative savings (spot above on-demand); savings_fraction set to 0");
  FinishMarket(market, o, false, std::nullopt);
}

void ReadAwsSpotPriceHistory(csv::Table& t, const MarketOptions& o, SpotMarket* market) {
  const int c_time = t.Require("timestamp"), c_az = t.Require("az_id"), c_type = t.Require("instance_type");
  const int c_product = t.Require("product_description"), c_price = t.Require("spot_price_usd_per_h");
  std::optional<int64_t> earliest;
  while (t.Next()) {
    const int64_t at = t.Timestamp(c_time);
    if (!t.failed()) earliest = std::min(earliest.value_or(at), at);
    if (!t.failed() && t.Empty(c_az)) t.Fail(c_az, "empty");
    if (!t.failed() && t.Empty(c_type)) t.Fail(c_type, "empty");
    const double price = t.Double(c_price);
    if (!t.failed() && price < 0) t.Fail(c_price, "must be >= 0, got " + csv::Quote(t.Field(c_price)));
    if (t.failed()) break;
    if (t.Field(c_product) != "Linux/UNIX") {
      Skip(&market->stats, "product not Linux/UNIX");
      continue;
    }
    std::string zone(t.Field(c_az));
    if (auto it = o.zone_names.find(zone); it != o.zone_names.end()) zone = it->second;
    market->prices.push_back(
        {Seconds(at), std::string(t.Field(c_type)), std::move(zone), CapacityType::kSpot, price});
    ++market->stats.rows_used;
  }
  if (t.failed()) return;
  FinishMarket(market, o, true, earliest);
}

void ReadGcpSpotPrices(csv::Table& t, const MarketOptions& o, SpotMarket* market) {
  const int c_time = t.Require("snapshot_unix"), c_type = t.Require("machine_type");
  const int c_region = t.Require("region"), c_od = t.Require("ondemand_usd_per_h");
  const int c_spot = t.Require("spot_usd_per_h");
  struct Last {
    std::optional<double> spot;
    std::optional<double> on_demand;
  };
  std::map<std::pair<std::string, std::string>, Last> last;
  std::optional<int64_t> previous_t, earliest;
  auto price = [&](int col) -> std::optional<double> {
    if (t.Empty(col)) return std::nullopt;
    const double v = t.Double(col);
    if (!t.failed() && v < 0) t.Fail(col, "must be >= 0, got " + csv::Quote(t.Field(col)));
    return v;
  };
  while (t.Next()) {
    const int64_t at = t.SecondsValue(c_time);
    if (!t.failed() && previous_t && at < *previous_t) {
      t.Fail(c_time, csv::Quote(t.Field(c_time)) + " is before the previous row's " + std::to_string(*previous_t) +
                         "; a change log is in time order");
    }
    if (!t.failed() && t.Empty(c_type)) t.Fail(c_type, "empty");
    if (!t.failed() && t.Empty(c_region)) t.Fail(c_region, "empty");
    const std::optional<double> on_demand = price(c_od);
    const std::optional<double> spot = price(c_spot);
    if (t.failed()) break;
    previous_t = at;
    if (!earliest) earliest = at;
    auto key = std::make_pair(std::string(t.Field(c_type)), std::string(t.Field(c_region)));
    Last& l = last[key];
    if (!spot && !on_demand) {
      // The key left the price file; a later row starts it afresh.
      l = Last{};
      Skip(&market->stats, "key removed");
      continue;
    }
    bool used = false;
    if (spot && l.spot != spot) {
      market->prices.push_back({Seconds(at), key.first, key.second, CapacityType::kSpot, *spot});
      used = true;
    }
    if (o.include_on_demand && on_demand && l.on_demand != on_demand) {
      market->prices.push_back({Seconds(at), key.first, key.second, CapacityType::kOnDemand, *on_demand});
      used = true;
    }
    l.spot = spot;
    l.on_demand = on_demand;
    if (used) {
      ++market->stats.rows_used;
    } else {
      Skip(&market->stats, spot ? "spot price unchanged" : "no spot price");
    }
  }
  if (t.failed()) return;
  FinishMarket(market, o, true, earliest);
}

}  // namespace gpuscaler::sim::internal
