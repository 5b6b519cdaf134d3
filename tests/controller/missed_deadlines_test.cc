// DemandWatch::CountMissedDeadlines: a unit counts as missing its deadline
// once, when the deadline passes or, if it states its runtime, as soon as
// its work left no longer fits before it.
#include <gtest/gtest.h>

#include "gpuscaler/controller/demand_watch.h"
#include "gpuscaler/controller/tick_report.h"

namespace gpuscaler {
namespace {

const WallTime kNow = FromUnixSeconds(1780000000);

DemandUnit DeadlineUnit(const std::string& id, Seconds left, Seconds until_deadline, Seconds stated) {
  DemandUnit u;
  u.id = id;
  u.workload_class = "train";
  u.expected_runtime = left;
  u.total_work = stated;
  u.submitted = kNow - Seconds(3600);
  u.deadline = kNow + until_deadline;
  return u;
}

int Missed(DemandWatch& watch, const Snapshot& s, WallTime now) {
  TickReport report;
  watch.CountMissedDeadlines(s, now, &report);
  return report.deadlines_missed["train"];
}

TEST(MissedDeadlines, WorkThatStatesItsRuntimeIsCountedAsSoonAsItCannotFit) {
  Snapshot s;
  s.time = kNow;
  // 3 h of stated work left, 2 h to go: missed now, not in two hours.
  s.pending.push_back(DeadlineUnit("late", Seconds(3 * 3600), Seconds(2 * 3600), Seconds(4 * 3600)));
  // 1 h left, 2 h to go: fits.
  s.pending.push_back(DeadlineUnit("fits", Seconds(3600), Seconds(2 * 3600), Seconds(4 * 3600)));
  // The class's guess (no stated runtime) proves nothing until the deadline.
  s.pending.push_back(DeadlineUnit("guess", Seconds(3 * 3600), Seconds(2 * 3600), Seconds(0)));
  DemandWatch watch;
  EXPECT_EQ(Missed(watch, s, kNow), 1);
  EXPECT_TRUE(CannotFinishInTime(s.pending[0], kNow));
  EXPECT_FALSE(CannotFinishInTime(s.pending[1], kNow));
  EXPECT_FALSE(CannotFinishInTime(s.pending[2], kNow));
  // Once only.
  EXPECT_EQ(Missed(watch, s, kNow + Seconds(60)), 0);
  // At the deadline the guessed one counts; the one that fitted, still
  // pending, counts then too.
  EXPECT_EQ(Missed(watch, s, kNow + Seconds(2 * 3600 + 1)), 2);
}

TEST(MissedDeadlines, ARunningUnitsWorkLeftIsWhatItHasNotDoneSinceItStarted) {
  Snapshot s;
  s.time = kNow;
  Node n;
  n.id = "n1";
  // 3 h left when it started an hour ago: 2 h left, 2 h to go: fits.
  DemandUnit u = DeadlineUnit("run", Seconds(3 * 3600), Seconds(2 * 3600), Seconds(4 * 3600));
  u.progressing_since = kNow - Seconds(3600);
  n.running.push_back(u);
  s.nodes.push_back(n);
  EXPECT_FALSE(CannotFinishInTime(u, kNow));
  DemandWatch watch;
  EXPECT_EQ(Missed(watch, s, kNow), 0);
  // Started only now: 3 h left, 2 h to go.
  s.nodes[0].running[0].progressing_since = kNow;
  EXPECT_EQ(Missed(watch, s, kNow), 1);
}

}  // namespace
}  // namespace gpuscaler
