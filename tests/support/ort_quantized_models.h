// Models as ONNX Runtime's quantizer writes them, for tests. quantize_dynamic's MatMuls
// (graph_opt/fuse_integer_matmul.cc): x -> DynamicQuantizeLinear -> MatMulInteger by a seeded
// int8/uint8 weight -> Cast -> Mul by x_scale * w_scale (-> Add of a float bias), one output per
// product; or the same products as ONNX Runtime's fused contrib operators (ir/contrib_ops.h). Convs
// (graph_opt/conv_integer_to_float.cc): x -> DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul ->
// Add of a bias per channel. quantize_static's QDQ format (graph_opt/expand_quantization.cc):
// QuantizeLinear + DequantizeLinear pairs on activations around a Conv of DequantizeLinear weights
// and bias.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace rnnc::testing {

struct IntegerMatMulCase {
  enum class Form {
    kChain,                  // the default-domain ops
    kDynamicQuantizeMatMul,  // com.microsoft.DynamicQuantizeMatMul (x, w, w_scale, w_zp, bias)
    kMatMulIntegerToFloat,   // DynamicQuantizeLinear, then com.microsoft.MatMulIntegerToFloat
  };
  Form form = Form::kChain;
  std::vector<std::string> rows = {"seq", "batch"};  // x's leading dims (symbolic), then k
  int64_t k = 24, n = 10;
  DType dtype = DType::kInt8;
  bool per_column = true;      // a scale and zero point per column of the weight, else one
  bool zero_points = true;     // nonzero weight zero points, else 0 (or none: no_zero_point)
  bool no_zero_point = false;  // MatMulInteger without its b_zero_point input
  bool reduce_range = true;    // 7-bit weights, as quantize_dynamic's default
  bool scales_first = false;   // Mul(scales, cast) and Mul(w_scale, x_scale), else the other order
  bool bias = true;            // an Add of a float bias after the product, as a Linear layer's
  int products = 1;            // products of the one DynamicQuantizeLinear, outputs y0, y1, ...
  int opset = 13;
};

// ONNX bytes of the case's model; input "x".
std::string integer_matmul_model(const IntegerMatMulCase& c, uint32_t seed = 5);

struct IntegerConvCase {
  std::vector<int64_t> kernel = {3};  // 1-D or 2-D; x is [batch, channels, time (, width)]
  int64_t channels = 6, out_channels = 8, group = 1;
  std::vector<int64_t> strides, pads, dilations;  // empty: the attribute is left out
  DType dtype = DType::kInt8;                     // of the weight
  bool per_channel = true;                        // a weight zero point per output channel
  bool zero_points = true;  // ConvInteger's zero point inputs, else x is quantized without one
  int weight_bound = 63;    // weights in center +- this (quantize_dynamic's 7-bit default: 63)
  bool one_sided = false;   // weights in [center, center + weight_bound] only: sums add up
  int opset = 13;
};

// ONNX bytes of the case's model: input "x" [batch, channels, time (, width)] with symbolic
// batch and spatial dims; outputs "y" (scaled, with a bias) and "sums" (the ConvInteger's sums
// cast to float, the integers themselves).
std::string integer_conv_model(const IntegerConvCase& c, uint32_t seed = 5);

// `onnx_bytes` with every Conv of the top-level graph by constant weights (and bias) rewritten as
// quantize_dynamic writes it with its defaults (models/make_workloads.py
// dynamically_quantized does the same for the bench): DynamicQuantizeLinear of the input,
// ConvInteger by the int8 weight (symmetric, one scale), Cast, Mul by x_scale * w_scale, Add of
// the bias as [1, M, 1, ...].
std::string dynamically_quantized_convs(const std::string& onnx_bytes);

struct QdqConvCase {
  int64_t channels = 8, out_channels = 12, kernel = 3;
  DType activations = DType::kUInt8;  // of the QDQ pairs' zero points (int8 or uint8)
  float x_scale = 0.02f, y_scale = 0.05f;
  int x_zero_point = 3, y_zero_point = -5;  // as int8 values; uint8 pairs add 128
};

// ONNX bytes: input "x" f32[batch, channels, time] -> QuantizeLinear -> DequantizeLinear ("x_dq",
// also an output) -> Conv (pads 1) by DequantizeLinear(int8 weights, a scale per output channel)
// with DequantizeLinear(int32 bias, x_scale * w_scale) -> QuantizeLinear -> DequantizeLinear ->
// Relu ("y").
std::string qdq_conv_model(const QdqConvCase& c, uint32_t seed = 5);

}  // namespace rnnc::testing
