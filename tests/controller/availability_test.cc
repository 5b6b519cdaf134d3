// Learned offering unavailability alone: capacity-error backoffs and the
// reclaim waves' cooldowns (controller/availability.h).
#include "gpuscaler/controller/availability.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gpuscaler {
namespace availability_test {

TEST(OfferingAvailability, BackOffGrowsWithRepeatedErrorsAndShrinksAfterSuccess) {
  OfferingAvailability a(Seconds(180), Seconds(3600));
  const WallTime t0 = FromUnixSeconds(0);
  a.RecordCapacityError("k", t0);
  EXPECT_FALSE(a.IsAvailable("k", t0 + Seconds(179)));
  EXPECT_TRUE(a.IsAvailable("k", t0 + Seconds(180)));
  a.RecordCapacityError("k", t0 + Seconds(180));
  EXPECT_EQ(a.ErrorStreak("k"), 2);
  EXPECT_FALSE(a.IsAvailable("k", t0 + Seconds(180 + 359)));
  EXPECT_TRUE(a.IsAvailable("k", t0 + Seconds(180 + 360)));
  for (int i = 0; i < 10; ++i) a.RecordCapacityError("k", t0 + Seconds(1000));
  EXPECT_EQ(a.BackoffFor(a.ErrorStreak("k")), Seconds(3600));
  a.RecordSuccess("k");
  EXPECT_EQ(a.ErrorStreak("k"), 6);
}

TEST(OfferingAvailability, AReclaimWaveMarksThePoolForACooldownThatDoublesPerWave) {
  OfferingAvailability a;
  const std::string k = "p3.2xlarge/us-east-1a/spot";
  const WallTime t0 = FromUnixSeconds(0);
  // One notice in a 4-node pool is a node, not a wave.
  EXPECT_FALSE(a.RecordReclaimNotice(k, 4, t0));
  EXPECT_TRUE(a.Reclaimed(t0 + Seconds(1)).empty());
  // A second one 2 minutes later is: 30 minutes without new nodes there.
  EXPECT_TRUE(a.RecordReclaimNotice(k, 4, t0 + Seconds(120)));
  EXPECT_EQ(a.ReclaimWaves(k), 1);
  // The rest of the same wave does not extend it.
  EXPECT_FALSE(a.RecordReclaimNotice(k, 4, t0 + Seconds(150)));
  EXPECT_EQ(a.ReclaimWaves(k), 1);
  const WallTime end1 = t0 + Seconds(120) + Seconds(1800);
  EXPECT_EQ(a.Reclaimed(end1 - Seconds(1)), (std::map<std::string, WallTime>{{k, end1}}));
  // Not a capacity error: the offering itself is still available.
  EXPECT_TRUE(a.IsAvailable(k, end1 - Seconds(1)));
  EXPECT_TRUE(a.Unavailable(end1 - Seconds(1)).empty());
  EXPECT_TRUE(a.Reclaimed(end1).empty());
  // Re-entered, then a second wave an hour later: twice as long.
  const WallTime w2 = end1 + Seconds(3600);
  EXPECT_FALSE(a.RecordReclaimNotice(k, 4, w2 - Seconds(600)));  // one of 4, 10 min before: no wave
  EXPECT_EQ(a.ReclaimWaves(k), 1);
  EXPECT_TRUE(a.RecordReclaimNotice(k, 2, w2));
  EXPECT_EQ(a.ReclaimWaves(k), 2);
  EXPECT_EQ(a.Reclaimed(w2 + Seconds(3600 - 1)).count(k), 1u);
  EXPECT_EQ(a.Reclaimed(w2 + Seconds(3600)).count(k), 0u);
  // The cooldown stops growing at 8 hours.
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(3), Seconds(7200));
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(5), Seconds(8 * 3600));
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(9), Seconds(8 * 3600));
  // Other pools are untouched.
  EXPECT_EQ(a.Reclaimed(w2).count("p3.2xlarge/us-east-1c/spot"), 0u);
}

TEST(OfferingAvailability, ASmallPoolLosingHalfIsAWaveAndAQuietPeriodStartsOver) {
  OfferingAvailability a;
  const std::string k = "p3.8xlarge/us-east-1d/spot";
  const WallTime t0 = FromUnixSeconds(1000);
  // The only node of a 1-node pool: the whole pool, a wave.
  EXPECT_TRUE(a.RecordReclaimNotice(k, 1, t0));
  EXPECT_TRUE(a.RecordReclaimNotice(k, 1, t0 + Seconds(1800)));
  EXPECT_EQ(a.ReclaimWaves(k), 2);
  const WallTime end2 = t0 + Seconds(1800 + 3600);
  // 8 quiet hours after that cooldown: the next wave starts at 30 minutes.
  const WallTime later = end2 + kReclaimQuietReset;
  EXPECT_TRUE(a.RecordReclaimNotice(k, 1, later));
  EXPECT_EQ(a.ReclaimWaves(k), 1);
  EXPECT_EQ(a.Reclaimed(later + Seconds(1799)).count(k), 1u);
  EXPECT_EQ(a.Reclaimed(later + Seconds(1800)).count(k), 0u);
  // Capacity errors on the same key are their own marks.
  a.RecordCapacityError(k, later + Seconds(1800));
  EXPECT_FALSE(a.IsAvailable(k, later + Seconds(1801)));
  EXPECT_EQ(a.ReclaimWaves(k), 1);
}

TEST(OfferingAvailability, AnOldShortageIsForgottenOneLevelPerQuietMaxBackoff) {
  OfferingAvailability a(Seconds(180), Seconds(3600));
  const WallTime t0 = FromUnixSeconds(0);
  for (int i = 0; i < 5; ++i) a.RecordCapacityError("k", t0);
  ASSERT_EQ(a.ErrorStreak("k"), 5);
  const WallTime until = t0 + a.BackoffFor(5);
  // An error soon after the pause ended: no decay, the streak grows.
  a.RecordCapacityError("k", until + Seconds(60));
  EXPECT_EQ(a.ErrorStreak("k"), 6);
  // Three quiet hours after that pause: three levels forgotten, then +1.
  const WallTime until2 = until + Seconds(60) + a.BackoffFor(6);
  a.RecordCapacityError("k", until2 + Seconds(3 * 3600 + 10));
  EXPECT_EQ(a.ErrorStreak("k"), 4);
  // A day later it starts over at the base pause.
  a.RecordCapacityError("k", until2 + Seconds(30 * 3600));
  EXPECT_EQ(a.ErrorStreak("k"), 1);
  EXPECT_FALSE(a.IsAvailable("k", until2 + Seconds(30 * 3600 + 179)));
  EXPECT_TRUE(a.IsAvailable("k", until2 + Seconds(30 * 3600 + 180)));
}

TEST(OfferingAvailability, TheCooldownsFollowTheirFirstAndLongestDurations) {
  // Flat: the longest equal to the first, every wave the same.
  const ReclaimCooldown flat{Seconds(1800), Seconds(1800)};
  for (int wave : {1, 2, 5}) EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(wave, flat), Seconds(1800));
  const ReclaimCooldown short_doubling{Seconds(600), Seconds(2400)};
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(2, short_doubling), Seconds(1200));
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(4, short_doubling), Seconds(2400));
  // A longest below the first is read as the first.
  EXPECT_EQ(OfferingAvailability::ReclaimCooldownFor(3, {Seconds(600), Seconds(60)}), Seconds(600));

  OfferingAvailability a;
  const std::string k = "p3/us-east-1a";
  const WallTime t0 = FromUnixSeconds(0);
  EXPECT_TRUE(a.RecordReclaimNotice(k, 1, t0, flat));
  EXPECT_TRUE(a.RecordReclaimNotice(k, 1, t0 + Seconds(1800), flat));
  EXPECT_EQ(a.ReclaimWaves(k), 2);
  EXPECT_EQ(a.Reclaimed(t0 + Seconds(3599)).count(k), 1u);
  EXPECT_EQ(a.Reclaimed(t0 + Seconds(3600)).count(k), 0u) << "the second wave's cooldown did not double";

  // 0s: a wave marks nothing.
  OfferingAvailability none;
  none.RecordReclaimNotice(k, 1, t0, {Seconds(0), Seconds(0)});
  EXPECT_TRUE(none.Reclaimed(t0).empty());
}

}  // namespace availability_test
}  // namespace gpuscaler
