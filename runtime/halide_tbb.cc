#include "runtime/halide_tbb.h"

#include <HalideRuntime.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "runtime/parallel_indices.h"

namespace rnnc {

namespace {

std::atomic<int64_t> g_loops{0};
thread_local bool t_serial = false;

// Claims one of `parts` parts (at most 64): the preferred one if it is free, else the lowest free.
int claim_part(std::atomic<uint64_t>& claimed, int parts, int preferred) {
  const uint64_t bit = uint64_t{1} << preferred;
  if (!(claimed.fetch_or(bit) & bit)) return preferred;
  for (int p = 0; p < parts; ++p) {
    if (!(claimed.fetch_or(uint64_t{1} << p) & (uint64_t{1} << p))) return p;
  }
  return -1;  // unreachable: each of the `parts` calls of parallel_indices claims one part
}

int do_par_for(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  g_loops.fetch_add(1, std::memory_order_relaxed);
  // Halide wants zero, or the code of one failing iteration.
  std::atomic<int> result{0};
  const int parts =
      t_serial ? 1
               : std::min({size, oneapi::tbb::this_task_arena::max_concurrency(), 64});
  if (parts <= 1) {
    for (int i = 0; i < size; ++i) {
      if (int code = task(user_context, min + i, closure)) return code;
    }
    return 0;
  }
  std::atomic<uint64_t> claimed{0};
  parallel_indices(parts, [&](int64_t) {
    const int slot = oneapi::tbb::this_task_arena::current_thread_index();
    const int part = claim_part(claimed, parts, slot >= 0 ? slot % parts : 0);
    const MirroredPart run = mirrored_part(size, parts, part);
    for (const auto& [begin, end] : {std::pair{run.low_begin, run.low_end},
                                    std::pair{run.high_begin, run.high_end}}) {
      for (int64_t i = begin; i < end; ++i) {
        if (int code = task(user_context, min + static_cast<int>(i), closure)) result = code;
      }
    }
  });
  return result.load();
}

}  // namespace

MirroredPart mirrored_part(int64_t size, int64_t parts, int64_t part) {
  const int64_t first = size * part / parts, last = size * (part + 1) / parts;
  // Folded position k holds index k/2 when k is even and size-1-(k-1)/2 when k is odd.
  return {(first + 1) / 2, (last + 1) / 2, size - last / 2, size - first / 2};
}

void* tbb_do_par_for() {
  halide_do_par_for_t function = do_par_for;
  return reinterpret_cast<void*>(function);
}

int64_t tbb_parallel_loops_run() { return g_loops.load(); }

SerialHalideLoops::SerialHalideLoops() : previous_(t_serial) { t_serial = true; }
SerialHalideLoops::~SerialHalideLoops() { t_serial = previous_; }

}  // namespace rnnc
