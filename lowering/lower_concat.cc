#include "lowering/lower_concat.h"

#include <cstring>

#include "lowering/aot_writer.h"
#include "lowering/core/copy_kernels.h"

namespace rnnc {

namespace {

constexpr size_t kMaxRank = 8;

class ConcatBlock : public ExecutionBlock {
 public:
  ConcatBlock(const Node& node, size_t axis, DType dtype, size_t rank)
      : node_(node), axis_(axis), dtype_(dtype), rank_(rank) {}

  std::string kind() const override { return "copy Concat"; }

  void run(BlockIO& io) const override {
    // Each node input is a block input or a constant.
    const Tensor* parts[64];
    const size_t count = node_.num_inputs();
    RNNC_CHECK(count <= std::size(parts), "Concat with ", count, " inputs");
    for (size_t i = 0; i < count; ++i) {
      parts[i] = input_tensor(io, node_.input(i));
      RNNC_CHECK(parts[i], "Concat block was not given input ", i);
    }
    int64_t shape[kMaxRank];
    for (size_t k = 0; k < rank_; ++k) shape[k] = k < static_cast<size_t>(parts[0]->rank()) ? parts[0]->dim(k) : 0;
    shape[axis_] = 0;
    for (size_t i = 0; i < count; ++i) {
      const Tensor& part = *parts[i];
      bool fits = part.rank() == static_cast<int64_t>(rank_) && part.dtype() == dtype_;
      for (size_t k = 0; fits && k < rank_; ++k) fits = k == axis_ || part.dim(k) == shape[k];
      if (!fits) {
        raise_invalid_input(cat(node_.describe(), ": input ", i, " has shape ",
                                shape_text(part.shape()), ", which does not concatenate with input 0 ",
                                shape_text(parts[0]->shape()), " along axis ", axis_));
      }
      shape[axis_] += part.dim(axis_);
    }
    io.outputs.resize(1);
    Tensor::recycle(io.outputs[0], dtype_, shape, rank_);
    Tensor& out = io.outputs[0];
    // Row-major: each of the `outer` slabs of the output is the inputs' slabs one after another.
    const int64_t element = static_cast<int64_t>(dtype_size(dtype_));
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < axis_; ++k) outer *= shape[k];
    for (size_t k = axis_ + 1; k < rank_; ++k) inner *= shape[k];
    const void* sources[64];
    int64_t slabs[64];
    for (size_t i = 0; i < count; ++i) {
      sources[i] = parts[i]->raw_data();
      slabs[i] = parts[i]->dim(axis_) * inner * element;
    }
    rn_concat(out.raw_data(), outer, static_cast<int>(count), sources, slabs);
  }

  // The same rn_concat in the driver, shapes checked as run() does.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty()) return;
    std::string parts, slabs, checks;
    std::vector<std::string> first, out_shape = writer.shape(io.outputs[0]);
    std::string total;
    const std::string element = cat(dtype_size(dtype_));
    for (size_t i = 0; i < node_.num_inputs(); ++i) {
      const Value* value = node_.input(i);
      std::vector<std::string> shape;
      std::string data;
      if (value->is_constant() && !value->is_graph_input()) {
        for (int64_t extent : value->constant()->shape()) shape.push_back(cat("((int64_t)", extent, ")"));
        data = writer.constant(*value->constant());
      } else {
        shape = writer.shape(value);
        data = writer.value(value);
      }
      if (shape.size() != rank_) {
        raise_invalid_model(cat(node_.describe(), ": input ", i, " has rank ", shape.size(),
                                ", expected ", rank_));
      }
      if (i == 0) first = shape;
      std::string inner = shape[axis_];
      for (size_t k = axis_ + 1; k < rank_; ++k) inner += "*" + shape[k];
      parts += cat(i ? ", " : "", data);
      slabs += cat(i ? ", " : "", "(", inner, ")*", element);
      total += cat(i ? "+" : "", shape[axis_]);
      std::vector<std::string> expected = first;
      expected[axis_] = shape[axis_];
      std::string got, want;
      for (size_t k = 0; k < rank_; ++k) {
        got += cat(k ? ", " : "", shape[k]);
        want += cat(k ? ", " : "", expected[k]);
      }
      checks += cat("  RN_TRY(rn_check_shape(ctx, ", rank_, ", (const int64_t[]){", got,
                    "}, (const int64_t[]){", want, "}, ",
                    c_string_literal(cat(node_.describe(), ": input ", i)), "));\n");
    }
    std::string got, want, outer = "((int64_t)1)";
    for (size_t k = 0; k < rank_; ++k) {
      got += cat(k ? ", " : "", out_shape[k]);
      want += cat(k ? ", " : "", k == axis_ ? "(" + total + ")" : first[k]);
      if (k < axis_) outer += "*" + first[k];
    }
    checks += cat("  RN_TRY(rn_check_shape(ctx, ", rank_, ", (const int64_t[]){", got,
                  "}, (const int64_t[]){", want, "}, ",
                  c_string_literal(cat(node_.describe(), ": the result")), "));\n");
    writer.code(cat("{\n", checks, "  const void* parts[] = {", parts, "};\n",
                    "  const int64_t slabs[] = {", slabs, "};\n", "  rn_concat(",
                    writer.value(io.outputs[0]), ", ", outer, ", ", node_.num_inputs(),
                    ", parts, slabs);\n}\n"));
  }

 private:
  const Node& node_;
  size_t axis_;
  DType dtype_;
  size_t rank_;
};

}  // namespace

std::unique_ptr<ExecutionBlock> lower_concat(const std::vector<const Node*>& nodes) {
  if (nodes.size() != 1 || nodes[0]->op_type() != "Concat") raise_unsupported("not one Concat");
  const Node& node = *nodes[0];
  const Value* out = node.output(0);
  if (!out || out->type.rank() < 0 || node.num_inputs() == 0 || node.num_inputs() > 64) {
    raise_unsupported("Concat of unknown rank");
  }
  const DType dtype = out->type.dtype;
  const int64_t rank = out->type.rank();
  if (dtype == DType::kString || dtype_size(dtype) == 0 || rank == 0 ||
      rank > static_cast<int64_t>(kMaxRank) || !node.has_attr("axis")) {
    raise_unsupported("Concat this copy block does not handle");
  }
  for (const Value* input : node.inputs()) {
    if (!input) raise_unsupported("Concat with an omitted input");
  }
  int64_t axis = node.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) raise_unsupported("Concat axis out of range");  // reference reports it
  if (axis < 0) axis += rank;
  return std::make_unique<ConcatBlock>(node, static_cast<size_t>(axis), dtype,
                                       static_cast<size_t>(rank));
}

}  // namespace rnnc
