// Convolution shape inference shared by Conv (nn.cc) and ConvInteger/QLinearConv (quant.cc):
// the window attributes, kernel_shape against W, group and channel checks, and the output size
// formulas of docs/ops/nn.md, with the inputs named as each op's doc names them.
#pragma once

#include <optional>

#include "ir/op_schema.h"

namespace rnnc {

// Where the data and weight inputs sit, and their names in the op's doc ("X"/"W", "x"/"w").
struct ConvOperands {
  size_t x;
  const char* x_name;
  size_t w;
  const char* w_name;
};

// The output shape N x M x D1' ... Dn'; nullopt when the data input's rank is unknown.
// Contradictions visible from known dims are kInvalidModel naming the node and the field.
std::optional<Shape> conv_output_shape(const InferenceContext& context, const ConvOperands& in);

// A bias input must be 1-D with one element per output channel.
void check_conv_bias(const InferenceContext& context, size_t input, const char* name,
                     const Dim& out_channels, const char* w_name);

}  // namespace rnnc
