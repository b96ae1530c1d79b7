// parallel_indices(count, fn): fn(i) once for every i in [0, count), on the calling thread and on
// oneTBB tasks in the current task arena (at most one per arena thread), each taking the next
// index from a shared counter until none is left. Returns when every call has returned. The
// executor's independent parts and pipeline threads and Halide's parallel loops all run on it;
// every call runs in the calling thread's floating-point mode (runtime/fp_mode.h).
//
// Why not tbb::parallel_for: ThreadSanitizer (runtime/tsan.h). parallel_for keeps its root wait
// node in a frame below the caller's, and a worker's last decrement of it is ordered before
// parallel_for returns only inside the uninstrumented libtbb, so TSan takes whatever the caller
// later puts at that stack address for a race with the worker. A task_group in this frame is
// decremented the same way, but its destructor reads the count with an acquire load compiled
// here, which TSan sees. Its tasks hold a reference to one HandOff in this frame.
#pragma once

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>

#include "runtime/fp_mode.h"
#include "runtime/tsan.h"

namespace rnnc {

template <typename Fn>
void parallel_indices(int64_t count, const Fn& fn) {
  std::atomic<int64_t> next{0};
  const unsigned fp_mode = ScopedFpMode::current();  // the helpers run in the caller's mode
  auto take = [&] {
    ScopedFpMode mode(fp_mode);
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(i);
  };
  const int64_t helpers =
      std::min<int64_t>(count, oneapi::tbb::this_task_arena::max_concurrency()) - 1;
  if (helpers <= 0) {
    take();
    return;
  }
  const auto call = hand_off(take, &next);  // outlives the group, which waits in its destructor
  oneapi::tbb::task_group group;
  RNNC_TSAN_RELEASE(&call);  // again: the tasks decrement the group's count, initialized just now
  for (int64_t h = 0; h < helpers; ++h) group.run(std::cref(call));
  take();
  group.wait();
  RNNC_TSAN_ACQUIRE(&next);
}

}  // namespace rnnc
