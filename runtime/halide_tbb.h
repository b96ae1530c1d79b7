// Halide's parallel loops on oneTBB: a halide_do_par_for that runs a loop's iterations on oneTBB
// tasks (parallel_indices.h), in the task arena of the calling thread (the executor runs every
// block inside its model's arena), so Halide never starts a thread pool beside TBB's and the
// model's thread count bounds both. rnnc's schedules use no async stages, so every Halide parallel
// loop is a do_par_for call (halide_do_parallel_tasks is never reached).
//
// A loop is cut into one part per arena thread, and each thread first claims the part of its own
// arena slot. So the thread that ran a part last time runs it again: a recurrent step's tiles of
// R stay in the L2 of the core that read them one step earlier, instead of coming over from the
// other core's. A part is a run at the start of the range plus its mirror at the end (the folded
// order 0, n-1, 1, n-2, ... cut into equal pieces), which is the same set of tiles whichever way
// the step walks them (alternate_tiles reverses the tile order on odd steps), and read in reverse
// it starts with what the part read last. A thread that finishes takes any part still unclaimed,
// so a late or preempted helper delays the loop by at most one part.
#pragma once

#include <cstdint>

namespace rnnc {

// The halide_do_par_for_t to install with HalideCache::set_do_par_for.
void* tbb_do_par_for();
// Parallel loops run through it in this process so far (tests check the routing).
int64_t tbb_parallel_loops_run();

// Part `part` of `parts` over the indices [0, size): positions [size*part/parts,
// size*(part+1)/parts) of the folded order 0, size-1, 1, size-2, ..., which are the indices
// [low_begin, low_end) and [high_begin, high_end), run in that order.
struct MirroredPart {
  int64_t low_begin, low_end, high_begin, high_end;
};
MirroredPart mirrored_part(int64_t size, int64_t parts, int64_t part);

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
