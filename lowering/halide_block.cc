#include "lowering/halide_block.h"

#include <HalideRuntime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "ir/error.h"
#include "lowering/lower_elementwise.h"

namespace rnnc {

namespace {


int64_t product(const std::vector<int64_t>& shape, int first, int last) {
  int64_t result = 1;
  for (int d = first; d < last; ++d) result *= shape[static_cast<size_t>(d)];
  return result;
}

halide_type_t runtime_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return halide_type_t(halide_type_float, 32);
    case DType::kFloat64:
      return halide_type_t(halide_type_float, 64);
    case DType::kBool:
      return halide_type_t(halide_type_uint, 1);
    case DType::kInt8:
      return halide_type_t(halide_type_int, 8);
    case DType::kUInt8:
      return halide_type_t(halide_type_uint, 8);
    case DType::kInt32:
      return halide_type_t(halide_type_int, 32);
    case DType::kInt64:
      return halide_type_t(halide_type_int, 64);
    default:
      break;
  }
  RNNC_CHECK(false, "no Halide buffer type for ", dtype_name(dtype));
  return {};
}

// Fills `dims` with the Halide dims of the view of `tensor`, checking that it broadcasts to the
// run's output shape `out_shape` (for the dims the view aligns to it).
void bind_dims(const Tensor& tensor, const OperandView& view, const std::vector<int64_t>& out_shape,
               const std::string& context, halide_dimension_t* dims) {
  const std::vector<int64_t>& shape = tensor.shape();
  for (size_t i = 0; i < view.size(); ++i) {
    const ViewDim& dim = view[i];
    int64_t extent = product(shape, dim.first, dim.last);
    // Row-major: the run's stride is the product of the dims after its last one.
    int64_t stride =
        dim.last > dim.first ? product(shape, dim.last, static_cast<int>(shape.size())) : 0;
    if (dim.out_first >= 0) {
      int64_t out_extent = product(out_shape, dim.out_first, dim.out_last);
      bool ok = extent == out_extent;
      if (dim.broadcast) {
        ok = extent == 1;
      } else if (!ok && dim.runtime_broadcast && extent == 1) {
        ok = true;
        extent = out_extent;
        stride = 0;
      }
      if (!ok) {
        raise_invalid_input(cat(context, ": an input of shape ", shape_text(shape),
                                " does not broadcast to the result ", shape_text(out_shape)));
      }
    }
    if (extent == 1 && stride == 0) stride = i == 0 ? 1 : 0;
    RNNC_CHECK(extent <= INT32_MAX && stride <= INT32_MAX, "tensor ", shape_text(shape),
               " is too large for 32-bit Halide indexing");
    dims[i] = halide_dimension_t(0, static_cast<int32_t>(extent), static_cast<int32_t>(stride));
  }
}

}  // namespace

std::string view_to_string(const OperandView& view) {
  std::string text = "(";
  for (size_t i = 0; i < view.size(); ++i) {
    const ViewDim& dim = view[i];
    text += cat(i ? " " : "", "d", dim.first, ":", dim.last, dim.broadcast ? "b" : "",
                dim.runtime_broadcast ? "r" : "", dim.strided ? "s" : "");
    if (dim.out_first >= 0) text += cat("@", dim.out_first, ":", dim.out_last);
  }
  return text + ")";
}

std::vector<DimRead> classify_operand(const Shape& operand, const Shape& output) {
  int rank = static_cast<int>(output.size());
  int offset = rank - static_cast<int>(operand.size());
  RNNC_CHECK(offset >= 0, "operand ", shape_to_string(operand), " has a higher rank than ",
             shape_to_string(output));
  std::vector<DimRead> reads(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    DimRead& read = reads[static_cast<size_t>(d)];
    if (d < offset) {
      read = DimRead::kBroadcast;
      continue;
    }
    const Dim& in = operand[static_cast<size_t>(d - offset)];
    const Dim& out = output[static_cast<size_t>(d)];
    if (in == out || (out.is_known() && out.value() == 1)) {
      read = DimRead::kFull;
    } else if (in.is_known() && in.value() == 1) {
      read = DimRead::kBroadcast;
    } else {
      read = DimRead::kRuntime;
    }
  }
  return reads;
}

std::vector<LoopDim> merge_loop_dims(int rank, const std::vector<std::vector<DimRead>>& reads,
                                     const std::function<bool(int)>& may_merge) {
  if (rank == 0) return {LoopDim{0, 0}};
  std::vector<LoopDim> loops = {LoopDim{rank - 1, rank}};
  for (int d = rank - 2; d >= 0; --d) {
    bool merge = may_merge(d);
    for (const std::vector<DimRead>& operand : reads) {
      DimRead outer = operand[static_cast<size_t>(d)];
      DimRead inner = operand[static_cast<size_t>(d + 1)];
      merge = merge && outer == inner && outer != DimRead::kRuntime;
    }
    if (merge) {
      loops.back().first = d;
    } else {
      loops.push_back(LoopDim{d, d + 1});
    }
  }
  return loops;
}

OperandView operand_view(int operand_rank, int align_end, const std::vector<LoopDim>& loops,
                        const std::vector<DimRead>& reads) {
  int offset = align_end - operand_rank;
  OperandView view;
  for (const LoopDim& loop : loops) {
    ViewDim dim;
    dim.first = std::clamp(loop.first - offset, 0, operand_rank);
    dim.last = std::clamp(loop.last - offset, 0, operand_rank);
    dim.out_first = loop.first;
    dim.out_last = loop.last;
    DimRead read =
        loop.last > loop.first ? reads[static_cast<size_t>(loop.first)] : DimRead::kBroadcast;
    dim.broadcast = read == DimRead::kBroadcast;
    dim.runtime_broadcast = read == DimRead::kRuntime;
    view.push_back(dim);
  }
  return view;
}

HalideBlock::Argument argument_of(const Value* value, OperandView view) {
  HalideBlock::Argument argument;
  argument.view = std::move(view);
  if (is_held_constant(value)) {
    argument.constant = *value->constant();
  } else {
    argument.value = value;
  }
  return argument;
}

std::map<const Value*, Halide::Expr> read_operands(const std::vector<const Value*>& operands,
                                                   const HalideBlock& block,
                                                   const std::vector<Halide::Var>& vars,
                                                   BuiltPipeline& built) {
  std::map<const Value*, Halide::Expr> reads;
  for (size_t i = 0; i < operands.size(); ++i) {
    const OperandView& view = block.arguments_[i].view;
    Halide::ImageParam image = make_image_param(cat("input", i), operands[i]->type.dtype, view);
    built.arguments.push_back(image);
    reads[operands[i]] = read_view(image, view, vars);
  }
  return reads;
}

OperandView output_view(const std::vector<LoopDim>& loops) {
  OperandView view;
  for (const LoopDim& loop : loops) {
    ViewDim dim;
    dim.first = loop.first;
    dim.last = loop.last;
    view.push_back(dim);
  }
  return view;
}

Halide::Type halide_type_of(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return Halide::Float(32);
    case DType::kFloat64:
      return Halide::Float(64);
    case DType::kBool:
      return Halide::Bool();
    case DType::kInt8:
      return Halide::Int(8);
    case DType::kUInt8:
      return Halide::UInt(8);
    case DType::kInt32:
      return Halide::Int(32);
    case DType::kInt64:
      return Halide::Int(64);
    default:
      break;
  }
  raise_unsupported(cat("Halide lowering does not handle ", dtype_onnx_name(dtype), " tensors"));
}

Halide::ImageParam make_image_param(const std::string& name, DType dtype, const OperandView& view) {
  Halide::ImageParam image(halide_type_of(dtype), static_cast<int>(view.size()), name);
  if (!view.empty() && (view[0].runtime_broadcast || view[0].strided)) {
    image.dim(0).set_stride(Halide::Expr());
  }
  for (int d = 0; d < image.dimensions(); ++d) image.dim(d).set_min(0);  // views start at 0
  return image;
}

void pin_shape(Halide::OutputImageParam image, const std::vector<int64_t>& shape) {
  int rank = static_cast<int>(shape.size());
  RNNC_CHECK(image.dimensions() == rank, "pinning a rank ", image.dimensions(), " buffer to ",
             shape_text(shape));
  int64_t stride = 1;
  for (int d = 0; d < rank; ++d) {  // Halide dim d is the row-major dim rank - 1 - d
    int64_t extent = shape[static_cast<size_t>(rank - 1 - d)];
    image.dim(d).set_bounds(0, static_cast<int>(extent)).set_stride(static_cast<int>(stride));
    stride *= extent;
  }
}

void pin_output_mins(Halide::Func output) {
  for (int d = 0; d < output.dimensions(); ++d) output.output_buffer().dim(d).set_min(0);
}

Halide::Expr read_view(const Halide::ImageParam& image, const OperandView& view,
                       const std::vector<Halide::Var>& loop_vars) {
  RNNC_CHECK(view.size() == loop_vars.size(), "view ", view_to_string(view), " read with ",
             loop_vars.size(), " loop vars");
  std::vector<Halide::Expr> coords;
  for (size_t i = 0; i < view.size(); ++i) {
    coords.push_back(view[i].broadcast ? Halide::Expr(0) : Halide::Expr(loop_vars[i]));
  }
  return image(coords);
}

void broadcast_into(std::vector<int64_t>& result, const std::vector<int64_t>& shape,
                    const std::string& context) {
  if (shape.size() > result.size()) result.insert(result.begin(), shape.size() - result.size(), 1);
  size_t offset = result.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t& a = result[k + offset];
    int64_t b = shape[k];
    if (a != b && a != 1 && b != 1) {
      std::vector<int64_t> before = result;
      raise_invalid_input(cat(context, ": shapes ", shape_text(before), " and ", shape_text(shape),
                              " cannot be broadcast"));
    }
    if (a == 1) a = b;
  }
}

std::vector<int64_t> broadcast_runtime_shapes(const std::vector<std::vector<int64_t>>& shapes,
                                              const std::string& context) {
  std::vector<int64_t> result;
  for (const std::vector<int64_t>& shape : shapes) broadcast_into(result, shape, context);
  return result;
}

OutputShapeFn broadcast_output_shape(int rank, const std::string& context) {
  return [rank, context](const RunTensors& tensors) {
    std::vector<int64_t> out;
    for (size_t i = 0; i < tensors.size(); ++i) broadcast_into(out, tensors[i].shape(), context);
    out.insert(out.begin(), static_cast<size_t>(rank) - std::min(out.size(), size_t(rank)), 1);
    return out;
  };
}

void HalideBlock::compile(HalideCache& cache, const std::string& key,
                          const std::function<BuiltPipeline()>& build) {
  bool ok = arguments_.size() <= kMaxArguments && extent_params_.size() <= kMaxExtentParams &&
            output_view_.size() <= kMaxViewDims;
  for (const Argument& argument : arguments_) ok = ok && argument.view.size() <= kMaxViewDims;
  if (!ok) {
    raise_unsupported(cat(context_, ": a pipeline with ", arguments_.size(),
                          " buffers or views of more than ", kMaxViewDims, " dims"));
  }
  pipeline_ = cache.get(key, [&](const std::string& object_path, const std::string& function_name,
                                 const KernelTarget& target) {
    BuiltPipeline pipeline = build();
    Halide::Pipeline outputs = pipeline.output;
    if (pipeline.overflow) {
      pipeline.overflow->output_buffer().dim(0).set_bounds(0, 4);
      outputs = Halide::Pipeline({pipeline.output, *pipeline.overflow});
    }
    compile_object(outputs, object_path, pipeline.arguments, function_name, target);
    if (const char* dir = std::getenv("RNNC_DUMP_HALIDE"); dir && *dir) {
      std::ofstream(cat(dir, "/", function_name, ".key")) << key;
    }
  });
  compile_ms = pipeline_.compile_ms;
  from_cache = pipeline_.from_cache;
}

namespace {
// A session's last checked argument shapes, the output shape they gave, and the Halide dims of
// every buffer argument (the output's after them) and the extent parameters over those shapes
// (HalideBlock::run).
struct ShapeMemo : BlockRunState {
  // Per argument, the index of its tensor in BlockIO::inputs (-1: the block's constant), for
  // inputs of `input_count` entries.
  std::array<int, kMaxArguments> input_index;
  size_t input_count = SIZE_MAX;
  bool valid = false;
  std::vector<std::vector<int64_t>> argument_shapes;
  std::vector<DType> argument_types;
  std::vector<int64_t> output_shape;
  std::array<std::array<halide_dimension_t, kMaxViewDims>, kMaxArguments + 1> dims;
  std::array<int32_t, kMaxExtentParams> extents;
  bool bound = false;  // dims and extents hold the binding of these shapes
};

// The Halide buffer of `tensor` over dims bound by bind_dims.
halide_buffer_t buffer_over(const Tensor& tensor, const OperandView& view,
                            halide_dimension_t* dims) {
  halide_buffer_t buffer = {};
  buffer.host = static_cast<uint8_t*>(const_cast<void*>(tensor.raw_data()));
  buffer.type = runtime_type(tensor.dtype());
  buffer.dimensions = static_cast<int32_t>(view.size());
  buffer.dim = dims;
  return buffer;
}
}  // namespace

void HalideBlock::run(BlockIO& io) const {
  // Everything on the stack: a small block's call overhead is what a recurrent model pays per
  // step.
  ShapeMemo& memo = run_state<ShapeMemo>(io);
  // Which input each argument is: found once per session (the executor's BlockIO keeps its
  // layout from run to run).
  if (memo.input_count != io.inputs.size()) {
    for (size_t a = 0; a < arguments_.size(); ++a) {
      const Argument& argument = arguments_[a];
      int index = -1;
      for (size_t i = 0; argument.value && index < 0 && i < inputs.size() && i < io.inputs.size();
           ++i) {
        if (inputs[i] == argument.value && io.inputs[i]) index = static_cast<int>(i);
      }
      RNNC_CHECK(!argument.value || index >= 0, "block '", kind_, "' was not given '",
                 argument.value->name(), "'");
      memo.input_index[a] = index;
    }
    memo.input_count = io.inputs.size();
  }
  RunTensors tensors;
  tensors.count = arguments_.size();
  for (size_t a = 0; a < arguments_.size(); ++a) {
    const int index = memo.input_index[a];
    tensors.tensors[a] =
        index < 0 ? &arguments_[a].constant : io.inputs[static_cast<size_t>(index)];
    RNNC_CHECK(tensors.tensors[a], "block '", kind_, "' was not given '",
               arguments_[a].value->name(), "'");
  }
  // The output shape is a function of the arguments' shapes and types: when they are the ones
  // of this session's previous run (the steady state), its checked result is reused without
  // calling output_shape_ (which builds vectors). The previous output is overwritten when its
  // shape still fits.
  bool same = memo.valid && memo.argument_shapes.size() == tensors.size();
  for (size_t a = 0; same && a < tensors.size(); ++a) {
    same = tensors[a].dtype() == memo.argument_types[a] &&
           tensors[a].shape() == memo.argument_shapes[a];
  }
  if (!same) {
    // Checks and binds the shapes once; a run with the same shapes only sets the data pointers.
    memo.valid = false;
    memo.bound = false;
    memo.output_shape = output_shape_(tensors);  // throws for bad shapes: memo stays invalid
    memo.argument_shapes.resize(tensors.size());
    memo.argument_types.resize(tensors.size());
    for (size_t a = 0; a < tensors.size(); ++a) {
      memo.argument_shapes[a] = tensors[a].shape();
      memo.argument_types[a] = tensors[a].dtype();
    }
    memo.valid = true;
  }
  const std::vector<int64_t>& shape = memo.output_shape;
  io.outputs.resize(1);
  Tensor::recycle(io.outputs[0], output_dtype_, shape.data(), shape.size());
  const Tensor& result = io.outputs[0];
  if (result.numel() > 0) {
    std::array<halide_buffer_t, kMaxArguments + 1> buffers;
    std::array<void*, kMaxArguments + kMaxExtentParams + 2> args;
    size_t count = 0;
    // The dims depend on the shapes alone, which the memo holds: bound once per shape (bind_dims
    // checks them), after which a run only sets the data pointers.
    if (!memo.bound) {
      for (size_t a = 0; a < arguments_.size(); ++a) {
        bind_dims(tensors[a], arguments_[a].view, shape, context_, memo.dims[a].data());
      }
      bind_dims(result, output_view_, shape, context_, memo.dims[arguments_.size()].data());
      for (size_t e = 0; e < extent_params_.size(); ++e) {
        memo.extents[e] = static_cast<int32_t>(shape.at(static_cast<size_t>(extent_params_[e])));
      }
      memo.bound = true;
    }
    for (size_t a = 0; a < arguments_.size(); ++a) {
      buffers[a] = buffer_over(tensors[a], arguments_[a].view, memo.dims[a].data());
      args[count++] = &buffers[a];
    }
    for (size_t e = 0; e < extent_params_.size(); ++e) args[count++] = &memo.extents[e];
    halide_buffer_t& out = buffers[arguments_.size()];
    out = buffer_over(result, output_view_, memo.dims[arguments_.size()].data());
    args[count++] = &out;
    int32_t overflow[4] = {};
    halide_dimension_t overflow_dim = {0, 4, 1, 0};
    halide_buffer_t overflow_buffer = {};
    if (overflow_) {
      overflow_buffer.host = reinterpret_cast<uint8_t*>(overflow);
      overflow_buffer.type = halide_type_t(halide_type_int, 32);
      overflow_buffer.dimensions = 1;
      overflow_buffer.dim = &overflow_dim;
      args[count++] = &overflow_buffer;
    }
    pipeline_.call(args.data());
    if (overflow_) {
      for (int i = 0; i < 4; ++i) {
        overflow_totals_[static_cast<size_t>(i)].fetch_add(overflow[i], std::memory_order_relaxed);
      }
    }
  }
  for (const Value* value : outputs) {
    RNNC_CHECK(value == output_value_, "block '", kind_, "' does not compute '", value->name(),
               "'");
  }
  RNNC_CHECK(outputs.size() <= 1, "block '", kind_, "' has ", outputs.size(), " outputs");
}

std::vector<OverflowCounts> HalideBlock::overflow_counts() const {
  if (!overflow_) return {};
  OverflowCounts counts = *overflow_;
  counts.above = overflow_totals_[0].load();
  counts.below = overflow_totals_[1].load();
  counts.sums_beyond = overflow_totals_[2].load();
  counts.values = overflow_totals_[3].load();
  return {counts};
}

}  // namespace rnnc
