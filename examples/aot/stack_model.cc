// Writes the 4-layer stacked LSTM the runtime tests build (tests/runtime/test_models.h: input and
// hidden 128, seeded weights, layers joined by Squeeze as PyTorch exports them) as an ONNX file,
// for the AOT example: aot_stack_model OUT.onnx
#include <fstream>
#include <iostream>

#include "tests/runtime/test_models.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: aot_stack_model OUT.onnx\n";
    return 2;
  }
  const std::string bytes = rnnc::testing::stacked_recurrent_onnx("LSTM", 4, 128, 128);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
