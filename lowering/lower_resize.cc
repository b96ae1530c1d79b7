#include "lowering/lower_resize.h"

#include <algorithm>
#include <cmath>

#include "ir/error.h"
#include "ir/shape_inference/resize.h"
#include "lowering/halide_block.h"
#include "lowering/lower_dense.h"
#include "lowering/lower_elementwise.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;

// Bump when the code a node compiles to changes, so stale cached kernels are not reused.
constexpr const char* kResizeKey = "rnnc resize";

// One resized axis: per output position, `taps` input indices and their weights (positions with
// fewer taps are padded with weight 0 on their first index).
struct AxisTable {
  int64_t in = 1, out = 1;
  int taps = 1;
  Tensor index, weight;  // int32 [taps, out], float32 [taps, out]
};

AxisTable axis_table(const ResizeAttributes& attributes, int64_t in, int64_t out, double scale,
                     double length) {
  AxisTable table;
  table.in = in;
  table.out = out;
  // The reference kernel's taps (ir/shape_inference/resize.h); tf_crop_and_resize, the one mode
  // with positions outside the input, is not lowered.
  std::vector<std::vector<Tap>> samples;
  for (int64_t o = 0; o < out; ++o) {
    samples.push_back(sample_axis(attributes, o, in, out, scale, length, 0, 1).taps);
    table.taps = std::max(table.taps, static_cast<int>(samples.back().size()));
  }
  table.index = Tensor(DType::kInt32, {table.taps, out});
  table.weight = Tensor(DType::kFloat32, {table.taps, out});
  for (int64_t o = 0; o < out; ++o) {
    const auto& taps = samples[static_cast<size_t>(o)];
    for (int t = 0; t < table.taps; ++t) {
      const bool real = t < static_cast<int>(taps.size());
      const size_t at = static_cast<size_t>(real ? t : 0);
      table.index.data<int32_t>()[t * out + o] =
          taps.empty() ? 0 : static_cast<int32_t>(taps[at].index);
      table.weight.data<float>()[t * out + o] = real ? static_cast<float>(taps[at].weight) : 0.f;
    }
  }
  return table;
}

std::optional<std::vector<double>> constant_doubles(const Node& node, int input) {
  if (input < 0 || static_cast<size_t>(input) >= node.num_inputs() ||
      !node.input(static_cast<size_t>(input))) {
    return std::nullopt;
  }
  const Value* value = node.input(static_cast<size_t>(input));
  if (!is_held_constant(value)) {
    raise_unsupported(cat(node.describe(), ": scales, sizes or roi computed at run time"));
  }
  const Tensor& tensor = *value->constant();
  if (tensor.numel() == 0) return std::nullopt;  // Resize-11's empty tensor for "absent"
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.get_double(i));
  return values;
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_resize(const Node& node, HalideCache& cache) {
  const Value* x = node.input(0);
  const Value* y = node.output(0);
  if (!x || !y || !x->type.shape || !y->type.shape || x->type.shape->empty()) {
    raise_unsupported(cat(node.describe(), ": an input of unknown or zero rank"));
  }
  const ResizeAttributes attributes = read_resize_attributes(node);
  const DType dtype = x->type.dtype;
  const bool nearest = attributes.mode == "nearest";
  if (dtype != DType::kFloat32 &&
      !(nearest && (dtype == DType::kInt32 || dtype == DType::kInt64))) {
    raise_unsupported(
        cat(node.describe(), ": ", dtype_onnx_name(dtype), " ", attributes.mode, " interpolation"));
  }
  if (attributes.coordinate_mode == "tf_crop_and_resize") {
    raise_unsupported(cat(node.describe(),
                          ": tf_crop_and_resize (a region and an extrapolation "
                          "value)"));
  }
  const ResizeInputs at = resize_inputs(node);
  std::optional<std::vector<double>> scales;
  if (node.op_type() == "Upsample" && node.opset() < 9) {
    const std::vector<float> values = node.attr_floats("scales");
    scales.emplace(values.begin(), values.end());
  } else {
    scales = constant_doubles(node, at.scales);
  }
  std::optional<std::vector<int64_t>> sizes;
  if (std::optional<std::vector<double>> given = constant_doubles(node, at.sizes)) {
    sizes.emplace(given->begin(), given->end());
  }
  constant_doubles(node, at.roi);  // a roi computed at run time is refused with the others
  // Dims known only at run time must pass through: given a scale of exactly 1.
  const Shape& sx = *x->type.shape;
  const int rank = static_cast<int>(sx.size());
  std::vector<int64_t> dims;
  for (const Dim& dim : sx) dims.push_back(dim.is_known() ? dim.value() : 1);
  const ResizeGeometry geometry =
      resize_geometry(node, attributes, dims, scales, sizes, std::nullopt, ErrorKind::kUnsupported);
  std::vector<bool> resized(static_cast<size_t>(rank), false);
  for (int a = 0; a < rank; ++a) {
    const size_t i = static_cast<size_t>(a);
    const bool identity = geometry.scale[i] == 1.0 && geometry.output[i] == dims[i];
    if (!sx[i].is_known() && (!identity || sizes)) {
      raise_unsupported(cat(node.describe(), ": axis ", a,
                            " of a size known only at run time is "
                            "resized"));
    }
    resized[i] = !identity;
    if (resized[i] && a < rank - 2) {
      raise_unsupported(
          cat(node.describe(), ": axis ", a, " is resized (lowered for the last two)"));
    }
  }
  // (width, height, rest): the last axis, the one before it, the others merged.
  const int w_axis = rank - 1, h_axis = rank - 2;
  const OperandView view = {ViewDim{w_axis, rank},
                            rank >= 2 ? ViewDim{h_axis, rank - 1} : ViewDim{0, 0},
                            ViewDim{0, std::max(0, rank - 2)}};
  std::optional<AxisTable> tables[2];  // width, height
  for (int d = 0; d < 2; ++d) {
    const int axis = rank - 1 - d;
    if (axis < 0 || !resized[static_cast<size_t>(axis)]) continue;
    const size_t i = static_cast<size_t>(axis);
    tables[d] =
        axis_table(attributes, dims[i], geometry.output[i], geometry.scale[i], geometry.length[i]);
  }

  auto block = std::make_unique<HalideBlock>();
  block->context_ = node.describe();
  block->output_value_ = y;
  block->output_dtype_ = dtype;
  block->output_view_ = view;
  block->arguments_.push_back(argument_of(x, view));
  // Per resized axis: its index table, and its weight table unless nearest (one tap of weight 1).
  for (int d = 0; d < 2; ++d) {
    if (!tables[d]) continue;
    for (const Tensor* table : {&tables[d]->index, nearest ? nullptr : &tables[d]->weight}) {
      if (!table) continue;
      HalideBlock::Argument argument;
      argument.constant = *table;
      argument.view = {ViewDim{1, 2}, ViewDim{0, 1}};
      block->arguments_.push_back(std::move(argument));
    }
  }

  const ArchTable& arch = arch_table(cache.target());
  const int lanes = dtype == DType::kInt64 ? arch.lanes / 2 : arch.lanes;
  const int64_t out_width =
      tables[0] ? tables[0]->out : (sx.back().is_known() ? sx.back().value() : -1);
  const bool vectorized = out_width < 0 || out_width >= lanes;
  // The tables' values are not in the key: they are arguments.
  std::string key = cat(kResizeKey, "\n", dtype_name(dtype), " ", attributes.mode, " view ",
                        view_to_string(view), " lanes ", vectorized ? lanes : 1);
  for (int d = 0; d < 2; ++d) {
    key += tables[d] ? cat(" axis", d, " ", tables[d]->in, "->", tables[d]->out, " taps ",
                           tables[d]->taps)
                     : " pass";
  }
  block->compile(cache, key, [&]() {
    BuiltPipeline built;
    Halide::ImageParam x_image = make_image_param("x", dtype, view);
    built.arguments = {x_image};
    Halide::Var w("w"), h("h"), n("n");
    // Per axis: the taps' input indices and weights at the output position (a pass-through
    // axis: one tap, the position itself).
    std::vector<Expr> index_of[2], weight_of[2];
    const Halide::Var* vars[2] = {&w, &h};
    for (int d = 0; d < 2; ++d) {
      if (!tables[d]) {
        index_of[d] = {*vars[d]};
        weight_of[d] = {Expr(1.f)};
        continue;
      }
      x_image.dim(d).set_extent(static_cast<int>(tables[d]->in));
      const int taps = nearest ? 1 : tables[d]->taps;
      Halide::ImageParam index(Halide::Int(32), 2, cat("index", d));
      pin_shape(index, tables[d]->index.shape());
      built.arguments.push_back(index);
      Halide::ImageParam weight(Halide::Float(32), 2, cat("weight", d));
      if (!nearest) {
        pin_shape(weight, tables[d]->weight.shape());
        built.arguments.push_back(weight);
      }
      for (int t = 0; t < taps; ++t) {
        // Clamped (the tables already are) so Halide can bound the reads of x.
        index_of[d].push_back(
            Halide::clamp(index(*vars[d], t), 0, static_cast<int>(tables[d]->in) - 1));
        weight_of[d].push_back(nearest ? Expr(1.f) : weight(*vars[d], t));
      }
    }
    Halide::Func out("out");
    if (nearest) {
      out(w, h, n) = x_image(index_of[0][0], index_of[1][0], n);
    } else {
      // Rows first: each height tap's weighted sum over the width taps.
      Expr sum = 0.f;
      for (size_t b = 0; b < index_of[1].size(); ++b) {
        Expr row = 0.f;
        for (size_t a = 0; a < index_of[0].size(); ++a) {
          row += weight_of[0][a] * x_image(index_of[0][a], index_of[1][b], n);
        }
        sum += weight_of[1][b] * row;
      }
      out(w, h, n) = sum;
    }
    for (int d = 0; d < 2; ++d) {
      if (tables[d]) out.output_buffer().dim(d).set_extent(static_cast<int>(tables[d]->out));
    }
    if (vectorized) out.vectorize(w, lanes, Halide::TailStrategy::GuardWithIf);
    pin_output_mins(out);
    built.output = out;
    return built;
  });

  const std::string context = block->context_;
  const std::vector<bool> resized_axes = resized;
  const std::vector<int64_t> static_in = dims, static_out = geometry.output;
  block->output_shape_ = [=](const RunTensors& tensors) {
    std::vector<int64_t> shape = tensors[0].shape();
    if (static_cast<int>(shape.size()) != rank) {
      raise_invalid_input(
          cat(context, ": input X has shape ", shape_text(shape), ", rank ", rank, " expected"));
    }
    for (size_t a = 0; a < shape.size(); ++a) {
      if (!resized_axes[a]) continue;
      if (shape[a] != static_in[a]) {
        raise_invalid_input(cat(context, ": axis ", a, " of input X has size ", shape[a],
                                ", compiled for ", static_in[a]));
      }
      shape[a] = static_out[a];
    }
    return shape;
  };
  std::string sizes_text;
  for (int d = 1; d >= 0; --d) {
    if (tables[d])
      sizes_text += cat(sizes_text.empty() ? "" : ",", tables[d]->in, "->", tables[d]->out);
  }
  block->kind_ = cat("halide resize ", attributes.mode, " ", attributes.coordinate_mode, " [",
                     sizes_text, "]");
  block->nodes = {&node};
  block->inputs = is_held_constant(x) ? std::vector<const Value*>{} : std::vector<const Value*>{x};
  block->outputs = {y};
  return block;
}

}  // namespace rnnc
