#include "lowering/lower_cumsum.h"

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/lower_dense.h"
#include "lowering/lower_elementwise.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;

// Bump when the code a node compiles to changes, so stale cached kernels are not reused.
constexpr const char* kCumSumKey = "rnnc cumsum";

}  // namespace

std::unique_ptr<ExecutionBlock> lower_cumsum(const Node& node, HalideCache& cache) {
  const Value* x = node.input(0);
  const Value* axis_value = node.input(1);
  const Value* y = node.output(0);
  if (!x || !y || !x->type.shape || !y->type.shape) {
    raise_unsupported(cat(node.describe(), ": an input of unknown rank"));
  }
  const DType dtype = x->type.dtype;
  if (dtype != DType::kFloat32 && dtype != DType::kInt32 && dtype != DType::kInt64) {
    raise_unsupported(cat(node.describe(), ": lowered for float32, int32 and int64 only"));
  }
  if (!axis_value || !is_held_constant(axis_value) || axis_value->constant()->numel() != 1) {
    raise_unsupported(cat(node.describe(), ": an axis computed at run time"));
  }
  const int rank = static_cast<int>(x->type.shape->size());
  const int64_t given = axis_value->constant()->get_int64(0);
  if (rank == 0 || given < -rank || given >= rank) {
    raise_unsupported(cat(node.describe(), ": axis ", given, " for rank ", rank));
  }
  const int axis = static_cast<int>(given < 0 ? given + rank : given);
  const bool exclusive = node.attr_int("exclusive", 0) == 1;
  const bool reverse = node.attr_int("reverse", 0) == 1;

  // (inner, length, outer): the dims after the axis, the axis, the dims before it.
  const OperandView view = {ViewDim{axis + 1, rank}, ViewDim{axis, axis + 1}, ViewDim{0, axis}};
  std::optional<int64_t> inner = 1;
  for (int d = axis + 1; d < rank; ++d) {
    const Dim& dim = (*x->type.shape)[static_cast<size_t>(d)];
    inner = inner && dim.is_known() ? std::optional<int64_t>(*inner * dim.value()) : std::nullopt;
  }
  const ArchTable& arch = arch_table(cache.target());
  const int lanes = dtype == DType::kInt64 ? arch.lanes / 2 : arch.lanes;
  const bool vectorized = !inner || *inner >= lanes;

  auto block = std::make_unique<HalideBlock>();
  block->context_ = node.describe();
  block->output_value_ = y;
  block->output_dtype_ = dtype;
  block->output_view_ = view;
  block->arguments_.push_back(argument_of(x, view));

  const std::string key =
      cat(kCumSumKey, "\n", dtype_name(dtype), shape_to_string(*x->type.shape), " axis ", axis,
          exclusive ? " exclusive" : "", reverse ? " reverse" : "", "\nin ", view_to_string(view),
          " lanes ", vectorized ? lanes : 1);
  block->compile(cache, key, [&]() {
    BuiltPipeline built;
    Halide::ImageParam x_image = make_image_param("x", dtype, view);
    built.arguments = {x_image};
    Halide::Var i("inner"), p("position"), o("outer");
    const Expr length = x_image.dim(1).extent();
    // Integers add as unsigned: wrapping modulo 2^bits, never signed overflow.
    const Halide::Type type = halide_type_of(dtype);
    auto add = [&](Expr a, Expr b) {
      if (type.is_float()) return a + b;
      const Halide::Type wrapping = Halide::UInt(type.bits());
      return Halide::reinterpret(
          type, Halide::reinterpret(wrapping, a) + Halide::reinterpret(wrapping, b));
    };
    Halide::Func out("out");
    out(i, p, o) = exclusive ? Halide::Internal::make_zero(type) : x_image(i, p, o);
    // Step s (1 .. length - 1) writes position `at` from the one before it in scan order.
    Halide::RDom step(1, length - 1, "step");
    const Expr at = reverse ? length - 1 - step : Expr(step);
    const Expr previous = reverse ? at + 1 : at - 1;
    out(i, at, o) = add(out(i, previous, o), x_image(i, exclusive ? previous : at, o));
    out.update().reorder(i, step, o);
    if (vectorized) {
      out.vectorize(i, lanes, Halide::TailStrategy::GuardWithIf);
      out.update().vectorize(i, lanes, Halide::TailStrategy::GuardWithIf);
    }
    pin_output_mins(out);
    built.output = out;
    return built;
  });
  block->output_shape_ = [](const RunTensors& tensors) { return tensors[0].shape(); };
  block->kind_ =
      cat("halide cumsum ", dtype_name(dtype), " axis ", axis, exclusive ? " exclusive" : "",
          reverse ? " reverse" : "", " ", shape_to_string(*x->type.shape));
  block->nodes = {&node};
  block->inputs = is_held_constant(x) ? std::vector<const Value*>{} : std::vector<const Value*>{x};
  block->outputs = {y};
  return block;
}

}  // namespace rnnc
