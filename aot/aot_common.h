/* The status codes and descriptor types every header `rnnc compile` writes shares: this text
 * (aot/aot_common.h in rnnc) is pasted into each, guarded, so that several models' headers can be
 * included in one program. */
#include <stddef.h>
#include <stdint.h>

#ifndef RNNC_AOT_COMMON_
#define RNNC_AOT_COMMON_
/* Status codes every rnnc ahead-of-time library returns. */
enum {
  RNNC_AOT_OK = 0,
  RNNC_AOT_ERROR_IO = 1,               /* the weight file cannot be opened or mapped */
  RNNC_AOT_ERROR_TRUNCATED = 2,        /* its size is not the size its header records */
  RNNC_AOT_ERROR_BAD_MAGIC = 3,        /* not an rnnc weight file */
  RNNC_AOT_ERROR_BAD_VERSION = 4,      /* a weight file format this library does not read */
  RNNC_AOT_ERROR_CHECKSUM = 5,         /* corrupted: the checksum does not match */
  RNNC_AOT_ERROR_WRONG_MODEL = 6,      /* a valid weight file of another model or layout */
  RNNC_AOT_ERROR_INVALID_ARGUMENT = 7, /* a NULL pointer, a bad dim, state dims changed */
  RNNC_AOT_ERROR_OUT_OF_MEMORY = 8,
  RNNC_AOT_ERROR_KERNEL = 9,           /* a compiled kernel reported an error */
  RNNC_AOT_ERROR_CPU = 10              /* this CPU lacks an instruction-set feature the library was
                                          compiled for (last_error names it) */
};
/* Element types: ONNX TensorProto codes. */
enum { RNNC_AOT_FLOAT32 = 1, RNNC_AOT_UINT8 = 2, RNNC_AOT_INT8 = 3, RNNC_AOT_INT32 = 6,
       RNNC_AOT_INT64 = 7, RNNC_AOT_BOOL = 9, RNNC_AOT_FLOAT64 = 11 };

typedef struct rnnc_aot_tensor_info {
  const char* name;  /* the ONNX name */
  int dtype;         /* RNNC_AOT_FLOAT32, ... */
  int rank;
  const char* type;  /* "f32[seq, batch, 40]" */
  int owned;         /* an output of data-dependent shape: the library's memory (see the header) */
} rnnc_aot_tensor_info;

/* A model's entry points and tensors, for code that handles any model (examples/aot). */
typedef struct rnnc_aot_model {
  const char* name;
  int num_dims;
  const char* const* dim_names;
  int num_inputs;
  const rnnc_aot_tensor_info* inputs;
  int num_outputs;
  const rnnc_aot_tensor_info* outputs;
  int has_state;
  /* The shape of input i (tensor = i) or output i (tensor = num_inputs + i) at `dims`; returns
   * the rank, -1 for a bad index. A data-dependent extent reads -1 (output_shape has it). */
  int (*shape)(int tensor, const int64_t* dims, int64_t* shape);
  int (*create_from_file)(const char* path, void** context);
  int (*create_from_buffer)(const void* data, size_t size, void** context);
  void (*destroy)(void* context);
  const char* (*last_error)(const void* context);
  const char* (*status_text)(int status);
  int (*run)(void* context, const int64_t* dims, const void* const* inputs, void* const* outputs);
  int (*step)(void* context, const int64_t* dims, const void* const* inputs, void* const* outputs);
  void (*reset)(void* context);
  int (*output_shape)(const void* context, int output, int64_t* shape);
} rnnc_aot_model;
#endif /* RNNC_AOT_COMMON_ */
