/* aot_example: runs a model compiled ahead of time by `rnnc compile`, with nothing of rnnc,
 * Halide, LLVM or oneTBB at run time - the library, its weight file, libc, libm, libpthread and
 * libdl.
 *
 *   aot_example WEIGHTS --dim NAME=N... [--input NAME=FILE.npy]... [--save-inputs DIR]
 *               [--chunk N] [--out DIR] [--repeat N]
 *
 * It is written against the model-independent descriptor every generated header declares
 * (rnnc_aot_model, <name>_model()), so one source serves any compiled model; the build names the
 * header and the descriptor: -DAOT_HEADER='"demo.h"' -DAOT_MODEL=demo_model. A program for one
 * model would call the typed functions instead (demo_run(ctx, seq, batch, features, log_probs);
 * see the README rnnc compile writes).
 *
 * Float inputs come from float32 .npy files, or are pseudo-random in [-1, 1) (--save-inputs
 * writes them, so another engine can be run on the same data); int64 inputs (a Slice's start,
 * say) come from int64 .npy files. Outputs are float32; those of data-dependent shape are the
 * library's memory, shaped by output_shape after the run. --chunk N streams the inputs N steps at
 * a time through the step function (the dim named "seq" must be every sequence tensor's
 * outermost axis), which carries the recurrent state in the context: the outputs equal one whole
 * run's. Outputs are written as DIR/<output>.npy; --repeat times the whole run. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include AOT_HEADER

#define MAX_TENSORS 16
#define MAX_RANK 8

static const rnnc_aot_model* model;

static void die(const char* message, const char* detail) {
  fprintf(stderr, "aot_example: %s%s%s\n", message, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static int64_t numel(const int64_t* shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];
  return n;
}

/* ---- .npy (float32 or int64, C order) ---- */

static void* read_npy(const char* path, const int64_t* shape, int rank, int dtype) {
  FILE* file = fopen(path, "rb");
  if (!file) die("cannot open", path);
  unsigned char preamble[10];
  if (fread(preamble, 1, 10, file) != 10 || memcmp(preamble, "\x93NUMPY", 6) != 0) {
    die("not a .npy file", path);
  }
  size_t header_size = preamble[8] | (preamble[9] << 8);
  if (preamble[6] != 1) {  /* version 2/3: 4-byte header length */
    unsigned char more[2];
    if (fread(more, 1, 2, file) != 2) die("truncated .npy", path);
    header_size |= ((size_t)more[0] << 16) | ((size_t)more[1] << 24);
  }
  char* header = calloc(header_size + 1, 1);
  if (!header || fread(header, 1, header_size, file) != header_size) die("truncated .npy", path);
  const char* descr = dtype == RNNC_AOT_INT64 ? "'<i8'" : "'<f4'";
  if (!strstr(header, descr) || strstr(header, "'fortran_order': True")) {
    die(dtype == RNNC_AOT_INT64 ? "expected an int64 C-order .npy"
                                : "expected a float32 C-order .npy",
        path);
  }
  const char* p = strstr(header, "'shape': (");
  if (!p) die("no shape in .npy header", path);
  p += strlen("'shape': (");
  for (int i = 0; i < rank; ++i) {
    char* end;
    long long extent = strtoll(p, &end, 10);
    if (end == p || extent != shape[i]) die("the .npy shape does not match the input's", path);
    p = end + strspn(end, ", ");
  }
  free(header);
  const int64_t n = numel(shape, rank);
  const size_t size = dtype == RNNC_AOT_INT64 ? 8 : 4;
  void* data = malloc((size_t)(n > 0 ? n : 1) * size);
  if (!data || fread(data, size, (size_t)n, file) != (size_t)n) die("truncated .npy", path);
  fclose(file);
  return data;
}

static void write_npy(const char* path, const float* data, const int64_t* shape, int rank) {
  char header[256], dims[160] = "";
  for (int i = 0; i < rank; ++i) {
    char extent[24];
    snprintf(extent, sizeof extent, "%lld%s", (long long)shape[i], rank == 1 ? "," : i + 1 < rank ? ", " : "");
    strcat(dims, extent);
  }
  int length = snprintf(header, sizeof header,
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims);
  int padded = (10 + length + 1 + 63) / 64 * 64 - 10;  /* header ends in '\n', data 64-aligned */
  FILE* file = fopen(path, "wb");
  if (!file) die("cannot write", path);
  unsigned char preamble[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(padded & 255),
                                (unsigned char)(padded >> 8)};
  fwrite(preamble, 1, 10, file);
  fwrite(header, 1, (size_t)length, file);
  for (int i = length; i < padded - 1; ++i) fputc(' ', file);
  fputc('\n', file);
  fwrite(data, sizeof(float), (size_t)numel(shape, rank), file);
  if (fclose(file) != 0) die("cannot write", path);
}

/* ---- running ---- */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void check(void* context, int status, const char* what) {
  if (status != RNNC_AOT_OK) {
    fprintf(stderr, "aot_example: %s: %s: %s\n", what, model->status_text(status),
            context ? model->last_error(context) : "");
    exit(1);
  }
}

int main(int argc, char** argv) {
  model = AOT_MODEL();
  if (argc < 2) {
    fprintf(stderr, "usage: %s WEIGHTS --dim NAME=N... [--input NAME=FILE.npy]... "
                    "[--save-inputs DIR] [--chunk N] [--out DIR] [--repeat N]\n", argv[0]);
    return 2;
  }
  int64_t dims[MAX_TENSORS];
  int have_dim[MAX_TENSORS] = {0};
  const char* input_files[MAX_TENSORS] = {0};
  const char *out_dir = NULL, *save_dir = NULL;
  long chunk = 0, repeat = 0;
  for (int i = 2; i < argc; ++i) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!value) die("option needs a value", argv[i]);
    if (!strcmp(argv[i], "--dim") || !strcmp(argv[i], "--input")) {
      const char* eq = strchr(value, '=');
      if (!eq) die("expected NAME=VALUE", value);
      int found = 0;
      int is_dim = !strcmp(argv[i], "--dim");
      int count = is_dim ? model->num_dims : model->num_inputs;
      for (int k = 0; k < count; ++k) {
        const char* name = is_dim ? model->dim_names[k] : model->inputs[k].name;
        if (strlen(name) == (size_t)(eq - value) && !strncmp(name, value, (size_t)(eq - value))) {
          if (is_dim) {
            dims[k] = strtoll(eq + 1, NULL, 10);
            have_dim[k] = 1;
          } else {
            input_files[k] = eq + 1;
          }
          found = 1;
        }
      }
      if (!found) die(is_dim ? "the model has no such dim" : "the model has no such input", value);
    } else if (!strcmp(argv[i], "--out")) {
      out_dir = value;
    } else if (!strcmp(argv[i], "--save-inputs")) {
      save_dir = value;
    } else if (!strcmp(argv[i], "--chunk")) {
      chunk = strtol(value, NULL, 10);
    } else if (!strcmp(argv[i], "--repeat")) {
      repeat = strtol(value, NULL, 10);
    } else {
      die("unknown option", argv[i]);
    }
    ++i;
  }
  int seq_dim = -1;
  for (int k = 0; k < model->num_dims; ++k) {
    if (!have_dim[k]) die("give every dim with --dim, missing", model->dim_names[k]);
    if (!strcmp(model->dim_names[k], "seq")) seq_dim = k;
  }

  void* context = NULL;
  check(NULL, model->create_from_file(argv[1], &context), argv[1]);

  /* Inputs and outputs at the whole run's dims. An output of data-dependent shape is a pointer
   * the run sets (owned[o]); its shape is known after the run. */
  int64_t shapes[2 * MAX_TENSORS][MAX_RANK];
  int ranks[2 * MAX_TENSORS];
  void* buffers[2 * MAX_TENSORS];
  const void* owned[MAX_TENSORS] = {0};
  int any_owned = 0;
  const int tensors = model->num_inputs + model->num_outputs;
  for (int t = 0; t < tensors; ++t) {
    ranks[t] = model->shape(t, dims, shapes[t]);
    const rnnc_aot_tensor_info* info =
        t < model->num_inputs ? &model->inputs[t] : &model->outputs[t - model->num_inputs];
    const int int64_input = t < model->num_inputs && info->dtype == RNNC_AOT_INT64;
    if (info->dtype != RNNC_AOT_FLOAT32 && !int64_input) {
      die("this example handles float32 tensors and int64 inputs only", info->name);
    }
    if (int64_input && !input_files[t]) die("give an int64 input with --input", info->name);
    if (t >= model->num_inputs && info->owned) {
      buffers[t] = &owned[t - model->num_inputs];
      any_owned = 1;
      continue;
    }
    const int64_t n = numel(shapes[t], ranks[t]);
    if (t < model->num_inputs && input_files[t]) {
      buffers[t] = read_npy(input_files[t], shapes[t], ranks[t], info->dtype);
    } else {
      buffers[t] = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
      if (!buffers[t]) die("out of memory", NULL);
      uint32_t state = 12345u + 977u * (uint32_t)t;  /* fixed pseudo-random inputs */
      for (int64_t i = 0; t < model->num_inputs && i < n; ++i) {
        state = state * 1664525u + 1013904223u;
        ((float*)buffers[t])[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
      }
    }
    if (t < model->num_inputs && save_dir && !int64_input) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s.npy", save_dir, info->name);
      write_npy(path, buffers[t], shapes[t], ranks[t]);
    }
  }

  if (chunk <= 0) {
    check(context, model->run(context, dims, (const void* const*)buffers, buffers + model->num_inputs),
          "run");
  } else {
    /* Stream: chunks of `chunk` steps through the step function, state carried in the context.
     * A sequence tensor's chunk is a contiguous slab when seq is its outermost axis. */
    if (seq_dim < 0) die("--chunk needs a dim named seq", NULL);
    if (any_owned) die("--chunk: the model has outputs of data-dependent shape", NULL);
    const int64_t total = dims[seq_dim];
    int64_t chunk_dims[MAX_TENSORS];
    memcpy(chunk_dims, dims, sizeof dims);
    model->reset(context);
    for (int64_t begin = 0; begin < total; begin += chunk) {
      const int64_t steps = total - begin < chunk ? total - begin : chunk;
      chunk_dims[seq_dim] = steps;
      void* views[2 * MAX_TENSORS];
      for (int t = 0; t < tensors; ++t) {
        int64_t chunk_shape[MAX_RANK];
        model->shape(t, chunk_dims, chunk_shape);
        int64_t offset = 0;
        if (ranks[t] > 0 && chunk_shape[0] != shapes[t][0]) {
          if (chunk_shape[0] != steps || shapes[t][0] != total) {
            die("--chunk: a tensor's outermost axis is not seq", NULL);
          }
          offset = begin * numel(chunk_shape + 1, ranks[t] - 1);
        }
        views[t] = (float*)buffers[t] + offset;
      }
      check(context, model->step(context, chunk_dims, (const void* const*)views,
                                 views + model->num_inputs), "step");
    }
  }

  if (repeat > 0) {
    double* times = malloc((size_t)repeat * sizeof(double));
    for (long r = 0; r < repeat; ++r) {
      const double start = now_us();
      check(context, model->run(context, dims, (const void* const*)buffers,
                                buffers + model->num_inputs), "run");
      times[r] = now_us() - start;
    }
    qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
    printf("%s: median %.1f us, min %.1f us per run over %ld runs\n", model->name,
           times[repeat / 2], times[0], repeat);
    free(times);
  }

  for (int o = 0; o < model->num_outputs; ++o) {
    const int t = model->num_inputs + o;
    const float* data = buffers[t];
    if (model->outputs[o].owned) {
      data = owned[o];
      ranks[t] = model->output_shape(context, o, shapes[t]);
      if (ranks[t] < 0) die("no shape for output", model->outputs[o].name);
    }
    printf("%s %s:", model->outputs[o].name, model->outputs[o].type);
    for (int64_t i = 0; i < 4 && i < numel(shapes[t], ranks[t]); ++i) printf(" %.6f", data[i]);
    printf("\n");
    if (out_dir) {
      char path[1024];
      snprintf(path, sizeof path, "%s/%s.npy", out_dir, model->outputs[o].name);
      write_npy(path, data, shapes[t], ranks[t]);
    }
  }
  for (int t = 0; t < tensors; ++t) {
    if (t < model->num_inputs || !model->outputs[t - model->num_inputs].owned) free(buffers[t]);
  }
  model->destroy(context);
  return 0;
}
