// Ahead-of-time compilation of Halide pipelines into an on-disk cache of shared objects.
//
// Halide 14 has no compile_to_callable and its JIT cache lives in one Pipeline object, so rnnc
// compiles each pipeline once with compile_to_object (Target::NoRuntime), links it into a shared
// object next to one standalone Halide runtime shared object, and dlopens it. The cache key is a
// hash of the caller's key (block IR + schedule), the exact target (Halide flags, LLVM feature
// list and scheduling model: a cache directory shared between hosts never serves a kernel built
// for features another host lacks) and the generator's identity (build_identity: rnnc built from
// changed sources never runs kernels the earlier sources generated, while the rnnc command,
// librnnc and the tests, built from the same sources, share them): a warm load is
// a dlopen, not a compile. Safe under concurrent processes: objects are written to a temporary name
// and renamed into place, so a reader sees a complete file or none. A cached file that does not
// load (truncated, damaged) is compiled again and replaced; a cache directory this process cannot
// write to (a read-only image layer) still serves what it holds, and what it lacks is compiled
// into a private directory of the process, removed at exit. The directory is bounded in size: the
// least recently used kernels (those of earlier builds first) are removed beyond it.
//
// Halide code compiled here runs single-threaded unless its schedule asks for parallel loops;
// those go through halide_do_par_for, which the runtime (runtime/) routes into oneTBB so the
// process never runs two thread pools.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lowering/kernel_target.h"

namespace rnnc {

// One loaded pipeline: call it through Halide's uniform argv entry point (each element points to
// a halide_buffer_t for buffer arguments or to the scalar value for scalar arguments, in the
// order of the pipeline's arguments).
struct CompiledPipeline {
  std::string function_name;
  int (*argv_entry)(void** args) = nullptr;
  const halide_filter_metadata_t* metadata = nullptr;
  std::shared_ptr<void> library;  // keeps the shared object loaded
  double compile_ms = 0;          // 0 when loaded from the cache
  bool from_cache = false;        // on disk, or already loaded in this process (equal layers)
  std::string object_path;        // its object file (NoRuntime), when the cache keeps them

  // Calls the pipeline; a nonzero Halide error code becomes an rnnc internal error naming it.
  void call(void** args) const;
  // Raises that error for a call made elsewhere (the C time loop, lowering/core/) that returned
  // `status`, with the message Halide reported on this thread.
  [[noreturn]] void raise_error(int status) const;
};

class HalideCache {
 public:
  // dir: "" picks $RNNC_CACHE_DIR, else $CACHE_DIRECTORY (systemd), else $XDG_CACHE_HOME/rnnc,
  // else ~/.cache/rnnc, else $TMPDIR/rnnc-cache-<uid> (docs/install.md, "Kernel cache").
  // target: a name resolve_kernel_target accepts ("" picks $RNNC_TARGET, else "host").
  explicit HalideCache(std::string dir = "", std::string target = "");

  // The target kernels are compiled for; target() is its Halide part, which schedules read.
  const KernelTarget& kernel_target() const { return target_; }
  const Halide::Target& target() const { return target_.halide; }
  const std::string& directory() const { return dir_; }

  // Returns the pipeline for `key`, compiling it with `compile` on a cache miss. `compile` must
  // write a Halide object file (NoRuntime) defining `function_name` to the given path.
  using CompileFn = std::function<void(const std::string& object_path,
                                       const std::string& function_name,
                                       const KernelTarget& target)>;
  CompiledPipeline get(const std::string& key, const CompileFn& compile);

  // Routes the parallel loops of every kernel this cache's Halide runtime runs through
  // `do_par_for` (a halide_do_par_for_t; the runtime sets it to oneTBB's parallel_for so Halide
  // never starts a thread pool of its own). Process-wide: the runtime is one shared object.
  void set_do_par_for(void* do_par_for);

  // Keeps each pipeline's object file beside its shared object (CompiledPipeline::object_path),
  // compiling it again when an earlier process left only the shared object: ahead-of-time export
  // (aot/) links the objects into a static library.
  void set_keep_objects(bool keep) { keep_objects_ = keep; }

  // Overflow mode: the quantized kernels lowered through this cache count clamped activations
  // and sums beyond the declared accumulation width (block.h OverflowCounts). Slower; a
  // separate kernel variant (its own cache key).
  void set_count_overflow(bool count) { count_overflow_ = count; }
  bool count_overflow() const { return count_overflow_; }

  // Kernels are compiled without Halide's buffer checks (Target::NoAsserts) and without its
  // bounds-query mode (Target::NoBoundsQuery). The checks compare every buffer's type, extents
  // and strides against what the kernel was compiled for at every call (about 200 comparisons
  // for a recurrent step), a large share of a small kernel's call (docs/measurements.md has what
  // they cost). rnnc builds those buffers itself from the shapes its blocks checked (the block's
  // output-shape rules, the schedule the kernel pinned), so in a correct build the checks never
  // fire. The bounds query would read a buffer whose host pointer is null (an empty tensor) as a
  // request for its bounds and compute nothing.
  // set_kernel_asserts(true), or RNNC_KERNEL_ASSERTS=1 in the environment, compiles the checks in
  // (a separate kernel variant, its own cache key): the unit tests run that way, so every buffer
  // the runtime passes a kernel there is checked against the kernel's contract.
  void set_kernel_asserts(bool on) { kernel_asserts_ = on; }
  bool kernel_asserts() const { return kernel_asserts_; }

  // The bound on the kernels the cache directory keeps, in bytes (0: none): before this cache
  // first writes to the directory, the least recently used kernels beyond it are removed (a
  // kernel loaded from the cache counts as used then). From RNNC_CACHE_MAX_MIB, else 2 GiB.
  void set_max_bytes(uint64_t bytes) { max_bytes_ = bytes; }

 private:
  void load_runtime();
  void install_do_par_for(void* do_par_for);  // the runtime is loaded
  // Where compiled kernels are written: the cache directory, or when this process cannot write
  // to it, a private directory of the process's own (removed at exit).
  std::string write_directory();
  // The cache directory, then the process's own when it exists.
  std::vector<std::string> search_directories() const;
  // The path of `file` in the first search directory that holds it, else "".
  std::string find_file(const std::string& file) const;
  // Calls `open` on `file` in each search directory that holds it, until one opens; false when
  // none does (a file that raises an I/O error, such as a truncated shared object, is skipped).
  bool open_cached(const std::string& file,
                   const std::function<void(const std::string&)>& open) const;

  std::string dir_;
  std::once_flag writable_once_;
  bool dir_writable_ = false;
  KernelTarget target_;
  std::once_flag runtime_once_;
  std::shared_ptr<void> runtime_;
  std::mutex mutex_;
  std::map<std::string, CompiledPipeline> loaded_;
  bool keep_objects_ = false;
  bool count_overflow_ = false;
  bool kernel_asserts_ = false;
  uint64_t max_bytes_ = 0;
};

// The kernels a cache directory holds (each a shared object and maybe its object file).
struct KernelCacheUsage {
  int64_t kernels = 0;
  int64_t files = 0;
  uint64_t bytes = 0;
};
// RNNC_CACHE_MAX_MIB in bytes (0: no bound), else 2 GiB; kInvalidInput naming it when malformed.
uint64_t kernel_cache_bound();
// What the kernels in `dir` take (kIo if it cannot be listed).
KernelCacheUsage kernel_cache_usage(const std::string& dir);
// What a HalideCache does before it first writes to `dir` (at most once in ten minutes per
// directory), done now: removes the temporary files of compiles killed halfway (tmp-* an hour
// old) and, while the kernels take more than `max_bytes` (0: no bound), the least recently used
// (oldest modification time; a load from the cache refreshes it) down to 80% of it, keeping those
// used within the hour. Returns what is left.
KernelCacheUsage trim_kernel_cache(const std::string& dir, uint64_t max_bytes);
// Removes every kernel and temporary file from `dir`; returns what was removed. A process that
// has a removed kernel loaded keeps running it; a later load compiles it again.
KernelCacheUsage clear_kernel_cache(const std::string& dir);

// Compiles `pipeline` to a Halide object file (what a HalideCache::CompileFn writes). With
// RNNC_DUMP_HALIDE=dir set, also writes dir/<function_name>.stmt (the lowered statement) and .s
// (the assembly), for reading what a schedule became.
// The object is code for exactly target.features (kernel_target.h).
void compile_object(Halide::Pipeline pipeline, const std::string& object_path,
                    const std::vector<Halide::Argument>& arguments,
                    const std::string& function_name, const KernelTarget& target);

// Compiles Halide's standalone runtime for `target` to an object file.
void compile_runtime_object(const std::string& object_path, const KernelTarget& target);

// 64-bit FNV-1a of a string, as 16 hex digits (cache keys, file names).
std::string hash_hex(const std::string& text);
std::string hash_hex(const void* data, size_t size);
// hash_hex of a file's bytes, read in chunks (a model file is not held in memory to hash it).
std::string hash_hex_of_file(const std::string& path);

}  // namespace rnnc
