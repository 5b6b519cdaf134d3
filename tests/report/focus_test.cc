// The FOCUS export checked against the FOCUS 1.1 column table (read from
// ../shared at test time, never copied here): every mandatory column present,
// each value of its type and format, nulls only where allowed, allowed values
// only, custom columns prefixed x_, and the cost identities the spec states.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "report_test_util.h"

namespace gpuscaler::report {
namespace {

using testing::GoldenParams;
using testing::kGoldenTotalUsd;
using testing::ParseCsv;
using testing::ReadFile;
using testing::TempDir;

struct ColumnSpec {
  std::string feature_level;
  bool allows_nulls = true;
  std::string data_type;
  std::string number_range;
  std::set<std::string> allowed;
};

bool IsNumeric(const std::string& s) {
  // Numeric Format: integer, decimal or "mEn" with a sign only on a negative
  // exponent; no "+", no separators, no units.
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

bool IsDateTime(const std::string& s) {
  // 'YYYY-MM-DDTHH:mm:ssZ', UTC.
  static const std::string shape = "dddd-dd-ddTdd:dd:ddZ";
  if (s.size() != shape.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != shape[i]) return false;
  }
  WallTime t;
  return ParseRfc3339(s, &t);
}

bool IsKeyValue(const std::string& s) {
  const nlohmann::json j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  for (const auto& [k, v] : j.items()) {
    if (v.is_object() || v.is_array()) return false;  // scalars only
  }
  return true;
}

class FocusExport : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path =
        std::string(GPUSCALER_SHARED_DIR) + "/reference/focus/columns/focus-v1.1-columns.json";
    const std::string text = ReadFile(path);
    if (text.empty()) GTEST_SKIP() << "FOCUS column table not found at " << path << " (../shared absent)";
    const nlohmann::json spec = nlohmann::json::parse(text);
    for (const auto& c : spec["columns"]) {
      ColumnSpec s;
      s.feature_level = c["FeatureLevel"];
      s.allows_nulls = c["AllowsNulls"] == "True";
      s.data_type = c["DataType"];
      s.number_range = c["NumberRange"];
      for (const auto& v : c["AllowedValues"]) s.allowed.insert(v.get<std::string>());
      columns_[c["ColumnId"]] = s;
      if (c["ColumnId"] == "ServiceSubcategory") {
        for (const auto& pair : c["AllowedCategorySubcategoryPairs"]) {
          subcategory_parent_[pair[1].get<std::string>()] = pair[0].get<std::string>();
        }
      }
    }
    ASSERT_EQ(columns_.size(), 50u) << "FOCUS 1.1 defines 50 columns";

    testing::WriteGoldenScenario(dir_.File("golden.db"));
    Result<ReportQuery> q = ParseReportQuery(GoldenParams("focus"));
    ASSERT_TRUE(q.ok());
    q->db_path = dir_.File("golden.db");
    Result<RenderedReport> r = RenderReport(*q);
    ASSERT_TRUE(r.ok()) << r.error().ToString();
    rows_ = ParseCsv(r->body);
    ASSERT_GE(rows_.size(), 2u);
    for (size_t i = 0; i < rows_[0].size(); ++i) index_[rows_[0][i]] = i;
  }

  const std::string& Get(const std::vector<std::string>& row, const std::string& column) {
    return row.at(index_.at(column));
  }
  double Num(const std::vector<std::string>& row, const std::string& column) {
    return std::strtod(Get(row, column).c_str(), nullptr);
  }

  TempDir dir_;
  std::map<std::string, ColumnSpec> columns_;
  std::map<std::string, std::string> subcategory_parent_;
  std::vector<std::vector<std::string>> rows_;
  std::map<std::string, size_t> index_;
};

TEST_F(FocusExport, HasEveryMandatoryColumnAndOnlyKnownOrCustomOnes) {
  int mandatory = 0;
  for (const auto& [id, spec] : columns_) {
    if (spec.feature_level != "Mandatory") continue;
    ++mandatory;
    EXPECT_EQ(index_.count(id), 1u) << "mandatory column " << id << " missing";
  }
  EXPECT_EQ(mandatory, 21);
  for (const auto& [name, i] : index_) {
    if (name.rfind("x_", 0) == 0) continue;
    EXPECT_EQ(columns_.count(name), 1u) << name << " is neither a FOCUS column nor prefixed x_";
  }
  EXPECT_EQ(index_.size(), rows_[0].size()) << "a column appears twice";
}

TEST_F(FocusExport, EveryValueHasItsTypeFormatNullabilityAndAllowedValue) {
  for (size_t r = 1; r < rows_.size(); ++r) {
    const std::vector<std::string>& row = rows_[r];
    ASSERT_EQ(row.size(), rows_[0].size()) << "row " << r;
    for (const auto& [name, i] : index_) {
      auto it = columns_.find(name);
      if (it == columns_.end()) continue;
      const ColumnSpec& spec = it->second;
      const std::string& v = row[i];
      SCOPED_TRACE("row " + std::to_string(r) + " column " + name + " value '" + v + "'");
      if (v.empty()) {  // null
        EXPECT_TRUE(spec.allows_nulls) << "null in a non-nullable column";
        continue;
      }
      if (spec.data_type == "Decimal") {
        EXPECT_TRUE(IsNumeric(v));
        if (spec.number_range.find("non-negative") != std::string::npos) {
          EXPECT_GE(std::strtod(v.c_str(), nullptr), 0);
        }
      } else if (spec.data_type == "Date/Time") {
        EXPECT_TRUE(IsDateTime(v));
      } else if (spec.data_type == "JSON") {
        EXPECT_TRUE(IsKeyValue(v));
      } else {
        EXPECT_EQ(spec.data_type, "String");
      }
      if (!spec.allowed.empty()) {
        EXPECT_EQ(spec.allowed.count(v), 1u) << "not an allowed value";
      }
    }
  }
}

TEST_F(FocusExport, RowsKeepTheSpecsIdentitiesAndAddUpToTheReport) {
  double billed = 0;
  for (size_t r = 1; r < rows_.size(); ++r) {
    const auto& row = rows_[r];
    SCOPED_TRACE("row " + std::to_string(r));
    const std::string ct = Get(row, "x_CapacityType");
    EXPECT_EQ(Get(row, "PricingCategory"), ct == "spot" ? "Dynamic" : "Standard");
    EXPECT_EQ(Get(row, "ChargeCategory"), "Usage");
    EXPECT_EQ(Get(row, "BillingCurrency"), "USD");
    EXPECT_EQ(subcategory_parent_.at(Get(row, "ServiceSubcategory")), Get(row, "ServiceCategory"));
    EXPECT_GT(Num(row, "ConsumedQuantity"), 0);  // Usage rows: positive
    EXPECT_NEAR(Num(row, "ListUnitPrice") * Num(row, "PricingQuantity"), Num(row, "ListCost"), 1e-6);
    EXPECT_NEAR(Num(row, "ContractedUnitPrice") * Num(row, "PricingQuantity"), Num(row, "ContractedCost"), 1e-6);
    EXPECT_EQ(Get(row, "BilledCost"), Get(row, "EffectiveCost"));
    EXPECT_LT(Get(row, "ChargePeriodStart"), Get(row, "ChargePeriodEnd"));
    EXPECT_LE(Get(row, "BillingPeriodStart"), Get(row, "ChargePeriodStart"));
    EXPECT_LT(Get(row, "ChargePeriodStart"), Get(row, "BillingPeriodEnd"));
    billed += Num(row, "BilledCost");
  }
  EXPECT_NEAR(billed, kGoldenTotalUsd, 1e-6);
}

}  // namespace
}  // namespace gpuscaler::report
