// The batch-split rule: whether a recurrent block, or a pipelined chain of them, runs as batch
// slices on several threads (each thread every block over its own entries, no synchronization
// until the end), and where the slices start.
//
// A slice steps its entries with the same weights as the whole batch, so it pays when the work
// per weight byte stays high and the weights a step reads stay in the core's own cache:
//   - each slice holds at least kMinSliceUnits of the step's batch tiles (fewer entries per R
//     load make each core's step slower than the pipeline's whole layers);
//   - every block's R (what each step reads) fits one core's L2: the slices then read it from
//     their own L2, while an R streamed from L3 or DRAM at every step would be streamed once
//     per slice (the step's parallel hidden tiles split such an R across the cores instead:
//     lowering/schedule_table.h, RecurrentSchedule::parallel_tiles).
// The numbers behind the rule: docs/benchmarks.md, "Batched recurrent kernels".
#pragma once

#include <cstdint>

namespace rnnc {

// Slices of at least this many batch tiles (batch_slice_unit) each.
constexpr int64_t kMinSliceUnits = 1;
// At most this many slices (one per thread).
constexpr int kMaxSlices = 64;

// How many slices (0: do not split) a run of `batch` entries takes on `threads` threads, for
// blocks whose step tile is `unit` entries and whose largest R is `step_weight_bytes`; writes
// slices + 1 entries of bounds (room for kMaxSlices + 1), slice i = [bounds[i], bounds[i + 1]),
// each a multiple of `unit` entries but the last. An R over this CPU's L2 per core
// (host_l2_bytes) never splits. RNNC_BATCH_SPLIT=0 never splits, =1 splits whenever every slice
// can have 2 entries (for experiments and tests).
int batch_slices(int64_t batch, int64_t unit, double step_weight_bytes, int threads,
                 int64_t* bounds);

}  // namespace rnnc
