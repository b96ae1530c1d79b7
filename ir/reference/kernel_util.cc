#include <algorithm>

#include "ir/reference/kernel.h"

namespace rnnc {

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const KernelContext& context) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      auto text = [](const std::vector<int64_t>& s) {
        std::string t = "[";
        for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
        return t + "]";
      };
      context.fail_input(cat("shapes ", text(a), " and ", text(b), " cannot be broadcast"));
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  return strides;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in_shape,
                                       const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> in_strides = row_major_strides(in_shape);
  std::vector<int64_t> strides(out_shape.size(), 0);
  size_t offset = out_shape.size() - in_shape.size();
  for (size_t k = 0; k < in_shape.size(); ++k) {
    strides[k + offset] = in_shape[k] == 1 ? 0 : in_strides[k];
  }
  return strides;
}

Tensor widen_half(const Tensor& tensor) {
  if (tensor.dtype() == DType::kFloat16 || tensor.dtype() == DType::kBFloat16) {
    return tensor.cast(DType::kFloat32);
  }
  return tensor;
}

Tensor narrow_to(const Tensor& tensor, DType dtype) {
  return tensor.dtype() == dtype ? tensor : tensor.cast(dtype);
}

std::vector<int64_t> tensor_to_int64s(const Tensor& tensor) {
  std::vector<int64_t> values(static_cast<size_t>(tensor.numel()));
  for (int64_t i = 0; i < tensor.numel(); ++i) values[static_cast<size_t>(i)] = tensor.get_int64(i);
  return values;
}

void unravel(int64_t flat, const std::vector<int64_t>& extent, std::vector<int64_t>& index) {
  index.resize(extent.size());
  for (size_t k = extent.size(); k-- > 0;) {
    index[k] = flat % extent[k];
    flat /= extent[k];
  }
}

std::vector<WindowAxis> window_axes(const KernelContext& context, const std::vector<int64_t>& input,
                                    const std::vector<int64_t>& kernel) {
  const Node& node = context.node;
  size_t rank = input.size();
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations = node.attr_ints("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool ceil_mode = node.attr_int("ceil_mode", 0) == 1;
  std::vector<WindowAxis> axes(rank);
  for (size_t i = 0; i < rank; ++i) {
    WindowAxis& axis = axes[i];
    axis.input = input[i];
    axis.kernel = kernel[i];
    axis.stride = strides[i];
    axis.dilation = dilations[i];
    int64_t extent = (axis.kernel - 1) * axis.dilation + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // output = ceil(input / stride); the total padding that achieves it is split in half, the
      // odd element going to the end (SAME_UPPER) or to the beginning (SAME_LOWER).
      axis.output = (axis.input + axis.stride - 1) / axis.stride;
      int64_t total = std::max<int64_t>(0, (axis.output - 1) * axis.stride + extent - axis.input);
      axis.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      axis.pad_end = total - axis.pad_begin;
      continue;
    }
    bool valid = auto_pad == "VALID";
    axis.pad_begin = valid ? 0 : pads[i];
    axis.pad_end = valid ? 0 : pads[i + rank];
    int64_t padded = axis.input + axis.pad_begin + axis.pad_end;
    if (padded < extent) {
      context.fail_input(cat("spatial axis ", i, ": input size ", axis.input, " + pads ",
                             axis.pad_begin, " + ", axis.pad_end,
                             " is smaller than the dilated kernel size ", extent));
    }
    int64_t steps = ceil_mode ? (padded - extent + axis.stride - 1) / axis.stride
                              : (padded - extent) / axis.stride;
    // Ceil mode: a last window that would start in the end padding is dropped.
    if (ceil_mode && steps * axis.stride >= axis.input + axis.pad_begin) --steps;
    axis.output = steps + 1;
  }
  return axes;
}

std::vector<int64_t> output_spatial_shape(const std::vector<WindowAxis>& axes) {
  std::vector<int64_t> shape;
  for (const WindowAxis& axis : axes) shape.push_back(axis.output);
  return shape;
}

std::vector<std::vector<int64_t>> kernel_taps(const std::vector<int64_t>& kernel) {
  std::vector<std::vector<int64_t>> taps(static_cast<size_t>(shape_numel(kernel)));
  for (size_t t = 0; t < taps.size(); ++t) unravel(static_cast<int64_t>(t), kernel, taps[t]);
  return taps;
}

void tap_position(const std::vector<WindowAxis>& axes, const std::vector<int64_t>& out,
                  const std::vector<int64_t>& tap, std::vector<int64_t>& position) {
  position.resize(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    position[i] = out[i] * axes[i].stride - axes[i].pad_begin + tap[i] * axes[i].dilation;
  }
}

bool inside_input(const std::vector<WindowAxis>& axes, const std::vector<int64_t>& position) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (position[i] < 0 || position[i] >= axes[i].input) return false;
  }
  return true;
}

int64_t row_major_offset(const std::vector<WindowAxis>& axes,
                         const std::vector<int64_t>& position) {
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) offset = offset * axes[i].input + position[i];
  return offset;
}

ConvGeometry conv_geometry(const KernelContext& context, const std::vector<int64_t>& x_shape,
                           const std::vector<int64_t>& w_shape, const char* x_name,
                           const char* w_name) {
  if (x_shape.size() < 3) {
    context.fail_input(cat("input ", x_name, " has shape ", shape_text(x_shape),
                           ", expected at least 3 dims (N x C x D1 ...)"));
  }
  if (w_shape.size() != x_shape.size()) {
    context.fail_input(cat("input ", w_name, " has shape ", shape_text(w_shape), " but ", x_name,
                           " has shape ", shape_text(x_shape)));
  }
  ConvGeometry g;
  g.group = context.node.attr_int("group", 1);
  g.batch = x_shape[0];
  g.channels = x_shape[1];
  g.out_channels = w_shape[0];
  g.group_channels = w_shape[1];
  if (g.channels != g.group_channels * g.group) {
    context.fail_input(cat("input channels ", g.channels, " != weight channels ", g.group_channels,
                           " * group ", g.group));
  }
  if (g.out_channels % g.group != 0) {
    context.fail_input(
        cat("weight output channels ", g.out_channels, " are not a multiple of group ", g.group));
  }
  g.in_spatial.assign(x_shape.begin() + 2, x_shape.end());
  g.kernel.assign(w_shape.begin() + 2, w_shape.end());
  g.axes = window_axes(context, g.in_spatial, g.kernel);
  g.out_spatial = output_spatial_shape(g.axes);
  g.y_shape = {g.batch, g.out_channels};
  g.y_shape.insert(g.y_shape.end(), g.out_spatial.begin(), g.out_spatial.end());
  return g;
}

}  // namespace rnnc
