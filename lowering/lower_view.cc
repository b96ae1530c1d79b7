#include "lowering/lower_view.h"

#include <cstring>
#include <string>

#include "ir/reference/evaluator.h"
#include "lowering/aot_writer.h"
#include "lowering/core/copy_kernels.h"
#include "lowering/int_operands.h"

namespace rnnc {

namespace {

constexpr size_t kMaxRank = 8;

// Where the view's elements are: `rank` dims of `shape`, from element `offset` of the input.
struct View {
  int64_t shape[kMaxRank];
  size_t rank = 0;
  int64_t offset = 0;
};

// A session's last located view and the input shape and dtype it was located for (used when
// the view's other operands are constants, so the shape alone decides it).
struct ViewMemo : BlockRunState {
  bool valid = false;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> input_shape;
  View view;
};

class ViewBlock : public ExecutionBlock {
 public:
  explicit ViewBlock(const Node& node) : node_(node) {
    for (size_t i = 1; i < node_.num_inputs(); ++i) {
      const Value* operand = node_.input(i);
      if (operand && (!operand->is_constant() || operand->is_graph_input()))
        constant_operands_ = false;
    }
  }

  std::string kind() const override { return "view " + node_.op_type(); }
  bool aliases_input() const override { return true; }

  void run(BlockIO& io) const override {
    const Tensor* operands[2] = {};
    for (size_t i = 0; i < node_.num_inputs() && i < 2; ++i) operands[i] = input_tensor(io, node_.input(i));
    RNNC_CHECK(operands[0], kind(), " block has no data input");
    io.outputs.resize(1);
    View view;
    if (!locate_memoized(io, operands, view)) {
      std::vector<const Tensor*> node_inputs;
      for (size_t i = 0; i < node_.num_inputs(); ++i) node_inputs.push_back(input_tensor(io, node_.input(i)));
      std::vector<Tensor> results =
          evaluate_node(node_, node_inputs, [](const Value*) -> const Tensor* { return nullptr; });
      io.outputs[0] = std::move(results.at(0));
      return;
    }
    const Tensor& input = *operands[0];
    Tensor& out = io.outputs[0];
    // A caller's output buffer (a writable borrow) is filled; anything else becomes the alias.
    if (out.borrowed() && out.exclusive() && out.reusable_as(input.dtype(), view.shape, view.rank)) {
      const size_t element = dtype_size(input.dtype());
      if (out.nbytes() > 0) {
        std::memcpy(out.raw_data(), static_cast<const uint8_t*>(input.raw_data()) + view.offset * element,
                    out.nbytes());
      }
      return;
    }
    out.alias(input, view.offset, view.shape, view.rank);
  }

  // In the driver every value has its own buffer, so the view is a copy of the same elements:
  // the whole input (a re-labelling), or Gather's one contiguous sub-range.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    const Value* data = node_.input(0);
    const std::vector<std::string> input = writer.shape(data);
    const std::vector<std::string> output = writer.shape(io.outputs[0]);
    auto product = [](const std::vector<std::string>& shape, size_t first, size_t last) {
      std::string text = "((int64_t)1)";
      for (size_t k = first; k < last; ++k) text += "*" + shape[k];
      return "(" + text + ")";
    };
    const size_t element = dtype_size(data->type.dtype);
    const std::string out_numel = product(output, 0, output.size());
    std::string text = "{\n";
    std::string offset = "0";
    if (node_.op_type() == "Gather") {
      const int64_t rank = static_cast<int64_t>(input.size());
      int64_t axis = node_.attr_int("axis", 0);
      if (axis < -rank || axis >= rank) {
        raise_invalid_model(cat(node_.describe(), ": attribute 'axis' = ", axis,
                                " is out of range for rank ", rank));
      }
      if (axis < 0) axis += rank;
      const std::string extent = input[static_cast<size_t>(axis)];
      const std::string outer = product(input, 0, static_cast<size_t>(axis));
      text += cat("  int64_t index = ", node_.input(1)->constant()->get_int64(0), "LL;\n",
                  "  if (index < 0) index += ", extent, ";\n",
                  "  if (index < 0 || index >= ", extent, " || (", outer, " != 1 && ", extent,
                  " != 1)) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                  c_string_literal(cat(node_.describe(),
                                       ": the index is out of range, or a dim before the axis and "
                                       "the axis are not 1")),
                  ");\n");
      offset = cat("index*", product(input, static_cast<size_t>(axis) + 1, input.size()));
    } else {
      const Value* shape = node_.num_inputs() > 1 ? node_.input(1) : nullptr;
      const bool run_time_shape = shape && (!shape->is_constant() || shape->is_graph_input());
      if (node_.op_type() == "Reshape" && run_time_shape) {
        // A run-time shape: the same rule as run()'s, its extents the output's data-dependent
        // dims.
        size_t count = 0;
        std::string operands;
        const std::string requested =
            run_time_ints(writer, node_, shape, "shape", kMaxRank, operands, count);
        if (static_cast<int64_t>(count) != io.outputs[0]->type.rank()) {
          raise_invalid_model(cat(node_.describe(), ": input 'shape' has ", count,
                                  " entries for an output of rank ", io.outputs[0]->type.rank()));
        }
        const std::string result = writer.fresh("reshaped");
        std::string extents;
        for (const std::string& extent : input) extents += (extents.empty() ? "" : ", ") + extent;
        text += cat(operands, "  int64_t ", result, "[", std::max<size_t>(count, 1), "];\n",
                    "  if (!rn_reshape_shape(", input.size(), ", (const int64_t[]){",
                    extents.empty() ? "0" : extents, "}, ", count, ", ", requested, ", ",
                    node_.opset() >= 14 && node_.attr_int("allowzero", 0) != 0 ? 1 : 0, ", ",
                    result, ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                    c_string_literal(cat(node_.describe(), ": the shape does not hold the "
                                                           "input's elements")),
                    ");\n");
        writer.code(text);
        text.clear();
        writer.define_shape(io.outputs[0], result);
      }
      text += cat("  if (", product(input, 0, input.size()), " != ", out_numel,
                  ") return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                  c_string_literal(cat(node_.describe(), ": the result's shape does not hold the "
                                                         "input's elements")),
                  ");\n");
    }
    text += cat("  if (", out_numel, " > 0) memcpy(", writer.value(io.outputs[0]),
                ", (const uint8_t*)", writer.value(data), " + (", offset, ")*", element,
                ", (size_t)(", out_numel, "*", element, "));\n}\n");
    writer.code(text);
  }

 private:
  // The view of operands[0] this node's operands ask for; false when the node is invalid for
  // them or the result is not one contiguous range (the reference kernel then decides).
  // locate(), reusing this session's last result when the input's shape and dtype repeat and
  // the other operands are constants.
  bool locate_memoized(BlockIO& io, const Tensor* const* operands, View& view) const {
    if (!constant_operands_) return locate(operands, view);
    ViewMemo& memo = run_state<ViewMemo>(io);
    const Tensor& input = *operands[0];
    if (memo.valid && memo.dtype == input.dtype() && memo.input_shape == input.shape()) {
      view = memo.view;
      return true;
    }
    memo.valid = false;
    if (!locate(operands, view)) return false;
    memo.dtype = input.dtype();
    memo.input_shape = input.shape();
    memo.view = view;
    memo.valid = true;
    return true;
  }

  bool locate(const Tensor* const* operands, View& view) const {
    const Tensor& input = *operands[0];
    if (input.dtype() == DType::kString || input.rank() > static_cast<int64_t>(kMaxRank)) return false;
    const int64_t rank = input.rank();
    const std::string& op = node_.op_type();
    int64_t values[kMaxRank];
    size_t count = 0;
    if (op == "Identity") {
      view.rank = static_cast<size_t>(rank);
      for (int64_t k = 0; k < rank; ++k) view.shape[k] = input.dim(k);
      return true;
    }
    if (op == "Squeeze") {
      bool given = false;
      if (node_.opset() < 13) {
        std::vector<int64_t> axes = node_.attr_ints("axes");
        if (axes.size() > kMaxRank) return false;
        count = axes.size();
        std::copy(axes.begin(), axes.end(), values);
        given = node_.has_attr("axes");
      } else if (operands[1]) {
        if (!read_ints(*operands[1], values, kMaxRank, count)) return false;
        given = true;
      }
      if (!normalize_axes(values, count, rank)) return false;
      unsigned squeezed = 0;
      for (size_t i = 0; i < count; ++i) {
        if (input.dim(values[i]) != 1) return false;
        squeezed |= 1u << values[i];
      }
      for (int64_t k = 0; k < rank; ++k) {
        const bool drop = given ? (squeezed >> k) & 1 : input.dim(k) == 1;
        if (!drop) view.shape[view.rank++] = input.dim(k);
      }
      return true;
    }
    if (op == "Unsqueeze") {
      if (node_.opset() < 13) {
        std::vector<int64_t> axes = node_.attr_ints("axes");
        if (axes.size() > kMaxRank) return false;
        count = axes.size();
        std::copy(axes.begin(), axes.end(), values);
      } else if (!operands[1] || !read_ints(*operands[1], values, kMaxRank, count)) {
        return false;
      }
      const int64_t out_rank = rank + static_cast<int64_t>(count);
      if (out_rank > static_cast<int64_t>(kMaxRank) || !normalize_axes(values, count, out_rank)) {
        return false;
      }
      unsigned inserted = 0;
      for (size_t i = 0; i < count; ++i) inserted |= 1u << values[i];
      int64_t next = 0;
      for (int64_t k = 0; k < out_rank; ++k) {
        view.shape[view.rank++] = (inserted >> k) & 1 ? 1 : input.dim(next++);
      }
      return true;
    }
    if (op == "Flatten") {
      int64_t axis = node_.attr_int("axis", 1);
      if (axis < -rank || axis > rank) return false;
      if (axis < 0) axis += rank;
      int64_t outer = 1, inner = 1;
      for (int64_t k = 0; k < rank; ++k) (k < axis ? outer : inner) *= input.dim(k);
      view.rank = 2;
      view.shape[0] = outer;
      view.shape[1] = inner;
      return true;
    }
    if (op == "Reshape") {
      if (!operands[1] || operands[1]->dtype() != DType::kInt64 ||
          !read_ints(*operands[1], values, kMaxRank, count)) {
        return false;
      }
      const bool allow_zero = node_.opset() >= 14 && node_.attr_int("allowzero", 0) != 0;
      if (!rn_reshape_shape(static_cast<int>(rank), input.shape().data(), static_cast<int>(count),
                            values, allow_zero ? 1 : 0, view.shape)) {
        return false;
      }
      view.rank = count;
      return true;
    }
    if (op == "Gather") {
      if (!operands[1] || !read_ints(*operands[1], values, 1, count) || count != 1) return false;
      int64_t axis = node_.attr_int("axis", 0);
      if (axis < -rank || axis >= rank) return false;
      if (axis < 0) axis += rank;
      int64_t index = values[0];
      const int64_t extent = input.dim(axis);
      if (index < -extent || index >= extent) return false;
      if (index < 0) index += extent;
      // The elements are contiguous when every dim before the axis is 1, or the axis itself is
      // (index 0 of an axis of 1 is the whole input, the axis dropped).
      int64_t inner = 1;
      for (int64_t k = 0; k < axis; ++k) {
        if (input.dim(k) != 1 && extent != 1) return false;
      }
      for (int64_t k = axis + 1; k < rank; ++k) inner *= input.dim(k);
      const Tensor& indices = *operands[1];
      if (rank - 1 + indices.rank() > static_cast<int64_t>(kMaxRank)) return false;
      for (int64_t k = 0; k < axis; ++k) view.shape[view.rank++] = input.dim(k);
      for (int64_t k = 0; k < indices.rank(); ++k) view.shape[view.rank++] = 1;
      for (int64_t k = axis + 1; k < rank; ++k) view.shape[view.rank++] = input.dim(k);
      view.offset = index * inner;
      return true;
    }
    return false;
  }

  const Node& node_;
  bool constant_operands_ = true;  // every input after the data is a constant (not a graph input)
};

}  // namespace

std::unique_ptr<ExecutionBlock> lower_view(const std::vector<const Node*>& nodes) {
  if (nodes.size() != 1) raise_unsupported("not one node");
  const Node& node = *nodes[0];
  const std::string& op = node.op_type();
  const bool view_op = op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
                       op == "Identity" || (op == "Reshape" && node.opset() >= 5) || op == "Gather";
  if (!node.domain().empty() || !view_op) raise_unsupported("not a view op");
  const Value* out = node.output(0);
  if (!out || node.num_inputs() == 0 || !node.input(0) || node.input(0)->type.dtype == DType::kString ||
      out->type.rank() > static_cast<int64_t>(kMaxRank) || node.num_inputs() > 2) {
    raise_unsupported(cat(op, " this view block does not handle"));
  }
  if (op == "Gather") {
    const Value* indices = node.input(1);
    if (!indices || !indices->is_constant() || indices->is_graph_input() ||
        indices->constant()->numel() != 1) {
      raise_unsupported("a Gather of more than one constant index is not a view");
    }
  }
  return std::make_unique<ViewBlock>(node);
}

}  // namespace rnnc
