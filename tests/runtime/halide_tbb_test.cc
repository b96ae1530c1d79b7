// Halide's parallel loops on oneTBB (runtime/halide_tbb.h): the mirrored parts cover every index
// once, in balanced and mirror-closed sets, and the loop runs each index exactly once on the arena.
#include "runtime/halide_tbb.h"

#include <HalideRuntime.h>
#include <gtest/gtest.h>
#include <oneapi/tbb/task_arena.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <vector>

namespace rnnc {
namespace {

std::set<int64_t> indices_of(const MirroredPart& part) {
  std::set<int64_t> indices;
  for (int64_t i = part.low_begin; i < part.low_end; ++i) indices.insert(i);
  for (int64_t i = part.high_begin; i < part.high_end; ++i) indices.insert(i);
  return indices;
}

TEST(HalideParallelLoops, MirroredPartsCoverEveryIndexOnceInBalancedMirrorClosedSets) {
  for (int64_t size = 1; size <= 40; ++size) {
    for (int64_t parts = 1; parts <= 8; ++parts) {
      std::vector<int> owner(size, -1);
      for (int64_t p = 0; p < parts; ++p) {
        const MirroredPart part = mirrored_part(size, parts, p);
        ASSERT_LE(part.low_begin, part.low_end);
        ASSERT_LE(part.high_begin, part.high_end);
        ASSERT_LE(part.low_end, part.high_begin) << "the low run comes first";
        const std::set<int64_t> mine = indices_of(part);
        // Each part holds its share of the range, to one index.
        EXPECT_EQ(static_cast<int64_t>(mine.size()), size * (p + 1) / parts - size * p / parts);
        int64_t not_mirrored = 0;
        for (int64_t i : mine) {
          ASSERT_EQ(owner[i], -1) << "size " << size << " parts " << parts << " index " << i;
          owner[i] = static_cast<int>(p);
          not_mirrored += mine.count(size - 1 - i) == 0;
        }
        // Walked backwards (index i at size-1-i), a part meets its own indices but at most two:
        // those its two boundary positions split from their mirrors.
        EXPECT_LE(not_mirrored, 2) << "size " << size << " parts " << parts << " part " << p;
      }
      for (int64_t i = 0; i < size; ++i) EXPECT_GE(owner[i], 0) << "index " << i << " not covered";
    }
  }
  // Two parts of 38 tiles: the first 10 and last 9 tiles, and the 19 in the middle.
  const MirroredPart first = mirrored_part(38, 2, 0), second = mirrored_part(38, 2, 1);
  EXPECT_EQ(first.low_begin, 0);
  EXPECT_EQ(first.low_end, 10);
  EXPECT_EQ(first.high_begin, 29);
  EXPECT_EQ(first.high_end, 38);
  EXPECT_EQ(second.low_begin, 10);
  EXPECT_EQ(second.high_end, 29);
}

struct LoopRecord {
  std::vector<std::atomic<int>> runs;
  int fail_at = -1;
  explicit LoopRecord(int size) : runs(size) {}
};

int record_iteration(void* user_context, int i, uint8_t* closure) {
  auto* record = reinterpret_cast<LoopRecord*>(closure);
  EXPECT_EQ(user_context, nullptr);
  record->runs[i - 100].fetch_add(1);
  return i == record->fail_at ? 7 : 0;
}

TEST(HalideParallelLoops, EveryIterationRunsOnceAndAFailingIterationsCodeIsReturned) {
  const auto do_par_for = reinterpret_cast<halide_do_par_for_t>(tbb_do_par_for());
  for (int threads : {1, 2, 3}) {
    oneapi::tbb::task_arena arena(threads);
    for (int size : {1, 2, 5, 38, 101}) {
      LoopRecord record(size);
      int code = -1;
      arena.execute([&] {
        code = do_par_for(nullptr, record_iteration, 100, size,
                          reinterpret_cast<uint8_t*>(&record));
      });
      EXPECT_EQ(code, 0);
      for (int i = 0; i < size; ++i) {
        EXPECT_EQ(record.runs[i].load(), 1) << threads << " threads, size " << size << ", " << i;
      }
    }
    LoopRecord failing(38);
    failing.fail_at = 100 + 30;
    int code = 0;
    arena.execute([&] {
      code = do_par_for(nullptr, record_iteration, 100, 38, reinterpret_cast<uint8_t*>(&failing));
    });
    EXPECT_EQ(code, 7) << threads << " threads";
  }
}

}  // namespace
}  // namespace rnnc
