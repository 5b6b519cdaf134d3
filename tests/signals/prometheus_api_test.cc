#include "gpuscaler/signals/prometheus_api.h"

#include <gtest/gtest.h>

#include <cmath>

#include "signals/test_files.h"

namespace gpuscaler::signals {
namespace {

TEST(PromApi, ParsesTheDocumentedInstantVector) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(body, "prometheus/api/query-instant-vector.docs.json");
  Result<PromQueryResult> got = ParsePromQueryResponse(body);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->type, PromResultType::kVector);
  ASSERT_EQ(got->series.size(), 2u);
  EXPECT_EQ(got->series[0].metric,
            (std::vector<Label>{{"__name__", "up"}, {"instance", "localhost:9090"}, {"job", "prometheus"}}));
  ASSERT_EQ(got->series[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(got->series[0].points[0].timestamp_s, 1435781451.781);
  EXPECT_EQ(got->series[0].points[0].value, 1);
  EXPECT_EQ(got->series[1].points[0].value, 0);
  Result<PromPoint> one = SingleValue(*got);
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.error().category(), ErrorCategory::kInvalidInput);
}

TEST(PromApi, ParsesTheDocumentedMatrix) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(body, "prometheus/api/query_range-matrix.docs.json");
  Result<PromQueryResult> got = ParsePromQueryResponse(body);
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ(got->type, PromResultType::kMatrix);
  ASSERT_EQ(got->series.size(), 2u);
  ASSERT_EQ(got->series[1].points.size(), 3u);
  EXPECT_EQ(got->series[1].points[2].value, 1);
  EXPECT_DOUBLE_EQ(got->series[1].points[2].timestamp_s, 1435781460.781);
  EXPECT_FALSE(SingleValue(*got).ok());
}

TEST(PromApi, CarriesTheApiErrorMessage) {
  GPUSCALER_READ_REFERENCE_OR_SKIP(body, "prometheus/api/error-not-acceptable.from-api_test.json");
  Result<PromQueryResult> got = ParsePromQueryResponse(body);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().category(), ErrorCategory::kInternal);
  EXPECT_EQ(got.error().message(),
            "prometheus not_acceptable: cannot encode response as application/default-format");
}

TEST(PromApi, MapsErrorTypesToCategories) {
  struct Case {
    const char* error_type;
    ErrorCategory want;
  } cases[] = {
      {"bad_data", ErrorCategory::kConfig},       {"execution", ErrorCategory::kInvalidInput},
      {"timeout", ErrorCategory::kTransient},     {"canceled", ErrorCategory::kTransient},
      {"unavailable", ErrorCategory::kTransient}, {"internal", ErrorCategory::kInternal},
      {"not_found", ErrorCategory::kNotFound},    {"something_new", ErrorCategory::kTransient},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error_type);
    std::string body = std::string(R"({"status":"error","errorType":")") + c.error_type +
                       R"(","error":"boom","data":{"resultType":"vector","result":[]}})";
    Result<PromQueryResult> got = ParsePromQueryResponse(body);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().category(), c.want);
    EXPECT_EQ(got.error().message(), std::string("prometheus ") + c.error_type + ": boom");
  }
}

TEST(PromApi, ParsesScalarsStringsAndSpecialValues) {
  Result<PromQueryResult> scalar = ParsePromQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1700000000.5,"42.5"]}})");
  ASSERT_TRUE(scalar.ok()) << scalar.error().ToString();
  EXPECT_EQ(scalar->type, PromResultType::kScalar);
  Result<PromPoint> v = SingleValue(*scalar);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, 42.5);
  EXPECT_EQ(v->timestamp_s, 1700000000.5);

  Result<PromQueryResult> str =
      ParsePromQueryResponse(R"({"status":"success","data":{"resultType":"string","result":[1,"hello"]}})");
  ASSERT_TRUE(str.ok());
  EXPECT_EQ(str->string_value, "hello");
  EXPECT_FALSE(SingleValue(*str).ok());

  Result<PromQueryResult> special = ParsePromQueryResponse(
      R"({"status":"success","data":{"resultType":"vector","result":[
          {"metric":{},"value":[1,"NaN"]},{"metric":{"a":"b"},"value":[1,"+Inf"]},
          {"metric":{"a":"c"},"value":[1,"-Inf"]}]}})");
  ASSERT_TRUE(special.ok()) << special.error().ToString();
  EXPECT_TRUE(std::isnan(special->series[0].points[0].value));
  EXPECT_EQ(special->series[1].points[0].value, HUGE_VAL);
  EXPECT_EQ(special->series[2].points[0].value, -HUGE_VAL);
}

TEST(PromApi, SingleValueNeverTurnsNothingIntoZero) {
  struct Case {
    const char* result;
    bool ok;
    ErrorCategory category;
    double want;
  } cases[] = {
      {R"([])", false, ErrorCategory::kNotFound, 0},
      {R"([{"metric":{},"value":[1,"NaN"]}])", false, ErrorCategory::kNotFound, 0},
      {R"([{"metric":{},"value":[1,"0"]}])", true, ErrorCategory::kInternal, 0},
      {R"([{"metric":{"queue":"render"},"value":[1,"17"]}])", true, ErrorCategory::kInternal, 17},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.result);
    std::string body = std::string(R"({"status":"success","data":{"resultType":"vector","result":)") + c.result + "}}";
    Result<PromQueryResult> got = ParsePromQueryResponse(body);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    Result<PromPoint> v = SingleValue(*got);
    ASSERT_EQ(v.ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(v->value, c.want);
    } else {
      EXPECT_EQ(v.error().category(), c.category);
    }
  }
}

TEST(PromApi, KeepsWarningsAndInfosAndDropsNativeHistograms) {
  Result<PromQueryResult> got = ParsePromQueryResponse(
      R"({"status":"success","warnings":["partial response"],"infos":["note"],
          "data":{"resultType":"vector","result":[
            {"metric":{"a":"1"},"histogram":[1,{"count":"3","sum":"1"}]},
            {"metric":{"a":"2"},"value":[1,"5"]}]}})");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  ASSERT_EQ(got->series.size(), 1u);
  EXPECT_EQ(got->series[0].points[0].value, 5);
  ASSERT_EQ(got->warnings.size(), 2u);
  EXPECT_EQ(got->warnings[0], "partial response");
  EXPECT_NE(got->warnings[1].find("native-histogram"), std::string::npos);
  EXPECT_EQ(got->infos, std::vector<std::string>{"note"});
}

TEST(PromApi, RejectsMalformedBodies) {
  const char* cases[] = {
      "",
      "not json",
      "<html>502 Bad Gateway</html>",
      "[]",
      R"({"data":{}})",
      R"({"status":"weird"})",
      R"({"status":"success"})",
      R"({"status":"success","data":{"resultType":"vector"}})",
      R"({"status":"success","data":{"resultType":"tensor","result":[]}})",
      R"({"status":"success","data":{"resultType":"vector","result":{}}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}})",
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":1},"value":[1,"1"]}]}})",
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1]]}]}})",
      R"({"status":"success","data":{"resultType":"scalar","result":["1","1"]}})",
  };
  for (const char* body : cases) {
    SCOPED_TRACE(body);
    Result<PromQueryResult> got = ParsePromQueryResponse(body);
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.error().category(), ErrorCategory::kInvalidInput);
  }
}

TEST(PromApi, BuildsQueryUrls) {
  EXPECT_EQ(PromQueryUrl("http://prom:9090/", "sum(rabbitmq_queue_messages_ready{queue=\"render\"})"),
            "http://prom:9090/api/v1/query?query=sum%28rabbitmq_queue_messages_ready%7Bqueue%3D%22render%22%7D%29");
  EXPECT_EQ(PromQueryUrl("http://p", "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", 1700000000),
            "http://p/api/v1/query?query=avg%20by%20%28Hostname%29%20%28DCGM_FI_DEV_GPU_UTIL%29&time=1700000000");
}

TEST(PromApi, RangeUrlAndTheOneSeriesOfARangeAnswer) {
  EXPECT_EQ(PromQueryRangeUrl("http://prom:9090/", "sum(q)", 100, 700, 60),
            "http://prom:9090/api/v1/query_range?query=sum%28q%29&start=100&end=700&step=60s");
  Result<PromQueryResult> one = ParsePromQueryResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[100,"1"],[160,"NaN"],[220,"3"]]}]}})");
  ASSERT_TRUE(one.ok()) << one.error().ToString();
  Result<std::vector<PromPoint>> points = SingleRangeSeries(*one);
  ASSERT_TRUE(points.ok());
  ASSERT_EQ(points->size(), 2u);  // the NaN dropped
  EXPECT_EQ(points->at(1).timestamp_s, 220);
  EXPECT_EQ(points->at(1).value, 3);
  Result<PromQueryResult> none = ParsePromQueryResponse(R"({"status":"success","data":{"resultType":"matrix","result":[]}})");
  EXPECT_EQ(SingleRangeSeries(*none).error().category(), ErrorCategory::kNotFound);
  Result<PromQueryResult> instant =
      ParsePromQueryResponse(R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})");
  EXPECT_EQ(SingleRangeSeries(*instant).error().category(), ErrorCategory::kInvalidInput);
}

}  // namespace
}  // namespace gpuscaler::signals
