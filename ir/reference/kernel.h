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

// Reads an int64 list from a 1-D (or scalar) integer tensor input (shape, axes, pads, ...).
std::vector<int64_t> tensor_to_int64s(const Tensor& tensor);

}  // namespace rnnc
