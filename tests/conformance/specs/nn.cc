// Convolution, pooling, normalization, reductions, ArgMax/ArgMin, Dropout (docs/ops/nn.md).
// Window geometry (kernel, strides, dilations, pads, auto_pad), per-channel parameter shapes and
// reduction axes depend on the input's rank and dims: named special cases set them.
#include "tests/conformance/spec.h"

// One operand or attribute per line reads as a table, which clang-format would undo.
// clang-format off
namespace rnnc::conformance {

namespace {

const std::vector<DType> kFloat16To64 = {DType::kFloat16, DType::kFloat32, DType::kFloat64};
const std::vector<DType> kInt64 = {DType::kInt64};
const std::vector<DType> kBool = {DType::kBool};
// ReduceSum/Mean/Prod/L1/L2/LogSum/LogSumExp/SumSquare.
const std::vector<DType> kReduceTypes = kFloatTypes + std::vector<DType>{
                                                          DType::kInt32, DType::kInt64,
                                                          DType::kUInt32, DType::kUInt64};

// The reductions: axes as an attribute before `input_since`, as an optional input from it.
Op reduce(const std::string& op_type, const std::vector<DType>& types, int input_since) {
  return Op(op_type, 21)
      .also_opsets({input_since == 13 ? 11 : 13})
      .types("T", types)
      .types("I", kInt64)
      .attr_int("keepdims", "1", {{0, 1}})
      .attr_int("noop_with_empty_axes", "0", {{0, 1}}).since(input_since)
      .attr_by_special("axes", AttrKind::kInts, "all axes").until(input_since - 1)
      .in("data", "T").rank(0, 4).specials()
      .in("axes", "I").optional().rank(1, 1).by_special().may_be_constant().since(input_since)
      .out("reduced", "T")
      .special("reduce");
}

}  // namespace

void add_nn_specs(std::vector<OpSpec>& specs) {
  specs.push_back(Op("Conv", 21)
                      .types("T", kFloat16To64)
                      .attr_string("auto_pad", "NOTSET",
                                   {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_int("group", "1", {{1, 3}})
                      .attr_by_special("kernel_shape", AttrKind::kInts, "W's spatial dims")
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("X", "T").rank(3, 5).specials()
                      .in("W", "T").rank(3, 5).normal(0, 0.5).may_be_constant()
                      .in("B", "T").optional().rank(1, 1).may_be_constant()
                      .out("Y", "T")
                      .special("conv")
                      .note("C = group * W.shape[1]; M divisible by group; spatial dims at "
                            "least the dilated kernel minus the pads"));
  specs.push_back(Op("ConvTranspose", 21)
                      .types("T", kFloat16To64)
                      .attr_string("auto_pad", "NOTSET",
                                   {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_int("group", "1", {{1, 3}})
                      .attr_by_special("kernel_shape", AttrKind::kInts, "W's spatial dims")
                      .attr_by_special("output_padding", AttrKind::kInts, "0 per spatial axis")
                      .attr_by_special("output_shape", AttrKind::kInts, "from the pads")
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("X", "T").rank(3, 5).specials()
                      .in("W", "T").rank(3, 5).normal(0, 0.5).may_be_constant()
                      .in("B", "T").optional().rank(1, 1).may_be_constant()
                      .out("Y", "T")
                      .special("conv_transpose")
                      .note("W = C x M/group x k...; output_padding below the stride; pads leave "
                            "an output of at least 1; output_shape within 1 of the padded size"));
  specs.push_back(Op("CumSum", 21)
                      .also_opsets({11})
                      .types("T", {DType::kUInt32, DType::kUInt64, DType::kInt32, DType::kInt64,
                                   DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                   DType::kBFloat16})
                      .type_since("T", DType::kFloat16, 14)
                      .type_since("T", DType::kBFloat16, 14)
                      .types("T2", {DType::kInt32, DType::kInt64})
                      .attr_int("exclusive", "0", {{0, 1}})
                      .attr_int("reverse", "0", {{0, 1}})
                      .in("x", "T").rank(1, 4).specials()
                      .in("axis", "T2").rank(0, 0).by_special().may_be_constant()
                      .out("y", "T")
                      .special("cumsum")
                      .note("axis in [-rank, rank - 1], as a scalar"));
  specs.push_back(Op("Resize", 21)
                      .also_opsets({19, 18, 13, 11, 10})
                      .types("T1", kAllTypes)
                      .type_since("T1", DType::kBFloat16, 13)
                      .types("T2", kFloat16To64)
                      .types("F", {DType::kFloat32})
                      .types("I", kInt64)
                      .attr_string("mode", "nearest", {"nearest", "linear", "cubic"})
                      .attr_string("coordinate_transformation_mode", "half_pixel",
                                   {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                    "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                    "tf_crop_and_resize"}).since(11)
                      .attr_string("nearest_mode", "round_prefer_floor",
                                   {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
                      .since(11)
                      .attr_float("cubic_coeff_a", "-0.75", {{-1.0, -0.25}}).since(11)
                      .attr_int("exclude_outside", "0", {{0, 1}}).since(11)
                      .attr_float("extrapolation_value", "0", {{-2.0, 2.0}}).since(11)
                      .attr_int("antialias", "0", {{0, 1}}).since(18)
                      .attr_by_special("axes", AttrKind::kInts, "every axis").since(18)
                      .attr_string("keep_aspect_ratio_policy", "stretch",
                                   {"stretch", "not_larger", "not_smaller"}).since(18)
                      .in("X", "T1").rank(1, 4).specials()
                      .in("roi", "T2").optional().rank(1, 1).by_special().may_be_constant()
                      .since(11)
                      .in("scales", "F").optional().rank(1, 1).by_special().may_be_constant()
                      .in("sizes", "I").optional().rank(1, 1).by_special().may_be_constant()
                      .since(11)
                      .out("Y", "T1")
                      .special("resize")
                      .note("scales (dyadic and a few others) or sizes, per axis or per `axes`; "
                            "modes valid at the opset (cubic from 11, tf_half_pixel_for_nn 11-12, "
                            "half_pixel_symmetric from 19); strings only nearest; roi for "
                            "tf_crop_and_resize partly outside [0, 1]"));
  specs.push_back(Op("Upsample", 9)
                      .also_opsets({7})
                      .types("T", kAllButBFloat16)
                      .types("F", {DType::kFloat32})
                      .attr_string("mode", "nearest", {"nearest", "linear"})
                      .attr_by_special("scales", AttrKind::kFloats, "").until(8)
                      .in("X", "T").rank(1, 4).specials()
                      .in("scales", "F").rank(1, 1).by_special().may_be_constant().since(9)
                      .out("Y", "T")
                      .special("upsample")
                      .note("deprecated in opset 10; scales >= 1 (1, 1.5, 2, 3); strings only "
                            "nearest"));
  for (const char* window : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    specs.push_back(Op(window, 21)
                        .types("T1", {DType::kInt32, DType::kInt64})
                        .types("T2", kNumericTypes)
                        .attr_by_special("output_datatype", AttrKind::kInt, "1 (float)")
                        .attr_int("periodic", "1", {{0, 1}})
                        .in("size", "T1").rank(0, 0).by_special().may_be_constant()
                        .out("output", "T2")
                        .special("window")
                        .note("size 1..12; output_datatype is T2's code"));
  }
  specs.push_back(Op("DFT", 21)
                      .also_opsets({17})
                      .types("T1", kFloatTypes)
                      .types("T2", {DType::kInt32, DType::kInt64})
                      .types("A", kInt64)
                      .attr_int("inverse", "0", {{0, 1}})
                      .attr_int("onesided", "0", {{0, 1}})
                      .attr_by_special("axis", AttrKind::kInt, "1").until(19)
                      .in("input", "T1").rank(3, 4).specials()
                      .in("dft_length", "T2").optional().rank(0, 0).by_special().may_be_constant()
                      .in("axis", "A").optional().rank(0, 0).by_special().since(20)
                      .out("output", "T1")
                      .special("dft")
                      .tolerance_scale(10)
                      .note("last dim 1 (real) or 2 (complex; not with onesided); any signal axis "
                            "but the last; dft_length shorter or longer than the axis; no inverse "
                            "onesided (unsupported)"));
  specs.push_back(Op("STFT", 21)
                      .also_opsets({17})
                      .types("T1", kFloatTypes)
                      .types("T2", {DType::kInt32, DType::kInt64})
                      .attr_int("onesided", "1", {{0, 1}})
                      .in("signal", "T1").rank(3, 3).specials()
                      .in("frame_step", "T2").rank(0, 0).by_special().may_be_constant()
                      .in("window", "T1").optional().rank(1, 1).by_special()
                      .in("frame_length", "T2").optional().rank(0, 0).by_special()
                      .may_be_constant()
                      .out("output", "T1")
                      .special("stft")
                      .tolerance_scale(10)
                      .note("[batch, length, 1 or 2]; frame_length from the input, the window or "
                            "both (equal)"));
  specs.push_back(Op("MelWeightMatrix", 21)
                      .types("T1", {DType::kInt32, DType::kInt64})
                      .types("T2", kFloatTypes)
                      .types("T3", kNumericTypes)
                      .attr_by_special("output_datatype", AttrKind::kInt, "1 (float)")
                      .in("num_mel_bins", "T1").rank(0, 0).by_special()
                      .in("dft_length", "T1").rank(0, 0).by_special()
                      .in("sample_rate", "T1").rank(0, 0).by_special()
                      .in("lower_edge_hertz", "T2").rank(0, 0).by_special()
                      .in("upper_edge_hertz", "T2").rank(0, 0).by_special()
                      .out("output", "T3")
                      .special("mel_weight_matrix")
                      .note("1..10 bands over [0..200 Hz, up to Nyquist] of 8 or 16 kHz, "
                            "dft_length 16..512"));
  specs.push_back(Op("TopK", 21)
                      .also_opsets({10, 11})
                      .types("T", kFloat16To64 + kSignedTypes + kUnsignedTypes)
                      .type_since("T", kSignedTypes + kUnsignedTypes, 11)
                      .types("I", kInt64)
                      .attr_int("axis", "-1", {{-4, 3}})
                      .attr_int("largest", "1", {{0, 1}}).since(11)
                      .attr_int("sorted", "1", {{1, 1}}).since(11)
                      .in("X", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("K", "I").rank(1, 1).by_special().may_be_constant()
                      .out("Values", "T")
                      .out("Indices", "I")
                      .special("top_k")
                      .note("k in [0, d]; sorted = 1 only (0 leaves the order open); ties among "
                            "the values; non-negative axis at opset 10"));
  specs.push_back(Op("LRN", 21)
                      .types("T", kFloatTypes)
                      .attr_float("alpha", "0.0001", {{0.0, 0.01}})
                      .attr_float("beta", "0.75", {{0.25, 1.0}})
                      .attr_float("bias", "1.0", {{0.5, 2.0}})
                      .attr_int("size", "", {{1, 5}}).required()
                      .in("X", "T").rank(2, 4).specials()
                      .out("Y", "T"));
  specs.push_back(Op("MeanVarianceNormalization", 21)
                      .types("T", kFloatTypes)
                      .attr_by_special("axes", AttrKind::kInts, "[0, 2, 3]")
                      .in("X", "T").rank(1, 4).specials()
                      .out("Y", "T")
                      .special("mean_variance_normalization")
                      .note("axes a random subset (default [0, 2, 3] on rank-4 inputs)"));
  specs.push_back(Op("Det", 21)
                      .types("T", kFloat16To64)
                      .in("X", "T").rank(2, 4).specials()
                      .out("Y", "T")
                      .special("det")
                      .note("square trailing matrices of 1..4"));
  specs.push_back(Op("MaxUnpool", 21)
                      .also_opsets({9})
                      .types("T1", kFloat16To64)
                      .types("T2", kInt64)
                      .attr_by_special("kernel_shape", AttrKind::kInts, "").required()
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("X", "T1").rank(3, 5).specials()
                      .in("I", "T2").rank(3, 5).by_special()
                      .in("output_shape", "T2").optional().rank(1, 1).by_special().since(11)
                      .out("output", "T1")
                      .special("max_unpool")
                      .note("indices of one element per pooling window, as MaxPool gives them; "
                            "output_shape the pooled size plus 0..1 per spatial axis"));
  specs.push_back(Op("NonMaxSuppression", 21)
                      .also_opsets({10})
                      .types("F", {DType::kFloat32})
                      .types("I", kInt64)
                      .attr_int("center_point_box", "0", {{0, 1}})
                      .in("boxes", "F").rank(3, 3).by_special()
                      .in("scores", "F").rank(3, 3).by_special()
                      .in("max_output_boxes_per_class", "I").optional().rank(0, 0).by_special()
                      .in("iou_threshold", "F").optional().rank(0, 0).by_special()
                      .in("score_threshold", "F").optional().rank(0, 0).by_special()
                      .out("selected_indices", "I")
                      .special("non_max_suppression")
                      .note("boxes on a small grid (overlaps, identical and flipped corners); "
                            "distinct scores (ties leave the order open); thresholds in [0, 1]"));
  specs.push_back(Op("GridSample", 16)
                      .types("T1", kFloat16To64)
                      .types("T2", kFloat16To64)
                      .attr_string("mode", "bilinear", {"bilinear", "nearest", "bicubic"})
                      .attr_string("padding_mode", "zeros", {"zeros", "border", "reflection"})
                      .attr_int("align_corners", "0", {{0, 1}})
                      .in("X", "T1").rank(4, 4).specials()
                      .in("grid", "T2").rank(4, 4).by_special()
                      .out("Y", "T1")
                      .special("grid_sample")
                      .note("tested at opset 16 (4-D); grid points in [-1.25, 1.25], beyond the "
                            "input for the padding modes, and on the pixel lattice"));
  specs.push_back(Op("RoiAlign", 21)
                      .also_opsets({10})
                      .types("T1", kFloat16To64)
                      .types("T2", kInt64)
                      .attr_string("mode", "avg", {"avg", "max"})
                      .attr_string("coordinate_transformation_mode", "half_pixel",
                                   {"half_pixel", "output_half_pixel"}).since(16)
                      .attr_int("output_height", "1", {{1, 4}})
                      .attr_int("output_width", "1", {{1, 4}})
                      .attr_int("sampling_ratio", "0", {{0, 3}})
                      .attr_float("spatial_scale", "1.0", {{0.25, 1.0}})
                      .in("X", "T1").rank(4, 4).specials()
                      .in("rois", "T1").rank(2, 2).by_special()
                      .in("batch_indices", "T2").rank(1, 1).by_special()
                      .out("Y", "T1")
                      .special("roi_align")
                      .note("regions inside and partly outside X, some degenerate"));
  specs.push_back(Op("MaxPool", 21)
                      .types("T", kFloat16To64 + std::vector<DType>{DType::kInt8, DType::kUInt8})
                      .types("I", kInt64)
                      .attr_string("auto_pad", "NOTSET",
                                   {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
                      .attr_int("ceil_mode", "0", {{0, 1}})
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_by_special("kernel_shape", AttrKind::kInts, "").required()
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_int("storage_order", "0", {{0, 1}})
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("X", "T").rank(3, 5).specials()
                      .out("Y", "T")
                      .out("Indices", "I").optional()
                      .special("pool")
                      .note("pads smaller than the kernel (a window never lies wholly in them)"));
  specs.push_back(Op("AveragePool", 21)
                      .types("T", kFloat16To64)
                      .attr_string("auto_pad", "NOTSET",
                                   {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"})
                      .attr_int("ceil_mode", "0", {{0, 1}})
                      .attr_int("count_include_pad", "0", {{0, 1}})
                      .attr_by_special("dilations", AttrKind::kInts, "1 per spatial axis")
                      .attr_by_special("kernel_shape", AttrKind::kInts, "").required()
                      .attr_by_special("pads", AttrKind::kInts, "0 per begin and end")
                      .attr_by_special("strides", AttrKind::kInts, "1 per spatial axis")
                      .in("X", "T").rank(3, 5).specials()
                      .out("Y", "T")
                      .special("pool"));
  for (const char* op_type : {"GlobalAveragePool", "GlobalMaxPool"}) {
    specs.push_back(Op(op_type, 21)
                        .types("T", kFloat16To64)
                        .in("X", "T").rank(3, 5).specials()
                        .out("Y", "T"));
  }
  specs.push_back(Op("BatchNormalization", 15)
                      .types("T", kFloatTypes)
                      .types("T1", kFloatTypes)
                      .types("T2", kFloatTypes)
                      .attr_float("epsilon", "1e-05", {{1e-6, 1e-2}})
                      .attr_float("momentum", "0.9", {{0, 1}})
                      .attr_int("training_mode", "0", {{0, 0}})
                      .in("X", "T").rank(2, 4).specials()
                      .in("scale", "T1").rank(1, 1).may_be_constant()
                      .in("B", "T1").rank(1, 1).may_be_constant()
                      .in("input_mean", "T2").rank(1, 1).may_be_constant()
                      .in("input_var", "T2").rank(1, 1).range(0.05, 2).may_be_constant()
                      .out("Y", "T")
                      .special("per_channel")
                      .note("inference form: running_mean/running_var outputs are invalid with "
                            "training_mode = 0, so only Y"));
  specs.push_back(Op("InstanceNormalization", 21)
                      .types("T", kFloat16To64)
                      .attr_float("epsilon", "1e-05", {{1e-6, 1e-2}})
                      .in("input", "T").rank(3, 5).specials()
                      .in("scale", "T").rank(1, 1).may_be_constant()
                      .in("B", "T").rank(1, 1).may_be_constant()
                      .out("output", "T")
                      .special("per_channel")
                      // Engines computing the variance as E[x^2] - E[x]^2 in float32 lose digits
                      // to cancellation (ONNX Runtime does): 10x the per-type tolerance.
                      .tolerance_scale(10));
  specs.push_back(Op("LayerNormalization", 21)
                      .types("T", kFloatTypes)
                      .types("U", {DType::kFloat32, DType::kBFloat16})
                      .attr_int("axis", "-1", {{-4, 3}})
                      .attr_float("epsilon", "1e-05", {{1e-6, 1e-2}})
                      .attr_by_special("stash_type", AttrKind::kInt, "1 (float)")
                      .in("X", "T").rank(1, 4).rank_exceeds_axis().specials()
                      .in("Scale", "T").rank(0, 4).may_be_constant()
                      .in("B", "T").optional().rank(0, 4).may_be_constant()
                      .out("Y", "T")
                      .out("Mean", "U").optional()
                      .out("InvStdDev", "U").optional()
                      .special("layernorm")
                      .note("Scale and B broadcast one way to X.shape[axis:]; stash_type is U"));

  specs.push_back(reduce("ReduceSum", kReduceTypes, 13).type_since("T", DType::kBFloat16, 13));
  specs.push_back(reduce("ReduceMean", kReduceTypes, 18));
  specs.push_back(reduce("ReduceProd", kReduceTypes, 18));
  specs.push_back(reduce("ReduceL1", kReduceTypes, 18));
  specs.push_back(reduce("ReduceL2", kReduceTypes, 18));
  specs.push_back(reduce("ReduceLogSum", kReduceTypes, 18));
  specs.push_back(reduce("ReduceLogSumExp", kReduceTypes, 18));
  specs.push_back(reduce("ReduceSumSquare", kReduceTypes, 18));
  const std::vector<DType> max_min_types =
      kReduceTypes + std::vector<DType>{DType::kInt8, DType::kUInt8, DType::kBool};
  specs.push_back(reduce("ReduceMax", max_min_types, 18)
                      .type_since("T", DType::kInt8, 18)
                      .type_since("T", DType::kUInt8, 18)
                      .type_since("T", DType::kBool, 20));
  specs.push_back(reduce("ReduceMin", max_min_types, 18)
                      .type_since("T", DType::kInt8, 18)
                      .type_since("T", DType::kUInt8, 18)
                      .type_since("T", DType::kBool, 20));

  for (const char* op_type : {"ArgMax", "ArgMin"}) {
    specs.push_back(Op(op_type, 21)
                        .types("T", kNumericTypes)
                        .types("I", kInt64)
                        .attr_int("axis", "0", {{-4, 3}})
                        .attr_int("keepdims", "1", {{0, 1}})
                        .attr_int("select_last_index", "0", {{0, 1}})
                        .in("data", "T").rank(1, 4).rank_exceeds_axis().specials()
                        .out("reduced", "I")
                        .special("argmax")
                        .note("the axis has at least one element; ties are common (small "
                              "integer values), so select_last_index matters"));
  }
  specs.push_back(Op("Dropout", 21)
                      .also_opsets({7})
                      .types("T", kFloatTypes)
                      .type_since("T", DType::kBFloat16, 13)
                      .types("T1", kFloat16To64)
                      .types("T2", kBool)
                      .attr_float("ratio", "0.5", {{0, 0.9}}).until(11)
                      .attr_int("seed", "random", {{0, 1000}}).since(12)
                      .in("data", "T").rank(0, 4).specials()
                      .in("ratio", "T1").optional().rank(0, 0).range(0, 0.9).since(12)
                      .in("training_mode", "T2").optional().rank(0, 0).by_special().since(12)
                      .out("output", "T")
                      .out("mask", "T2").optional()
                      .special("dropout")
                      .note("inference: training_mode false, or true with ratio 0 (identity)"));
}

}  // namespace rnnc::conformance
// clang-format on
