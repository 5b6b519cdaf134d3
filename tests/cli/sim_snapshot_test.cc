// `gpuscaler sim --snapshot-at`: a decision of a replay exported as a
// snapshot that `gpuscaler explain` replays.
#include <gtest/gtest.h>

#include "cli/process.h"

namespace gpuscaler::testing {
namespace {

class SimSnapshot : public CliTest {};

TEST_F(SimSnapshot, ExportsTheSnapshotOfATickAndExplainReplaysIt) {
  const std::string snap = (dir_ / "snap.json").string();
  ProcessResult sim =
      Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--snapshot-at", "15h", "--snapshot-out", snap});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_NE(sim.err.find("2026-"), std::string::npos) << sim.err;
  const std::string text = ReadAll(snap);
  EXPECT_NE(text.find("\"kind\": \"Snapshot\""), std::string::npos);
  EXPECT_NE(text.find("\"nodes\""), std::string::npos);

  ProcessResult explain = Gpuscaler({"explain", "--snapshot", snap, "--format", "json"});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find("predicted_cost_usd_per_hour"), std::string::npos) << explain.out.substr(0, 400);
}

TEST_F(SimSnapshot, RejectsATimeOutsideTheReplay) {
  ProcessResult r = Gpuscaler({"sim", "--scenario", "demo", "--days", "1", "--snapshot-at", "30h", "--snapshot-out",
                               (dir_ / "s.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("outside the replay"), std::string::npos) << r.err;
  r = Gpuscaler({"sim", "--scenario", "demo", "--snapshot-at", "soon", "--snapshot-out", (dir_ / "s.json").string()});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace gpuscaler::testing
