#include "runtime/halide_tbb.h"

#include <HalideRuntime.h>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>

#include "runtime/tsan.h"

namespace rnnc {

namespace {

std::atomic<int64_t> g_loops{0};

int do_par_for(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  g_loops.fetch_add(1, std::memory_order_relaxed);
  // Halide wants zero, or the code of one failing iteration.
  std::atomic<int> result{0};
  RNNC_TSAN_RELEASE(closure);
  oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<int>(min, min + size),
                            [&](const oneapi::tbb::blocked_range<int>& range) {
                              RNNC_TSAN_ACQUIRE(closure);
                              for (int i = range.begin(); i < range.end(); ++i) {
                                if (int code = task(user_context, i, closure)) result = code;
                              }
                              RNNC_TSAN_RELEASE(closure);
                            });
  RNNC_TSAN_ACQUIRE(closure);
  return result.load();
}

}  // namespace

void* tbb_do_par_for() {
  halide_do_par_for_t function = do_par_for;
  return reinterpret_cast<void*>(function);
}

int64_t tbb_parallel_loops_run() { return g_loops.load(); }

}  // namespace rnnc
