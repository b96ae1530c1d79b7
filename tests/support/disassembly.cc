#include "tests/support/disassembly.h"

#include <cstdio>
#include <regex>

#include "ir/error.h"

namespace rnnc::testing {

std::string disassemble(const std::string& object_path) {
  const std::string command = "objdump -d '" + object_path + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) raise(ErrorKind::kIo, "cannot run '" + command + "'");
  std::string listing;
  char buffer[1 << 16];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) listing.append(buffer, n);
  if (::pclose(pipe) != 0 || listing.empty()) {
    raise(ErrorKind::kIo, "'" + command + "' failed");
  }
  return listing;
}

bool gathers_data(const std::string& listing) {
  static const std::regex data_gather(R"(gather\S*\s+\S*\(%r)");
  return std::regex_search(listing, data_gather);
}

}  // namespace rnnc::testing
