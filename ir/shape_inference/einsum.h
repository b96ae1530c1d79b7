// The Einsum equation, parsed for shape inference (elementwise.cc) and the reference kernel
// (kernels_elementwise.cc): every axis of every operand gets a label, letters for the named
// axes and one label per broadcast dim of the ellipsis (docs/ops/elementwise.md, "Einsum").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

struct EinsumEquation {
  // Labels 0..51 are the letters a-z, A-Z; 52 + k is dim k of the ellipsis, which covers the
  // same number of dims in every operand (ONNX's rule), size-1 dims broadcasting.
  std::vector<std::vector<int>> inputs;  // per operand, per axis
  std::vector<int> output;
  int labels = 0;  // 52 + the ellipsis' rank
};

// Parses attribute 'equation' for operands of the given ranks; kInvalidModel naming the node and
// the attribute for a malformed equation or one that does not fit the ranks. Without "->" the
// output is the ellipsis dims followed by the letters that occur once, in alphabetical order
// (uppercase first, numpy's rule).
EinsumEquation parse_einsum(const Node& node, const std::vector<int64_t>& ranks);

std::string einsum_label_name(int label);

}  // namespace rnnc
