// Object-code checks for tests: a compiled kernel's disassembly, and the instruction patterns that
// mean a schedule silently lost its vector form (every numeric test would still pass).
#pragma once

#include <string>

namespace rnnc::testing {

// `objdump -d` of an object file or shared library; an kIo error when objdump fails.
std::string disassemble(const std::string& object_path);

// Whether the listing gathers data: a gather addressing memory from a base register
// (vgatherqps (%rax,%zmm2,4)). LLVM's loads of buffer fields through a vector of pointers
// (0x4(,%ymm14,1), in a kernel's argument prologue) are not data accesses and do not count.
bool gathers_data(const std::string& listing);

}  // namespace rnnc::testing
