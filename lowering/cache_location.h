// Where rnnc keeps what it computes once per model (compiled kernels: lowering/halide_cache.h;
// quantization decisions: runtime/quant_decision_cache.h), and which build computed it.
#pragma once

#include <string>

namespace rnnc {

// The cache directory for `dir`: itself, or when empty $RNNC_CACHE_DIR, else $CACHE_DIRECTORY
// (systemd's CacheDirectory=), else $XDG_CACHE_HOME/rnnc, else ~/.cache/rnnc when the home
// directory exists, else a private $TMPDIR/rnnc-cache-<uid> (halide_cache.cc).
std::string kernel_cache_directory(const std::string& dir);

// Which build of rnnc is running (its binary's path, size and modification time): part of every
// cache key, so a rebuilt rnnc never uses what an older build generated or decided.
const std::string& build_identity();

}  // namespace rnnc
