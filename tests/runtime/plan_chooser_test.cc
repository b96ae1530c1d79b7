// PlanChooser (runtime/plan_chooser.h) fed synthetic times: warm-ups, duels back to back, the
// choice by the median duel ratio (bursts that hit a whole duel cancel, a few split duels do not
// decide), the explore duels and a revised choice, the bucket rounding and cap.
#include "runtime/plan_chooser.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace rnnc {
namespace {

using Role = PlanChooser::Role;
constexpr int kSeq = PlanChooser::kSequential;
constexpr int kOver = PlanChooser::kOverlapping;
constexpr int kWarm = 2 * PlanChooser::kWarmups;               // untimed runs, both plans
constexpr int kTrialRuns = kWarm + 4 * PlanChooser::kSamples;  // and the first duels

// `runs` runs of bucket `key`; a duel's run of plan c as run number r (counted over this
// chooser's whole life) takes time(c, r). Returns the picks.
struct Feeder {
  PlanChooser chooser;
  int64_t run = 0;
  std::vector<PlanChooser::Pick> feed(const std::vector<int64_t>& key, int64_t runs,
                                      const std::function<double(int, int64_t)>& time) {
    std::vector<PlanChooser::Pick> picks;
    for (int64_t r = 0; r < runs; ++r, ++run) {
      const PlanChooser::Pick pick = chooser.pick(key);
      if (pick.role != Role::kUntimed) chooser.record(key, pick, time(pick.candidate, run));
      picks.push_back(pick);
    }
    return picks;
  }
  std::vector<PlanChooser::Pick> feed(const std::vector<int64_t>& key, int64_t runs,
                                      double sequential_us, double overlapping_us) {
    return feed(key, runs,
                [=](int c, int64_t) { return c == kSeq ? sequential_us : overlapping_us; });
  }
};

TEST(PlanChooser, WarmsEachPlanUntimedThenDuelsBackToBackAlternatingWhoGoesFirst) {
  Feeder f;
  const std::vector<PlanChooser::Pick> picks = f.feed({17, 1}, kTrialRuns, 100, 100);
  for (size_t run = 0; run < kWarm; ++run) {
    EXPECT_EQ(picks[run].candidate, run % 2 == 0 ? kOver : kSeq) << run;
    EXPECT_EQ(picks[run].role, Role::kUntimed) << run;
  }
  // Duels of four runs: each plan untimed, then timed.
  for (size_t run = kWarm; run < picks.size(); run += 4) {
    const int first = ((run - kWarm) / 4) % 2 == 0 ? kOver : kSeq;
    const int candidates[4] = {first, first, 1 - first, 1 - first};
    const Role roles[4] = {Role::kUntimed, Role::kDuelFirst, Role::kUntimed, Role::kDuelSecond};
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(picks[run + i].candidate, candidates[i]) << run + i;
      EXPECT_EQ(picks[run + i].role, roles[i]) << run + i;
    }
  }
  EXPECT_EQ(f.chooser.pick({17, 1}).candidate, kSeq) << "a tie keeps the sequential plan";
}

TEST(PlanChooser, ChoosesTheOverlappingPlanWhenTheMedianDuelRatioIsBelowOne) {
  Feeder f;
  f.feed({128}, kTrialRuns, 100, 60);  // bucket 128: seq 65..128
  EXPECT_EQ(f.chooser.pick({128}).candidate, kOver);
  EXPECT_EQ(f.chooser.report({"seq"}, "pipeline"),
            "  seq=65..128: pipeline (pipeline/sequential time 0.60, median of 5 duels)\n");
}

TEST(PlanChooser, ABurstThatSlowsAWholeDuelCancelsOut) {
  // Duels 0-1 and 4 of the trial are 5x slower (another tenant): the overlapping plan's runs
  // in them are slower than any sequential run outside, yet every duel says 0.8.
  Feeder f;
  f.feed({17}, kTrialRuns, [](int c, int64_t run) {
    const double load = (run - kWarm) % 16 < 8 ? 5.0 : 1.0;
    return load * (c == kSeq ? 100.0 : 80.0);
  });
  EXPECT_EQ(f.chooser.pick({17}).candidate, kOver);
}

TEST(PlanChooser, TwoDuelsSplitByABurstDoNotDecide) {
  // The sequential plan is faster (ratio 1.25), but in two duels a burst hit only the
  // sequential run (ratio 0.1). The median of five stays 1.25.
  Feeder f;
  f.feed({17}, kTrialRuns, [](int c, int64_t run) {
    // The timed sequential runs of duels 0 and 2 (the overlapping plan goes first in both).
    const bool split = (run == kWarm + 3 || run == kWarm + 11) && c == kSeq;
    return c == kSeq ? (split ? 1000.0 : 100.0) : 125.0;
  });
  EXPECT_EQ(f.chooser.pick({17}).candidate, kSeq);
}

TEST(PlanChooser, ShapeBucketsChooseIndependently) {
  Feeder f;
  f.feed({17, 1}, kTrialRuns, 100, 150);
  f.feed({128, 1}, kTrialRuns, 900, 500);
  EXPECT_EQ(f.chooser.pick({17, 1}).candidate, kSeq);
  EXPECT_EQ(f.chooser.pick({128, 1}).candidate, kOver);
}

TEST(PlanChooser, DuelsAgainEveryExploreInterval) {
  Feeder f;
  f.feed({9}, kTrialRuns, 100, 150);
  const std::vector<PlanChooser::Pick> picks =
      f.feed({9}, 2 * PlanChooser::kExploreEvery, 100, 150);
  constexpr int64_t kE = PlanChooser::kExploreEvery;
  for (size_t run = 0; run < picks.size(); ++run) {
    const int64_t phase = static_cast<int64_t>(run) % kE;
    const Role role = phase == kE - 3   ? Role::kDuelFirst
                      : phase == kE - 1 ? Role::kDuelSecond
                                        : Role::kUntimed;
    EXPECT_EQ(picks[run].role, role) << run;
    EXPECT_EQ(picks[run].candidate, phase == kE - 4 || phase == kE - 3 ? kOver : kSeq)
        << "the other plan warms and runs timed, then the chosen one (run " << run << ")";
  }
}

TEST(PlanChooser, TheChoiceFollowsALoadChangeOnceMostRecentDuelsSaySo) {
  Feeder f;
  f.feed({40}, kTrialRuns, 100, 150);  // 5 duels at 1.5
  EXPECT_EQ(f.chooser.pick({40}).candidate, kSeq);
  // The machine got quieter and the overlapping plan now takes half the time. Four duels at
  // 0.5 against five at 1.5 do not flip the median of the window (9); the fifth does.
  constexpr int64_t kE = PlanChooser::kExploreEvery;
  f.feed({40}, 4 * kE - 1, 100, 50);
  EXPECT_EQ(f.chooser.pick({40}).candidate, kSeq);
  f.feed({40}, kE, 100, 50);
  EXPECT_EQ(f.chooser.pick({40}).candidate, kOver);
}

TEST(PlanChooser, ADuelWithoutItsFirstRunIsNoSample) {
  PlanChooser chooser;
  for (int run = 0; run < kWarm; ++run) chooser.pick({5});
  for (int duel = 0; duel < PlanChooser::kSamples; ++duel) {
    chooser.pick({5});
    chooser.pick({5});  // the first timed run failed: never recorded
    chooser.pick({5});
    const PlanChooser::Pick second = chooser.pick({5});
    ASSERT_EQ(second.role, Role::kDuelSecond);
    chooser.record({5}, second, 100);
  }
  EXPECT_EQ(chooser.report({"seq"}, "pipeline"), "") << "no duel completed";
  chooser.pick({5});  // the next duel's untimed run
  EXPECT_EQ(chooser.pick({5}).role, Role::kDuelFirst) << "still on trial";
}

TEST(PlanChooser, BucketsAreExactUpTo32AndPowersOfTwoAbove) {
  std::vector<int64_t> key;
  PlanChooser::bucket({1, 17, 32, 33, 64, 65, 100, 1000, -1}, key);
  EXPECT_EQ(key, (std::vector<int64_t>{1, 17, 32, 64, 64, 128, 128, 1024, -1}));
}

TEST(PlanChooser, UntrackedShapesBeyondTheCapRunSequential) {
  PlanChooser chooser;
  for (int64_t s = 0; s < static_cast<int64_t>(PlanChooser::kMaxBuckets); ++s) chooser.pick({s, 0});
  const PlanChooser::Pick pick = chooser.pick({5000, 0});
  EXPECT_EQ(pick.candidate, kSeq);
  EXPECT_EQ(pick.role, Role::kUntimed);
  EXPECT_EQ(chooser.report({"seq", "batch"}, "pipeline"), "") << "nothing chosen yet";
}

}  // namespace
}  // namespace rnnc
