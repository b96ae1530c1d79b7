#include "ir/legacy_opsets.h"

#include "ir/error.h"
#include "ir/onnx_proto.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

constexpr int kNormalizedOpset = kMinOpset;

// One legacy node being rewritten: errors name it at its declared opset.
class LegacyNode {
 public:
  LegacyNode(Node& node, bool infer) : node_(node), infer_(infer) {}

  Node& node() const { return node_; }
  Graph& graph() const { return *node_.owner(); }

  [[noreturn]] void fail(const std::string& message) const {
    raise_invalid_model(cat(node_.describe(), ": ", message));
  }
  [[noreturn]] void unsupported(const std::string& message) const {
    raise_unsupported(cat(node_.describe(), ": ", message));
  }

  // The input's shape when its rank is known (types are inferred in the main graph, declared in
  // nested ones), else nullptr.
  const Shape* input_shape(size_t i) const {
    Value* value = node_.input(i);
    return value && value->type.shape ? &*value->type.shape : nullptr;
  }

  // Replaces input i by Unsqueeze(input i) {axes}.
  void unsqueeze_input(size_t i, std::vector<int64_t> axes) const {
    Value* input = node_.input(i);
    const std::string name = graph().unique_name(input->name() + "_unsqueezed");
    Node* unsqueeze = graph().add_node("Unsqueeze", name, {input}, {name}, kNormalizedOpset);
    unsqueeze->set_attr("axes", Attribute::of_ints(std::move(axes)));
    if (infer_) infer_node(*unsqueeze);
    node_.set_input(i, unsqueeze->output(0));
  }

  // Makes `data` input i (a new initializer).
  void set_constant_input(size_t i, const std::string& suffix, Tensor data) const {
    Value* value =
        graph().add_initializer(graph().unique_name(node_.name() + suffix), std::move(data));
    node_.grow_inputs(i + 1);
    node_.set_input(i, value);
  }

 private:
  Node& node_;
  bool infer_;
};

// ---- the rewrites -------------------------------------------------------------------------------

// Legacy broadcasting (Add-1/6 and the other binary ops before 7): without `broadcast` the shapes
// are equal; with broadcast=1, B's dims (each equal or 1) match a contiguous run of A's starting
// at `axis` (default: aligned to A's end). Numpy broadcasting aligns to the end, so B gets
// trailing 1-dims for the A dims after the run.
bool rewrite_legacy_broadcast(const LegacyNode& legacy) {
  Node& node = legacy.node();
  const bool had_attributes = node.has_attr("broadcast") || node.has_attr("axis");
  const int64_t broadcast = node.attr_int("broadcast", 0);
  if (broadcast != 0 && broadcast != 1) {
    legacy.fail(cat("attribute 'broadcast' = ", broadcast, " must be 0 or 1"));
  }
  const Shape* a = legacy.input_shape(0);
  const Shape* b = legacy.input_shape(1);
  if (broadcast == 0) {
    bool equal = !a || !b || a->size() == b->size();
    for (size_t k = 0; equal && a && b && k < a->size(); ++k) {
      equal = !(*a)[k].is_known() || !(*b)[k].is_known() || (*a)[k] == (*b)[k];
    }
    if (!equal) {
      legacy.fail(cat("inputs A ", shape_to_string(*a), " and B ", shape_to_string(*b),
                      " differ in shape; without attribute 'broadcast' = 1 they must be equal"));
    }
  } else if (a && b) {
    const int64_t rank_a = static_cast<int64_t>(a->size());
    const int64_t rank_b = static_cast<int64_t>(b->size());
    if (rank_b > rank_a) {
      legacy.fail(cat("input B ", shape_to_string(*b), " has a higher rank than A ",
                      shape_to_string(*a), "; legacy broadcasting stretches B over A"));
    }
    const int64_t axis = node.attr_int("axis", rank_a - rank_b);
    if (axis < 0 || axis > rank_a - rank_b) {
      legacy.fail(cat("attribute 'axis' = ", axis, " is out of range for A of rank ", rank_a,
                      " and B of rank ", rank_b, " (valid: [0, ", rank_a - rank_b, "])"));
    }
    for (int64_t k = 0; k < rank_b; ++k) {
      const Dim& dim_b = (*b)[static_cast<size_t>(k)];
      const Dim& dim_a = (*a)[static_cast<size_t>(axis + k)];
      if (dim_b.is_known() && dim_a.is_known() && dim_b.value() != 1 && dim_b != dim_a) {
        legacy.fail(cat("input B ", shape_to_string(*b), " does not match A ", shape_to_string(*a),
                        " at axis ", axis, ": B dim ", k, " is ", dim_b.value(), ", A dim ",
                        axis + k, " is ", dim_a.value()));
      }
    }
    std::vector<int64_t> trailing;
    for (int64_t k = rank_b; k < rank_a - axis; ++k) trailing.push_back(k);
    if (!trailing.empty()) legacy.unsqueeze_input(1, std::move(trailing));
  } else if (node.has_attr("axis")) {
    legacy.unsupported(cat("attribute 'axis' = ", node.attr_int("axis", 0), " with an input of ",
                           "unknown rank (the legacy broadcast needs both ranks at import)"));
  }
  node.remove_attr("broadcast");
  node.remove_attr("axis");
  return had_attributes;
}

// Gemm-1/6: C broadcasts only with broadcast=1 (else it is M x N); from 7 it always broadcasts
// unidirectionally, which accepts both.
bool rewrite_gemm_broadcast(const LegacyNode& legacy) {
  Node& node = legacy.node();
  if (!node.has_attr("broadcast")) return false;
  const int64_t broadcast = node.attr_int("broadcast", 0);
  if (broadcast != 0 && broadcast != 1) {
    legacy.fail(cat("attribute 'broadcast' = ", broadcast, " must be 0 or 1"));
  }
  const Shape* c = legacy.input_shape(2);
  if (broadcast == 0 && c && c->size() != 2) {
    legacy.fail(cat("input C ", shape_to_string(*c), " must be an M x N matrix without ",
                    "attribute 'broadcast' = 1"));
  }
  node.remove_attr("broadcast");
  return true;
}

// PRelu-1/6: a slope of C values applies per channel (axis 1); from 7 the slope broadcasts
// numpy-style (aligned to the end), so a [C] slope becomes [C, 1, ..., 1].
bool rewrite_prelu_slope(const LegacyNode& legacy) {
  const Shape* x = legacy.input_shape(0);
  const Shape* slope = legacy.input_shape(1);
  if (!x || !slope || x->size() < 3 || slope->size() != 1) return false;
  const Dim& channels = (*x)[1];
  const Dim& values = (*slope)[0];
  if (!values.is_known() || values.value() == 1) return false;
  if (channels.is_known() && channels != values) {
    legacy.fail(cat("input 'slope' ", shape_to_string(*slope), " has neither 1 value nor one per ",
                    "channel of X ", shape_to_string(*x)));
  }
  std::vector<int64_t> axes;
  for (size_t k = 1; k + 1 < x->size(); ++k) axes.push_back(static_cast<int64_t>(k));
  legacy.unsqueeze_input(1, std::move(axes));
  return true;
}

// BatchNormalization-1/6, Dropout-1/6: `is_test` chose the mode; from 7 the outputs do (test mode
// has one).
bool drop_is_test(const LegacyNode& legacy) {
  Node& node = legacy.node();
  if (!node.has_attr("is_test")) return false;
  const int64_t is_test = node.attr_int("is_test", 0);
  if (is_test != 0 && is_test != 1) {
    legacy.fail(cat("attribute 'is_test' = ", is_test, " must be 0 or 1"));
  }
  size_t outputs = 0;
  for (const Value* output : node.outputs()) outputs += output != nullptr;
  if (is_test == 1 && node.op_type() == "BatchNormalization" && outputs > 1) {
    legacy.fail(cat("attribute 'is_test' = 1 but the node has ", outputs,
                    " outputs (test mode has one, Y)"));
  }
  node.remove_attr("is_test");
  return true;
}

// BatchNormalization-1/6: `is_test` as above. Their parameters hold C values; `spatial` = 0 only
// chose how training computes statistics, so in test mode it is the per-channel computation. At
// opsets 7 and 8 `spatial` = 0 means per-activation parameters (C x D1 ...): it is dropped when the
// parameters are per channel, and kept when they are per activation (read as opset 7 reads them).
bool rewrite_batch_norm(const LegacyNode& legacy) {
  bool changed = drop_is_test(legacy);
  Node& node = legacy.node();
  const Shape* x = legacy.input_shape(0);
  if (node.attr_int("spatial", 1) != 0 || !x || x->size() <= 2) return changed;
  for (size_t i = 1; i < 5; ++i) {
    const Shape* parameter = legacy.input_shape(i);
    if (!parameter || parameter->size() != 1) return changed;
  }
  node.remove_attr("spatial");
  return true;
}

// Concat-1: `axis` defaults to 1; from 4 it is required.
bool default_concat_axis(const LegacyNode& legacy) {
  if (legacy.node().has_attr("axis")) return false;
  legacy.node().set_attr("axis", Attribute::of_int(1));
  return true;
}

// Reshape-1: the target shape is attribute `shape`; from 5 it is input 1.
bool shape_attribute_to_input(const LegacyNode& legacy) {
  Node& node = legacy.node();
  if (!node.has_attr("shape")) legacy.fail("attribute 'shape' is required");
  if (node.num_inputs() > 1) legacy.fail(cat("has ", node.num_inputs(), " inputs, expected 1"));
  std::vector<int64_t> shape = node.attr_ints("shape");
  const int64_t rank = static_cast<int64_t>(shape.size());
  node.remove_attr("shape");
  legacy.set_constant_input(1, "_shape", Tensor::from_vector<int64_t>({rank}, shape));
  return true;
}

// Pad-1: the pads are attribute `paddings`; from 2 `pads` (same layout: all begins, then ends).
bool rename_paddings(const LegacyNode& legacy) {
  Node& node = legacy.node();
  if (!node.has_attr("paddings")) legacy.fail("attribute 'paddings' is required");
  if (node.has_attr("pads")) legacy.fail("attribute 'pads' does not exist before opset 2");
  node.set_attr("pads", Attribute::of_ints(node.attr_ints("paddings")));
  node.remove_attr("paddings");
  return true;
}

// Split-1: the part sizes may be input 1; from 2 they are attribute `split` only.
bool split_input_to_attribute(const LegacyNode& legacy) {
  Node& node = legacy.node();
  Value* sizes = node.input(1);
  if (!sizes) return false;
  if (node.has_attr("split")) {
    legacy.fail("input 'split' and attribute 'split' are both given");
  }
  if (!sizes->is_constant()) {
    legacy.unsupported(cat("input 'split' ('", sizes->name(), "') is not a constant (the ",
                           "normalized form holds the sizes as attribute 'split')"));
  }
  const Tensor& data = *sizes->constant();
  if (data.rank() > 1 || !(data.dtype() == DType::kInt64 || data.dtype() == DType::kInt32)) {
    legacy.fail(cat("input 'split' must be a 1-D integer tensor, got ",
                    dtype_onnx_name(data.dtype()), " of rank ", data.rank()));
  }
  std::vector<int64_t> values;
  for (int64_t k = 0; k < data.numel(); ++k) values.push_back(data.get_int64(k));
  node.set_attr("split", Attribute::of_ints(std::move(values)));
  node.set_input(1, nullptr);
  node.trim_omitted_inputs();
  return true;
}

// Cast-1: `to` is the type's name ("FLOAT"); from 6 its TensorProto.DataType number.
bool cast_to_name_to_number(const LegacyNode& legacy) {
  Node& node = legacy.node();
  const Attribute* to = node.find_attr("to");
  if (!to || to->kind != Attribute::Kind::kString) return false;
  onnx::TensorProto_DataType value = onnx::TensorProto::UNDEFINED;
  if (!onnx::TensorProto_DataType_Parse(to->s, &value) || value == onnx::TensorProto::UNDEFINED) {
    legacy.fail(cat("attribute 'to' = \"", to->s, "\" is not an ONNX element type name"));
  }
  node.set_attr("to", Attribute::of_int(value));
  return true;
}

// Upsample-1 (an NCHW image): `height_scale`, `width_scale`, mode "nearest" or "bilinear"; from 7
// `scales` for every axis and mode "nearest" or "linear".
bool upsample_scales(const LegacyNode& legacy) {
  Node& node = legacy.node();
  if (node.has_attr("scales")) legacy.fail("attribute 'scales' does not exist before opset 7");
  for (const char* name : {"height_scale", "width_scale"}) {
    if (!node.has_attr(name)) legacy.fail(cat("attribute '", name, "' is required"));
  }
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "bilinear") {
    legacy.fail(cat("attribute 'mode' = \"", mode, "\" must be \"nearest\" or \"bilinear\""));
  }
  if (const Shape* x = legacy.input_shape(0); x && x->size() != 4) {
    legacy.fail(cat("input X ", shape_to_string(*x), " must be 4-D (N, C, H, W)"));
  }
  node.set_attr("scales", Attribute::of_floats({1.0f, 1.0f, node.attr_float("height_scale", 1),
                                                node.attr_float("width_scale", 1)}));
  node.set_attr("mode", Attribute::of_string(mode == "bilinear" ? "linear" : "nearest"));
  node.remove_attr("height_scale");
  node.remove_attr("width_scale");
  return true;
}

// RNN-1, GRU-1/3, LSTM-1: `output_sequence` said whether Y is produced; from 7 Y is produced when
// it is a named output, as it already is here.
bool drop_output_sequence(const LegacyNode& legacy) {
  if (!legacy.node().has_attr("output_sequence")) return false;
  legacy.node().remove_attr("output_sequence");
  return true;
}

bool refuse_tile_1(const LegacyNode& legacy) {
  legacy.unsupported(
      "the Tile-1 form (inputs 'tiles' and 'axis'); Tile-6 and later take "
      "'repeats'");
}

using Rewrite = bool (*)(const LegacyNode&);

struct LegacyForm {
  const char* op_type;
  int modern_since;  // nodes at opsets below this have the legacy form
  Rewrite rewrite;
};

// clang-format off
constexpr LegacyForm kLegacyForms[] = {
  {"Add",                7, rewrite_legacy_broadcast},  // broadcast/axis -> numpy broadcasting
  {"Sub",                7, rewrite_legacy_broadcast},
  {"Mul",                7, rewrite_legacy_broadcast},
  {"Div",                7, rewrite_legacy_broadcast},
  {"Pow",                7, rewrite_legacy_broadcast},
  {"And",                7, rewrite_legacy_broadcast},
  {"Or",                 7, rewrite_legacy_broadcast},
  {"Xor",                7, rewrite_legacy_broadcast},
  {"Equal",              7, rewrite_legacy_broadcast},
  {"Greater",            7, rewrite_legacy_broadcast},
  {"Less",               7, rewrite_legacy_broadcast},
  {"Gemm",               7, rewrite_gemm_broadcast},    // broadcast -> (always unidirectional)
  {"PRelu",              7, rewrite_prelu_slope},       // slope [C] -> [C, 1, ..., 1]
  {"BatchNormalization", 7, rewrite_batch_norm},        // is_test -> (one output)
  {"Dropout",            7, drop_is_test},
  {"Concat",             4, default_concat_axis},       // no axis -> axis=1
  {"Reshape",            5, shape_attribute_to_input},  // shape=[..] -> input 1
  {"Pad",                2, rename_paddings},           // paddings -> pads
  {"Split",              2, split_input_to_attribute},  // input 1 -> split=[..]
  {"Cast",               6, cast_to_name_to_number},    // to="FLOAT" -> to=1
  {"Upsample",           7, upsample_scales},           // height/width_scale -> scales
  {"RNN",                7, drop_output_sequence},
  {"GRU",                7, drop_output_sequence},
  {"LSTM",               7, drop_output_sequence},
  {"Tile",               6, refuse_tile_1},
};
// clang-format on

// Rewrites one default-domain node into its opset-7 form and declares it at opset 7.
bool normalize_node(Node& node, bool infer) {
  const LegacyForm* form = nullptr;
  for (const LegacyForm& candidate : kLegacyForms) {
    if (node.op_type() == candidate.op_type && node.opset() < candidate.modern_since) {
      form = &candidate;
    }
  }
  // An op with a legacy form existed before its schema's first opset (Upsample-1).
  if (const OpSchema* schema = find_op_schema("", node.op_type());
      !form && schema && node.opset() < schema->since_opset) {
    raise_invalid_model(cat(node.describe(), ": ", node.op_type(), " does not exist before opset ",
                            schema->since_opset));
  }
  bool changed = false;
  if (node.has_attr("consumed_inputs")) {  // an in-place hint of versions before 6
    node.remove_attr("consumed_inputs");
    changed = true;
  }
  if (form) changed = form->rewrite(LegacyNode(node, infer)) || changed;
  node.set_opset(kNormalizedOpset);
  return changed;
}

// Nested graphs are rewritten without inference: their operand types are those declared.
int normalize_graph(Graph& graph, bool infer) {
  std::vector<Node*> nodes;
  for (const auto& node : graph.nodes()) nodes.push_back(node.get());
  int changed = 0;
  for (Node* node : nodes) {
    const int declared_opset = node->opset();
    for (Graph* body : node->subgraphs()) changed += normalize_graph(*body, false);
    if (node->domain().empty()) changed += normalize_node(*node, infer) ? 1 : 0;
    if (!infer) continue;
    try {
      infer_node(*node);
    } catch (const Error& e) {
      // The model fails to import: name the node at the opset the model declares.
      const std::string normalized = node->describe();
      node->set_opset(declared_opset);
      std::string message = e.what();
      if (message.compare(0, normalized.size(), normalized) == 0) {
        message = node->describe() + message.substr(normalized.size());
      }
      raise(e.kind(), message);
    }
  }
  graph.sort_topologically();
  return changed;
}

}  // namespace

int normalize_legacy_opsets(Model& model) {
  auto opset = model.opsets.find("");
  if (opset == model.opsets.end() || opset->second >= kNormalizedOpset) return 0;
  const int changed = normalize_graph(*model.graph, true);
  opset->second = kNormalizedOpset;
  return changed;
}

}  // namespace rnnc
