#include "lowering/lower_dense.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/error.h"
#include "ir/quantization.h"
#include "lowering/halide_block.h"
#include "lowering/layout.h"
#include "lowering/lower_dense_quant.h"
#include "lowering/lower_dft_conv.h"
#include "lowering/lower_reduce.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

// Bump when the code a group compiles to changes, so stale cached kernels are not reused.
constexpr const char* kGemmKey = "rnnc gemm";
constexpr const char* kConvKey = "rnnc conv";

std::optional<int64_t> known(const Dim& dim) {
  return dim.is_known() ? std::optional<int64_t>(dim.value()) : std::nullopt;
}

std::string known_text(std::optional<int64_t> value) {
  return value ? std::to_string(*value) : std::string("?");
}


std::vector<Expr> prepend(Expr first, const std::vector<Expr>& rest) {
  std::vector<Expr> all = {first};
  all.insert(all.end(), rest.begin(), rest.end());
  return all;
}

// numpy.matmul's result shape at run time; kInvalidInput when K or the batch dims disagree.
std::vector<int64_t> matmul_shape(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                  const std::string& context) {
  std::vector<int64_t> as = a, bs = b;
  if (a.size() == 1) as.insert(as.begin(), 1);
  if (b.size() == 1) bs.push_back(1);
  if (as.back() != bs[bs.size() - 2]) {
    raise_invalid_input(
        cat(context, ": inner dimensions differ: A is ", shape_text(a), ", B is ", shape_text(b)));
  }
  std::vector<int64_t> out =
      broadcast_runtime_shapes({std::vector<int64_t>(as.begin(), as.end() - 2),
                                std::vector<int64_t>(bs.begin(), bs.end() - 2)},
                               context);
  if (a.size() > 1) out.push_back(as[as.size() - 2]);
  if (b.size() > 1) out.push_back(bs.back());
  return out;
}

}  // namespace

// The fused group's result has the root's shape (fusion_groups' invariant): the same rank, each
// dim equal or unknown on either side (fusion_groups joined it through single-value operands).
bool same_shape(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && !a[i].is_unknown() && !b[i].is_unknown()) return false;
  }
  return true;
}

// Operands read by the group's elementwise members (the epilogue), in operand order.
std::vector<const Value*> epilogue_operands(const FusionGroup& group) {
  std::vector<const Value*> operands;
  for (const Value* operand : group.operands) {
    bool read = false;
    for (const Node* node : group.elementwise) {
      for (const Value* input : node->inputs()) read = read || input == operand;
    }
    if (read) operands.push_back(operand);
  }
  return operands;
}

// The epilogue's operands may not broadcast the root's result (the fusion rule keeps every
// member at the result's shape); checked at run time against `root`.
std::vector<int64_t> check_epilogue(const std::vector<int64_t>& root, const RunTensors& tensors,
                                    size_t first, const std::string& context) {
  std::vector<int64_t> out = root;
  for (size_t i = first; i < tensors.size(); ++i) broadcast_into(out, tensors[i].shape(), context);
  if (out != root) {
    raise_invalid_input(cat(context, ": the fused operands broadcast the result ", shape_text(root),
                            " to ", shape_text(out)));
  }
  return root;
}

namespace {
void tile_rows(Halide::Stage stage, const Var& n, const Var& m, int nr, int rows, int lanes,
               TailStrategy n_tail, bool split_n, Var no, Var ni, Var mo, Var mi, int panel_tiles) {
  stage.split(m, mo, mi, rows, TailStrategy::ShiftInwards);
  if (split_n && panel_tiles > 0) {
    Var tile("n_tile"), panel("n_panel");
    // Panels are whole units of work (B larger than half of L2): with more than one executor
    // thread each takes a share of them, its own cache holding its panel.
    stage.split(n, tile, ni, nr, n_tail)
        .split(tile, panel, no, panel_tiles, TailStrategy::GuardWithIf)
        .reorder(ni, mi, no, mo, panel)
        .vectorize(ni, lanes)
        .parallel(panel);
  } else if (split_n) {
    stage.split(n, no, ni, nr, n_tail).reorder(ni, mi, no, mo).vectorize(ni, lanes);
  } else {
    stage.reorder(n, mi, mo).vectorize(n, lanes, TailStrategy::GuardWithIf);
  }
}
}  // namespace

void tile_gemm_rows(Func out, const Var& n, const Var& m, int nr, int mr, int lanes,
                    TailStrategy n_tail, bool split_n, Var no, Var ni, Var mo, Var mi,
                    int panel_tiles) {
  const Expr rows = out.output_buffer().dim(1).extent();
  for (const PairedRowTile& paired : paired_row_tiles(mr)) {
    tile_rows(out.specialize(rows >= paired.min_rows && rows <= paired.max_rows), n, m, nr,
              paired.tile, lanes, n_tail, split_n, no, ni, mo, mi, panel_tiles);
  }
  for (int tile = mr; tile > 1; --tile) {
    tile_rows(out.specialize(rows >= tile), n, m, nr, tile, lanes, n_tail, split_n, no, ni, mo, mi,
              panel_tiles);
  }
  tile_rows(out, n, m, nr, 1, lanes, n_tail, split_n, no, ni, mo, mi, panel_tiles);
}

void schedule_conv_tiles(Func out, Func prod, const RDom& r, const std::vector<Var>& vars,
                         const ConvSchedule& schedule, int64_t out_channels) {
  const Var &ow = vars[0], &oh = vars[1], &m = vars[2], &batch = vars[3];
  const int lanes = schedule.lanes, mr = schedule.mr;
  Var owo("owo"), owi("owi"), mo("mo"), mi("mi");
  TailStrategy m_tail = out_channels % mr == 0 ? TailStrategy::Auto : TailStrategy::GuardWithIf;
  if (schedule.channels_vectorized) {
    // mr channels (whole vectors) x `positions` output positions of accumulators; W's tile of
    // mr channels is contiguous per tap (tiled layout, zero-padded past M).
    const int positions = schedule.positions;
    out.split(m, mo, mi, mr, m_tail)
        .split(ow, owo, owi, positions, TailStrategy::GuardWithIf)
        .reorder(mi, owi, owo, oh, mo, batch)
        .vectorize(mi, lanes);
    // Channels innermost in the accumulator tile too: dense vectors LLVM keeps in registers
    // (the default ow-innermost storage makes every accumulator a strided gather).
    prod.compute_at(out, owo)
        .reorder_storage(m, ow, oh, batch)
        .bound_extent(ow, positions)
        .bound_extent(m, mr)
        .vectorize(m, lanes)
        .unroll(m)
        .unroll(ow);
    prod.update().reorder(m, ow, r.x, r.y, r.z).vectorize(m, lanes).unroll(m).unroll(ow);
  } else {
    const int width = lanes * schedule.vectors;
    out.split(m, mo, mi, mr, m_tail)
        .split(ow, owo, owi, width, TailStrategy::GuardWithIf)
        .reorder(owi, mi, owo, oh, mo, batch)
        .vectorize(owi, lanes);
    prod.compute_at(out, owo)
        .bound_extent(ow, width)
        .bound_extent(m, mr)
        .vectorize(ow, lanes)
        .unroll(ow)
        .unroll(m);
    prod.update().reorder(ow, m, r.x, r.y, r.z).vectorize(ow, lanes).unroll(ow).unroll(m);
  }
  if (schedule.unroll_taps) prod.update().unroll(r.x);
  pin_output_mins(out);
  // The channel count is the weights' M: pinned, a tile's first channel is a multiple of mr
  // and W's tiled index is a dense vector load. Unpinned, Halide shifts the last tile inward
  // (first channel min(mo * mr, M - mr)) and every W load becomes a 16-lane gather, several
  // times slower.
  out.output_buffer().dim(2).set_extent(static_cast<int>(out_channels));
}

GemmGroupShape analyze_gemm_group(const FusionGroup& group) {
  const Node& root = *group.root;
  bool gemm = root.op_type() == "Gemm";
  const Value* a = root.input(0);
  const Value* b = root.input(1);
  const Value* c = gemm ? root.input(2) : nullptr;
  for (const Value* operand : {a, b, c}) {
    if (operand && operand->type.dtype != DType::kFloat32) {
      raise_unsupported(cat(root.describe(), ": lowered for float32 only"));
    }
  }
  bool trans_a = gemm && root.attr_int("transA", 0) != 0;
  bool trans_b = gemm && root.attr_int("transB", 0) != 0;
  float alpha = gemm ? root.attr_float("alpha", 1.0f) : 1.0f;
  float beta = gemm ? root.attr_float("beta", 1.0f) : 1.0f;
  const Shape& sa = *a->type.shape;
  const Shape& sb = *b->type.shape;
  int ra = static_cast<int>(sa.size());
  int rb = static_cast<int>(sb.size());
  if ((gemm && (ra != 2 || rb != 2)) || ra == 0 || rb == 0) {
    raise_unsupported(cat(root.describe(), ": operand ranks ", ra, " and ", rb));
  }
  const Value* result = group.sink->output(0);
  const Shape& shape = *result->type.shape;
  int rank = static_cast<int>(shape.size());
  const Value* chain_end = group.normalizer ? group.normalizer->input(0) : result;
  if (root.output(0) != chain_end &&
      (!root.output(0)->type.shape || !same_shape(*root.output(0)->type.shape, shape))) {
    raise_unsupported(cat(root.describe(), ": the fused group changes the product's shape"));
  }
  bool has_m = gemm || ra >= 2;
  bool has_n = gemm || rb >= 2;
  if (group.normalizer) {
    check_last_axis_normalizer(*group.normalizer);
    if (!has_n) raise_unsupported(cat(group.normalizer->describe(), ": a normalizer along M"));
  }
  int n_dim = has_n ? rank - 1 : -1;
  int m_dim = has_m ? (has_n ? rank - 2 : rank - 1) : -1;
  int batch_rank = rank - (has_m ? 1 : 0) - (has_n ? 1 : 0);
  Shape out_batch(shape.begin(), shape.begin() + batch_rank);

  // How A, B and the epilogue's operands read each output dim.
  std::vector<DimRead> reads_a(static_cast<size_t>(rank), DimRead::kBroadcast);
  std::vector<DimRead> reads_b(static_cast<size_t>(rank), DimRead::kBroadcast);
  if (has_m) reads_a[static_cast<size_t>(m_dim)] = DimRead::kFull;
  if (has_n) reads_b[static_cast<size_t>(n_dim)] = DimRead::kFull;
  if (!gemm) {
    auto batch_reads = [&](const Shape& operand, int operand_rank, std::vector<DimRead>& reads) {
      Shape batch = operand_rank > 2 ? Shape(operand.begin(), operand.end() - 2) : Shape();
      std::vector<DimRead> batch_read = classify_operand(batch, out_batch);
      std::copy(batch_read.begin(), batch_read.end(), reads.begin());
    };
    batch_reads(sa, ra, reads_a);
    batch_reads(sb, rb, reads_b);
  }
  std::vector<const Value*> epilogue = epilogue_operands(group);
  if (c && !is_inline_scalar(c) &&
      std::find(epilogue.begin(), epilogue.end(), c) == epilogue.end()) {
    epilogue.push_back(c);
  }
  std::vector<std::vector<DimRead>> reads = {reads_a, reads_b};
  for (const Value* operand : epilogue) {
    if (static_cast<int>(operand->type.shape->size()) > rank) {
      raise_unsupported(cat(root.describe(), ": operand '", operand->name(),
                            "' has a higher rank than the result"));
    }
    reads.push_back(classify_operand(*operand->type.shape, shape));
  }
  // Loop dims n, m, batch...: N stays alone; M merges with the batch dims wherever every operand
  // agrees (B broadcast over them), so the rows of a [seq, batch, K] x [K, N] product are one dim.
  std::vector<LoopDim> merged =
      merge_loop_dims(rank, reads, [n_dim](int d) { return d != n_dim && d + 1 != n_dim; });
  if (rank == 0) merged.clear();
  std::vector<LoopDim> loops;
  size_t next = 0;
  loops.push_back(has_n ? merged[next++] : LoopDim{rank, rank});
  loops.push_back(has_m ? merged[next++] : LoopDim{rank, rank});
  loops.insert(loops.end(), merged.begin() + static_cast<long>(next), merged.end());
  std::vector<LoopDim> row_loops(loops.begin() + 1, loops.end());
  std::optional<int64_t> n_known =
      has_n ? known(sb[static_cast<size_t>(trans_b ? 0 : rb - 1)]) : std::optional<int64_t>(1);
  std::optional<int64_t> k_known = known(sa[static_cast<size_t>(trans_a ? 0 : ra - 1)]);
  // A: (k, rows...).
  OperandView view_a;
  int k_dim_a = gemm ? (trans_a ? 0 : 1) : ra - 1;
  ViewDim k_view{k_dim_a, k_dim_a + 1};
  k_view.strided = k_dim_a != ra - 1;
  view_a.push_back(k_view);
  if (gemm) {
    int m_dim_a = trans_a ? 1 : 0;
    ViewDim m_view{m_dim_a, m_dim_a + 1};
    m_view.out_first = 0;
    m_view.out_last = 1;
    view_a.push_back(m_view);
  } else {
    OperandView rows = operand_view(ra - 1, has_m ? m_dim + 1 : 0, row_loops, reads_a);
    view_a.insert(view_a.end(), rows.begin(), rows.end());
  }

  GemmGroupShape out;
  out.gemm = gemm;
  out.trans_a = trans_a;
  out.trans_b = trans_b;
  out.alpha = alpha;
  out.beta = beta;
  out.a = a;
  out.b = b;
  out.c = c;
  out.result = result;
  out.ra = ra;
  out.rb = rb;
  out.rank = rank;
  out.batch_rank = batch_rank;
  out.has_m = has_m;
  out.has_n = has_n;
  out.reads_b = reads_b;
  out.epilogue = epilogue;
  out.reads = reads;
  out.loops = loops;
  out.row_loops = row_loops;
  out.view_a = view_a;
  out.k_known = k_known;
  out.n_known = n_known;
  return out;
}

OutputShapeFn gemm_output_shape(const GemmGroupShape& shape, const std::string& context,
                                std::vector<int64_t> constant_b_shape, size_t first_epilogue) {
  const bool gemm = shape.gemm, trans_a = shape.trans_a, trans_b = shape.trans_b;
  const bool weights = !constant_b_shape.empty();
  return [=](const RunTensors& tensors) {
    const std::vector<int64_t>& a_rt = tensors[0].shape();
    const std::vector<int64_t>& b_rt = weights ? constant_b_shape : tensors[1].shape();
    std::vector<int64_t> product;
    if (gemm) {
      int64_t m_size = trans_a ? a_rt[1] : a_rt[0];
      int64_t k_size = trans_a ? a_rt[0] : a_rt[1];
      int64_t n_size = trans_b ? b_rt[0] : b_rt[1];
      if ((trans_b ? b_rt[1] : b_rt[0]) != k_size) {
        raise_invalid_input(cat(context, ": inner dimensions differ: A is ", shape_text(a_rt),
                                " (transA = ", trans_a, "), B is ", shape_text(b_rt),
                                " (transB = ", trans_b, ")"));
      }
      product = {m_size, n_size};
    } else {
      product = matmul_shape(a_rt, b_rt, context);
    }
    return check_epilogue(product, tensors, first_epilogue, context);
  };
}

std::unique_ptr<ExecutionBlock> lower_gemm_group(const FusionGroup& group, HalideCache& cache) {
  const GemmGroupShape g = analyze_gemm_group(group);
  // quant/'s annotation asks for integer products (A quantized per row): lower_dense_quant.h.
  if (has_activation_quant(*group.root)) return lower_quantized_gemm_group(group, g, cache);
  const Node& root = *group.root;
  const bool gemm = g.gemm, trans_b = g.trans_b;
  const float alpha = g.alpha, beta = g.beta;
  const Value *a = g.a, *b = g.b, *c = g.c, *result = g.result;
  const Shape& sb = *b->type.shape;
  const int rb = g.rb, rank = g.rank, batch_rank = g.batch_rank;
  const std::vector<DimRead>& reads_b = g.reads_b;
  const std::vector<const Value*>& epilogue = g.epilogue;
  const std::vector<std::vector<DimRead>>& reads = g.reads;
  const std::vector<LoopDim>&loops = g.loops, &row_loops = g.row_loops;
  const OperandView& view_a = g.view_a;
  const std::optional<int64_t> k_known = g.k_known, n_known = g.n_known;

  const ArchTable& arch = arch_table(cache.target());
  bool weights = is_held_constant(b) && rb == 2;
  GemmSchedule schedule = choose_gemm_schedule(arch, DType::kFloat32, n_known, trans_b);
  if (weights && k_known && n_known && !group.normalizer) {
    schedule.panel_tiles = gemm_panel_tiles(*k_known, *n_known, schedule.nr, sizeof(float),
                                            cache.kernel_target().l2_bytes);
  }

  auto block = std::make_unique<HalideBlock>();
  block->context_ = root.describe();
  block->output_value_ = result;
  block->output_view_ = output_view(loops);
  block->arguments_.push_back(argument_of(a, view_a));
  // B: its layout's physical dims (a constant), or (n, k, rows...).
  std::optional<LayoutMap> b_layout;
  if (weights) {
    b_layout.emplace(shape_values(sb), schedule.b_layout);
    HalideBlock::Argument argument;
    argument.constant = b_layout->marshal(*b->constant());
    int physical_rank = static_cast<int>(b_layout->physical_shape().size());
    for (int d = physical_rank - 1; d >= 0; --d) argument.view.push_back(ViewDim{d, d + 1});
    block->arguments_.push_back(std::move(argument));
  } else {
    int n_dim_b = gemm ? (trans_b ? 0 : 1) : (rb >= 2 ? rb - 1 : -1);
    int k_dim_b = gemm ? (trans_b ? 1 : 0) : (rb >= 2 ? rb - 2 : 0);
    ViewDim n_view = n_dim_b >= 0 ? ViewDim{n_dim_b, n_dim_b + 1} : ViewDim{0, 0};
    n_view.broadcast = n_dim_b < 0;
    n_view.strided = n_dim_b >= 0 && n_dim_b != rb - 1;
    OperandView view_b = {n_view, ViewDim{k_dim_b, k_dim_b + 1}};
    OperandView rows = operand_view(std::max(rb - 2, 0), batch_rank, row_loops, reads_b);
    view_b.insert(view_b.end(), rows.begin(), rows.end());
    block->arguments_.push_back(argument_of(b, view_b));
  }
  for (size_t i = 0; i < epilogue.size(); ++i) {
    const Value* operand = epilogue[i];
    block->arguments_.push_back(argument_of(
        operand,
        operand_view(static_cast<int>(operand->type.shape->size()), rank, loops, reads[i + 2])));
  }
  if (group.normalizer && !n_known) block->extent_params_ = {rank - 1};

  std::string key = cat(kGemmKey, "\n", group_signature(group), weights ? "weights" : "",
                        " K=", known_text(k_known), " N=", known_text(n_known), "\n");
  if (b_layout) key += b_layout->to_string() + "\n";
  for (const HalideBlock::Argument& argument : block->arguments_) {
    key += view_to_string(argument.view) + "\n";
  }
  key += cat("out ", view_to_string(block->output_view_), "\n", schedule.to_string());

  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    int lanes = schedule.lanes, nr = schedule.nr, mr = schedule.mr;
    std::vector<Var> vars;
    for (size_t i = 0; i < loops.size(); ++i) vars.emplace_back(cat("loop", i));
    const Var& n = vars[0];
    const Var& m = vars[1];
    std::vector<Expr> row_vars(vars.begin() + 1, vars.end());
    BuiltPipeline built;
    Halide::ImageParam a_image = make_image_param("a", DType::kFloat32, spec.arguments_[0].view);
    Halide::ImageParam b_image = make_image_param("b", DType::kFloat32, spec.arguments_[1].view);
    if (weights) pin_shape(b_image, b_layout->physical_shape());
    built.arguments = {a_image, b_image};
    std::map<const Value*, Expr> reads_of;
    for (size_t i = 0; i < epilogue.size(); ++i) {
      const OperandView& view = spec.arguments_[i + 2].view;
      Halide::ImageParam image =
          make_image_param(cat("epilogue", i), epilogue[i]->type.dtype, view);
      built.arguments.push_back(image);
      reads_of[epilogue[i]] = read_view(image, view, vars);
    }
    // The rows of A a tile needs, packed: (k, rows...).
    Var k("k");
    Func a_packed("a_packed");
    std::vector<Expr> a_at = {k};
    for (size_t i = 1; i < vars.size(); ++i) {
      a_at.push_back(view_a[i].broadcast ? Expr(0) : Expr(vars[i]));
    }
    a_packed(prepend(k, row_vars)) = a_image(a_at);
    // B at (n, k) for the current rows.
    Func b_packed("b_packed");
    std::function<Expr(Expr, Expr)> b_at;
    if (weights) {
      b_at = [&](Expr col, Expr row) {
        // Logical coords of B as stored, innermost first: [K, N] -> (n, k); [N, K] -> (k, n).
        std::vector<Expr> logical =
            trans_b ? std::vector<Expr>{row, col} : std::vector<Expr>{col, row};
        return b_image(b_layout->physical_coords(logical));
      };
    } else {
      // Packed into zero-padded tiles of nr columns once per call, as the constant layout would.
      const OperandView& view_b = spec.arguments_[1].view;
      Var ni("b_ni"), kk("b_k"), tile("b_tile");
      Expr width = b_image.dim(0).extent();
      Expr column = tile * nr + ni;
      std::vector<Expr> b_coords = {view_b[0].broadcast ? Expr(0) : Halide::min(column, width - 1),
                                    kk};
      for (size_t i = 1; i < vars.size(); ++i) {
        b_coords.push_back(view_b[i + 1].broadcast ? Expr(0) : Expr(vars[i]));
      }
      std::vector<Expr> pack_at = {ni, kk, tile};
      pack_at.insert(pack_at.end(), row_vars.begin(), row_vars.end());
      b_packed(pack_at) = Halide::select(column < width, b_image(b_coords), 0.f);
      b_at = [&, row_vars](Expr col, Expr row) {
        std::vector<Expr> at = {col % nr, row, col / nr};
        at.insert(at.end(), row_vars.begin(), row_vars.end());
        return b_packed(at);
      };
    }
    Expr k_extent = k_known ? Expr(static_cast<int>(*k_known)) : a_image.dim(0).extent();
    RDom r(0, k_extent, "r");
    Func prod("prod");
    prod(vars) = 0.f;
    prod(vars) += a_packed(prepend(r, row_vars)) * b_at(n, r);
    Expr product = prod(vars);
    if (alpha != 1.0f) product = alpha * product;
    if (c) {
      Expr c_value = is_inline_scalar(c) ? group_expr(group, c, nullptr) : reads_of.at(c);
      product = product + (beta != 1.0f ? beta * c_value : c_value);
    }
    auto leaf = [&](const Value* value) {
      return value == root.output(0) ? product : reads_of.at(value);
    };
    const Value* before_normalizer = group.normalizer ? group.normalizer->input(0) : result;
    Expr z = Halide::cast<float>(group_expr(group, before_normalizer, leaf));

    Var no("no"), ni("ni"), mo("mo"), mi("mi");
    TailStrategy n_tail =
        n_known && *n_known % nr == 0 ? TailStrategy::Auto : TailStrategy::GuardWithIf;
    Func out("out");
    // A known N pinned on the output: whole tiles need no tail handling.
    auto pin_n = [&] {
      if (n_known) out.output_buffer().dim(0).set_extent(static_cast<int>(*n_known));
    };
    if (!group.normalizer) {
      out(vars) = z;
      pin_n();
      tile_gemm_rows(out, n, m, nr, mr, lanes, n_tail, true, no, ni, mo, mi, schedule.panel_tiles);
      prod.compute_at(out, no);
    } else {
      // The normalizer needs whole rows: a tile of rows is computed over all of N (tiled by nr
      // like the plain GEMM), its statistics taken, then normalized.
      Func tile_rows_func("z");
      tile_rows_func(vars) = z;
      Expr row_length = static_cast<int>(n_known.value_or(0));
      if (!n_known) {
        Halide::Param<int32_t> length("row_length");
        built.arguments.push_back(length);
        row_length = length;
      }
      std::vector<Var> rows_of(vars.begin() + 1, vars.end());
      RowNormalization norm = normalize_row(group.normalizer->op_type() == "LogSoftmax",
                                            tile_rows_func, n, rows_of, row_length, lanes);
      out(vars) = norm.value;
      pin_n();
      tile_gemm_rows(out, n, m, nr, mr, lanes, n_tail, false, no, ni, mo, mi);
      tile_rows_func.compute_at(out, mo)
          .split(n, no, ni, nr, TailStrategy::GuardWithIf)
          .reorder(ni, m, no)
          .vectorize(ni, lanes);
      prod.compute_at(tile_rows_func, no);
      Halide::LoopLevel row_tile(out, mo);
      schedule_row_reduction(norm.max, row_tile, lanes);
      schedule_row_reduction(norm.sum, row_tile, lanes);
    }
    // With B in column panels, once for every panel: all of A's rows first.
    a_packed.compute_at(schedule.panel_tiles > 0 ? Halide::LoopLevel::root()
                                                 : Halide::LoopLevel(out, mo));
    if (k_known && *k_known >= lanes) {
      a_packed.vectorize(k, lanes, TailStrategy::ShiftInwards);
    }
    prod.bound_extent(n, nr).vectorize(n, lanes).unroll(n).unroll(m);
    prod.update().reorder(n, m, r).vectorize(n, lanes).unroll(n).unroll(m);
    if (!weights) b_packed.compute_root().vectorize(b_packed.args()[0], lanes);
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  std::string context = block->context_;
  block->output_shape_ =
      gemm_output_shape(g, context, weights ? b->constant()->shape() : std::vector<int64_t>(), 2);
  block->kind_ = cat("halide ", group_op_names(group), " [K=", known_text(k_known),
                     ",N=", known_text(n_known), "]");
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

// auto_pad resolved as docs/ops/nn.md says.
std::vector<ConvAxis> conv_axes(const Node& node, const Shape& x, const std::vector<int64_t>& w) {
  size_t spatial = w.size() - 2;
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = node.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  std::vector<int64_t> kernel_shape = node.attr_ints("kernel_shape");
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      (!kernel_shape.empty() && kernel_shape != std::vector<int64_t>(w.begin() + 2, w.end()))) {
    raise_unsupported(cat(node.describe(), ": attributes that do not match W's rank"));
  }
  std::vector<ConvAxis> axes(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    ConvAxis& axis = axes[i];
    axis.kernel = w[i + 2];
    axis.stride = strides[i];
    axis.dilation = dilations[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // The pads depend on the input size: lowered only when it is known.
      std::optional<int64_t> in = known(x[i + 2]);
      if (!in)
        raise_unsupported(cat(node.describe(), ": auto_pad ", auto_pad, " on a run-time size"));
      int64_t out = (*in + axis.stride - 1) / axis.stride;
      int64_t extent = (axis.kernel - 1) * axis.dilation + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * axis.stride + extent - *in);
      axis.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      axis.pad_end = total - axis.pad_begin;
    } else if (auto_pad != "VALID") {
      axis.pad_begin = pads[i];
      axis.pad_end = pads[i + spatial];
    }
  }
  return axes;
}

std::unique_ptr<HalideBlock> conv_block(const Node& root, const Value* result, int rank,
                                        std::vector<LoopDim>& loops) {
  const bool two_d = rank == 4;
  loops = {LoopDim{rank - 1, rank}, two_d ? LoopDim{2, 3} : LoopDim{rank, rank}, LoopDim{1, 2},
           LoopDim{0, 1}};
  auto block = std::make_unique<HalideBlock>();
  block->context_ = root.describe();
  block->output_value_ = result;
  block->output_view_ = output_view(loops);
  return block;
}

std::string conv_key_tail(const HalideBlock& block, const ConvSchedule& schedule,
                          const std::vector<std::optional<int64_t>>& static_in,
                          const std::vector<std::optional<int64_t>>& static_out) {
  std::string key;
  for (const HalideBlock::Argument& argument : block.arguments_) {
    key += view_to_string(argument.view) + "\n";
  }
  key += cat("out ", view_to_string(block.output_view_), "\n", schedule.to_string());
  for (size_t d = 0; d < 2; ++d) {
    key += cat(" static in ", static_in[d] ? cat(*static_in[d]) : "?", " out ",
               static_out[d] ? cat(*static_out[d]) : "?");
  }
  return key;
}

ConvArguments add_conv_arguments(HalideBlock& block, const FusionGroup& group, const Value* x,
                                 const Value* bias, Tensor marshaled_weights,
                                 const LayoutMap& w_layout, int rank,
                                 const std::vector<LoopDim>& loops, const Shape& result_shape) {
  const bool two_d = rank == 4;
  OperandView view_x = {ViewDim{rank - 1, rank}, two_d ? ViewDim{2, 3} : ViewDim{0, 0},
                        ViewDim{1, 2}, ViewDim{0, 1}};
  view_x[1].broadcast = !two_d;
  block.arguments_.push_back(argument_of(x, view_x));
  HalideBlock::Argument weights;
  weights.constant = std::move(marshaled_weights);
  const int physical_rank = static_cast<int>(w_layout.physical_shape().size());
  for (int d = physical_rank - 1; d >= 0; --d) weights.view.push_back(ViewDim{d, d + 1});
  block.arguments_.push_back(std::move(weights));
  ConvArguments arguments;
  arguments.bias_buffer = bias && !is_inline_scalar(bias);
  if (arguments.bias_buffer) {
    OperandView view_bias = {ViewDim{0, 0}, ViewDim{0, 0}, ViewDim{0, 1}, ViewDim{0, 0}};
    for (int i : {0, 1, 3}) view_bias[static_cast<size_t>(i)].broadcast = true;
    view_bias[2].out_first = 1;
    view_bias[2].out_last = 2;
    block.arguments_.push_back(argument_of(bias, view_bias));
  }
  arguments.first_epilogue = block.arguments_.size();
  arguments.epilogue = epilogue_operands(group);
  const Node& root = *group.root;
  for (const Value* operand : arguments.epilogue) {
    if (static_cast<int>(operand->type.shape->size()) > rank) {
      raise_unsupported(cat(root.describe(), ": operand '", operand->name(),
                            "' has a higher rank than the result"));
    }
    block.arguments_.push_back(argument_of(
        operand, operand_view(static_cast<int>(operand->type.shape->size()), rank, loops,
                              classify_operand(*operand->type.shape, result_shape))));
  }
  return arguments;
}

ConvImages conv_images(const HalideBlock& spec, const ConvArguments& arguments,
                       const FusionGroup& group, const Value* bias, const LayoutMap& w_layout,
                       const std::vector<std::optional<int64_t>>& static_in, int64_t out_channels,
                       const std::vector<Var>& vars, BuiltPipeline& built) {
  ConvImages images;
  images.x = make_image_param("x", DType::kFloat32, spec.arguments_[0].view);
  for (size_t d = 0; d < static_in.size() && d < 2; ++d) {
    if (static_in[d]) images.x.dim(static_cast<int>(d)).set_extent(static_cast<int>(*static_in[d]));
  }
  images.w = make_image_param("w", DType::kFloat32, spec.arguments_[1].view);
  pin_shape(images.w, w_layout.physical_shape());
  built.arguments = {images.x, images.w};
  images.bias_value = 0.f;
  if (arguments.bias_buffer) {
    Halide::ImageParam bias_image =
        make_image_param("bias", DType::kFloat32, spec.arguments_[2].view);
    built.arguments.push_back(bias_image);
    // Clamped: the last channel tile may run past M (its extra channels are discarded).
    const Var& m = vars[2];
    images.bias_value =
        bias_image(0, 0, Halide::min(m, static_cast<int>(out_channels) - 1), 0);
  } else if (bias) {
    images.bias_value = group_expr(group, bias, nullptr);
  }
  for (size_t i = 0; i < arguments.epilogue.size(); ++i) {
    const OperandView& view = spec.arguments_[arguments.first_epilogue + i].view;
    Halide::ImageParam image =
        make_image_param(cat("epilogue", i), arguments.epilogue[i]->type.dtype, view);
    built.arguments.push_back(image);
    images.reads_of[arguments.epilogue[i]] = read_view(image, view, vars);
  }
  return images;
}

std::unique_ptr<ExecutionBlock> lower_conv_group(const FusionGroup& group, HalideCache& cache) {
  const Node& root = *group.root;
  const Value* x = root.input(0);
  const Value* w = root.input(1);
  const Value* bias = root.input(2);
  for (const Value* operand : {x, w, bias}) {
    if (operand && operand->type.dtype != DType::kFloat32) {
      raise_unsupported(cat(root.describe(), ": lowered for float32 only"));
    }
  }
  if (!is_held_constant(w))
    raise_unsupported(cat(root.describe(), ": weights computed at run time"));
  const Shape& sx = *x->type.shape;
  std::vector<int64_t> w_shape = w->constant()->shape();
  int rank = static_cast<int>(sx.size());
  if ((rank != 3 && rank != 4) || static_cast<int>(w_shape.size()) != rank) {
    raise_unsupported(cat(root.describe(), ": lowered for 1-D and 2-D convolutions"));
  }
  const Value* result = group.sink->output(0);
  const Shape& shape = *result->type.shape;
  if (root.output(0) != result &&
      (!root.output(0)->type.shape || !same_shape(*root.output(0)->type.shape, shape))) {
    raise_unsupported(cat(root.describe(), ": the fused group changes the convolution's shape"));
  }
  bool two_d = rank == 4;
  int64_t groups = root.attr_int("group", 1);
  int64_t out_channels = w_shape[0];
  int64_t group_channels = w_shape[1];
  if (groups <= 0 || out_channels % groups != 0) {
    raise_unsupported(
        cat(root.describe(), ": group ", groups, " for ", out_channels, " output channels"));
  }
  int64_t group_out_channels = out_channels / groups;
  std::vector<ConvAxis> axes = conv_axes(root, sx, w_shape);
  // An STFT written as a Conv (a DFT basis for weights) alone in its group: two short DFTs.
  if (group.sink == &root && axes.size() == 1) {
    if (std::unique_ptr<ExecutionBlock> block = lower_dft_conv(root, axes[0], cache)) return block;
  }
  const ConvAxis& ax_w = axes.back();
  ConvAxis ax_h = two_d ? axes[0] : ConvAxis{};

  const ArchTable& arch = arch_table(cache.target());
  // The spatial extents (width, then height) of input and output where the graph fixes them:
  // compiled in, the padded copy of a short row (Silero's 3-6 positions) is a few stores, where
  // run-time extents made it a memset call per channel row.
  std::vector<std::optional<int64_t>> static_in(2), static_out(2);
  for (int d = 0; d < (two_d ? 2 : 1); ++d) {
    const size_t axis = static_cast<size_t>(rank - 1 - d);
    if (sx[axis].is_known()) static_in[static_cast<size_t>(d)] = sx[axis].value();
    if (shape[axis].is_known()) static_out[static_cast<size_t>(d)] = shape[axis].value();
  }
  ConvSchedule schedule =
      choose_conv_schedule(arch, DType::kFloat32, out_channels, groups, ax_w.kernel, static_out[0]);
  LayoutMap w_layout(w_shape, schedule.w_layout);

  std::vector<LoopDim> loops;
  std::unique_ptr<HalideBlock> block = conv_block(root, result, rank, loops);
  const ConvArguments arguments = add_conv_arguments(
      *block, group, x, bias, w_layout.marshal(*w->constant()), w_layout, rank, loops, shape);

  std::string key = cat(kConvKey, "\n", group_signature(group), w_layout.to_string(), "\n");
  for (const ConvAxis& axis : axes) {
    key += cat("axis k=", axis.kernel, " s=", axis.stride, " d=", axis.dilation,
               " p=", axis.pad_begin, ",", axis.pad_end, "\n");
  }
  key += conv_key_tail(*block, schedule, static_in, static_out);

  const HalideBlock& spec = *block;
  block->compile(cache, key, [&]() {
    const int lanes = schedule.lanes;
    Var ow("ow"), oh("oh"), m("m"), batch("batch");
    std::vector<Var> vars = {ow, oh, m, batch};
    BuiltPipeline built;
    const ConvImages images = conv_images(spec, arguments, group, bias, w_layout, static_in,
                                          out_channels, vars, built);
    const Halide::ImageParam& x_image = images.x;
    const Halide::ImageParam& w_image = images.w;
    // The input with zeros around it, once per batch item (taps in the padding read zero; the
    // channel is clamped for the tiles that run past the last output channel): zeros, then the
    // input copied over its interior, both dense vector loops. (One select over clamped
    // coordinates compiled to gathers.)
    Var iw("iw"), ih("ih"), ic("ic"), ib("ib");
    Expr in_w = x_image.dim(0).extent(), in_h = x_image.dim(1).extent();
    Expr channels = x_image.dim(2).extent();
    // Without pads and groups, and with whole tiles of a static output width (a tile computes
    // all its positions), no tap or channel leaves the input: the taps read it in place (padded
    // is inlined), with no copy and no zeroing per call.
    const int tile_width =
        schedule.channels_vectorized ? schedule.positions : schedule.lanes * schedule.vectors;
    bool unpadded = groups == 1 && static_out[0] && *static_out[0] % tile_width == 0;
    for (const ConvAxis& axis : axes)
      unpadded = unpadded && axis.pad_begin == 0 && axis.pad_end == 0;
    Func padded("padded");
    RDom interior(0, in_w, 0, in_h, "interior");
    if (unpadded) {
      padded(iw, ih, ic, ib) = x_image(iw, ih, ic, ib);
    } else {
      padded(iw, ih, ic, ib) = 0.f;
      padded(interior.x, interior.y, ic, ib) =
          x_image(interior.x, interior.y, Halide::clamp(ic, 0, channels - 1), ib);
    }
    RDom r(0, static_cast<int>(ax_w.kernel), 0, static_cast<int>(ax_h.kernel), 0,
           static_cast<int>(group_channels), "r");
    auto weight_at = [&](Expr channel, Expr c, Expr ky, Expr kx) {
      std::vector<Expr> logical =
          two_d ? std::vector<Expr>{kx, ky, c, channel} : std::vector<Expr>{kx, c, channel};
      return w_image(w_layout.physical_coords(logical));
    };
    Func prod("prod");
    prod(vars) = images.bias_value;
    // Ungrouped: the input channel is the reduction's alone (no m term, so a vector of output
    // channels reads one broadcast input value, not a gather).
    Expr in_channel =
        groups == 1 ? Expr(r.z)
                    : (m / static_cast<int>(group_out_channels)) * static_cast<int>(group_channels) +
                          r.z;
    prod(vars) += weight_at(m, r.z, r.y, r.x) *
                  padded(ow * static_cast<int>(ax_w.stride) - static_cast<int>(ax_w.pad_begin) +
                             r.x * static_cast<int>(ax_w.dilation),
                         oh * static_cast<int>(ax_h.stride) - static_cast<int>(ax_h.pad_begin) +
                             r.y * static_cast<int>(ax_h.dilation),
                         in_channel, batch);
    auto leaf = [&](const Value* value) {
      return value == root.output(0) ? Expr(prod(vars)) : images.reads_of.at(value);
    };
    Func out("out");
    out(vars) = Halide::cast<float>(group_expr(group, result, leaf));
    auto pin_static_extents = [&]() {
      for (size_t d = 0; d < 2; ++d) {
        if (static_out[d]) {
          out.output_buffer().dim(static_cast<int>(d)).set_extent(static_cast<int>(*static_out[d]));
        }
      }
    };
    auto schedule_padded = [&]() {
      // On the stack: Halide keeps a Func's stack allocations up to 16 KiB there (a streaming
      // model's padded rows, a few KiB) and takes the heap beyond, so a short conv's call does
      // not allocate.
      padded.compute_at(out, batch).store_in(Halide::MemoryType::Stack);
      padded.vectorize(iw, lanes, TailStrategy::GuardWithIf);
      padded.update().vectorize(interior.x, lanes, TailStrategy::GuardWithIf);
    };

    schedule_conv_tiles(out, prod, r, vars, schedule, out_channels);
    if (!unpadded) schedule_padded();
    pin_static_extents();
    built.output = out;
    return built;
  });

  std::string context = block->context_;
  block->output_shape_ = [=](const RunTensors& tensors) {
    const std::vector<int64_t>& in = tensors[0].shape();
    if (static_cast<int>(in.size()) != rank || in[1] != group_channels * groups) {
      raise_invalid_input(cat(context, ": input X has shape ", shape_text(in), ", expected ",
                              group_channels * groups, " channels and rank ", rank));
    }
    std::vector<int64_t> out = {in[0], out_channels};
    for (size_t i = 0; i < axes.size(); ++i) {
      const ConvAxis& axis = axes[i];
      int64_t extent = (axis.kernel - 1) * axis.dilation + 1;
      int64_t padded = in[i + 2] + axis.pad_begin + axis.pad_end;
      if (padded < extent) {
        raise_invalid_input(cat(context, ": spatial axis ", i, ": input size ", in[i + 2],
                                " + pads ", axis.pad_begin, " + ", axis.pad_end,
                                " is smaller than the dilated kernel size ", extent));
      }
      out.push_back((padded - extent) / axis.stride + 1);
    }
    return check_epilogue(out, tensors, arguments.first_epilogue, context);
  };
  block->kind_ =
      cat("halide ", group_op_names(group), " [M=", out_channels, ",C=", group_channels * groups,
          ",k=", ax_w.kernel, two_d ? cat("x", ax_h.kernel) : "", "]");
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

}  // namespace rnnc
