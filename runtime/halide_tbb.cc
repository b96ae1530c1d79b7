#include "runtime/halide_tbb.h"

#include <HalideRuntime.h>

#include <atomic>

#include "runtime/parallel_indices.h"

namespace rnnc {

namespace {

std::atomic<int64_t> g_loops{0};
thread_local bool t_serial = false;

int do_par_for(void* user_context, halide_task_t task, int min, int size, uint8_t* closure) {
  g_loops.fetch_add(1, std::memory_order_relaxed);
  // Halide wants zero, or the code of one failing iteration.
  std::atomic<int> result{0};
  if (t_serial) {
    for (int i = 0; i < size; ++i) {
      if (int code = task(user_context, min + i, closure)) return code;
    }
    return 0;
  }
  parallel_indices(size, [&](int64_t i) {
    if (int code = task(user_context, min + static_cast<int>(i), closure)) result = code;
  });
  return result.load();
}

}  // namespace

void* tbb_do_par_for() {
  halide_do_par_for_t function = do_par_for;
  return reinterpret_cast<void*>(function);
}

int64_t tbb_parallel_loops_run() { return g_loops.load(); }

SerialHalideLoops::SerialHalideLoops() : previous_(t_serial) { t_serial = true; }
SerialHalideLoops::~SerialHalideLoops() { t_serial = previous_; }

}  // namespace rnnc
