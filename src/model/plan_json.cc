#include "gpuscaler/model/json.h"
#include "gpuscaler/model/json_writer.h"
#include "json_schema.h"

namespace gpuscaler {

std::string FormatPlanJsonLine(const Plan& plan) {
  JsonWriter w;
  json_internal::FieldWriter(&w).Write(plan);
  return std::move(w).Take();
}

Json ToJson(const Plan& plan) { return Json::parse(FormatPlanJsonLine(plan)); }

std::string FormatPlanJson(const Plan& plan) { return ToJson(plan).dump(2) + "\n"; }

}  // namespace gpuscaler
