// FOCUS 1.2 conformance of a `--format focus` export, checked against the
// spec's column table read at test time from
// ../shared/reference/focus/columns/focus-v1.2-columns.json (never copied
// here): every Mandatory column and every Conditional column that applies to
// GPU compute rows is present, no other column unless prefixed x_, every
// value has its column's type, format, nullability and allowed value, and
// the rows keep the spec's cross-column rules. Shared by the report tests
// and the CLI tests (which read the binary's output).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "report/csv.h"

namespace gpuscaler::report::testing {

struct FocusColumnSpec {
  std::string feature_level;
  bool allows_nulls = true;
  std::string data_type;
  std::string number_range;
  std::set<std::string> allowed;
};

struct FocusSpec {
  std::map<std::string, FocusColumnSpec> columns;
  std::map<std::string, std::string> subcategory_parent;  // ServiceSubcategory -> ServiceCategory
};

inline std::string FocusSpecPath() {
  return std::string(GPUSCALER_SHARED_DIR) + "/reference/focus/columns/focus-v1.2-columns.json";
}

// The column table; nullopt when ../shared is absent (the caller skips).
inline std::optional<FocusSpec> LoadFocusSpec() {
  std::ifstream in(FocusSpecPath(), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json table = nlohmann::json::parse(text.str());
  FocusSpec spec;
  for (const auto& c : table.at("columns")) {
    FocusColumnSpec s;
    s.feature_level = c.at("FeatureLevel");
    s.allows_nulls = c.at("AllowsNulls") == "True";
    s.data_type = c.at("DataType");
    s.number_range = c.at("NumberRange");
    for (const auto& v : c.at("AllowedValues")) s.allowed.insert(v.get<std::string>());
    spec.columns[c.at("ColumnId")] = s;
    if (c.at("ColumnId") == "ServiceSubcategory") {
      for (const auto& pair : c.at("AllowedCategorySubcategoryPairs")) {
        spec.subcategory_parent[pair[1].get<std::string>()] = pair[0].get<std::string>();
      }
    }
  }
  return spec;
}

// The Conditional (and Recommended) columns a GPU compute row of AWS or GCP
// needs, as docs/reports.md decides them from the spec's conditions.
inline const std::vector<std::string>& FocusApplicableColumns() {
  static const std::vector<std::string> columns = {
      "SubAccountId", "SubAccountName",         // both clouds have sub-accounts
      "RegionId", "RegionName", "AvailabilityZone",
      "ResourceId", "ResourceName", "ResourceType",
      "SkuId", "SkuMeter", "SkuPriceId", "SkuPriceDetails",  // published price lists
      "ListUnitPrice", "ContractedUnitPrice", "PricingCategory", "PricingCurrency",
      "ConsumedQuantity", "ConsumedUnit",
      "CapacityReservationId", "CapacityReservationStatus",  // both support reservations
      "CommitmentDiscountCategory", "CommitmentDiscountId", "CommitmentDiscountName",
      "CommitmentDiscountQuantity", "CommitmentDiscountStatus", "CommitmentDiscountType",
      "CommitmentDiscountUnit",  // and commitment discounts
      "ChargeFrequency", "ServiceSubcategory", "Tags",
  };
  return columns;
}

// Numeric Format: integer, decimal or "mEn" with a sign only on a negative
// exponent; no "+", no separators, no units.
inline bool IsFocusNumber(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    size_t frac = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac;
    if (frac == 0) return false;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'E' || s[i] == 'e')) {
    ++i;
    if (i < s.size() && s[i] == '-') ++i;
    size_t exp = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp;
    if (exp == 0) return false;
  }
  return i == s.size();
}

// Date/Time Format: 'YYYY-MM-DDTHH:mm:ssZ', UTC, a real calendar instant.
inline bool IsFocusDateTime(const std::string& s) {
  static const std::string shape = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != shape[i]) return false;
  }
  const int year = std::stoi(s.substr(0, 4)), month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12 || day < 1) return false;
  if (day > kDays[month - 1] + (month == 2 && leap ? 1 : 0)) return false;
  return std::stoi(s.substr(11, 2)) < 24 && std::stoi(s.substr(14, 2)) < 60 && std::stoi(s.substr(17, 2)) < 60;
}

// Key-Value Format: a JSON object whose values are scalars.
inline bool IsFocusKeyValue(const std::string& s) {
  const nlohmann::json j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object() || it->is_array()) return false;
  }
  return true;
}

// Checks `csv` (header first) against `spec`; returns the rows as maps from
// column to value for the caller's own checks (an empty value is null).
inline std::vector<std::map<std::string, std::string>> ExpectFocusConforms(const FocusSpec& spec,
                                                                           const std::string& csv) {
  const std::vector<std::vector<std::string>> rows = ParseCsv(csv);
  std::vector<std::map<std::string, std::string>> out;
  if (rows.empty()) {
    ADD_FAILURE() << "no header";
    return out;
  }
  const std::vector<std::string>& header = rows[0];
  std::set<std::string> present(header.begin(), header.end());
  EXPECT_EQ(present.size(), header.size()) << "a column appears twice";
  int mandatory = 0;
  for (const auto& [id, column] : spec.columns) {
    if (column.feature_level != "Mandatory") continue;
    ++mandatory;
    EXPECT_EQ(present.count(id), 1u) << "Mandatory column " << id << " missing";
  }
  EXPECT_EQ(mandatory, 21) << "FOCUS 1.2 has 21 Mandatory columns";
  for (const std::string& id : FocusApplicableColumns()) {
    EXPECT_EQ(spec.columns.count(id), 1u) << id << " is not a FOCUS 1.2 column";
    EXPECT_EQ(present.count(id), 1u) << "applicable column " << id << " missing";
  }
  for (const std::string& name : header) {
    if (name.rfind("x_", 0) == 0) continue;
    EXPECT_EQ(spec.columns.count(name), 1u) << name << " is neither a FOCUS 1.2 column nor prefixed x_";
  }

  for (size_t r = 1; r < rows.size(); ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    if (rows[r].size() != header.size()) {
      ADD_FAILURE() << rows[r].size() << " values for " << header.size() << " columns";
      continue;
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = rows[r][i];
    for (const auto& [name, v] : row) {
      auto it = spec.columns.find(name);
      if (it == spec.columns.end()) continue;
      const FocusColumnSpec& column = it->second;
      SCOPED_TRACE("column " + name + " value '" + v + "'");
      if (v.empty()) {
        EXPECT_TRUE(column.allows_nulls) << "null in a column that allows none";
        continue;
      }
      if (column.data_type == "Decimal") {
        EXPECT_TRUE(IsFocusNumber(v)) << "not a FOCUS number";
        if (column.number_range.find("non-negative") != std::string::npos) {
          EXPECT_GE(std::strtod(v.c_str(), nullptr), 0);
        }
      } else if (column.data_type == "Date/Time") {
        EXPECT_TRUE(IsFocusDateTime(v)) << "not a UTC date/time";
      } else if (column.data_type == "JSON") {
        EXPECT_TRUE(IsFocusKeyValue(v)) << "not a key-value JSON object";
      } else {
        EXPECT_EQ(column.data_type, "String");
      }
      if (!column.allowed.empty()) {
        EXPECT_EQ(column.allowed.count(v), 1u) << "not an allowed value";
      }
    }
    auto null = [&](const char* c) { return row.at(c).empty(); };
    auto num = [&](const char* c) { return std::strtod(row.at(c).c_str(), nullptr); };
    // The cross-column rules for a Usage or Purchase row that is not a
    // correction.
    const bool usage = row.at("ChargeCategory") == "Usage";
    const bool purchase = row.at("ChargeCategory") == "Purchase";
    EXPECT_TRUE(usage || purchase) << row.at("ChargeCategory");
    EXPECT_TRUE(null("ChargeClass"));
    EXPECT_EQ(null("RegionName"), null("RegionId")) << "RegionName is null exactly when RegionId is";
    EXPECT_EQ(null("SubAccountName"), null("SubAccountId"));
    EXPECT_FALSE(null("ResourceId"));
    EXPECT_FALSE(null("ResourceType"));
    EXPECT_NE(row.at("ResourceName"), row.at("ResourceId")) << "ResourceName repeats a system-made ResourceId";
    for (const char* c : {"SkuId", "SkuPriceId", "ListUnitPrice", "ContractedUnitPrice", "PricingCategory",
                          "PricingQuantity", "PricingUnit", "ChargeFrequency", "ServiceSubcategory",
                          "PricingCurrency", "BillingCurrency"}) {
      EXPECT_FALSE(null(c)) << c << " is null on a " << row.at("ChargeCategory") << " row";
    }
    // ConsumedQuantity: null on a purchase and on the unused part of a
    // commitment, else a positive quantity; ConsumedUnit with it.
    const bool unused = row.at("CommitmentDiscountStatus") == "Unused";
    if (purchase || unused) {
      EXPECT_TRUE(null("ConsumedQuantity"));
    } else {
      EXPECT_GT(num("ConsumedQuantity"), 0) << "a Usage row consumes a positive quantity";
    }
    EXPECT_EQ(null("ConsumedUnit"), null("ConsumedQuantity"));
    if (purchase) {
      EXPECT_NE(row.at("ChargeFrequency"), "Usage-Based") << "a purchase is not usage-based";
      EXPECT_NE(row.at("PricingCategory"), "Committed") << "the purchase of a commitment is not committed pricing";
    }
    EXPECT_FALSE(null("SkuMeter"));
    EXPECT_TRUE(null("CapacityReservationStatus") || !null("CapacityReservationId"));
    if (usage && !null("CapacityReservationId")) {
      EXPECT_FALSE(null("CapacityReservationStatus"));
    }
    for (const char* c : {"CommitmentDiscountCategory", "CommitmentDiscountName", "CommitmentDiscountQuantity",
                          "CommitmentDiscountStatus", "CommitmentDiscountType", "CommitmentDiscountUnit"}) {
      EXPECT_TRUE(null(c) || !null("CommitmentDiscountId")) << c << " without a CommitmentDiscountId";
    }
    if (!null("CommitmentDiscountId")) {
      for (const char* c : {"CommitmentDiscountCategory", "CommitmentDiscountType", "CommitmentDiscountQuantity"}) {
        EXPECT_FALSE(null(c)) << c << " is null beside a CommitmentDiscountId";
      }
      if (usage) {
        EXPECT_FALSE(null("CommitmentDiscountStatus"));
        EXPECT_EQ(row.at("PricingCategory"), "Committed");
      }
    }
    EXPECT_EQ(null("CommitmentDiscountUnit"), null("CommitmentDiscountQuantity"));
    EXPECT_NEAR(num("ListUnitPrice") * num("PricingQuantity"), num("ListCost"), 1e-6);
    EXPECT_NEAR(num("ContractedUnitPrice") * num("PricingQuantity"), num("ContractedCost"), 1e-6);
    auto parent = spec.subcategory_parent.find(row.at("ServiceSubcategory"));
    EXPECT_TRUE(parent != spec.subcategory_parent.end() && parent->second == row.at("ServiceCategory"))
        << "ServiceSubcategory " << row.at("ServiceSubcategory") << " is not under " << row.at("ServiceCategory");
    EXPECT_LT(row.at("ChargePeriodStart"), row.at("ChargePeriodEnd"));
    EXPECT_LE(row.at("BillingPeriodStart"), row.at("ChargePeriodStart"));
    // A purchase's charge period is the term it buys, which may outlast the
    // billing period it is invoiced in (as FOCUS's own purchase samples).
    if (usage) {
      EXPECT_LE(row.at("ChargePeriodEnd"), row.at("BillingPeriodEnd"));
    }
    // SkuPriceDetails: FOCUS-defined keys (PascalCase) or x_-prefixed ones.
    if (!null("SkuPriceDetails") && IsFocusKeyValue(row.at("SkuPriceDetails"))) {
      const nlohmann::json details = nlohmann::json::parse(row.at("SkuPriceDetails"));
      for (auto it = details.begin(); it != details.end(); ++it) {
        const std::string& key = it.key();
        EXPECT_TRUE(key.rfind("x_", 0) == 0 || std::isupper(static_cast<unsigned char>(key[0]))) << key;
      }
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace gpuscaler::report::testing
