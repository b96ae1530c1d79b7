#include "lowering/lower_reduce.h"

#include <limits>
#include <map>

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;

constexpr const char* kNormalizerKey = "rnnc normalizer";
constexpr const char* kReductionKey = "rnnc reduction";

Expr initial_value(RowOp op) {
  switch (op) {
    case RowOp::kSum:
      return Expr(0.f);
    case RowOp::kMax:
      return Expr(-std::numeric_limits<float>::infinity());
    case RowOp::kMin:
      return Expr(std::numeric_limits<float>::infinity());
  }
  return Expr();
}

Expr combine(RowOp op, Expr a, Expr b) {
  switch (op) {
    case RowOp::kSum:
      return a + b;
    case RowOp::kMax:
      return Halide::max(a, b);
    case RowOp::kMin:
      return Halide::min(a, b);
  }
  return Expr();
}

std::vector<Expr> call_args(Expr first, const std::vector<Var>& rest) {
  std::vector<Expr> args = {first};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

std::vector<Expr> as_exprs(const std::vector<Var>& vars) {
  return std::vector<Expr>(vars.begin(), vars.end());
}

// The RDom over {extent, outer...} starting at `first` on its first dim.
RDom reduction_domain(const std::string& name, Expr first, Expr extent,
                      const std::vector<Expr>& outer_extents) {
  std::vector<Halide::Range> ranges = {Halide::Range(first, extent)};
  for (const Expr& outer : outer_extents) ranges.emplace_back(0, outer);
  return RDom(ranges, name);
}

std::vector<Expr> outer_vars(const RDom& domain) {
  std::vector<Expr> vars;
  for (int i = 1; i < domain.dimensions(); ++i) vars.push_back(domain[i]);
  return vars;
}


}  // namespace

RowReduction reduce_row(const std::string& name, RowOp op, int lanes, Expr extent,
                        const std::vector<Expr>& outer_extents,
                        const std::function<Expr(Expr, const std::vector<Expr>&)>& value,
                        const std::vector<Var>& rows) {
  RowReduction reduction{Func(name + "_partial"), Func(name)};
  Var lane(name + "_lane");
  std::vector<Expr> partial_at = call_args(lane, rows);
  Expr whole = extent / lanes;  // full groups of `lanes` elements
  reduction.partial(partial_at) = initial_value(op);
  RDom body = reduction_domain(name + "_body", 0, whole, outer_extents);
  reduction.partial(partial_at) =
      combine(op, reduction.partial(partial_at), value(body[0] * lanes + lane, outer_vars(body)));

  std::vector<Expr> row_at = as_exprs(rows);
  reduction.result(row_at) = initial_value(op);
  RDom lanes_domain(0, lanes, name + "_lanes");
  std::vector<Expr> lane_at = {lanes_domain};
  lane_at.insert(lane_at.end(), rows.begin(), rows.end());
  reduction.result(row_at) = combine(op, reduction.result(row_at), reduction.partial(lane_at));
  RDom tail =
      reduction_domain(name + "_tail", whole * lanes, extent - whole * lanes, outer_extents);
  reduction.result(row_at) =
      combine(op, reduction.result(row_at), value(tail[0], outer_vars(tail)));
  return reduction;
}

void schedule_row_reduction(RowReduction& reduction, const Halide::LoopLevel& level, int lanes) {
  Halide::VarOrRVar lane = reduction.partial.args()[0];
  reduction.partial.compute_at(level).vectorize(lane, lanes);
  reduction.partial.update().vectorize(lane, lanes);
  reduction.result.compute_at(level);
}

RowNormalization normalize_row(bool log, Func z, const Var& n, const std::vector<Var>& rows,
                               Expr extent, int lanes) {
  RowNormalization norm;
  norm.max = reduce_row(
      z.name() + "_max", RowOp::kMax, lanes, extent, {},
      [&](Expr i, const std::vector<Expr>&) { return z(call_args(i, rows)); }, rows);
  Func max = norm.max.result;
  norm.sum = reduce_row(
      z.name() + "_sum", RowOp::kSum, lanes, extent, {},
      [&](Expr i, const std::vector<Expr>&) {
        return Halide::exp(z(call_args(i, rows)) - max(as_exprs(rows)));
      },
      rows);
  Expr shifted = z(call_args(n, rows)) - max(as_exprs(rows));
  Expr sum = norm.sum.result(as_exprs(rows));
  norm.value = log ? shifted - Halide::log(sum) : Halide::exp(shifted) / sum;
  return norm;
}

void check_last_axis_normalizer(const Node& normalizer) {
  const Value* input = normalizer.input(0);
  if (!input || !input->type.shape || input->type.dtype != DType::kFloat32) {
    raise_unsupported(cat(normalizer.describe(), ": lowered for float32 inputs of known rank"));
  }
  int64_t rank = static_cast<int64_t>(input->type.shape->size());
  bool one_axis = normalizer.opset() >= 13;
  int64_t axis = normalizer.attr_int("axis", one_axis ? -1 : 1);
  if (axis < 0) axis += rank;
  // Before opset 13 the rows are the input coerced to 2-D at axis: the last axis alone only when
  // axis is the last.
  if (rank == 0 || axis != rank - 1) {
    raise_unsupported(cat(normalizer.describe(), ": lowered along the last axis only (axis ",
                          normalizer.attr_int("axis", one_axis ? -1 : 1), ", rank ", rank, ")"));
  }
}

std::unique_ptr<ExecutionBlock> lower_normalizer_group(const FusionGroup& group,
                                                       HalideCache& cache) {
  const Node& normalizer = *group.normalizer;
  RNNC_CHECK(!group.root && !group.reduction, "lower_normalizer_group on a rooted group");
  check_last_axis_normalizer(normalizer);
  bool log = normalizer.op_type() == "LogSoftmax";
  const Value* result = normalizer.output(0);
  const Value* input = normalizer.input(0);
  const Shape& shape = *input->type.shape;
  int rank = static_cast<int>(shape.size());

  std::vector<std::vector<DimRead>> reads;
  for (const Value* operand : group.operands) {
    if (static_cast<int>(operand->type.shape->size()) > rank) {
      raise_unsupported(cat(normalizer.describe(), ": operand '", operand->name(),
                            "' has a higher rank than the result"));
    }
    reads.push_back(classify_operand(*operand->type.shape, shape));
  }
  // The normalized (last) dim stays a loop of its own; the rows merge.
  std::vector<LoopDim> loops =
      merge_loop_dims(rank, reads, [rank](int d) { return d + 1 < rank - 1; });
  if (loops.size() == 1) loops.push_back(LoopDim{0, 0});

  auto block = std::make_unique<HalideBlock>();
  block->context_ = normalizer.describe();
  block->output_value_ = result;
  block->output_view_ = output_view(loops);
  const Dim& last = shape.back();
  std::optional<int64_t> row_length =
      last.is_known() ? std::optional<int64_t>(last.value()) : std::nullopt;
  if (!row_length) block->extent_params_ = {rank - 1};
  for (size_t i = 0; i < group.operands.size(); ++i) {
    const Value* operand = group.operands[i];
    block->arguments_.push_back(argument_of(
        operand,
        operand_view(static_cast<int>(operand->type.shape->size()), rank, loops, reads[i])));
  }
  RowReduceSchedule schedule =
      choose_row_reduce_schedule(arch_table(cache.target()), DType::kFloat32);

  std::string key = cat(kNormalizerKey, "\n", group_signature(group));
  for (const HalideBlock::Argument& argument : block->arguments_) {
    key += view_to_string(argument.view) + "\n";
  }
  key += cat("out ", view_to_string(block->output_view_), "\n", schedule.to_string());

  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    std::vector<Var> vars;
    for (size_t i = 0; i < loops.size(); ++i) vars.emplace_back(cat("loop", i));
    std::vector<Var> rows(vars.begin() + 1, vars.end());
    BuiltPipeline built;
    std::map<const Value*, Expr> reads_of = read_operands(group.operands, spec, vars, built);
    Expr extent = static_cast<int>(row_length.value_or(0));
    if (!row_length) {
      Halide::Param<int32_t> length("row_length");
      built.arguments.push_back(length);
      extent = length;
    }
    Func z("z");
    z(vars) = Halide::cast<float>(
        group_expr(group, input, [&](const Value* value) { return reads_of.at(value); }));
    RowNormalization norm = normalize_row(log, z, vars[0], rows, extent, schedule.lanes);
    Func out("out");
    out(vars) = norm.value;
    schedule_elementwise(out, vars[0], schedule.lanes, 1, row_length);
    Halide::LoopLevel row_level(out, rows[0]);
    schedule_row_reduction(norm.max, row_level, schedule.lanes);
    schedule_row_reduction(norm.sum, row_level, schedule.lanes);
    if (!group.elementwise.empty()) {
      z.compute_at(row_level).vectorize(vars[0], schedule.lanes, Halide::TailStrategy::GuardWithIf);
    }
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  block->output_shape_ = broadcast_output_shape(rank, block->context_);
  block->kind_ = cat("halide ", group_op_names(group), " ", shape_to_string(shape));
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

namespace {

struct ReductionKind {
  RowOp op;
  const char* finish;  // "", "mean", "sqrt", "log"
  const char* term;    // "", "square", "abs"
};

const std::map<std::string, ReductionKind>& reduction_kinds() {
  static const std::map<std::string, ReductionKind> kinds = {
      {"ReduceSum", {RowOp::kSum, "", ""}},
      {"ReduceMean", {RowOp::kSum, "mean", ""}},
      {"ReduceMax", {RowOp::kMax, "", ""}},
      {"ReduceMin", {RowOp::kMin, "", ""}},
      {"ReduceSumSquare", {RowOp::kSum, "", "square"}},
      {"ReduceL1", {RowOp::kSum, "", "abs"}},
      {"ReduceL2", {RowOp::kSum, "sqrt", "square"}},
      {"ReduceLogSum", {RowOp::kSum, "log", ""}},
  };
  return kinds;
}

// A run of consecutive input dims that are all reduced or all kept.
struct DimRun {
  int first;
  int last;
  bool reduced;
};

}  // namespace

std::unique_ptr<ExecutionBlock> lower_reduction(const FusionGroup& group, HalideCache& cache) {
  const Node& node = *group.reduction;
  const ReductionKind& kind = reduction_kinds().at(node.op_type());
  const Value* data = node.input(0);
  const Value* result = node.output(0);
  if (!data || data->type.dtype != DType::kFloat32) {
    raise_unsupported(cat(node.describe(), ": lowered for float32 data only"));
  }
  int rank = static_cast<int>(data->type.shape->size());
  if (rank == 0) raise_unsupported(cat(node.describe(), ": a scalar input (nothing to reduce)"));
  // Axes: the attribute before the opset that made them an input (13 for ReduceSum, 18 others).
  int since = node.op_type() == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  if (node.opset() < since) {
    axes = node.attr_ints("axes");
  } else if (const Value* axes_value = node.input(1)) {
    if (!is_held_constant(axes_value)) {
      raise_unsupported(cat(node.describe(), ": axes computed at run time"));
    }
    const Tensor& tensor = *axes_value->constant();
    for (int64_t i = 0; i < tensor.numel(); ++i) axes.push_back(tensor.get_int64(i));
  }
  if (axes.empty() && node.opset() >= since && node.attr_int("noop_with_empty_axes", 0) == 1) {
    raise_unsupported(cat(node.describe(), ": noop_with_empty_axes (the identity)"));
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t axis : axes) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || reduced[static_cast<size_t>(a)]) {
      raise_invalid_model(
          cat(node.describe(), ": axes value ", axis, " is invalid for rank ", rank));
    }
    reduced[static_cast<size_t>(a)] = true;
  }
  bool keepdims = node.attr_int("keepdims", 1) == 1;

  // Runs of input dims, innermost first.
  std::vector<DimRun> runs;
  for (int d = rank - 1; d >= 0; --d) {
    bool r = reduced[static_cast<size_t>(d)];
    if (!runs.empty() && runs.back().reduced == r) {
      runs.back().first = d;
    } else {
      runs.push_back(DimRun{d, d + 1, r});
    }
  }
  // Output dim of input dim d (without keepdims the reduced dims are dropped).
  auto out_dim = [&](int d) {
    if (keepdims) return d;
    int index = 0;
    for (int i = 0; i < d; ++i) index += reduced[static_cast<size_t>(i)] ? 0 : 1;
    return index;
  };

  auto block = std::make_unique<HalideBlock>();
  block->context_ = node.describe();
  block->output_value_ = result;
  HalideBlock::Argument argument;
  for (const DimRun& run : runs) argument.view.push_back(ViewDim{run.first, run.last});
  if (is_held_constant(data)) {
    argument.constant = *data->constant();
  } else {
    argument.value = data;
  }
  block->arguments_.push_back(argument);
  std::vector<int> kept_runs;  // indices into runs
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].reduced) continue;
    kept_runs.push_back(static_cast<int>(i));
    block->output_view_.push_back(ViewDim{out_dim(runs[i].first), out_dim(runs[i].last - 1) + 1});
  }
  if (kept_runs.empty()) block->output_view_.push_back(ViewDim{0, 0});  // one element
  bool inner_reduced = runs[0].reduced;
  const ArchTable& arch = arch_table(cache.target());
  int lanes = choose_row_reduce_schedule(arch, DType::kFloat32).lanes;
  std::optional<int64_t> inner_extent;
  if (!inner_reduced) {
    inner_extent = 1;
    for (int d = runs[0].first; d < runs[0].last; ++d) {
      const Dim& dim = (*data->type.shape)[static_cast<size_t>(d)];
      inner_extent = inner_extent && dim.is_known()
                         ? std::optional<int64_t>(*inner_extent * dim.value())
                         : std::nullopt;
    }
  }
  ElementwiseSchedule out_schedule =
      choose_elementwise_schedule(arch, DType::kFloat32, inner_extent);

  std::string key = cat(kReductionKey, "\n", node.op_type(), " keepdims=", keepdims, " in ",
                        view_to_string(argument.view), " out ", view_to_string(block->output_view_),
                        " lanes=", lanes, " ", out_schedule.to_string());

  block->compile(cache, key, [&]() {
    BuiltPipeline built;
    Halide::ImageParam image = make_image_param("data", DType::kFloat32, argument.view);
    built.arguments.push_back(image);
    std::vector<Var> vars;  // output loop vars, innermost first
    for (size_t i = 0; i < block->output_view_.size(); ++i) vars.emplace_back(cat("loop", i));
    auto term = [&](Expr x) {
      std::string t = kind.term;
      return t == "square" ? x * x : t == "abs" ? Halide::abs(x) : x;
    };
    // The input at a point: kept runs at the output vars, reduced runs at `reduced_at` (in run
    // order, innermost first).
    auto input_at = [&](const std::vector<Expr>& reduced_at) {
      std::vector<Expr> coords;
      size_t kept = 0, red = 0;
      for (const DimRun& run : runs) {
        coords.push_back(run.reduced ? reduced_at.at(red++) : Expr(vars.at(kept++)));
      }
      return term(image(coords));
    };
    std::vector<Expr> reduced_extents;
    Expr count = 1.f;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!runs[i].reduced) continue;
      reduced_extents.push_back(image.dim(static_cast<int>(i)).extent());
      count = count * Halide::cast<float>(reduced_extents.back());
    }
    Func out("out");
    Func total;
    std::optional<RowReduction> rows;
    std::vector<Halide::VarOrRVar> update_order = {vars[0]};  // vars[0] innermost
    if (inner_reduced) {
      std::vector<Expr> outer(reduced_extents.begin() + 1, reduced_extents.end());
      rows = reduce_row(
          "total", kind.op, lanes, reduced_extents[0], outer,
          [&](Expr i, const std::vector<Expr>& rest) {
            std::vector<Expr> at = {i};
            at.insert(at.end(), rest.begin(), rest.end());
            return input_at(at);
          },
          vars);
      total = rows->result;
    } else {
      total = Func("total");
      std::vector<Halide::Range> ranges;
      for (const Expr& extent : reduced_extents) ranges.emplace_back(0, extent);
      RDom domain(ranges, "r");
      std::vector<Expr> at;
      for (int i = 0; i < domain.dimensions(); ++i) {
        at.push_back(domain[i]);
        update_order.push_back(domain[i]);
      }
      total(vars) = initial_value(kind.op);
      total(vars) = combine(kind.op, total(vars), input_at(at));
      update_order.insert(update_order.end(), vars.begin() + 1, vars.end());
    }
    std::string finish = kind.finish;
    Expr value = total(as_exprs(vars));
    out(vars) = finish == "mean"   ? value / count
                : finish == "sqrt" ? Halide::sqrt(value)
                : finish == "log"  ? Halide::select(value < 0.f, std::numeric_limits<float>::quiet_NaN(),
                                                    Halide::log(value))
                                   : value;
    if (inner_reduced) {
      schedule_row_reduction(*rows, Halide::LoopLevel(out, vars[0]), lanes);
    } else {
      Var vectors = schedule_elementwise(out, vars[0], out_schedule.lanes, 1, inner_extent);
      // Accumulate one vector of outputs at a time, the reduction loops outside it.
      total.compute_at(out, vectors);
      total.update().reorder(update_order);
      if (out_schedule.lanes > 1) {
        total.vectorize(vars[0], out_schedule.lanes, Halide::TailStrategy::GuardWithIf);
        total.update().vectorize(vars[0], out_schedule.lanes, Halide::TailStrategy::GuardWithIf);
      }
    }
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  std::string context = block->context_;
  block->output_shape_ = [reduced, keepdims, context](const RunTensors& tensors) {
    const std::vector<int64_t>& in = tensors[0].shape();
    std::vector<int64_t> out;
    for (size_t d = 0; d < in.size(); ++d) {
      if (!reduced[d]) {
        out.push_back(in[d]);
      } else if (keepdims) {
        out.push_back(1);
      }
    }
    RNNC_CHECK(in.size() == reduced.size(), context, ": input ", shape_text(in),
               " has another rank than lowered for");
    return out;
  };
  block->kind_ = cat("halide ", group_op_names(group), " ", shape_to_string(*data->type.shape));
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

}  // namespace rnnc
