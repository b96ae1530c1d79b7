// A size in bytes from an environment variable given in KiB or MiB (RNNC_CACHE_MAX_MIB,
// RNNC_XW_CHUNK_KIB).
#pragma once

#include <cstdint>

namespace rnnc {

// The variable `name` as a whole number of `unit` ("KiB" or "MiB"), in bytes; `unset` when it is
// unset or empty. Anything else (a sign, a suffix, beyond 2^60 bytes) is a kInvalidInput error
// naming the variable and saying what 0 means (`zero_means`).
uint64_t env_size_bytes(const char* name, const char* unit, const char* zero_means, uint64_t unset);

}  // namespace rnnc
