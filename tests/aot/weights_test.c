/* The generated library's checks, from C (linked with libdemo.a only): every kind of bad weight
 * file returns its own status code and never crashes; run-time argument errors return
 * RNNC_AOT_ERROR_INVALID_ARGUMENT with a message naming what is wrong.
 *   aot_weights_test DEMO.weights OTHER_MODEL.weights TMPDIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo.h"

static int failures = 0, checks = 0;

#define EXPECT(cond, ...)                        \
  do {                                           \
    ++checks;                                    \
    if (!(cond)) {                               \
      ++failures;                                \
      fprintf(stderr, "FAIL line %d: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);              \
      fprintf(stderr, "\n");                     \
    }                                            \
  } while (0)

static unsigned char* read_file(const char* path, size_t* size) {
  FILE* file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(file, 0, SEEK_END);
  *size = (size_t)ftell(file);
  fseek(file, 0, SEEK_SET);
  /* One spare byte in front, so a misaligned view can be made. */
  unsigned char* data = aligned_alloc(64, (*size + 128) / 64 * 64);
  if (!data || fread(data, 1, *size, file) != *size) exit(2);
  fclose(file);
  return data;
}

static void write_file(const char* path, const unsigned char* data, size_t size) {
  FILE* file = fopen(path, "wb");
  if (!file || fwrite(data, 1, size, file) != size || fclose(file) != 0) exit(2);
}

/* create_from_buffer on a modified copy of the good file; returns the status. */
static int create_modified(const unsigned char* good, size_t size, size_t offset, int flip,
                           size_t new_size) {
  unsigned char* copy = aligned_alloc(64, (size + 64) / 64 * 64);
  memcpy(copy, good, size);
  if (flip) copy[offset] ^= (unsigned char)flip;
  demo_context* context = (demo_context*)0x1;
  int status = demo_create_from_buffer(copy, new_size, &context);
  if (status == RNNC_AOT_OK) demo_destroy(context);
  EXPECT(status == RNNC_AOT_OK || context == NULL, "a failed create leaves *context NULL");
  free(copy);
  return status;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: aot_weights_test DEMO.weights OTHER.weights TMPDIR\n");
    return 2;
  }
  size_t size = 0, other_size = 0;
  unsigned char* good = read_file(argv[1], &size);
  unsigned char* other = read_file(argv[2], &other_size);
  char path[1024];

  /* The good file, from a path and from a buffer (aligned, and misaligned: copied). */
  demo_context* context = NULL;
  EXPECT(demo_create_from_file(argv[1], &context) == RNNC_AOT_OK && context, "good file");
  demo_destroy(context);
  EXPECT(create_modified(good, size, 0, 0, size) == RNNC_AOT_OK, "good buffer");
  memmove(good + 1, good, size);
  EXPECT(demo_create_from_buffer(good + 1, size, &context) == RNNC_AOT_OK, "misaligned buffer");
  demo_destroy(context);
  memmove(good, good + 1, size);

  /* Each kind of bad file has its own code. */
  const int truncated = create_modified(good, size, 0, 0, size - 100);
  const int tiny = create_modified(good, size, 0, 0, 10);
  const int magic = create_modified(good, size, 0, 0x20, size);
  const int version = create_modified(good, size, 8, 0x02, size);
  const int data_byte = create_modified(good, size, size / 2, 0x01, size);
  const int table_byte = create_modified(good, size, 64 + 3, 0x10, size);
  EXPECT(truncated == RNNC_AOT_ERROR_TRUNCATED, "truncated: %d", truncated);
  EXPECT(tiny == RNNC_AOT_ERROR_TRUNCATED, "shorter than the header: %d", tiny);
  EXPECT(magic == RNNC_AOT_ERROR_BAD_MAGIC, "wrong magic: %d", magic);
  EXPECT(version == RNNC_AOT_ERROR_BAD_VERSION, "wrong version: %d", version);
  EXPECT(data_byte == RNNC_AOT_ERROR_CHECKSUM, "flipped data byte: %d", data_byte);
  EXPECT(table_byte == RNNC_AOT_ERROR_CHECKSUM, "flipped table byte: %d", table_byte);
  context = (demo_context*)0x1;
  int wrong = demo_create_from_buffer(other, other_size, &context);
  EXPECT(wrong == RNNC_AOT_ERROR_WRONG_MODEL && context == NULL, "another model's weights: %d",
         wrong);
  EXPECT(truncated != magic && magic != version && version != data_byte && data_byte != wrong &&
             wrong != truncated,
         "the codes are distinct");

  /* Through files too: a truncated file, a missing one. */
  snprintf(path, sizeof path, "%s/truncated.weights", argv[3]);
  write_file(path, good, size / 3);
  EXPECT(demo_create_from_file(path, &context) == RNNC_AOT_ERROR_TRUNCATED, "truncated file");
  snprintf(path, sizeof path, "%s/empty.weights", argv[3]);
  write_file(path, good, 0);
  EXPECT(demo_create_from_file(path, &context) == RNNC_AOT_ERROR_TRUNCATED, "empty file");
  snprintf(path, sizeof path, "%s/missing.weights", argv[3]);
  EXPECT(demo_create_from_file(path, &context) == RNNC_AOT_ERROR_IO && context == NULL,
         "missing file");
  EXPECT(strstr(demo_status_text(RNNC_AOT_ERROR_CHECKSUM), "checksum") != NULL, "status text");

  /* Run-time argument errors name what is wrong. */
  EXPECT(demo_create_from_file(argv[1], &context) == RNNC_AOT_OK, "good file again");
  float features[3 * 2 * 40] = {0}, log_probs[3 * 2 * 32];
  int status = demo_run(context, 3, 2, NULL, log_probs);
  EXPECT(status == RNNC_AOT_ERROR_INVALID_ARGUMENT &&
             strstr(demo_last_error(context), "input 'features' is NULL"),
         "NULL input: %d %s", status, demo_last_error(context));
  status = demo_run(context, -1, 2, features, log_probs);
  EXPECT(status == RNNC_AOT_ERROR_INVALID_ARGUMENT &&
             strstr(demo_last_error(context), "dim 'seq' = -1 is out of range"),
         "negative dim: %d %s", status, demo_last_error(context));
  EXPECT(demo_step(context, 3, 2, features, log_probs) == RNNC_AOT_OK, "step");
  EXPECT(demo_step(context, 2, 2, features, log_probs) == RNNC_AOT_OK, "a shorter chunk");
  status = demo_step(context, 3, 1, features, log_probs);
  EXPECT(status == RNNC_AOT_ERROR_INVALID_ARGUMENT &&
             strstr(demo_last_error(context),
                    "dim 'batch' changed from 2 to 1 between streaming steps; call demo_reset"),
         "batch changed while streaming: %d %s", status, demo_last_error(context));
  demo_reset(context);
  EXPECT(demo_step(context, 3, 1, features, log_probs) == RNNC_AOT_OK, "after reset");
  EXPECT(demo_run(context, 3, 2, features, log_probs) == RNNC_AOT_OK, "run resets");
  demo_destroy(context);

  printf("%d checks, %d failures\n", checks, failures);
  free(good);
  free(other);
  return failures ? 1 : 0;
}
