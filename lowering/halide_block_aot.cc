// HalideBlock::write_aot: the block's run() as C - the same views bound over the driver's buffers,
// with extents and strides from the values' symbolic shapes evaluated at run time, then one call
// of the pipeline's argv entry.
#include "ir/error.h"
#include "lowering/halide_block.h"

namespace rnnc {

namespace {

std::string product(const std::vector<std::string>& shape, int first, int last) {
  std::string text;
  for (int d = first; d < last; ++d) text += cat(text.empty() ? "" : "*", shape[static_cast<size_t>(d)]);
  return text.empty() ? "((int64_t)1)" : "(" + text + ")";
}

// halide_type_code_t and bits of a buffer's element type (the run's runtime_type).
std::pair<int, int> halide_code(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {2, 32};
    case DType::kFloat64:
      return {2, 64};
    case DType::kBool:
      return {1, 1};
    case DType::kInt8:
      return {0, 8};
    case DType::kUInt8:
      return {1, 8};
    case DType::kInt32:
      return {0, 32};
    case DType::kInt64:
      return {0, 64};
    default:
      break;
  }
  raise_unsupported(cat("ahead-of-time export: no Halide buffer type for ", dtype_name(dtype)));
}

// The rn_bind call for `view` over a tensor of `shape` (mirrors bind_dims in halide_block.cc):
// per dim {extent, stride, output extent, check}, check 0 none, 1 equal to the output's, 2 a
// broadcast (extent 1), 3 full or broadcast by stride 0 (decided at run time).
std::string bind_call(const std::string& buffer, const std::string& dims, const std::string& host,
                      DType dtype, const OperandView& view, const std::vector<std::string>& shape,
                      const std::vector<std::string>& out_shape, const std::string& what) {
  const int rank = static_cast<int>(shape.size());
  std::string spec;
  for (const ViewDim& dim : view) {
    if (dim.first < 0 || dim.last > rank) {
      raise_unsupported(cat("ahead-of-time export: ", what, " is viewed beyond its rank"));
    }
    const std::string extent = product(shape, dim.first, dim.last);
    const std::string stride = dim.last > dim.first ? product(shape, dim.last, rank) : "0";
    std::string out_extent = "0";
    int check = 0;
    if (dim.out_first >= 0) {
      out_extent = product(out_shape, dim.out_first, dim.out_last);
      check = dim.broadcast ? 2 : dim.runtime_broadcast ? 3 : 1;
    }
    spec += cat(spec.empty() ? "" : ", ", extent, ", ", stride, ", ", out_extent, ", ", check);
  }
  const auto [code, bits] = halide_code(dtype);
  return cat("RN_TRY(rn_bind(ctx, &", buffer, ", ", dims, ", ", host, ", ", code, ", ", bits, ", ",
             view.size(), ", (const int64_t[]){", spec.empty() ? "0" : spec, "}, ",
             c_string_literal(what), "));\n");
}

}  // namespace

void HalideBlock::write_aot(AotWriter& writer, const AotBlockIO& io) const {
  if (overflow_) raise_unsupported(cat(context_, ": overflow mode has no ahead-of-time form"));
  const std::string& name = writer.block_name();
  std::vector<std::string> out_shape = writer.shape(output_value_);
  const bool used = !io.outputs.empty();
  const std::string result = used ? writer.value(output_value_) : "NULL";
  std::string text = "{\n";
  const std::string buffers = writer.fresh("buf"), dims = writer.fresh("dims");
  text += cat("  halide_buffer_t ", buffers, "[", arguments_.size() + 1, "];\n");
  text += cat("  halide_dimension_t ", dims, "[", arguments_.size() + 1, "][", kMaxViewDims,
              "];\n");
  std::string args;
  for (size_t a = 0; a < arguments_.size(); ++a) {
    const Argument& argument = arguments_[a];
    std::string host;
    std::vector<std::string> shape;
    DType dtype;
    if (argument.value) {
      host = writer.value(argument.value);
      shape = writer.shape(argument.value);
      dtype = argument.value->type.dtype;
    } else {
      host = writer.constant(argument.constant);
      for (int64_t extent : argument.constant.shape()) shape.push_back(cat("((int64_t)", extent, ")"));
      dtype = argument.constant.dtype();
    }
    text += "  " + bind_call(cat(buffers, "[", a, "]"), cat(dims, "[", a, "]"), host, dtype,
                             argument.view, shape, out_shape,
                             cat(context_, ": argument ", a, " of ", name));
    args += cat(args.empty() ? "" : ", ", "&", buffers, "[", a, "]");
  }
  const std::string extents = writer.fresh("extents");
  if (!extent_params_.empty()) {
    text += cat("  int32_t ", extents, "[", extent_params_.size(), "];\n");
    for (size_t e = 0; e < extent_params_.size(); ++e) {
      text += cat("  ", extents, "[", e, "] = (int32_t)",
                  out_shape.at(static_cast<size_t>(extent_params_[e])), ";\n");
      args += cat(", &", extents, "[", e, "]");
    }
  }
  const size_t out = arguments_.size();
  text += "  " + bind_call(cat(buffers, "[", out, "]"), cat(dims, "[", out, "]"), result,
                           output_dtype_, output_view_, out_shape, out_shape,
                           cat(context_, ": the result of ", name));
  args += cat(", &", buffers, "[", out, "]");
  const std::string numel = product(out_shape, 0, static_cast<int>(out_shape.size()));
  text += cat("  if (", used ? "1" : "0", " && ", numel, " > 0) {\n");
  text += cat("    void* args[] = {", args, "};\n");
  text += cat("    RN_TRY(rn_call(ctx, ", writer.pipeline(pipeline_), ", args, ",
              c_string_literal(name), "));\n  }\n}\n");
  writer.code(text);
}

}  // namespace rnnc
