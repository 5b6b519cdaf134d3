// `gpuscaler policy check --region R`: the loader's served-regions check
// (PolicyLoadOptions::regions) as an operator runs it.
#include <gtest/gtest.h>

#include <string>

#include "cli/process.h"

namespace {

using gpuscaler::testing::ProcessResult;

class PolicyCheckRegion : public gpuscaler::testing::CliTest {};

TEST_F(PolicyCheckRegion, RejectsAPoolOutsideTheServedRegionsOnlyWhenAsked) {
  const std::string file = Write("p.yaml", R"(apiVersion: gpuscaler/v1
kind: Policy
pools:
  - name: gpu
    regions: [eu-west-1]
classes:
  - name: a
)").string();
  ProcessResult r = Gpuscaler({"policy", "check", file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Repeatable, one region per flag, before or after the files.
  r = Gpuscaler({"policy", "check", "--region", "us-east-1", file, "--region", "us-west-2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, file +
                       ":5:14: pools[0].regions: region 'eu-west-1' outside the regions this installation "
                       "serves ('us-east-1', 'us-west-2'): every launch there would fail\n");
  r = Gpuscaler({"policy", "check", "--region", "eu-west-1", file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
