// RecurrentBlock::write_aot: the block's run() as C. The generated code fills an rn_recurrent
// description (sizes, strides of the slots in their layouts, the marshaled weights from the
// weight file, the pipelines' entry points) and calls the driver's rn_recurrent_run
// (aot/driver_support.c), which is run()'s time loop written in C: per direction the input
// projection over all rows, then one step call per time step with the double-buffered state,
// Y rows copied out as in advance(), Y_h / Y_c as in finish(). Same pipelines, same buffers, same
// order of floating-point work: the results are bitwise those of run().
#include "ir/error.h"
#include "lowering/lower_recurrent.h"

namespace rnnc {

namespace {

constexpr size_t kX = 0, kSequenceLens = 4, kInitialH = 5, kInitialC = 6;

using Axis = RecurrentAxis;
using Axes = std::vector<RecurrentAxis>;

// C expressions for the logical axis sizes of one run.
struct AxisExprs {
  std::string seq, batch, dir, hidden, input;
  std::string size(Axis axis) const {
    switch (axis) {
      case Axis::kSeq:
        return seq;
      case Axis::kBatch:
        return batch;
      case Axis::kDir:
        return dir;
      case Axis::kHidden:
        return hidden;
      case Axis::kInput:
        return input;
      case Axis::kDirHidden:
        return "(" + dir + "*" + hidden + ")";
    }
    return "0";
  }
};

// layout_stride (lower_recurrent.cc) as a C expression: the element stride of a logical axis in a
// slot's layout, 0 for a dir the layout squeezed out.
std::string stride_expr(const Axes& axes, const AxisExprs& sizes, Axis axis) {
  std::string stride = "1";
  for (size_t i = axes.size(); i-- > 0;) {
    if (axes[i] == axis) return "(" + stride + ")";
    if (axes[i] == Axis::kDirHidden && (axis == Axis::kDir || axis == Axis::kHidden)) {
      return axis == Axis::kHidden ? "(" + stride + ")" : "(" + stride + "*" + sizes.hidden + ")";
    }
    stride += "*" + sizes.size(axes[i]);
  }
  return "0";
}

std::string shape_array(const std::vector<std::string>& shape) {
  std::string text;
  for (const std::string& extent : shape) text += (text.empty() ? "" : ", ") + extent;
  return "(const int64_t[]){" + (text.empty() ? "0" : text) + "}";
}

}  // namespace

void RecurrentBlock::write_aot(AotWriter& writer, const AotBlockIO& io) const {
  auto input_value = [&](size_t slot) -> const Value* {
    return slot < io.inputs.size() ? io.inputs[slot] : nullptr;
  };
  const Value* x = input_value(kX);
  if (!x) raise_invalid_model(cat(describe_, ": input 'X' is missing"));
  const std::vector<std::string> x_shape = writer.shape(x);
  if (x_shape.size() != x_axes_.size()) {
    raise_invalid_model(
        cat(describe_, ": input 'X' has rank ", x_shape.size(), ", expected ", x_axes_.size()));
  }
  for (const Direction& part : directions_) {
    if (part.cell.quant) {
      raise_unsupported(cat("ahead-of-time export: ", describe_,
                            " runs integer (quantized) kernels, which rnnc compile does not export "
                            "yet"));
    }
  }
  const int64_t dirs = num_directions();
  const AxisExprs sizes{"L.seq", "L.batch", cat("((int64_t)", dirs, ")"),
                        cat("((int64_t)", hidden_size_, ")"), cat("((int64_t)", input_size_, ")")};
  std::string text = "{\n  rn_recurrent L;\n  memset(&L, 0, sizeof L);\n";
  text += cat("  L.name = ", c_string_literal(describe_), ";\n");
  text += cat("  L.projection = ", writer.pipeline(projection_), ";\n");
  text += cat("  L.lstm = ", op_ == RecurrentOp::kLstm, ";\n");
  text += cat("  L.hidden = ", hidden_size_, ";\n  L.input = ", input_size_, ";\n");
  text += cat("  L.gates = ", directions_[0].cell.gates.size(), ";\n");
  text +=
      cat("  L.padded = ", schedule_.padded_hidden, ";\n  L.tile = ", schedule_.hidden_tile, ";\n");
  text += cat("  L.wt_panel = ", projection_panel(schedule_), ";\n");
  text += cat("  L.gemm_rows = ", schedule_.gemm_rows,
              ";\n  L.batch_tile = ", batched_schedule_.batch_tile, ";\n");
  text += cat("  L.directions = ", dirs, ";\n");
  for (size_t d = 0; d < directions_.size(); ++d) {
    const Direction& part = directions_[d];
    const std::string p = cat("  L.dir[", d, "].");
    text += cat(p, "reverse = ", part.reverse, ";\n");
    text += cat(p, "peepholes = ", part.cell.peepholes, ";\n");
    text += cat(p, "linear_before_reset = ", part.cell.linear_before_reset, ";\n");
    text += cat(p, "step = ", writer.pipeline(part.step), ";\n");
    text += cat(p, "batched_step = ", writer.pipeline(part.batched_step), ";\n");
    text += cat(p, "wt = (const float*)", writer.constant(part.wt), ";\n");
    text += cat(p, "bias = (const float*)", writer.constant(part.bias), ";\n");
    text += cat(p, "r = (const float*)", writer.constant(part.r), ";\n");
    if (part.cell.peepholes) {
      text += cat(p, "peephole_weights = (const float*)", writer.constant(part.peepholes), ";\n");
    }
    if (part.cell.linear_before_reset) {
      text += cat(p, "rbh = (const float*)", writer.constant(part.rbh), ";\n");
    }
  }
  // X: seq_length and batch_size from its dims at their axes in X's layout.
  text += cat("  L.x = (const float*)", writer.value(x), ";\n");
  text += cat("  L.seq = ", x_shape[x_position(Axis::kSeq)], ";\n");
  text += cat("  L.batch = ", x_shape[x_position(Axis::kBatch)], ";\n");
  text +=
      cat("  if (", x_shape[x_position(Axis::kInput)],
          " != L.input) return rn_fail(ctx, "
          "RNNC_AOT_ERROR_INVALID_ARGUMENT, ",
          c_string_literal(cat(describe_, ": input 'X' does not have input_size ", input_size_)),
          ");\n");
  text += cat("  L.x_seq_stride = ", stride_expr(x_axes_, sizes, Axis::kSeq), ";\n");
  text += cat("  L.x_batch_stride = ", stride_expr(x_axes_, sizes, Axis::kBatch), ";\n");

  // A slot's data and shape check: the value's (or constant's) shape must be its layout's shape.
  std::string checks;
  auto slot_data = [&](const Value* value, const std::optional<Tensor>& constant, const Axes& axes,
                       const char* slot) -> std::string {
    std::vector<std::string> shape;
    std::string data;
    if (value) {
      shape = writer.shape(value);
      data = writer.value(value);
    } else if (constant) {
      for (int64_t extent : constant->shape()) shape.push_back(cat("((int64_t)", extent, ")"));
      data = writer.constant(*constant);
    } else {
      return "NULL";
    }
    std::vector<std::string> expected;
    for (Axis axis : axes) expected.push_back(sizes.size(axis));
    if (expected.size() != shape.size()) {
      raise_invalid_model(
          cat(describe_, ": '", slot, "' has rank ", shape.size(), ", expected ", expected.size()));
    }
    checks += cat("  RN_TRY(rn_check_shape(ctx, ", shape.size(), ", ", shape_array(shape), ", ",
                  shape_array(expected), ", ", c_string_literal(cat(describe_, ": '", slot, "'")),
                  "));\n");
    return data;
  };
  const auto sequence_lens = input_value(kSequenceLens);
  if (sequence_lens || constant_sequence_lens_) {
    const DType dtype =
        sequence_lens ? sequence_lens->type.dtype : constant_sequence_lens_->dtype();
    if (dtype != DType::kInt32 && dtype != DType::kInt64) {
      raise_unsupported(cat("ahead-of-time export: ", describe_, ": sequence_lens of element type ",
                            dtype_onnx_name(dtype)));
    }
    text += cat("  L.sequence_lens = ",
                slot_data(sequence_lens, constant_sequence_lens_, {Axis::kBatch}, "sequence_lens"),
                ";\n  L.sequence_lens_bits = ", dtype == DType::kInt32 ? 32 : 64, ";\n");
  }
  text += cat("  L.initial_h = (const float*)",
              slot_data(input_value(kInitialH), constant_initial_h_, initial_h_axes_, "initial_h"),
              ";\n");
  text += cat("  L.h0_dir = ", stride_expr(initial_h_axes_, sizes, Axis::kDir), ";\n");
  text += cat("  L.h0_batch = ", stride_expr(initial_h_axes_, sizes, Axis::kBatch), ";\n");
  if (op_ == RecurrentOp::kLstm) {
    text +=
        cat("  L.initial_c = (const float*)",
            slot_data(input_value(kInitialC), constant_initial_c_, initial_c_axes_, "initial_c"),
            ";\n");
    text += cat("  L.c0_dir = ", stride_expr(initial_c_axes_, sizes, Axis::kDir), ";\n");
    text += cat("  L.c0_batch = ", stride_expr(initial_c_axes_, sizes, Axis::kBatch), ";\n");
  }
  // Outputs: only those a later block or the caller reads are written.
  const char* const output_names[] = {"y", "y_h", "y_c"};
  const Axes* output_axes[] = {&y_axes_, &y_h_axes_, &y_c_axes_};
  for (size_t i = 0; i < has_output_.size() && i < 3; ++i) {
    const Value* value = i < io.outputs.size() ? io.outputs[i] : nullptr;
    if (!has_output_[i] || !value) continue;
    const std::string field = output_names[i];
    text += cat("  L.", field, " = (float*)",
                slot_data(value, std::nullopt, *output_axes[i], output_names[i]), ";\n");
    if (i == 0) text += cat("  L.y_seq = ", stride_expr(y_axes_, sizes, Axis::kSeq), ";\n");
    text += cat("  L.", field, "_dir = ", stride_expr(*output_axes[i], sizes, Axis::kDir), ";\n");
    text +=
        cat("  L.", field, "_batch = ", stride_expr(*output_axes[i], sizes, Axis::kBatch), ";\n");
    if (i == 0) {
      std::string numel;
      for (Axis axis : y_axes_) numel += (numel.empty() ? "" : "*") + sizes.size(axis);
      text += cat("  L.y_elements = ", numel, ";\n");
    }
  }
  const std::string scratch = writer.fresh("scratch");
  text += checks;
  text += cat("  {\n    void* ", scratch, " = ", writer.scratch("rn_recurrent_scratch_bytes(&L)"),
              ";\n    if (!", scratch, ") return rn_out_of_memory(ctx);\n");
  text += cat("    RN_TRY(rn_recurrent_run(ctx, &L, ", scratch, "));\n  }\n}\n");
  writer.code(text);
}

}  // namespace rnnc
