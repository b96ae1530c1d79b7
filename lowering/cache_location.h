// Where rnnc keeps what it computes once per model (compiled kernels: lowering/halide_cache.h;
// quantization decisions: runtime/quant_decision_cache.h), and which build computed it.
#pragma once

#include <string>

namespace rnnc {

// The cache directory for `dir`: itself, or when empty $RNNC_CACHE_DIR, else $CACHE_DIRECTORY
// (systemd's CacheDirectory=), else $XDG_CACHE_HOME/rnnc, else ~/.cache/rnnc when the home
// directory exists, else a private $TMPDIR/rnnc-cache-<uid> (halide_cache.cc).
std::string kernel_cache_directory(const std::string& dir);

// Which generator is running: a hash of rnnc's compiler sources, with the Halide and LLVM
// libraries' paths, sizes and modification times. Part of every cache key, so every binary built
// from the same sources shares the cache, and rnnc built from changed sources (or with another
// Halide or LLVM) never uses what the earlier one generated or decided.
const std::string& build_identity();

}  // namespace rnnc
