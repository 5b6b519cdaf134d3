#include "gpuscaler/controller/interruption_risk.h"

#include <gtest/gtest.h>

namespace gpuscaler {
namespace {

constexpr double kPrior = 0.01;  // interruptions per node-hour
const WallTime kT0 = FromUnixSeconds(1'700'000'000);

WallTime At(double hours) { return kT0 + Seconds(static_cast<int64_t>(hours * 3600)); }

InterruptionRiskOptions NoPooling(double prior_node_hours = 24, int half_life_h = 48) {
  InterruptionRiskOptions o;
  o.prior_node_hours = prior_node_hours;
  o.group_node_hours = 0;
  o.half_life = Seconds(half_life_h * 3600);
  return o;
}

TEST(InterruptionRisk, WithoutEvidenceTheRateIsThePrior) {
  for (const InterruptionRiskOptions& o : {NoPooling(), InterruptionRiskOptions{}}) {
    InterruptionRiskEstimator r(o);
    EXPECT_DOUBLE_EQ(r.Rate("p3.2xlarge/us-east-1a/spot", "p3/us-east-1a", kPrior, kT0), kPrior);
    EXPECT_DOUBLE_EQ(r.Rate("p3.2xlarge/us-east-1a/spot", "p3/us-east-1a", 0.5, At(100)), 0.5);
  }
}

TEST(InterruptionRisk, EvidenceIsGammaPoissonAroundThePrior) {
  InterruptionRiskEstimator r(NoPooling(/*prior_node_hours=*/24, /*half_life_h=*/0));  // no decay
  // 10 node-hours, 3 interruptions: (0.01·24 + 3) / (24 + 10).
  r.AddExposure("k", "g", 10, At(10));
  for (int i = 0; i < 3; ++i) r.RecordInterruption("k", "g", At(10));
  EXPECT_NEAR(r.Rate("k", "g", kPrior, At(10)), (kPrior * 24 + 3) / 34.0, 1e-12);
  // Exposure without events pulls it below the prior.
  InterruptionRiskEstimator quiet(NoPooling(24, 0));
  quiet.AddExposure("k", "g", 100, At(100));
  EXPECT_NEAR(quiet.Rate("k", "g", kPrior, At(100)), kPrior * 24 / 124.0, 1e-12);
  // Another offering keeps its prior.
  EXPECT_DOUBLE_EQ(r.Rate("other", "g2", kPrior, At(10)), kPrior);
}

TEST(InterruptionRisk, RepeatedInterruptionsRaiseTheRateTowardTheObservedOne) {
  InterruptionRiskEstimator r(NoPooling());
  // One interruption per node-hour, observed for 12 hours: the estimate moves
  // from 0.01 to about a third of the truth (the prior is worth 24 h).
  double last = kPrior;
  for (int h = 1; h <= 12; ++h) {
    r.AddExposure("k", "g", 1.0, At(h));
    r.RecordInterruption("k", "g", At(h));
    const double rate = r.Rate("k", "g", kPrior, At(h));
    EXPECT_GT(rate, last) << "hour " << h;
    last = rate;
  }
  EXPECT_GT(last, 0.3);
  EXPECT_LT(last, 1.0);
}

TEST(InterruptionRisk, OldEvidenceDecaysBackToThePrior) {
  InterruptionRiskEstimator r(NoPooling(24, /*half_life_h=*/24));
  r.AddExposure("k", "g", 20, At(0));
  for (int i = 0; i < 20; ++i) r.RecordInterruption("k", "g", At(0));
  const double fresh = r.Rate("k", "g", kPrior, At(0));
  EXPECT_GT(fresh, 0.4);
  // One half-life later the evidence weighs half.
  const InterruptionRiskEstimator::Evidence e = r.EvidenceFor("k", At(24));
  EXPECT_NEAR(e.interruptions, 10, 1e-9);
  EXPECT_NEAR(e.node_hours, 10, 1e-9);
  EXPECT_NEAR(r.Rate("k", "g", kPrior, At(24)), (kPrior * 24 + 10) / 34.0, 1e-9);
  // Ten half-lives later it is nearly forgotten.
  const double old = r.Rate("k", "g", kPrior, At(240));
  EXPECT_LT(old, fresh / 20);
  EXPECT_NEAR(old, kPrior, 0.001);
}

TEST(InterruptionRisk, HistoryWeighsLikeWatchingItHappen) {
  // The restart path (AddHistory over a node's life) and the live path
  // (exposure every minute, the interruption at the end) agree.
  InterruptionRiskEstimator live(NoPooling(24, 12));
  InterruptionRiskEstimator rebuilt(NoPooling(24, 12));
  for (int m = 1; m <= 180; ++m) live.AddExposure("k", "g", 1.0 / 60, kT0 + Seconds(60 * m));
  live.RecordInterruption("k", "g", At(3));
  rebuilt.AddHistory("k", "g", kT0, At(3), /*interrupted=*/true, At(10));
  const auto a = live.EvidenceFor("k", At(10));
  const auto b = rebuilt.EvidenceFor("k", At(10));
  EXPECT_NEAR(a.interruptions, b.interruptions, 1e-9);
  EXPECT_NEAR(a.node_hours, b.node_hours, 0.01);
  EXPECT_LT(b.node_hours, 3.0);  // decayed
  // An interval that is still running at `now` adds exposure, no event.
  rebuilt.AddHistory("k", "g", At(9), At(20), /*interrupted=*/false, At(10));
  EXPECT_NEAR(rebuilt.EvidenceFor("k", At(10)).interruptions, b.interruptions, 1e-12);
  EXPECT_GT(rebuilt.EvidenceFor("k", At(10)).node_hours, b.node_hours + 0.9);
}

TEST(InterruptionRisk, SiblingsInAGroupShareWhatTheyLearn) {
  InterruptionRiskOptions o;
  o.prior_node_hours = 24;
  o.group_node_hours = 12;
  o.half_life = Seconds(0);
  InterruptionRiskEstimator r(o);
  r.AddExposure("p3.2xlarge/us-east-1a/spot", "p3/us-east-1a", 10, At(1));
  for (int i = 0; i < 10; ++i) r.RecordInterruption("p3.2xlarge/us-east-1a/spot", "p3/us-east-1a", At(1));
  const double group = (kPrior * 24 + 10) / 34.0;
  // A sibling never run inherits the group's rate; the offering that was
  // interrupted is higher still; another zone keeps the prior.
  EXPECT_NEAR(r.Rate("p3.8xlarge/us-east-1a/spot", "p3/us-east-1a", kPrior, At(1)), group, 1e-12);
  EXPECT_NEAR(r.Rate("p3.2xlarge/us-east-1a/spot", "p3/us-east-1a", kPrior, At(1)), (group * 12 + 10) / 22.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.Rate("p3.8xlarge/us-east-1c/spot", "p3/us-east-1c", kPrior, At(1)), kPrior);
}

}  // namespace
}  // namespace gpuscaler
