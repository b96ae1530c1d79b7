// RecurrentBlock::write_aot: the block's run() as C. The generated code fills the same
// rn_recurrent that run() fills (lowering/core/recurrent_loop.h: the numbers from compiled_loop(),
// the marshaled weights from the weight file, the slots from the driver's buffers) and calls the
// driver's rn_recurrent_block (aot/driver_support.c), which reads sequence_lens and runs each
// direction through the shared time loop. Same pipelines, same loop code, same buffers: the
// results are bitwise those of run().
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
  const rn_recurrent loop = compiled_loop();
  if (loop.count_overflow) {
    raise_unsupported(
        cat("ahead-of-time export: ", describe_, ": overflow mode has no ahead-of-time form"));
  }
  const int64_t dirs = num_directions();
  const AxisExprs sizes{"L.seq", "L.batch", cat("((int64_t)", dirs, ")"),
                        cat("((int64_t)", hidden_size_, ")"), cat("((int64_t)", input_size_, ")")};
  std::string text = "{\n  rn_recurrent L;\n  memset(&L, 0, sizeof L);\n";
  text += cat("  L.projection = ", writer.pipeline(projection_), ";\n");
  const std::pair<const char*, int64_t> numbers[] = {{"lstm", loop.lstm},
                                                     {"directions", loop.directions},
                                                     {"hidden", loop.hidden},
                                                     {"input", loop.input},
                                                     {"gates", loop.gates},
                                                     {"padded", loop.padded},
                                                     {"tile", loop.tile},
                                                     {"batch_pad", loop.batch_pad},
                                                     {"wt_panel", loop.wt_panel},
                                                     {"alternate_tiles", loop.alternate_tiles},
                                                     {"xw_chunk_bytes", loop.xw_chunk_bytes},
                                                     {"row_tile", loop.row_tile},
                                                     {"quantized", loop.quantized},
                                                     {"weight_bits", loop.weight_bits},
                                                     {"zero_points", loop.zero_points},
                                                     {"lane", loop.lane},
                                                     {"w_ko", loop.w_ko},
                                                     {"r_ko", loop.r_ko}};
  for (const auto& [field, number] : numbers) text += cat("  L.", field, " = ", number, ";\n");
  for (size_t d = 0; d < directions_.size(); ++d) {
    const Direction& part = directions_[d];
    const std::string p = cat("  L.dir[", d, "].");
    text += cat(p, "reverse = ", loop.dir[d].reverse, ";\n");
    text += cat(p, "peepholes = ", loop.dir[d].peepholes, ";\n");
    text += cat(p, "linear_before_reset = ", loop.dir[d].linear_before_reset, ";\n");
    text += cat(p, "step = ", writer.pipeline(part.step), ";\n");
    text += cat(p, "batched_step = ", writer.pipeline(part.batched_step), ";\n");
    text += cat(p, "bias = (const float*)", writer.constant(part.bias), ";\n");
    if (part.cell.peepholes) {
      text += cat(p, "peephole_weights = (const float*)", writer.constant(part.peepholes), ";\n");
    }
    if (part.cell.linear_before_reset) {
      text += cat(p, "rbh = (const float*)", writer.constant(part.rbh), ";\n");
    }
    if (!part.cell.quant) {
      text += cat(p, "wt = (const float*)", writer.constant(part.wt), ";\n");
      text += cat(p, "r = (const float*)", writer.constant(part.r), ";\n");
      continue;
    }
    text += cat(p, "wq = ", writer.constant(part.wq), ";\n");
    text += cat(p, "rq = ", writer.constant(part.rq), ";\n");
    text += cat(p, "w_scale = (const float*)", writer.constant(part.w_scale), ";\n");
    text += cat(p, "r_scale = (const float*)", writer.constant(part.r_scale), ";\n");
    text += cat(p, "w_colsum = (const int32_t*)", writer.constant(part.w_colsum), ";\n");
    text += cat(p, "r_colsum = (const int32_t*)", writer.constant(part.r_colsum), ";\n");
    if (loop.zero_points) {
      text += cat(p, "w_zero = (const int32_t*)", writer.constant(part.w_zero), ";\n");
      text += cat(p, "r_zero = (const int32_t*)", writer.constant(part.r_zero), ";\n");
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
  std::string lengths = "NULL";
  int lengths_bits = 0;
  const auto sequence_lens = input_value(kSequenceLens);
  if (sequence_lens || constant_sequence_lens_) {
    const DType dtype =
        sequence_lens ? sequence_lens->type.dtype : constant_sequence_lens_->dtype();
    if (dtype != DType::kInt32 && dtype != DType::kInt64) {
      raise_unsupported(cat("ahead-of-time export: ", describe_, ": sequence_lens of element type ",
                            dtype_onnx_name(dtype)));
    }
    lengths = slot_data(sequence_lens, constant_sequence_lens_, {Axis::kBatch}, "sequence_lens");
    lengths_bits = dtype == DType::kInt32 ? 32 : 64;
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
  }
  std::string y_elements;  // Y's element count, to clear it when an entry is short
  for (Axis axis : y_axes_) y_elements += (y_elements.empty() ? "" : "*") + sizes.size(axis);
  if (y_elements.empty()) y_elements = "0";
  const std::string scratch = writer.fresh("scratch");
  text += checks;
  text += cat("  {\n    void* ", scratch, " = ", writer.scratch("rn_recurrent_block_bytes(&L)"),
              ";\n    if (!", scratch, ") return rn_out_of_memory(ctx);\n");
  text += cat("    RN_TRY(rn_recurrent_block(ctx, &L, ", c_string_literal(describe_), ", ", lengths,
              ", ", lengths_bits, ", ", y_elements, ", ", scratch, "));\n  }\n}\n");
  writer.code(text);
}

}  // namespace rnnc
