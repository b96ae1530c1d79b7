// What a reference kernel sees, and shared helpers for writing kernels plainly.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"

namespace rnnc {

struct KernelContext {
  const Node& node;
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // the kernel assigns one per node output
  // Evaluates a nested graph of this node with the given graph inputs, in this node's scope (its
  // outer-scope references resolve to the enclosing values).
  std::function<std::vector<Tensor>(const Graph&, const std::vector<Tensor>&)> run_subgraph;

  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& input(size_t i) const {
    if (!has_input(i)) fail(cat("required input ", i, " is missing"));
    return *inputs[i];
  }
  [[noreturn]] void fail(const std::string& message) const {
    raise_invalid_model(cat(node.describe(), ": ", message));
  }
  // For data-dependent errors (indices out of range, shapes that disagree at run time).
  [[noreturn]] void fail_input(const std::string& message) const {
    raise_invalid_input(cat(node.describe(), ": ", message));
  }
};

using Kernel = void (*)(KernelContext&);

// nullptr if no reference kernel exists for the op.
Kernel find_kernel(const std::string& op_type);
std::vector<std::string> kernel_op_types();

// Registration hooks of the kernel groups (ir/reference/kernels_*.cc).
void register_elementwise_kernels(std::map<std::string, Kernel>& registry);
void register_recurrent_kernels(std::map<std::string, Kernel>& registry);
void register_nn_kernels(std::map<std::string, Kernel>& registry);
void register_tensor_kernels(std::map<std::string, Kernel>& registry);
void register_control_flow_kernels(std::map<std::string, Kernel>& registry);
void register_quant_kernels(std::map<std::string, Kernel>& registry);
void register_resize_kernels(std::map<std::string, Kernel>& registry);
void register_signal_kernels(std::map<std::string, Kernel>& registry);
void register_sequence_kernels(std::map<std::string, Kernel>& registry);

// ---- helpers -----------------------------------------------------------------------------------

// Multidirectional (numpy) broadcasting of two shapes; fails with `what` if incompatible.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const KernelContext& context);
// Row-major strides with 0 for broadcast dims, mapping an output index to an input offset:
// offset = sum(index[k] * strides[k]) for an input broadcast to `out_shape`.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape);
std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape);

// Calls fn(T{}) with T the C++ type of a float dtype (float, double); f16/bf16 are computed by the
// caller converting to float32. Fails naming the op for other dtypes.
template <typename Fn>
void dispatch_float(DType dtype, const KernelContext& context, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat64: fn(double{}); return;
    default:
      raise_unsupported(cat(context.node.describe(), ": element type ", dtype_onnx_name(dtype),
                            " is not supported by the reference kernel"));
  }
}

// Every numeric dtype with a native C++ type (floats, signed and unsigned ints, bool).
template <typename Fn>
void dispatch_numeric(DType dtype, const KernelContext& context, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt8: fn(int8_t{}); return;
    case DType::kInt16: fn(int16_t{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    case DType::kUInt8: fn(uint8_t{}); return;
    case DType::kUInt16: fn(uint16_t{}); return;
    case DType::kUInt32: fn(uint32_t{}); return;
    case DType::kUInt64: fn(uint64_t{}); return;
    case DType::kBool: fn(bool{}); return;
    default:
      raise_unsupported(cat(context.node.describe(), ": element type ", dtype_onnx_name(dtype),
                            " is not supported by the reference kernel"));
  }
}

// Converts f16/bf16 tensors to f32 (other dtypes pass through), and back.
Tensor widen_half(const Tensor& tensor);
Tensor narrow_to(const Tensor& tensor, DType dtype);

// The inputs joined along `axis` (normalized), which they must agree on except along it
// (kInvalidInput naming the first that does not): Concat and ConcatFromSequence.
Tensor concat_tensors(const KernelContext& context, const std::vector<const Tensor*>& inputs,
                      size_t axis);
// `input` cut along `axis` into pieces of `sizes` (non-negative, summing to the axis's length):
// Split and SplitToSequence.
std::vector<Tensor> split_tensor(const Tensor& input, size_t axis,
                                 const std::vector<int64_t>& sizes);

// Reads an int64 list from a 1-D (or scalar) integer tensor input (shape, axes, pads, ...).
std::vector<int64_t> tensor_to_int64s(const Tensor& tensor);

// The row-major multi-index of position `flat` in a tensor of shape `extent`.
void unravel(int64_t flat, const std::vector<int64_t>& extent, std::vector<int64_t>& index);

// ---- sliding windows (Conv, the pools, ConvInteger, QLinearConv) -------------------------------

// One spatial axis of a sliding window, with auto_pad resolved to explicit pads.
struct WindowAxis {
  int64_t input;
  int64_t kernel;
  int64_t stride;
  int64_t dilation;
  int64_t pad_begin;
  int64_t pad_end;
  int64_t output;
};

// The ONNX Conv/MaxPool/AveragePool output-size and padding formulas for input spatial sizes
// `input` and kernel sizes `kernel` (attributes strides, dilations, pads, auto_pad, ceil_mode).
std::vector<WindowAxis> window_axes(const KernelContext& context, const std::vector<int64_t>& input,
                                    const std::vector<int64_t>& kernel);
std::vector<int64_t> output_spatial_shape(const std::vector<WindowAxis>& axes);
// Every tap of a kernel, as a multi-index, in row-major order.
std::vector<std::vector<int64_t>> kernel_taps(const std::vector<int64_t>& kernel);
// Input coordinates of kernel tap `tap` for the window at output position `out`:
// position = out * stride - pad_begin + tap * dilation, per axis.
void tap_position(const std::vector<WindowAxis>& axes, const std::vector<int64_t>& out,
                  const std::vector<int64_t>& tap, std::vector<int64_t>& position);
bool inside_input(const std::vector<WindowAxis>& axes, const std::vector<int64_t>& position);
int64_t row_major_offset(const std::vector<WindowAxis>& axes,
                         const std::vector<int64_t>& position);

// The sizes of a convolution of X (N x C x D1 ... Dn) by W (M x C/group x k1 ... kn), checked:
// ranks, C == W.shape[1] * group, group divides M, the window fits (kInvalidInput naming the
// inputs as the op's doc does: "X"/"W" for Conv, "x"/"w" for ConvInteger and QLinearConv).
struct ConvGeometry {
  int64_t batch;
  int64_t channels;
  int64_t out_channels;
  int64_t group_channels;  // input channels per group, W.shape[1]
  int64_t group;
  std::vector<int64_t> in_spatial;
  std::vector<int64_t> kernel;
  std::vector<WindowAxis> axes;
  std::vector<int64_t> out_spatial;
  std::vector<int64_t> y_shape;  // N x M x out_spatial
};
ConvGeometry conv_geometry(const KernelContext& context, const std::vector<int64_t>& x_shape,
                           const std::vector<int64_t>& w_shape, const char* x_name,
                           const char* w_name);

// Visits every output element of a convolution, calling emit(y_offset, m, sum) with
//   sum = init(m) + sum over c in m's group, taps k inside X of term(x_offset, w_offset)
// accumulated in Sum in the order c, then k; taps that land in the padding contribute nothing.
template <typename Sum, typename Init, typename Term, typename Emit>
void convolve(const ConvGeometry& g, Init init, Term term, Emit emit) {
  std::vector<std::vector<int64_t>> taps = kernel_taps(g.kernel);
  int64_t kernel_size = static_cast<int64_t>(taps.size());
  int64_t in_size = shape_numel(g.in_spatial);
  int64_t out_size = shape_numel(g.out_spatial);
  int64_t out_channels_per_group = g.out_channels / g.group;
  std::vector<int64_t> out_index, position;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t m = 0; m < g.out_channels; ++m) {
      int64_t first_channel = (m / out_channels_per_group) * g.group_channels;
      for (int64_t o = 0; o < out_size; ++o) {
        unravel(o, g.out_spatial, out_index);
        Sum sum = init(m);
        for (int64_t c = 0; c < g.group_channels; ++c) {
          int64_t x_plane = (n * g.channels + first_channel + c) * in_size;
          int64_t w_plane = (m * g.group_channels + c) * kernel_size;
          for (int64_t k = 0; k < kernel_size; ++k) {
            tap_position(g.axes, out_index, taps[static_cast<size_t>(k)], position);
            if (!inside_input(g.axes, position)) continue;
            sum += term(x_plane + row_major_offset(g.axes, position), w_plane + k);
          }
        }
        emit((n * g.out_channels + m) * out_size + o, m, sum);
      }
    }
  }
}

}  // namespace rnnc
