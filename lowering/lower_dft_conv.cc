#include "lowering/lower_dft_conv.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/kernel_target.h"
#include "lowering/lower_elementwise.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Tuple;
using Halide::Var;

// Bump when the code a Conv compiles to here changes, so stale cached kernels are not reused.
constexpr const char* kDftConvKey = "rnnc dft conv";
constexpr double kPi = 3.14159265358979323846;
// How far a weight may be from the basis, as a fraction of the largest weight (lower_dft_conv.h).
constexpr double kBasisTolerance = 1e-6;

// cos and sin of 2 pi p / q, p reduced mod q first so large products stay exact.
double cos_turn(int64_t p, int64_t q) {
  return std::cos(2 * kPi * static_cast<double>(p % q) / static_cast<double>(q));
}
double sin_turn(int64_t p, int64_t q) {
  return std::sin(2 * kPi * static_cast<double>(p % q) / static_cast<double>(q));
}

// The matched transform: frame length N = n1 * n2, hop, the window, bins B = N / 2 + 1.
struct DftConv {
  int64_t n = 0, n1 = 0, n2 = 0, hop = 0, bins = 0;
  std::vector<float> window;
};

// The factor n2 of N (the vectorized one) with the fewest multiply-adds per frame, 2 n2 + 4 n1,
// counting n2 rounded up to whole vectors of `lanes`. The stages are vectorized by
// min(lanes, n2) along n2 with no tail, so n2 is at most one vector or whole vectors of `lanes`;
// 0 when N has no such factor in [2, N / 2].
int64_t choose_n2(int64_t n, int lanes) {
  int64_t best = 0;
  double best_cost = 0;
  for (int64_t n2 = 2; n2 <= n / 2; ++n2) {
    if (n % n2 != 0 || (n2 > lanes && n2 % lanes != 0)) continue;
    const int64_t padded = (n2 + lanes - 1) / lanes * lanes;
    const double cost = static_cast<double>(2 * padded + 4 * (n / n2));
    if (best == 0 || cost < best_cost) {
      best = n2;
      best_cost = cost;
    }
  }
  return best;
}

// The transform `conv` computes, when its weights are a windowed DFT basis (lower_dft_conv.h).
std::optional<DftConv> match(const Node& conv, const ConvAxis& axis, int lanes) {
  const Value* x = conv.input(0);
  const Value* w = conv.input(1);
  if (conv.num_inputs() > 2 && conv.input(2)) return std::nullopt;  // a bias
  if (!x || !w || x->type.dtype != DType::kFloat32 || !is_held_constant(w) || !x->type.shape) {
    return std::nullopt;
  }
  const Tensor& weights = *w->constant();
  if (weights.dtype() != DType::kFloat32 || weights.rank() != 3 || weights.dim(1) != 1 ||
      x->type.shape->size() != 3) {
    return std::nullopt;
  }
  if (conv.attr_int("group", 1) != 1 || axis.dilation != 1 || axis.pad_begin != 0 ||
      axis.pad_end != 0) {
    return std::nullopt;
  }
  DftConv t;
  t.n = weights.dim(2);
  t.bins = t.n / 2 + 1;
  t.hop = axis.stride;
  if (t.n < 16 || t.n % 2 != 0 || weights.dim(0) != 2 * t.bins || t.hop < 1) return std::nullopt;
  t.n2 = choose_n2(t.n, lanes);
  if (t.n2 == 0) return std::nullopt;
  t.n1 = t.n / t.n2;

  const float* data = weights.data<float>();
  double largest = 0;
  bool integers = true;
  for (int64_t i = 0; i < weights.numel(); ++i) {
    largest = std::max(largest, std::abs(double{data[i]}));
    integers = integers && data[i] == std::nearbyint(data[i]);
  }
  // Integer weights are an integer convolution (graph_opt/conv_integer_to_float.cc), which the
  // direct convolution sums exactly and the transform would only approximate.
  if (largest == 0 || integers) return std::nullopt;
  const double tolerance = kBasisTolerance * largest;
  t.window.assign(data, data + t.n);  // row 0: w[n] cos 0
  for (int64_t m = 0; m < t.bins; ++m) {
    const float* re = data + m * t.n;
    const float* im = data + (t.bins + m) * t.n;
    for (int64_t k = 0; k < t.n; ++k) {
      const double w_k = t.window[static_cast<size_t>(k)];
      if (std::abs(re[k] - w_k * cos_turn(m * k, t.n)) > tolerance ||
          std::abs(im[k] + w_k * sin_turn(m * k, t.n)) > tolerance) {
        return std::nullopt;
      }
    }
  }
  return t;
}

// A table [rows][columns] of f(row, column), as a constant argument read (column, row).
HalideBlock::Argument table(int64_t rows, int64_t columns,
                            const std::function<double(int64_t, int64_t)>& f) {
  HalideBlock::Argument argument;
  argument.constant = Tensor(DType::kFloat32, {rows, columns});
  float* data = argument.constant.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < columns; ++c) data[r * columns + c] = static_cast<float>(f(r, c));
  }
  argument.view = {ViewDim{1, 2}, ViewDim{0, 1}};
  return argument;
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_dft_conv(const Node& conv, const ConvAxis& axis,
                                               HalideCache& cache) {
  const ArchTable& arch = arch_table(cache.target());
  const int lanes = arch.lanes;
  const std::optional<DftConv> matched = match(conv, axis, lanes);
  if (!matched) return nullptr;
  const DftConv t = *matched;
  const int64_t k1_rows = (t.bins + t.n2 - 1) / t.n2;  // k1 values holding the bins below B
  const Value* x = conv.input(0);
  const Value* y = conv.output(0);

  auto block = std::make_unique<HalideBlock>();
  block->context_ = conv.describe();
  block->output_value_ = y;
  // x [batch, 1, L] as (sample, batch); out [batch, 2 B, frames] as (frame, channel, batch).
  const OperandView view_x = {ViewDim{1, 3}, ViewDim{0, 1}};
  block->output_view_ = {ViewDim{2, 3}, ViewDim{1, 2}, ViewDim{0, 1}};
  HalideBlock::Argument signal;
  signal.value = x;
  signal.view = view_x;
  block->arguments_.push_back(signal);
  const int64_t n = t.n, n1 = t.n1, n2 = t.n2;
  block->arguments_.push_back(
      table(1, n, [&](int64_t, int64_t k) { return t.window[static_cast<size_t>(k)]; }));
  // Stage A (n2 -> k2), the twiddle (n1, k2) and stage B (n1 -> k1): cos and -sin of e^(-i..)
  // are read (k, n) so the vectorized k is the inner index.
  block->arguments_.push_back(
      table(n2, n2, [&](int64_t r, int64_t k) { return cos_turn(r * k, n2); }));
  block->arguments_.push_back(
      table(n2, n2, [&](int64_t r, int64_t k) { return -sin_turn(r * k, n2); }));
  block->arguments_.push_back(
      table(n1, n2, [&](int64_t r, int64_t k) { return cos_turn(r * k, n); }));
  block->arguments_.push_back(
      table(n1, n2, [&](int64_t r, int64_t k) { return -sin_turn(r * k, n); }));
  block->arguments_.push_back(
      table(n1, k1_rows, [&](int64_t r, int64_t k) { return cos_turn(r * k, n1); }));
  block->arguments_.push_back(
      table(n1, k1_rows, [&](int64_t r, int64_t k) { return -sin_turn(r * k, n1); }));

  // The window and the tables are arguments, not compiled in: the code depends on the sizes.
  const std::string key = cat(kDftConvKey, "\nN=", n, " n1=", n1, " n2=", n2, " hop=", t.hop,
                              " bins=", t.bins, " lanes=", lanes);
  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    BuiltPipeline built;
    Halide::ImageParam x_image =
        make_image_param("signal", DType::kFloat32, spec.arguments_[0].view);
    const char* names[] = {"window", "cos_a", "sin_a", "cos_tw", "sin_tw", "cos_b", "sin_b"};
    std::vector<Halide::ImageParam> tables;
    built.arguments = {x_image};
    for (size_t i = 0; i < 7; ++i) {
      tables.push_back(make_image_param(names[i], DType::kFloat32, spec.arguments_[i + 1].view));
      pin_shape(tables.back(), spec.arguments_[i + 1].constant.shape());
      built.arguments.push_back(tables.back());
    }
    const Halide::ImageParam &window = tables[0], &cos_a = tables[1], &sin_a = tables[2],
                             &cos_tw = tables[3], &sin_tw = tables[4], &cos_b = tables[5],
                             &sin_b = tables[6];
    Var k2("k2"), i1("i1"), k("k"), f("f"), b("b"), m("m");
    const int hop = static_cast<int>(t.hop), in1 = static_cast<int>(n1), in2 = static_cast<int>(n2);
    const int bins = static_cast<int>(t.bins);
    // The frame's samples times the window.
    Var p("p");
    Func windowed("windowed");
    windowed(p, f, b) = x_image(f * hop + p, b) * window(p, 0);
    // Stage A: the length-n2 DFTs of the samples i1, i1 + n1, ... of frame f.
    RDom r2(0, in2, "r2");
    Expr sample = windowed(i1 + in1 * r2, f, b);
    Func a("stage_a");
    a(k2, i1, f, b) = Tuple(0.f, 0.f);
    a(k2, i1, f, b) = Tuple(a(k2, i1, f, b)[0] + sample * cos_a(k2, r2),
                            a(k2, i1, f, b)[1] + sample * sin_a(k2, r2));
    // The twiddle: times e^(-2 pi i i1 k2 / N).
    Func tw("twiddled");
    Expr c = cos_tw(k2, i1), s = sin_tw(k2, i1);
    tw(k2, i1, f, b) = Tuple(a(k2, i1, f, b)[0] * c - a(k2, i1, f, b)[1] * s,
                             a(k2, i1, f, b)[0] * s + a(k2, i1, f, b)[1] * c);
    // Stage B: the length-n1 DFTs over i1, for bin k = k2 + n2 k1 (k2 = k % n2, k1 = k / n2:
    // bins are computed in whole vectors of n2, so both are plain vector indices).
    RDom r1(0, in1, "r1");
    Func spectrum("spectrum");
    Expr kb = k / in2, kr = k % in2;
    Expr cb = cos_b(kb, r1), sb = sin_b(kb, r1);
    Expr re = tw(kr, r1, f, b)[0], im = tw(kr, r1, f, b)[1];
    spectrum(k, f, b) = Tuple(0.f, 0.f);
    spectrum(k, f, b) =
        Tuple(spectrum(k, f, b)[0] + re * cb - im * sb, spectrum(k, f, b)[1] + re * sb + im * cb);
    // Channels: the B real parts, then the B imaginary parts, gathered per frame as two dense
    // runs; the output stores them with the frames' stride.
    RDom bin(0, bins, "bin");
    Func channels("channels");
    channels(m, f, b) = Halide::undef<float>();
    channels(bin, f, b) = spectrum(bin, f, b)[0];
    channels(bins + bin, f, b) = spectrum(bin, f, b)[1];
    Func out("out");
    out(f, m, b) = channels(m, f, b);
    out.output_buffer().dim(1).set_extent(2 * bins);

    // Per frame: every stage computed at the output's frame loop into fixed-size buffers, each
    // vectorized along its bins.
    const int vector = std::min<int>(lanes, in2);
    Var ko("ko"), ki("ki");
    out.reorder(m, f, b).vectorize(m, lanes, Halide::TailStrategy::GuardWithIf);
    channels.compute_at(out, f).bound(m, 0, 2 * bins);
    channels.update(0).vectorize(bin, lanes, Halide::TailStrategy::GuardWithIf);
    channels.update(1).vectorize(bin, lanes, Halide::TailStrategy::GuardWithIf);
    windowed.compute_at(out, f).bound(p, 0, static_cast<int>(n)).vectorize(p, lanes);
    a.compute_at(out, f).bound(k2, 0, in2).vectorize(k2, vector);
    a.update().reorder(k2, r2, i1).vectorize(k2, vector).unroll(r2);
    tw.compute_at(out, f).bound(k2, 0, in2).vectorize(k2, vector);
    spectrum.compute_at(out, f).bound(k, 0, static_cast<int>(k1_rows * n2));
    spectrum.split(k, ko, ki, in2).vectorize(ki, vector);
    spectrum.update().split(k, ko, ki, in2).reorder(ki, r1, ko).vectorize(ki, vector).unroll(r1);
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  const std::string context = block->context_;
  block->output_shape_ = [=](const RunTensors& tensors) {
    const std::vector<int64_t>& shape = tensors[0].shape();
    if (shape.size() != 3 || shape[1] != 1 || shape[2] < n) {
      raise_invalid_input(cat(context, ": input 'X' has shape ", shape_text(shape),
                              ", expected [batch, 1, samples] with at least ", n, " samples"));
    }
    return std::vector<int64_t>{shape[0], 2 * t.bins, (shape[2] - n) / t.hop + 1};
  };
  block->kind_ =
      cat("halide dft conv [N=", n, "=", n1, "x", n2, ",bins=", t.bins, ",hop=", t.hop, "]");
  block->nodes = {&conv};
  block->inputs = {x};
  block->outputs = {y};
  return block;
}

}  // namespace rnnc
