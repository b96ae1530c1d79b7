// rnnc_conform: the generated ONNX conformance suite's generator and runner (docs/conformance.md),
// `rnnc_conform gen|run|specs`. Test code: built with the tests (RNNC_BUILD_TESTS), never part
// of the rnnc product; it reads its arguments with the rnnc command's parser (tools/cli.h).
#include <iostream>

#include "ir/error.h"
#include "tools/cli.h"

namespace rnnc::cli {
extern const Command kConformCommand;  // conform_command.cc
}  // namespace rnnc::cli

int main(int argc, char** argv) {
  const rnnc::cli::Command& command = rnnc::cli::kConformCommand;
  try {
    rnnc::cli::Parsed parsed;
    if (!rnnc::cli::parse(command, argc - 1, argv + 1, parsed)) return 0;
    return command.run(parsed);
  } catch (const rnnc::Error& e) {
    std::cerr << "rnnc_conform: " << rnnc::error_kind_name(e.kind()) << ": " << e.what() << "\n";
    return e.kind() == rnnc::ErrorKind::kInternal ? 70 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "rnnc_conform: out of memory\n";
    return 1;
  }
}
