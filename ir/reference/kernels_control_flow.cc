// Reference kernels for If, Loop and Scan (ONNX control flow; docs/ops/control_flow.md). Bodies
// run through the evaluator in this node's scope, so their outer-scope references see the
// enclosing graph's values.
#include <algorithm>
#include <cstring>
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

// Copies element `index` of `source` along `axis` into, or out of, a tensor without that axis:
// the one routine Scan slices its inputs and places its outputs with.
void copy_along_axis(const Tensor& from, Tensor& to, int64_t axis, int64_t index, bool into_axis) {
  const Tensor& full = into_axis ? to : from;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= full.dim(d);
  for (int64_t d = axis + 1; d < full.rank(); ++d) inner *= full.dim(d);
  int64_t length = full.dim(axis);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t full_at = (o * length + index) * inner;
    int64_t part_at = o * inner;
    int64_t to_at = into_axis ? full_at : part_at, from_at = into_axis ? part_at : full_at;
    if (from.dtype() == DType::kString) {
      for (int64_t k = 0; k < inner; ++k) to.strings()[to_at + k] = from.strings()[from_at + k];
    } else {
      size_t size = dtype_size(from.dtype());
      std::memcpy(static_cast<uint8_t*>(to.raw_data()) + to_at * size,
                  static_cast<const uint8_t*>(from.raw_data()) + from_at * size, inner * size);
    }
  }
}

Tensor slice_along_axis(const Tensor& source, int64_t axis, int64_t index) {
  std::vector<int64_t> shape = source.shape();
  shape.erase(shape.begin() + axis);
  Tensor part(source.dtype(), shape);
  copy_along_axis(source, part, axis, index, /*into_axis=*/false);
  return part;
}

// A scan attribute list (axes or directions) of `count` entries, zeros when absent.
std::vector<int64_t> scan_attr(const KernelContext& context, const std::string& name,
                               size_t count) {
  std::vector<int64_t> values = context.node.attr_ints(name, std::vector<int64_t>(count, 0));
  if (values.size() != count) {
    context.fail(cat("attribute '", name, "' has ", values.size(), " entries, expected ", count));
  }
  return values;
}

int64_t scan_axis(const KernelContext& context, int64_t axis, int64_t rank,
                  const std::string& what) {
  if (axis < -rank || axis >= rank) {
    context.fail(cat(what, " = ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// One Scan over `states` and `scan_inputs` (opset 9+ semantics; opset 8 calls it once per batch
// entry). Scan input j is read along scan_axes[j], backwards when input_directions[j] is 1; scan
// output k is stacked along output_axes[k], prepending when output_directions[k] is 1. Outputs:
// the final states, then the scan outputs.
std::vector<Tensor> run_scan(const KernelContext& context, std::vector<Tensor> states,
                             const std::vector<Tensor>& scan_inputs,
                             const std::vector<int64_t>& input_axes,
                             const std::vector<int64_t>& input_directions,
                             const std::vector<int64_t>& output_axes,
                             const std::vector<int64_t>& output_directions, int64_t length) {
  const Graph& body = *context.node.attr_graph("body");
  size_t scan_outputs = body.outputs().size() - states.size();
  std::vector<std::vector<Tensor>> parts(scan_outputs);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> body_inputs = states;
    for (size_t j = 0; j < scan_inputs.size(); ++j) {
      int64_t index = input_directions[j] ? length - 1 - t : t;
      body_inputs.push_back(slice_along_axis(scan_inputs[j], input_axes[j], index));
    }
    std::vector<Tensor> out = context.run_subgraph(body, body_inputs);
    for (size_t k = 0; k < states.size(); ++k) states[k] = out[k];
    for (size_t k = 0; k < scan_outputs; ++k) parts[k].push_back(out[states.size() + k]);
  }
  size_t state_count = states.size();
  std::vector<Tensor> results = std::move(states);
  for (size_t k = 0; k < scan_outputs; ++k) {
    const TensorType& element = body.outputs()[state_count + k]->type;
    std::vector<int64_t> element_shape;
    if (!parts[k].empty()) {
      element_shape = parts[k][0].shape();
    } else if (element.shape) {
      for (const Dim& d : *element.shape) element_shape.push_back(d.is_known() ? d.value() : 0);
    }
    DType dtype = parts[k].empty() ? element.dtype : parts[k][0].dtype();
    int64_t axis = scan_axis(context, output_axes[k], static_cast<int64_t>(element_shape.size()) + 1,
                             cat("scan_output_axes[", k, "]"));
    std::vector<int64_t> shape = element_shape;
    shape.insert(shape.begin() + axis, length);
    Tensor stacked(dtype, shape);
    for (int64_t t = 0; t < static_cast<int64_t>(parts[k].size()); ++t) {
      const Tensor& part = parts[k][static_cast<size_t>(t)];
      if (part.shape() != element_shape || part.dtype() != dtype) {
        context.fail_input(cat("scan output ", k, " changes shape or type between iterations (",
                               shape_text(element_shape), " then ", shape_text(part.shape()), ")"));
      }
      copy_along_axis(part, stacked, axis, output_directions[k] ? length - 1 - t : t,
                      /*into_axis=*/true);
    }
    results.push_back(std::move(stacked));
  }
  return results;
}

// Scan (opset 9+): (states..., scan outputs...) = scan of body over the scan inputs' scan axes.
// Opset 8: the same per entry of a leading batch axis, entry b running sequence_lens[b] steps
// (scan outputs zero past it), scan inputs read along axis 1.
void scan_kernel(KernelContext& context) {
  const Node& node = context.node;
  const Graph& body = *node.attr_graph("body");
  int64_t scan_count = node.attr_int("num_scan_inputs", -1);
  bool batched = node.opset() < 9;
  size_t first = batched ? 1 : 0;
  size_t states = node.num_inputs() - first - static_cast<size_t>(scan_count);
  size_t scan_outputs = body.outputs().size() - states;
  size_t m = static_cast<size_t>(scan_count);
  std::vector<Tensor> initial, scans;
  for (size_t k = 0; k < states; ++k) initial.push_back(context.input(first + k));
  for (size_t j = 0; j < m; ++j) scans.push_back(context.input(first + states + j));
  if (!batched) {
    std::vector<int64_t> input_axes = scan_attr(context, "scan_input_axes", m);
    int64_t length = -1;
    for (size_t j = 0; j < m; ++j) {
      input_axes[j] = scan_axis(context, input_axes[j], scans[j].rank(),
                                cat("scan_input_axes[", j, "]"));
      int64_t n = scans[j].dim(input_axes[j]);
      if (length >= 0 && n != length) {
        context.fail_input(cat("scan input ", j, " has length ", n, " along axis ", input_axes[j],
                               " but scan input 0 has ", length));
      }
      length = n;
    }
    context.outputs = run_scan(context, initial, scans, input_axes,
                               scan_attr(context, "scan_input_directions", m),
                               scan_attr(context, "scan_output_axes", scan_outputs),
                               scan_attr(context, "scan_output_directions", scan_outputs),
                               std::max<int64_t>(length, 0));
    return;
  }
  // Opset 8: slice the batch, scan each entry, stack the results back along axis 0.
  std::vector<int64_t> directions = scan_attr(context, "directions", m);
  std::vector<int64_t> input_axes(m, 0);
  std::vector<int64_t> zeros(scan_outputs, 0);
  int64_t batch = -1, max_length = -1;
  for (const Tensor& t : initial) batch = t.rank() > 0 ? t.dim(0) : batch;
  for (size_t j = 0; j < m; ++j) {
    if (scans[j].rank() < 2) context.fail_input(cat("scan input ", j, " needs rank >= 2"));
    batch = scans[j].dim(0);
    if (max_length >= 0 && scans[j].dim(1) != max_length) {
      context.fail_input(cat("scan input ", j, " has length ", scans[j].dim(1),
                             " but scan input 0 has ", max_length));
    }
    max_length = scans[j].dim(1);
  }
  std::vector<int64_t> lengths(static_cast<size_t>(std::max<int64_t>(batch, 0)), max_length);
  if (context.has_input(0)) {
    const Tensor& given = context.input(0);
    if (given.numel() != batch) {
      context.fail_input(cat("sequence_lens has ", given.numel(), " entries, batch is ", batch));
    }
    for (int64_t b = 0; b < batch; ++b) {
      lengths[b] = given.get_int64(b);
      if (lengths[b] < 0 || lengths[b] > max_length) {
        context.fail_input(cat("sequence_lens[", b, "] = ", lengths[b], " is outside [0, ",
                               max_length, "]"));
      }
    }
  }
  std::vector<std::vector<Tensor>> per_entry;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> entry_states, entry_scans;
    for (const Tensor& t : initial) entry_states.push_back(slice_along_axis(t, 0, b));
    for (const Tensor& t : scans) {
      Tensor entry = slice_along_axis(t, 0, b);
      if (lengths[b] < max_length) {  // only the first sequence_lens[b] steps are scanned
        std::vector<int64_t> shape = entry.shape();
        shape[0] = lengths[b];
        Tensor head(entry.dtype(), shape);
        for (int64_t t2 = 0; t2 < lengths[b]; ++t2) {
          Tensor step = slice_along_axis(entry, 0, t2);
          copy_along_axis(step, head, 0, t2, /*into_axis=*/true);
        }
        entry = head;
      }
      entry_scans.push_back(entry);
    }
    per_entry.push_back(run_scan(context, entry_states, entry_scans, input_axes, directions,
                                 zeros, zeros, lengths[b]));
  }
  for (size_t k = 0; k < node.num_outputs(); ++k) {
    std::vector<int64_t> shape;
    DType dtype = DType::kUndefined;
    for (const auto& entry : per_entry) {
      std::vector<int64_t> entry_shape = entry[k].shape();
      if (k >= states) entry_shape[0] = max_length;  // padded to the longest sequence
      if (shape.empty()) shape = entry_shape;
      dtype = entry[k].dtype();
    }
    if (per_entry.empty()) {
      const TensorType& type = body.outputs()[k]->type;
      dtype = type.dtype;
      if (k >= states) shape.push_back(0);
      if (type.shape) {
        for (const Dim& d : *type.shape) shape.push_back(d.is_known() ? d.value() : 0);
      }
    }
    shape.insert(shape.begin(), std::max<int64_t>(batch, 0));
    Tensor out(dtype, shape);
    for (int64_t b = 0; b < batch; ++b) {
      Tensor entry = per_entry[static_cast<size_t>(b)][k];
      if (k >= states && entry.dim(0) < max_length) {
        std::vector<int64_t> padded = entry.shape();
        padded[0] = max_length;
        Tensor full(entry.dtype(), padded);
        for (int64_t t2 = 0; t2 < entry.dim(0); ++t2) {
          copy_along_axis(slice_along_axis(entry, 0, t2), full, 0, t2, /*into_axis=*/true);
        }
        entry = full;
      }
      if (entry.dtype() != dtype || std::vector<int64_t>(shape.begin() + 1, shape.end()) !=
                                        entry.shape()) {
        context.fail_input(cat("output ", k, " differs in shape between batch entries"));
      }
      copy_along_axis(entry, out, 0, b, /*into_axis=*/true);
    }
    context.outputs[k] = std::move(out);
  }
}

}  // namespace

void register_control_flow_kernels(std::map<std::string, Kernel>& registry) {
  registry["If"] = if_kernel;
  registry["Loop"] = loop_kernel;
  registry["Scan"] = scan_kernel;
}

}  // namespace rnnc
