// Writes a stacked LSTM the runtime tests build (tests/runtime/test_models.h: seeded weights,
// layers joined by Squeeze as PyTorch exports them) as an ONNX file, for the AOT examples:
//   aot_stack_model OUT.onnx [LAYERS INPUT HIDDEN]     (default 4 128 128)
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "tests/runtime/test_models.h"

int main(int argc, char** argv) {
  if (argc != 2 && argc != 5) {
    std::cerr << "usage: aot_stack_model OUT.onnx [LAYERS INPUT HIDDEN]\n";
    return 2;
  }
  const int layers = argc == 5 ? std::atoi(argv[2]) : 4;
  const int input = argc == 5 ? std::atoi(argv[3]) : 128;
  const int hidden = argc == 5 ? std::atoi(argv[4]) : 128;
  const std::string bytes = rnnc::testing::stacked_recurrent_onnx("LSTM", layers, hidden, input);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
