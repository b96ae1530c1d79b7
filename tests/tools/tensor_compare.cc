// tensor_compare ACTUAL EXPECTED [RTOL ATOL]: exits 0 if the two tensor files (.pb or .npy) match
// within |a - e| <= atol + rtol * |e|, else prints the first mismatch and exits 1.
#include <iostream>

#include "ir/npy.h"
#include "tests/support/compare.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: tensor_compare ACTUAL EXPECTED [RTOL ATOL]\n";
    return 2;
  }
  try {
    rnnc::testing::Tolerance tolerance{argc == 5 ? std::stod(argv[3]) : 1e-5,
                                       argc == 5 ? std::stod(argv[4]) : 1e-6};
    auto result = rnnc::testing::compare_tensors(rnnc::read_tensor_file(argv[1]),
                                                 rnnc::read_tensor_file(argv[2]), tolerance);
    std::cout << "max abs diff " << result.max_abs_diff << "\n";
    if (!result.ok) {
      std::cerr << argv[1] << " vs " << argv[2] << ": " << result.message << "\n";
      return 1;
    }
    return 0;
  } catch (const rnnc::Error& e) {
    std::cerr << "tensor_compare: " << e.what() << "\n";
    return 2;
  }
}
