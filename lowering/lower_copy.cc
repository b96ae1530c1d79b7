#include "lowering/lower_copy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ir/reference/evaluator.h"
#include "lowering/aot_writer.h"
#include "lowering/core/copy_kernels.h"
#include "lowering/int_operands.h"

namespace rnnc {

namespace {

constexpr size_t kMaxRank = 8;
constexpr size_t kMaxOperands = 5;  // Slice: data, starts, ends, axes, steps

// Element sizes the copies move as one machine word.
bool copyable(DType dtype) {
  if (dtype == DType::kString) return false;
  const size_t size = dtype_size(dtype);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

// A block of one node whose operands are constants or block inputs. run() takes the fast path
// when copy() accepts the operands, else runs the reference kernel (results and errors alike).
class CopyBlock : public ExecutionBlock {
 public:
  explicit CopyBlock(const Node& node) : node_(node) {}

  std::string kind() const override { return "copy " + node_.op_type(); }

  void run(BlockIO& io) const override {
    const Tensor* operands[kMaxOperands] = {};
    for (size_t i = 0; i < node_.num_inputs(); ++i) {
      const Value* value = node_.input(i);
      if (!value) continue;
      operands[i] = input_tensor(io, value);
      RNNC_CHECK(operands[i], kind(), " block was not given input ", i);
    }
    RNNC_CHECK(operands[0], kind(), " block has no data input");
    io.outputs.resize(1);
    if (!copy(operands, io)) {
      // Strings, odd element sizes and invalid operands: the reference computes the result or
      // raises the error.
      std::vector<const Tensor*> node_inputs(operands, operands + node_.num_inputs());
      std::vector<Tensor> results =
          evaluate_node(node_, node_inputs, [](const Value*) -> const Tensor* { return nullptr; });
      io.outputs[0] = std::move(results.at(0));
    }
  }

 protected:
  // Writes io.outputs[0] and returns true, or returns false having written nothing.
  virtual bool copy(const Tensor* const* operands, BlockIO& io) const = 0;

  // A run's copy plan depends on the data input's element type and shape and on some integer
  // operands' values (Slice's starts, ends, axes and steps; Pad's pads and axes), never on the
  // data: each session keeps its last plan (io.state) and reuses it while they repeat, as a
  // stream's chunks do.
  struct PlanMemo : BlockRunState {
    static constexpr size_t kMaxKey = 2 + kMaxRank + kMaxOperands * (2 + 2 * kMaxRank);
    std::array<int64_t, kMaxKey> key{};
    size_t key_size = 0;
    bool made = false;    // `usable` and the plans are those of `key`
    bool usable = false;  // the plan was made (else the reference kernel runs)
    rn_slice_plan slice{};
    rn_pad_plan pad{};
    std::vector<int64_t> tables;  // pad's axes point into it
  };

  // This run's memo: `made` when the data input and the operands in `plan_operands` (a bit per
  // operand index) are those of the plan it holds; else keyed to this run, for the caller to fill.
  PlanMemo& plan_memo(const Tensor* const* operands, unsigned plan_operands, BlockIO& io) const {
    PlanMemo& memo = run_state<PlanMemo>(io);
    int64_t key[PlanMemo::kMaxKey];
    size_t n = 0;
    const Tensor& input = *operands[0];
    bool keyed = input.rank() <= static_cast<int64_t>(kMaxRank);
    if (keyed) {
      key[n++] = static_cast<int64_t>(input.dtype());
      key[n++] = input.rank();
      for (int64_t dim : input.shape()) key[n++] = dim;
    }
    for (size_t i = 1; keyed && i < node_.num_inputs(); ++i) {
      if (!(plan_operands >> i & 1u)) continue;
      if (!operands[i]) {
        key[n++] = -1;
        continue;
      }
      key[n++] = static_cast<int64_t>(operands[i]->dtype());
      size_t count = 0;
      keyed = read_ints(*operands[i], key + n + 1, 2 * kMaxRank, count);
      key[n] = static_cast<int64_t>(count);
      n += 1 + count;
    }
    if (keyed && memo.made && n == memo.key_size && std::equal(key, key + n, memo.key.begin())) {
      return memo;
    }
    memo.made = false;
    memo.key_size = keyed ? n : 0;  // an unkeyable run's plan is never reused
    std::copy_n(key, memo.key_size, memo.key.begin());
    return memo;
  }

  // For write_aot: operand `index` as integers, which must be a constant (Slice's axes and
  // steps, Pad's axes: the driver needs them to check the operands at export time).
  std::vector<int64_t> constant_ints(size_t index, const char* name) const {
    const Value* value = index < node_.num_inputs() ? node_.input(index) : nullptr;
    if (!value) return {};
    if (!value->is_constant() || value->is_graph_input()) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": input '", name,
                            "' is computed at run time; the library takes a constant ", name));
    }
    const Tensor& tensor = *value->constant();
    int64_t values[2 * kMaxRank];
    size_t count = 0;
    if (!read_ints(tensor, values, 2 * kMaxRank, count)) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": input '", name,
                            "' is not an int32 or int64 tensor of at most ", 2 * kMaxRank,
                            " elements"));
    }
    return {values, values + count};
  }

  // For write_aot: operand `index` (Slice's starts and ends, Pad's pads) as an int64_t array
  // expression of `count` entries: a literal for a constant; for a run-time tensor (int32 or
  // int64 with a static element count), a local array `code` fills when the block runs.
  std::string aot_ints(AotWriter& writer, size_t index, const char* name, std::string& code,
                       size_t& count) const {
    const Value* value = node_.input(index);
    if (value->is_constant() && !value->is_graph_input()) {
      const std::vector<int64_t> values = constant_ints(index, name);
      count = values.size();
      return c_array(values);
    }
    return run_time_ints(writer, node_, value, name, 2 * kMaxRank, code, count);
  }

  // For write_aot: an axes operand (Slice's, Pad's from opset 18) normalized against `rank`: a
  // literal for a constant (an invalid one is the model's error), else a local array the block's
  // code normalizes when it runs, failing the run for an axis out of range or named twice.
  std::string aot_axes(AotWriter& writer, size_t index, int64_t rank, std::string& code,
                       size_t& count) const {
    const Value* value = node_.input(index);
    if (value->is_constant() && !value->is_graph_input()) {
      std::vector<int64_t> axes = constant_ints(index, "axes");
      count = axes.size();
      if (!normalize_axes(axes.data(), axes.size(), rank)) {
        raise_invalid_model(cat(node_.describe(), ": 'axes' names an axis twice or out of range ",
                                "for rank ", rank));
      }
      return c_array(axes);
    }
    const std::string axes = run_time_ints(writer, node_, value, "axes", kMaxRank, code, count);
    code += cat("  if (!rn_normalize_axes(", axes, ", ", count, ", ", rank,
                ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                c_string_literal(cat(node_.describe(), ": 'axes' names an axis twice or out of ",
                                     "range for rank ", rank)),
                ");\n");
    return axes;
  }

  static std::string c_iota(size_t count) {
    std::vector<int64_t> values;
    for (size_t i = 0; i < count; ++i) values.push_back(static_cast<int64_t>(i));
    return c_array(values);
  }

  // The data input's shape as C expressions, its element type and rank checked.
  void check_aot_operands(AotWriter& writer, const AotBlockIO& io,
                          std::vector<std::string>& input) const {
    const Value* data = node_.input(0);
    if (!copyable(data->type.dtype)) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": element type ",
                            dtype_onnx_name(data->type.dtype)));
    }
    input = writer.shape(data);
    const int64_t output_rank = io.outputs[0]->type.rank();
    if (input.size() > kMaxRank || output_rank != static_cast<int64_t>(input.size())) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": input rank ",
                            input.size(), ", output rank ", output_rank));
    }
  }

  // Generated code after a made plan named `plan`: the output's data-dependent dims come from
  // the plan, its extents must equal the plan's, then `copy` (which closes the block's scope).
  void finish_aot(AotWriter& writer, const AotBlockIO& io, const std::string& plan,
                  const std::string& copy) const {
    writer.define_shape(io.outputs[0], plan + ".shape");
    const std::vector<std::string> output = writer.shape(io.outputs[0]);
    writer.code(cat("  RN_TRY(rn_check_shape(ctx, ", output.size(), ", ", plan, ".shape, ",
                    c_extents(output), ", ",
                    c_string_literal(cat(node_.describe(), ": the result")), "));\n", copy));
  }

  // Writes the plan's strided copy of `input` into io.outputs[0], recycled to the plan's shape
  // (Slice, Transpose, Expand).
  static void copy_planned(const rn_slice_plan& plan, const Tensor& input, BlockIO& io) {
    Tensor::recycle(io.outputs[0], input.dtype(), plan.shape, static_cast<size_t>(plan.rank));
    rn_slice_copy(&plan, static_cast<int>(dtype_size(input.dtype())), input.raw_data(),
                  io.outputs[0].raw_data());
  }

  // For write_aot: the same, after the plan named `plan` was made (finish_aot's checks first).
  void finish_planned_aot(AotWriter& writer, const AotBlockIO& io, const std::string& plan) const {
    finish_aot(writer, io, plan,
               cat("  rn_slice_copy(&", plan, ", ", dtype_size(node_.input(0)->type.dtype), ", ",
                   writer.value(node_.input(0)), ", ", writer.value(io.outputs[0]), ");\n}\n"));
  }

  // C expressions (a shape's extents) as an int64_t array literal; {0} for none (C has no empty
  // initializer).
  static std::string c_extents(const std::vector<std::string>& extents) {
    std::string text;
    for (const std::string& extent : extents) text += (text.empty() ? "" : ", ") + extent;
    return cat("(const int64_t[]){", text.empty() ? "0" : text, "}");
  }

  static std::string c_array(const std::vector<int64_t>& values) {
    std::vector<std::string> literals;
    for (int64_t value : values) literals.push_back(cat(value, "LL"));
    return c_extents(literals);
  }

  const Node& node_;
};

// ---- Slice ----------------------------------------------------------------------------------

// The plan of a Slice of an input of `shape` whose starts, ends, axes and steps are
// operands[1..4] (axes and steps may be null); false when they are not usable integers.
bool make_slice_plan(const Tensor* const* operands, const int64_t* shape, int64_t rank,
                     rn_slice_plan& plan) {
  if (rank > static_cast<int64_t>(kMaxRank)) return false;
  int64_t starts[kMaxRank], ends[kMaxRank], axes[kMaxRank], steps[kMaxRank];
  size_t n = 0, count = 0;
  if (!operands[1] || !operands[2] || !read_ints(*operands[1], starts, kMaxRank, n) ||
      !read_ints(*operands[2], ends, kMaxRank, count) || count != n) {
    return false;
  }
  if (operands[3]) {
    if (!read_ints(*operands[3], axes, kMaxRank, count) || count != n) return false;
  } else {
    for (size_t i = 0; i < n; ++i) axes[i] = static_cast<int64_t>(i);
  }
  if (operands[4]) {
    if (!read_ints(*operands[4], steps, kMaxRank, count) || count != n) return false;
  } else {
    std::fill_n(steps, n, 1);
  }
  if (!normalize_axes(axes, n, rank)) return false;
  return rn_slice_plan_make(&plan, static_cast<int>(rank), shape, static_cast<int>(n), starts, ends,
                            axes, steps) != 0;
}

// A window that is one contiguous run of its input (every axis before the first one it keeps
// more than one position of has one position, every axis after it is whole).
bool contiguous(const rn_slice_plan& plan) {
  return plan.numel > 0 && plan.merged == 1 && plan.walks[0] == 1;
}

class SliceBlock : public CopyBlock {
 public:
  // view: the graph fixes the input's shape and its constant operands select one contiguous run
  // of it (slice_is_a_view), so the output aliases the input instead of copying it.
  SliceBlock(const Node& node, bool view) : CopyBlock(node), view_(view) {}

  std::string kind() const override { return view_ ? "view Slice" : "copy Slice"; }
  bool aliases_input() const override { return view_; }

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    if (!copyable(input.dtype())) return false;
    PlanMemo& memo = plan_memo(operands, 0b11110, io);
    if (!memo.made) {
      memo.usable = make_slice_plan(operands, input.shape().data(), rank, memo.slice);
      memo.made = memo.key_size > 0;
    }
    if (!memo.usable) return false;
    const rn_slice_plan& plan = memo.slice;
    Tensor& out = io.outputs[0];
    // A caller's output buffer (a writable borrow) is filled; else a view is the alias.
    const bool caller_buffer =
        out.borrowed() && out.exclusive() &&
        out.reusable_as(input.dtype(), plan.shape, static_cast<size_t>(rank));
    if (view_ && !caller_buffer && contiguous(plan)) {
      out.alias(input, plan.base, plan.shape, static_cast<size_t>(rank));
      return true;
    }
    copy_planned(plan, input, io);
    return true;
  }

  // The same plan and copy in the driver. Every operand may be a run-time tensor: the output's
  // extents along the sliced axes are then data-dependent dims the plan defines.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    std::vector<std::string> input;
    check_aot_operands(writer, io, input);
    const int64_t rank = static_cast<int64_t>(input.size());
    std::string operands;
    size_t n = 0, ends_count = 0;
    const std::string starts = aot_ints(writer, 1, "starts", operands, n);
    const std::string ends = aot_ints(writer, 2, "ends", operands, ends_count);
    size_t axes_count = n, steps_count = n;
    const std::string axes = node_.num_inputs() > 3 && node_.input(3)
                                 ? aot_axes(writer, 3, rank, operands, axes_count)
                                 : c_iota(n);
    const std::string steps = node_.num_inputs() > 4 && node_.input(4)
                                  ? aot_ints(writer, 4, "steps", operands, steps_count)
                                  : c_array(std::vector<int64_t>(n, 1));
    if (ends_count != n || axes_count != n || steps_count != n) {
      raise_invalid_model(cat(node_.describe(), ": starts, ends, axes and steps disagree (", n,
                              ", ", ends_count, ", ", axes_count, ", ", steps_count,
                              " entries)"));
    }
    const std::string plan = writer.fresh("slice");
    writer.code(cat("{\n", operands, "  rn_slice_plan ", plan, ";\n  if (!rn_slice_plan_make(&",
                    plan, ", ", rank, ", ", c_extents(input), ", ", n, ", ", starts, ", ", ends,
                    ", ", axes, ", ", steps,
                    ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                    c_string_literal(cat(node_.describe(), ": a step is 0")), ");\n"));
    finish_planned_aot(writer, io, plan);
  }

 private:
  bool view_;
};

// ---- Transpose and Expand ------------------------------------------------------------------

// The axes' order: the perm attribute, else reversed.
std::vector<int64_t> transpose_perm(const Node& node, int64_t rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  }
  return perm;
}

class TransposeBlock : public CopyBlock {
 public:
  using CopyBlock::CopyBlock;

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    if (rank > static_cast<int64_t>(kMaxRank) || !copyable(input.dtype())) return false;
    PlanMemo& memo = plan_memo(operands, 0, io);
    if (!memo.made) {
      const std::vector<int64_t> perm = transpose_perm(node_, rank);
      memo.usable = static_cast<int64_t>(perm.size()) == rank &&
                    rn_transpose_plan_make(&memo.slice, static_cast<int>(rank),
                                           input.shape().data(), perm.data()) != 0;
      memo.made = memo.key_size > 0;
    }
    if (!memo.usable) return false;
    copy_planned(memo.slice, input, io);
    return true;
  }

  // The same plan and copy in the driver; the perm is an attribute, so a constant.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    std::vector<std::string> input;
    check_aot_operands(writer, io, input);
    const std::vector<int64_t> perm = transpose_perm(node_, static_cast<int64_t>(input.size()));
    if (perm.size() != input.size()) {
      raise_invalid_model(cat(node_.describe(), ": 'perm' has ", perm.size(),
                              " entries for an input of rank ", input.size()));
    }
    const std::string plan = writer.fresh("transpose");
    writer.code(cat("{\n  rn_slice_plan ", plan, ";\n  if (!rn_transpose_plan_make(&", plan, ", ",
                    input.size(), ", ", c_extents(input), ", ", c_array(perm),
                    ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                    c_string_literal(cat(node_.describe(), ": 'perm' is not a permutation")),
                    ");\n"));
    finish_planned_aot(writer, io, plan);
  }
};

class ExpandBlock : public CopyBlock {
 public:
  using CopyBlock::CopyBlock;

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    int64_t shape[kMaxRank];
    size_t n = 0;
    if (rank > static_cast<int64_t>(kMaxRank) || !copyable(input.dtype()) || !operands[1] ||
        operands[1]->dtype() != DType::kInt64 || !read_ints(*operands[1], shape, kMaxRank, n)) {
      return false;
    }
    PlanMemo& memo = plan_memo(operands, 0b10, io);
    if (!memo.made) {
      memo.usable = rn_expand_plan_make(&memo.slice, static_cast<int>(rank), input.shape().data(),
                                        static_cast<int>(n), shape) != 0;
      memo.made = memo.key_size > 0;
    }
    if (!memo.usable) return false;
    copy_planned(memo.slice, input, io);
    return true;
  }

  // The same plan and copy in the driver. The shape operand may be a run-time tensor (of a
  // static element count: the output's rank); the output's extents then come from the plan.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    const Value* data = node_.input(0);
    if (!copyable(data->type.dtype)) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": element type ",
                            dtype_onnx_name(data->type.dtype)));
    }
    const std::vector<std::string> input = writer.shape(data);
    const int64_t output_rank = io.outputs[0]->type.rank();
    std::string operands;
    size_t n = 0;
    const std::string shape = aot_ints(writer, 1, "shape", operands, n);
    if (input.size() > kMaxRank || output_rank != static_cast<int64_t>(std::max(input.size(), n))) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": input rank ",
                            input.size(), ", ", n, " shape entries, output rank ", output_rank));
    }
    const std::string plan = writer.fresh("expand");
    writer.code(
        cat("{\n", operands, "  rn_slice_plan ", plan, ";\n  if (!rn_expand_plan_make(&", plan,
            ", ", input.size(), ", ", c_extents(input), ", ", n, ", ", shape,
            ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
            c_string_literal(cat(node_.describe(), ": 'shape' does not broadcast with the input")),
            ");\n"));
    finish_planned_aot(writer, io, plan);
  }
};

// ---- Pad ------------------------------------------------------------------------------------

class PadBlock : public CopyBlock {
 public:
  PadBlock(const Node& node, int mode) : CopyBlock(node), mode_(mode) {}

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    if (rank > static_cast<int64_t>(kMaxRank) || !copyable(input.dtype())) return false;
    uint64_t fill_bits = 0;  // 0 / 0.0 / false without a constant_value
    if (operands[2]) {
      const Tensor& value = *operands[2];
      if (value.numel() != 1 || value.dtype() != input.dtype()) return false;
      std::memcpy(&fill_bits, value.raw_data(), dtype_size(value.dtype()));
    }
    PlanMemo& memo = plan_memo(operands, 0b1010, io);
    if (!memo.made) {
      memo.usable = make_pad_plan(operands, input, memo);
      memo.made = memo.key_size > 0;
    }
    if (!memo.usable) return false;
    const rn_pad_plan& plan = memo.pad;
    Tensor::recycle(io.outputs[0], input.dtype(), plan.shape, static_cast<size_t>(rank));
    rn_pad_copy(&plan, static_cast<int>(dtype_size(input.dtype())), input.raw_data(),
                io.outputs[0].raw_data(), fill_bits);
    return true;
  }

  // The plan and its tables for pads operands[1] (and axes operands[3] from opset 18).
  bool make_pad_plan(const Tensor* const* operands, const Tensor& input, PlanMemo& memo) const {
    const int64_t rank = input.rank();
    int64_t pads[2 * kMaxRank], axes[kMaxRank];
    size_t n = 0, axis_count = static_cast<size_t>(rank);
    if (!operands[1] || !read_ints(*operands[1], pads, 2 * kMaxRank, n)) return false;
    if (node_.opset() >= 18 && operands[3]) {
      if (!read_ints(*operands[3], axes, kMaxRank, axis_count) ||
          !normalize_axes(axes, axis_count, rank)) {
        return false;
      }
    } else {
      for (size_t k = 0; k < axis_count; ++k) axes[k] = static_cast<int64_t>(k);
    }
    if (n != 2 * axis_count) return false;
    int64_t before[kMaxRank] = {}, after[kMaxRank] = {};
    for (size_t i = 0; i < axis_count; ++i) {
      before[axes[i]] = pads[i];
      after[axes[i]] = pads[i + axis_count];
    }
    if (!rn_pad_plan_make(&memo.pad, mode_, static_cast<int>(rank), input.shape().data(), before,
                          after)) {
      return false;
    }
    memo.tables.assign(static_cast<size_t>(std::max<int64_t>(memo.pad.table_entries, 1)), 0);
    rn_pad_plan_tables(&memo.pad, memo.tables.data());
    return true;
  }

  // The same plan, tables and copy in the driver. Every operand may be a run-time tensor: the
  // output's extents along the padded axes are then data-dependent dims the plan defines.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    std::vector<std::string> input;
    check_aot_operands(writer, io, input);
    const size_t rank = input.size();
    const size_t element = dtype_size(node_.input(0)->type.dtype);
    std::string operands;
    size_t n = 0, axes_count = rank;
    const std::string pads = aot_ints(writer, 1, "pads", operands, n);
    const std::string axes = node_.opset() >= 18 && node_.num_inputs() > 3 && node_.input(3)
                                 ? aot_axes(writer, 3, static_cast<int64_t>(rank), operands,
                                            axes_count)
                                 : c_iota(rank);
    if (n != 2 * axes_count) {
      raise_invalid_model(cat(node_.describe(), ": 'pads' has ", n, " entries for ", axes_count,
                              " axes"));
    }
    // The fill's bits (0 / 0.0 / false without a constant_value), from the weights or the run.
    const std::string fill = writer.fresh("fill");
    operands += cat("  uint64_t ", fill, " = 0;\n");
    if (node_.num_inputs() > 2 && node_.input(2)) {
      const Value* value = node_.input(2);
      const bool scalar = value->type.shape && shape_is_known(*value->type.shape) &&
                          shape_values(*value->type.shape) ==
                              std::vector<int64_t>(value->type.shape->size(), 1);
      if (!scalar || value->type.dtype != node_.input(0)->type.dtype) {
        raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": constant_value is ",
                              value->type.to_string(), "; the library takes one element of the ",
                              "data's type"));
      }
      operands += cat("  memcpy(&", fill, ", ", writer.value(value), ", ", element, ");\n");
    }
    // before[axes[i]] = pads[i], after[axes[i]] = pads[i + n/2]; unlisted axes are not padded.
    const std::string before = writer.fresh("before"), after = writer.fresh("after");
    const size_t slots = std::max<size_t>(rank, 1);
    operands += cat("  int64_t ", before, "[", slots, "] = {0}, ", after, "[", slots, "] = {0};\n",
                    "  for (int i = 0; i < ", axes_count, "; ++i) {\n    ", before, "[", axes,
                    "[i]] = ", pads, "[i];\n    ", after, "[", axes, "[i]] = ", pads, "[i + ",
                    axes_count, "];\n  }\n");
    const std::string plan = writer.fresh("pad");
    writer.code(cat("{\n", operands, "  rn_pad_plan ", plan, ";\n  if (!rn_pad_plan_make(&", plan,
                    ", ", mode_, ", ", rank, ", ", c_extents(input), ", ", before, ", ", after,
                    ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
                    c_string_literal(cat(node_.describe(),
                                         ": the pads give a negative extent or pad an "
                                         "empty axis")),
                    ");\n"));
    const std::string tables = writer.fresh("tables");
    finish_aot(writer, io, plan,
               cat("  if (", plan, ".numel > 0) {\n    int64_t* ", tables, " = (int64_t*)",
                   writer.scratch(cat("8 * ", plan, ".table_entries")), ";\n    if (!", tables,
                   ") return rn_out_of_memory(ctx);\n    rn_pad_plan_tables(&", plan, ", ", tables,
                   ");\n    rn_pad_copy(&", plan, ", ", element, ", ", writer.value(node_.input(0)),
                   ", ", writer.value(io.outputs[0]), ", ", fill, ");\n  }\n}\n"));
  }

 private:
  int mode_;  // RN_PAD_*
};

// ---- ScatterND -------------------------------------------------------------------------------

// The data with the updates' slices written at the indices (reduction "none"). Given the data's
// own buffer (the executor's in-place hand-over: io.inputs[data] is &io.outputs[0]) it writes
// only the slices; otherwise one copy of the data, then the slices.
class ScatterNDBlock : public CopyBlock {
 public:
  using CopyBlock::CopyBlock;

  int in_place_input() const override {
    const Value* data = node_.input(0);
    if (data == node_.input(1) || data == node_.input(2)) return -1;
    const auto it = std::find(inputs.begin(), inputs.end(), data);
    return it == inputs.end() ? -1 : static_cast<int>(it - inputs.begin());
  }

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& data = *operands[0];
    const Tensor* indices = operands[1];
    const Tensor* updates = operands[2];
    const int64_t rank = data.rank();
    if (!indices || !updates || rank < 1 || rank > static_cast<int64_t>(kMaxRank) ||
        !copyable(data.dtype()) || updates->dtype() != data.dtype() ||
        indices->dtype() != DType::kInt64 || indices->rank() < 1) {
      return false;
    }
    // updates: indices.shape[:-1] + data.shape[k:]
    const int64_t k = indices->dim(indices->rank() - 1);
    if (k < 1 || k > rank || updates->rank() != indices->rank() - 1 + rank - k) return false;
    for (int64_t d = 0; d + 1 < indices->rank(); ++d) {
      if (updates->dim(d) != indices->dim(d)) return false;
    }
    for (int64_t d = k; d < rank; ++d) {
      if (updates->dim(indices->rank() - 1 + d - k) != data.dim(d)) return false;
    }
    const int64_t tuples = indices->numel() / k;
    int64_t slice = 1;
    for (int64_t d = k; d < rank; ++d) slice *= data.dim(d);
    Workspace local;
    Workspace& workspace = io.workspace ? *io.workspace : local;
    workspace.reset();
    int64_t* offsets = workspace.allocate_uninitialized<int64_t>(std::max<int64_t>(tuples, 1));
    if (!rn_scatter_nd_offsets(static_cast<int>(rank), data.shape().data(), static_cast<int>(k),
                               tuples, indices->data<int64_t>(), offsets)) {
      return false;
    }
    if (&data != &io.outputs[0]) {
      Tensor::recycle(io.outputs[0], data.dtype(), data.shape().data(), static_cast<size_t>(rank));
      if (data.nbytes() > 0) std::memcpy(io.outputs[0].raw_data(), data.raw_data(), data.nbytes());
    }
    rn_scatter_nd_write(static_cast<int>(dtype_size(data.dtype())), tuples, offsets, slice,
                        updates->raw_data(), io.outputs[0].raw_data());
    return true;
  }

  // The same offsets and writes in the driver, over one copy of the data (the driver's buffers
  // are not handed over). Indices and updates may be constants or run-time tensors; the tuple
  // length k must be a known dim.
  void write_aot(AotWriter& writer, const AotBlockIO& io) const override {
    if (io.outputs.empty() || !io.outputs[0]) return;
    std::vector<std::string> data;
    check_aot_operands(writer, io, data);
    const Value* indices = node_.input(1);
    const Value* updates = node_.input(2);
    const std::vector<std::string> index_shape = writer.shape(indices);
    const std::vector<std::string> update_shape = writer.shape(updates);
    const int64_t rank = static_cast<int64_t>(data.size());
    const int64_t q = static_cast<int64_t>(index_shape.size());
    const Dim* last = q > 0 ? &indices->type.shape->back() : nullptr;
    if (indices->type.dtype != DType::kInt64 || updates->type.dtype != node_.input(0)->type.dtype ||
        !last || !last->is_known()) {
      raise_unsupported(cat("ahead-of-time export: ", node_.describe(), ": indices ",
                            indices->type.to_string(), ", updates ", updates->type.to_string(),
                            "; the library takes int64 indices whose last dim is a number"));
    }
    const int64_t k = last->value();
    if (k < 1 || k > rank || static_cast<int64_t>(update_shape.size()) != q - 1 + rank - k) {
      raise_invalid_model(cat(node_.describe(), ": indices ", indices->type.to_string(),
                              " and updates ", updates->type.to_string(),
                              " do not fit data of rank ", rank));
    }
    auto operand = [&](const Value* value) {
      return value->is_constant() && !value->is_graph_input() ? writer.constant(*value->constant())
                                                              : writer.value(value);
    };
    const size_t element = dtype_size(node_.input(0)->type.dtype);
    const std::string tuples = writer.fresh("tuples"), slice = writer.fresh("slice");
    const std::string offsets = writer.fresh("offsets");
    std::string code = cat("{\n  int64_t ", tuples, " = 1, ", slice, " = 1;\n");
    for (int64_t d = 0; d + 1 < q; ++d) code += cat("  ", tuples, " *= ", index_shape[d], ";\n");
    for (int64_t d = k; d < rank; ++d) code += cat("  ", slice, " *= ", data[d], ";\n");
    // updates: indices.shape[:-1] + data.shape[k:]
    std::vector<std::string> expected(index_shape.begin(), index_shape.end() - 1);
    expected.insert(expected.end(), data.begin() + k, data.end());
    std::string expected_text, actual_text;
    for (size_t d = 0; d < expected.size(); ++d) {
      expected_text += (d ? ", " : "") + expected[d];
      actual_text += (d ? ", " : "") + update_shape[d];
    }
    if (!expected.empty()) {
      code += cat("  RN_TRY(rn_check_shape(ctx, ", expected.size(), ", (const int64_t[]){",
                  actual_text, "}, (const int64_t[]){", expected_text, "}, ",
                  c_string_literal(cat(node_.describe(), ": input 2 'updates'")), "));\n");
    }
    std::string data_shape, bytes = cat(element);
    for (const std::string& extent : data) {
      data_shape += (data_shape.empty() ? "" : ", ") + extent;
      bytes += " * " + extent;
    }
    code +=
        cat("  int64_t* ", offsets, " = (int64_t*)",
            writer.scratch(cat("8 * (", tuples, " > 0 ? ", tuples, " : 1)")), ";\n  if (!", offsets,
            ") return rn_out_of_memory(ctx);\n  if (!rn_scatter_nd_offsets(", rank,
            ", (const int64_t[]){", data_shape, "}, ", k, ", ", tuples, ", (const int64_t*)",
            operand(indices), ", ", offsets,
            ")) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"%s\", ",
            c_string_literal(cat(node_.describe(), ": an index is out of range")), ");\n",
            "  memcpy(", writer.value(io.outputs[0]), ", ", operand(node_.input(0)), ", (size_t)(",
            bytes, "));\n  rn_scatter_nd_write(", element, ", ", tuples, ", ", offsets, ", ", slice,
            ", ", operand(updates), ", ", writer.value(io.outputs[0]), ");\n}\n");
    writer.code(code);
  }
};

// Whether a Slice's window is one contiguous run of its input for every run: the input's shape
// is static and starts, ends, axes and steps are constants.
bool slice_is_a_view(const Node& node) {
  const Value* data = node.input(0);
  if (!data->type.shape || !copyable(data->type.dtype)) return false;
  std::vector<int64_t> shape;
  for (const Dim& dim : *data->type.shape) {
    if (!dim.is_known()) return false;
    shape.push_back(dim.value());
  }
  const Tensor* operands[kMaxOperands] = {};
  for (size_t i = 1; i < node.num_inputs(); ++i) {
    const Value* value = node.input(i);
    if (!value) continue;
    if (!value->is_constant() || value->is_graph_input()) return false;
    operands[i] = value->constant().get();
  }
  rn_slice_plan plan;
  return make_slice_plan(operands, shape.data(), static_cast<int64_t>(shape.size()), plan) &&
         contiguous(plan);
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_copy(const std::vector<const Node*>& nodes) {
  if (nodes.size() != 1) raise_unsupported("not one node");
  const Node& node = *nodes[0];
  const bool slice = node.op_type() == "Slice" && node.opset() >= 10;
  const bool transpose = node.op_type() == "Transpose";
  const bool expand = node.op_type() == "Expand" && node.num_inputs() == 2;
  const bool pad = node.op_type() == "Pad" && node.opset() >= 11;
  const bool scatter = node.op_type() == "ScatterND" &&
                       node.attr_string("reduction", "none") == "none" && node.num_inputs() == 3;
  if (!node.domain().empty() || (!slice && !pad && !scatter && !transpose && !expand)) {
    raise_unsupported("not a Slice, Pad, Transpose, Expand or ScatterND without reduction");
  }
  const Value* out = node.output(0);
  if (!out || node.num_inputs() == 0 || !node.input(0) || node.num_inputs() > kMaxOperands ||
      out->type.dtype == DType::kString || node.input(0)->type.dtype == DType::kString ||
      out->type.rank() > static_cast<int64_t>(kMaxRank)) {
    raise_unsupported(cat(node.op_type(), " this copy block does not handle"));
  }
  if (scatter) return std::make_unique<ScatterNDBlock>(node);
  if (transpose) return std::make_unique<TransposeBlock>(node);
  if (expand) return std::make_unique<ExpandBlock>(node);
  if (slice) return std::make_unique<SliceBlock>(node, slice_is_a_view(node));
  const std::string mode = node.attr_string("mode", "constant");
  const int pad_mode = mode == "constant"  ? RN_PAD_CONSTANT
                       : mode == "edge"    ? RN_PAD_EDGE
                       : mode == "reflect" ? RN_PAD_REFLECT
                                           : RN_PAD_WRAP;
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    raise_unsupported("Pad mode the reference reports");
  }
  return std::make_unique<PadBlock>(node, pad_mode);
}

}  // namespace rnnc
