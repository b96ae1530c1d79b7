#include "lowering/lower_conv_transpose.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ir/error.h"
#include "lowering/halide_block.h"
#include "lowering/layout.h"
#include "lowering/lower_dense.h"
#include "lowering/schedule_table.h"

namespace rnnc {

namespace {

using Halide::Expr;
using Halide::Func;
using Halide::RDom;
using Halide::TailStrategy;
using Halide::Var;

// Bump when the code a group compiles to changes, so stale cached kernels are not reused.
constexpr const char* kConvTransposeKey = "rnnc convtranspose";

int64_t floor_half(int64_t value) { return value >= 0 ? value / 2 : -((1 - value) / 2); }

int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// One spatial axis: input position i and tap k add into output position
// i * stride + k * dilation - pad_begin. The output size is `fixed_output` (output_shape, SAME_*:
// the pads were derived from a static input size) or follows from the run's input size.
struct TransposedAxis {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t dilation = 1;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;  // explicit pads only
  int64_t output_padding = 0;
  std::optional<int64_t> fixed_input;  // the input size the pads were derived from
  std::optional<int64_t> fixed_output;

  // The reference kernel's rule (ir/reference/kernels_nn.cc transposed_axes).
  int64_t full_output(int64_t input) const {
    return stride * (input - 1) + output_padding + (kernel - 1) * dilation + 1;
  }
  int64_t output(int64_t input) const {
    return fixed_output ? *fixed_output : full_output(input) - pad_begin - pad_end;
  }
  // U's origin: U(j) holds the input position (j + lo) / stride.
  int64_t lo() const { return pad_begin - (kernel - 1) * dilation; }
  std::string to_string() const {
    return cat("k=", kernel, " s=", stride, " d=", dilation, " p=", pad_begin, ",", pad_end,
               " op=", output_padding, " in=", fixed_input ? cat(*fixed_input) : "?",
               " out=", fixed_output ? cat(*fixed_output) : "?");
  }
};

std::vector<TransposedAxis> transposed_axes(const Node& node, const Shape& x,
                                            const std::vector<int64_t>& w) {
  const size_t spatial = w.size() - 2;
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> dilations = node.attr_ints("dilations", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::vector<int64_t> output_padding =
      node.attr_ints("output_padding", std::vector<int64_t>(spatial, 0));
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  if (output_shape.size() > spatial) {  // N x M x spatial: the spatial part
    output_shape.erase(output_shape.begin(),
                       output_shape.end() - static_cast<std::ptrdiff_t>(spatial));
  }
  std::vector<int64_t> kernel_shape = node.attr_ints("kernel_shape");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial ||
      output_padding.size() != spatial ||
      (!output_shape.empty() && output_shape.size() != spatial) ||
      (!kernel_shape.empty() && kernel_shape != std::vector<int64_t>(w.begin() + 2, w.end()))) {
    raise_unsupported(cat(node.describe(), ": attributes that do not match W's rank"));
  }
  std::vector<TransposedAxis> axes(spatial);
  for (size_t i = 0; i < spatial; ++i) {
    TransposedAxis& axis = axes[i];
    axis.kernel = w[i + 2];
    axis.stride = strides[i];
    axis.dilation = dilations[i];
    axis.output_padding = output_padding[i];
    if (axis.stride <= 0 || axis.dilation <= 0) {
      raise_unsupported(cat(node.describe(), ": strides and dilations must be positive"));
    }
    if (!output_shape.empty() || same) {
      // The total padding depends on the input size: lowered only where it is static.
      const Dim& in = x[i + 2];
      if (!in.is_known()) {
        raise_unsupported(cat(node.describe(), ": ",
                              output_shape.empty() ? "auto_pad " + auto_pad : "output_shape",
                              " on a run-time input size"));
      }
      axis.fixed_input = in.value();
      axis.fixed_output = output_shape.empty() ? in.value() * axis.stride : output_shape[i];
      const int64_t total = axis.full_output(in.value()) - *axis.fixed_output;
      axis.pad_begin = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (auto_pad != "VALID") {
      axis.pad_begin = pads[i];
      axis.pad_end = pads[i + spatial];
    }
  }
  return axes;
}

// W [C, M/group, k...] as the equivalent stride-1 convolution's [M, C/group, k...], taps flipped.
Tensor flipped_weights(const Tensor& w, int64_t groups) {
  const std::vector<int64_t>& shape = w.shape();
  const int64_t channels = shape[0], group_outputs = shape[1];
  const int64_t group_channels = channels / groups;
  int64_t taps = 1;
  for (size_t d = 2; d < shape.size(); ++d) taps *= shape[d];
  std::vector<int64_t> flipped_shape = {group_outputs * groups, group_channels};
  flipped_shape.insert(flipped_shape.end(), shape.begin() + 2, shape.end());
  Tensor flipped(DType::kFloat32, flipped_shape);
  const float* from = w.data<float>();
  float* to = flipped.data<float>();
  for (int64_t m = 0; m < group_outputs * groups; ++m) {
    const int64_t g = m / group_outputs;
    for (int64_t c = 0; c < group_channels; ++c) {
      const float* source =
          from + ((g * group_channels + c) * group_outputs + m % group_outputs) * taps;
      float* target = to + (m * group_channels + c) * taps;
      // Reversing the row-major tap index reverses every spatial axis at once.
      for (int64_t t = 0; t < taps; ++t) target[t] = source[taps - 1 - t];
    }
  }
  return flipped;
}

}  // namespace

std::unique_ptr<ExecutionBlock> lower_conv_transpose_group(const FusionGroup& group,
                                                           HalideCache& cache) {
  const Node& root = *group.root;
  const Value* x = root.input(0);
  const Value* w = root.input(1);
  const Value* bias = root.input(2);
  for (const Value* operand : {x, w, bias}) {
    if (operand && operand->type.dtype != DType::kFloat32) {
      raise_unsupported(cat(root.describe(), ": lowered for float32 only"));
    }
  }
  if (!is_held_constant(w)) {
    raise_unsupported(cat(root.describe(), ": weights computed at run time"));
  }
  if (bias && !is_held_constant(bias) && !bias->type.shape) {
    raise_unsupported(cat(root.describe(), ": a bias of unknown rank"));
  }
  const Shape& sx = *x->type.shape;
  const std::vector<int64_t> w_shape = w->constant()->shape();
  const int rank = static_cast<int>(sx.size());
  if ((rank != 3 && rank != 4) || static_cast<int>(w_shape.size()) != rank) {
    raise_unsupported(cat(root.describe(), ": lowered for 1-D and 2-D transposed convolutions"));
  }
  const Value* result = group.sink->output(0);
  const Shape& shape = *result->type.shape;
  if (static_cast<int>(shape.size()) != rank ||
      (root.output(0) != result &&
       (!root.output(0)->type.shape || !same_shape(*root.output(0)->type.shape, shape)))) {
    raise_unsupported(cat(root.describe(), ": the fused group changes the convolution's shape"));
  }
  const bool two_d = rank == 4;
  const int64_t groups = root.attr_int("group", 1);
  const int64_t channels = w_shape[0];
  if (groups <= 0 || channels % groups != 0) {
    raise_unsupported(cat(root.describe(), ": group ", groups, " for ", channels, " channels"));
  }
  const int64_t group_channels = channels / groups;
  const int64_t group_out_channels = w_shape[1];
  const int64_t out_channels = group_out_channels * groups;
  if (bias && bias->type.shape &&
      (bias->type.shape->size() != 1 ||
       ((*bias->type.shape)[0].is_known() && (*bias->type.shape)[0].value() != out_channels))) {
    raise_unsupported(cat(root.describe(), ": bias of shape ", shape_to_string(*bias->type.shape)));
  }
  const std::vector<TransposedAxis> axes = transposed_axes(root, sx, w_shape);
  const TransposedAxis& ax_w = axes.back();
  const TransposedAxis ax_h = two_d ? axes[0] : TransposedAxis{};

  const ArchTable& arch = arch_table(cache.target());
  // Static extents (width, then height) of input and output are compiled in, as for Conv.
  std::vector<std::optional<int64_t>> static_in(2), static_out(2);
  for (int d = 0; d < (two_d ? 2 : 1); ++d) {
    const size_t axis = static_cast<size_t>(rank - 1 - d);
    const TransposedAxis& spatial = axes[axes.size() - 1 - static_cast<size_t>(d)];
    if (sx[axis].is_known()) static_in[static_cast<size_t>(d)] = sx[axis].value();
    if (spatial.fixed_output) {
      static_out[static_cast<size_t>(d)] = spatial.fixed_output;
    } else if (sx[axis].is_known()) {
      static_out[static_cast<size_t>(d)] = spatial.output(sx[axis].value());
    }
  }
  for (const auto& extent : static_out) {
    if (extent && *extent < 0) {
      raise_unsupported(cat(root.describe(), ": the pads exceed the full output size"));
    }
  }
  const ConvSchedule schedule =
      choose_conv_schedule(arch, DType::kFloat32, out_channels, groups, ax_w.kernel, static_out[0]);
  const Tensor flipped = flipped_weights(*w->constant(), groups);
  const LayoutMap w_layout(flipped.shape(), schedule.w_layout);

  // Loop dims (ow, oh, m, n), as Conv's; a 1-D convolution has an extent-1 oh.
  std::vector<LoopDim> loops;
  std::unique_ptr<HalideBlock> block = conv_block(root, result, rank, loops);
  const ConvArguments arguments = add_conv_arguments(*block, group, x, bias,
                                                     w_layout.marshal(flipped), w_layout, rank,
                                                     loops, shape);

  std::string key =
      cat(kConvTransposeKey, "\n", group_signature(group), w_layout.to_string(), "\n");
  for (const TransposedAxis& axis : axes) key += cat("axis ", axis.to_string(), "\n");
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
    Func out("out");
    // U, once per batch item: zeros, then each input position i scattered to i * stride - lo
    // (only those that land inside the extent the output reads: out + (k - 1) * dilation). The
    // channel is clamped for the tiles that run past the last output channel.
    Var uw("uw"), uh("uh"), uc("uc"), ub("ub");
    const Expr in_channels = x_image.dim(2).extent();
    auto scattered = [&](const TransposedAxis& axis, Expr in_extent) {
      // The output's extent, as output_shape_ gives it for this input extent.
      Expr out_extent = axis.fixed_output ? Expr(static_cast<int>(*axis.fixed_output))
                                          : static_cast<int>(axis.stride) * (in_extent - 1) +
                                                static_cast<int>(axis.output_padding +
                                                                 (axis.kernel - 1) * axis.dilation +
                                                                 1 - axis.pad_begin - axis.pad_end);
      const int64_t lo = axis.lo();
      const int first = static_cast<int>(std::max<int64_t>(0, ceil_div(lo, axis.stride)));
      const int reach = static_cast<int>((axis.kernel - 1) * axis.dilation + lo);
      // Last input position whose scatter target is below out + (k - 1) * dilation.
      Expr last =
          Halide::min(in_extent - 1, (out_extent - 1 + reach) / static_cast<int>(axis.stride));
      return std::make_pair(Expr(first), Halide::max(0, last - first + 1));
    };
    const auto [first_w, count_w] = scattered(ax_w, x_image.dim(0).extent());
    const auto [first_h, count_h] = scattered(ax_h, x_image.dim(1).extent());
    Func upsampled("upsampled");
    RDom inside(first_w, count_w, first_h, count_h, "inside");
    upsampled(uw, uh, uc, ub) = 0.f;
    upsampled(inside.x * static_cast<int>(ax_w.stride) - static_cast<int>(ax_w.lo()),
              inside.y * static_cast<int>(ax_h.stride) - static_cast<int>(ax_h.lo()), uc, ub) =
        x_image(inside.x, inside.y, Halide::clamp(uc, 0, in_channels - 1), ub);
    RDom r(0, static_cast<int>(ax_w.kernel), 0, static_cast<int>(ax_h.kernel), 0,
           static_cast<int>(group_channels), "r");
    auto weight_at = [&](Expr channel, Expr c, Expr ky, Expr kx) {
      std::vector<Expr> logical =
          two_d ? std::vector<Expr>{kx, ky, c, channel} : std::vector<Expr>{kx, c, channel};
      return w_image(w_layout.physical_coords(logical));
    };
    Func prod("prod");
    prod(vars) = images.bias_value;
    // Ungrouped: the input channel is the reduction's alone (a vector of output channels reads
    // one broadcast input value).
    Expr in_channel =
        groups == 1
            ? Expr(r.z)
            : (m / static_cast<int>(group_out_channels)) * static_cast<int>(group_channels) + r.z;
    prod(vars) += weight_at(m, r.z, r.y, r.x) *
                  upsampled(ow + r.x * static_cast<int>(ax_w.dilation),
                            oh + r.y * static_cast<int>(ax_h.dilation), in_channel, batch);
    auto leaf = [&](const Value* value) {
      return value == root.output(0) ? Expr(prod(vars)) : images.reads_of.at(value);
    };
    out(vars) = Halide::cast<float>(group_expr(group, result, leaf));

    schedule_conv_tiles(out, prod, r, vars, schedule, out_channels);
    upsampled.compute_at(out, batch).vectorize(uw, lanes, TailStrategy::GuardWithIf);
    // A stride-1 scatter is a dense copy; a strided one stays scalar (AVX2 has no scatter).
    if (ax_w.stride == 1) {
      upsampled.update().vectorize(inside.x, lanes, TailStrategy::GuardWithIf);
    } else {
      upsampled.update().unscheduled();
    }
    for (size_t d = 0; d < 2; ++d) {
      if (static_out[d]) {
        out.output_buffer().dim(static_cast<int>(d)).set_extent(static_cast<int>(*static_out[d]));
      }
    }
    built.output = out;
    return built;
  });

  const std::string context = block->context_;
  block->output_shape_ = [=](const RunTensors& tensors) {
    const std::vector<int64_t>& in = tensors[0].shape();
    if (static_cast<int>(in.size()) != rank || in[1] != channels) {
      raise_invalid_input(cat(context, ": input X has shape ", shape_text(in), ", expected ",
                              channels, " channels and rank ", rank));
    }
    std::vector<int64_t> out = {in[0], out_channels};
    for (size_t i = 0; i < axes.size(); ++i) {
      const TransposedAxis& axis = axes[i];
      if (axis.fixed_input && in[i + 2] != *axis.fixed_input) {
        raise_invalid_input(cat(context, ": spatial axis ", i, ": input size ", in[i + 2],
                                ", compiled for ", *axis.fixed_input));
      }
      const int64_t extent = axis.output(in[i + 2]);
      if (extent < 0) {
        raise_invalid_input(cat(context, ": spatial axis ", i, ": pads ", axis.pad_begin, " + ",
                                axis.pad_end, " exceed the full output size ",
                                axis.full_output(in[i + 2])));
      }
      out.push_back(extent);
    }
    return check_epilogue(out, tensors, arguments.first_epilogue, context);
  };
  std::string strides = cat(ax_w.stride);
  if (two_d) strides = cat(ax_h.stride, "x", ax_w.stride);
  block->kind_ = cat("halide ", group_op_names(group), " [M=", out_channels, ",C=", channels,
                     ",k=", two_d ? cat(ax_h.kernel, "x") : "", ax_w.kernel, ",s=", strides, "]");
  block->nodes = group.nodes;
  block->inputs = group.runtime_inputs;
  block->outputs = {result};
  return block;
}

}  // namespace rnnc
