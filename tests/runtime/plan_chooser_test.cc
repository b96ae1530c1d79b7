// PlanChooser (runtime/plan_chooser.h) fed synthetic times: warm-ups, the first choice by the
// lower quartile, per-bucket choices, exploration of the other plan and a revised choice, the
// bucket rounding and cap.
#include "runtime/plan_chooser.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace rnnc {
namespace {

constexpr int kSeq = PlanChooser::kSequential;
constexpr int kOver = PlanChooser::kOverlapping;

// `runs` runs of bucket `key`, each timed one taking time(candidate); returns the picks.
std::vector<PlanChooser::Pick> feed(PlanChooser& chooser, const std::vector<int64_t>& key, int runs,
                                    const std::function<double(int)>& time) {
  std::vector<PlanChooser::Pick> picks;
  for (int run = 0; run < runs; ++run) {
    const PlanChooser::Pick pick = chooser.pick(key);
    if (pick.timed) chooser.record(key, pick.candidate, time(pick.candidate));
    picks.push_back(pick);
  }
  return picks;
}

// The first 2 + 2 * kSamples runs (warm-ups and the alternating first samples), the timed runs
// of each plan taking the next of its times.
void first_choice(PlanChooser& chooser, const std::vector<int64_t>& key,
                  const std::vector<double>& sequential_us,
                  const std::vector<double>& overlapping_us) {
  size_t next[2] = {0, 0};
  feed(chooser, key, 2 + 2 * PlanChooser::kSamples, [&](int c) {
    const std::vector<double>& times = c == kSeq ? sequential_us : overlapping_us;
    return times.at(next[c]++);
  });
  EXPECT_EQ(next[kSeq], static_cast<size_t>(PlanChooser::kSamples));
  EXPECT_EQ(next[kOver], static_cast<size_t>(PlanChooser::kSamples));
}

TEST(PlanChooser, WarmsEachPlanUntimedThenAlternatesTimedRuns) {
  PlanChooser chooser;
  const std::vector<PlanChooser::Pick> picks =
      feed(chooser, {17, 1}, 2 + 2 * PlanChooser::kSamples, [](int) { return 100.0; });
  EXPECT_EQ(picks[0].candidate, kOver);
  EXPECT_FALSE(picks[0].timed);
  EXPECT_EQ(picks[1].candidate, kSeq);
  EXPECT_FALSE(picks[1].timed);
  for (size_t run = 2; run < picks.size(); ++run) {
    EXPECT_TRUE(picks[run].timed) << run;
    EXPECT_EQ(picks[run].candidate, run % 2 == 0 ? kOver : kSeq) << "alternating, run " << run;
  }
  EXPECT_EQ(chooser.pick({17, 1}).candidate, kSeq) << "a tie keeps the sequential plan";
}

TEST(PlanChooser, ChoosesByTheLowerQuartileSoPreemptedRunsDoNotCount) {
  PlanChooser chooser;
  const std::vector<int64_t> key = {128};  // the bucket of seq 65..128
  // The overlapping plan had three runs preempted (900, 950, 700 us), more than half: a median
  // would pick sequential; its own cost is the fast end.
  first_choice(chooser, key, {200, 210, 190, 200, 190}, {120, 900, 125, 950, 700});
  EXPECT_EQ(chooser.pick(key).candidate, kOver);
  EXPECT_EQ(chooser.report({"seq"}, "pipeline"),
            "  seq=65..128: pipeline (lower quartile 125 us of 5 runs vs sequential 190 us of 5 "
            "runs)\n");
}

TEST(PlanChooser, OneLuckyRunDoesNotDecide) {
  PlanChooser chooser;
  first_choice(chooser, {17, 1}, {200, 210, 190, 200, 195}, {50, 300, 310, 320, 305});
  EXPECT_EQ(chooser.pick({17, 1}).candidate, kSeq);
}

TEST(PlanChooser, ShapeBucketsChooseIndependently) {
  PlanChooser chooser;
  first_choice(chooser, {17, 1}, {100, 100, 100, 100, 100}, {150, 150, 150, 150, 150});
  first_choice(chooser, {128, 1}, {900, 900, 900, 900, 900}, {500, 500, 500, 500, 500});
  EXPECT_EQ(chooser.pick({17, 1}).candidate, kSeq);
  EXPECT_EQ(chooser.pick({128, 1}).candidate, kOver);
}

TEST(PlanChooser, RunsTheOtherPlanTwiceEveryExploreInterval) {
  PlanChooser chooser;
  first_choice(chooser, {9}, {100, 100, 100, 100, 100}, {150, 150, 150, 150, 150});
  const std::vector<PlanChooser::Pick> picks =
      feed(chooser, {9}, 2 * PlanChooser::kExploreEvery,
           [](int c) { return c == kSeq ? 100.0 : 150.0; });
  for (size_t run = 0; run < picks.size(); ++run) {
    const int64_t phase = static_cast<int64_t>(run) % PlanChooser::kExploreEvery;
    const bool explore = phase >= PlanChooser::kExploreEvery - 2;
    EXPECT_EQ(picks[run].candidate, explore ? kOver : kSeq) << run;
    EXPECT_EQ(picks[run].timed, phase != PlanChooser::kExploreEvery - 2)
        << "the first run of the other plan only warms it (run " << run << ")";
  }
}

TEST(PlanChooser, AChoiceMadeUnderABurstOfLoadIsRevised) {
  PlanChooser chooser;
  // The overlapping plan's first runs met a burst (its second core taken): 500 us.
  first_choice(chooser, {40}, {200, 200, 200, 200, 200}, {500, 500, 500, 500, 500});
  EXPECT_EQ(chooser.pick({40}).candidate, kSeq);
  // The burst is over: the explored runs take 100 us. Two of them bring its lower quartile
  // (of 7 times: the second-fastest) below the sequential 200 us.
  feed(chooser, {40}, 2 * PlanChooser::kExploreEvery,
       [](int c) { return c == kSeq ? 200.0 : 100.0; });
  EXPECT_EQ(chooser.pick({40}).candidate, kOver);
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
  EXPECT_FALSE(pick.timed);
  EXPECT_EQ(chooser.report({"seq", "batch"}, "pipeline"), "") << "nothing chosen yet";
}

}  // namespace
}  // namespace rnnc
