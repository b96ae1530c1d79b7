/* recurrent_loop: the time loop of a lowered LSTM / GRU / RNN block, in C.
 *
 * One definition serves both executors: librnnc's RecurrentBlock (lowering/lower_recurrent.cc)
 * fills an rn_recurrent per run and calls these functions, and `rnnc compile` pastes this file
 * into every generated driver (aot/CMakeLists.txt), where the same struct is filled from the
 * weight file and the driver's buffers. Per direction:
 *
 *   XW = projection(X, Wt, bias)                 rows of X, dense in X's (seq, batch) order
 *                                                (large runs: per chunk of steps, see advance)
 *   for s in steps:  step_time[b] = s, len_b - 1 - s (reverse) or -1 (past len_b)
 *                    h', c' = step(R, XW, step_time, h, c)      double-buffered state
 *                    Y[step_time[b], d, b] = h'[b]
 *   Y_h, Y_c = the state after the last step
 *
 * Buffer layouts and the pipelines' argument order are recurrent_pipelines.h's; quantized cells
 * pass their packed int8 / int16 weights, scales, column sums and zero points instead of Wt and R.
 * Nothing here allocates: the caller hands over rn_recurrent_direction_bytes() per direction. */
#ifndef RNNC_LOWERING_CORE_RECURRENT_LOOP_H_
#define RNNC_LOWERING_CORE_RECURRENT_LOOP_H_

#include <stdint.h>

#ifndef RN_CORE_API
#define RN_CORE_API /* the AOT driver defines it as static */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled pipeline's argv entry (Halide's uniform calling convention). */
typedef int (*rn_pipeline_entry)(void** args);

/* One direction's compiled code and marshaled weights. */
typedef struct rn_recurrent_direction {
  int reverse, peepholes, linear_before_reset;
  rn_pipeline_entry step;         /* batch 1 */
  rn_pipeline_entry batched_step; /* batch > 1 */
  const float* bias;
  const float* peephole_weights; /* peepholes */
  const float* rbh;              /* linear_before_reset */
  /* float cells */
  const float *wt, *r;
  /* quantized cells: wq, rq of weight_bits (8 or 16) */
  const void *wq, *rq;
  const float *w_scale, *r_scale;
  const int32_t *w_colsum, *r_colsum;
  const int32_t *w_zero, *r_zero; /* zero_points */
} rn_recurrent_direction;

/* One block: its compiled shape (fixed at lowering) and one run's slots. Element strides are of
 * the slots in their layouts; a dir stride of 0 is a dir the layout squeezed out. */
typedef struct rn_recurrent {
  /* compiled */
  rn_pipeline_entry projection;
  int lstm, directions;
  int64_t hidden, input, gates, padded, tile;
  int64_t batch_pad;        /* batch > 1: the batch is padded to a multiple of this */
  int64_t wt_panel;         /* columns per panel of Wt / wq (projection_panel) */
  int alternate_tiles;      /* odd steps walk the hidden tiles backwards */
  int64_t xw_chunk_bytes;   /* a whole run's XW rows over this: projected in chunks (0: at once) */
  int64_t row_tile;         /* the projection's row tile where it streams W (0: W stays in L2) */
  int quantized;            /* integer products: wq, rq, scales, column sums */
  int weight_bits;          /* 8 or 16 */
  int zero_points;          /* w_zero and r_zero are passed */
  int count_overflow;       /* the kernels take an int32[4] overflow output */
  int64_t lane, w_ko, r_ko; /* packed k: lane() and packed_ko of the input and state widths */
  rn_recurrent_direction dir[2];
  /* one run */
  const float* x;
  int64_t seq, batch, x_seq_stride, x_batch_stride;
  const int64_t* lengths; /* batch entries, each in [0, seq] */
  int64_t steps;          /* max(lengths) */
  const float* initial_h; /* NULL: zeros */
  int64_t h0_dir, h0_batch;
  const float* initial_c;
  int64_t c0_dir, c0_batch;
  float* y; /* NULL: not written */
  int64_t y_seq, y_dir, y_batch;
  float* y_h;
  int64_t y_h_dir, y_h_batch;
  float* y_c;
  int64_t y_c_dir, y_c_batch;
} rn_recurrent;

/* One direction's progress through a run: XW and the double-buffered state. */
typedef struct rn_recurrent_state {
  float* xw; /* time rows [xw_time_begin, + xw_time_rows): the range projected last */
  int64_t xw_time_begin, xw_time_rows;
  float* x_rows; /* a batch slice of a seq-outer X: its rows gathered densely; else NULL */
  float *h[2], *c[2];
  int current; /* h[current], c[current] hold the state after the steps so far */
  int32_t* step_time;
  int64_t padded_batch;
  int64_t overflow[4]; /* count_overflow: the kernels' counts, summed over the calls so far */
  int failed_pipeline; /* after a failed call: 1 the projection, 2 the step */
} rn_recurrent_state;

/* Reads each entry's length into `lengths` (batch entries): sequence_lens' int32 or int64 entries
 * (`bits`), or seq for every entry when sequence_lens is NULL; then points layer->lengths at them
 * and sets layer->steps. Returns -1, or the first entry outside [0, seq] (layer unchanged). */
RN_CORE_API int64_t rn_recurrent_lengths(rn_recurrent* layer, const void* sequence_lens, int bits,
                                         int64_t* lengths);

/* Whether an entry stops before seq (layer->lengths set): Y past its length must be zero. */
RN_CORE_API int rn_recurrent_has_short_entry(const rn_recurrent* layer);

/* The run restricted to batch entries [begin, end) of `layer` (lengths set): the same slots and
 * strides, the pointers moved to entry `begin`, batch = end - begin, steps = the entries' longest
 * length. A slice runs like a whole run (its own rn_recurrent_direction_bytes, start, advance,
 * finish) and writes only its entries' rows of Y, Y_h and Y_c, so slices of one run may advance
 * on different threads. Each entry's arithmetic is the whole run's when both step with the same
 * pipeline (batch > 1 in the slice as in the run). */
RN_CORE_API void rn_recurrent_batch_slice(const rn_recurrent* layer, int64_t begin, int64_t end,
                                          rn_recurrent* slice);

/* Bytes one direction of a run needs (64-byte aligned memory, any contents). */
RN_CORE_API int64_t rn_recurrent_direction_bytes(const rn_recurrent* layer);

/* Lays out `memory` (rn_recurrent_direction_bytes) for direction d: zero state, or the initial
 * state where the run has one; no time step taken. */
RN_CORE_API void rn_recurrent_start(const rn_recurrent* layer, int d, void* memory,
                                    rn_recurrent_state* state);

/* Steps [step_begin, step_end) of direction d (clamped to layer->steps), after projecting the rows
 * they read. A range short of the whole run projects its own time rows (full lengths, seq
 * outermost in X). The whole run projects every row at once, or, when its rows exceed
 * xw_chunk_bytes and a range may project its own, each chunk of steps whose rows fit in it just
 * before stepping it. Returns 0, or a pipeline's nonzero Halide error code (and sets
 * state->failed_pipeline). Directions of one run may advance on different threads. */
RN_CORE_API int rn_recurrent_advance(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                     int64_t step_begin, int64_t step_end);

/* Copies the final state of direction d into Y_h / Y_c. */
RN_CORE_API void rn_recurrent_finish(const rn_recurrent* layer, int d,
                                     const rn_recurrent_state* state);

#ifdef __cplusplus
}
#endif

#endif /* RNNC_LOWERING_CORE_RECURRENT_LOOP_H_ */
