/* recurrent_loop.h: the time loop of a lowered recurrent block. */
#include "lowering/core/recurrent_loop.h"

#include <HalideRuntime.h>
#include <string.h>

#define RN_LOOP_ALIGN(bytes) ((((int64_t)(bytes)) + 63) / 64 * 64)

/* A halide_buffer_t over existing memory, dims innermost first. */
typedef struct rn_view {
  halide_buffer_t buffer;
  halide_dimension_t dims[5];
} rn_view;

static void rn_view_init(rn_view* view, const void* host, halide_type_code_t code, int bits,
                         int rank, const int64_t* extent_stride) {
  memset(view, 0, sizeof *view);
  view->buffer.host = (uint8_t*)host;
  view->buffer.type.code = code;
  view->buffer.type.bits = (uint8_t)bits;
  view->buffer.type.lanes = 1;
  view->buffer.dimensions = rank;
  view->buffer.dim = view->dims;
  for (int i = 0; i < rank; ++i) {
    view->dims[i].extent = (int32_t)extent_stride[2 * i];
    view->dims[i].stride = (int32_t)extent_stride[2 * i + 1];
  }
}

/* Points a view built over `from` at the same place in `to`. */
static void rn_view_move(rn_view* view, const float* from, const float* to) {
  view->buffer.host = (uint8_t*)to + (view->buffer.host - (const uint8_t*)from);
}

/* Walks dim `dim` backwards: index i of it is extent - 1 - i in memory. */
static void rn_view_reverse(rn_view* view, int dim) {
  halide_dimension_t* d = &view->dims[dim];
  if (view->buffer.host) {
    view->buffer.host += (int64_t)(d->extent - 1) * d->stride * ((view->buffer.type.bits + 7) / 8);
  }
  d->stride = -d->stride;
}

static int64_t rn_loop_round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

static int64_t rn_loop_padded_batch(const rn_recurrent* layer) {
  return rn_loop_round_up(layer->batch, layer->batch > 1 ? layer->batch_pad : 1);
}

RN_CORE_API int64_t rn_recurrent_lengths(rn_recurrent* layer, const void* sequence_lens, int bits,
                                         int64_t* lengths) {
  int64_t steps = 0;
  for (int64_t b = 0; b < layer->batch; ++b) {
    int64_t length = layer->seq;
    if (sequence_lens) {
      length = bits == 32 ? ((const int32_t*)sequence_lens)[b] : ((const int64_t*)sequence_lens)[b];
      if (length < 0 || length > layer->seq) return b;
    }
    lengths[b] = length;
    if (length > steps) steps = length;
  }
  layer->lengths = lengths;
  layer->steps = steps;
  return -1;
}

RN_CORE_API int rn_recurrent_has_short_entry(const rn_recurrent* layer) {
  for (int64_t b = 0; b < layer->batch; ++b) {
    if (layer->lengths[b] < layer->seq) return 1;
  }
  return 0;
}

RN_CORE_API void rn_recurrent_batch_slice(const rn_recurrent* layer, int64_t begin, int64_t end,
                                          rn_recurrent* slice) {
  *slice = *layer;
  slice->batch = end - begin;
  slice->x = layer->x + begin * layer->x_batch_stride;
  slice->lengths = layer->lengths + begin;
  slice->steps = 0;
  for (int64_t b = 0; b < slice->batch; ++b) {
    if (slice->lengths[b] > slice->steps) slice->steps = slice->lengths[b];
  }
  if (layer->initial_h) slice->initial_h = layer->initial_h + begin * layer->h0_batch;
  if (layer->initial_c) slice->initial_c = layer->initial_c + begin * layer->c0_batch;
  if (layer->y) slice->y = layer->y + begin * layer->y_batch;
  if (layer->y_h) slice->y_h = layer->y_h + begin * layer->y_h_batch;
  if (layer->y_c) slice->y_c = layer->y_c + begin * layer->y_c_batch;
}

/* X's layout is seq-outer (time steps outermost) or batch-outer; with one entry or one step
 * either reading is the same. */
static int rn_loop_seq_outer(const rn_recurrent* layer) {
  return layer->x_seq_stride >= layer->x_batch_stride;
}

/* Whether the run's seq * batch rows of X are contiguous: always for a whole run, and for a batch
 * slice of a batch-outer X; a slice of a seq-outer X has each time step's entries contiguous,
 * the steps a whole batch of rows apart. */
static int rn_loop_x_dense(const rn_recurrent* layer) {
  return rn_loop_seq_outer(layer) ? layer->x_seq_stride == layer->batch * layer->input
                                  : layer->x_batch_stride == layer->seq * layer->input;
}

RN_CORE_API int64_t rn_recurrent_direction_bytes(const rn_recurrent* layer) {
  const int64_t n = layer->gates * layer->padded, rows = layer->seq * layer->batch;
  const int64_t pb = rn_loop_padded_batch(layer);
  return RN_LOOP_ALIGN(4 * n * rows) + 4 * RN_LOOP_ALIGN(4 * layer->padded * pb) +
         RN_LOOP_ALIGN(4 * pb) +
         (rn_loop_x_dense(layer) ? 0 : RN_LOOP_ALIGN(4 * rows * layer->input));
}

RN_CORE_API void rn_recurrent_start(const rn_recurrent* layer, int d, void* memory,
                                    rn_recurrent_state* state) {
  uint8_t* next = (uint8_t*)memory;
  const int64_t n = layer->gates * layer->padded, rows = layer->seq * layer->batch;
  const int64_t padded = layer->padded, pb = rn_loop_padded_batch(layer);
  memset(state, 0, sizeof *state);
  state->padded_batch = pb;
  /* Every row a step reads is written by the projection first. */
  state->xw = (float*)next;
  next += RN_LOOP_ALIGN(4 * n * rows);
  for (int i = 0; i < 2; ++i) {
    state->h[i] = (float*)next;
    next += RN_LOOP_ALIGN(4 * padded * pb);
    state->c[i] = (float*)next;
    next += RN_LOOP_ALIGN(4 * padded * pb);
  }
  /* h[0] and c[0] start as zeros, then take the initial state where the run has one; their
   * padding lanes and padding batch entries stay zero (R . h reads them). Every step writes the
   * whole of the other pair. */
  memset(state->h[0], 0, (size_t)(2 * RN_LOOP_ALIGN(4 * padded * pb)));
  state->step_time = (int32_t*)next;
  next += RN_LOOP_ALIGN(4 * pb);
  for (int64_t b = 0; b < pb; ++b) state->step_time[b] = -1;
  if (!rn_loop_x_dense(layer)) state->x_rows = (float*)next;
  for (int64_t b = 0; b < layer->batch; ++b) {
    if (layer->initial_h) {
      memcpy(state->h[0] + b * padded, layer->initial_h + d * layer->h0_dir + b * layer->h0_batch,
             (size_t)(4 * layer->hidden));
    }
    if (layer->initial_c) {
      memcpy(state->c[0] + b * padded, layer->initial_c + d * layer->c0_dir + b * layer->c0_batch,
             (size_t)(4 * layer->hidden));
    }
  }
}

static const halide_type_code_t rn_f = halide_type_float, rn_i = halide_type_int;

/* Projects `rows` contiguous rows of X starting at `x_rows` into XW from row `xw_row` (argument
 * order: recurrent_pipelines.h). */
static int rn_recurrent_project_call(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                     const float* x_rows, int64_t rows, int64_t xw_row) {
  const rn_recurrent_direction* part = &layer->dir[d];
  const int64_t n = layer->gates * layer->padded;
  const int64_t panel = layer->wt_panel, input = layer->input;
  rn_view x, wt, bias, xw, wq, scale, colsum, zero, overflow;
  rn_view_init(&x, x_rows, rn_f, 32, 2, (const int64_t[]){input, 1, rows, input});
  rn_view_init(&bias, part->bias, rn_f, 32, 1, (const int64_t[]){n, 1});
  rn_view_init(&xw, state->xw + xw_row * n, rn_f, 32, 2, (const int64_t[]){n, 1, rows, n});
  void* args[8];
  int count = 0;
  int32_t counts[4] = {0, 0, 0, 0};
  if (!layer->quantized) {
    rn_view_init(&wt, part->wt, rn_f, 32, 3,
                 (const int64_t[]){panel, 1, input, panel, n / panel, input * panel});
    args[count++] = &x.buffer;
    args[count++] = &wt.buffer;
    args[count++] = &bias.buffer;
    args[count++] = &xw.buffer;
  } else {
    const int64_t lane = layer->lane, ko = layer->w_ko;
    rn_view_init(
        &wq, part->wq, rn_i, layer->weight_bits, 4,
        (const int64_t[]){lane, 1, panel, lane, ko, lane * panel, n / panel, lane * panel * ko});
    rn_view_init(&scale, part->w_scale, rn_f, 32, 1, (const int64_t[]){n, 1});
    rn_view_init(&colsum, part->w_colsum, rn_i, 32, 1, (const int64_t[]){n, 1});
    rn_view_init(&zero, part->w_zero, rn_i, 32, 1, (const int64_t[]){n, 1});
    rn_view_init(&overflow, counts, rn_i, 32, 1, (const int64_t[]){4, 1});
    args[count++] = &x.buffer;
    args[count++] = &wq.buffer;
    args[count++] = &scale.buffer;
    args[count++] = &colsum.buffer;
    if (layer->zero_points) args[count++] = &zero.buffer;
    args[count++] = &bias.buffer;
    args[count++] = &xw.buffer;
    if (layer->count_overflow) args[count++] = &overflow.buffer;
  }
  const int status = layer->projection(args);
  if (status != 0) {
    state->failed_pipeline = 1;
    return status;
  }
  for (int i = 0; i < 4; ++i) state->overflow[i] += counts[i];
  return 0;
}

/* The fewest rows a streamed projection's last row tile may recompute before the rows past its
 * last whole tile go to a call of their own: that call streams W once more, which costs about
 * what computing 4 rows does on an AMD EPYC Zen 5 core (docs/measurements.md, "Streamed
 * projections of rows past a whole row tile"); on Zen 4 the split neither gained nor lost
 * ("Shifted step tiles on Zen 4"). */
#define RN_SPLIT_RECOMPUTED_ROWS 8

/* Projects `rows` contiguous rows of X starting at `x_rows` into XW's first rows. Where W streams
 * in tiles of row_tile rows, a row count past a multiple of the tile shifts its last tile inward
 * onto rows already computed; when that would recompute many rows, the rows past the last whole
 * tile are projected by a second call (its own smaller tiles) instead. */
static int rn_recurrent_project(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                const float* x_rows, int64_t rows) {
  if (rows <= 0) return 0;
  const int64_t tile = layer->row_tile, past = tile > 0 ? rows % tile : 0;
  if (rows > tile && past > 0 && tile - past >= RN_SPLIT_RECOMPUTED_ROWS) {
    const int64_t whole = rows - past;
    const int status = rn_recurrent_project_call(layer, d, state, x_rows, whole, 0);
    if (status != 0) return status;
    return rn_recurrent_project_call(layer, d, state, x_rows + whole * layer->input, past, whole);
  }
  return rn_recurrent_project_call(layer, d, state, x_rows, rows, 0);
}

/* Projects the XW rows of time steps [t_begin, t_end): the whole run (0, seq) in any layout, a
 * range of steps when X is seq-outer. XW holds the rows of the range projected last, from its
 * first row, dense in X's axis order over the run's own entries; the steps see them as time rows
 * from t_begin (xw_time_begin). Every range reuses the same memory, which its steps have just
 * read from, rather than the next part of a buffer the size of the run: the lines a projection
 * writes are then already in L2, where fresh ones would first be fetched from L3 or memory. A
 * batch slice of a seq-outer X first gathers its entries' rows of those steps into x_rows, so
 * the projection is one call over all of them, as for a whole run. */
static int rn_recurrent_project_steps(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                      int64_t t_begin, int64_t t_end) {
  const int64_t batch = layer->batch, input = layer->input;
  const float* rows = layer->x + t_begin * batch * input;
  if (state->x_rows) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      memcpy(state->x_rows + t * batch * input, layer->x + t * layer->x_seq_stride,
             (size_t)(4 * batch * input));
    }
    rows = state->x_rows + t_begin * batch * input;
  }
  state->xw_time_begin = t_begin;
  state->xw_time_rows = t_end - t_begin;
  return rn_recurrent_project(layer, d, state, rows, (t_end - t_begin) * batch);
}

/* The arguments of one step's kernel: h and c read from buffer `current` and written to the
 * other, the hidden tiles walked forwards or backwards (alternate_tiles). Both alternate from one
 * step to the next, so a range of steps has two kinds of step, each built once. */
typedef struct rn_step_call {
  rn_view r, rq, r_scale, r_colsum, r_zero, xw, step_time, h_in, h_tiles, h_out, c_in, c_out,
      peepholes, rbh, overflow;
  const float* h_read;  /* the memory h_in and h_tiles view */
  const float* h_write; /* the memory h_out views */
  void* args[16];
} rn_step_call;

/* Points the call's h views at other memory of the same layout. */
static void rn_step_call_move_h(rn_step_call* call, const float* h_read, const float* h_write) {
  rn_view_move(&call->h_in, call->h_read, h_read);
  rn_view_move(&call->h_tiles, call->h_read, h_read);
  rn_view_move(&call->h_out, call->h_write, h_write);
  call->h_read = h_read;
  call->h_write = h_write;
}

static void rn_step_call_init(rn_step_call* call, const rn_recurrent* layer, int d,
                              const rn_recurrent_state* state, int current, int backwards,
                              int32_t* counts) {
  const rn_recurrent_direction* part = &layer->dir[d];
  const int64_t seq = layer->seq, batch = layer->batch, hidden = layer->hidden;
  const int64_t padded = layer->padded, tile = layer->tile, tiles = padded / tile;
  const int64_t g = layer->gates, n = g * padded, pb = state->padded_batch;

  /* XW's rows are X's rows, dense in X's axis order. */
  const int seq_outer = rn_loop_seq_outer(layer);
  const int64_t b_stride = seq_outer ? n : seq * n;
  const int64_t t_stride = seq_outer ? batch * n : n;
  const int64_t lane = layer->lane, ko = layer->r_ko;
  const int64_t tiles_spec[] = {tile, 1, tiles, tile, pb, padded};
  const int64_t row_tiles[] = {tile, 1, g, tile, tiles, g * tile};
  float* const h_read = state->h[current];
  float* const c_read = state->c[current];
  rn_view_init(&call->r, part->r, rn_f, 32, 4,
               (const int64_t[]){tile, 1, g, tile, hidden, g * tile, tiles, hidden * g * tile});
  rn_view_init(&call->rq, part->rq, rn_i, layer->quantized ? layer->weight_bits : 8, 5,
               (const int64_t[]){lane, 1, tile, lane, g, lane * tile, ko, lane * tile * g, tiles,
                                 lane * tile * g * ko});
  rn_view_init(&call->r_scale, part->r_scale, rn_f, 32, 3, row_tiles);
  rn_view_init(&call->r_colsum, part->r_colsum, rn_i, 32, 3, row_tiles);
  rn_view_init(&call->r_zero, part->r_zero, rn_i, 32, 3, row_tiles);
  rn_view_init(
      &call->xw, state->xw, rn_f, 32, 5,
      (const int64_t[]){tile, 1, g, tile, tiles, g * tile, batch, b_stride, seq, t_stride});
  call->xw.dims[4].min = (int32_t)state->xw_time_begin;
  call->xw.dims[4].extent = (int32_t)state->xw_time_rows;
  rn_view_init(&call->step_time, state->step_time, rn_i, 32, 1, (const int64_t[]){pb, 1});
  rn_view_init(&call->h_in, h_read, rn_f, 32, 2, (const int64_t[]){padded, 1, pb, padded});
  rn_view_init(&call->h_tiles, h_read, rn_f, 32, 3, tiles_spec);
  rn_view_init(&call->h_out, state->h[1 - current], rn_f, 32, 3, tiles_spec);
  rn_view_init(&call->c_in, c_read, rn_f, 32, 3, tiles_spec);
  rn_view_init(&call->c_out, state->c[1 - current], rn_f, 32, 3, tiles_spec);
  rn_view_init(&call->peepholes, part->peephole_weights, rn_f, 32, 3,
               (const int64_t[]){tile, 1, tiles, tile, 3, padded});
  rn_view_init(&call->rbh, part->rbh, rn_f, 32, 2, (const int64_t[]){tile, 1, tiles, tile});
  rn_view_init(&call->overflow, counts, rn_i, 32, 1, (const int64_t[]){4, 1});
  call->h_read = h_read;
  call->h_write = state->h[1 - current];

  /* Walking the tiles backwards reverses every per-tile view along its tile dim (h_in, read whole
   * for R . h, keeps its order). */
  if (backwards) {
    struct {
      rn_view* view;
      int dim;
    } const tile_dims[] = {{&call->r, 3},        {&call->rq, 4},        {&call->r_scale, 2},
                           {&call->r_colsum, 2}, {&call->r_zero, 2},    {&call->xw, 2},
                           {&call->h_tiles, 1},  {&call->c_in, 1},      {&call->h_out, 1},
                           {&call->c_out, 1},    {&call->peepholes, 1}, {&call->rbh, 1}};
    for (size_t i = 0; i < sizeof tile_dims / sizeof tile_dims[0]; ++i) {
      rn_view_reverse(tile_dims[i].view, tile_dims[i].dim);
    }
  }

  int count = 0;
  if (layer->quantized) {
    call->args[count++] = &call->rq.buffer;
    call->args[count++] = &call->r_scale.buffer;
    call->args[count++] = &call->r_colsum.buffer;
    if (layer->zero_points) call->args[count++] = &call->r_zero.buffer;
  } else {
    call->args[count++] = &call->r.buffer;
  }
  call->args[count++] = &call->xw.buffer;
  call->args[count++] = &call->step_time.buffer;
  call->args[count++] = &call->h_in.buffer;
  call->args[count++] = &call->h_tiles.buffer;
  if (layer->lstm) call->args[count++] = &call->c_in.buffer;
  if (part->peepholes) call->args[count++] = &call->peepholes.buffer;
  if (part->linear_before_reset) call->args[count++] = &call->rbh.buffer;
  call->args[count++] = &call->h_out.buffer;
  if (layer->lstm) call->args[count++] = &call->c_out.buffer;
  if (layer->quantized && layer->count_overflow) call->args[count++] = &call->overflow.buffer;
}

/* Whether each step writes its h straight into its time's row of Y, and the next step reads it
 * there, instead of writing the state buffer and copying the row into Y: when a direction's rows
 * of Y have the state's layout (no padding lanes or padding entries, entries hidden apart) and no
 * entry is shorter than the run (whose Y rows past its length stay zero while its state stays). */
static int rn_loop_h_in_y(const rn_recurrent* layer, const rn_recurrent_state* state) {
  return layer->y && layer->padded == layer->hidden && state->padded_batch == layer->batch &&
         layer->y_batch == layer->hidden && !rn_recurrent_has_short_entry(layer);
}

/* Makes h[current], c[current] the state after the steps so far, where the last step left h in
 * `h_last` (a row of Y, with rn_loop_h_in_y). */
static void rn_loop_keep_h(const rn_recurrent* layer, rn_recurrent_state* state, int current,
                           const float* h_last) {
  if (h_last != state->h[current]) {
    memcpy(state->h[current], h_last, (size_t)(4 * layer->batch * layer->hidden));
  }
  state->current = current;
}

/* Steps [step_begin, step_end) of direction d, their XW rows projected. With alternate_tiles, odd
 * steps walk the hidden tiles backwards. */
static int rn_loop_steps(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                         int64_t step_begin, int64_t step_end) {
  const rn_recurrent_direction* part = &layer->dir[d];
  const int64_t batch = layer->batch, hidden = layer->hidden, padded = layer->padded;
  int32_t counts[4] = {0, 0, 0, 0};
  /* [0]: steps step_begin, step_begin + 2, ...; [1]: the steps between (none in a one-step range,
   * a streamed chunk of one frame). */
  rn_step_call calls[2];
  for (int i = 0; i < 2 && step_begin + i < step_end; ++i) {
    const int backwards = layer->alternate_tiles && (step_begin + i) % 2 == 1;
    rn_step_call_init(&calls[i], layer, d, state, state->current ^ i, backwards, counts);
  }

  const int count_overflow = layer->quantized && layer->count_overflow;
  const rn_pipeline_entry step = batch > 1 ? part->batched_step : part->step;
  const int64_t* lengths = layer->lengths;
  int current = state->current;
  const int h_in_y = rn_loop_h_in_y(layer, state);
  const float* h_last = state->h[current]; /* where the last step left h */
  for (int64_t s = step_begin; s < step_end; ++s) {
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t length = lengths[b];
      state->step_time[b] = s >= length ? -1 : (int32_t)(part->reverse ? length - 1 - s : s);
    }
    rn_step_call* call = &calls[(s - step_begin) % 2];
    float* y_row = NULL;
    if (h_in_y) {
      y_row = layer->y + state->step_time[0] * layer->y_seq + d * layer->y_dir;
      rn_step_call_move_h(call, h_last, y_row);
    }
    const int step_status = step(call->args);
    if (step_status != 0) {
      rn_loop_keep_h(layer, state, current, h_last);
      state->failed_pipeline = 2;
      return step_status;
    }
    if (count_overflow) {
      for (int i = 0; i < 4; ++i) state->overflow[i] += counts[i];
    }
    current = 1 - current;
    h_last = h_in_y ? y_row : state->h[current];
    if (layer->y && !h_in_y) {
      for (int64_t b = 0; b < batch; ++b) {
        const int32_t t = state->step_time[b];
        if (t >= 0) {
          memcpy(layer->y + t * layer->y_seq + d * layer->y_dir + b * layer->y_batch,
                 state->h[current] + b * padded, (size_t)(4 * hidden));
        }
      }
    }
  }
  rn_loop_keep_h(layer, state, current, h_last);
  return 0;
}

/* Projects the time rows that steps [step_begin, step_end) read, every entry at full length:
 * step s reads time s, or seq - 1 - s in a reverse direction. */
static int rn_loop_project_range(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                 int64_t step_begin, int64_t step_end) {
  if (layer->dir[d].reverse) {
    return rn_recurrent_project_steps(layer, d, state, layer->seq - step_end,
                                      layer->seq - step_begin);
  }
  return rn_recurrent_project_steps(layer, d, state, step_begin, step_end);
}

/* Steps per projected chunk of a whole run: all of them, unless their XW rows exceed
 * xw_chunk_bytes and a chunk's rows are its steps' time rows (every entry at full length, X
 * seq-outer). Rows projected just before they are stepped are read from L2; a whole run's XW
 * beyond L2 would be read back from L3 at every step. */
static int64_t rn_loop_chunk_steps(const rn_recurrent* layer) {
  const int64_t step_bytes = 4 * layer->gates * layer->padded * layer->batch;
  if (layer->xw_chunk_bytes <= 0 || step_bytes * layer->steps <= layer->xw_chunk_bytes ||
      !rn_loop_seq_outer(layer) || rn_recurrent_has_short_entry(layer)) {
    return layer->steps;
  }
  const int64_t steps = layer->xw_chunk_bytes / step_bytes;
  return steps > 1 ? steps : 1;
}

RN_CORE_API int rn_recurrent_advance(const rn_recurrent* layer, int d, rn_recurrent_state* state,
                                     int64_t step_begin, int64_t step_end) {
  if (step_end > layer->steps) step_end = layer->steps;
  if (step_begin >= step_end) return 0;
  if (step_begin > 0 || step_end < layer->steps) {
    const int status = rn_loop_project_range(layer, d, state, step_begin, step_end);
    return status != 0 ? status : rn_loop_steps(layer, d, state, step_begin, step_end);
  }
  const int64_t chunk = rn_loop_chunk_steps(layer);
  if (chunk >= step_end) {
    /* Every row at once: the run fits one chunk, or its steps' rows are not its time rows
     * (short entries, X batch-outer). */
    const int status = rn_recurrent_project_steps(layer, d, state, 0, layer->seq);
    return status != 0 ? status : rn_loop_steps(layer, d, state, 0, step_end);
  }
  for (int64_t s = 0; s < step_end; s += chunk) {
    const int64_t end = s + chunk < step_end ? s + chunk : step_end;
    int status = rn_loop_project_range(layer, d, state, s, end);
    if (status == 0) status = rn_loop_steps(layer, d, state, s, end);
    if (status != 0) return status;
  }
  return 0;
}

RN_CORE_API void rn_recurrent_finish(const rn_recurrent* layer, int d,
                                     const rn_recurrent_state* state) {
  const float* h = state->h[state->current];
  const float* c = state->c[state->current];
  for (int64_t b = 0; b < layer->batch; ++b) {
    if (layer->y_h) {
      memcpy(layer->y_h + d * layer->y_h_dir + b * layer->y_h_batch, h + b * layer->padded,
             (size_t)(4 * layer->hidden));
    }
    if (layer->y_c) {
      memcpy(layer->y_c + d * layer->y_c_dir + b * layer->y_c_batch, c + b * layer->padded,
             (size_t)(4 * layer->hidden));
    }
  }
}
