#include "lowering/recurrent_pipelines.h"

#include <Halide.h>

#include <algorithm>
#include <cstdio>
#include <functional>

#include "ir/error.h"
#include "lowering/activation_math.h"
#include "lowering/halide_cache.h"
#include "lowering/quantized_operands.h"

namespace rnnc {

using Halide::Expr;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::Var;

// ---- cell and schedule descriptions ------------------------------------------------------------

const char* activation_name(RecurrentActivation::Kind kind) {
  using Kind = RecurrentActivation::Kind;
  switch (kind) {
    case Kind::kRelu:
      return "Relu";
    case Kind::kTanh:
      return "Tanh";
    case Kind::kSigmoid:
      return "Sigmoid";
    case Kind::kAffine:
      return "Affine";
    case Kind::kLeakyRelu:
      return "LeakyRelu";
    case Kind::kThresholdedRelu:
      return "ThresholdedRelu";
    case Kind::kScaledTanh:
      return "ScaledTanh";
    case Kind::kHardSigmoid:
      return "HardSigmoid";
    case Kind::kElu:
      return "Elu";
    case Kind::kSoftsign:
      return "Softsign";
    case Kind::kSoftplus:
      return "Softplus";
  }
  return "?";
}

namespace {

const char* op_name(RecurrentOp op) {
  switch (op) {
    case RecurrentOp::kLstm:
      return "lstm";
    case RecurrentOp::kGru:
      return "gru";
    case RecurrentOp::kRnn:
      return "rnn";
  }
  return "?";
}

// Exact text of a float (hex), so keys of cells with different constants never collide.
std::string exact(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%a", static_cast<double>(value));
  return text;
}

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

int RecurrentCell::gate_index(int gate) const {
  for (size_t i = 0; i < gates.size(); ++i) {
    if (gates[i] == gate) return static_cast<int>(i);
  }
  return -1;
}

Fit RecurrentCell::gate_fit() const {
  return quant && !quant->activations.wide() ? Fit::kDegree3 : Fit::kDegree4;
}

std::string RecurrentCell::step_key() const {
  std::string key = cat(op_name(op), " hidden=", hidden_size, " input=", input_size, " gates=");
  for (int gate : gates) key += std::to_string(gate);
  key += " activations=";
  for (const RecurrentActivation& a : activations) {
    key += cat(activation_name(a.kind), "(", exact(a.alpha), ",", exact(a.beta), ")");
  }
  if (clip) key += " clip=" + exact(*clip);
  if (input_forget) key += " input_forget";
  if (peepholes) key += " peepholes";
  if (linear_before_reset) key += " linear_before_reset";
  if (quant) key += " quant(" + quant->key() + ")";
  return key;
}

std::string RecurrentQuant::key() const {
  return cat(activations.to_string(), weight_zero_points ? " weight_zero_points" : "",
             " W.x: ", input_widths.to_string(), " R.h: ", state_widths.to_string(), " lane ",
             lane(), count_overflow ? " count_overflow" : "");
}

RecurrentQuant recurrent_quant(const ActivationQuant& activations, int input_size, int hidden_size,
                               int w_bits, bool w_asymmetric, int r_bits, bool r_asymmetric,
                               int u8_lane) {
  RecurrentQuant quant;
  quant.activations = activations;
  quant.weight_zero_points = w_asymmetric || r_asymmetric;
  const bool wide = activations.wide() || w_bits > 8 || r_bits > 8;
  quant.input_widths = product_widths(activations, w_bits, w_asymmetric, input_size, wide, u8_lane);
  quant.state_widths =
      product_widths(activations, r_bits, r_asymmetric, hidden_size, wide, u8_lane);
  return quant;
}

int64_t packed_ko(const ProductWidths& widths) {
  const int64_t ko = (widths.terms + widths.lane - 1) / widths.lane;
  const int64_t chunk_ko = widths.chunk_terms / widths.lane;
  return (ko + chunk_ko - 1) / chunk_ko * chunk_ko;
}

// ---- activations --------------------------------------------------------------------------------

namespace {

// The formulas of docs/ops/recurrent.md (a = alpha, b = beta).
// The activations divide as the schedule says (RecurrentSchedule::gate_quotient): quantized steps
// never by the reciprocal estimate, because each of their steps quantizes h with a scale from its
// row's largest |h|, which passes any change in the last bits of an activation on to every value
// of the row.
// Steps that quantize h to 8 bits take the degree-3 tanh fit (RecurrentCell::gate_fit): its
// error (< 2.5e-6) is far below that quantization's step, and it is two multiply-adds shorter
// per activation, five of which an LSTM unit evaluates per step.
Expr activate(const RecurrentCell& cell, const RecurrentSchedule& schedule,
              const RecurrentActivation& activation, const Expr& x) {
  using Kind = RecurrentActivation::Kind;
  const float a = activation.alpha, b = activation.beta;
  const Quotient q = schedule.gate_quotient;
  const Fit fit = cell.gate_fit();
  // clang-format off
  switch (activation.kind) {
    case Kind::kRelu:            return max(x, 0.0f);
    case Kind::kTanh:            return tanh_f32(x, q, fit);
    case Kind::kSigmoid:         return sigmoid_f32(x, q, fit);
    case Kind::kAffine:          return a * x + b;
    case Kind::kLeakyRelu:       return select(x >= 0.0f, x, a * x);
    case Kind::kThresholdedRelu: return select(x >= a, x, 0.0f);
    case Kind::kScaledTanh:      return a * tanh_f32(b * x, q, fit);
    case Kind::kHardSigmoid:     return clamp(a * x + b, 0.0f, 1.0f);
    case Kind::kElu:             return select(x >= 0.0f, x, a * (exp_f32(x) - 1.0f));
    case Kind::kSoftsign:        return x / (1.0f + abs(x));
    // log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): no overflow for large x.
    case Kind::kSoftplus:        return max(x, 0.0f) + Halide::log(1.0f + exp_f32(-abs(x)));
  }
  // clang-format on
  return x;
}

Expr clipped(const RecurrentCell& cell, const Expr& x) {
  return cell.clip ? clamp(x, -*cell.clip, *cell.clip) : x;
}

// Pins a buffer's innermost dims to the constant extents and dense strides marshaling gives it,
// so the compiled loops index with constants; `free_stride_dim`'s stride is left to the caller
// (a step's tile dim, which the runtime walks backwards on alternate steps).
void pin_dense(const Halide::OutputImageParam& buffer, const std::vector<int>& extents,
               int free_stride_dim = -1) {
  Expr stride = 1;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (static_cast<int>(d) != free_stride_dim) buffer.dim(static_cast<int>(d)).set_stride(stride);
    if (extents[d] > 0) {
      buffer.dim(static_cast<int>(d)).set_bounds(0, extents[d]);
      stride = stride * extents[d];
    } else {
      buffer.dim(static_cast<int>(d)).set_min(0);
      stride = stride * buffer.dim(static_cast<int>(d)).extent();
    }
  }
}

// The operand types of a quantized cell's products (RecurrentQuant::wide_operands).
Halide::Type activation_storage(const RecurrentQuant& quant) {
  return quant.wide_operands() ? Halide::Int(16) : Halide::UInt(8);
}
Halide::Type weight_storage(const RecurrentQuant& quant) {
  return quant.wide_operands() ? Halide::Int(16) : Halide::Int(8);
}

// The exact integer sum over k of activation(k) * weight(kl, ko) (k = lane * ko + kl) for each
// point of `args`, in the widths quant/'s analysis chose (ir/quantization.h ProductWidths): one
// int32 reduction (`acc`), or, when the sum can outgrow int32, int32 dot products over chunks of
// chunk_terms products (`chunk`, computed per chunk) summed into an int64 `acc`.
//
// With `split` > 1 (an int32 sum whose ko extent it divides), the sum is `split` partial sums
// over interleaved ko (`part`, ko = split * k.y + s), added in `acc`: split times the independent
// accumulator chains for the same register tile.
//
// `start` (in the sum's type) is where the sum starts instead of 0 (the first part's start when
// split): the zero-point correction, so that a register tile's accumulators leave the loop
// corrected and its epilogue has no subtraction per accumulator. Same sum either way.
struct IntegerDot {
  Func acc, chunk, part;
  RDom k;       // (kl, ko within the chunk; within a part: ko / split)
  RDom chunks;  // int64_sum only
  bool int64_sum = false;
  int split = 1;
};

IntegerDot integer_dot(const std::string& name, const std::vector<Var>& args,
                       const ProductWidths& widths, const std::function<Expr(Expr)>& activation,
                       const std::function<Expr(Expr, Expr)>& weight, int split = 1,
                       Expr start = 0) {
  const int lane = widths.lane;
  const int chunk_ko = static_cast<int>(widths.chunk_terms / lane);
  IntegerDot dot;
  dot.int64_sum = widths.int64_sum;
  std::vector<Expr> at(args.begin(), args.end());
  if (!dot.int64_sum && split > 1 && chunk_ko % split == 0) {
    dot.split = split;
    dot.k = RDom(0, lane, 0, chunk_ko / split, name + "_k");
    Var s("s");
    std::vector<Expr> part_at = at;
    part_at.push_back(s);
    const Expr ko = split * dot.k.y + s;
    dot.part = Func(name + "_part");
    dot.part(part_at) = select(s == 0, start, 0);
    dot.part(part_at) += Halide::cast<int32_t>(activation(lane * ko + dot.k.x)) *
                         Halide::cast<int32_t>(weight(dot.k.x, ko));
    Expr sum = 0;
    for (int i = 0; i < split; ++i) {
      std::vector<Expr> part_i = at;
      part_i.push_back(i);
      sum = sum + dot.part(part_i);
    }
    dot.acc = Func(name + "_dot");
    dot.acc(at) = sum;
    return dot;
  }
  dot.k = RDom(0, lane, 0, chunk_ko, name + "_k");
  if (!dot.int64_sum) {
    dot.acc = Func(name + "_dot");
    dot.acc(at) = start;
    dot.acc(at) += Halide::cast<int32_t>(activation(lane * dot.k.y + dot.k.x)) *
                   Halide::cast<int32_t>(weight(dot.k.x, dot.k.y));
    return dot;
  }
  Var c("c");
  std::vector<Expr> chunk_at = at;
  chunk_at.push_back(c);
  const Expr ko = c * chunk_ko + dot.k.y;
  dot.chunk = Func(name + "_chunk");
  dot.chunk(chunk_at) = 0;
  dot.chunk(chunk_at) += Halide::cast<int32_t>(activation(lane * ko + dot.k.x)) *
                         Halide::cast<int32_t>(weight(dot.k.x, ko));
  dot.chunks = RDom(0, static_cast<int>(packed_ko(widths) / chunk_ko), name + "_chunks");
  std::vector<Expr> chunk_of = at;
  chunk_of.push_back(dot.chunks.x);
  dot.acc = Func(name + "_dot");
  dot.acc(at) = Halide::cast<int64_t>(start);
  dot.acc(at) += Halide::cast<int64_t>(dot.chunk(chunk_of));
  return dot;
}

// An integer term of the zero-point correction in the dot's type.
Expr in_sum_type(const IntegerDot& dot, Expr value) {
  return dot.int64_sum ? Halide::cast<int64_t>(value) : value;
}

// -zq colsum(w), in the sum's type: where a dot of sum (q - zq) w = dot - zq colsum(w) starts
// (integer_dot's `start`; docs/quant.md).
Expr zero_point_start(const ProductWidths& widths, const Expr& zero_point, const Expr& colsum) {
  if (!widths.int64_sum) return -(zero_point * colsum);
  return -(Halide::cast<int64_t>(zero_point) * Halide::cast<int64_t>(colsum));
}

// Schedules `dot` at `consumer`'s loop `at`: its accumulators over `inner` (the first vectorized
// by v, all unrolled: one register tile) with the reduction outside them and `outer` (extent 1
// there) outermost; the lane's k innermost, vectorized with inner[0] into one dot-product
// instruction per vector.
void schedule_dot(IntegerDot dot, Func consumer, const Var& at, const std::vector<Var>& inner,
                  const std::vector<Var>& outer, int v) {
  // The register tile: `inner` and `parts` (split dots: the part index), all unrolled.
  auto tile = [&](Halide::Stage stage, const std::vector<Var>& parts = {}) {
    stage.vectorize(inner[0], v);
    for (const Var& var : inner) stage.unroll(var);
    for (const Var& var : parts) stage.unroll(var);
  };
  auto dot_update = [&](Func f, const std::vector<Var>& parts, const std::vector<Var>& outermost) {
    std::vector<Halide::VarOrRVar> order = {dot.k.x};
    order.insert(order.end(), inner.begin(), inner.end());
    order.insert(order.end(), parts.begin(), parts.end());
    order.push_back(dot.k.y);
    order.insert(order.end(), outermost.begin(), outermost.end());
    Halide::Stage update = f.update();
    update.atomic().reorder(order).vectorize(dot.k.x);
    tile(update, parts);
  };
  if (dot.split > 1) {  // the parts' accumulators in registers, their sum inlined
    const std::vector<Var> parts = {dot.part.args().back()};
    dot.part.compute_at(consumer, at);
    tile(dot.part, parts);
    dot_update(dot.part, parts, outer);
    return;
  }
  dot.acc.compute_at(consumer, at);
  tile(dot.acc);
  if (!dot.int64_sum) {
    dot_update(dot.acc, {}, outer);
    return;
  }
  std::vector<Halide::VarOrRVar> order(inner.begin(), inner.end());
  order.push_back(dot.chunks.x);
  order.insert(order.end(), outer.begin(), outer.end());
  Halide::Stage update = dot.acc.update();
  update.reorder(order);
  tile(update);
  dot.chunk.compute_at(dot.acc, dot.chunks.x);
  tile(dot.chunk);
  std::vector<Var> chunk_outer = outer;
  chunk_outer.push_back(dot.chunk.args().back());
  dot_update(dot.chunk, {}, chunk_outer);
}

// Overflow mode: `dot` computed once at root (the overflow counts read it besides the kernel's
// output), vectorized over inner[0] but not register-tiled (extents are not constant there).
void schedule_dot_at_root(IntegerDot dot, const std::vector<Var>& inner, int v) {
  dot.acc.compute_root().vectorize(inner[0], v);
  Func reduced = dot.int64_sum ? dot.chunk : dot.acc;
  if (dot.int64_sum) {
    dot.acc.update().reorder(inner[0], dot.chunks.x).vectorize(inner[0], v);
    dot.chunk.compute_at(dot.acc, dot.chunks.x).vectorize(inner[0], v);
  }
  reduced.update()
      .atomic()
      .reorder(dot.k.x, inner[0], dot.k.y)
      .vectorize(dot.k.x)
      .vectorize(inner[0], v);
}

// ---- input projection --------------------------------------------------------------------------

// A projection with streamed weights takes runs of this many to gemm_rows - 1 rows in tiles of
// this many: each panel from memory once and from L1 for the other tiles.
constexpr int kStreamedShortRows = 6;

}  // namespace

int projection_panel(const RecurrentSchedule& schedule) {
  return schedule.vector_width * schedule.gemm_vectors;
}

std::string input_projection_key(const RecurrentCell& cell, const RecurrentSchedule& schedule) {
  return cat("recurrent input projection f32 n=", cell.gates.size() * schedule.padded_hidden,
             " k=", cell.input_size, " ", schedule.key(),
             cell.quant ? " quant(" + cell.quant->key() + ")" : "");
}

namespace {

// Tiles a projection's output stage: `columns` x `rows` register tiles (n split into no, ni and m
// into mo, mi; a last row tile shifted inward onto rows already computed), column panels or row
// tiles outermost as the schedule says. The outermost loop has independent iterations: a
// parallel loop when the schedule says so (parallel_projection), which runs on the executor's
// oneTBB arena (runtime/halide_tbb.h), one thread for a single-threaded model. Same arithmetic per
// element either way.
void tile_projection(Halide::Stage stage, const RecurrentSchedule& schedule, const Var& n,
                     const Var& m, const Var& no, const Var& ni, const Var& mo, const Var& mi,
                     int columns, int rows) {
  stage.split(n, no, ni, columns)
      .split(m, mo, mi, rows, Halide::TailStrategy::ShiftInwards)
      .reorder(ni, mi, schedule.gemm_columns_outer ? mo : no, schedule.gemm_columns_outer ? no : mo)
      .vectorize(ni, schedule.vector_width)
      .unroll(ni)
      .unroll(mi);
  if (schedule.parallel_projection) stage.parallel(schedule.gemm_columns_outer ? no : mo);
}

// A projection's row tiles by the number of rows (its output's dim 1): a multiple of
// gemm_rows_exact rows in tiles of that many; gemm_rows rows or more in tiles of gemm_rows, the
// last one shifted inward onto rows already computed, except a little more than gemm_rows with
// W in L2, in two smaller tiles (paired_row_tiles); with streamed weights 6 to gemm_rows - 1
// rows in tiles of 6; 2 to 5 rows (a streamed chunk of a few steps) in one tile of exactly that
// many, so W is read once and no padded rows are computed; a single row over `single_columns`
// columns.
void tile_projection_rows(Func xw, const RecurrentSchedule& schedule, const Var& n, const Var& m,
                          const Var& no, const Var& ni, const Var& mo, const Var& mi, int panel,
                          int single_columns) {
  const Expr rows = xw.output_buffer().dim(1).extent();
  if (schedule.gemm_rows_exact > 0) {
    tile_projection(xw.specialize(rows % schedule.gemm_rows_exact == 0), schedule, n, m, no, ni, mo,
                    mi, panel, schedule.gemm_rows_exact);
  }
  // With W in L2, a little more than gemm_rows rows in two smaller tiles (streamed W is read
  // once per column panel whatever the row tiles, which 6-row tiles then use fully).
  if (!schedule.stream_weights) {
    for (const PairedRowTile& paired : paired_row_tiles(schedule.gemm_rows)) {
      tile_projection(xw.specialize(rows >= paired.min_rows && rows <= paired.max_rows), schedule,
                      n, m, no, ni, mo, mi, panel, paired.tile);
    }
  }
  int previous = 0;
  for (int tile : {schedule.gemm_rows, kStreamedShortRows, 5, 4, 3, 2}) {
    if (previous > 0 && tile >= previous) continue;
    tile_projection(xw.specialize(rows >= tile), schedule, n, m, no, ni, mo, mi, panel, tile);
    previous = tile;
  }
  tile_projection(xw, schedule, n, m, no, ni, mo, mi, single_columns, 1);
}

// The column panels of a single-row tile: the largest count up to `wanted` that divides `panels`.
int single_row_panels(int panels, int wanted) {
  while (panels % wanted != 0) --wanted;
  return wanted;
}

// XW = bias + dequantized (quantized X rows) . (integer Wt), the dot products as u8 x s8 -> s32
// reductions four k at a time (s16 x s16 -> s32, two at a time, for wide operands), in the float
// projection's register tiles.
void compile_quantized_projection(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                                  const std::string& object_path, const std::string& function_name,
                                  const KernelTarget& target) {
  const RecurrentQuant& quant = *cell.quant;
  const int v = schedule.vector_width;
  const int n_extent = static_cast<int>(cell.gates.size()) * schedule.padded_hidden;
  const int lane = quant.lane();
  const int k_extent = cell.input_size;
  const int ko_extent = static_cast<int>(packed_ko(quant.input_widths));
  ImageParam x(Halide::Float(32), 2, "x");              // (k, m)
  const int panel = projection_panel(schedule);
  ImageParam wq(weight_storage(quant), 4, "wq");        // (kl, ni, ko, no): n = no * panel + ni
  ImageParam w_scale(Halide::Float(32), 1, "w_scale");  // (n)
  ImageParam w_colsum(Halide::Int(32), 1, "w_colsum");  // (n)
  ImageParam w_zero(Halide::Int(32), 1, "w_zero");      // (n)
  ImageParam bias(Halide::Float(32), 1, "bias");        // (n)
  Var n("n"), m("m");

  QuantizedRows xq = quantize_rows(x, k_extent, ko_extent * lane, quant.activations,
                                   /*state=*/false, activation_storage(quant), v, "x");
  IntegerDot dot = integer_dot(
      "x", {n, m}, quant.input_widths, [&](Expr kk) { return xq.q(kk, m); },
      [&](Expr kl, Expr ko) { return wq(kl, n % panel, ko, n / panel); }, 1,
      zero_point_start(quant.input_widths, xq.zero_point(m), w_colsum(n)));
  Func xw("xw");
  Expr corrected = dot.acc(n, m);
  if (quant.weight_zero_points) {
    corrected -= in_sum_type(dot, w_zero(n)) *
                 (in_sum_type(dot, xq.sum(m)) - k_extent * in_sum_type(dot, xq.zero_point(m)));
    xq.sum.compute_root();
  }
  Func sums("x_sums");  // the exact sum of each output: inline, unless overflow mode counts it
  sums(n, m) = corrected;
  // Static coefficients: X's scale is a constant, so each column's dequantizing factor is one
  // product (`factor`, per column panel), and each output one multiply-add.
  std::optional<Func> factor;
  if (!quant.activations.dynamic) {
    factor = Func("x_factor");
    (*factor)(n) = xq.scale(0) * w_scale(n);
    xw(n, m) = bias(n) + Halide::cast<float>(sums(n, m)) * (*factor)(n);
  } else {
    xw(n, m) = bias(n) + Halide::cast<float>(sums(n, m)) * (xq.scale(m) * w_scale(n));
  }

  pin_dense(x, {k_extent, 0});
  pin_dense(wq, {lane, panel, ko_extent, n_extent / panel});
  for (const ImageParam& vector : {w_scale, w_colsum, w_zero, bias}) pin_dense(vector, {n_extent});
  pin_dense(xw.output_buffer(), {n_extent, 0});

  // Register tiles of gemm_vectors x rows accumulators (tile_projection_rows); a single row (a
  // streamed chunk of one step) is one row tile of up to 4 column panels (8 independent
  // accumulators on AVX-512).
  Var no("no"), ni("ni"), mo("mo"), mi("mi");
  tile_projection_rows(xw, schedule, n, m, no, ni, mo, mi, panel,
                       single_row_panels(n_extent / panel, 4) * panel);
  if (factor) factor->compute_at(xw, no).vectorize(n, v);
  // X's rows quantized per row tile when the row tiles are the outer loop: each row once, into a
  // buffer of constant size on the stack. At root (a heap buffer per call, the size of the rows)
  // when column panels are outermost and visit every row tile once per panel, and when something
  // else reads them at root (the row sums of asymmetric weights, overflow mode). (At root for
  // every shape, the int8 4-layer h128 stack made 3 heap allocations per layer per run.)
  const int q_vector = storage_vector(activation_storage(quant), v);
  if (schedule.gemm_columns_outer || quant.weight_zero_points || quant.count_overflow) {
    xq.q.compute_root().vectorize(xq.q.args()[0], q_vector);
  } else {
    xq.q.compute_at(xw, mo).vectorize(xq.q.args()[0], q_vector);
    if (quant.activations.dynamic) xq.params.compute_at(xw, mo);
  }

  std::vector<Halide::Argument> arguments = {x, wq, w_scale, w_colsum};
  if (quant.weight_zero_points) arguments.push_back(w_zero);
  arguments.push_back(bias);
  if (!quant.count_overflow) {
    schedule_dot(dot, xw, schedule.gemm_columns_outer ? mo : no, {n, m}, {}, v);
    if (schedule.stream_weights) {
      // At every k step, the line of the next panel this step will read there: ko_extent steps
      // on, past this panel's last, is the next panel's first (wq is dense, panels outermost).
      // Prefetches do not fault, so the last panel's reach past W needs no guard. compile_object
      // makes them prefetcht0 (Halide 14 emits prefetchnta).
      Func reduced = dot.int64_sum ? dot.chunk : dot.acc;
      reduced.update().prefetch(wq, dot.k.y, dot.k.y, ko_extent,
                                Halide::PrefetchBoundStrategy::NonFaulting);
    }
    compile_object(xw, object_path, arguments, function_name, target);
    return;
  }
  // Overflow mode: X's rows and every output's sum.
  schedule_dot_at_root(dot, {n, m}, v);
  const Expr real_rows = x.dim(1).extent();
  OverflowCounter counts;
  counts.add_operand(xq, k_extent, {real_rows}, quant.activations,
                     [](const std::vector<Expr>&) { return Halide::Internal::const_true(); });
  RDom outputs(0, n_extent, 0, real_rows, "overflow_sums");
  counts.add_sums(outputs, sums(outputs.x, outputs.y), Halide::Internal::const_true(),
                  quant.activations.accumulation_bits);
  Func overflow = counts.func();
  overflow.output_buffer().dim(0).set_bounds(0, 4);
  compile_object(Halide::Pipeline({xw, overflow}), object_path, arguments, function_name, target);
}

}  // namespace

void compile_input_projection(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                              const std::string& object_path, const std::string& function_name,
                              const KernelTarget& target) {
  if (cell.quant) {
    compile_quantized_projection(cell, schedule, object_path, function_name, target);
    return;
  }
  const int v = schedule.vector_width;
  const int n_extent = static_cast<int>(cell.gates.size()) * schedule.padded_hidden;
  const int k_extent = cell.input_size;
  ImageParam x(Halide::Float(32), 2, "x");        // (k, m)
  const int panel = projection_panel(schedule);
  ImageParam wt(Halide::Float(32), 3, "wt");      // (ni, k, no)
  ImageParam bias(Halide::Float(32), 1, "bias");  // (n)
  Var n("n"), m("m");
  RDom k(0, k_extent, "k");

  Func acc("acc"), xw("xw");
  acc(n, m) = bias(n);
  acc(n, m) += wt(n % panel, k, n / panel) * x(k, m);
  xw(n, m) = acc(n, m);

  pin_dense(x, {k_extent, 0});
  pin_dense(wt, {panel, k_extent, n_extent / panel});
  pin_dense(bias, {n_extent});
  pin_dense(xw.output_buffer(), {n_extent, 0});

  // Register tiles: gemm_vectors vectors along n times the rows tile_projection_rows chooses,
  // accumulated over all of k in the same order for every tile height, so a row's XW does not
  // depend on its tile. A single row: streamed panels are one vector wide, so up to 4 of them (4
  // independent accumulators, as an unstreamed panel has).
  Var no("no"), ni("ni"), mo("mo"), mi("mi");
  tile_projection_rows(
      xw, schedule, n, m, no, ni, mo, mi, panel,
      single_row_panels(n_extent / panel, schedule.stream_weights ? 4 : 1) * panel);
  acc.compute_at(xw, schedule.gemm_columns_outer ? mo : no).vectorize(n, v).unroll(n).unroll(m);
  acc.update().reorder(n, m, k).vectorize(n, v).unroll(n).unroll(m);
  if (schedule.stream_weights) {
    // As the integer projection: at every k, the next panel's line at that k (k_extent further
    // in wt, panels outermost), prefetched into L1 (compile_object).
    acc.update().prefetch(wt, k, k, k_extent, Halide::PrefetchBoundStrategy::NonFaulting);
  }

  compile_object(xw, object_path, {x, wt, bias}, function_name, target);
}

// ---- recurrent step ----------------------------------------------------------------------------

std::string recurrent_step_key(const RecurrentCell& cell, const RecurrentSchedule& schedule) {
  return cat("recurrent step f32 ", cell.step_key(), " ", schedule.key());
}

namespace {

// The buffers a step reads, with their layouts pinned (T = hidden tile, NT = tiles).
struct StepInputs {
  ImageParam r{Halide::Float(32), 4, "r"};                  // (ji, g, k, jo)
  ImageParam rq;                                            // (kl, ji, g, ko, jo), quantized
  ImageParam r_scale{Halide::Float(32), 3, "r_scale"};      // (ji, g, jo), quantized
  ImageParam r_colsum{Halide::Int(32), 3, "r_colsum"};      // (ji, g, jo), quantized
  ImageParam r_zero{Halide::Int(32), 3, "r_zero"};          // (ji, g, jo), asymmetric weights
  ImageParam xw{Halide::Float(32), 5, "xw"};                // (ji, g, jo, b, t)
  ImageParam step_time{Halide::Int(32), 1, "step_time"};    // (b)
  ImageParam h{Halide::Float(32), 2, "h"};                  // (k, b)
  ImageParam h_tiles{Halide::Float(32), 3, "h_tiles"};      // (ji, jo, b): h again, tiled
  ImageParam c{Halide::Float(32), 3, "c"};                  // (ji, jo, b), LSTM
  ImageParam peepholes{Halide::Float(32), 3, "peepholes"};  // (ji, jo, i/o/f), LSTM with P
  ImageParam rbh{Halide::Float(32), 2, "rbh"};              // (ji, jo), GRU linear_before_reset

  StepInputs(const RecurrentCell& cell, const RecurrentSchedule& schedule) {
    const int tile = schedule.hidden_tile, tiles = schedule.padded_hidden / tile;
    const int gates = static_cast<int>(cell.gates.size()), hidden = cell.hidden_size;
    // The tile dim's stride is free wherever a tile's slice is read: with alternate_tiles the
    // runtime passes views that walk the tiles backwards (a negative stride) on odd steps.
    pin_dense(r, {tile, gates, hidden, tiles}, 3);
    if (cell.quant) {
      const int lane = cell.quant->lane();
      rq = ImageParam(weight_storage(*cell.quant), 5, "rq");
      pin_dense(rq, {lane, tile, gates, round_up(hidden, lane) / lane, tiles}, 4);
    }
    pin_dense(r_scale, {tile, gates, tiles}, 2);
    pin_dense(r_colsum, {tile, gates, tiles}, 2);
    pin_dense(r_zero, {tile, gates, tiles}, 2);
    // XW rows: the (b, t) strides depend on the layout; the gate/hidden part is dense.
    xw.dim(0).set_bounds(0, tile).set_stride(1);
    xw.dim(1).set_bounds(0, gates).set_stride(tile);
    xw.dim(2).set_bounds(0, tiles);
    // The step of one batch entry knows its batch extent: its scratch (the quantized operand)
    // then has a constant size and lives on the stack, not in a heap allocation per step.
    const int entries = schedule.single_entry ? 1 : 0;
    if (schedule.single_entry) {
      step_time.dim(0).set_bounds(0, 1);
      xw.dim(3).set_bounds(0, 1);
    } else {
      step_time.dim(0).set_min(0);
    }
    pin_dense(h, {schedule.padded_hidden, entries});
    pin_dense(h_tiles, {tile, tiles, entries}, 1);
    pin_dense(c, {tile, tiles, entries}, 1);
    pin_dense(peepholes, {tile, tiles, 3}, 1);
    pin_dense(rbh, {tile, tiles}, 1);
  }

  // The weight arguments, in argv order.
  std::vector<Halide::Argument> weights(const RecurrentCell& cell) const {
    if (!cell.quant) return {r};
    std::vector<Halide::Argument> out = {rq, r_scale, r_colsum};
    if (cell.quant->weight_zero_points) out.push_back(r_zero);
    return out;
  }
};

// pre(ji, g, jo, b) = init + R[gate0 + g] . operand(:, b) for the `count` gates from gate0: in
// float, an update of pre over k; quantized, pre reads the integer dot products `dot`.
struct Product {
  Func pre;
  RDom k;  // float
  std::optional<IntegerDot> dot;
  // Quantized: the operand's rows and the exact sums (ji, g, jo, b) for overflow counts.
  std::optional<QuantizedRows> rows;
  Func sums;
  std::optional<Func> factor;  // static coefficients: (ji, g, jo), see recurrent_product
  int count = 0;
  bool at_root = false;  // overflow mode: the dot product at root (schedule_dot_at_root)
};

Product recurrent_product(const RecurrentCell& cell, const StepInputs& in,
                          const RecurrentSchedule& schedule, const std::string& name, Expr init,
                          Func operand, int gate0, int count) {
  Var ji("ji"), g("g"), jo("jo"), b("b");
  const int hidden = cell.hidden_size;
  Product product;
  product.pre = Func(name);
  if (!cell.quant) {
    product.k = RDom(0, hidden, "k");
    product.pre(ji, g, jo, b) = init;
    product.pre(ji, g, jo, b) += in.r(ji, gate0 + g, product.k, jo) * operand(product.k, b);
    product.pre.bound(g, 0, count);
    return product;
  }
  const RecurrentQuant& quant = *cell.quant;
  const Halide::Type storage = activation_storage(quant);
  const int padded_k = static_cast<int>(packed_ko(quant.state_widths)) * quant.lane();
  QuantizedRows rows = quantize_rows(operand, hidden, padded_k, quant.activations, /*state=*/true,
                                     storage, schedule.vector_width, name + "_operand");
  // sum (q - zq)(w - zw) = dot - zq colsum(w) - zw (sum q - K zq)   (docs/quant.md)
  IntegerDot dot = integer_dot(
      name, {ji, g, jo, b}, quant.state_widths, [&](Expr k) { return rows.q(k, b); },
      [&](Expr kl, Expr ko) { return in.rq(kl, ji, gate0 + g, ko, jo); },
      quant.count_overflow ? 1 : schedule.step_k_split,
      zero_point_start(quant.state_widths, rows.zero_point(b), in.r_colsum(ji, gate0 + g, jo)));
  Expr corrected = dot.acc(ji, g, jo, b);
  if (quant.weight_zero_points) {
    corrected -= in_sum_type(dot, in.r_zero(ji, gate0 + g, jo)) *
                 (in_sum_type(dot, rows.sum(b)) - hidden * in_sum_type(dot, rows.zero_point(b)));
    rows.sum.compute_root();
  }
  product.sums = Func(name + "_sums");
  product.sums(ji, g, jo, b) = corrected;
  // Each sum's dequantizing factor: the operand row's scale times the weight row's. Static
  // coefficients give every row the same scale, so the factors are one product per weight row
  // (`factor`, computed per hidden tile before its batch entries) and each entry's gate is one
  // multiply-add; dynamic ones multiply per entry.
  Expr factor = rows.scale(b) * in.r_scale(ji, gate0 + g, jo);
  if (!quant.activations.dynamic) {
    product.factor = Func(name + "_factor");
    (*product.factor)(ji, g, jo) = rows.scale(0) * in.r_scale(ji, gate0 + g, jo);
    factor = (*product.factor)(ji, g, jo);
  }
  product.pre(ji, g, jo, b) = init + Halide::cast<float>(product.sums(ji, g, jo, b)) * factor;
  rows.q.compute_root().vectorize(rows.q.args()[0], storage_vector(storage, schedule.vector_width));
  (dot.split > 1 ? dot.part : dot.acc).bound(g, 0, count);
  product.dot = dot;
  product.rows = rows;
  product.count = count;
  product.at_root = quant.count_overflow;
  return product;
}

// Computes a product's accumulators at `consumer`'s loop `at`, with the k loop outside the
// tile's G * T / V * (batch entries) vector accumulators held in registers: update loops,
// innermost first, ji, g, b, k, jo (quantized: schedule_dot, the lane's k innermost). Static
// dequantizing factors are computed at the hidden-tile loop `tile`, once for its batch entries.
void schedule_product(Product product, Func consumer, const Var& at, const Var& tile, int v) {
  if (product.factor) {
    const std::vector<Var> args = product.factor->args();  // (ji, g, jo)
    product.factor->compute_at(consumer, tile)
        .bound(args[1], 0, product.count)
        .vectorize(args[0], v);
  }
  if (product.dot) {
    const std::vector<Var> args = product.dot->acc.args();  // (ji, g, jo, b)
    if (product.at_root) {
      schedule_dot_at_root(*product.dot, {args[0], args[1], args[3], args[2]}, v);
    } else {
      schedule_dot(*product.dot, consumer, at, {args[0], args[1], args[3]}, {args[2]}, v);
    }
    return;
  }
  const std::vector<Var> args = product.pre.args();  // (ji, g, jo, b)
  product.pre.compute_at(consumer, at).vectorize(args[0], v);
  Halide::Stage update = product.pre.update();
  update.reorder(args[0], args[1], args[3], product.k.x, args[2]).vectorize(args[0], v);
  update.unroll(args[0]).unroll(args[1]).unroll(args[3]);
}

// Schedules a step over its output (ji, jo, b): for each hidden tile jo and, inside it, each
// tile of batch_tile entries (a batch that is not a multiple of batch_tile: from
// shifted_tiles_from entries the last tile shifted inward, below it tiles of batch_pad), the
// tile's accumulators (T units x the gates x the entries) are computed there
// (schedule_product); the state update then runs vectorized over the tile, reading them. Batch
// tiles innermost: a hidden tile's slice of R (32 KiB for hidden 128) is read from L2 once and
// then from L1 for the other batch tiles.
void schedule_tile(Func output, const Product& product, const RecurrentSchedule& schedule) {
  const std::vector<Var> out = output.args();  // (ji, jo, b)
  Var bo("bo"), bi("bi");
  auto tile_entries = [&](Halide::Stage stage, int entries,
                          Halide::TailStrategy tail = Halide::TailStrategy::Auto) {
    stage.split(out[2], bo, bi, entries, tail)
        .reorder(out[0], bi, bo, out[1])
        .vectorize(out[0], schedule.vector_width);
    // Tiles are independent (each its own accumulators and state slice): a parallel loop on the
    // executor's oneTBB arena (runtime/halide_tbb.h), serial in a 1-thread model.
    if (schedule.parallel_tiles) stage.parallel(out[1]);
  };
  if (schedule.batch_pad < schedule.batch_tile) {
    const Expr entries = output.output_buffers()[0].dim(2).extent();
    tile_entries(output.specialize(entries % schedule.batch_tile == 0), schedule.batch_tile);
    if (schedule.shifted_tiles_from > 0) {
      // The state is written to buffers the step does not read (the runtime alternates them), so
      // an entry computed twice gets the same values both times.
      tile_entries(output.specialize(entries >= schedule.shifted_tiles_from), schedule.batch_tile,
                   Halide::TailStrategy::ShiftInwards);
    }
    tile_entries(output, schedule.batch_pad);
  } else {
    tile_entries(output, schedule.batch_tile);
  }
  schedule_product(product, output, bo, out[1], schedule.vector_width);
}

// Pins a step output's layout: (ji, jo, b) over the padded (Hp, batch) state.
void pin_state_output(const Halide::OutputImageParam& out, const RecurrentSchedule& schedule,
                      bool first) {
  const int tile = schedule.hidden_tile, tiles = schedule.padded_hidden / tile;
  out.dim(0).set_stride(1);
  out.dim(2).set_stride(schedule.padded_hidden);  // dim 1 (tiles): see StepInputs
  if (first) {  // a Tuple's later outputs share the first one's bounds
    out.dim(0).set_bounds(0, tile);
    out.dim(1).set_bounds(0, tiles);
    // The batch is padded to batch_pad: no tail.
    out.dim(2).set_bounds(0, schedule.single_entry
                                 ? 1
                                 : out.dim(2).extent() / schedule.batch_pad * schedule.batch_pad);
  }
}

}  // namespace

void compile_recurrent_step(const RecurrentCell& cell, const RecurrentSchedule& schedule,
                            const std::string& object_path, const std::string& function_name,
                            const KernelTarget& target) {
  const int tile = schedule.hidden_tile;
  const int gates = static_cast<int>(cell.gates.size());
  StepInputs in(cell, schedule);
  Var ji("ji"), g("g"), jo("jo"), b("b"), k_var("k");
  // The XW row entry b reads; inactive entries (negative time; the batch tile's padding entries
  // past XW's batch) read a valid row and keep their state. XW's time rows start at its min: the
  // runtime passes the rows of the range of steps it projected last.
  Expr t = clamp(in.step_time(b), in.xw.dim(4).min(), in.xw.dim(4).max());
  Expr xw_b = min(b, in.xw.dim(3).extent() - 1);
  Expr active = in.step_time(b) >= 0;
  auto input = [&](int gate) { return in.xw(ji, cell.gate_index(gate), jo, xw_b, t); };
  const Expr h_prev = in.h_tiles(ji, jo, b);
  Func h("h_operand");
  h(k_var, b) = in.h(k_var, b);

  std::vector<Halide::Argument> arguments = in.weights(cell);
  for (const Halide::Argument& a :
       std::vector<Halide::Argument>{in.xw, in.step_time, in.h, in.h_tiles}) {
    arguments.push_back(a);
  }
  Func state("state");
  std::vector<Product> products;  // for overflow counts

  if (cell.op == RecurrentOp::kLstm) {
    const RecurrentActivation &f = cell.activations[0], &gact = cell.activations[1],
                              &hact = cell.activations[2];
    // gates(ji, g, jo, b) = XW + R . h for one tile's hidden units, every computed gate.
    Product pre =
        recurrent_product(cell, in, schedule, "gates", in.xw(ji, g, jo, xw_b, t), h, 0, gates);
    products.push_back(pre);
    auto gate = [&](int onnx_gate) { return pre.pre(ji, cell.gate_index(onnx_gate), jo, b); };
    Expr c_prev = in.c(ji, jo, b);
    Expr peep_i = 0.0f, peep_o = 0.0f, peep_f = 0.0f;
    if (cell.peepholes) {
      peep_i = in.peepholes(ji, jo, 0);
      peep_o = in.peepholes(ji, jo, 1);
      peep_f = in.peepholes(ji, jo, 2);
    }
    Expr it = activate(cell, schedule, f, clipped(cell, gate(kLstmI) + peep_i * c_prev));
    Expr ft = cell.input_forget
                  ? 1.0f - it
                  : activate(cell, schedule, f, clipped(cell, gate(kLstmF) + peep_f * c_prev));
    Expr ct = activate(cell, schedule, gact, clipped(cell, gate(kLstmC)));
    Expr c_next = ft * c_prev + it * ct;
    Expr ot = activate(cell, schedule, f, clipped(cell, gate(kLstmO) + peep_o * c_next));
    Expr h_next = ot * activate(cell, schedule, hact, c_next);
    state(ji, jo, b) =
        Halide::Tuple(select(active, h_next, h_prev), select(active, c_next, c_prev));
    pin_state_output(state.output_buffers()[0], schedule, true);
    pin_state_output(state.output_buffers()[1], schedule, false);
    schedule_tile(state, pre, schedule);
    arguments.push_back(in.c);
    if (cell.peepholes) arguments.push_back(in.peepholes);
  } else if (cell.op == RecurrentOp::kGru && cell.linear_before_reset) {
    const RecurrentActivation &f = cell.activations[0], &gact = cell.activations[1];
    // z and r: XW + R . h; h gate: R . h + Rbh alone (rt multiplies it before XW is added).
    const int h_gate = cell.gate_index(kGruH);
    Product pre = recurrent_product(cell, in, schedule, "gates",
                                    select(g == h_gate, in.rbh(ji, jo), in.xw(ji, g, jo, xw_b, t)),
                                    h, 0, gates);
    products.push_back(pre);
    Expr zt =
        activate(cell, schedule, f, clipped(cell, pre.pre(ji, cell.gate_index(kGruZ), jo, b)));
    Expr rt =
        activate(cell, schedule, f, clipped(cell, pre.pre(ji, cell.gate_index(kGruR), jo, b)));
    Expr ht = activate(cell, schedule, gact,
                       clipped(cell, input(kGruH) + rt * pre.pre(ji, h_gate, jo, b)));
    state(ji, jo, b) = select(active, (1.0f - zt) * ht + zt * h_prev, h_prev);
    pin_state_output(state.output_buffer(), schedule, true);
    schedule_tile(state, pre, schedule);
    arguments.push_back(in.rbh);
  } else if (cell.op == RecurrentOp::kGru) {
    const RecurrentActivation &f = cell.activations[0], &gact = cell.activations[1];
    // Two phases: z and r for every hidden unit first (the h gate's product needs all of
    // rt (.) h), then the h gate's R . (rt (.) h) fused with the update.
    const int z_gate = cell.gate_index(kGruZ), r_gate = cell.gate_index(kGruR);
    const int h_gate = cell.gate_index(kGruH);
    RNNC_CHECK(z_gate == 0 && r_gate == 1, "GRU gate buffer order is z, r, h");
    Product zr_pre =
        recurrent_product(cell, in, schedule, "zr_gates", in.xw(ji, g, jo, xw_b, t), h, 0, 2);
    Func zr("zr"), reset_h("reset_h");
    zr(ji, g, jo, b) = activate(cell, schedule, f, clipped(cell, zr_pre.pre(ji, g, jo, b)));
    // rt (.) Ht-1, back in the linear k order R . h reads.
    reset_h(k_var, b) = zr(k_var % tile, r_gate, k_var / tile, b) * in.h(k_var, b);
    Product h_pre =
        recurrent_product(cell, in, schedule, "h_gate", input(kGruH), reset_h, h_gate, 1);
    products = {zr_pre, h_pre};
    Expr zt = zr(ji, z_gate, jo, b);
    Expr ht = activate(cell, schedule, gact, clipped(cell, h_pre.pre(ji, 0, jo, b)));
    state(ji, jo, b) = select(active, (1.0f - zt) * ht + zt * h_prev, h_prev);
    pin_state_output(state.output_buffer(), schedule, true);

    // zr tiled like a step over g in {z, r}; reset_h once per step; the h gate like a step.
    zr.compute_root()
        .bound(g, 0, 2)
        .reorder(ji, g, jo, b)
        .vectorize(ji, schedule.vector_width)
        .unroll(g);
    if (schedule.parallel_tiles) zr.parallel(jo);
    schedule_product(zr_pre, zr, jo, jo, schedule.vector_width);
    Var ko("ko"), ki("ki");
    reset_h.compute_root()
        .bound(k_var, 0, schedule.padded_hidden)
        .split(k_var, ko, ki, tile)
        .vectorize(ki, schedule.vector_width);
    schedule_tile(state, h_pre, schedule);
  } else {
    const RecurrentActivation& f = cell.activations[0];
    Product pre = recurrent_product(cell, in, schedule, "gate", input(0), h, 0, 1);
    products.push_back(pre);
    state(ji, jo, b) =
        select(active, activate(cell, schedule, f, clipped(cell, pre.pre(ji, 0, jo, b))), h_prev);
    pin_state_output(state.output_buffer(), schedule, true);
    schedule_tile(state, pre, schedule);
  }
  if (!cell.quant || !cell.quant->count_overflow) {
    compile_object(state, object_path, arguments, function_name, target);
    return;
  }
  // Overflow mode: the active entries of XW's real batch (not the batch tile's padding).
  const Expr batch = in.xw.dim(3).extent();
  auto entry_active = [&](Expr entry) { return in.step_time(entry) >= 0; };
  OverflowCounter counts;
  for (const Product& product : products) {
    counts.add_operand(*product.rows, cell.hidden_size, {batch}, cell.quant->activations,
                       [&](const std::vector<Expr>& row) { return entry_active(row[0]); });
    RDom sums(0, tile, 0, product.count, 0, schedule.padded_hidden / tile, 0, batch,
              "overflow_sums");
    counts.add_sums(sums, product.sums(sums.x, sums.y, sums.z, sums.w), entry_active(sums.w),
                    cell.quant->activations.accumulation_bits);
  }
  Func overflow = counts.func();
  overflow.output_buffer().dim(0).set_bounds(0, 4);
  compile_object(Halide::Pipeline({state, overflow}), object_path, arguments, function_name,
                 target);
}

}  // namespace rnnc
