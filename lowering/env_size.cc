#include "lowering/env_size.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ir/error.h"

namespace rnnc {

uint64_t env_size_bytes(const char* name, const char* unit, const char* zero_means,
                        uint64_t unset) {
  const char* text = std::getenv(name);
  if (!text || !*text) return unset;
  const int shift = std::strcmp(unit, "MiB") == 0 ? 20 : 10;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || text[0] == '-' || value > (uint64_t{1} << (60 - shift))) {
    raise_invalid_input(
        cat(name, " = '", text, "': must be a whole number of ", unit, " (0: ", zero_means, ")"));
  }
  return static_cast<uint64_t>(value) << shift;
}

}  // namespace rnnc
