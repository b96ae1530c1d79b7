// rnnc cache: where the compiled kernels are, what they take, and trimming or clearing them
// (docs/install.md, "Kernel cache").
#include <unistd.h>

#include <iomanip>
#include <iostream>

#include "ir/error.h"
#include "lowering/cache_location.h"
#include "lowering/halide_cache.h"
#include "tools/commands.h"

namespace rnnc::cli {

namespace {

std::string describe(const KernelCacheUsage& usage) {
  std::ostringstream out;
  out << usage.kernels << " kernels (" << usage.files << " files), " << std::fixed
      << std::setprecision(1) << static_cast<double>(usage.bytes) / (1 << 20) << " MiB";
  return out.str();
}

int run_cache(const Parsed& args) {
  if (!args.positional.empty()) raise_invalid_input("takes no positional arguments");
  if (args.has("trim") && args.has("clear"))
    raise_invalid_input("--trim and --clear exclude each other");
  const std::string dir = kernel_cache_directory(args.get("cache-dir"));
  const uint64_t bound = kernel_cache_bound();
  if (::access(dir.c_str(), F_OK) != 0) {
    raise(ErrorKind::kIo, cat("kernel cache '", dir, "' does not exist"));
  }
  const bool writable = ::access(dir.c_str(), W_OK) == 0;
  if ((args.has("trim") || args.has("clear")) && !writable) {
    raise(ErrorKind::kIo, cat("kernel cache '", dir, "' is read-only here"));
  }
  std::cout << "kernel cache: " << dir << (writable ? "" : " (read-only here)") << "\n";
  if (args.has("clear")) {
    std::cout << "removed: " << describe(clear_kernel_cache(dir)) << "\n";
    return 0;
  }
  const KernelCacheUsage before = kernel_cache_usage(dir);
  std::cout << "holds: " << describe(before) << "\n"
            << "bound: ";
  if (bound == 0) {
    std::cout << "none (RNNC_CACHE_MAX_MIB=0)\n";
  } else {
    std::cout << (bound >> 20) << " MiB (RNNC_CACHE_MAX_MIB)\n";
  }
  if (args.has("trim"))
    std::cout << "after trimming: " << describe(trim_kernel_cache(dir, bound)) << "\n";
  return 0;
}

}  // namespace

const Command kCacheCommand{
    "cache",
    "rnnc cache [--cache-dir DIR] [--trim | --clear]",
    "Print where compiled kernels are kept and what they take, against the bound\n"
    "RNNC_CACHE_MAX_MIB; --trim applies the bound now (least recently used first, keeping\n"
    "kernels used within the hour), --clear removes every kernel. Processes running a removed\n"
    "kernel keep it; a later load compiles it again.",
    {
        {"cache-dir", "DIR",
         "the kernel cache (default $RNNC_CACHE_DIR, else ~/.cache/rnnc; docs/install.md)"},
        {"trim", "", "remove the least recently used kernels beyond the bound"},
        {"clear", "", "remove every kernel"},
    },
    run_cache,
};

}  // namespace rnnc::cli
