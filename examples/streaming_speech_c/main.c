/* streaming_speech_c: examples/streaming_speech through the C API (rnnc/rnnc_c.h), as an
 * embedding in another language would drive rnnc.
 *
 * One rnnc_session per audio stream; each chunk of frames is one rnnc_session_run into a buffer
 * the caller owns, and the session carries the recurrent state to the next chunk. At the end the
 * streamed outputs must equal one run over the whole utterance on a fresh session, bit for bit
 * (exit code 1 if not).
 *
 *   streaming_speech_c [model.onnx] [--chunks N] [--frames F] [--cache-dir DIR]
 *
 * The model takes features f32[seq, batch, F] as its first input and gives f32[seq, batch, C] as
 * its first output, as models/demo/lstm_demo.onnx (F = 40, C = 32) does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rnnc/rnnc_c.h"

/* The build passes the demo model's path; built by hand, run it from the repository root. */
#ifndef RNNC_DEMO_MODEL
#define RNNC_DEMO_MODEL "models/demo/lstm_demo.onnx"
#endif

/* Prints the failed call's message and leaves main with exit code 2. */
#define CHECK(call)                                                                       \
  do {                                                                                    \
    rnnc_status status_ = (call);                                                         \
    if (status_ != RNNC_OK) {                                                             \
      fprintf(stderr, "streaming_speech_c: %s: %s\n  in %s\n", rnnc_status_name(status_), \
              rnnc_last_error(), #call);                                                  \
      exit(2);                                                                            \
    }                                                                                     \
  } while (0)

/* Synthetic filterbank frames: a tone sweeping up the bands, on a little deterministic noise. */
static void synthesize_frames(int first_frame, int frames, int64_t features, float* out) {
  for (int t = 0; t < frames; ++t) {
    const int frame = first_frame + t;
    const double band = fmod(frame * 0.7, (double)features);
    for (int64_t f = 0; f < features; ++f) {
      const double tone = exp(-(f - band) * (f - band) / 8.0);
      const double noise = 0.05 * sin(frame * 12.9898 + f * 78.233);
      out[t * features + f] = (float)(tone + noise - 0.5);
    }
  }
}

static double now_ms(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void* allocate(size_t bytes) {
  void* memory = malloc(bytes);
  if (!memory) {
    fprintf(stderr, "streaming_speech_c: out of memory\n");
    exit(2);
  }
  return memory;
}

int main(int argc, char** argv) {
  const char* path = RNNC_DEMO_MODEL;
  int chunks = 8, frames = 10;
  rnnc_model_options options;
  rnnc_model_options_init(&options);
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--chunks") == 0 && i + 1 < argc) {
      chunks = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
      frames = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--cache-dir") == 0 && i + 1 < argc) {
      options.cache_dir = argv[++i];
    } else if (argv[i][0] != '-') {
      path = argv[i];
    } else {
      fprintf(stderr,
              "usage: streaming_speech_c [model.onnx] [--chunks N] [--frames F] "
              "[--cache-dir DIR]\n");
      return 2;
    }
  }
  if (chunks < 1 || frames < 1) {
    fprintf(stderr, "streaming_speech_c: --chunks and --frames must be >= 1\n");
    return 2;
  }

  /* Compile once at service start; the model is shared by every stream (and thread). */
  printf("loading %s\n", path);
  rnnc_model* model = NULL;
  CHECK(rnnc_model_load(path, &options, &model));
  const char* input_name = NULL;
  const char* output_name = NULL;
  size_t input_rank = 0, output_rank = 0, state_count = 0;
  int64_t features = 0, classes = 0;
  CHECK(rnnc_model_input_name(model, 0, &input_name));
  CHECK(rnnc_model_input_rank(model, 0, &input_rank));
  CHECK(rnnc_model_output_name(model, 0, &output_name));
  CHECK(rnnc_model_output_rank(model, 0, &output_rank));
  if (input_rank != 3 || output_rank != 3) {
    fprintf(stderr, "streaming_speech_c: expected [seq, batch, F] -> [seq, batch, C]\n");
    return 2;
  }
  CHECK(rnnc_model_input_dim(model, 0, 2, &features));
  CHECK(rnnc_model_output_dim(model, 0, 2, &classes));
  CHECK(rnnc_model_state_count(model, &state_count));
  if (features <= 0 || classes <= 0) {
    fprintf(stderr, "streaming_speech_c: the feature and class dims must be numbers\n");
    return 2;
  }
  printf("  %s [seq, batch, %lld] -> %s [seq, batch, %lld], %zu recurrent state tensors carried\n",
         input_name, (long long)features, output_name, (long long)classes, state_count);

  /* One session per audio stream: it carries the recurrent state from chunk to chunk. */
  rnnc_session* stream = NULL;
  CHECK(rnnc_session_new(model, NULL, 0, &stream));
  const int total = chunks * frames;
  float* chunk = allocate(sizeof(float) * (size_t)(frames * features));
  float* streamed = allocate(sizeof(float) * (size_t)(total * classes));
  const int64_t chunk_shape[3] = {frames, 1, features};
  const int64_t chunk_output_shape[3] = {frames, 1, classes};
  for (int c = 0; c < chunks; ++c) {
    synthesize_frames(c * frames, frames, features, chunk);
    float* scores = streamed + (size_t)(c * frames * classes); /* written in place */
    rnnc_tensor input = {input_name, RNNC_FLOAT32, chunk_shape, 3, chunk};
    rnnc_tensor output = {output_name, RNNC_FLOAT32, chunk_output_shape, 3, scores};
    const double start = now_ms();
    CHECK(rnnc_session_run(stream, &input, 1, &output, 1));
    const double latency = now_ms() - start;
    const float* last_frame = scores + (frames - 1) * classes;
    int best = 0;
    for (int k = 1; k < classes; ++k) best = last_frame[k] > last_frame[best] ? k : best;
    printf("chunk %2d  frames %3d-%3d  %7.3f ms  last frame: class %2d (score %.3f)\n", c,
           c * frames, (c + 1) * frames - 1, latency, best, last_frame[best]);
  }

  /* The check: one run over the whole utterance on a fresh session gives the same outputs. */
  float* utterance = allocate(sizeof(float) * (size_t)(total * features));
  synthesize_frames(0, total, features, utterance);
  rnnc_session* whole = NULL;
  CHECK(rnnc_session_new(model, NULL, 0, &whole));
  const int64_t whole_shape[3] = {total, 1, features};
  rnnc_tensor input = {input_name, RNNC_FLOAT32, whole_shape, 3, utterance};
  const rnnc_tensor* outputs = NULL;
  size_t n_outputs = 0;
  CHECK(rnnc_session_run_views(whole, &input, 1, &outputs, &n_outputs));
  const int same =
      memcmp(outputs[0].data, streamed, sizeof(float) * (size_t)(total * classes)) == 0;
  if (same) {
    printf("OK: %d chunks of %d frames equal one run of %d frames bit for bit\n", chunks, frames,
           total);
  } else {
    printf("FAIL: %d chunks of %d frames differ from one run of %d frames\n", chunks, frames,
           total);
  }

  rnnc_session_free(whole);
  rnnc_session_free(stream);
  rnnc_model_free(model);
  free(utterance);
  free(streamed);
  free(chunk);
  return same ? 0 : 1;
}
