#include "lowering/lower_dft.h"

#include <cmath>
#include <optional>

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/layout.h"
#include "lowering/lower_dense.h"
#include "lowering/lower_elementwise.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::TailStrategy;
using Halide::Var;

// Bump when the code a node compiles to changes, so stale cached kernels are not reused.
constexpr const char* kDftKey = "rnnc dft";

constexpr double kPi = 3.14159265358979323846;

// A scalar operand the node must hold as a constant (nullopt when the input is omitted).
std::optional<int64_t> constant_int(const Node& node, size_t input, const char* name) {
  const Value* value = node.input(input);
  if (!value) return std::nullopt;
  if (!is_held_constant(value) || value->constant()->numel() != 1) {
    raise_unsupported(cat(node.describe(), ": '", name, "' computed at run time"));
  }
  return value->constant()->get_int64(0);
}

// What the pipeline computes, decided from the node.
struct Transform {
  bool stft = false;
  int64_t n_total = 0;  // N: the transform's length
  int64_t samples = 0;  // K: the samples each row reads (the reduction)
  int64_t bins = 0;
  int64_t step = 0;  // STFT: frame_step
  bool inverse = false;
  std::vector<double> window;  // K values (empty: 1)
  int axis = 0;                // DFT: the signal axis (rank - 2)

  // T (K x 2 bins), row-major.
  Tensor matrix() const {
    Tensor t(DType::kFloat32, {samples, 2 * bins});
    float* data = t.data<float>();
    const double sign = inverse ? 1.0 : -1.0;
    const double scale = inverse ? 1.0 / static_cast<double>(n_total) : 1.0;
    for (int64_t n = 0; n < samples; ++n) {
      const double w = window.empty() ? 1.0 : window[static_cast<size_t>(n)];
      for (int64_t k = 0; k < bins; ++k) {
        const double phase =
            sign * 2 * kPi * static_cast<double>(k * n % n_total) / static_cast<double>(n_total);
        data[n * 2 * bins + 2 * k] = static_cast<float>(w * std::cos(phase) * scale);
        data[n * 2 * bins + 2 * k + 1] = static_cast<float>(w * std::sin(phase) * scale);
      }
    }
    return t;
  }
};

Transform analyze_stft(const Node& node) {
  Transform t;
  t.stft = true;
  const Shape& signal = *node.input(0)->type.shape;
  if (signal.size() != 3)
    raise_unsupported(cat(node.describe(), ": a signal of rank ", signal.size()));
  const int64_t step = constant_int(node, 1, "frame_step").value_or(0);
  if (step < 1) raise_unsupported(cat(node.describe(), ": frame_step ", step));
  const Value* window = node.input(2);
  if (window && (!is_held_constant(window) || window->constant()->dtype() != DType::kFloat32)) {
    raise_unsupported(cat(node.describe(), ": a window computed at run time"));
  }
  std::optional<int64_t> frame_length = constant_int(node, 3, "frame_length");
  if (!frame_length && window) frame_length = window->constant()->numel();
  if (!frame_length || *frame_length < 1 ||
      (window && window->constant()->numel() != *frame_length)) {
    raise_unsupported(cat(node.describe(), ": no usable frame_length"));
  }
  t.step = step;
  t.n_total = t.samples = *frame_length;
  t.bins = node.attr_int("onesided", 1) == 1 ? t.n_total / 2 + 1 : t.n_total;
  if (window) {
    for (int64_t n = 0; n < t.samples; ++n) t.window.push_back(window->constant()->get_double(n));
  }
  return t;
}

Transform analyze_dft(const Node& node) {
  Transform t;
  const Shape& x = *node.input(0)->type.shape;
  const int rank = static_cast<int>(x.size());
  const int64_t given =
      node.opset() >= 20 ? constant_int(node, 2, "axis").value_or(-2) : node.attr_int("axis", 1);
  if (rank < 2 || given < -rank || given > rank - 2 || given == -1) {
    raise_unsupported(cat(node.describe(), ": axis ", given, " for rank ", rank));
  }
  t.axis = static_cast<int>(given < 0 ? given + rank : given);
  if (t.axis != rank - 2) {
    raise_unsupported(cat(node.describe(), ": lowered for the axis before the last only"));
  }
  const Dim& length = x[static_cast<size_t>(t.axis)];
  if (!length.is_known()) {
    raise_unsupported(cat(node.describe(), ": a signal length known only at run time"));
  }
  t.n_total = constant_int(node, 1, "dft_length").value_or(length.value());
  if (t.n_total < 1) raise_unsupported(cat(node.describe(), ": dft_length ", t.n_total));
  t.samples = std::min(t.n_total, length.value());
  t.inverse = node.attr_int("inverse", 0) == 1;
  t.bins = node.attr_int("onesided", 0) == 1 ? t.n_total / 2 + 1 : t.n_total;
  return t;
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_dft(const Node& node, HalideCache& cache) {
  const Value* x = node.input(0);
  const Value* y = node.output(0);
  if (!x || !y || !x->type.shape || !y->type.shape) {
    raise_unsupported(cat(node.describe(), ": an input of unknown rank"));
  }
  if (x->type.dtype != DType::kFloat32) {
    raise_unsupported(cat(node.describe(), ": lowered for float32 only"));
  }
  const Shape& sx = *x->type.shape;
  if (sx.empty() || !sx.back().is_known() || sx.back().value() != 1) {
    raise_unsupported(cat(node.describe(), ": lowered for real signals (last dim 1) only"));
  }
  const bool stft = node.op_type() == "STFT";
  const Transform t = stft ? analyze_stft(node) : analyze_dft(node);
  const int rank = static_cast<int>(sx.size());
  const int64_t columns = 2 * t.bins;

  const ArchTable& arch = arch_table(cache.target());
  const GemmSchedule schedule = choose_gemm_schedule(arch, DType::kFloat32, columns, false);
  const LayoutMap t_layout({t.samples, columns}, schedule.b_layout);

  // Views (innermost first). STFT: x (samples, batch), out (2 bins, frames, batch). DFT: x
  // (samples, rows), out (2 bins, rows, 1), rows the dims before the axis.
  OperandView view_x, view_out;
  if (stft) {
    view_x = {ViewDim{1, 3}, ViewDim{0, 1}};
    view_out = {ViewDim{2, 4}, ViewDim{1, 2}, ViewDim{0, 1}};
  } else {
    view_x = {ViewDim{t.axis, rank}, ViewDim{0, t.axis}};
    view_out = {ViewDim{t.axis, rank}, ViewDim{0, t.axis}, ViewDim{0, 0}};
  }
  auto block = std::make_unique<HalideBlock>();
  block->context_ = node.describe();
  block->output_value_ = y;
  block->output_view_ = view_out;
  block->arguments_.push_back(argument_of(x, view_x));
  HalideBlock::Argument matrix;
  matrix.constant = t_layout.marshal(t.matrix());
  const int physical_rank = static_cast<int>(t_layout.physical_shape().size());
  for (int d = physical_rank - 1; d >= 0; --d) matrix.view.push_back(ViewDim{d, d + 1});
  block->arguments_.push_back(std::move(matrix));

  // The matrix's values are not in the key: it holds what T is computed from.
  std::string key =
      cat(kDftKey, "\n", node.op_type(), " N=", t.n_total, " K=", t.samples, " bins=", t.bins,
          " step=", t.step, " in ", view_to_string(view_x), " out ", view_to_string(view_out), "\n",
          schedule.to_string(), " ", t_layout.to_string());
  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    const int lanes = schedule.lanes, nr = schedule.nr, mr = schedule.mr;
    BuiltPipeline built;
    Halide::ImageParam x_image = make_image_param("x", DType::kFloat32, spec.arguments_[0].view);
    Halide::ImageParam t_image = make_image_param("t", DType::kFloat32, spec.arguments_[1].view);
    pin_shape(t_image, t_layout.physical_shape());
    built.arguments = {x_image, t_image};
    Var q("q"), f("f"), b("b");
    Halide::RDom r(0, static_cast<int>(t.samples), "r");
    // Frames are read where they lie in the signal: row f starts at f * step.
    Expr sample = stft ? x_image(f * static_cast<int>(t.step) + r, b) : x_image(r, f);
    Halide::Func prod("prod");
    prod(q, f, b) = 0.f;
    prod(q, f, b) += sample * t_image(t_layout.physical_coords({q, Expr(r)}));
    Halide::Func out("out");
    out(q, f, b) = prod(q, f, b);
    out.output_buffer().dim(0).set_extent(static_cast<int>(columns));
    const TailStrategy q_tail = columns % nr == 0 ? TailStrategy::Auto : TailStrategy::GuardWithIf;
    Var qo("qo"), qi("qi"), fo("fo"), fi("fi");
    tile_gemm_rows(out, q, f, nr, mr, lanes, q_tail, true, qo, qi, fo, fi);
    prod.compute_at(out, qo).bound_extent(q, nr).vectorize(q, lanes).unroll(q).unroll(f);
    prod.update().reorder(q, f, r).vectorize(q, lanes).unroll(q).unroll(f);
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  const std::string context = block->context_;
  block->output_shape_ = [=](const RunTensors& tensors) {
    std::vector<int64_t> shape = tensors[0].shape();
    if (static_cast<int>(shape.size()) != rank || shape.back() != 1) {
      raise_invalid_input(cat(context, ": input has shape ", shape_text(shape),
                              ", expected a real signal of rank ", rank));
    }
    if (stft) {
      if (shape[1] < t.n_total) {
        raise_invalid_input(cat(context, ": input 'signal' has ", shape[1],
                                " samples, fewer than frame_length ", t.n_total));
      }
      return std::vector<int64_t>{shape[0], (shape[1] - t.n_total) / t.step + 1, t.bins, 2};
    }
    shape[static_cast<size_t>(t.axis)] = t.bins;
    shape.back() = 2;
    return shape;
  };
  block->kind_ = cat("halide ", stft ? "stft" : "dft", t.inverse ? " inverse" : "",
                     " [N=", t.n_total, ",bins=", t.bins, stft ? cat(",step=", t.step) : "", "]");
  block->nodes = {&node};
  block->inputs = is_held_constant(x) ? std::vector<const Value*>{} : std::vector<const Value*>{x};
  block->outputs = {y};
  return block;
}

}  // namespace rnnc
