// Reference kernels for the neural-network ops: convolution (and ConvTranspose), pooling,
// normalization (with LRN, MeanVarianceNormalization), reductions, CumSum, TopK, Det,
// NonMaxSuppression, RoiAlign, ArgMax/ArgMin and Dropout. Each is a plain loop nest over the
// formula of its ONNX operator doc (docs/ops/nn.md lists the corner cases). Sums, products and
// statistics accumulate in double whatever the element type, so the oracle is at least as accurate
// as any spec-conforming implementation; integer reductions accumulate exactly in 64-bit modular
// arithmetic. float16 and bfloat16 inputs are widened to float32 and the result rounded back once
// at the end.
//
// Attributes were validated by shape inference when the graph was built; the kernels re-check
// only what depends on run-time sizes (symbolic dims), as kInvalidInput.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

// ---- index helpers -----------------------------------------------------------------------------

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= dims[i];
  return result;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// Runs `compute` on the inputs with float16/bfloat16 widened to float32 and rounds every output
// that came out as float32 back to the type of input 0.
template <typename Fn>
void with_widened_halves(KernelContext& context, Fn&& compute) {
  compute();
  DType original = context.input(0).dtype();
  if (original != DType::kFloat16 && original != DType::kBFloat16) return;
  for (Tensor& output : context.outputs) {
    if (output.defined() && output.dtype() == DType::kFloat32) {
      output = narrow_to(output, original);
    }
  }
}

// NaN propagates through max and min (as numpy's max does): a NaN candidate always wins and a
// NaN incumbent is never replaced.
template <typename T>
bool replaces_max(T candidate, T incumbent) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(incumbent)) return false;
    if (std::isnan(candidate)) return true;
  }
  return candidate > incumbent;
}

template <typename T>
bool replaces_min(T candidate, T incumbent) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(incumbent)) return false;
    if (std::isnan(candidate)) return true;
  }
  return candidate < incumbent;
}

// The value a max (min) over an empty set yields: -inf (+inf) where the type has it, else the
// lowest (highest) value.
template <typename T>
T empty_max() {
  if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::lowest();
}

template <typename T>
T empty_min() {
  if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
  return std::numeric_limits<T>::max();
}

// ---- convolution and pooling windows -----------------------------------------------------------

// Inside the input or its explicit (or auto_pad) padding; ceil mode can reach beyond both.
bool inside_padded_input(const std::vector<WindowAxis>& axes,
                         const std::vector<int64_t>& position) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (position[i] < -axes[i].pad_begin || position[i] >= axes[i].input + axes[i].pad_end) {
      return false;
    }
  }
  return true;
}

int64_t column_major_offset(const std::vector<WindowAxis>& axes,
                            const std::vector<int64_t>& position) {
  int64_t offset = 0;
  for (size_t i = axes.size(); i-- > 0;) offset = offset * axes[i].input + position[i];
  return offset;
}

void check_spatial_rank(const KernelContext& context, const Tensor& x) {
  if (x.rank() < 3) {
    context.fail_input(cat("input X has shape ", dims_text(x.shape()),
                           ", expected at least 3 dims (N x C x D1 ...)"));
  }
}

// Y[n, m, o] = B[m] + sum over c in group(m), kernel taps k of
//              X[n, c, o * stride - pad_begin + k * dilation] * W[m, c - group_start, k]
// with taps that land in the padding contributing zero.
void conv(KernelContext& context) {
  Tensor x = widen_half(context.input(0));
  Tensor w = widen_half(context.input(1));
  Tensor bias = context.has_input(2) ? widen_half(context.input(2)) : Tensor();
  ConvGeometry geometry = conv_geometry(context, x.shape(), w.shape(), "X", "W");
  if (bias.defined() && bias.numel() != geometry.out_channels) {
    context.fail_input(cat("input B has ", bias.numel(), " elements but W has ",
                           geometry.out_channels, " output channels"));
  }
  Tensor y(x.dtype(), geometry.y_shape);
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      const T* w_data = w.data<T>();
      const T* b_data = bias.defined() ? bias.data<T>() : nullptr;
      T* y_data = y.data<T>();
      convolve<double>(
          geometry, [&](int64_t m) { return b_data ? static_cast<double>(b_data[m]) : 0.0; },
          [&](int64_t xi, int64_t wi) {
            return static_cast<double>(x_data[xi]) * static_cast<double>(w_data[wi]);
          },
          [&](int64_t yi, int64_t, double sum) { y_data[yi] = static_cast<T>(sum); });
    });
    context.outputs[0] = y;
  });
}

// One spatial axis of a transposed convolution: input position i and kernel tap k add into output
// position i * stride + k * dilation - pad_begin (when inside [0, output)).
struct TransposedAxis {
  int64_t input;
  int64_t kernel;
  int64_t stride;
  int64_t dilation;
  int64_t pad_begin;
  int64_t output;
};

int64_t floor_half(int64_t value) { return value >= 0 ? value / 2 : -((1 - value) / 2); }

// The ConvTranspose output-size and padding rules (docs/ops/nn.md): explicit pads, or output_shape
// or SAME_* giving the output size and the total padding that reaches it, split as the spec's
// total // 2 (floor) with the larger part at the end for SAME_UPPER, at the beginning otherwise.
std::vector<TransposedAxis> transposed_axes(const KernelContext& context,
                                            const std::vector<int64_t>& input,
                                            const std::vector<int64_t>& kernel) {
  const Node& node = context.node;
  size_t rank = input.size();
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations = node.attr_ints("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  std::vector<int64_t> output_padding =
      node.attr_ints("output_padding", std::vector<int64_t>(rank, 0));
  std::vector<int64_t> output_shape = node.attr_ints("output_shape");
  if (output_shape.size() > rank) {  // N x M x spatial: the spatial part
    output_shape.erase(output_shape.begin(), output_shape.end() - static_cast<int64_t>(rank));
  }
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  std::vector<TransposedAxis> axes(rank);
  for (size_t i = 0; i < rank; ++i) {
    TransposedAxis& axis = axes[i];
    axis = {input[i], kernel[i], strides[i], dilations[i], 0, 0};
    int64_t full = axis.stride * (axis.input - 1) + output_padding[i] +
                   (axis.kernel - 1) * axis.dilation + 1;
    if (!output_shape.empty() || same) {
      axis.output = output_shape.empty() ? axis.input * axis.stride : output_shape[i];
      int64_t total = full - axis.output;
      axis.pad_begin = auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
      continue;
    }
    bool valid = auto_pad == "VALID";
    axis.pad_begin = valid ? 0 : pads[i];
    axis.output = full - axis.pad_begin - (valid ? 0 : pads[i + rank]);
    if (axis.output < 0) {
      context.fail_input(cat("spatial axis ", i, ": pads ", pads[i], " + ", pads[i + rank],
                             " exceed the full output size ", full));
    }
  }
  return axes;
}

// Y[n, m, o] = B[m] + sum over c in group(m), input positions i and taps k with
//              o = i * stride + k * dilation - pad_begin of X[n, c, i] * W[c, m - group_start, k]
// with W = C x M/group x k1 ... kn; output positions no (i, k) reaches hold B[m].
void conv_transpose(KernelContext& context) {
  Tensor x = widen_half(context.input(0));
  Tensor w = widen_half(context.input(1));
  Tensor bias = context.has_input(2) ? widen_half(context.input(2)) : Tensor();
  check_spatial_rank(context, x);
  int64_t group = context.node.attr_int("group", 1);
  int64_t channels = x.dim(1);
  if (w.rank() != x.rank() || w.dim(0) != channels || channels % group != 0) {
    context.fail_input(cat("input W has shape ", dims_text(w.shape()), " for X of shape ",
                           dims_text(x.shape()), " and group ", group,
                           " (expected C x M/group x k1 ... kn with C a multiple of group)"));
  }
  int64_t group_outputs = w.dim(1);
  int64_t out_channels = group_outputs * group;
  int64_t group_channels = channels / group;
  if (bias.defined() && bias.numel() != out_channels) {
    context.fail_input(cat("input B has ", bias.numel(), " elements but W has ", out_channels,
                           " output channels"));
  }
  std::vector<int64_t> in_spatial(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  std::vector<TransposedAxis> axes = transposed_axes(context, in_spatial, kernel);
  std::vector<int64_t> out_spatial;
  for (const TransposedAxis& axis : axes) out_spatial.push_back(axis.output);
  std::vector<int64_t> y_shape = {x.dim(0), out_channels};
  y_shape.insert(y_shape.end(), out_spatial.begin(), out_spatial.end());
  int64_t in_size = product(in_spatial, 0, in_spatial.size());
  int64_t out_size = product(out_spatial, 0, out_spatial.size());
  std::vector<std::vector<int64_t>> taps = kernel_taps(kernel);
  int64_t kernel_size = static_cast<int64_t>(taps.size());
  Tensor y(x.dtype(), y_shape);
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      const T* w_data = w.data<T>();
      std::vector<double> plane(static_cast<size_t>(out_size));
      std::vector<int64_t> in_index;
      for (int64_t n = 0; n < x.dim(0); ++n) {
        for (int64_t m = 0; m < out_channels; ++m) {
          double b = bias.defined() ? static_cast<double>(bias.data<T>()[m]) : 0.0;
          std::fill(plane.begin(), plane.end(), b);
          int64_t g = m / group_outputs;
          for (int64_t c = g * group_channels; c < (g + 1) * group_channels; ++c) {
            const T* x_plane = x_data + (n * channels + c) * in_size;
            const T* w_taps = w_data + (c * group_outputs + m % group_outputs) * kernel_size;
            for (int64_t p = 0; p < in_size; ++p) {
              unravel(p, in_spatial, in_index);
              for (int64_t k = 0; k < kernel_size; ++k) {
                const std::vector<int64_t>& tap = taps[static_cast<size_t>(k)];
                int64_t offset = 0;
                bool inside = true;
                for (size_t a = 0; a < axes.size() && inside; ++a) {
                  int64_t o = in_index[a] * axes[a].stride + tap[a] * axes[a].dilation -
                              axes[a].pad_begin;
                  inside = o >= 0 && o < axes[a].output;
                  offset = offset * axes[a].output + o;
                }
                if (!inside) continue;
                plane[static_cast<size_t>(offset)] +=
                    static_cast<double>(x_plane[p]) * static_cast<double>(w_taps[k]);
              }
            }
          }
          T* y_plane = y.data<T>() + (n * out_channels + m) * out_size;
          for (int64_t o = 0; o < out_size; ++o) y_plane[o] = static_cast<T>(plane[o]);
        }
      }
    });
    context.outputs[0] = y;
  });
}

// Y[n, c, o] = max over the window's taps inside X (padding never wins). Indices holds the flat
// position of the chosen element in X: n, c row-major, the spatial part row-major
// (storage_order 0) or column-major (storage_order 1). The first maximum in tap order wins.
void max_pool(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  check_spatial_rank(context, x);
  std::vector<int64_t> in_spatial(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  bool column_major = node.attr_int("storage_order", 0) == 1;
  std::vector<WindowAxis> axes = window_axes(context, in_spatial, kernel);
  std::vector<int64_t> out_spatial = output_spatial_shape(axes);
  std::vector<int64_t> y_shape = {x.dim(0), x.dim(1)};
  y_shape.insert(y_shape.end(), out_spatial.begin(), out_spatial.end());
  Tensor y(x.dtype(), y_shape);
  Tensor indices(DType::kInt64, y_shape);

  int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_size = product(in_spatial, 0, in_spatial.size());
  int64_t out_size = product(out_spatial, 0, out_spatial.size());
  std::vector<std::vector<int64_t>> taps = kernel_taps(kernel);
  with_widened_halves(context, [&] {
    dispatch_numeric(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      T* y_data = y.data<T>();
      int64_t* index_data = indices.data<int64_t>();
      std::vector<int64_t> out_index, position;
      for (int64_t plane = 0; plane < planes; ++plane) {
        for (int64_t o = 0; o < out_size; ++o) {
          unravel(o, out_spatial, out_index);
          T best = empty_max<T>();
          int64_t best_index = -1;  // stays -1 only for a window entirely in the padding
          for (const auto& tap : taps) {
            tap_position(axes, out_index, tap, position);
            if (!inside_input(axes, position)) continue;
            T value = x_data[plane * in_size + row_major_offset(axes, position)];
            if (best_index < 0 || replaces_max(value, best)) {
              best = value;
              best_index = plane * in_size + (column_major ? column_major_offset(axes, position)
                                                           : row_major_offset(axes, position));
            }
          }
          y_data[plane * out_size + o] = best;
          index_data[plane * out_size + o] = best_index;
        }
      }
    });
    context.outputs[0] = y;
    if (context.outputs.size() > 1) context.outputs[1] = indices;
  });
}

// Y[n, c, o] = sum of the window's taps inside X / count, where count is the number of taps
// inside X (count_include_pad = 0) or inside X plus its pads (count_include_pad = 1).
void average_pool(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  check_spatial_rank(context, x);
  std::vector<int64_t> in_spatial(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  bool count_include_pad = node.attr_int("count_include_pad", 0) == 1;
  std::vector<WindowAxis> axes = window_axes(context, in_spatial, kernel);
  std::vector<int64_t> out_spatial = output_spatial_shape(axes);
  std::vector<int64_t> y_shape = {x.dim(0), x.dim(1)};
  y_shape.insert(y_shape.end(), out_spatial.begin(), out_spatial.end());
  Tensor y(x.dtype(), y_shape);

  int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_size = product(in_spatial, 0, in_spatial.size());
  int64_t out_size = product(out_spatial, 0, out_spatial.size());
  std::vector<std::vector<int64_t>> taps = kernel_taps(kernel);
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      T* y_data = y.data<T>();
      std::vector<int64_t> out_index, position;
      for (int64_t plane = 0; plane < planes; ++plane) {
        for (int64_t o = 0; o < out_size; ++o) {
          unravel(o, out_spatial, out_index);
          double sum = 0.0;
          int64_t count = 0;
          for (const auto& tap : taps) {
            tap_position(axes, out_index, tap, position);
            if (inside_input(axes, position)) {
              sum +=
                  static_cast<double>(x_data[plane * in_size + row_major_offset(axes, position)]);
              ++count;
            } else if (count_include_pad && inside_padded_input(axes, position)) {
              ++count;
            }
          }
          y_data[plane * out_size + o] = static_cast<T>(sum / static_cast<double>(count));
        }
      }
    });
    context.outputs[0] = y;
  });
}

// Y[n, c, 1, ..., 1] = mean (GlobalAveragePool) or max (GlobalMaxPool) of X[n, c, ...].
void global_pool(KernelContext& context) {
  bool is_max = context.node.op_type() == "GlobalMaxPool";
  Tensor x = widen_half(context.input(0));
  check_spatial_rank(context, x);
  std::vector<int64_t> y_shape(static_cast<size_t>(x.rank()), 1);
  y_shape[0] = x.dim(0);
  y_shape[1] = x.dim(1);
  Tensor y(x.dtype(), y_shape);
  int64_t planes = x.dim(0) * x.dim(1);
  int64_t in_size = product(x.shape(), 2, x.shape().size());
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      T* y_data = y.data<T>();
      for (int64_t plane = 0; plane < planes; ++plane) {
        const T* values = x_data + plane * in_size;
        if (is_max) {
          T best = empty_max<T>();
          for (int64_t i = 0; i < in_size; ++i) {
            if (replaces_max(values[i], best)) best = values[i];
          }
          y_data[plane] = best;
        } else {
          double sum = 0.0;
          for (int64_t i = 0; i < in_size; ++i) sum += static_cast<double>(values[i]);
          y_data[plane] = static_cast<T>(sum / static_cast<double>(in_size));
        }
      }
    });
    context.outputs[0] = y;
  });
}

// ---- normalization -----------------------------------------------------------------------------

// Y = (X - mean[c]) / sqrt(var[c] + epsilon) * scale[c] + B[c], with the given statistics
// (inference mode). A 1-D X is (N) with C = 1; opset 7-8 with spatial = 0 indexes the parameters
// per activation (C x D1 x ... x Dn) rather than per channel.
void batch_norm(KernelContext& context) {
  const Node& node = context.node;
  if (node.opset() >= 14 && node.attr_int("training_mode", 0) == 1) {
    raise_unsupported(
        cat(node.describe(), ": training_mode = 1 is not supported; rnnc runs inference only"));
  }
  Tensor x = widen_half(context.input(0));
  const Tensor& scale = context.input(1);
  const Tensor& bias = context.input(2);
  const Tensor& mean = context.input(3);
  const Tensor& var = context.input(4);
  double epsilon = node.attr_float("epsilon", 1e-5f);
  if (x.rank() == 0) context.fail_input("input X is a scalar, expected (N x C x D1 ...) or (N)");
  int64_t channels = x.rank() >= 2 ? x.dim(1) : 1;
  int64_t inner = product(x.shape(), 2, x.shape().size());
  bool per_activation = node.opset() < 9 && node.attr_int("spatial", 1) == 0 && x.rank() >= 2;
  int64_t parameter_count = per_activation ? channels * inner : channels;
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  const Tensor* parameters[] = {&scale, &bias, &mean, &var};
  for (size_t i = 0; i < 4; ++i) {
    if (parameters[i]->numel() != parameter_count) {
      context.fail_input(cat("input ", names[i], " has shape ", dims_text(parameters[i]->shape()),
                             ", expected ", parameter_count, " elements for X of shape ",
                             dims_text(x.shape())));
    }
  }
  Tensor y(x.dtype(), x.shape());
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      T* y_data = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t p = per_activation ? i % parameter_count : (i / inner) % channels;
        double normalized = (static_cast<double>(x_data[i]) - mean.get_double(p)) /
                            std::sqrt(var.get_double(p) + epsilon);
        y_data[i] = static_cast<T>(normalized * scale.get_double(p) + bias.get_double(p));
      }
    });
    context.outputs[0] = y;
  });
}

// y = scale[c] * (x - mean) / sqrt(variance + epsilon) + B[c], mean and (population) variance
// taken over the spatial dims of each (n, c).
void instance_norm(KernelContext& context) {
  Tensor x = widen_half(context.input(0));
  Tensor scale = widen_half(context.input(1));
  Tensor bias = widen_half(context.input(2));
  check_spatial_rank(context, x);
  int64_t channels = x.dim(1);
  if (scale.numel() != channels || bias.numel() != channels) {
    context.fail_input(cat("inputs scale ", dims_text(scale.shape()), " and B ",
                           dims_text(bias.shape()), " must have C = ", channels, " elements"));
  }
  double epsilon = context.node.attr_float("epsilon", 1e-5f);
  int64_t planes = x.dim(0) * channels;
  int64_t inner = product(x.shape(), 2, x.shape().size());
  Tensor y(x.dtype(), x.shape());
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      T* y_data = y.data<T>();
      for (int64_t plane = 0; plane < planes; ++plane) {
        const T* values = x_data + plane * inner;
        double sum = 0.0;
        for (int64_t i = 0; i < inner; ++i) sum += static_cast<double>(values[i]);
        double mean = sum / static_cast<double>(inner);
        double squares = 0.0;
        for (int64_t i = 0; i < inner; ++i) {
          double d = static_cast<double>(values[i]) - mean;
          squares += d * d;
        }
        double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
        int64_t c = plane % channels;
        for (int64_t i = 0; i < inner; ++i) {
          double normalized = (static_cast<double>(values[i]) - mean) * inv_std;
          y_data[plane * inner + i] =
              static_cast<T>(scale.get_double(c) * normalized + bias.get_double(c));
        }
      }
    });
    context.outputs[0] = y;
  });
}

// Over the trailing axes [axis, rank): Mean = mean(X), InvStdDev = 1 / sqrt(mean((X - Mean)^2) +
// epsilon), Y = (X - Mean) * InvStdDev * Scale + B, Scale and B broadcast to X. Mean and InvStdDev
// have the stash type; everything is computed in double and rounded once per output.
void layer_norm(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  Tensor scale = widen_half(context.input(1));
  Tensor bias = context.has_input(2) ? widen_half(context.input(2)) : Tensor();
  int64_t rank = x.rank();
  int64_t axis = node.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) {
    context.fail_input(cat("attribute 'axis' = ", node.attr_int("axis", -1),
                           " is out of range for X of shape ", dims_text(x.shape())));
  }
  DType stash = static_cast<DType>(node.attr_int("stash_type", 1));
  double epsilon = node.attr_float("epsilon", 1e-5f);
  int64_t outer = product(x.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(x.shape(), static_cast<size_t>(axis), x.shape().size());
  std::vector<int64_t> stats_shape(x.shape().begin(), x.shape().begin() + axis);
  stats_shape.resize(x.shape().size(), 1);

  auto check_broadcast = [&](const Tensor& t, const char* name) {
    bool ok = t.rank() <= rank;
    for (int64_t i = 0; ok && i < t.rank(); ++i) {
      int64_t d = t.dim(i);
      ok = d == 1 || d == x.dim(rank - t.rank() + i);
    }
    if (!ok) {
      context.fail_input(cat("input ", name, " with shape ", dims_text(t.shape()),
                             " cannot be broadcast to X's shape ", dims_text(x.shape())));
    }
  };
  check_broadcast(scale, "Scale");
  if (bias.defined()) check_broadcast(bias, "B");
  std::vector<int64_t> scale_strides = broadcast_strides(scale.shape(), x.shape());
  std::vector<int64_t> bias_strides =
      bias.defined() ? broadcast_strides(bias.shape(), x.shape()) : std::vector<int64_t>();

  Tensor y(x.dtype(), x.shape());
  Tensor mean_out(stash, stats_shape);
  Tensor inv_std_out(stash, stats_shape);
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* x_data = x.data<T>();
      const T* scale_data = scale.data<T>();
      const T* bias_data = bias.defined() ? bias.data<T>() : nullptr;
      T* y_data = y.data<T>();
      std::vector<int64_t> index;
      for (int64_t r = 0; r < outer; ++r) {
        const T* row = x_data + r * inner;
        double sum = 0.0;
        for (int64_t j = 0; j < inner; ++j) sum += static_cast<double>(row[j]);
        double mean = sum / static_cast<double>(inner);
        double squares = 0.0;
        for (int64_t j = 0; j < inner; ++j) {
          double d = static_cast<double>(row[j]) - mean;
          squares += d * d;
        }
        double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
        mean_out.set_double(r, mean);
        inv_std_out.set_double(r, inv_std);
        for (int64_t j = 0; j < inner; ++j) {
          int64_t i = r * inner + j;
          unravel(i, x.shape(), index);
          int64_t scale_offset = 0, bias_offset = 0;
          for (size_t k = 0; k < index.size(); ++k) {
            scale_offset += index[k] * scale_strides[k];
            if (bias_data) bias_offset += index[k] * bias_strides[k];
          }
          double normalized = (static_cast<double>(row[j]) - mean) * inv_std;
          double shifted = bias_data ? static_cast<double>(bias_data[bias_offset]) : 0.0;
          y_data[i] =
              static_cast<T>(normalized * static_cast<double>(scale_data[scale_offset]) + shifted);
        }
      }
    });
    context.outputs[0] = y;
  });
  // Mean and InvStdDev already have the stash type; only Y is rounded back to X's type.
  if (context.outputs.size() > 1) context.outputs[1] = mean_out;
  if (context.outputs.size() > 2) context.outputs[2] = inv_std_out;
}

// ---- reductions --------------------------------------------------------------------------------

enum class Reduction { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

Reduction reduction_of(const std::string& op_type) {
  static const std::map<std::string, Reduction> kByOp = {
      {"ReduceSum", Reduction::kSum},
      {"ReduceMean", Reduction::kMean},
      {"ReduceMax", Reduction::kMax},
      {"ReduceMin", Reduction::kMin},
      {"ReduceProd", Reduction::kProd},
      {"ReduceL1", Reduction::kL1},
      {"ReduceL2", Reduction::kL2},
      {"ReduceLogSum", Reduction::kLogSum},
      {"ReduceLogSumExp", Reduction::kLogSumExp},
      {"ReduceSumSquare", Reduction::kSumSquare}};
  return kByOp.at(op_type);
}

// The reduction of one group of values (every element that maps to one output element), in
// double. Over an empty group: sum-like ops give 0, Prod 1, Mean NaN (0 / 0), Max -inf, Min +inf,
// LogSum and LogSumExp log(0) = -inf.
double reduce_in_double(Reduction kind, const std::vector<double>& values) {
  double result = 0.0;
  switch (kind) {
    case Reduction::kSum:
      for (double v : values) result += v;
      return result;
    case Reduction::kMean:
      for (double v : values) result += v;
      return result / static_cast<double>(values.size());
    case Reduction::kMax:
      result = empty_max<double>();
      for (double v : values) result = replaces_max(v, result) ? v : result;
      return result;
    case Reduction::kMin:
      result = empty_min<double>();
      for (double v : values) result = replaces_min(v, result) ? v : result;
      return result;
    case Reduction::kProd:
      result = 1.0;
      for (double v : values) result *= v;
      return result;
    case Reduction::kL1:
      for (double v : values) result += std::abs(v);
      return result;
    case Reduction::kL2:
      for (double v : values) result += v * v;
      return std::sqrt(result);
    case Reduction::kLogSum:
      for (double v : values) result += v;
      return std::log(result);
    case Reduction::kLogSumExp: {
      // log(sum(exp(x))) = m + log(sum(exp(x - m))) with m = max(x): the same value without
      // overflowing exp; an infinite or NaN m (or no values) falls back to the plain formula.
      double m = reduce_in_double(Reduction::kMax, values);
      double shift = std::isfinite(m) ? m : 0.0;
      for (double v : values) result += std::exp(v - shift);
      return shift + std::log(result);
    }
    case Reduction::kSumSquare:
      for (double v : values) result += v * v;
      return result;
  }
  return result;
}

// Integer reductions that have an exact integer result: sums and products wrap modulo 2^64 and
// are then truncated to T (the wrap-around of T's own arithmetic); Mean truncates toward zero.
template <typename T>
T reduce_integers(Reduction kind, const std::vector<T>& values, const KernelContext& context) {
  using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  uint64_t result = kind == Reduction::kProd ? 1 : 0;
  switch (kind) {
    case Reduction::kMax: {
      T best = std::numeric_limits<T>::lowest();
      for (T v : values) best = std::max(best, v);
      return best;
    }
    case Reduction::kMin: {
      T best = std::numeric_limits<T>::max();
      for (T v : values) best = std::min(best, v);
      return best;
    }
    case Reduction::kSum:
    case Reduction::kMean:
      for (T v : values) result += static_cast<uint64_t>(static_cast<Wide>(v));
      break;
    case Reduction::kProd:
      for (T v : values) result *= static_cast<uint64_t>(static_cast<Wide>(v));
      break;
    case Reduction::kL1:
      for (T v : values) {
        uint64_t magnitude = static_cast<uint64_t>(static_cast<Wide>(v));
        if constexpr (std::is_signed_v<T>) {
          if (v < 0) magnitude = 0 - magnitude;  // |v|, exact even for the lowest value
        }
        result += magnitude;
      }
      break;
    case Reduction::kSumSquare:
      for (T v : values) {
        uint64_t wide = static_cast<uint64_t>(static_cast<Wide>(v));
        result += wide * wide;
      }
      break;
    default:
      RNNC_CHECK(false, "reduction computed in double reached the integer path");
  }
  if (kind == Reduction::kMean) {
    if (values.empty()) {
      context.fail_input("ReduceMean over an empty set is undefined for integer types");
    }
    Wide total = static_cast<Wide>(result);
    return static_cast<T>(total / static_cast<Wide>(values.size()));
  }
  return static_cast<T>(static_cast<Wide>(result));
}

// The reduced axes (true per reduced axis). Axes come from the attribute before the opset that
// made them an input (13 for ReduceSum, 18 for the others); an empty list means every axis, or,
// with noop_with_empty_axes = 1, none: each output element then "reduces" its one input element,
// so the elementwise part still applies (ReduceSumSquare gives x^2, ReduceLogSum log x), as the
// spec was clarified (onnx/onnx#6103) and ONNX Runtime does.
std::vector<bool> reduced_axes(const KernelContext& context, int64_t rank) {
  const Node& node = context.node;
  int since = node.op_type() == "ReduceSum" ? 13 : 18;
  std::vector<int64_t> axes;
  if (node.opset() < since) {
    axes = node.attr_ints("axes");
  } else {
    if (context.has_input(1)) axes = tensor_to_int64s(context.input(1));
    if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) == 1) {
      return std::vector<bool>(static_cast<size_t>(rank), false);
    }
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank) {
      context.fail_input(cat("axes[", i, "] = ", axes[i], " is out of range for rank ", rank));
    }
    if (reduced[static_cast<size_t>(axis)]) {
      context.fail_input(cat("axes[", i, "] = ", axes[i], " repeats axis ", axis));
    }
    reduced[static_cast<size_t>(axis)] = true;
  }
  return reduced;
}

// Groups the input's elements by the output element they reduce into, then reduces each group.
void reduce(KernelContext& context) {
  const Node& node = context.node;
  Reduction kind = reduction_of(node.op_type());
  Tensor data = widen_half(context.input(0));
  std::vector<bool> reduced = reduced_axes(context, data.rank());
  bool keepdims = node.attr_int("keepdims", 1) == 1;
  std::vector<int64_t> kept_shape, out_shape;
  for (int64_t i = 0; i < data.rank(); ++i) {
    bool r = reduced[static_cast<size_t>(i)];
    kept_shape.push_back(r ? 1 : data.dim(i));
    if (!r || keepdims) out_shape.push_back(r ? 1 : data.dim(i));
  }
  // Output position of an input element: its index with the reduced coordinates dropped.
  std::vector<int64_t> strides = row_major_strides(kept_shape);
  for (size_t i = 0; i < strides.size(); ++i) {
    if (reduced[i]) strides[i] = 0;
  }
  Tensor out(data.dtype(), out_shape);
  with_widened_halves(context, [&] {
    dispatch_numeric(data.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* values = data.data<T>();
      std::vector<std::vector<T>> groups(static_cast<size_t>(out.numel()));
      std::vector<int64_t> index;
      for (int64_t i = 0; i < data.numel(); ++i) {
        unravel(i, data.shape(), index);
        int64_t target = 0;
        for (size_t k = 0; k < index.size(); ++k) target += index[k] * strides[k];
        groups[static_cast<size_t>(target)].push_back(values[i]);
      }
      bool in_double = std::is_floating_point_v<T> || kind == Reduction::kL2 ||
                       kind == Reduction::kLogSum || kind == Reduction::kLogSumExp;
      for (int64_t o = 0; o < out.numel(); ++o) {
        const std::vector<T>& group = groups[static_cast<size_t>(o)];
        if (in_double) {
          std::vector<double> wide(group.begin(), group.end());
          // set_double rounds floats and truncates (saturating) integers.
          out.set_double(o, reduce_in_double(kind, wide));
        } else if constexpr (!std::is_floating_point_v<T>) {
          out.data<T>()[o] = reduce_integers<T>(kind, group, context);
        }
      }
    });
    context.outputs[0] = out;
  });
}

// The index along `axis` of the first (or, with select_last_index, the last) maximum or minimum.
// A NaN counts as the extreme value, as in numpy's argmax/argmin.
void arg_extremum(KernelContext& context) {
  const Node& node = context.node;
  bool is_max = node.op_type() == "ArgMax";
  Tensor data = widen_half(context.input(0));
  int64_t rank = data.rank();
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    context.fail_input(cat("attribute 'axis' = ", node.attr_int("axis", 0),
                           " is out of range for data of shape ", dims_text(data.shape())));
  }
  bool keepdims = node.attr_int("keepdims", 1) == 1;
  bool select_last = node.attr_int("select_last_index", 0) == 1;
  int64_t extent = data.dim(axis);
  if (extent == 0) {
    context.fail_input(cat("axis ", axis, " of data ", dims_text(data.shape()),
                           " is empty: ", node.op_type(), " of an empty set is undefined"));
  }
  int64_t outer = product(data.shape(), 0, static_cast<size_t>(axis));
  int64_t inner = product(data.shape(), static_cast<size_t>(axis) + 1, data.shape().size());
  std::vector<int64_t> out_shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis) {
      out_shape.push_back(data.dim(i));
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  Tensor out(DType::kInt64, out_shape);
  int64_t* out_data = out.data<int64_t>();
  dispatch_numeric(data.dtype(), context, [&](auto tag) {
    using T = decltype(tag);
    const T* values = data.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* line = values + o * extent * inner + i;
        int64_t best = 0;
        for (int64_t k = 1; k < extent; ++k) {
          T candidate = line[k * inner];
          T incumbent = line[best * inner];
          bool better =
              is_max ? replaces_max(candidate, incumbent) : replaces_min(candidate, incumbent);
          bool tie = select_last && !replaces_max(incumbent, candidate) &&
                     !replaces_min(incumbent, candidate);
          if (better || tie) best = k;
        }
        out_data[o * inner + i] = best;
      }
    }
  });
  context.outputs[0] = out;
}

// ---- Dropout -----------------------------------------------------------------------------------

// Inference: output = data and mask = all true (opset 10+: bool; before: data's type, all ones).
// Training mode (opset 12+ input training_mode = true) is random unless ratio = 0, where
// output = data / (1 - 0) * mask with a mask of all ones: the same identity.
void dropout(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& data = context.input(0);
  if (node.opset() >= 12 && context.has_input(2)) {
    const Tensor& training = context.input(2);
    if (training.numel() != 1) {
      context.fail_input(cat("input training_mode has shape ", dims_text(training.shape()),
                             ", expected a scalar"));
    }
    double ratio = context.has_input(1) ? context.input(1).get_double(0) : 0.5;
    if (training.get_int64(0) != 0 && ratio != 0.0) {
      raise_unsupported(cat(node.describe(), ": training_mode = true with ratio ", ratio,
                            " (random dropout) is not supported; rnnc runs inference only"));
    }
  }
  context.outputs[0] = data;
  if (context.outputs.size() > 1 && node.output(1)) {
    Tensor mask(node.opset() >= 10 ? DType::kBool : data.dtype(), data.shape());
    for (int64_t i = 0; i < mask.numel(); ++i) mask.set_double(i, 1.0);
    context.outputs[1] = mask;
  }
}

// y[..., j, ...] = sum of x[..., i, ...] over i <= j along the axis (i < j when exclusive; i >= j
// and i > j when reversed). Floats accumulate in double, each output rounded once; integers wrap
// modulo 2^bits.
void cumsum(KernelContext& context) {
  const Tensor& axis_input = context.input(1);
  Tensor x = widen_half(context.input(0));
  if (axis_input.numel() != 1) {
    context.fail_input(cat("input axis has shape ", dims_text(axis_input.shape()),
                           ", expected a scalar"));
  }
  int64_t rank = x.rank();
  int64_t axis = axis_input.get_int64(0);
  if (axis < -rank || axis >= rank) {
    context.fail_input(cat("input axis = ", axis, " is out of range for rank ", rank, " (valid: [",
                           -rank, ", ", rank - 1, "])"));
  }
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  bool exclusive = context.node.attr_int("exclusive", 0) == 1;
  bool reverse = context.node.attr_int("reverse", 0) == 1;
  int64_t outer = product(x.shape(), 0, a);
  int64_t length = x.shape()[a];
  int64_t inner = product(x.shape(), a + 1, x.shape().size());
  Tensor y(x.dtype(), x.shape());
  with_widened_halves(context, [&] {
    dispatch_numeric(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      using Sum = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          Sum sum = 0;
          for (int64_t step = 0; step < length; ++step) {
            int64_t j = reverse ? length - 1 - step : step;
            int64_t at = (o * length + j) * inner + i;
            Sum value = static_cast<Sum>(in[at]);
            if (!exclusive) sum += value;
            out[at] = static_cast<T>(sum);
            if (exclusive) sum += value;
          }
        }
      }
    });
    context.outputs[0] = y;
  });
}

// ---- TopK, LRN, MeanVarianceNormalization, Det ----------------------------------------------------

// The k largest (smallest) elements along the axis, in that order; equal values keep their index
// order (the lower index first) and NaN ranks above every number (numpy's sort order), so it
// comes first when largest and last otherwise. sorted = 0 leaves the order open; rnnc sorts.
void top_k(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  int64_t rank = x.rank();
  int64_t axis = node.attr_int("axis", -1);
  size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  int64_t k = node.opset() < 10 ? node.attr_int("k", 0) : context.input(1).get_int64(0);
  int64_t d = x.shape()[a];
  if (k < 0 || k > d) {
    context.fail_input(cat("k = ", k, " is outside [0, ", d, "], the elements along axis ", a));
  }
  bool largest = node.attr_int("largest", 1) == 1;
  std::vector<int64_t> shape = x.shape();
  shape[a] = k;
  Tensor values(x.dtype(), shape);
  Tensor indices(DType::kInt64, shape);
  int64_t outer = product(x.shape(), 0, a), inner = product(x.shape(), a + 1, x.shape().size());
  with_widened_halves(context, [&] {
    dispatch_numeric(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      std::vector<int64_t> order(static_cast<size_t>(d));
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t j) { return in[(o * d + j) * inner + i]; };
          // Rank: NaN above everything, then by value.
          auto above = [&](int64_t p, int64_t q) {
            T vp = at(p), vq = at(q);
            if constexpr (std::is_floating_point_v<T>) {
              if (std::isnan(vp) || std::isnan(vq)) return std::isnan(vp) && !std::isnan(vq);
            }
            return vp > vq;
          };
          for (int64_t j = 0; j < d; ++j) order[static_cast<size_t>(j)] = j;
          std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
            return largest ? above(p, q) : above(q, p);
          });
          for (int64_t j = 0; j < k; ++j) {
            int64_t out = (o * k + j) * inner + i;
            values.data<T>()[out] = at(order[static_cast<size_t>(j)]);
            indices.data<int64_t>()[out] = order[static_cast<size_t>(j)];
          }
        }
      }
    });
    context.outputs[0] = values;
    context.outputs[1] = indices;
  });
}

// Y = X / (bias + alpha / size * square_sum)^beta, square_sum over the channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] that exist.
void lrn(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  double alpha = node.attr_float("alpha", 0.0001f), beta = node.attr_float("beta", 0.75f);
  double bias = node.attr_float("bias", 1.0f);
  int64_t size = node.attr_int("size", 1);
  int64_t channels = x.dim(1), plane = product(x.shape(), 2, x.shape().size());
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor y(x.dtype(), x.shape());
  with_widened_halves(context, [&] {
    dispatch_float(x.dtype(), context, [&](auto tag) {
      using T = decltype(tag);
      const T* in = x.data<T>();
      for (int64_t n = 0; n < x.dim(0); ++n) {
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t p = 0; p < plane; ++p) {
            double square_sum = 0;
            for (int64_t i = std::max<int64_t>(0, c - before);
                 i <= std::min<int64_t>(channels - 1, c + after); ++i) {
              double v = static_cast<double>(in[(n * channels + i) * plane + p]);
              square_sum += v * v;
            }
            int64_t at = (n * channels + c) * plane + p;
            y.data<T>()[at] = static_cast<T>(static_cast<double>(in[at]) /
                                             std::pow(bias + alpha / static_cast<double>(size) *
                                                                 square_sum,
                                                      beta));
          }
        }
      }
    });
    context.outputs[0] = y;
  });
}

// Y = (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes` (default [0, 2, 3]), the spec's
// function body, in double.
void mean_variance_normalization(KernelContext& context) {
  Tensor x = widen_half(context.input(0));
  int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t axis : context.node.attr_ints("axes", {0, 2, 3})) {
    if (axis < -rank || axis >= rank) {
      context.fail_input(cat("attribute 'axes' entry ", axis, " is out of range for rank ", rank));
    }
    reduced[static_cast<size_t>(axis < 0 ? axis + rank : axis)] = true;
  }
  // Group elements by their coordinates on the kept axes.
  std::vector<int64_t> kept_shape, index;
  for (int64_t k = 0; k < rank; ++k) {
    if (!reduced[static_cast<size_t>(k)]) kept_shape.push_back(x.dim(k));
  }
  int64_t groups = product(kept_shape, 0, kept_shape.size());
  std::vector<int64_t> group_of(static_cast<size_t>(x.numel()));
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    unravel(flat, x.shape(), index);
    int64_t group = 0;
    for (int64_t k = 0; k < rank; ++k) {
      if (!reduced[static_cast<size_t>(k)])
        group = group * x.dim(k) + index[static_cast<size_t>(k)];
    }
    group_of[static_cast<size_t>(flat)] = group;
  }
  std::vector<double> sum(static_cast<size_t>(groups), 0), square(static_cast<size_t>(groups), 0);
  std::vector<int64_t> count(static_cast<size_t>(groups), 0);
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    size_t g = static_cast<size_t>(group_of[static_cast<size_t>(flat)]);
    double v = x.get_double(flat);
    sum[g] += v;
    square[g] += v * v;
    ++count[g];
  }
  Tensor y(x.dtype(), x.shape());
  for (int64_t flat = 0; flat < x.numel(); ++flat) {
    size_t g = static_cast<size_t>(group_of[static_cast<size_t>(flat)]);
    double n = static_cast<double>(count[g]);
    double mean = sum[g] / n;
    double deviation = std::sqrt(square[g] / n - mean * mean);
    y.set_double(flat, (x.get_double(flat) - mean) / (deviation + 1e-9));
  }
  context.outputs[0] = narrow_to(y, context.input(0).dtype());
}

// MaxUnpool: zeros with Y[position of I[e]] = X[e]. I holds flat indices over the tensor MaxPool
// saw, of size (in - 1) * stride + kernel - pad_begin - pad_end per spatial axis (the default
// output); output_shape may make the output larger (what a ceil-mode pool lost), and each element
// keeps its coordinates, the extra rows and columns at the end staying 0. A repeated index keeps
// the last element written (row-major order of X).
void max_unpool(KernelContext& context) {
  const Node& node = context.node;
  const Tensor& x = context.input(0);
  const Tensor& indices = context.input(1);
  check_spatial_rank(context, x);
  if (indices.shape() != x.shape()) {
    context.fail_input(cat("input I has shape ", dims_text(indices.shape()), " but X has shape ",
                           dims_text(x.shape())));
  }
  size_t spatial = x.shape().size() - 2;
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  std::vector<int64_t> pooled = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < spatial; ++i) {
    // The formula can go negative for an empty axis: no element, size 0.
    int64_t in = x.dim(static_cast<int64_t>(i) + 2);
    pooled.push_back(
        std::max<int64_t>(0, (in - 1) * strides[i] + kernel[i] - pads[i] - pads[i + spatial]));
  }
  std::vector<int64_t> shape = pooled;
  if (context.has_input(2)) {
    shape = tensor_to_int64s(context.input(2));
    if (shape.size() != x.shape().size()) {
      context.fail_input(cat("input output_shape ", dims_text(shape), " has ", shape.size(),
                             " entries for X of rank ", x.rank()));
    }
  }
  Tensor y(x.dtype(), shape);
  std::vector<int64_t> strides_out = row_major_strides(shape);
  std::vector<int64_t> position;
  size_t element = dtype_size(x.dtype());
  int64_t pooled_size = product(pooled, 0, pooled.size());
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t index = indices.data<int64_t>()[e];
    bool inside = index >= 0 && index < pooled_size;
    if (inside) unravel(index, pooled, position);
    int64_t target = 0;
    for (size_t k = 0; inside && k < shape.size(); ++k) {
      inside = position[k] < shape[k];
      target += position[k] * strides_out[k];
    }
    if (!inside) {
      context.fail_input(cat("input I element ", e, " = ", index, " is outside the pooled input ",
                             dims_text(pooled), " or the output ", dims_text(shape)));
    }
    std::memcpy(static_cast<uint8_t*>(y.raw_data()) + static_cast<size_t>(target) * element,
                static_cast<const uint8_t*>(x.raw_data()) + static_cast<size_t>(e) * element,
                element);
  }
  context.outputs[0] = y;
}

// NonMaxSuppression, per batch and class: the boxes scoring above score_threshold, taken in
// descending score order (equal scores in box order), each kept unless its IoU with a box already
// kept exceeds iou_threshold, up to max_output_boxes_per_class (0 keeps none). Boxes are corners
// [y1, x1, y2, x2] of either diagonal (center_point_box = 0) or [x, y, width, height] around a
// center (1); an IoU whose union is not positive counts as 0.
void non_max_suppression(KernelContext& context) {
  const Tensor& boxes = context.input(0);
  const Tensor& scores = context.input(1);
  if (boxes.rank() != 3 || boxes.dim(2) != 4 || scores.rank() != 3 ||
      boxes.dim(0) != scores.dim(0) || boxes.dim(1) != scores.dim(2)) {
    context.fail_input(cat("input boxes ", dims_text(boxes.shape()), " and scores ",
                           dims_text(scores.shape()),
                           " do not fit [batches, boxes, 4] and [batches, classes, boxes]"));
  }
  auto scalar = [&](size_t i, double fallback) {
    return context.has_input(i) && context.input(i).numel() > 0 ? context.input(i).get_double(0)
                                                                : fallback;
  };
  int64_t max_boxes =
      context.has_input(2) && context.input(2).numel() > 0 ? context.input(2).get_int64(0) : 0;
  double iou_threshold = scalar(3, 0.0);
  bool has_score_threshold = context.has_input(4) && context.input(4).numel() > 0;
  double score_threshold = scalar(4, 0.0);
  bool center = context.node.attr_int("center_point_box", 0) == 1;
  int64_t batches = boxes.dim(0), count = boxes.dim(1), classes = scores.dim(1);
  struct Box {
    double y1, x1, y2, x2;
  };
  auto box_at = [&](int64_t b, int64_t i) {
    const float* v = boxes.data<float>() + (b * count + i) * 4;
    if (center) {
      double x = v[0], y = v[1], w = v[2], h = v[3];
      return Box{y - h / 2, x - w / 2, y + h / 2, x + w / 2};
    }
    return Box{std::min<double>(v[0], v[2]), std::min<double>(v[1], v[3]),
               std::max<double>(v[0], v[2]), std::max<double>(v[1], v[3])};
  };
  auto iou = [](const Box& a, const Box& b) {
    double height = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
    double width = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
    double inter = height > 0 && width > 0 ? height * width : 0;
    double area_a = (a.y2 - a.y1) * (a.x2 - a.x1), area_b = (b.y2 - b.y1) * (b.x2 - b.x1);
    double union_area = area_a + area_b - inter;
    return union_area > 0 ? inter / union_area : 0.0;
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* class_scores = scores.data<float>() + (b * classes + c) * count;
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i) {
        if (!has_score_threshold || class_scores[i] > score_threshold) candidates.push_back(i);
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t p, int64_t q) { return class_scores[p] > class_scores[q]; });
      std::vector<Box> kept;
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= max_boxes) break;
        Box box = box_at(b, i);
        bool suppressed = false;
        for (const Box& other : kept) suppressed = suppressed || iou(box, other) > iou_threshold;
        if (suppressed) continue;
        kept.push_back(box);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  context.outputs[0] =
      Tensor::from_vector<int64_t>({static_cast<int64_t>(selected.size() / 3), 3}, selected);
}

// RoiAlign: each region rois[r] = (x1, y1, x2, y2) of image batch_indices[r], scaled by
// spatial_scale (and shifted by half a pixel in half_pixel mode), is cut into
// output_height x output_width bins; each bin samples a grid of sampling_ratio^2 points (when 0:
// ceil(roi size / output size) per axis) bilinearly. avg averages the samples; max takes the
// largest weighted corner value over the samples, as ONNX's reference and ONNX Runtime compute it.
// A sample more than one pixel outside X contributes 0.
void roi_align(KernelContext& context) {
  const Node& node = context.node;
  Tensor x = widen_half(context.input(0));
  Tensor rois = widen_half(context.input(1));
  const Tensor& batch_indices = context.input(2);
  if (x.rank() != 4 || rois.rank() != 2 || rois.dim(1) != 4 ||
      batch_indices.numel() != rois.dim(0)) {
    context.fail_input(cat("inputs X ", dims_text(x.shape()), ", rois ", dims_text(rois.shape()),
                           " and batch_indices ", dims_text(batch_indices.shape()),
                           " do not fit (N x C x H x W), (num_rois x 4), (num_rois)"));
  }
  bool half_pixel = node.opset() >= 16 && node.attr_string("coordinate_transformation_mode",
                                                           "half_pixel") == "half_pixel";
  bool max_mode = node.attr_string("mode", "avg") == "max";
  int64_t out_h = node.attr_int("output_height", 1), out_w = node.attr_int("output_width", 1);
  int64_t ratio = node.attr_int("sampling_ratio", 0);
  double scale = node.attr_float("spatial_scale", 1.0f);
  int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  int64_t regions = rois.dim(0);
  Tensor y(x.dtype(), {regions, channels, out_h, out_w});
  double offset = half_pixel ? 0.5 : 0.0;
  struct Sample {
    int64_t pos[4];
    double weight[4];
    bool valid;
  };
  with_widened_halves(context, [&] {
    for (int64_t r = 0; r < regions; ++r) {
      int64_t image = batch_indices.get_int64(r);
      if (image < 0 || image >= x.dim(0)) {
        context.fail_input(cat("input batch_indices element ", r, " = ", image, " is outside the ",
                               x.dim(0), " images of X"));
      }
      double start_w = rois.get_double(r * 4) * scale - offset;
      double start_h = rois.get_double(r * 4 + 1) * scale - offset;
      double roi_w = rois.get_double(r * 4 + 2) * scale - offset - start_w;
      double roi_h = rois.get_double(r * 4 + 3) * scale - offset - start_h;
      if (!half_pixel) {
        roi_w = std::max(roi_w, 1.0);
        roi_h = std::max(roi_h, 1.0);
      }
      double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
      int64_t grid_h =
          ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(out_h)));
      int64_t grid_w =
          ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(out_w)));
      double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      for (int64_t ph = 0; ph < out_h; ++ph) {
        for (int64_t pw = 0; pw < out_w; ++pw) {
          std::vector<Sample> samples;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            double sy = start_h + static_cast<double>(ph) * bin_h +
                        (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double sx = start_w + static_cast<double>(pw) * bin_w +
                          (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              Sample sample{};
              sample.valid = !(sy < -1.0 || sy > static_cast<double>(height) || sx < -1.0 ||
                               sx > static_cast<double>(width));
              if (sample.valid) {
                double yy = std::max(sy, 0.0), xx = std::max(sx, 0.0);
                int64_t y_low = static_cast<int64_t>(yy), x_low = static_cast<int64_t>(xx);
                int64_t y_high = y_low + 1, x_high = x_low + 1;
                if (y_low >= height - 1) {
                  y_high = y_low = height - 1;
                  yy = static_cast<double>(y_low);
                }
                if (x_low >= width - 1) {
                  x_high = x_low = width - 1;
                  xx = static_cast<double>(x_low);
                }
                double ly = yy - static_cast<double>(y_low), lx = xx - static_cast<double>(x_low);
                double hy = 1 - ly, hx = 1 - lx;
                sample = {{y_low * width + x_low, y_low * width + x_high, y_high * width + x_low,
                           y_high * width + x_high},
                          {hy * hx, hy * lx, ly * hx, ly * lx},
                          true};
              }
              samples.push_back(sample);
            }
          }
          for (int64_t c = 0; c < channels; ++c) {
            int64_t plane = (image * channels + c) * height * width;
            double value = 0;
            bool first = true;
            for (const Sample& sample : samples) {
              double v[4] = {0, 0, 0, 0};
              if (sample.valid) {
                for (int k = 0; k < 4; ++k) {
                  v[k] = sample.weight[k] * x.get_double(plane + sample.pos[k]);
                }
              }
              if (max_mode) {
                double best = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                value = first ? best : std::max(value, best);
                first = false;
              } else {
                value += v[0] + v[1] + v[2] + v[3];
              }
            }
            y.set_double(((r * channels + c) * out_h + ph) * out_w + pw,
                         max_mode ? value : value / count);
          }
        }
      }
    }
    context.outputs[0] = y;
  });
}

// det of each trailing M x M matrix, by LU decomposition with partial pivoting in double.
void det(KernelContext& context) {
  Tensor x = widen_half(context.input(0));
  int64_t rank = x.rank();
  int64_t m = x.dim(rank - 1);
  if (rank < 2 || x.dim(rank - 2) != m) {
    context.fail_input(cat("input X has shape ", dims_text(x.shape()), ", expected [*, M, M]"));
  }
  std::vector<int64_t> shape(x.shape().begin(), x.shape().end() - 2);
  Tensor y(x.dtype(), shape);
  std::vector<double> a(static_cast<size_t>(m * m));
  for (int64_t b = 0; b < y.numel(); ++b) {
    for (int64_t e = 0; e < m * m; ++e) a[static_cast<size_t>(e)] = x.get_double(b * m * m + e);
    auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * m + c)]; };
    double result = 1;
    for (int64_t col = 0; col < m; ++col) {
      int64_t pivot = col;
      for (int64_t r = col + 1; r < m; ++r) {
        if (std::fabs(at(r, col)) > std::fabs(at(pivot, col))) pivot = r;
      }
      if (at(pivot, col) == 0) {
        result = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t c = 0; c < m; ++c) std::swap(at(pivot, c), at(col, c));
        result = -result;
      }
      result *= at(col, col);
      for (int64_t r = col + 1; r < m; ++r) {
        double factor = at(r, col) / at(col, col);
        for (int64_t c = col; c < m; ++c) at(r, c) -= factor * at(col, c);
      }
    }
    y.set_double(b, result);
  }
  context.outputs[0] = narrow_to(y, context.input(0).dtype());
}

}  // namespace

void register_nn_kernels(std::map<std::string, Kernel>& registry) {
  registry["Conv"] = conv;
  registry["ConvTranspose"] = conv_transpose;
  registry["CumSum"] = cumsum;
  registry["TopK"] = top_k;
  registry["LRN"] = lrn;
  registry["MeanVarianceNormalization"] = mean_variance_normalization;
  registry["Det"] = det;
  registry["MaxUnpool"] = max_unpool;
  registry["NonMaxSuppression"] = non_max_suppression;
  registry["RoiAlign"] = roi_align;
  registry["MaxPool"] = max_pool;
  registry["AveragePool"] = average_pool;
  registry["GlobalAveragePool"] = global_pool;
  registry["GlobalMaxPool"] = global_pool;
  registry["BatchNormalization"] = batch_norm;
  registry["InstanceNormalization"] = instance_norm;
  registry["LayerNormalization"] = layer_norm;
  for (const char* op :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    registry[op] = reduce;
  }
  registry["ArgMax"] = arg_extremum;
  registry["ArgMin"] = arg_extremum;
  registry["Dropout"] = dropout;
}

}  // namespace rnnc
