#include "runtime/halide_tbb.h"

#include <HalideRuntime.h>
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
  // The integer form: oneTBB's tasks then hold `iteration` by reference (runtime/tsan.h).
  auto iteration = [&](int i) {
    if (int code = task(user_context, i, closure)) result = code;
  };
  oneapi::tbb::parallel_for(min, min + size, hand_off(iteration, &result));
  RNNC_TSAN_ACQUIRE(&result);
  return result.load();
}

}  // namespace

void* tbb_do_par_for() {
  halide_do_par_for_t function = do_par_for;
  return reinterpret_cast<void*>(function);
}

int64_t tbb_parallel_loops_run() { return g_loops.load(); }

}  // namespace rnnc
