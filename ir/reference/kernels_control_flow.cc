// Reference kernels for If and Loop (ONNX control flow). Bodies run through the evaluator in
// this node's scope, so their outer-scope references see the enclosing graph's values.
#include <limits>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

bool scalar_condition(const KernelContext& context, const Tensor& cond, const std::string& what) {
  if (cond.numel() != 1) {
    context.fail_input(cat(what, " must hold exactly one element, got ", cond.numel()));
  }
  return cond.get_int64(0) != 0;
}

// If: outputs = (cond ? then_branch : else_branch)().
void if_kernel(KernelContext& context) {
  bool cond = scalar_condition(context, context.input(0), "input 'cond'");
  Graph* branch = context.node.attr_graph(cond ? "then_branch" : "else_branch");
  context.outputs = context.run_subgraph(*branch, {});
}

// Stacks per-iteration values along a new leading axis; with zero iterations the element shape
// comes from the body's inferred type when known.
Tensor stack(const std::vector<Tensor>& parts, const TensorType& element_type,
             const KernelContext& context) {
  if (parts.empty()) {
    std::vector<int64_t> shape{0};
    if (element_type.shape) {
      for (const Dim& d : *element_type.shape) shape.push_back(d.is_known() ? d.value() : 0);
    }
    return Tensor(element_type.dtype, shape);
  }
  std::vector<int64_t> shape = parts[0].shape();
  for (const Tensor& part : parts) {
    if (part.shape() != shape || part.dtype() != parts[0].dtype()) {
      context.fail_input("a scan output changes shape or type between iterations");
    }
  }
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  Tensor out(parts[0].dtype(), shape);
  if (out.dtype() == DType::kString) {
    size_t k = 0;
    for (const Tensor& part : parts) {
      for (const auto& s : part.strings()) out.strings()[k++] = s;
    }
    return out;
  }
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (const Tensor& part : parts) {
    std::memcpy(dst, part.raw_data(), part.nbytes());
    dst += part.nbytes();
  }
  return out;
}

// Loop: for (i = 0; i < M && cond; ++i) (cond, v..., scan...) = body(i, cond, v...).
void loop_kernel(KernelContext& context) {
  const Graph& body = *context.node.attr_graph("body");
  int64_t max_trips = context.has_input(0) ? context.input(0).get_int64(0)
                                           : std::numeric_limits<int64_t>::max();
  bool cond = context.has_input(1) ? scalar_condition(context, context.input(1), "input 'cond'")
                                   : true;
  size_t carried = context.node.num_inputs() - 2;
  std::vector<Tensor> values;
  for (size_t k = 0; k < carried; ++k) values.push_back(context.input(k + 2));
  size_t scans = body.outputs().size() - 1 - carried;
  std::vector<std::vector<Tensor>> scan_parts(scans);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    std::vector<Tensor> body_inputs{Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    body_inputs.insert(body_inputs.end(), values.begin(), values.end());
    std::vector<Tensor> out = context.run_subgraph(body, body_inputs);
    cond = scalar_condition(context, out[0], "the body's cond output");
    for (size_t k = 0; k < carried; ++k) values[k] = out[k + 1];
    for (size_t k = 0; k < scans; ++k) scan_parts[k].push_back(out[carried + 1 + k]);
  }
  for (size_t k = 0; k < context.outputs.size(); ++k) {
    context.outputs[k] = k < carried ? values[k]
                                     : stack(scan_parts[k - carried],
                                             body.outputs()[carried + 1 + (k - carried)]->type,
                                             context);
  }
}

}  // namespace

void register_control_flow_kernels(std::map<std::string, Kernel>& registry) {
  registry["If"] = if_kernel;
  registry["Loop"] = loop_kernel;
}

}  // namespace rnnc
