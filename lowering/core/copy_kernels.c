/* copy_kernels.h: Concat, Slice and Pad copies. */
#include "lowering/core/copy_kernels.h"

#include <string.h>

RN_CORE_API void rn_concat(void* destination, int64_t outer, int count, const void* const* parts,
                           const int64_t* slab_bytes) {
  uint8_t* out = (uint8_t*)destination;
  for (int64_t o = 0; o < outer; ++o) {
    for (int i = 0; i < count; ++i) {
      if (slab_bytes[i] == 0) continue;
      memcpy(out, (const uint8_t*)parts[i] + o * slab_bytes[i], (size_t)slab_bytes[i]);
      out += slab_bytes[i];
    }
  }
}

/* ---- Slice ---------------------------------------------------------------------------------- */

/* min(max(value, low), high), as std::clamp computes it: high wins when high < low (an empty axis
 * sliced backwards clamps to [0, -1]). */
static int64_t rn_clamp(int64_t value, int64_t low, int64_t high) {
  const int64_t raised = value < low ? low : value;
  return raised > high ? high : raised;
}

/* ceil(distance / |step|) elements for a positive distance, else none; exact for every int64 step.
 */
static int64_t rn_step_count(int64_t distance, int64_t step) {
  if (distance <= 0) return 0;
  const uint64_t magnitude = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
  return (int64_t)(((uint64_t)distance - 1) / magnitude + 1);
}

RN_CORE_API int rn_normalize_axes(int64_t* axes, int count, int64_t rank) {
  if (rank > 32) return 0;
  uint32_t seen = 0;
  for (int i = 0; i < count; ++i) {
    if (axes[i] < -rank || axes[i] >= rank) return 0;
    if (axes[i] < 0) axes[i] += rank;
    if (seen & (1u << axes[i])) return 0;
    seen |= 1u << axes[i];
  }
  return 1;
}

RN_CORE_API int rn_reshape_shape(int rank, const int64_t* input_shape, int n,
                                 const int64_t* requested, int allow_zero, int64_t* shape) {
  if (n < 0 || n > RN_COPY_MAX_RANK) return 0;
  int64_t numel = 1, known = 1;
  for (int k = 0; k < rank; ++k) numel *= input_shape[k];
  int inferred = -1;
  for (int i = 0; i < n; ++i) {
    int64_t d = requested[i];
    if (d == 0 && !allow_zero) {
      if (i >= rank) return 0;
      d = input_shape[i];
    }
    if (d == -1) {
      if (inferred >= 0) return 0;
      inferred = i;
    } else if (d < 0) {
      return 0;
    } else {
      known *= d;
    }
    shape[i] = d;
  }
  if (inferred >= 0) {
    if (known == 0 || numel % known != 0) return 0;
    shape[inferred] = numel / known;
  } else if (known != numel) {
    return 0;
  }
  return 1;
}

/* The spec's clamping, as the reference's resolve_slice (ir/reference/kernels_tensor.cc):
 * negative bounds count from the end; starts clamp to [0, d] going forward and [0, d - 1] going
 * backward, ends to [0, d] and [-1, d - 1]. Returns the first position and sets the count. */
static int64_t rn_resolve_slice(int64_t d, int64_t start, int64_t end, int64_t step,
                                int64_t* count) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = rn_clamp(start, 0, d);
    end = rn_clamp(end, 0, d);
  } else {
    start = rn_clamp(start, 0, d - 1);
    end = rn_clamp(end, -1, d - 1);
  }
  *count = rn_step_count(step > 0 ? end - start : start - end, step);
  return start;
}

/* plan->dims and walks from the output's shape (plan->shape) and each output axis's walk through
 * the input: axes of one position walk nowhere and drop out, an axis whose walk spans the next
 * one's extent merges into it. Also sets numel. */
static void rn_plan_walks(rn_slice_plan* plan, const int64_t* walk) {
  plan->numel = 1;
  for (int k = 0; k < plan->rank; ++k) plan->numel *= plan->shape[k];
  plan->merged = 0;
  for (int k = 0; k < plan->rank; ++k) {
    /* An empty axis empties the copy (numel 0), and its walk may be huge (a step of -2^63 times
     * a stride would overflow); it is never walked. */
    if (plan->shape[k] <= 1) continue;
    if (plan->merged > 0 && plan->walks[plan->merged - 1] == walk[k] * plan->shape[k]) {
      plan->dims[plan->merged - 1] *= plan->shape[k];
      plan->walks[plan->merged - 1] = walk[k];
    } else {
      plan->dims[plan->merged] = plan->shape[k];
      plan->walks[plan->merged++] = walk[k];
    }
  }
  if (plan->merged == 0) plan->dims[0] = 1, plan->walks[0] = 1, plan->merged = 1;
}

RN_CORE_API int rn_slice_plan_make(rn_slice_plan* plan, int rank, const int64_t* input_shape, int n,
                                   const int64_t* starts, const int64_t* ends, const int64_t* axes,
                                   const int64_t* steps) {
  if (rank < 0 || rank > RN_COPY_MAX_RANK) return 0;
  memset(plan, 0, sizeof *plan);
  plan->rank = rank;
  /* Output position p on axis k reads input position first[k] + p * step[k]. */
  int64_t first[RN_COPY_MAX_RANK] = {0}, step[RN_COPY_MAX_RANK];
  for (int k = 0; k < rank; ++k) plan->shape[k] = input_shape[k], step[k] = 1;
  for (int i = 0; i < n; ++i) {
    if (steps[i] == 0 || axes[i] < 0 || axes[i] >= rank) return 0;
    const int axis = (int)axes[i];
    first[axis] =
        rn_resolve_slice(plan->shape[axis], starts[i], ends[i], steps[i], &plan->shape[axis]);
    step[axis] = steps[i];
  }
  int64_t strides[RN_COPY_MAX_RANK], walk[RN_COPY_MAX_RANK], stride = 1;
  for (int k = rank - 1; k >= 0; --k) strides[k] = stride, stride *= input_shape[k];
  for (int k = 0; k < rank; ++k) {
    plan->base += first[k] * strides[k];
    walk[k] = plan->shape[k] <= 1 ? 0 : step[k] * strides[k];
  }
  rn_plan_walks(plan, walk);
  return 1;
}

RN_CORE_API int rn_transpose_plan_make(rn_slice_plan* plan, int rank, const int64_t* input_shape,
                                       const int64_t* perm) {
  if (rank < 0 || rank > RN_COPY_MAX_RANK) return 0;
  memset(plan, 0, sizeof *plan);
  plan->rank = rank;
  int64_t strides[RN_COPY_MAX_RANK], walk[RN_COPY_MAX_RANK], stride = 1;
  for (int k = rank - 1; k >= 0; --k) strides[k] = stride, stride *= input_shape[k];
  unsigned seen = 0;
  for (int k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k]) & 1u) return 0;
    seen |= 1u << perm[k];
    plan->shape[k] = input_shape[perm[k]];
    walk[k] = strides[perm[k]];
  }
  rn_plan_walks(plan, walk);
  return 1;
}

RN_CORE_API int rn_expand_plan_make(rn_slice_plan* plan, int input_rank,
                                    const int64_t* input_shape, int n, const int64_t* shape) {
  const int rank = input_rank > n ? input_rank : n;
  if (input_rank < 0 || n < 0 || rank > RN_COPY_MAX_RANK) return 0;
  memset(plan, 0, sizeof *plan);
  plan->rank = rank;
  int64_t strides[RN_COPY_MAX_RANK], walk[RN_COPY_MAX_RANK], stride = 1;
  for (int k = input_rank - 1; k >= 0; --k) strides[k] = stride, stride *= input_shape[k];
  /* Numpy broadcasting, right-aligned: equal extents, or either one 1. */
  for (int k = 0; k < rank; ++k) {
    const int i = k - (rank - input_rank), j = k - (rank - n);
    const int64_t a = i >= 0 ? input_shape[i] : 1, b = j >= 0 ? shape[j] : 1;
    if (a != b && a != 1 && b != 1) return 0;
    plan->shape[k] = a == 1 ? b : a;
    walk[k] = a == 1 ? 0 : strides[i];
  }
  rn_plan_walks(plan, walk);
  return 1;
}

/* out (row-major, dims) = source[sum index[k] * walks[k]]; the innermost axis is one memcpy when
 * it walks by one element. */
#define RN_STRIDED_COPY(Word)                                                            \
  static void rn_strided_copy_##Word(const Word* source, Word* out, const int64_t* dims, \
                                     const int64_t* walks, int axes) {                   \
    const int64_t row = dims[axes - 1], walk = walks[axes - 1];                          \
    int64_t index[RN_COPY_MAX_RANK] = {0};                                               \
    for (;;) {                                                                           \
      if (walk == 1) {                                                                   \
        memcpy(out, source, (size_t)row * sizeof(Word));                                 \
      } else {                                                                           \
        for (int64_t p = 0; p < row; ++p) out[p] = source[p * walk];                     \
      }                                                                                  \
      out += row;                                                                        \
      int k = axes - 1;                                                                  \
      for (; k > 0; --k) {                                                               \
        source += walks[k - 1];                                                          \
        if (++index[k - 1] < dims[k - 1]) break;                                         \
        source -= index[k - 1] * walks[k - 1];                                           \
        index[k - 1] = 0;                                                                \
      }                                                                                  \
      if (k == 0) return;                                                                \
    }                                                                                    \
  }
RN_STRIDED_COPY(uint8_t)
RN_STRIDED_COPY(uint16_t)
RN_STRIDED_COPY(uint32_t)
RN_STRIDED_COPY(uint64_t)

RN_CORE_API void rn_slice_copy(const rn_slice_plan* plan, int word_bytes, const void* input,
                               void* output) {
  if (plan->numel == 0) return;
  const int64_t* dims = plan->dims;
  const int64_t* walks = plan->walks;
  switch (word_bytes) {
    case 1:
      rn_strided_copy_uint8_t((const uint8_t*)input + plan->base, (uint8_t*)output, dims, walks,
                              plan->merged);
      return;
    case 2:
      rn_strided_copy_uint16_t((const uint16_t*)input + plan->base, (uint16_t*)output, dims, walks,
                               plan->merged);
      return;
    case 4:
      rn_strided_copy_uint32_t((const uint32_t*)input + plan->base, (uint32_t*)output, dims, walks,
                               plan->merged);
      return;
    default:
      rn_strided_copy_uint64_t((const uint64_t*)input + plan->base, (uint64_t*)output, dims, walks,
                               plan->merged);
      return;
  }
}

/* ---- Pad ------------------------------------------------------------------------------------ */

/* Pads beyond +-2^62 are not planned, so position arithmetic here cannot overflow. */
#define RN_MAX_PAD (((int64_t)1) << 62)

/* rn_pad_source beyond one period of the mode: wrap and reflect positions far outside [0, d). */
__attribute__((noinline)) static int64_t rn_far_pad_source(int64_t j, int64_t d, int mode) {
  if (mode == RN_PAD_WRAP) return (j % d + d) % d;
  const int64_t period = 2 * (d - 1); /* reflect: d-1 steps away from the first element and back */
  const int64_t m = (j % period + period) % period;
  return m < d ? m : period - m;
}

/* Where a position j outside [0, d) reads from, per mode; -1 for the fill. As the reference's
 * pad_source (d > 0 for every mode but constant), without a division within one period. */
static int64_t rn_pad_source(int64_t j, int64_t d, int mode) {
  if (j >= 0 && j < d) return j;
  switch (mode) {
    case RN_PAD_CONSTANT:
      return -1;
    case RN_PAD_EDGE:
      return j < 0 ? 0 : d - 1;
    case RN_PAD_WRAP:
      if (j >= -d && j < 2 * d) return j < 0 ? j + d : j - d;
      break;
    default: /* reflect */
      if (d == 1) return 0;
      if (j > -d && j < 2 * d - 1) return j < 0 ? -j : 2 * (d - 1) - j;
      break;
  }
  return rn_far_pad_source(j, d, mode);
}

RN_CORE_API int rn_pad_plan_make(rn_pad_plan* plan, int mode, int rank, const int64_t* input_shape,
                                 const int64_t* before, const int64_t* after) {
  if (rank < 0 || rank > RN_COPY_MAX_RANK) return 0;
  memset(plan, 0, sizeof *plan);
  plan->rank = rank;
  plan->mode = mode;
  plan->numel = 1;
  for (int k = 0; k < rank; ++k) {
    const int64_t d = input_shape[k];
    const int64_t low = before[k] < after[k] ? before[k] : after[k];
    const int64_t high = before[k] > after[k] ? before[k] : after[k];
    if (low < -RN_MAX_PAD || high > RN_MAX_PAD || d > RN_MAX_PAD) return 0;
    plan->input_shape[k] = d;
    plan->shape[k] = d + before[k] + after[k];
    plan->axes[k].begin = before[k];
    if (plan->shape[k] < 0 || (mode != RN_PAD_CONSTANT && d == 0 && plan->shape[k] > 0)) return 0;
    plan->numel *= plan->shape[k];
  }
  if (rank == 0) { /* a scalar is one row of one position */
    plan->shape[0] = 1;
    plan->input_shape[0] = 1;
  }
  const int axes_total = rank > 0 ? rank : 1;
  int64_t stride = 1;
  for (int k = axes_total; k-- > 0;) plan->strides[k] = stride, stride *= plan->input_shape[k];
  /* Rows run along the innermost padded axis (axis 0 when nothing is padded: one memcpy). */
  int row_axis = axes_total - 1;
  plan->unit = 1;
  for (; row_axis > 0 && plan->axes[row_axis].begin == 0 &&
         plan->shape[row_axis] == plan->input_shape[row_axis];
       --row_axis) {
    plan->unit *= plan->shape[row_axis];
  }
  plan->row_axis = row_axis;
  for (int k = 0; k <= row_axis; ++k) {
    rn_pad_axis* axis = &plan->axes[k];
    axis->interior_begin = rn_clamp(axis->begin, 0, plan->shape[k]);
    axis->interior_end =
        rn_clamp(axis->begin + plan->input_shape[k], axis->interior_begin, plan->shape[k]);
    plan->table_entries += axis->interior_begin + plan->shape[k] - axis->interior_end;
  }
  return 1;
}

RN_CORE_API void rn_pad_plan_tables(rn_pad_plan* plan, int64_t* tables) {
  for (int k = 0; k <= plan->row_axis; ++k) {
    rn_pad_axis* axis = &plan->axes[k];
    const int64_t d = plan->input_shape[k], size = plan->shape[k];
    for (int64_t p = 0; p < axis->interior_begin; ++p) {
      tables[p] = rn_pad_source(p - axis->begin, d, plan->mode);
    }
    for (int64_t p = axis->interior_end; p < size; ++p) {
      tables[axis->interior_begin + p - axis->interior_end] =
          rn_pad_source(p - axis->begin, d, plan->mode);
    }
    axis->left = tables;
    axis->right = tables + axis->interior_begin;
    tables += axis->interior_begin + size - axis->interior_end;
  }
}

static int64_t rn_pad_axis_source(const rn_pad_axis* axis, int64_t p) {
  if (p < axis->interior_begin) return axis->left[p];
  return p < axis->interior_end ? p - axis->begin : axis->right[p - axis->interior_end];
}

#define RN_PAD_COPY(Word)                                                                         \
  static void rn_pad_fill_##Word(Word* to, int64_t count, Word fill) {                            \
    for (int64_t i = 0; i < count; ++i) to[i] = fill;                                             \
  }                                                                                               \
  static void rn_pad_copy_##Word(const Word* source, Word* out, const rn_pad_plan* plan,          \
                                 Word fill) {                                                     \
    const int64_t row = plan->shape[plan->row_axis], unit = plan->unit;                           \
    const rn_pad_axis* along = &plan->axes[plan->row_axis];                                       \
    int64_t index[RN_COPY_MAX_RANK] = {0};                                                        \
    for (;;) {                                                                                    \
      /* The input row this output row reads, or none when an outer position is the fill. */      \
      int64_t offset = 0;                                                                         \
      for (int k = 0; k < plan->row_axis && offset >= 0; ++k) {                                   \
        const int64_t from = rn_pad_axis_source(&plan->axes[k], index[k]);                        \
        offset = from < 0 ? -1 : offset + from * plan->strides[k];                                \
      }                                                                                           \
      if (offset < 0) {                                                                           \
        rn_pad_fill_##Word(out, row* unit, fill);                                                 \
      } else {                                                                                    \
        const Word* input_row = source + offset;                                                  \
        for (int64_t p = 0; p < row; ++p) {                                                       \
          if (p == along->interior_begin && along->interior_end > along->interior_begin) {        \
            memcpy(out + p * unit, input_row + (p - along->begin) * unit,                         \
                   (size_t)((along->interior_end - p) * unit) * sizeof(Word));                    \
            p = along->interior_end - 1;                                                          \
            continue;                                                                             \
          }                                                                                       \
          const int64_t from =                                                                    \
              p < along->interior_begin ? along->left[p] : along->right[p - along->interior_end]; \
          if (unit == 1) {                                                                        \
            out[p] = from < 0 ? fill : input_row[from];                                           \
          } else if (from < 0) {                                                                  \
            rn_pad_fill_##Word(out + p * unit, unit, fill);                                       \
          } else {                                                                                \
            memcpy(out + p * unit, input_row + from * unit, (size_t)unit * sizeof(Word));         \
          }                                                                                       \
        }                                                                                         \
      }                                                                                           \
      out += row * unit;                                                                          \
      int k = plan->row_axis;                                                                     \
      for (; k > 0; --k) {                                                                        \
        if (++index[k - 1] < plan->shape[k - 1]) break;                                           \
        index[k - 1] = 0;                                                                         \
      }                                                                                           \
      if (k == 0) return;                                                                         \
    }                                                                                             \
  }
RN_PAD_COPY(uint8_t)
RN_PAD_COPY(uint16_t)
RN_PAD_COPY(uint32_t)
RN_PAD_COPY(uint64_t)

RN_CORE_API void rn_pad_copy(const rn_pad_plan* plan, int word_bytes, const void* input,
                             void* output, uint64_t fill) {
  if (plan->numel == 0) return;
  switch (word_bytes) {
    case 1:
      rn_pad_copy_uint8_t((const uint8_t*)input, (uint8_t*)output, plan, (uint8_t)fill);
      return;
    case 2:
      rn_pad_copy_uint16_t((const uint16_t*)input, (uint16_t*)output, plan, (uint16_t)fill);
      return;
    case 4:
      rn_pad_copy_uint32_t((const uint32_t*)input, (uint32_t*)output, plan, (uint32_t)fill);
      return;
    default:
      rn_pad_copy_uint64_t((const uint64_t*)input, (uint64_t*)output, plan, fill);
      return;
  }
}

/* ---- ScatterND ------------------------------------------------------------------------------ */

RN_CORE_API int rn_scatter_nd_offsets(int rank, const int64_t* data_shape, int k, int64_t tuples,
                                      const int64_t* indices, int64_t* offsets) {
  if (rank > RN_COPY_MAX_RANK || k < 1 || k > rank) return 0;
  int64_t strides[RN_COPY_MAX_RANK];
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= data_shape[d];
  }
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int j = 0; j < k; ++j) {
      const int64_t extent = data_shape[j];
      int64_t index = indices[t * k + j];
      if (index < -extent || index >= extent) return 0;
      if (index < 0) index += extent;
      offset += index * strides[j];
    }
    offsets[t] = offset;
  }
  return 1;
}

RN_CORE_API void rn_scatter_nd_write(int word_bytes, int64_t tuples, const int64_t* offsets,
                                     int64_t slice, const void* updates, void* data) {
  if (slice == 0) return;
  const size_t bytes = (size_t)word_bytes * (size_t)slice;
  const uint8_t* in = (const uint8_t*)updates;
  uint8_t* out = (uint8_t*)data;
  int64_t t = 0;
  while (t < tuples) {
    int64_t end = t + 1; /* tuples [t, end) write one run of the data */
    while (end < tuples && offsets[end] == offsets[end - 1] + slice) ++end;
    memcpy(out + (size_t)offsets[t] * (size_t)word_bytes, in + (size_t)t * bytes,
           (size_t)(end - t) * bytes);
    t = end;
  }
}
