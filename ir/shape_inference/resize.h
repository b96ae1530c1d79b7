// Resize and Upsample operands shared by shape inference (resize.cc) and the reference kernel
// (ir/reference/kernels_resize.cc): the attributes valid at the node's opset, where each input
// sits, and the output size and coordinate scale of every axis (docs/ops/resize.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/graph.h"

namespace rnnc {

struct ResizeAttributes {
  std::string mode;             // nearest, linear, cubic
  std::string coordinate_mode;  // coordinate_transformation_mode
  std::string nearest_mode;     // round_prefer_floor, round_prefer_ceil, floor, ceil
  double cubic_coeff_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  bool antialias = false;
  std::string keep_aspect_ratio_policy;  // stretch, not_larger, not_smaller
  std::vector<int64_t> axes;             // the attribute as written; empty: every axis
};

// Reads and validates the attributes for the node's op and opset (Upsample-7/9: mode; Resize-10:
// mode; 11: coordinate modes, cubic, nearest_mode, extrapolation; 18: antialias, axes,
// keep_aspect_ratio_policy; 19: half_pixel_symmetric). kInvalidModel naming the attribute.
ResizeAttributes read_resize_attributes(const Node& node);

// Input positions of the node's form; -1 where the form has no such input.
struct ResizeInputs {
  int roi = -1;
  int scales = -1;
  int sizes = -1;
};
ResizeInputs resize_inputs(const Node& node);

// Per axis of X: the output size, the scale the coordinate transforms divide by, and the resized
// length they use. The length is `in * scale` before the floor (as ONNX's reference computes it)
// so align_corners, pytorch_half_pixel and tf_crop_and_resize see 2.4 for 4 * 0.6, not 2; it is
// the output size itself when sizes give it directly.
struct ResizeGeometry {
  std::vector<int64_t> output;
  std::vector<double> scale;
  std::vector<double> length;
  std::vector<double> roi;  // starts then ends, one pair per axis (0 and 1 where not given)
};

// The output sizes from X's dims and the given scales (floats > 0) or sizes (ints >= 0), each one
// entry per axis of X or per entry of `axes`; roi likewise in pairs. Exactly one of scales and
// sizes must be given. Problems in these values raise `kind` (kInvalidModel when they are
// constants seen by inference, kInvalidInput at run time), naming the node and the input.
ResizeGeometry resize_geometry(const Node& node, const ResizeAttributes& attributes,
                               const std::vector<int64_t>& input_dims,
                               const std::optional<std::vector<double>>& scales,
                               const std::optional<std::vector<int64_t>>& sizes,
                               const std::optional<std::vector<double>>& roi, ErrorKind kind);

// The axes `axes` names, normalized against rank (every axis when empty); kInvalidModel naming
// the attribute when out of range or repeated.
std::vector<int64_t> resize_axes(const Node& node, const ResizeAttributes& attributes,
                                 int64_t rank);

// The cubic convolution kernel with coefficient a (Keys 1981): 1 at 0, 0 at the other integers
// (Resize's cubic mode, GridSample's bicubic with a = -0.75).
double cubic_weight(double t, double a);

// One input position of an axis's interpolation and its weight.
struct Tap {
  int64_t index;
  double weight;
};

// The taps of output position `o` of an axis of `in` elements resized to `out` (with `scale` and
// the real-valued `length` of ResizeGeometry, and the axis's roi): the coordinate transform, then
// nearest (one tap), linear (two) or cubic (four), the filter stretched by antialias, outside taps
// dropped by exclude_outside, indices clamped into the input. `outside` when tf_crop_and_resize
// maps the position out of the input (its output is extrapolation_value). The reference kernel
// and the compiled lowering (lowering/lower_resize.cc) both sample with this.
struct AxisSample {
  std::vector<Tap> taps;
  bool outside = false;
};
AxisSample sample_axis(const ResizeAttributes& attributes, int64_t o, int64_t in, int64_t out,
                       double scale, double length, double roi_start, double roi_end);

}  // namespace rnnc
