// Halide's parallel loops on oneTBB: a halide_do_par_for that runs a loop's iterations on oneTBB
// tasks (parallel_indices.h), in the task arena of the calling thread (the executor runs every
// block inside its model's arena), so Halide never starts a thread pool beside TBB's and the
// model's thread count bounds both. rnnc's schedules use no async stages, so every Halide parallel
// loop is a do_par_for call (halide_do_parallel_tasks is never reached).
#pragma once

#include <cstdint>

namespace rnnc {

// The halide_do_par_for_t to install with HalideCache::set_do_par_for.
void* tbb_do_par_for();
// Parallel loops run through it in this process so far (tests check the routing).
int64_t tbb_parallel_loops_run();

// While one lives, the Halide parallel loops this thread starts run their iterations in order on
// this thread: for work that already keeps every thread of the arena busy (batch slices).
class SerialHalideLoops {
 public:
  SerialHalideLoops();
  ~SerialHalideLoops();
  SerialHalideLoops(const SerialHalideLoops&) = delete;
  SerialHalideLoops& operator=(const SerialHalideLoops&) = delete;

 private:
  bool previous_;
};

}  // namespace rnnc
