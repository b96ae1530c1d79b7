/* copy_kernels: the copy blocks' kernels (Concat, Slice, Pad, ScatterND), the axes and Reshape
 * shape rules, in C.
 *
 * One definition serves both executors: librnnc's copy blocks (lowering/lower_concat.cc,
 * lower_copy.cc) read their operands, plan and copy with these functions, and `rnnc compile`
 * pastes this file into every generated driver (aot/CMakeLists.txt), where the same plans and
 * copies run over the driver's buffers. Tensors are row-major and dense; elements move as words
 * of 1, 2, 4 or 8 bytes. A plan returns 0 for operands the kernel does not take (the runtime then
 * runs the node's reference kernel, which computes the result or reports the error). Nothing here
 * allocates: Pad's position tables are memory the caller hands over. */
#ifndef RNNC_LOWERING_CORE_COPY_KERNELS_H_
#define RNNC_LOWERING_CORE_COPY_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#ifndef RN_CORE_API
#define RN_CORE_API /* the AOT driver defines it as static */
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { RN_COPY_MAX_RANK = 8 };

/* Concat: each of the `outer` slabs of the output is the parts' slabs one after another. */
RN_CORE_API void rn_concat(void* destination, int64_t outer, int count, const void* const* parts,
                           const int64_t* slab_bytes);

/* Axes operands (Slice's, Pad's, Squeeze's): negative axes count from the end; 0 for one out of
 * [-rank, rank), an axis named twice, or a rank above 32. */
RN_CORE_API int rn_normalize_axes(int64_t* axes, int count, int64_t rank);

/* Reshape (opset >= 5): the output shape for `n` requested extents (0 copies the input's extent
 * unless allow_zero, one -1 takes what remains); 0 when they do not hold the input's elements. */
RN_CORE_API int rn_reshape_shape(int rank, const int64_t* input_shape, int n,
                                 const int64_t* requested, int allow_zero, int64_t* shape);

/* Slice (opset >= 10): the output is a strided window of the input. Axes of extent 1 drop out and
 * an axis whose walk spans the next one merges into it, so a window contiguous in the input is one
 * row (one memcpy). */
typedef struct rn_slice_plan {
  int rank;
  int64_t shape[RN_COPY_MAX_RANK]; /* the output's */
  int64_t base;                    /* element offset of the window's first element */
  int merged;                      /* rows are dims[merged - 1] elements */
  int64_t dims[RN_COPY_MAX_RANK], walks[RN_COPY_MAX_RANK];
  int64_t numel;
} rn_slice_plan;

/* The plan for an input of `rank` dims and n (starts, ends, axes, steps) entries, axes already
 * normalized to [0, rank) and distinct. The spec's clamping; 0 for a zero step or a rank above 8.
 */
RN_CORE_API int rn_slice_plan_make(rn_slice_plan* plan, int rank, const int64_t* input_shape, int n,
                                   const int64_t* starts, const int64_t* ends, const int64_t* axes,
                                   const int64_t* steps);
RN_CORE_API void rn_slice_copy(const rn_slice_plan* plan, int word_bytes, const void* input,
                               void* output);
/* The same strided copy for Transpose (output axis k is input axis perm[k]) and Expand (the input
 * broadcast, numpy rules, with `shape` of n entries: a broadcast axis walks 0). 0 for a perm that
 * is not a permutation of [0, rank), a shape the input does not broadcast with, or a rank above
 * 8. */
RN_CORE_API int rn_transpose_plan_make(rn_slice_plan* plan, int rank, const int64_t* input_shape,
                                       const int64_t* perm);
RN_CORE_API int rn_expand_plan_make(rn_slice_plan* plan, int input_rank,
                                    const int64_t* input_shape, int n, const int64_t* shape);

/* Pad (opset >= 11): per axis, a table maps each output position to its input position (or to the
 * fill) following the mode; a row's interior is one memcpy. */
enum { RN_PAD_CONSTANT = 0, RN_PAD_EDGE = 1, RN_PAD_REFLECT = 2, RN_PAD_WRAP = 3 };

typedef struct rn_pad_axis {
  int64_t begin;                        /* the pad before */
  int64_t interior_begin, interior_end; /* positions reading p - begin */
  const int64_t* left;  /* positions [0, interior_begin): input position, or -1 for the fill */
  const int64_t* right; /* positions [interior_end, size) */
} rn_pad_axis;

typedef struct rn_pad_plan {
  int rank, mode;
  int64_t shape[RN_COPY_MAX_RANK]; /* the output's */
  int64_t input_shape[RN_COPY_MAX_RANK];
  int64_t strides[RN_COPY_MAX_RANK];  /* the input's, in elements */
  rn_pad_axis axes[RN_COPY_MAX_RANK]; /* axes 0 .. row_axis */
  int row_axis;                       /* the innermost padded axis: rows run along it */
  int64_t unit;                       /* elements per row position (the axes after it) */
  int64_t table_entries;              /* int64 entries rn_pad_plan_tables fills */
  int64_t numel;
} rn_pad_plan;

/* The plan for an input of `rank` dims (0: a scalar) padded by before[k] / after[k] on axis k
 * (negative pads crop). 0 for pads beyond +-2^62, a negative extent, an edge / reflect / wrap pad
 * of an empty axis, or a rank above 8. Then rn_pad_plan_tables with table_entries int64 entries of
 * memory, then rn_pad_copy. */
RN_CORE_API int rn_pad_plan_make(rn_pad_plan* plan, int mode, int rank, const int64_t* input_shape,
                                 const int64_t* before, const int64_t* after);
RN_CORE_API void rn_pad_plan_tables(rn_pad_plan* plan, int64_t* tables);
/* `fill` holds the constant's bits in its low word_bytes bytes (little-endian). */
RN_CORE_API void rn_pad_copy(const rn_pad_plan* plan, int word_bytes, const void* input,
                             void* output, uint64_t fill);

/* ScatterND (reduction "none"): `tuples` index tuples of k entries each name a slice of `slice`
 * elements (the data's dims after the first k) of a data tensor of `rank` dims. Fills offsets[t]
 * with the element offset of tuple t's slice; 0 for k outside [1, rank], a rank above 8 or an
 * index outside [-d, d). Then rn_scatter_nd_write into the data (a copy of it, or the data buffer
 * itself when nothing else reads it). */
RN_CORE_API int rn_scatter_nd_offsets(int rank, const int64_t* data_shape, int k, int64_t tuples,
                                      const int64_t* indices, int64_t* offsets);
/* Writes slice t of `updates` at offsets[t], in tuple order (a later tuple naming the same slice
 * wins, as in the reference); tuples whose slices follow one another in the data are one memcpy,
 * so a frame written into a cache is one row copy per contiguous run. */
RN_CORE_API void rn_scatter_nd_write(int word_bytes, int64_t tuples, const int64_t* offsets,
                                     int64_t slice, const void* updates, void* data);

#ifdef __cplusplus
}
#endif

#endif /* RNNC_LOWERING_CORE_COPY_KERNELS_H_ */
