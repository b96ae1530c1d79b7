#include "lowering/quantized_operands.h"

#include <cmath>

#include "ir/error.h"

namespace rnnc {

int u8_products_per_lane(const KernelTarget& target) {
  return target.halide.has_feature(Halide::Target::AVX512_SapphireRapids) ? 4 : 2;
}

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::Var;

namespace {

int round_up(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

std::vector<Expr> prepend(Expr first, const std::vector<Var>& rest) {
  std::vector<Expr> all = {std::move(first)};
  all.insert(all.end(), rest.begin(), rest.end());
  return all;
}

// round(x) as an int32 for |x| <= 2^22, without a rounding instruction (Halide 14 splits AVX-512
// rounds into 256-bit halves, and LLVM may gather scalar rounds into packed ones): 1.5 * 2^23
// added. Floats in [2^23, 2^24) are spaced 1 apart, so the sum is x rounded half to even, as
// round rounds, and the sum's bits minus the bias's bits are round(x) as an integer. strict_float
// keeps x's own arithmetic and the sum as written (no multiply-add into the sum, which would
// round a product only once).
Expr rounded_to_int(const Expr& x) {
  constexpr float kRoundingBias = 12582912.0f;  // 1.5 * 2^23, bits 0x4B400000
  return Halide::reinterpret(Halide::Int(32), Halide::strict_float(x + kRoundingBias)) - 0x4B400000;
}

}  // namespace

// ---- activation rows (ir/quantization.h's arithmetic) ------------------------------------------

int storage_vector(Halide::Type storage, int vector_width) {
  return vector_width * 32 / storage.bits();
}

QuantizedRows quantize_rows(Func src, int n, int padded_n, const ActivationQuant& quant, bool state,
                            Halide::Type storage, int vector_width, const std::string& name,
                            const std::vector<Expr>& row_extents) {
  Var k("k"), lane("lane");
  std::vector<Var> row;
  for (int d = 1; d < src.dimensions(); ++d) row.emplace_back(cat("row_", d));
  QuantizedRows out{Func(name + "_q"), Func(name + "_scale"), Func(name + "_zero_point"),
                    Func(name + "_sum"), Func(name + "_params"), Func(name + "_raw")};
  const float qmin = static_cast<float>(quant.qmin()), qmax = static_cast<float>(quant.qmax());
  if (quant.dynamic) {
    // [min(0, min x), max(0, max x)]: lanes of a vector first (out-of-row lanes contribute 0,
    // which the range includes anyway), then across the lanes.
    const int v = vector_width;
    RDom vectors(0, (n + v - 1) / v, "vectors");
    Expr kk = vectors * v + lane;
    Expr value = select(kk < n, src(prepend(min(kk, n - 1), row)), 0.0f);
    Func lanes(name + "_lanes"), lo_of(name + "_lo"), hi_of(name + "_hi");
    const std::vector<Expr> at_lane = prepend(lane, row);
    lanes(at_lane) = Halide::Tuple(0.0f, 0.0f);
    lanes(at_lane) = Halide::Tuple(min(lanes(at_lane)[0], value), max(lanes(at_lane)[1], value));
    // Across the lanes as vector reductions (a log-depth shuffle tree; a serial loop over the
    // lanes is a chain of v dependent scalar ops at the head of every recurrent step).
    RDom across(0, v, "across");
    const std::vector<Expr> across_at = prepend(across, row);
    lo_of(row) = 0.0f;
    lo_of(row) = min(lo_of(row), lanes(across_at)[0]);
    hi_of(row) = 0.0f;
    hi_of(row) = max(hi_of(row), lanes(across_at)[1]);
    Expr lo = lo_of(row), hi = hi_of(row);
    const bool whole_operand = quant.per_tensor && !row.empty();
    if (whole_operand) {
      // The whole operand's range: the rows' ranges reduced over every row.
      RNNC_CHECK(row_extents.size() == row.size(), name, ": per-tensor coefficients need the ",
                 row.size(), " row extents, not ", row_extents.size());
      Halide::Region rows;
      for (const Expr& extent : row_extents) rows.emplace_back(0, extent);
      RDom all_rows(rows, name + "_rows");
      std::vector<Expr> at;
      for (int d = 0; d < all_rows.dimensions(); ++d) at.push_back(all_rows[d]);
      Func whole(name + "_whole");
      whole() = Halide::Tuple(0.0f, 0.0f);
      whole() = Halide::Tuple(min(whole()[0], lo_of(at)), max(whole()[1], hi_of(at)));
      whole.compute_root();
      lo = whole()[0];
      hi = whole()[1];
    }
    // strict_float: a divide, as the reference's; Halide's simplifier makes a float divide by a
    // constant a multiply by its reciprocal, which can round the last bit differently.
    Expr raw_scale, zero_point;
    if (quant.symmetric) {
      const int half = (1 << (quant.bits - 1)) - 1;
      raw_scale = Halide::strict_float(max(-lo, hi) / static_cast<float>(half));
      zero_point = quant.wide() ? 0 : half + 1;
    } else {
      raw_scale = Halide::strict_float((hi - lo) / qmax);
      zero_point = select(raw_scale > 0.0f, rounded_to_int(clamp(-lo / raw_scale, 0.0f, qmax)), 0);
    }
    out.params(row) = Halide::Tuple(select(raw_scale > 0.0f, raw_scale, 1.0f), zero_point);
    out.scale(row) = out.params(row)[0];
    out.zero_point(row) = out.params(row)[1];
    if (whole_operand) {
      lanes.compute_root().vectorize(lane);
      lo_of.compute_root();
      hi_of.compute_root();
    } else {
      lanes.compute_at(out.params, row.empty() ? Var::outermost() : row[0]).vectorize(lane);
      lo_of.compute_at(out.params, row.empty() ? Var::outermost() : row[0]);
      hi_of.compute_at(out.params, row.empty() ? Var::outermost() : row[0]);
    }
    lanes.update().vectorize(lane);
    for (Func f : {lo_of, hi_of}) f.update().atomic().vectorize(across);
    out.params.compute_root();
  } else {
    out.scale(row) = state ? quant.state_scale : quant.input_scale;
    out.zero_point(row) = state ? quant.state_zero_point : quant.input_zero_point;
  }
  // per_tensor divides, as DynamicQuantizeLinear does; the others multiply by the reciprocal.
  Expr x = src(prepend(min(k, n - 1), row));
  Expr scaled =
      quant.per_tensor ? Halide::strict_float(x / out.scale(row)) : x * (1.0f / out.scale(row));
  Expr zero_point = out.zero_point(row);
  out.raw(prepend(k, row)) = Halide::round(scaled) + Halide::cast<float>(zero_point);
  // clamp(round(scaled) + zp, qmin, qmax) without a rounding instruction: scaled is clamped to
  // [qmin - zp, qmax - zp] first (integers, so the clamp commutes with rounding), then rounded
  // (rounded_to_int) and zp added.
  Expr quantized = rounded_to_int(clamp(scaled, qmin - Halide::cast<float>(zero_point),
                                        qmax - Halide::cast<float>(zero_point))) +
                   zero_point;
  out.q(prepend(k, row)) = select(k < n, Halide::cast(storage, quantized), Halide::cast(storage, 0));
  // Whole vectors from 0 (a vector wider than the row would otherwise be shifted below 0).
  out.q.bound(k, 0, round_up(padded_n, storage_vector(storage, vector_width)));
  RDom all(0, n, "all");
  out.sum(row) = 0;
  out.sum(row) += Halide::cast<int32_t>(out.q(prepend(all, row)));
  return out;
}

// ---- constant weights --------------------------------------------------------------------------

IntegerWeight integer_weight(const Node& node, size_t index, const char* name,
                             const Tensor& weight, int reduction_axis) {
  const Value* value = node.input(index);
  const QuantParams* params = value->type.quant.get();
  if (!params) {
    raise_unsupported(cat(node.describe(), ": activations are quantized but input '", name,
                          "' is a float weight (quantize it with rnnc quantize)"));
  }
  const std::vector<int64_t>& dims = weight.shape();
  const int rank = static_cast<int>(dims.size());
  RNNC_CHECK(reduction_axis >= 0 && reduction_axis < rank, node.describe(), ": reduction axis ",
             reduction_axis, " of a rank ", rank, " weight");
  // A one-element per-axis scale is a per-tensor one, whatever its axis.
  const bool per_axis =
      params->granularity == QuantParams::Granularity::kAxis && params->scales.size() != 1;
  if (per_axis && (params->axis < 0 || params->axis >= rank)) {
    raise_unsupported(cat(node.describe(), ": input '", name, "' has scales along axis ",
                          params->axis, ", which its shape ", shape_text(dims), " lacks"));
  }
  if (per_axis && params->axis == reduction_axis) {
    raise_unsupported(cat(node.describe(), ": input '", name, "' has scales along axis ",
                          params->axis,
                          ", the reduction axis; integer products need per-tensor scales or "
                          "scales along an output axis (keep this node's activations in float)"));
  }
  // Element i's coordinate along `axis`, and its output index (its coordinates without the
  // reduction axis, row-major).
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    strides[static_cast<size_t>(d)] = strides[static_cast<size_t>(d + 1)] * dims[static_cast<size_t>(d + 1)];
  }
  const int64_t reduction = dims[static_cast<size_t>(reduction_axis)];
  const int64_t inner = strides[static_cast<size_t>(reduction_axis)];
  const int64_t outputs = weight.numel() / std::max<int64_t>(reduction, 1);
  const int32_t shift = params->is_signed || params->bits > 8 ? 0 : 128;
  const long stored_min = params->bits > 8 ? -32768 : -128;
  const long stored_max = params->bits > 8 ? 32767 : 127;
  IntegerWeight out;
  out.bits = params->bits;
  out.shifted = shift != 0;
  out.q.resize(static_cast<size_t>(weight.numel()));
  out.scale.assign(static_cast<size_t>(outputs), 0.0f);
  out.zero_point.assign(static_cast<size_t>(outputs), 0);
  const float* w = weight.data<float>();
  for (int64_t i = 0; i < weight.numel(); ++i) {
    const int64_t output = i / (inner * reduction) * inner + i % inner;
    const size_t at = !per_axis ? 0
                                : static_cast<size_t>(i / strides[static_cast<size_t>(params->axis)] %
                                                      dims[static_cast<size_t>(params->axis)]);
    const float scale = params->scales.at(at);
    const int32_t zero_point =
        (params->zero_points.empty() ? 0 : params->zero_points.at(at)) - shift;
    out.scale[static_cast<size_t>(output)] = scale;
    out.zero_point[static_cast<size_t>(output)] = zero_point;
    out.has_zero_points = out.has_zero_points || zero_point != 0;
    const long q = std::lround(w[i] / scale) + zero_point;
    RNNC_CHECK(q >= stored_min && q <= stored_max, node.describe(), ": input '", name,
               "' does not recover to ", params->bits,
               "-bit integers from its quantization parameters");
    out.q[static_cast<size_t>(i)] = static_cast<int16_t>(q);
  }
  return out;
}

// ---- overflow counts ---------------------------------------------------------------------------

namespace {

// The number of points of `domain` where `condition` holds (the RVar term makes the update
// iterate over the whole domain even when the condition does not mention it).
Expr count(Halide::RDom domain, Expr condition) {
  Func f("overflow_count");
  f() = 0;
  f() += select(condition, 1, 0) + 0 * domain.x;
  return f();
}

}  // namespace

void OverflowCounter::add_operand(const QuantizedRows& rows, int n,
                                  const std::vector<Expr>& row_extents,
                                  const ActivationQuant& quant,
                                  const std::function<Expr(const std::vector<Expr>&)>& active) {
  Halide::Region region = {Halide::Range(0, n)};
  for (const Expr& extent : row_extents) region.emplace_back(0, extent);
  Halide::RDom r(region, "overflow_values");
  std::vector<Expr> at, row;
  for (int d = 0; d < r.dimensions(); ++d) {
    at.push_back(r[d]);
    if (d > 0) row.push_back(r[d]);
  }
  Expr raw = rows.raw(at), on = active(row);
  above_ += count(r, on && raw > static_cast<float>(quant.qmax()));
  below_ += count(r, on && raw < static_cast<float>(quant.qmin()));
  values_ += count(r, on);
}

void OverflowCounter::add_sums(Halide::RDom domain, Expr sum, Expr on, int accumulation_bits) {
  const int64_t limit = (int64_t{1} << (accumulation_bits - 1)) - 1;
  Expr wide = Halide::cast<int64_t>(sum);
  sums_ += count(domain, on && (wide > Expr(limit) || wide < Expr(-limit - 1)));
}

Func OverflowCounter::func() const {
  Var i("i");
  Func counts("overflow");
  counts(i) = Halide::mux(i, {above_, below_, sums_, values_});
  return counts;
}

}  // namespace rnnc
