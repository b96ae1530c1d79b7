// rnnc: the command-line front end. `rnnc <command> --help` describes each command.
#include <unistd.h>

#include <cstring>
#include <iostream>

#include "ir/error.h"
#include "lowering/cache_location.h"
#include "lowering/kernel_target.h"
#include "rnnc/version.h"
#include "tools/commands.h"

namespace {

const rnnc::cli::Command* const kCommands[] = {
    &rnnc::cli::kInfoCommand,
    &rnnc::cli::kRunCommand,
    &rnnc::cli::kOptimizeCommand,
    &rnnc::cli::kPlanCommand,
    &rnnc::cli::kCompileCommand,
    &rnnc::cli::kQuantizeCommand,
    &rnnc::cli::kStreamsCommand,
    &rnnc::cli::kServeCommand,
    &rnnc::cli::kCacheCommand,
};

void print_usage() {
  std::cout << "usage: rnnc <command> [options]\n\ncommands:\n";
  for (const auto* command : kCommands) {
    std::string name = "  " + command->name;
    name.append(12 - std::min<size_t>(name.size(), 11), ' ');
    std::cout << name << command->summary.substr(0, command->summary.find('\n')) << "\n";
  }
  std::cout << "\n`rnnc <command> --help` for a command's options; `rnnc --version` for the\n"
               "version, this CPU and the kernel target.\n";
}

// The version, and what kernels compiled here would use: this CPU, its kernel target and the
// kernel cache.
void print_version() {
  const rnnc::HostCpu& cpu = rnnc::host_cpu();
  std::cout << "rnnc " << RNNC_VERSION_STRING << "\n"
            << "CPU: " << cpu.model_name << " (" << cpu.vendor << " family " << cpu.family
            << " model " << cpu.model << ", L2 " << cpu.l2_bytes_per_core / 1024
            << " KiB per core)\n";
  try {
    const rnnc::KernelTarget target = rnnc::resolve_kernel_target("");
    std::cout << "kernel target: " << target.name << " (" << target.features.to_string()
              << "; tuned for " << target.tune_cpu << ")\n"
              << "schedule class: " << target.schedule_class() << "\n";
  } catch (const rnnc::Error& e) {
    std::cout << "kernel target: " << e.what() << "\n";
  }
  try {
    const std::string cache = rnnc::kernel_cache_directory("");
    std::cout << "kernel cache: " << cache;
    if (::access(cache.c_str(), F_OK) == 0 && ::access(cache.c_str(), W_OK) != 0) {
      std::cout << " (read-only here: kernels it lacks compile into a directory of the process's "
                   "own, removed at exit)";
    }
    std::cout << "\n";
  } catch (const rnnc::Error& e) {
    std::cout << "kernel cache: " << e.what() << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    print_version();
    return 0;
  }
  const rnnc::cli::Command* command = nullptr;
  for (const auto* candidate : kCommands) {
    if (candidate->name == argv[1]) command = candidate;
  }
  if (!command) {
    std::cerr << "rnnc: unknown command '" << argv[1] << "' (see rnnc --help)\n";
    return 2;
  }
  try {
    rnnc::cli::Parsed parsed;
    if (!rnnc::cli::parse(*command, argc - 2, argv + 2, parsed)) return 0;
    return command->run(parsed);
  } catch (const rnnc::Error& e) {
    std::cerr << "rnnc " << command->name << ": " << rnnc::error_kind_name(e.kind()) << ": "
              << e.what() << "\n";
    return e.kind() == rnnc::ErrorKind::kInternal ? 70 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "rnnc " << command->name << ": out of memory\n";
    return 1;
  }
}
