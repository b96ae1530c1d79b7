/* The C API (rnnc/rnnc_c.h), compiled as C: the demo model's description, run_views against runs
 * into caller buffers (bitwise), recurrent state carried from run to run and cleared by reset,
 * clone, sessions of one model on several threads, and every error path by its status and its
 * exact message.
 *
 * The demo model (models/demo/lstm_demo.onnx) is features f32[seq, batch, 40] -> 2-layer LSTM
 * (hidden 128) -> Linear -> LogSoftmax -> log_probs f32[seq, batch, 32]; rnnc exposes both
 * layers' h and c as state. Comparisons between runs are bitwise: the same kernels do the same
 * arithmetic per element (tests/runtime/api_test.cc).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnnc/rnnc_c.h"

#define kSeq 10
#define kBatch 1
#define kFeatures 40
#define kClasses 32
#define kOutputCount (kSeq * kBatch * kClasses)

static const char* const kModelPath = RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx";
static int failures = 0;

#define EXPECT(cond, ...)                                                 \
  do {                                                                    \
    if (!(cond)) {                                                        \
      ++failures;                                                         \
      fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                       \
      fputc('\n', stderr);                                                \
    }                                                                     \
  } while (0)

#define EXPECT_OK(call)                                                                \
  do {                                                                                 \
    rnnc_status status_ = (call);                                                      \
    EXPECT(status_ == RNNC_OK, "%s returned %s: %s", #call, rnnc_status_name(status_), \
           rnnc_last_error());                                                         \
  } while (0)

/* The call fails with `want` and exactly the message `message`. */
#define EXPECT_ERROR(call, want, message) expect_error((call), (want), (message), #call, __LINE__)

static void expect_error(rnnc_status got, rnnc_status want, const char* message, const char* call,
                         int line) {
  const char* actual = rnnc_last_error();
  if (got != want) {
    ++failures;
    fprintf(stderr, "%s:%d: %s returned %s, expected %s (message: %s)\n", __FILE__, line, call,
            rnnc_status_name(got), rnnc_status_name(want), actual);
    return;
  }
  if (strcmp(actual, message) != 0) {
    ++failures;
    fprintf(stderr, "%s:%d: %s: message\n  \"%s\"\nexpected\n  \"%s\"\n", __FILE__, line, call,
            actual, message);
  }
}

/* Deterministic features for `frames` frames starting at frame `first`. */
static void make_features(float* features, int first, int frames) {
  for (int t = 0; t < frames; ++t) {
    for (int f = 0; f < kFeatures; ++f) {
      const int frame = first + t;
      features[t * kFeatures + f] =
          (float)(0.8 * sin(0.37 * frame + 0.21 * f) + 0.1 * cos(1.3 * f));
    }
  }
}

static const int64_t kInputShape[3] = {kSeq, kBatch, kFeatures};
static const int64_t kOutputShape[3] = {kSeq, kBatch, kClasses};

static rnnc_tensor features_tensor(float* features) {
  rnnc_tensor tensor = {"features", RNNC_FLOAT32, kInputShape, 3, features};
  return tensor;
}

static rnnc_tensor log_probs_tensor(float* log_probs) {
  rnnc_tensor tensor = {"log_probs", RNNC_FLOAT32, kOutputShape, 3, log_probs};
  return tensor;
}

static rnnc_model* load_demo(void) {
  rnnc_model_options options;
  rnnc_model_options_init(&options);
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  rnnc_model* model = NULL;
  EXPECT_OK(rnnc_model_load(kModelPath, &options, &model));
  return model;
}

/* run_views, copying log_probs (output 0) into `log_probs`. */
static int run_views_copy(rnnc_session* session, float* features, float* log_probs) {
  rnnc_tensor input = features_tensor(features);
  const rnnc_tensor* outputs = NULL;
  size_t n_outputs = 0;
  rnnc_status status = rnnc_session_run_views(session, &input, 1, &outputs, &n_outputs);
  EXPECT(status == RNNC_OK, "run_views: %s", rnnc_last_error());
  if (status != RNNC_OK) return 0;
  EXPECT(n_outputs == 5, "run_views gave %zu outputs", n_outputs);
  EXPECT(strcmp(outputs[0].name, "log_probs") == 0, "output 0 is '%s'", outputs[0].name);
  EXPECT(outputs[0].element_type == RNNC_FLOAT32, "element type %d", outputs[0].element_type);
  EXPECT(outputs[0].rank == 3 && memcmp(outputs[0].shape, kOutputShape, sizeof kOutputShape) == 0,
         "log_probs view has rank %zu", outputs[0].rank);
  memcpy(log_probs, outputs[0].data, sizeof(float) * kOutputCount);
  return 1;
}

static int same_bits(const float* a, const float* b) {
  return memcmp(a, b, sizeof(float) * kOutputCount) == 0;
}

/* ---- the model's description ----------------------------------------------------------------- */

static void test_describes_inputs_outputs_and_state(const rnnc_model* model) {
  size_t count = 0, rank = 0;
  const char* name = NULL;
  int32_t type = 0;
  int64_t size = 0;
  EXPECT_OK(rnnc_model_input_count(model, &count));
  EXPECT(count == 5, "%zu inputs (features and both layers' h and c)", count);
  EXPECT_OK(rnnc_model_input_name(model, 0, &name));
  EXPECT(strcmp(name, "features") == 0, "input 0 is '%s'", name);
  EXPECT_OK(rnnc_model_input_element_type(model, 0, &type));
  EXPECT(type == RNNC_FLOAT32, "input 0 element type %d", type);
  EXPECT_OK(rnnc_model_input_rank(model, 0, &rank));
  EXPECT(rank == 3, "input 0 rank %zu", rank);
  EXPECT_OK(rnnc_model_input_dim(model, 0, 0, &size));
  EXPECT(size == -1, "dim 0 (seq) is %lld", (long long)size);
  EXPECT_OK(rnnc_model_input_dim_name(model, 0, 0, &name));
  EXPECT(strcmp(name, "seq") == 0, "dim 0 is named '%s'", name);
  EXPECT_OK(rnnc_model_input_dim_name(model, 0, 1, &name));
  EXPECT(strcmp(name, "batch") == 0, "dim 1 is named '%s'", name);
  EXPECT_OK(rnnc_model_input_dim(model, 0, 2, &size));
  EXPECT(size == kFeatures, "dim 2 is %lld", (long long)size);
  EXPECT_OK(rnnc_model_input_dim_name(model, 0, 2, &name));
  EXPECT(strcmp(name, "40") == 0, "dim 2 is named '%s'", name);
  EXPECT_OK(rnnc_model_input_name(model, 1, &name));
  EXPECT(strcmp(name, "/lstm/LSTM.initial_h") == 0, "input 1 is '%s'", name);

  EXPECT_OK(rnnc_model_output_count(model, &count));
  EXPECT(count == 5, "%zu outputs (log_probs and both layers' h and c)", count);
  EXPECT_OK(rnnc_model_output_name(model, 0, &name));
  EXPECT(strcmp(name, "log_probs") == 0, "output 0 is '%s'", name);
  EXPECT_OK(rnnc_model_output_element_type(model, 0, &type));
  EXPECT(type == RNNC_FLOAT32, "output 0 element type %d", type);
  EXPECT_OK(rnnc_model_output_rank(model, 0, &rank));
  EXPECT(rank == 3, "output 0 rank %zu", rank);
  EXPECT_OK(rnnc_model_output_dim(model, 0, 2, &size));
  EXPECT(size == kClasses, "output dim 2 is %lld", (long long)size);
  EXPECT_OK(rnnc_model_output_dim_name(model, 0, 1, &name));
  EXPECT(strcmp(name, "batch") == 0, "output dim 1 is named '%s'", name);

  const char* state_output = NULL;
  const char* state_input = NULL;
  EXPECT_OK(rnnc_model_state_count(model, &count));
  EXPECT(count == 4, "%zu state pairs", count);
  EXPECT_OK(rnnc_model_state_pair(model, 0, &state_output, &state_input));
  EXPECT(strcmp(state_output, "/lstm/LSTM_output_1") == 0, "state output 0 is '%s'", state_output);
  EXPECT(strcmp(state_input, "/lstm/LSTM.initial_h") == 0, "state input 0 is '%s'", state_input);

  EXPECT(rnnc_element_size(RNNC_FLOAT32) == 4, "float32 size %zu", rnnc_element_size(RNNC_FLOAT32));
  EXPECT(rnnc_element_size(RNNC_INT64) == 8, "int64 size %zu", rnnc_element_size(RNNC_INT64));
  EXPECT(rnnc_element_size(8) == 0, "string size %zu", rnnc_element_size(8));
}

/* ---- runs ------------------------------------------------------------------------------------ */

static void test_views_and_caller_buffers_agree(const rnnc_model* model) {
  static float features[kSeq * kFeatures], from_views[kOutputCount], from_buffer[kOutputCount];
  make_features(features, 0, kSeq);
  rnnc_session* viewer = NULL;
  rnnc_session* writer = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &viewer));
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &writer));
  for (int run = 0; run < 3; ++run) { /* the first run, and runs from carried state */
    run_views_copy(viewer, features, from_views);
    for (int i = 0; i < kOutputCount; ++i) from_buffer[i] = -1.0f;
    rnnc_tensor input = features_tensor(features);
    rnnc_tensor output = log_probs_tensor(from_buffer);
    EXPECT_OK(rnnc_session_run(writer, &input, 1, &output, 1));
    EXPECT(same_bits(from_views, from_buffer), "run %d: run_views and run differ", run);
  }
  /* log_probs are log-probabilities: each frame's exponentials sum to 1. */
  double sum = 0;
  for (int c = 0; c < kClasses; ++c) sum += exp(from_buffer[c]);
  EXPECT(fabs(sum - 1.0) < 1e-4, "frame 0's probabilities sum to %f", sum);
  rnnc_session_free(viewer);
  rnnc_session_free(writer);
}

static void test_state_is_carried_and_reset_repeats(const rnnc_model* model) {
  static float features[kSeq * kFeatures], first[kOutputCount], second[kOutputCount],
      after_reset[kOutputCount];
  make_features(features, 0, kSeq);
  rnnc_session* session = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  run_views_copy(session, features, first);
  run_views_copy(session, features, second);
  EXPECT(!same_bits(first, second),
         "the second run of the same chunk should start from the "
         "first run's state");
  EXPECT_OK(rnnc_session_reset(session));
  run_views_copy(session, features, after_reset);
  EXPECT(same_bits(first, after_reset), "after reset the chunk should give the first run's output");
  rnnc_session_free(session);
}

static void test_clone_copies_the_state(const rnnc_model* model) {
  static float a[kSeq * kFeatures], b[kSeq * kFeatures], from_original[kOutputCount],
      from_clone[kOutputCount], from_fresh[kOutputCount];
  make_features(a, 0, kSeq);
  make_features(b, kSeq, kSeq);
  rnnc_session* original = NULL;
  rnnc_session* clone = NULL;
  rnnc_session* fresh = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &original));
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &fresh));
  run_views_copy(original, a, from_original);
  EXPECT_OK(rnnc_session_clone(original, &clone));
  run_views_copy(original, b, from_original);
  run_views_copy(clone, b, from_clone);
  run_views_copy(fresh, b, from_fresh);
  EXPECT(same_bits(from_original, from_clone), "the clone should continue from the same state");
  EXPECT(!same_bits(from_clone, from_fresh), "the clone should not start from zero state");
  rnnc_session_free(clone); /* freeing the clone leaves the original usable */
  run_views_copy(original, b, from_original);
  rnnc_session_free(original);
  rnnc_session_free(fresh);
}

/* A session outlives rnnc_model_free of its model. */
static void test_session_outlives_its_model(void) {
  static float features[kSeq * kFeatures], before[kOutputCount], after[kOutputCount];
  make_features(features, 0, kSeq);
  rnnc_model* model = load_demo();
  rnnc_session* session = NULL;
  rnnc_session* witness = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &witness));
  run_views_copy(witness, features, before);
  rnnc_model_free(model);
  run_views_copy(session, features, after);
  EXPECT(same_bits(before, after), "a session run after rnnc_model_free differs");
  rnnc_session_free(session);
  rnnc_session_free(witness);
}

/* ---- sessions of one model on several threads ------------------------------------------------ */

typedef struct {
  const rnnc_model* model;
  float result[kOutputCount]; /* log_probs of the third run */
  int ok;
  char message[256]; /* this thread's last error after its own failing call */
} ThreadRun;

static void* run_stream(void* argument) {
  ThreadRun* run = (ThreadRun*)argument;
  float features[kSeq * kFeatures];
  make_features(features, 0, kSeq);
  rnnc_session* session = NULL;
  run->ok = rnnc_session_new(run->model, NULL, 0, &session) == RNNC_OK;
  for (int k = 0; run->ok && k < 3; ++k) {
    rnnc_tensor input = features_tensor(features);
    rnnc_tensor output = log_probs_tensor(run->result);
    run->ok = rnnc_session_run(session, &input, 1, &output, 1) == RNNC_OK;
  }
  rnnc_session_reset(NULL); /* fails on this thread only */
  snprintf(run->message, sizeof run->message, "%s", rnnc_last_error());
  rnnc_session_free(session);
  return NULL;
}

static void test_sessions_share_a_model_across_threads(const rnnc_model* model) {
  static float features[kSeq * kFeatures], expected[kOutputCount];
  make_features(features, 0, kSeq);
  rnnc_session* session = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  for (int k = 0; k < 3; ++k) run_views_copy(session, features, expected);
  rnnc_session_free(session);

  /* This thread's message must survive the other threads' failures. */
  EXPECT_ERROR(rnnc_model_input_count(NULL, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_model_input_count: model is NULL");
  static ThreadRun runs[2];
  pthread_t threads[2];
  for (int t = 0; t < 2; ++t) {
    runs[t].model = model;
    EXPECT(pthread_create(&threads[t], NULL, run_stream, &runs[t]) == 0, "pthread_create %d", t);
  }
  for (int t = 0; t < 2; ++t) {
    pthread_join(threads[t], NULL);
    EXPECT(runs[t].ok, "thread %d failed: %s", t, runs[t].message);
    EXPECT(same_bits(runs[t].result, expected), "thread %d's stream differs", t);
    EXPECT(strcmp(runs[t].message, "rnnc_session_reset: session is NULL") == 0,
           "thread %d's last error is '%s'", t, runs[t].message);
  }
  EXPECT(strcmp(rnnc_last_error(), "rnnc_model_input_count: model is NULL") == 0,
         "this thread's last error changed to '%s'", rnnc_last_error());
}

/* ---- errors ---------------------------------------------------------------------------------- */

static void test_run_errors_name_the_input(const rnnc_model* model) {
  static float features[kSeq * kFeatures], log_probs[kOutputCount];
  static int32_t ints[kSeq * kFeatures];
  make_features(features, 0, kSeq);
  rnnc_session* session = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  rnnc_tensor input = features_tensor(features);
  rnnc_tensor output = log_probs_tensor(log_probs);

  rnnc_tensor misnamed = input;
  misnamed.name = "feats";
  EXPECT_ERROR(rnnc_session_run(session, &misnamed, 1, &output, 1), RNNC_INVALID_INPUT,
               "'feats' is not an input of the model (inputs: 'features', '/lstm/LSTM.initial_h', "
               "'/lstm/LSTM.initial_c', '/lstm/LSTM_1.initial_h', '/lstm/LSTM_1.initial_c')");
  EXPECT_ERROR(rnnc_session_run(session, NULL, 0, &output, 1), RNNC_INVALID_INPUT,
               "input 'features' (f32[seq, batch, 40]) is missing");

  rnnc_tensor wrong_type = input;
  wrong_type.element_type = RNNC_INT32;
  wrong_type.data = ints;
  EXPECT_ERROR(rnnc_session_run(session, &wrong_type, 1, &output, 1), RNNC_INVALID_INPUT,
               "input 'features' has element type int32, expected float (f32[seq, batch, 40])");
  wrong_type.element_type = 99;
  EXPECT_ERROR(rnnc_session_run(session, &wrong_type, 1, &output, 1), RNNC_INVALID_INPUT,
               "input 'features' has element type unknown, expected float (f32[seq, batch, 40])");

  const int64_t flat[2] = {kSeq, kFeatures};
  rnnc_tensor wrong_rank = input;
  wrong_rank.shape = flat;
  wrong_rank.rank = 2;
  EXPECT_ERROR(
      rnnc_session_run_views(session, &wrong_rank, 1, &(const rnnc_tensor*){NULL}, &(size_t){0}),
      RNNC_INVALID_INPUT,
      "input 'features' has rank 2 (shape [10, 40]), expected 3 (f32[seq, batch, 40])");

  const int64_t narrow[3] = {kSeq, kBatch, 20};
  rnnc_tensor wrong_dim = input;
  wrong_dim.shape = narrow;
  EXPECT_ERROR(rnnc_session_run(session, &wrong_dim, 1, &output, 1), RNNC_INVALID_INPUT,
               "input 'features': dim 2 is 20, expected 40 (f32[seq, batch, 40])");

  rnnc_tensor no_data = input;
  no_data.data = NULL;
  EXPECT_ERROR(rnnc_session_run(session, &no_data, 1, &output, 1), RNNC_INVALID_INPUT,
               "input 'features' has no data (null pointer)");

  rnnc_tensor unknown_output = output;
  unknown_output.name = "logits";
  EXPECT_ERROR(rnnc_session_run(session, &input, 1, &unknown_output, 1), RNNC_INVALID_INPUT,
               "'logits' is not an output of the model (outputs: 'log_probs', "
               "'/lstm/LSTM_output_1', '/lstm/LSTM_output_2', '/lstm/LSTM_1_output_1', "
               "'/lstm/LSTM_1_output_2')");
  rnnc_tensor double_output = output;
  double_output.element_type = RNNC_FLOAT64;
  EXPECT_ERROR(rnnc_session_run(session, &input, 1, &double_output, 1), RNNC_INVALID_INPUT,
               "output 'log_probs' buffer has element type double, the model produces float "
               "(log_probs: float[seq, batch, 32])");
  const int64_t short_shape[3] = {kSeq - 1, kBatch, kClasses};
  rnnc_tensor short_output = output;
  short_output.shape = short_shape;
  EXPECT_ERROR(rnnc_session_run(session, &input, 1, &short_output, 1), RNNC_INVALID_INPUT,
               "output 'log_probs' has shape [10, 1, 32] at this run, but the buffer given has "
               "shape [9, 1, 32]");

  /* Carried state from a batch-1 run does not fit a batch-2 run; reset clears it. */
  static float two_streams[kSeq * 2 * kFeatures];
  const int64_t batch2[3] = {kSeq, 2, kFeatures};
  rnnc_tensor batch2_input = {"features", RNNC_FLOAT32, batch2, 3, two_streams};
  const rnnc_tensor* views = NULL;
  size_t n_views = 0;
  EXPECT_ERROR(rnnc_session_run_views(session, &batch2_input, 1, &views, &n_views),
               RNNC_INVALID_INPUT,
               "carried state '/lstm/LSTM.initial_h': dim 1 ('batch') is 1 but input 'features' "
               "dim 1 set 'batch' = 2");
  EXPECT_OK(rnnc_session_reset(session));
  EXPECT_OK(rnnc_session_run_views(session, &batch2_input, 1, &views, &n_views));
  EXPECT(n_views == 5 && views[0].shape[1] == 2, "batch-2 run gave %zu views", n_views);
  rnnc_session_free(session);
}

static void test_null_arguments_are_invalid_arguments(const rnnc_model* model) {
  static float features[kSeq * kFeatures], log_probs[kOutputCount];
  rnnc_session* session = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  rnnc_tensor input = features_tensor(features);
  rnnc_tensor output = log_probs_tensor(log_probs);
  const rnnc_tensor* views = NULL;
  size_t n_views = 0, count = 0;
  const char* name = NULL;
  int64_t size = 0;

  EXPECT_ERROR(rnnc_session_run(NULL, &input, 1, &output, 1), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run: session is NULL");
  EXPECT_ERROR(rnnc_session_run(session, NULL, 1, &output, 1), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run: inputs is NULL but n_inputs = 1");
  EXPECT_ERROR(rnnc_session_run(session, &input, 1, NULL, 2), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run: outputs is NULL but n_outputs = 2");
  rnnc_tensor unnamed = input;
  unnamed.name = NULL;
  EXPECT_ERROR(rnnc_session_run(session, &unnamed, 1, &output, 1), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run: inputs[0].name is NULL");
  rnnc_tensor shapeless = output;
  shapeless.shape = NULL;
  EXPECT_ERROR(rnnc_session_run(session, &input, 1, &shapeless, 1), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run: outputs[0] ('log_probs') has rank 3 but its shape is NULL");
  EXPECT_ERROR(rnnc_session_run_views(session, &input, 1, NULL, &n_views), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run_views: outputs is NULL");
  EXPECT_ERROR(rnnc_session_run_views(session, &input, 1, &views, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_session_run_views: n_outputs is NULL");
  EXPECT_ERROR(rnnc_session_reset(NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_session_reset: session is NULL");

  rnnc_session* clone = (rnnc_session*)&count; /* overwritten with NULL on failure */
  EXPECT_ERROR(rnnc_session_clone(NULL, &clone), RNNC_INVALID_ARGUMENT,
               "rnnc_session_clone: session is NULL");
  EXPECT(clone == NULL, "a failed clone should store NULL");
  EXPECT_ERROR(rnnc_session_clone(session, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_session_clone: clone is NULL");

  rnnc_session* created = (rnnc_session*)&count;
  EXPECT_ERROR(rnnc_session_new(NULL, NULL, 0, &created), RNNC_INVALID_ARGUMENT,
               "rnnc_session_new: model is NULL");
  EXPECT(created == NULL, "a failed rnnc_session_new should store NULL");
  EXPECT_ERROR(rnnc_session_new(model, NULL, 0, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_session_new: session is NULL");
  EXPECT_ERROR(rnnc_session_new(model, NULL, 1, &created), RNNC_INVALID_ARGUMENT,
               "rnnc_session_new: state_pairs is NULL but n_state_pairs = 1");
  rnnc_state_pair half_pair = {"log_probs", NULL};
  EXPECT_ERROR(rnnc_session_new(model, &half_pair, 1, &created), RNNC_INVALID_ARGUMENT,
               "rnnc_session_new: state_pairs[0].input is NULL");

  EXPECT_ERROR(rnnc_model_input_count(model, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_model_input_count: count is NULL");
  EXPECT_ERROR(rnnc_model_output_name(NULL, 0, &name), RNNC_INVALID_ARGUMENT,
               "rnnc_model_output_name: model is NULL");
  EXPECT_ERROR(rnnc_model_input_name(model, 5, &name), RNNC_INVALID_ARGUMENT,
               "rnnc_model_input_name: input index 5 is out of range (the model has 5 inputs)");
  EXPECT_ERROR(rnnc_model_output_dim(model, 0, 3, &size), RNNC_INVALID_ARGUMENT,
               "rnnc_model_output_dim: dim 3 is out of range (output 'log_probs' has rank 3)");
  EXPECT_ERROR(rnnc_model_state_pair(model, 4, &name, &name), RNNC_INVALID_ARGUMENT,
               "rnnc_model_state_pair: state pair index 4 is out of range (the model has 4 state "
               "pairs)");

  /* Freeing NULL is a no-op. */
  rnnc_session_free(NULL);
  rnnc_model_free(NULL);
  rnnc_session_free(session);
}

static void test_state_pair_errors_name_the_pair(const rnnc_model* model) {
  rnnc_session* session = NULL;
  rnnc_state_pair not_an_output = {"nope", "features"};
  EXPECT_ERROR(rnnc_session_new(model, &not_an_output, 1, &session), RNNC_INVALID_INPUT,
               "state pair (nope -> features): 'nope' is not an output of the model");
  rnnc_state_pair already_fed = {"log_probs", "/lstm/LSTM.initial_h"};
  EXPECT_ERROR(rnnc_session_new(model, &already_fed, 1, &session), RNNC_INVALID_INPUT,
               "state pair (log_probs -> /lstm/LSTM.initial_h): '/lstm/LSTM.initial_h' is already "
               "fed by another state output");
  EXPECT(session == NULL, "a failed rnnc_session_new should store NULL");
}

static void test_load_errors(void) {
  rnnc_model_options options;
  rnnc_model_options_init(&options);
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  rnnc_model* model = (rnnc_model*)&options; /* overwritten with NULL on failure */

  EXPECT_ERROR(rnnc_model_load("/nonexistent/model.onnx", &options, &model), RNNC_IO_ERROR,
               "cannot open model file '/nonexistent/model.onnx'");
  EXPECT(model == NULL, "a failed load should store NULL");

  static const char garbage[] = "this is not an ONNX model";
  EXPECT_ERROR(rnnc_model_load_bytes(garbage, sizeof garbage - 1, &options, &model),
               RNNC_INVALID_MODEL,
               "model is not a valid ONNX protobuf (truncated or corrupt, 25 bytes)");
  EXPECT_ERROR(rnnc_model_load(NULL, &options, &model), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load: path is NULL");
  EXPECT_ERROR(rnnc_model_load(kModelPath, &options, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load: model is NULL");
  EXPECT_ERROR(rnnc_model_load_bytes(NULL, 10, &options, &model), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load_bytes: data is NULL");

  rnnc_model_options bad = options;
  bad.threads = 0;
  EXPECT_ERROR(rnnc_model_load(kModelPath, &bad, &model), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load: options->threads = 0, must be >= 1");
  bad = options;
  bad.plan = (rnnc_plan)7;
  EXPECT_ERROR(rnnc_model_load(kModelPath, &bad, &model), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load: options->plan = 7 is not an rnnc_plan (0 auto, 1 sequential, 2 "
               "parallel, 3 pipeline)");
  bad = options;
  bad.n_fixed_dims = 1;
  EXPECT_ERROR(rnnc_model_load(kModelPath, &bad, &model), RNNC_INVALID_ARGUMENT,
               "rnnc_model_load: options->n_fixed_dims = 1 but options->fixed_dim_names or "
               "fixed_dim_values is NULL");
  const char* names[1] = {"sr"};
  const int64_t sr[1] = {16000};
  const int64_t* values[1] = {sr};
  const size_t lengths[1] = {1};
  bad = options;
  bad.fixed_input_names = names;
  bad.fixed_input_values = values;
  bad.fixed_input_lengths = lengths;
  bad.n_fixed_inputs = 1;
  EXPECT_ERROR(rnnc_model_load(kModelPath, &bad, &model), RNNC_INVALID_INPUT,
               "fixed input 'sr' is not an input of the model");
  EXPECT(model == NULL, "a failed load should store NULL");

  /* Successful calls leave the last error as it was. */
  size_t count = 0;
  rnnc_model* fixed = NULL;
  const char* batch_name[1] = {"batch"};
  const int64_t batch_value[1] = {1};
  rnnc_model_options specialized = options;
  specialized.fixed_dim_names = batch_name;
  specialized.fixed_dim_values = batch_value;
  specialized.n_fixed_dims = 1;
  EXPECT_OK(rnnc_model_load(kModelPath, &specialized, &fixed));
  EXPECT_OK(rnnc_model_input_count(fixed, &count));
  EXPECT(strcmp(rnnc_last_error(), "fixed input 'sr' is not an input of the model") == 0,
         "a successful call changed the last error to '%s'", rnnc_last_error());
  int64_t batch = 0;
  EXPECT_OK(rnnc_model_input_dim(fixed, 0, 1, &batch));
  EXPECT(batch == 1, "fixing 'batch' = 1 should make input dim 1 known, got %lld",
         (long long)batch);
  rnnc_model_free(fixed);
}

/* ---- the stream batcher ---------------------------------------------------------------------- */

/* What a chunk's callback saw; `done` is set last, under the mutex. */
struct ChunkOutcome {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int done;
  rnnc_status status;
  float log_probs[kOutputCount];
};

static void on_chunk(void* user_data, rnnc_status status, const rnnc_tensor* outputs,
                     size_t n_outputs, const char* error) {
  struct ChunkOutcome* outcome = (struct ChunkOutcome*)user_data;
  pthread_mutex_lock(&outcome->mutex);
  outcome->status = status;
  if (status == RNNC_OK && n_outputs > 0 && strcmp(outputs[0].name, "log_probs") == 0) {
    memcpy(outcome->log_probs, outputs[0].data, sizeof(float) * kOutputCount);
  } else if (status != RNNC_OK) {
    fprintf(stderr, "chunk failed: %s\n", error);
  }
  outcome->done = 1;
  pthread_cond_signal(&outcome->changed);
  pthread_mutex_unlock(&outcome->mutex);
}

/* Within 1e-5 + 1e-4 |b|: batched recurrent steps round differently in the last bits
 * (tests/runtime/batcher_test.cc). */
static int close_to(const float* a, const float* b) {
  for (int i = 0; i < kOutputCount; ++i) {
    if (fabsf(a[i] - b[i]) > 1e-5f + 1e-4f * fabsf(b[i])) return 0;
  }
  return 1;
}

static void test_batcher_streams_match_sessions(const rnnc_model* model) {
  static float features[kSeq * kFeatures], alone[kOutputCount], batched[kOutputCount];
  rnnc_batcher_options options;
  rnnc_batcher_options_init(&options);
  EXPECT(options.max_batch == 32 && options.max_wait_us == 2000 && options.threads == 1,
         "batcher defaults %d %lld %d", options.max_batch, (long long)options.max_wait_us,
         options.threads);
  options.max_wait_us = 500;
  rnnc_batcher* batcher = NULL;
  EXPECT_OK(rnnc_batcher_new(model, &options, &batcher));
  if (!batcher) return;
  rnnc_stream *blocking = NULL, *queued = NULL;
  EXPECT_OK(rnnc_stream_open(batcher, &blocking));
  EXPECT_OK(rnnc_stream_open(batcher, &queued));
  rnnc_session* session = NULL;
  EXPECT_OK(rnnc_session_new(model, NULL, 0, &session));
  struct ChunkOutcome outcome;
  pthread_mutex_init(&outcome.mutex, NULL);
  pthread_cond_init(&outcome.changed, NULL);
  for (int chunk = 0; chunk < 3; ++chunk) {
    make_features(features, chunk * kSeq, kSeq);
    run_views_copy(session, features, alone);
    rnnc_tensor input = features_tensor(features);
    outcome.done = 0;
    EXPECT_OK(rnnc_stream_submit(queued, &input, 1, on_chunk, &outcome));
    rnnc_tensor output = log_probs_tensor(batched);
    EXPECT_OK(rnnc_stream_run(blocking, &input, 1, &output, 1));
    EXPECT(close_to(batched, alone), "blocking stream, chunk %d: not the session's output", chunk);
    pthread_mutex_lock(&outcome.mutex);
    while (!outcome.done) pthread_cond_wait(&outcome.changed, &outcome.mutex);
    pthread_mutex_unlock(&outcome.mutex);
    EXPECT(outcome.status == RNNC_OK, "queued stream, chunk %d: %s", chunk,
           rnnc_status_name(outcome.status));
    EXPECT(close_to(outcome.log_probs, alone), "queued stream, chunk %d: not the session's output",
           chunk);
  }
  /* A bad chunk fails that call only, with the session's message. */
  static const int64_t wrong_shape[3] = {kSeq, kBatch, 12};
  rnnc_tensor wrong = {"features", RNNC_FLOAT32, wrong_shape, 3, features};
  EXPECT_ERROR(rnnc_stream_submit(queued, &wrong, 1, on_chunk, &outcome), RNNC_INVALID_INPUT,
               "input 'features': dim 2 is 12, expected 40 (f32[seq, batch, 40])");
  EXPECT_ERROR(rnnc_stream_submit(queued, &wrong, 1, NULL, NULL), RNNC_INVALID_ARGUMENT,
               "rnnc_stream_submit: done is NULL");
  rnnc_stream* not_opened = blocking;
  EXPECT_ERROR(rnnc_stream_open(NULL, &not_opened), RNNC_INVALID_ARGUMENT,
               "rnnc_stream_open: batcher is NULL");
  EXPECT(not_opened == NULL, "a failed rnnc_stream_open stores NULL");
  options.max_batch = 0;
  rnnc_batcher* bad = NULL;
  EXPECT_ERROR(rnnc_batcher_new(model, &options, &bad), RNNC_INVALID_INPUT,
               "BatcherOptions::max_batch = 0, must be >= 1");
  EXPECT(strcmp(rnnc_status_name(RNNC_OVERLOADED), "overloaded") == 0, "status name");
  pthread_mutex_destroy(&outcome.mutex);
  pthread_cond_destroy(&outcome.changed);
  rnnc_session_free(session);
  rnnc_stream_close(blocking);
  rnnc_stream_close(queued);
  rnnc_batcher_free(batcher);
}

int main(void) {
  EXPECT(strcmp(rnnc_last_error(), "") == 0, "no call has failed yet: '%s'", rnnc_last_error());
  rnnc_model* model = load_demo();
  if (!model) return 1;
  test_describes_inputs_outputs_and_state(model);
  test_views_and_caller_buffers_agree(model);
  test_state_is_carried_and_reset_repeats(model);
  test_clone_copies_the_state(model);
  test_session_outlives_its_model();
  test_sessions_share_a_model_across_threads(model);
  test_run_errors_name_the_input(model);
  test_null_arguments_are_invalid_arguments(model);
  test_state_pair_errors_name_the_pair(model);
  test_load_errors();
  test_batcher_streams_match_sessions(model);
  rnnc_model_free(model);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C API checks passed\n");
  return 0;
}
