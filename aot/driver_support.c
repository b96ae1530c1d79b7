/* driver_support.c: the fixed part of every ahead-of-time driver rnnc compile generates.
 *
 * aot/export.cc pastes this text into the generated <name>_driver.c after
 *   #include <HalideRuntime.h>, the model's header, and  #define rn_ctx <name>_context
 * so everything here is static to one model's driver, and two models' libraries link into one
 * program without clashing. It holds what does not depend on the model: the weight file check
 * (docs/aot.md has the format), the context's memory (value buffers, per-block scratch, carried
 * state), Halide buffer binding, the Halide error hook, and each driver's side of the recurrent and
 * copy blocks. The time loop and the copy kernels themselves are librnnc's (lowering/core/),
 * pasted before this text.
 *
 * Nothing here allocates in steady state: buffers grow to the largest run seen and stay. */

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* One CPU feature the kernels use (RN_CPU_FEATURES, generated): usable when CPUID reports it
 * and the OS saves the registers it needs (XCR0). */
typedef struct rn_cpu_feature {
  const char* name;
  unsigned leaf, subleaf;
  int reg, bit;
  unsigned long long xcr0;
} rn_cpu_feature;
static const rn_cpu_feature rn_cpu_features[] = {RN_CPU_FEATURES {0, 0, 0, 0, 0, 0}};

typedef struct rn_buffer {
  void* data;
  size_t capacity;
} rn_buffer;

struct rn_ctx {
  const uint8_t* weights; /* the validated weight file */
  void* mapping;          /* mmap of the file (create_from_file) */
  size_t mapping_size;
  void* owned_copy; /* an aligned copy of a caller's unaligned buffer */
  rn_buffer* values;
  rn_buffer* scratch;
  rn_buffer* states;
  rn_buffer* owned; /* outputs of data-dependent shape: the library's memory, handed out */
  int state_valid; /* states hold a stream's carried state */
  int64_t state_dims[RN_NUM_DIMS + 1];
  /* The last successful run's dims and data-dependent dims (set by Slice and Pad from their
   * run-time operands), for <name>_output_shape. */
  int have_run;
  int64_t run_dims[RN_NUM_DIMS + 1];
  int64_t rt_dims[RN_NUM_RT_DIMS + 1];
  char error[1024];
};

typedef struct rn_ctx rn_ctx;

#define RN_TRY(expr)                 \
  do {                               \
    int rn_status_ = (expr);         \
    if (rn_status_) return rn_status_; \
  } while (0)
#define RN_ALIGN(bytes) ((((int64_t)(bytes)) + 63) / 64 * 64)

static int rn_fail(rn_ctx* ctx, int status, const char* format, ...) {
  if (ctx) {
    va_list args;
    va_start(args, format);
    vsnprintf(ctx->error, sizeof ctx->error, format, args);
    va_end(args);
  }
  return status;
}

static int rn_out_of_memory(rn_ctx* ctx) {
  return rn_fail(ctx, RNNC_AOT_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* ---- memory ---------------------------------------------------------------------------------- */

/* `bytes` of 64-byte aligned memory in `buffer`, grown (contents dropped) when too small. */
static void* rn_grow(rn_buffer* buffer, int64_t bytes) {
  size_t size = (size_t)RN_ALIGN(bytes > 0 ? bytes : 1);
  if (buffer->capacity < size) {
    free(buffer->data);
    buffer->data = aligned_alloc(64, size);
    buffer->capacity = buffer->data ? size : 0;
  }
  return buffer->data;
}

/* A block's scratch: zero-filled on every call, as lowering's Workspace hands it out. */
static void* rn_scratch(rn_ctx* ctx, int slot, int64_t bytes) {
  void* memory = rn_grow(&ctx->scratch[slot], bytes);
  if (memory) memset(memory, 0, (size_t)RN_ALIGN(bytes > 0 ? bytes : 1));
  return memory;
}

static void rn_free_buffers(rn_buffer* buffers, int count) {
  if (!buffers) return;
  for (int i = 0; i < count; ++i) free(buffers[i].data);
  free(buffers);
}

/* ---- the weight file ------------------------------------------------------------------------- */

static const char rn_weights_magic[8] = {'R', 'N', 'N', 'C', 'W', 'G', 'T', 'S'};
enum { rn_header_bytes = 64, rn_checksum_offset = 32 };

static uint64_t rn_read_u64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static uint32_t rn_read_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* 64-bit FNV-1a over the file's 8-byte words, the checksum word read as zero. A change of any
 * one word (one flipped byte, say) always changes the result: each step is a bijection of the
 * running value. */
static uint64_t rn_checksum(const uint8_t* data, uint64_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint64_t offset = 0; offset + 8 <= size; offset += 8) {
    uint64_t word = offset == rn_checksum_offset ? 0 : rn_read_u64(data + offset);
    hash = (hash ^ word) * 0x100000001b3ull;
  }
  return hash;
}

/* Checks, in this order: size of the header, magic, version, size recorded in the header,
 * checksum, and that the tensor table is the one this library was compiled with. */
static int rn_check_weights(rn_ctx* ctx, const uint8_t* data, uint64_t size) {
  if (size < rn_header_bytes) {
    return rn_fail(ctx, RNNC_AOT_ERROR_TRUNCATED,
                   "weight file of %llu bytes is shorter than its 64-byte header",
                   (unsigned long long)size);
  }
  if (memcmp(data, rn_weights_magic, 8) != 0) {
    return rn_fail(ctx, RNNC_AOT_ERROR_BAD_MAGIC, "not an rnnc weight file (magic is not RNNCWGTS)");
  }
  uint32_t version = rn_read_u32(data + 8);
  if (version != RN_WEIGHTS_VERSION) {
    return rn_fail(ctx, RNNC_AOT_ERROR_BAD_VERSION,
                   "weight file format version %u, this library reads version %d", version,
                   RN_WEIGHTS_VERSION);
  }
  uint64_t recorded = rn_read_u64(data + 16);
  if (recorded != size) {
    return rn_fail(ctx, RNNC_AOT_ERROR_TRUNCATED,
                   "weight file has %llu bytes, its header records %llu (truncated or appended to)",
                   (unsigned long long)size, (unsigned long long)recorded);
  }
  if (rn_checksum(data, size) != rn_read_u64(data + rn_checksum_offset)) {
    return rn_fail(ctx, RNNC_AOT_ERROR_CHECKSUM, "weight file checksum mismatch (corrupted)");
  }
  uint32_t count = rn_read_u32(data + 12);
  int same = count == RN_NUM_TENSORS && rn_read_u64(data + 24) == RN_LAYOUT_ID &&
             size >= rn_header_bytes + 16 * (uint64_t)count;
  for (uint32_t i = 0; same && i < count; ++i) {
    same = rn_read_u64(data + rn_header_bytes + 16 * i) == rn_tensor_table[2 * i] &&
           rn_read_u64(data + rn_header_bytes + 16 * i + 8) == rn_tensor_table[2 * i + 1];
  }
  if (!same) {
    return rn_fail(ctx, RNNC_AOT_ERROR_WRONG_MODEL,
                   "the weight file is valid but was written for another model or layout than "
                   "this library (" RN_MODEL_NAME ")");
  }
  return RNNC_AOT_OK;
}

/* ---- Halide ---------------------------------------------------------------------------------- */

/* Halide's default error handler aborts the process; this one keeps the message for the failing
 * thread, and the pipeline returns an error code, which rn_call reports. */
static _Thread_local char rn_halide_message[512];
static void rn_halide_error(void* user_context, const char* message) {
  (void)user_context;
  snprintf(rn_halide_message, sizeof rn_halide_message, "%s", message ? message : "");
}

/* The message Halide reported on this thread, without its trailing newline. */
static const char* rn_halide_error_text(void) {
  size_t n = strlen(rn_halide_message);
  while (n > 0 && (rn_halide_message[n - 1] == '\n' || rn_halide_message[n - 1] == ' ')) {
    rn_halide_message[--n] = 0;
  }
  return rn_halide_message;
}

static int rn_call(rn_ctx* ctx, int (*pipeline)(void**), void** args, const char* what) {
  rn_halide_message[0] = 0;
  int status = pipeline(args);
  if (status != 0) {
    return rn_fail(ctx, RNNC_AOT_ERROR_KERNEL, "%s: Halide error %d: %s", what, status,
                   rn_halide_error_text());
  }
  return RNNC_AOT_OK;
}

/* A buffer over existing memory; dims innermost first as {extent, stride} pairs. */
static void rn_buffer_init(halide_buffer_t* buffer, halide_dimension_t* dims, const void* host,
                           int code, int bits, int rank, const int64_t* extent_stride) {
  memset(buffer, 0, sizeof *buffer);
  buffer->host = (uint8_t*)host;
  buffer->type.code = (halide_type_code_t)code;
  buffer->type.bits = (uint8_t)bits;
  buffer->type.lanes = 1;
  buffer->dimensions = rank;
  buffer->dim = dims;
  for (int i = 0; i < rank; ++i) {
    dims[i].min = 0;
    dims[i].extent = (int32_t)extent_stride[2 * i];
    dims[i].stride = (int32_t)extent_stride[2 * i + 1];
    dims[i].flags = 0;
  }
}

/* A Halide block's view (lowering/halide_block.cc bind_view): per dim {extent, stride, output
 * extent, check}; check 1: equal to the output's, 2: a broadcast of extent 1, 3: equal, or 1
 * and read with stride 0. */
static int rn_bind(rn_ctx* ctx, halide_buffer_t* buffer, halide_dimension_t* dims,
                   const void* host, int code, int bits, int rank, const int64_t* spec,
                   const char* what) {
  int64_t extent_stride[2 * 8];
  for (int i = 0; i < rank; ++i) {
    int64_t extent = spec[4 * i], stride = spec[4 * i + 1], out = spec[4 * i + 2];
    int check = (int)spec[4 * i + 3];
    if (check) {
      int ok = extent == out;
      if (check == 2) {
        ok = extent == 1;
      } else if (!ok && check == 3 && extent == 1) {
        ok = 1;
        extent = out;
        stride = 0;
      }
      if (!ok) {
        return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT,
                       "%s: extent %lld does not broadcast to the result's %lld", what,
                       (long long)extent, (long long)out);
      }
    }
    if (extent == 1 && stride == 0) stride = i == 0 ? 1 : 0;
    if (extent > INT32_MAX || stride > INT32_MAX) {
      return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT,
                     "%s: a buffer too large for 32-bit Halide indexing", what);
    }
    extent_stride[2 * i] = extent;
    extent_stride[2 * i + 1] = stride;
  }
  rn_buffer_init(buffer, dims, host, code, bits, rank, extent_stride);
  return RNNC_AOT_OK;
}

static int rn_check_shape(rn_ctx* ctx, int rank, const int64_t* got, const int64_t* want,
                          const char* what) {
  for (int i = 0; i < rank; ++i) {
    if (got[i] != want[i]) {
      return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT,
                     "%s: dim %d is %lld, expected %lld (the dims given do not agree)", what, i,
                     (long long)got[i], (long long)want[i]);
    }
  }
  return RNNC_AOT_OK;
}

/* A run-time integer operand (Slice's starts, Pad's pads): `count` int32 or int64 elements
 * widened to int64. */
static void rn_operand_ints(const void* data, int is_int64, int count, int64_t* out) {
  for (int i = 0; i < count; ++i) {
    out[i] = is_int64 ? ((const int64_t*)data)[i] : (int64_t)((const int32_t*)data)[i];
  }
}

/* ---- recurrent blocks ------------------------------------------------------------------------ */

/* Scratch of one recurrent block (RecurrentBlock::write_aot): the sequence lengths, then each
 * direction's memory for the time loop (lowering/core/recurrent_loop.h, pasted above). */
static int64_t rn_recurrent_block_bytes(const rn_recurrent* L) {
  return RN_ALIGN(8 * (L->batch > 0 ? L->batch : 1)) +
         L->directions * RN_ALIGN(rn_recurrent_direction_bytes(L));
}

/* RecurrentBlock::run for the driver: reads sequence_lens (NULL: every entry runs seq steps; 32- or
 * 64-bit), zeroes Y when an entry is short (Y stays zero past its length), and runs every
 * direction through the shared time loop. */
static int rn_recurrent_block(rn_ctx* ctx, rn_recurrent* L, const char* name,
                              const void* sequence_lens, int sequence_lens_bits,
                              int64_t y_elements, void* scratch) {
  uint8_t* next = (uint8_t*)scratch;
  const int64_t seq = L->seq, batch = L->batch, rows = seq * batch;
  const int64_t n = L->gates * L->padded, widest = n > L->input ? n : L->input;
  if (rows * widest * 4 > INT32_MAX) {
    return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT,
                   "%s: seq_length * batch_size = %lld rows give buffers beyond 2 GB", name,
                   (long long)rows);
  }
  int64_t* lengths = (int64_t*)next;
  next += RN_ALIGN(8 * (batch > 0 ? batch : 1));
  const int64_t bad = rn_recurrent_lengths(L, sequence_lens, sequence_lens_bits, lengths);
  if (bad >= 0) {
    const int64_t length = sequence_lens_bits == 32 ? ((const int32_t*)sequence_lens)[bad]
                                                    : ((const int64_t*)sequence_lens)[bad];
    return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT,
                   "%s: input 'sequence_lens'[%lld] = %lld, must be in [0, seq_length = %lld]",
                   name, (long long)bad, (long long)length, (long long)seq);
  }
  if (L->y && rn_recurrent_has_short_entry(L)) memset(L->y, 0, (size_t)(4 * y_elements));
  for (int d = 0; d < L->directions; ++d) {
    rn_recurrent_state state;
    rn_recurrent_start(L, d, next, &state);
    next += RN_ALIGN(rn_recurrent_direction_bytes(L));
    rn_halide_message[0] = 0;
    const int status = rn_recurrent_advance(L, d, &state, 0, L->steps);
    if (status != 0) {
      return rn_fail(ctx, RNNC_AOT_ERROR_KERNEL, "%s: %s: Halide error %d: %s", name,
                     state.failed_pipeline == 1 ? "the input projection" : "the step", status,
                     rn_halide_error_text());
    }
    rn_recurrent_finish(L, d, &state);
  }
  return RNNC_AOT_OK;
}

/* ---- contexts -------------------------------------------------------------------------------- */

static void rn_destroy(rn_ctx* ctx) {
  if (!ctx) return;
  if (ctx->mapping) munmap(ctx->mapping, ctx->mapping_size);
  free(ctx->owned_copy);
  rn_free_buffers(ctx->values, RN_NUM_VALUES);
  rn_free_buffers(ctx->scratch, RN_NUM_SCRATCH);
  rn_free_buffers(ctx->states, RN_NUM_STATES);
  rn_free_buffers(ctx->owned, RN_NUM_OWNED);
  free(ctx);
}

static rn_ctx* rn_new_context(void) {
  rn_ctx* ctx = (rn_ctx*)calloc(1, sizeof(rn_ctx));
  if (!ctx) return NULL;
  ctx->values = (rn_buffer*)calloc(RN_NUM_VALUES + 1, sizeof(rn_buffer));
  ctx->scratch = (rn_buffer*)calloc(RN_NUM_SCRATCH + 1, sizeof(rn_buffer));
  ctx->states = (rn_buffer*)calloc(RN_NUM_STATES + 1, sizeof(rn_buffer));
  ctx->owned = (rn_buffer*)calloc(RN_NUM_OWNED + 1, sizeof(rn_buffer));
  if (!ctx->values || !ctx->scratch || !ctx->states || !ctx->owned) {
    rn_destroy(ctx);
    return NULL;
  }
  halide_set_error_handler(rn_halide_error);
  return ctx;
}

/* The first feature of rn_cpu_features this CPU lacks, or NULL: the kernels would stop the
 * process with an illegal instruction where one is missing. */
static const char* rn_missing_cpu_feature(void) {
  unsigned leaf1[4] = {0, 0, 0, 0};
  __get_cpuid(1, &leaf1[0], &leaf1[1], &leaf1[2], &leaf1[3]);
  unsigned long long xcr0 = 0;
  if ((leaf1[2] >> 27) & 1) { /* OSXSAVE: XGETBV may be used */
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    xcr0 = ((unsigned long long)edx << 32) | eax;
  }
  for (const rn_cpu_feature* f = rn_cpu_features; f->name; ++f) {
    unsigned regs[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count(f->leaf, f->subleaf, &regs[0], &regs[1], &regs[2], &regs[3]) ||
        !((regs[f->reg] >> f->bit) & 1) || (xcr0 & f->xcr0) != f->xcr0) {
      return f->name;
    }
  }
  return NULL;
}

/* Validates `data` (which the context then reads in place) and hands over the context. */
static int rn_finish_create(rn_ctx* ctx, const uint8_t* data, uint64_t size, rn_ctx** out,
                            char* error, size_t error_size) {
  int status = rn_check_weights(ctx, data, size);
  if (status != RNNC_AOT_OK) {
    if (error && error_size) snprintf(error, error_size, "%s", ctx->error);
    rn_destroy(ctx);
    return status;
  }
  ctx->weights = data;
  *out = ctx;
  return RNNC_AOT_OK;
}

static int rn_create_from_file(const char* path, rn_ctx** out) {
  *out = NULL;
  if (rn_missing_cpu_feature()) return RNNC_AOT_ERROR_CPU;
  rn_ctx* ctx = rn_new_context();
  if (!ctx) return RNNC_AOT_ERROR_OUT_OF_MEMORY;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat status;
  if (fd < 0 || fstat(fd, &status) != 0) {
    if (fd >= 0) close(fd);
    rn_destroy(ctx);
    return RNNC_AOT_ERROR_IO;
  }
  const uint64_t size = (uint64_t)status.st_size;
  if (size < rn_header_bytes) {
    close(fd);
    rn_destroy(ctx);
    return RNNC_AOT_ERROR_TRUNCATED;
  }
  void* mapping = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (mapping == MAP_FAILED) {
    rn_destroy(ctx);
    return RNNC_AOT_ERROR_IO;
  }
  ctx->mapping = mapping;
  ctx->mapping_size = (size_t)size;
  return rn_finish_create(ctx, (const uint8_t*)mapping, size, out, NULL, 0);
}

static int rn_create_from_buffer(const void* data, size_t size, rn_ctx** out) {
  *out = NULL;
  if (!data && size) return RNNC_AOT_ERROR_INVALID_ARGUMENT;
  if (rn_missing_cpu_feature()) return RNNC_AOT_ERROR_CPU;
  rn_ctx* ctx = rn_new_context();
  if (!ctx) return RNNC_AOT_ERROR_OUT_OF_MEMORY;
  const uint8_t* bytes = (const uint8_t*)data;
  if (((uintptr_t)bytes % 64) != 0 && size > 0) {
    /* Kernels read the weights with vector loads: keep them 64-byte aligned. */
    ctx->owned_copy = aligned_alloc(64, (size_t)RN_ALIGN(size));
    if (!ctx->owned_copy) {
      rn_destroy(ctx);
      return RNNC_AOT_ERROR_OUT_OF_MEMORY;
    }
    memcpy(ctx->owned_copy, bytes, size);
    bytes = (const uint8_t*)ctx->owned_copy;
  }
  return rn_finish_create(ctx, bytes, size, out, NULL, 0);
}

static const char* rn_status_text(int status) {
  switch (status) {
    case RNNC_AOT_OK: return "ok";
    case RNNC_AOT_ERROR_IO: return "cannot open or map the weight file";
    case RNNC_AOT_ERROR_TRUNCATED: return "weight file size does not match its header (truncated)";
    case RNNC_AOT_ERROR_BAD_MAGIC: return "not an rnnc weight file (wrong magic)";
    case RNNC_AOT_ERROR_BAD_VERSION: return "unsupported weight file version";
    case RNNC_AOT_ERROR_CHECKSUM: return "weight file checksum mismatch (corrupted)";
    case RNNC_AOT_ERROR_WRONG_MODEL: return "weight file of another model or layout";
    case RNNC_AOT_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case RNNC_AOT_ERROR_OUT_OF_MEMORY: return "out of memory";
    case RNNC_AOT_ERROR_KERNEL: return "a compiled kernel failed";
    case RNNC_AOT_ERROR_CPU:
      return "this CPU lacks an instruction-set feature the kernels were compiled for "
             "(<name>_missing_cpu_feature() names it)";
    default: return "unknown status";
  }
}
