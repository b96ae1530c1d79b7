#include "lowering/lower_copy.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ir/reference/evaluator.h"
#include "lowering/int_operands.h"

namespace rnnc {

namespace {

constexpr size_t kMaxRank = 8;
constexpr size_t kMaxOperands = 5;  // Slice: data, starts, ends, axes, steps
// Pads beyond +-2^62 go to the reference kernel, so position arithmetic here cannot overflow.
constexpr int64_t kMaxPad = int64_t{1} << 62;

// Element sizes the copies move as one machine word.
bool copyable(DType dtype) {
  if (dtype == DType::kString) return false;
  const size_t size = dtype_size(dtype);
  return size == 1 || size == 2 || size == 4 || size == 8;
}

// Calls fn(Word{}) with the unsigned word type of `dtype`'s size (copyable dtypes only).
template <typename Fn>
void dispatch_word(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1:
      fn(uint8_t{});
      return;
    case 2:
      fn(uint16_t{});
      return;
    case 4:
      fn(uint32_t{});
      return;
    default:
      fn(uint64_t{});
      return;
  }
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

  const Node& node_;
};

// ---- Slice ----------------------------------------------------------------------------------

// ceil(distance / |step|) elements for a positive distance, else none; exact for every int64 step.
int64_t step_count(int64_t distance, int64_t step) {
  if (distance <= 0) return 0;
  uint64_t magnitude = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return static_cast<int64_t>((static_cast<uint64_t>(distance) - 1) / magnitude + 1);
}

// The spec's clamping, as the reference's resolve_slice (ir/reference/kernels_tensor.cc):
// negative bounds count from the end; starts clamp to [0, d] going forward and [0, d - 1] going
// backward, ends to [0, d] and [-1, d - 1]. Returns the first position and sets the count.
int64_t resolve_slice(int64_t d, int64_t start, int64_t end, int64_t step, int64_t& count) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
  }
  count = step_count(step > 0 ? end - start : start - end, step);
  return start;
}

// out (row-major, dims) = source[sum index[k] * walks[k]]; the innermost axis is one memcpy
// when it walks by one element.
template <typename Word>
void strided_copy(const Word* source, Word* out, const int64_t* dims, const int64_t* walks,
                  size_t axes) {
  const int64_t row = dims[axes - 1], walk = walks[axes - 1];
  int64_t index[kMaxRank] = {};
  for (;;) {
    if (walk == 1) {
      std::memcpy(out, source, static_cast<size_t>(row) * sizeof(Word));
    } else {
      for (int64_t p = 0; p < row; ++p) out[p] = source[p * walk];
    }
    out += row;
    size_t k = axes - 1;
    for (; k > 0; --k) {
      source += walks[k - 1];
      if (++index[k - 1] < dims[k - 1]) break;
      source -= index[k - 1] * walks[k - 1];
      index[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

class SliceBlock : public CopyBlock {
 public:
  using CopyBlock::CopyBlock;

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    if (rank > static_cast<int64_t>(kMaxRank) || !copyable(input.dtype())) return false;
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
    // Output position p on axis k reads input position first[k] + p * step[k].
    int64_t shape[kMaxRank], first[kMaxRank] = {}, step[kMaxRank];
    for (int64_t k = 0; k < rank; ++k) shape[k] = input.dim(k), step[k] = 1;
    for (size_t i = 0; i < n; ++i) {
      if (steps[i] == 0) return false;
      const size_t axis = static_cast<size_t>(axes[i]);
      first[axis] = resolve_slice(shape[axis], starts[i], ends[i], steps[i], shape[axis]);
      step[axis] = steps[i];
    }
    Tensor::recycle(io.outputs[0], input.dtype(), shape, static_cast<size_t>(rank));
    Tensor& out = io.outputs[0];
    if (out.numel() == 0) return true;
    // Axes of extent 1 drop out; an axis whose walk spans the next axis merges into it, so a
    // window contiguous in the input is one row.
    int64_t dims[kMaxRank], walks[kMaxRank], base = 0, stride = 1;
    size_t merged = 0;
    int64_t strides[kMaxRank];
    for (int64_t k = rank - 1; k >= 0; --k) strides[k] = stride, stride *= input.dim(k);
    for (int64_t k = 0; k < rank; ++k) {
      base += first[k] * strides[k];
      if (shape[k] == 1) continue;
      const int64_t walk = step[k] * strides[k];
      if (merged > 0 && walks[merged - 1] == walk * shape[k]) {
        dims[merged - 1] *= shape[k];
        walks[merged - 1] = walk;
      } else {
        dims[merged] = shape[k];
        walks[merged++] = walk;
      }
    }
    if (merged == 0) dims[merged] = 1, walks[merged++] = 1;
    dispatch_word(input.dtype(), [&](auto word) {
      using Word = decltype(word);
      strided_copy(static_cast<const Word*>(input.raw_data()) + base,
                   static_cast<Word*>(out.raw_data()), dims, walks, merged);
    });
    return true;
  }
};

// ---- Pad ------------------------------------------------------------------------------------

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

// pad_source beyond one period of the mode: wrap and reflect positions far outside [0, d).
[[gnu::noinline]] int64_t far_pad_source(int64_t j, int64_t d, PadMode mode) {
  if (mode == PadMode::kWrap) return (j % d + d) % d;
  const int64_t period = 2 * (d - 1);  // reflect: d-1 steps away from the first element and back
  const int64_t m = (j % period + period) % period;
  return m < d ? m : period - m;
}

// Where a position j outside [0, d) reads from, per mode; -1 for the fill. As the reference's
// pad_source (d > 0 for every mode but constant), without a division within one period.
inline int64_t pad_source(int64_t j, int64_t d, PadMode mode) {
  if (j >= 0 && j < d) return j;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return j < 0 ? 0 : d - 1;
    case PadMode::kWrap:
      if (j >= -d && j < 2 * d) return j < 0 ? j + d : j - d;
      break;
    case PadMode::kReflect:
      if (d == 1) return 0;
      if (j > -d && j < 2 * d - 1) return j < 0 ? -j : 2 * (d - 1) - j;
      break;
  }
  return far_pad_source(j, d, mode);
}

// Where the output positions of one axis read: [interior_begin, interior_end) read p - begin;
// the borders read through tables (an input position, or -1 for the fill).
struct PadAxis {
  int64_t begin = 0;
  int64_t interior_begin = 0, interior_end = 0;
  const int64_t* left = nullptr;   // positions [0, interior_begin)
  const int64_t* right = nullptr;  // positions [interior_end, size)

  int64_t source(int64_t p) const {
    if (p < interior_begin) return left[p];
    return p < interior_end ? p - begin : right[p - interior_end];
  }
};

// The output as rows along `row_axis` (the innermost padded axis), each position of a row `unit`
// words (the unpadded axes after it, merged): a row's interior is one memcpy.
struct PadPlan {
  const int64_t* shape;    // output dims
  const int64_t* strides;  // input strides, in words
  const PadAxis* axes;     // axes 0..row_axis
  size_t row_axis;
  int64_t unit;
};

template <typename Word>
void pad_copy(const Word* source, Word* out, const PadPlan& plan, Word fill) {
  const int64_t row = plan.shape[plan.row_axis], unit = plan.unit;
  const PadAxis& along = plan.axes[plan.row_axis];
  int64_t index[kMaxRank] = {};
  for (;;) {
    // The input row this output row reads, or none when an outer position is the fill.
    int64_t offset = 0;
    for (size_t k = 0; k < plan.row_axis && offset >= 0; ++k) {
      const int64_t from = plan.axes[k].source(index[k]);
      offset = from < 0 ? -1 : offset + from * plan.strides[k];
    }
    if (offset < 0) {
      std::fill_n(out, row * unit, fill);
    } else {
      const Word* input_row = source + offset;
      auto put = [&](Word* to, int64_t from) {
        if (unit == 1) {
          *to = from < 0 ? fill : input_row[from];
        } else if (from < 0) {
          std::fill_n(to, unit, fill);
        } else {
          std::copy_n(input_row + from * unit, unit, to);
        }
      };
      for (int64_t p = 0; p < along.interior_begin; ++p) put(out + p * unit, along.left[p]);
      if (along.interior_end > along.interior_begin) {
        std::memcpy(
            out + along.interior_begin * unit,
            input_row + (along.interior_begin - along.begin) * unit,
            static_cast<size_t>((along.interior_end - along.interior_begin) * unit) * sizeof(Word));
      }
      for (int64_t p = along.interior_end; p < row; ++p) {
        put(out + p * unit, along.right[p - along.interior_end]);
      }
    }
    out += row * unit;
    size_t k = plan.row_axis;
    for (; k > 0; --k) {
      if (++index[k - 1] < plan.shape[k - 1]) break;
      index[k - 1] = 0;
    }
    if (k == 0) return;
  }
}

class PadBlock : public CopyBlock {
 public:
  PadBlock(const Node& node, PadMode mode) : CopyBlock(node), mode_(mode) {}

 protected:
  bool copy(const Tensor* const* operands, BlockIO& io) const override {
    const Tensor& input = *operands[0];
    const int64_t rank = input.rank();
    if (rank > static_cast<int64_t>(kMaxRank) || !copyable(input.dtype())) return false;
    int64_t pads[2 * kMaxRank], axes[kMaxRank];
    size_t n = 0, axis_count = static_cast<size_t>(rank);
    if (!operands[1] || !read_ints(*operands[1], pads, 2 * kMaxRank, n)) return false;
    uint64_t fill_bits = 0;  // 0 / 0.0 / false without a constant_value
    if (operands[2]) {
      const Tensor& value = *operands[2];
      if (value.numel() != 1 || value.dtype() != input.dtype()) return false;
      std::memcpy(&fill_bits, value.raw_data(), dtype_size(value.dtype()));
    }
    if (node_.opset() >= 18 && operands[3]) {
      if (!read_ints(*operands[3], axes, kMaxRank, axis_count) ||
          !normalize_axes(axes, axis_count, rank)) {
        return false;
      }
    } else {
      for (size_t k = 0; k < axis_count; ++k) axes[k] = static_cast<int64_t>(k);
    }
    if (n != 2 * axis_count) return false;
    int64_t shape[kMaxRank], begin[kMaxRank] = {};
    for (int64_t k = 0; k < rank; ++k) shape[k] = input.dim(k);
    for (size_t i = 0; i < axis_count; ++i) {
      const size_t axis = static_cast<size_t>(axes[i]);
      const int64_t before = pads[i], after = pads[i + axis_count], d = input.dim(axis);
      if (std::min(before, after) < -kMaxPad || std::max(before, after) > kMaxPad || d > kMaxPad) {
        return false;
      }
      begin[axis] = before;
      shape[axis] = d + before + after;
      if (shape[axis] < 0 || (mode_ != PadMode::kConstant && d == 0 && shape[axis] > 0)) {
        return false;
      }
    }
    Tensor::recycle(io.outputs[0], input.dtype(), shape, static_cast<size_t>(rank));
    Tensor& out = io.outputs[0];
    if (out.numel() == 0) return true;
    if (rank == 0) shape[0] = 1;  // a scalar is one row of one position
    const size_t axes_total = std::max<size_t>(static_cast<size_t>(rank), 1);
    auto input_dim = [&](size_t k) { return rank == 0 ? int64_t{1} : input.dim(k); };
    int64_t strides[kMaxRank], stride = 1;
    for (size_t k = axes_total; k-- > 0;) strides[k] = stride, stride *= input_dim(k);
    // Rows run along the innermost padded axis (axis 0 when nothing is padded: one memcpy).
    size_t row_axis = axes_total - 1;
    int64_t unit = 1;
    for (; row_axis > 0 && begin[row_axis] == 0 && shape[row_axis] == input_dim(row_axis);
         --row_axis) {
      unit *= shape[row_axis];
    }
    Workspace local;
    Workspace& workspace = io.workspace ? *io.workspace : local;
    workspace.reset();
    PadAxis pad_axes[kMaxRank];
    for (size_t k = 0; k <= row_axis; ++k) {
      PadAxis& axis = pad_axes[k];
      const int64_t d = input_dim(k);
      axis.begin = begin[k];
      axis.interior_begin = std::clamp<int64_t>(begin[k], 0, shape[k]);
      axis.interior_end = std::clamp<int64_t>(begin[k] + d, axis.interior_begin, shape[k]);
      int64_t* border =
          workspace.allocate<int64_t>(axis.interior_begin + shape[k] - axis.interior_end);
      for (int64_t p = 0; p < axis.interior_begin; ++p) {
        border[p] = pad_source(p - begin[k], d, mode_);
      }
      for (int64_t p = axis.interior_end; p < shape[k]; ++p) {
        border[axis.interior_begin + p - axis.interior_end] = pad_source(p - begin[k], d, mode_);
      }
      axis.left = border;
      axis.right = border + axis.interior_begin;
    }
    const PadPlan plan{shape, strides, pad_axes, row_axis, unit};
    dispatch_word(input.dtype(), [&](auto word) {
      using Word = decltype(word);
      Word fill;
      std::memcpy(&fill, &fill_bits, sizeof(Word));
      pad_copy(static_cast<const Word*>(input.raw_data()), static_cast<Word*>(out.raw_data()), plan,
               fill);
    });
    return true;
  }

 private:
  PadMode mode_;
};

}  // namespace

std::unique_ptr<ExecutionBlock> lower_copy(const std::vector<const Node*>& nodes) {
  if (nodes.size() != 1) raise_unsupported("not one node");
  const Node& node = *nodes[0];
  const bool slice = node.op_type() == "Slice" && node.opset() >= 10;
  const bool pad = node.op_type() == "Pad" && node.opset() >= 11;
  if (!node.domain().empty() || (!slice && !pad)) raise_unsupported("not a Slice or Pad");
  const Value* out = node.output(0);
  if (!out || node.num_inputs() == 0 || !node.input(0) || node.num_inputs() > kMaxOperands ||
      out->type.dtype == DType::kString || node.input(0)->type.dtype == DType::kString ||
      out->type.rank() > static_cast<int64_t>(kMaxRank)) {
    raise_unsupported(cat(node.op_type(), " this copy block does not handle"));
  }
  if (slice) return std::make_unique<SliceBlock>(node);
  const std::string mode = node.attr_string("mode", "constant");
  const PadMode pad_mode = mode == "constant"  ? PadMode::kConstant
                           : mode == "edge"    ? PadMode::kEdge
                           : mode == "reflect" ? PadMode::kReflect
                                               : PadMode::kWrap;
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    raise_unsupported("Pad mode the reference reports");
  }
  return std::make_unique<PadBlock>(node, pad_mode);
}

}  // namespace rnnc
