// Special cases of the quantization ops: the shapes of the quantization parameters (per tensor,
// per axis, per row or column, per output channel), matrix and convolution geometry, ties for
// QuantizeLinear's rounding, and DynamicQuantizeLinear inputs on one side of 0.
#include <algorithm>
#include <cmath>

#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

// One value for the whole tensor: a scalar or, sometimes, a one-element vector.
std::vector<int64_t> single_value_shape(Draft& draft) {
  return draft.rng.chance(0.3) ? std::vector<int64_t>{1} : std::vector<int64_t>{};
}

// QuantizeLinear / DequantizeLinear (inputs x, scale, zero point): per tensor, or from opset 13
// per axis along a random `axis` (sometimes the default 1).
void linear_quantization(Draft& draft) {
  OperandDraft& x = draft.inputs[0];
  OperandDraft& scale = draft.inputs[1];
  OperandDraft& zero_point = draft.inputs[2];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> shape = single_value_shape(draft);
  if (draft.opset >= 13 && rank >= 1 && draft.rng.chance(0.5)) {
    int64_t axis = draft.attr_rng.uniform_int(-rank, rank - 1);
    if (rank >= 2 && draft.attr_rng.chance(0.3)) {
      axis = 1;  // the default, left out
    } else {
      draft.set_int("axis", axis);
    }
    shape = {x.shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)]};
    draft.tags.insert("per_axis");
  }
  scale.shape = shape;
  zero_point.shape = shape;
  bool quantize = draft.spec.op_type == "QuantizeLinear";
  if (quantize && draft.types.at("T2") == DType::kInt8) {
    zero_point.present = true;  // without it the output is uint8
  }
  if (!quantize && draft.types.at("T") == DType::kInt32 && zero_point.present) {
    // int32 has no zero point: absent, or zeros.
    draft.set_data(zero_point, make_tensor(DType::kInt32, shape,
                                           std::vector<double>(shape.empty() ? 1 : shape[0], 0)));
  }
  if (quantize && is_floating(x.dtype) && draft.rng.chance(0.3)) {
    // Exact halves of the scale: x / scale lands on ties, which round to even.
    static const std::vector<double> kScales = {0.5, 1, 2};
    double s = draft.rng.pick(kScales);
    int64_t count = shape.empty() ? 1 : shape[0];
    draft.set_data(scale, make_tensor(DType::kFloat32, shape, std::vector<double>(count, s)));
    draft.fill(x);
    Tensor halves = x.data;
    for (int64_t i = 0; i < halves.numel(); ++i) {
      halves.set_double(i, std::round(halves.get_double(i) / s * 2) / 2 * s);
    }
    draft.set_data(x, halves);
    draft.tags.insert("ties");
  }
}

// DynamicQuantizeLinear: x straddling 0 (the default draw), all positive or all negative.
void dynamic_quantization(Draft& draft) {
  OperandDraft& x = draft.inputs[0];
  double side = draft.rng.pick(std::vector<double>{0, 1, -1});
  if (side == 0) return;
  draft.fill(x);
  Tensor shifted = x.data;
  for (int64_t i = 0; i < shifted.numel(); ++i) {
    shifted.set_double(i, side * (std::abs(shifted.get_double(i)) + 0.01));
  }
  draft.set_data(x, shifted);
  draft.tags.insert(side > 0 ? "all_positive" : "all_negative");
}

// numpy.matmul shapes for A (the planned rank) and B (random rank): K agrees, batch dims
// broadcast (a suffix of a common batch shape, some dims 1). Returns {M, K, N}.
std::vector<int64_t> matrix_shapes(Draft& draft, OperandDraft& a, OperandDraft& b) {
  int64_t rank_a = static_cast<int64_t>(a.shape.size());
  int64_t rank_b = draft.rng.uniform_int(1, 3);
  std::vector<int64_t> mkn = draft.random_dims(3, 1, 5);
  size_t which = static_cast<size_t>(draft.rng.uniform_int(0, 2));
  if (draft.forced_is(Boundary::kDim1)) mkn[which] = 1;
  if (draft.forced_is(Boundary::kDim0)) mkn[which] = 0;
  if (draft.forced_is(Boundary::kDimLarge)) mkn[which] = draft.rng.uniform_int(kLargeDim, 80);
  if (mkn[1] == 0) draft.tags.insert("empty_k");  // a sum over nothing: the product is 0
  int64_t batch_rank = std::max<int64_t>(0, std::max(rank_a, rank_b) - 2);
  std::vector<int64_t> batch = draft.random_dims(batch_rank, 1, 3);
  auto batch_of = [&](int64_t rank) {
    std::vector<int64_t> dims(batch.end() - std::max<int64_t>(0, rank - 2), batch.end());
    for (auto& d : dims) {
      if (draft.rng.chance(0.25)) d = 1;
    }
    return dims;
  };
  a.shape = rank_a == 1 ? std::vector<int64_t>{mkn[1]} : batch_of(rank_a);
  if (rank_a > 1) {
    a.shape.push_back(mkn[0]);
    a.shape.push_back(mkn[1]);
  }
  b.shape = rank_b == 1 ? std::vector<int64_t>{mkn[1]} : batch_of(rank_b);
  if (rank_b > 1) {
    b.shape.push_back(mkn[1]);
    b.shape.push_back(mkn[2]);
  }
  return mkn;
}

// A parameter of A's rows (per_row) or of B's columns: one value; a vector of M (N) values; or
// the matrix's shape with its last (second-to-last) dim 1.
std::vector<int64_t> matrix_parameter_shape(Draft& draft, const std::vector<int64_t>& matrix,
                                            bool per_row) {
  if (matrix.size() < 2 || draft.rng.chance(0.5)) return single_value_shape(draft);
  draft.tags.insert(per_row ? "per_row" : "per_column");
  if (draft.rng.chance(0.5)) {
    // The doc's 2-D form applied to a batched matrix.
    if (matrix.size() > 2)
      draft.tags.insert(per_row ? "row_vector_batched" : "column_vector_batched");
    return {matrix[matrix.size() - (per_row ? 2 : 1)]};
  }
  std::vector<int64_t> shape = matrix;
  shape[shape.size() - (per_row ? 1 : 2)] = 1;
  return shape;
}

void matmul_integer(Draft& draft) {
  OperandDraft& a = draft.inputs[0];
  OperandDraft& b = draft.inputs[1];
  matrix_shapes(draft, a, b);
  draft.inputs[2].shape = matrix_parameter_shape(draft, a.shape, true);
  draft.inputs[3].shape = matrix_parameter_shape(draft, b.shape, false);
}

// QLinearMatMul (a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point).
void qlinear_matmul(Draft& draft) {
  OperandDraft& a = draft.inputs[0];
  OperandDraft& b = draft.inputs[3];
  matrix_shapes(draft, a, b);
  std::vector<int64_t> a_params = matrix_parameter_shape(draft, a.shape, true);
  std::vector<int64_t> b_params = matrix_parameter_shape(draft, b.shape, false);
  std::vector<int64_t> y_params = single_value_shape(draft);
  draft.inputs[1].shape = draft.inputs[2].shape = a_params;
  draft.inputs[4].shape = draft.inputs[5].shape = b_params;
  draft.inputs[6].shape = draft.inputs[7].shape = y_params;
}

// ConvInteger (x, w, x_zero_point, w_zero_point) and QLinearConv (x, x_scale, x_zero_point, w,
// w_scale, w_zero_point, y_scale, y_zero_point, B): the primary rank's spatial axes, kernels of 1
// to 3 with optional strides, dilations and explicit pads, group 1 or 2; w's parameters per
// tensor or per output channel.
void integer_conv(Draft& draft) {
  bool qlinear = draft.spec.op_type == "QLinearConv";
  OperandDraft& x = draft.inputs[0];
  OperandDraft& w = draft.inputs[qlinear ? 3 : 1];
  size_t spatial = x.shape.size() - 2;
  Rng& rng = draft.attr_rng;
  std::vector<int64_t> kernel, strides, dilations, pads(2 * spatial, 0);
  bool strided = rng.chance(0.5), dilated = rng.chance(0.5), padded = rng.chance(0.5);
  for (size_t i = 0; i < spatial; ++i) {
    kernel.push_back(rng.uniform_int(1, 3));
    strides.push_back(strided ? rng.uniform_int(1, 2) : 1);
    dilations.push_back(dilated ? rng.uniform_int(1, 2) : 1);
  }
  for (size_t i = 0; padded && i < 2 * spatial; ++i) pads[i] = rng.uniform_int(0, 2);
  if (strided) draft.set_ints("strides", strides);
  if (dilated) draft.set_ints("dilations", dilations);
  if (padded) draft.set_ints("pads", pads);
  if (rng.chance(0.5)) draft.set_ints("kernel_shape", kernel);
  int64_t group = draft.attr_int("group", 1);
  int64_t channels_per_group = draft.rng.uniform_int(1, 3);
  int64_t maps = group * draft.rng.uniform_int(1, 2);
  int64_t n = draft.forced_is(Boundary::kDim0) ? 0 : draft.rng.uniform_int(1, 2);
  x.shape = {n, group * channels_per_group};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    int64_t least = std::max<int64_t>(1, extent - pads[i] - pads[i + spatial]);
    int64_t size = least + draft.rng.uniform_int(0, spatial == 1 ? 6 : 3);
    if (draft.forced_is(Boundary::kDimLarge) && i == 0) size = std::max(size, kLargeDim);
    x.shape.push_back(size);
  }
  w.shape = {maps, channels_per_group};
  w.shape.insert(w.shape.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> per_channel =
      draft.rng.chance(0.5) ? std::vector<int64_t>{maps} : single_value_shape(draft);
  if (per_channel.size() == 1 && per_channel[0] == maps && maps > 1) {
    draft.tags.insert("per_channel");
  }
  if (group > 1) draft.tags.insert("grouped");
  if (!qlinear) {
    draft.inputs[2].shape = single_value_shape(draft);
    draft.inputs[3].shape = per_channel;
    return;
  }
  draft.inputs[1].shape = draft.inputs[2].shape = single_value_shape(draft);
  draft.inputs[4].shape = draft.inputs[5].shape = per_channel;
  draft.inputs[6].shape = draft.inputs[7].shape = single_value_shape(draft);
  draft.inputs[8].shape = {maps};
}

}  // namespace

void add_quant_special_cases(std::map<std::string, SpecialCase>& table) {
  table["linear_quantization"] = linear_quantization;
  table["dynamic_quantization"] = dynamic_quantization;
  table["matmul_integer"] = matmul_integer;
  table["qlinear_matmul"] = qlinear_matmul;
  table["integer_conv"] = integer_conv;
}

}  // namespace rnnc::conformance
