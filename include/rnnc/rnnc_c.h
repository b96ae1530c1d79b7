/* rnnc C API: the public C++ API (rnnc/rnnc.h) behind opaque handles, for embedding rnnc from C
 * and from other languages' foreign-function interfaces.
 *
 *   rnnc_model_options options;
 *   rnnc_model_options_init(&options);
 *   rnnc_model* model = NULL;
 *   if (rnnc_model_load("vad.onnx", &options, &model) != RNNC_OK) {
 *     fprintf(stderr, "%s\n", rnnc_last_error());
 *   }
 *   rnnc_session* session = NULL;
 *   rnnc_session_new(model, NULL, 0, &session);            one per stream
 *   for each chunk:
 *     rnnc_tensor in = {"input", RNNC_FLOAT32, shape, 2, samples};
 *     rnnc_tensor out = {"output", RNNC_FLOAT32, out_shape, 2, probabilities};
 *     rnnc_session_run(session, &in, 1, &out, 1);          state carried to the next chunk
 *   rnnc_session_free(session);
 *   rnnc_model_free(model);
 *
 * Errors: every function that can fail returns an rnnc_status; on anything but RNNC_OK,
 * rnnc_last_error() holds a message naming the argument, input or model field at fault. No C++
 * exception ever leaves this API (out of memory is RNNC_IO_ERROR, as in rnnc::ErrorKind).
 * On failure, a function's out-parameters are left unchanged, except that a failing
 * rnnc_model_load*, rnnc_session_new or rnnc_session_clone stores NULL in its handle out-parameter.
 *
 * Threading: an rnnc_model is immutable once loaded: any number of threads may query it, create
 * sessions from it and run those sessions at once. An rnnc_session is not thread-safe: use it from
 * one thread at a time (one session per stream). rnnc_last_error() is per thread.
 *
 * Ownership: handles are created by rnnc_model_load*, rnnc_session_new and rnnc_session_clone
 * and freed by the matching *_free. Strings and arrays the API returns are owned by the handle
 * they came from; the comment on each function says how long they stay valid. Inputs and output
 * buffers are caller memory, read or written in place during the call and not retained after it.
 */
#ifndef RNNC_RNNC_C_H_
#define RNNC_RNNC_C_H_

#include <stddef.h>
#include <stdint.h>

#include "rnnc/version.h"

/* Everything declared here is librnnc.so's public API (its symbols are exported). */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ----------------------------------------------------------------------- */

typedef enum rnnc_status {
  RNNC_OK = 0,
  RNNC_INVALID_MODEL = 1,   /* the model is malformed or uses an operator wrongly */
  RNNC_INVALID_INPUT = 2,   /* a run's input or output buffer, a state pair or an option value
                               is wrong: unknown name, element type, rank, dim */
  RNNC_UNSUPPORTED = 3,     /* valid ONNX that rnnc does not handle */
  RNNC_IO_ERROR = 4,        /* a file cannot be read or written, or memory ran out */
  RNNC_INTERNAL_ERROR = 5,  /* an rnnc invariant broke (a bug: please report it) */
  RNNC_INVALID_ARGUMENT = 6, /* a C-level misuse: a NULL pointer, an index out of range, an
                               enum value that does not exist */
  RNNC_OVERLOADED = 7,      /* a batcher's queue is full (rnnc_stream_submit, rnnc_stream_run) */
  RNNC_CANCELLED = 8        /* a queued chunk did not run: its batcher was freed first */
} rnnc_status;

/* The message of the most recent call on this thread that returned a status other than RNNC_OK
 * ("" when none has failed yet). Successful calls leave it unchanged. Never NULL; the string is
 * owned by rnnc and valid until the next failing call on this thread. */
const char* rnnc_last_error(void);

/* "ok", "invalid model", "invalid input", "unsupported", "I/O error", "internal error",
 * "invalid argument", "overloaded", "cancelled"; "unknown status" for other values. A static
 * string. */
const char* rnnc_status_name(rnnc_status status);

/* ---- element types --------------------------------------------------------------------------- */

/* Element types, numbered as ONNX's TensorProto.DataType (the values rnnc_tensor.element_type and
 * the model queries use). */
typedef enum rnnc_element_type {
  RNNC_FLOAT32 = 1,
  RNNC_UINT8 = 2,
  RNNC_INT8 = 3,
  RNNC_UINT16 = 4,
  RNNC_INT16 = 5,
  RNNC_INT32 = 6,
  RNNC_INT64 = 7,
  RNNC_BOOL = 9,
  RNNC_FLOAT16 = 10,
  RNNC_FLOAT64 = 11,
  RNNC_UINT32 = 12,
  RNNC_UINT64 = 13,
  RNNC_BFLOAT16 = 16
} rnnc_element_type;

/* Bytes per element of an ONNX element type; 0 for a type rnnc cannot hold (string, unknown). */
size_t rnnc_element_size(int32_t element_type);

/* ---- loading a model ------------------------------------------------------------------------- */

/* How the executor schedules a run (rnnc::Plan). */
typedef enum rnnc_plan {
  RNNC_PLAN_AUTO = 0,       /* pipeline when the model has a chain of recurrent layers and
                               threads > 1, else sequential */
  RNNC_PLAN_SEQUENTIAL = 1, /* blocks in order on the calling thread */
  RNNC_PLAN_PARALLEL = 2,   /* independent blocks at once on the model's worker threads */
  RNNC_PLAN_PIPELINE = 3    /* parallel, and chains of recurrent layers overlap over time */
} rnnc_plan;

/* Options of rnnc_model_load*; fill with rnnc_model_options_init and then change what you need.
 * Every pointer is read during the load call only. */
typedef struct rnnc_model_options {
  int32_t threads; /* worker threads of the model's executor, >= 1 (default 1) */
  rnnc_plan plan;  /* default RNNC_PLAN_AUTO */
  /* Compiled-kernel cache directory; NULL or "" = $RNNC_CACHE_DIR, else a default that also works
   * for a service user without a home directory (docs/install.md, "Kernel cache"). */
  const char* cache_dir;
  /* The CPU features kernels may use, as ModelOptions::target: NULL or "" = $RNNC_TARGET, else
   * "host"; "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "x86-64-v4-vnni", "zen4",
   * "sapphirerapids". */
  const char* target;
  /* Symbolic dims fixed before compiling ("batch" -> 1): n_fixed_dims names and values. */
  const char* const* fixed_dim_names;
  const int64_t* fixed_dim_values;
  size_t n_fixed_dims;
  /* int64 inputs fixed to constants (Silero's "sr" -> {16000}): input i is named
   * fixed_input_names[i] and has fixed_input_lengths[i] values at fixed_input_values[i]. */
  const char* const* fixed_input_names;
  const int64_t* const* fixed_input_values;
  const size_t* fixed_input_lengths;
  size_t n_fixed_inputs;
  /* Nonzero (default 1): expose the state of recurrent nodes that start from zeros, so a
   * session carries it from run to run (see rnnc_model_state_count). */
  int32_t expose_recurrent_state;
  /* Nonzero: run every block on the reference evaluator (debugging; default 0). */
  int32_t reference;
} rnnc_model_options;

/* Fills `options` with the defaults above. Does nothing when `options` is NULL. */
void rnnc_model_options_init(rnnc_model_options* options);

/* An ONNX model compiled for this machine. Opaque; shareable across threads. */
typedef struct rnnc_model rnnc_model;

/* Loads and compiles the ONNX file at `path` (NULL `options`: the defaults). On success stores a
 * new model in *model, to be freed with rnnc_model_free; on failure stores NULL. Compiling may
 * take seconds on a cold kernel cache. */
rnnc_status rnnc_model_load(const char* path, const rnnc_model_options* options,
                            rnnc_model** model);

/* As rnnc_model_load, from `size` bytes of a serialized ONNX ModelProto at `data` (read during
 * the call only). Models with external data must be loaded from a file. */
rnnc_status rnnc_model_load_bytes(const void* data, size_t size, const rnnc_model_options* options,
                                  rnnc_model** model);

/* Frees a model. Sessions created from it keep what they need and stay usable, but every string
 * the model's queries returned is invalid afterwards. NULL is ignored. */
void rnnc_model_free(rnnc_model* model);

/* ---- what a model takes and produces --------------------------------------------------------- */

/* The model's inputs and outputs in graph order. Inputs include the state inputs a session feeds
 * itself (see rnnc_model_state_pair); a run may omit those. Indices run from 0 to count - 1; an
 * index out of range is RNNC_INVALID_ARGUMENT. Every string returned is owned by the model and
 * valid until rnnc_model_free. */
rnnc_status rnnc_model_input_count(const rnnc_model* model, size_t* count);
rnnc_status rnnc_model_output_count(const rnnc_model* model, size_t* count);

rnnc_status rnnc_model_input_name(const rnnc_model* model, size_t index, const char** name);
rnnc_status rnnc_model_output_name(const rnnc_model* model, size_t index, const char** name);

/* The element type, ONNX numbering (rnnc_element_type). */
rnnc_status rnnc_model_input_element_type(const rnnc_model* model, size_t index,
                                          int32_t* element_type);
rnnc_status rnnc_model_output_element_type(const rnnc_model* model, size_t index,
                                           int32_t* element_type);

/* The rank. A tensor whose shape the model leaves unknown reports rank 0, as a scalar does. */
rnnc_status rnnc_model_input_rank(const rnnc_model* model, size_t index, size_t* rank);
rnnc_status rnnc_model_output_rank(const rnnc_model* model, size_t index, size_t* rank);

/* Dim `dim` (0 <= dim < rank): its size, or -1 when the size is symbolic ("seq") or unknown and
 * each run decides it. */
rnnc_status rnnc_model_input_dim(const rnnc_model* model, size_t index, size_t dim, int64_t* size);
rnnc_status rnnc_model_output_dim(const rnnc_model* model, size_t index, size_t dim, int64_t* size);

/* Dim `dim` as text: its symbol ("seq", "batch"), an expression of symbols, "?" when unknown, or
 * its size in decimal ("40"). */
rnnc_status rnnc_model_input_dim_name(const rnnc_model* model, size_t index, size_t dim,
                                      const char** name);
rnnc_status rnnc_model_output_dim_name(const rnnc_model* model, size_t index, size_t dim,
                                       const char** name);

/* Streaming state the model exposed (rnnc::CompiledModel::recurrent_state): pair `index` says that
 * output `*state_output`'s value after a run is input `*state_input`'s value at the next run of a
 * session ("lstm.Y_h" -> "lstm.initial_h"). Pairs given to rnnc_session_new are not listed. */
rnnc_status rnnc_model_state_count(const rnnc_model* model, size_t* count);
rnnc_status rnnc_model_state_pair(const rnnc_model* model, size_t index, const char** state_output,
                                  const char** state_input);

/* ---- sessions and runs ----------------------------------------------------------------------- */

/* A stream of runs over one model, carrying recurrent state from one run to the next. Opaque;
 * one thread at a time. */
typedef struct rnnc_session rnnc_session;

/* A state pair of the model's own (Silero's {"stateN", "state"}): after each run, output `output`
 * is fed to input `input` at the next run. */
typedef struct rnnc_state_pair {
  const char* output;
  const char* input;
} rnnc_state_pair;

/* A dense row-major tensor in caller memory (or, from rnnc_session_run_views, session memory).
 * `shape` has `rank` entries; `data` must be aligned for the element type. Inputs are only read,
 * never written, despite the non-const `data`. */
typedef struct rnnc_tensor {
  const char* name;
  int32_t element_type; /* ONNX numbering (rnnc_element_type) */
  const int64_t* shape;
  size_t rank;
  void* data;
} rnnc_tensor;

/* A new session of `model` with zero state. `state_pairs` (n_state_pairs entries, may be NULL when
 * 0) adds the model's own state tensors to the exposed recurrent state; their strings are read
 * during the call only. On success stores a new session in *session, to be freed with
 * rnnc_session_free; on failure stores NULL. The session keeps the model's compiled code alive,
 * so it may outlive rnnc_model_free(model). */
rnnc_status rnnc_session_new(const rnnc_model* model, const rnnc_state_pair* state_pairs,
                             size_t n_state_pairs, rnnc_session** session);

/* Frees a session and every view its runs returned. NULL is ignored. */
void rnnc_session_free(rnnc_session* session);

/* One run writing into caller buffers. `inputs` has n_inputs entries (state inputs may be left
 * out: the session feeds the carried state, zeros at first; giving one overrides it for this
 * run). `outputs` has n_outputs entries (may be 0 and NULL), each naming a model output and
 * giving a buffer of the element type and the exact shape this run produces; outputs not named
 * are computed but not returned. Input and output memory is only used during the call.
 * Arguments and inputs are checked before anything runs. An output buffer whose shape does not
 * match the run's output fails with RNNC_INVALID_INPUT after the run, and the state has then
 * already moved on (call rnnc_session_reset to start the stream over). */
rnnc_status rnnc_session_run(rnnc_session* session, const rnnc_tensor* inputs, size_t n_inputs,
                             rnnc_tensor* outputs, size_t n_outputs);

/* One run with outputs in session memory: stores in *outputs an array of *n_outputs views, one per
 * model output in graph order (names, element types, shapes and data owned by the session). The
 * views and everything they point to are valid until the next run, reset or free of this session;
 * copy what you keep. Inputs as for rnnc_session_run. */
rnnc_status rnnc_session_run_views(rnnc_session* session, const rnnc_tensor* inputs,
                                   size_t n_inputs, const rnnc_tensor** outputs, size_t* n_outputs);

/* Zeroes the carried state, as a new session has it. Invalidates the views of the last run. */
rnnc_status rnnc_session_reset(rnnc_session* session);

/* A new, independent session of the same model and state pairs, with a copy of `session`'s
 * current state (fork a stream). On success stores it in *clone, to be freed with
 * rnnc_session_free; on failure stores NULL. */
rnnc_status rnnc_session_clone(const rnnc_session* session, rnnc_session** clone);

/* ---- cross-stream batching (rnnc::StreamBatcher) --------------------------------------------- */

/* A batcher runs the chunks of many streams of one model that are ready at the same time as one
 * batched run, each stream carrying its own state as a session does (docs/runtime.md, "Stream
 * batcher"). Opaque; a batcher and its streams may be used from any number of threads at once. */
typedef struct rnnc_batcher rnnc_batcher;
typedef struct rnnc_stream rnnc_stream;

/* Options of rnnc_batcher_new; fill with rnnc_batcher_options_init. Pointers are read during
 * rnnc_batcher_new only. */
typedef struct rnnc_batcher_options {
  int32_t max_batch;      /* chunks per batched run, >= 1 (default 32) */
  int64_t max_wait_us;    /* the longest the oldest ready chunk waits for others (default 2000) */
  size_t queue_capacity;  /* chunks queued over all streams before RNNC_OVERLOADED (default 1024) */
  int32_t threads;        /* batched runs at once, each on a batcher thread (default 1) */
  /* The model's own state pairs, as rnnc_session_new (may be NULL when 0). */
  const rnnc_state_pair* state_pairs;
  size_t n_state_pairs;
  /* Explicit batch axes: tensor batch_axis_names[i] (an input or output) has its batch axis at
   * batch_axis_values[i], or none for -1. Others take the axis derived from the dim symbols. */
  const char* const* batch_axis_names;
  const int32_t* batch_axis_values;
  size_t n_batch_axes;
} rnnc_batcher_options;

/* Fills `options` with the defaults above. Does nothing when `options` is NULL. */
void rnnc_batcher_options_init(rnnc_batcher_options* options);

/* A new batcher over `model` (NULL `options`: the defaults). The batcher keeps the model's
 * compiled code alive. On failure stores NULL in *batcher. */
rnnc_status rnnc_batcher_new(const rnnc_model* model, const rnnc_batcher_options* options,
                             rnnc_batcher** batcher);

/* Waits for the batched runs in progress; chunks still queued complete with RNNC_CANCELLED.
 * Streams must be closed before or after (rnnc_stream_close); after it their submits fail with
 * RNNC_INVALID_INPUT. NULL is ignored. */
void rnnc_batcher_free(rnnc_batcher* batcher);

/* Opens a stream with zero state. On failure stores NULL in *stream. */
rnnc_status rnnc_stream_open(rnnc_batcher* batcher, rnnc_stream** stream);

/* Blocking: runs one chunk of the stream (inputs as rnnc_session_run; they are copied before the
 * call returns or blocks) and writes the named outputs into caller buffers, each of the exact
 * shape this stream's rows produce. A chunk that fails its checks (RNNC_INVALID_INPUT) or does
 * not fit the queue (RNNC_OVERLOADED) is not queued and leaves the stream's state unchanged. */
rnnc_status rnnc_stream_run(rnnc_stream* stream, const rnnc_tensor* inputs, size_t n_inputs,
                            rnnc_tensor* outputs, size_t n_outputs);

/* Called once per submitted chunk, on a batcher thread: `status` RNNC_OK with every model output
 * (n_outputs views, valid during the call only), or an error status with `error` its message
 * (outputs NULL). Keep it short; it may submit again. */
typedef void (*rnnc_chunk_callback)(void* user_data, rnnc_status status, const rnnc_tensor* outputs,
                                    size_t n_outputs, const char* error);

/* Queues a chunk and returns at once (inputs copied during the call). On RNNC_OK `done` will be
 * called exactly once; on any other status it is not called and nothing was queued. */
rnnc_status rnnc_stream_submit(rnnc_stream* stream, const rnnc_tensor* inputs, size_t n_inputs,
                               rnnc_chunk_callback done, void* user_data);

/* Zeroes the state for the chunks submitted after this call. */
rnnc_status rnnc_stream_reset(rnnc_stream* stream);

/* Closes and frees a stream: chunks already submitted still run and their callbacks are called;
 * the handle is invalid after the call. NULL is ignored. */
void rnnc_stream_close(rnnc_stream* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#pragma GCC visibility pop

#endif /* RNNC_RNNC_C_H_ */
