#include "lowering/lower_dense_quant.h"

#include <algorithm>
#include <limits>
#include <map>

#include "ir/error.h"
#include "ir/quantization.h"
#include "lowering/halide_block.h"
#include "lowering/quantized_operands.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

// Bump when the code a group compiles to changes, so stale cached kernels are not reused.
constexpr const char* kQuantizedGemmKey = "rnnc int8 gemm";
// u8 x s8 products summed in int32 are exact up to this K: K * 255 * 128 < 2^31.
constexpr int64_t kMaxExactK = ((int64_t{1} << 31) - 1) / (255 * 128);
// Halide without LargeBuffers: every buffer below 2 GB.
constexpr int64_t kMaxBufferBytes = std::numeric_limits<int32_t>::max();

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

HalideBlock::Argument held(Tensor tensor) {
  HalideBlock::Argument argument;
  const int rank = static_cast<int>(tensor.rank());
  for (int d = rank - 1; d >= 0; --d) argument.view.push_back(ViewDim{d, d + 1});
  argument.constant = std::move(tensor);
  return argument;
}

// B [K, N] (or [N, K] with transB) as the kernel reads it: bq [Ko][Np][L] int8, L = lane
// (u8_products_per_lane) consecutive k of one column innermost (k = L ko + kl; zero past K and
// past N), and per column n < Np: scale, the sum of its integers, zero point.
struct PackedWeight {
  Tensor bq, scale, colsum, zero_point;
  bool has_zero_points = false;
};

PackedWeight pack_weight(const Node& root, const Tensor& b, bool trans_b, int64_t padded_n,
                         int lane) {
  const int64_t k_size = b.dim(trans_b ? 1 : 0), n_size = b.dim(trans_b ? 0 : 1);
  const IntegerWeight weight = integer_weight(root, 1, "B", b, trans_b ? 1 : 0);
  if (weight.bits > 8) {
    raise_unsupported(cat(root.describe(), ": input 'B' is quantized to ", weight.bits,
                          " bits; the integer GEMM takes weights of up to 8 (u8 x s8 products)"));
  }
  const int64_t ko = round_up(k_size, lane) / lane;
  PackedWeight out;
  out.bq = marshaled_weight_tensor(DType::kInt8, {ko, padded_n, lane});
  out.scale = Tensor(DType::kFloat32, {padded_n});
  out.colsum = Tensor(DType::kInt32, {padded_n});
  out.zero_point = Tensor(DType::kInt32, {padded_n});
  int8_t* bq = out.bq.data<int8_t>();
  std::fill(bq, bq + out.bq.numel(), int8_t{0});
  for (int64_t n = 0; n < padded_n; ++n) {
    const bool column = n < n_size;
    out.scale.data<float>()[n] = column ? weight.scale[static_cast<size_t>(n)] : 0.0f;
    out.zero_point.data<int32_t>()[n] = column ? weight.zero_point[static_cast<size_t>(n)] : 0;
    int32_t sum = 0;
    for (int64_t k = 0; k < k_size && column; ++k) {
      const int8_t q = static_cast<int8_t>(
          weight.q[static_cast<size_t>(trans_b ? n * k_size + k : k * n_size + n)]);
      bq[((k / lane) * padded_n + n) * lane + k % lane] = q;
      sum += q;
    }
    out.colsum.data<int32_t>()[n] = sum;
  }
  out.has_zero_points = weight.has_zero_points;
  return out;
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_quantized_gemm_group(const FusionGroup& group,
                                                           const GemmGroupShape& g,
                                                           HalideCache& cache) {
  const Node& root = *group.root;
  const ActivationQuant quant = activation_quant(root);
  if (quant.wide()) {
    raise_unsupported(cat(root.describe(), ": activations quantized to ", quant.bits,
                          " bits; the integer GEMM takes up to 8 (u8 x s8 products)"));
  }
  if (const Node* producer = g.b->producer();
      producer && producer->op_type() == "DequantizeLinear" && producer->input(0)) {
    raise_unsupported(cat(root.describe(), ": input 'B' is dequantized at run time from ",
                          dtype_onnx_name(producer->input(0)->type.dtype),
                          " (weights wider than 8 bits); the integer GEMM takes int8/uint8 "
                          "weights"));
  }
  if (!is_held_constant(g.b) || g.rb != 2) {
    raise_unsupported(cat(root.describe(), ": quantized activations need B to be a 2-D constant "
                          "weight (quantize it with rnnc quantize)"));
  }
  if (group.normalizer) {
    raise_unsupported(cat(root.describe(), ": quantized activations: the integer GEMM has no ",
                          group.normalizer->op_type(), " epilogue"));
  }
  const Tensor& b = *g.b->constant();
  const int64_t k_size = b.dim(g.trans_b ? 1 : 0), n_size = b.dim(g.trans_b ? 0 : 1);
  // int32 accumulators are as wide as float ones: the float GEMM's register tile.
  const ArchTable& arch = arch_table(cache.target());
  GemmSchedule schedule = choose_gemm_schedule(arch, DType::kFloat32, n_size, g.trans_b);
  const int lane = u8_products_per_lane(cache.kernel_target());
  schedule.panel_tiles = gemm_panel_tiles(round_up(k_size, lane), n_size, schedule.nr,
                                          sizeof(int8_t), cache.kernel_target().l2_bytes);
  const int lanes = schedule.lanes, nr = schedule.nr, mr = schedule.mr;
  const int64_t padded_n = round_up(n_size, nr), ko = round_up(k_size, lane) / lane;
  if (ko * padded_n * lane > kMaxBufferBytes) {
    raise_unsupported(cat(root.describe(), ": B [", k_size, ", ", n_size,
                          "] is beyond the Halide lowering's 2 GB buffer limit"));
  }
  if (k_size > kMaxExactK) {
    raise_unsupported(cat(root.describe(), ": K = ", k_size,
                          " products of u8 x s8 can overflow "
                          "the integer GEMM's int32 sums (exact up to K = ",
                          kMaxExactK, ")"));
  }
  PackedWeight packed = pack_weight(root, b, g.trans_b, padded_n, lane);
  const bool zero_points = packed.has_zero_points;

  auto block = std::make_unique<HalideBlock>();
  block->context_ = root.describe();
  block->output_value_ = g.result;
  block->output_view_ = output_view(g.loops);
  block->arguments_.push_back(argument_of(g.a, g.view_a));
  block->arguments_.push_back(held(std::move(packed.bq)));
  block->arguments_.push_back(held(std::move(packed.scale)));
  block->arguments_.push_back(held(std::move(packed.colsum)));
  if (zero_points) block->arguments_.push_back(held(std::move(packed.zero_point)));
  const size_t first_epilogue = block->arguments_.size();
  for (size_t i = 0; i < g.epilogue.size(); ++i) {
    const Value* operand = g.epilogue[i];
    block->arguments_.push_back(
        argument_of(operand, operand_view(static_cast<int>(operand->type.shape->size()), g.rank,
                                          g.loops, g.reads[i + 2])));
  }

  const bool count_overflow = cache.count_overflow();
  if (count_overflow) {
    OverflowCounts counts;
    counts.node = root.describe();
    counts.activation_bits = quant.bits;
    counts.accumulation_bits = quant.accumulation_bits;
    block->overflow_ = counts;
  }
  std::string key =
      cat(kQuantizedGemmKey, "\n", group_signature(group), "K=", k_size, " N=", n_size,
          " activations ", quant.to_string(), zero_points ? " weight_zero_points" : "",
          count_overflow ? " count_overflow" : "", "\n");
  for (const HalideBlock::Argument& argument : block->arguments_) {
    key += view_to_string(argument.view) + "\n";
  }
  key += cat("out ", view_to_string(block->output_view_), "\n", schedule.to_string());

  const HalideBlock& spec = *block;
  const std::vector<LoopDim>& loops = g.loops;
  const OperandView& view_a = g.view_a;
  const int k_extent = static_cast<int>(k_size);
  block->compile(cache, key, [&]() {
    std::vector<Var> vars;
    for (size_t i = 0; i < loops.size(); ++i) vars.emplace_back(cat("loop", i));
    const Var& n = vars[0];
    const Var& m = vars[1];
    const std::vector<Var> row_vars(vars.begin() + 1, vars.end());
    BuiltPipeline built;
    Halide::ImageParam a_image = make_image_param("a", DType::kFloat32, spec.arguments_[0].view);
    Halide::ImageParam bq = make_image_param("bq", DType::kInt8, spec.arguments_[1].view);
    Halide::ImageParam b_scale = make_image_param("b_scale", DType::kFloat32, spec.arguments_[2].view);
    Halide::ImageParam b_colsum =
        make_image_param("b_colsum", DType::kInt32, spec.arguments_[3].view);
    Halide::ImageParam b_zero(Halide::Int(32), 1, "b_zero");
    pin_shape(bq, {ko, padded_n, lane});
    for (Halide::ImageParam vector : {b_scale, b_colsum, b_zero}) pin_shape(vector, {padded_n});
    built.arguments = {a_image, bq, b_scale, b_colsum};
    if (zero_points) built.arguments.push_back(b_zero);
    std::map<const Value*, Expr> reads_of;
    for (size_t i = 0; i < g.epilogue.size(); ++i) {
      const OperandView& view = spec.arguments_[first_epilogue + i].view;
      Halide::ImageParam image =
          make_image_param(cat("epilogue", i), g.epilogue[i]->type.dtype, view);
      built.arguments.push_back(image);
      reads_of[g.epilogue[i]] = read_view(image, view, vars);
    }
    // A's rows (k, rows...), quantized per row, or all with one scale (per_tensor;
    // ir/quantization.h).
    Var k("k");
    Func a_rows("a_rows");
    std::vector<Expr> a_at = {k}, row_extents;
    for (size_t i = 1; i < vars.size(); ++i) {
      a_at.push_back(view_a[i].broadcast ? Expr(0) : Expr(vars[i]));
      row_extents.push_back(view_a[i].broadcast ? Expr(1)
                                                : a_image.dim(static_cast<int>(i)).extent());
    }
    std::vector<Expr> rows_at = {k};
    rows_at.insert(rows_at.end(), row_vars.begin(), row_vars.end());
    a_rows(rows_at) = a_image(a_at);
    QuantizedRows aq = quantize_rows(a_rows, k_extent, k_extent, quant, /*state=*/false,
                                     Halide::UInt(8), lanes, "a", row_extents);
    const std::vector<Expr> row(row_vars.begin(), row_vars.end());

    // u8 x s8 -> s32, `lane` k per lane.
    RDom r(0, lane, 0, static_cast<int>(ko), "r");
    std::vector<Expr> q_at = {lane * r.y + r.x};
    q_at.insert(q_at.end(), row.begin(), row.end());
    Func dot("dot");
    dot(vars) = 0;
    dot(vars) += Halide::cast<int32_t>(aq.q(q_at)) * Halide::cast<int32_t>(bq(r.x, n, r.y));
    // sum (qa - za)(qb - zb) = dot - za colsum(qb) - zb (sum qa - K za)   (docs/quant.md)
    Expr corrected = dot(vars) - aq.zero_point(row) * b_colsum(n);
    if (zero_points) corrected -= b_zero(n) * (aq.sum(row) - k_extent * aq.zero_point(row));
    Expr product = Halide::cast<float>(corrected) * (aq.scale(row) * b_scale(n));
    // per_tensor computes what DynamicQuantizeLinear + MatMulInteger + Cast + Mul compute: the
    // product rounded on its own, not fused into an epilogue's add.
    if (quant.per_tensor) product = Halide::strict_float(product);
    if (g.alpha != 1.0f) product = g.alpha * product;
    if (g.c) {
      Expr c_value = is_inline_scalar(g.c) ? group_expr(group, g.c, nullptr) : reads_of.at(g.c);
      product = product + (g.beta != 1.0f ? g.beta * c_value : c_value);
    }
    auto leaf = [&](const Value* value) {
      return value == root.output(0) ? product : reads_of.at(value);
    };
    Func out("out");
    out(vars) = Halide::cast<float>(group_expr(group, g.result, leaf));
    out.output_buffer().dim(0).set_extent(static_cast<int>(n_size));

    Var no("no"), ni("ni"), mo("mo"), mi("mi");
    const TailStrategy n_tail = n_size % nr == 0 ? TailStrategy::Auto : TailStrategy::GuardWithIf;
    tile_gemm_rows(out, n, m, nr, mr, lanes, n_tail, true, no, ni, mo, mi, schedule.panel_tiles);
    pin_output_mins(out);
    built.output = out;
    if (count_overflow) {
      // Overflow mode: A's rows, their quantized values and every output's exact sum at root
      // (the counts read them besides the output tiles; kMaxExactK keeps the int32 sums exact).
      Halide::Func sums("sums");
      sums(vars) = corrected;
      aq.q.compute_root().vectorize(aq.q.args()[0], 4 * lanes);
      if (quant.dynamic) aq.params.compute_root();
      if (zero_points) aq.sum.compute_root();
      dot.compute_root().vectorize(n, lanes);
      dot.update().atomic().reorder(r.x, n, r.y).vectorize(r.x).vectorize(n, lanes);
      std::vector<Expr> row_extents;
      Halide::Region outputs = {Halide::Range(0, static_cast<int>(n_size))};
      for (size_t d = 1; d < vars.size(); ++d) {
        row_extents.push_back(out.output_buffer().dim(static_cast<int>(d)).extent());
        outputs.emplace_back(0, row_extents.back());
      }
      OverflowCounter counts;
      counts.add_operand(aq, k_extent, row_extents, quant,
                         [](const std::vector<Expr>&) { return Halide::Internal::const_true(); });
      RDom output(outputs, "overflow_sums");
      std::vector<Expr> at;
      for (int d = 0; d < output.dimensions(); ++d) at.push_back(output[d]);
      counts.add_sums(output, sums(at), Halide::Internal::const_true(), quant.accumulation_bits);
      built.overflow = counts.func();
      return built;
    }
    // A row tile's quantized rows (and their coefficients) once, before its column tiles.
    // With B in column panels, once for every panel: all of A's rows first.
    const Halide::LoopLevel rows_level =
        schedule.panel_tiles > 0 ? Halide::LoopLevel::root() : Halide::LoopLevel(out, mo);
    aq.q.compute_at(rows_level).vectorize(aq.q.args()[0], 4 * lanes);
    if (quant.dynamic) aq.params.compute_at(rows_level);
    if (zero_points) aq.sum.compute_at(rows_level);
    dot.compute_at(out, no).bound_extent(n, nr).vectorize(n, lanes).unroll(n).unroll(m);
    dot.update()
        .atomic()
        .reorder(r.x, n, m, r.y)
        .vectorize(r.x)
        .vectorize(n, lanes)
        .unroll(n)
        .unroll(m);
    return built;
  });
  block->output_shape_ = gemm_output_shape(g, block->context_, b.shape(), first_epilogue);
  block->kind_ = cat("halide ", group_op_names(group), " int8 [K=", k_size, ",N=", n_size, "]");
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {g.result};
  return block;
}

}  // namespace rnnc
