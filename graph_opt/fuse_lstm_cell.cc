// fuse_lstm_cell: one LSTM step written out as its equations becomes an ONNX LSTM node of one
// step, so lowering runs it as one recurrent kernel instead of two GEMVs, a Split and an
// elementwise chain (PyTorch's LSTMCell, and torch.onnx's dynamo export of nn.LSTM run one step
// at a time, write it so: Silero VAD's opset-18 export).
//
//   %gates = Add(Gemm(%x, %W_ih, %b_ih) {transB=1}, Gemm(%h, %W_hh, %b_hh) {transB=1})
//   %a, %b, %c, %d = Split(%gates) {axis=1}           four chunks of hidden_size
//   %c_new = Add(Mul(Sigmoid(%b), %c_prev), Mul(Sigmoid(%a), Tanh(%c)))
//   %h_new = Mul(Sigmoid(%d), Tanh(%c_new))
//     ->
//   %Y_h, %Y_c = LSTM(Unsqueeze(%x), %W, %R, %B, , Unsqueeze(%h), Unsqueeze(%c_prev))
//                {hidden_size=H}                      (Y omitted)
//   %h_new = Squeeze(%Y_h)     %c_new = Squeeze(%Y_c)  (the latter only when read elsewhere)
//
// Which chunk is which gate follows from the structure, not from an assumed order: the chunk
// whose sigmoid scales c_prev is the forget gate, the one whose sigmoid scales the tanh of another
// chunk is the input gate (that other chunk the cell candidate), the one whose sigmoid scales
// tanh(c_new) the output gate. W, R and B are the projections' constant weights with their row
// blocks put in ONNX's gate order (i, o, f, c). Of the two projections, the one of hidden_size
// inputs becomes R (either, when both are: for a single step x W^T + h R^T is symmetric in them).
// Projections are Gemm (alpha = beta = 1, transA = 0, either transB, bias [4H] or [1, 4H] or
// none) or MatMul by a constant [K, 4H]; a constant bias may also be added to the sum of the two.
//
// Matched only when every intermediate (projections, their sum, the chunks, the activations, the
// two products in c_new, tanh(c_new)) has no other reader, all tensors are float32 of rank 2 with
// the chunks' shape [N, H] shared by c_prev, and H and both K are known: the rewrite then leaves
// no value of the old form read and computes what it computed (the LSTM's cell equations with
// its default activations are these). The old nodes go at once (their weights with dce), and
// matching starts again, so steps written out one after another each become an LSTM reading the
// previous one's Y_h and Y_c.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"
#include "ir/op_schema.h"

namespace rnnc {

namespace {

// Is `node` the only reader of `value` (no other node, no graph output, no nested return)?
bool read_only_by(const Graph& graph, const Value* value, const Node* node) {
  return value && value->uses().size() == 1 && value->uses()[0].node == node &&
         !is_graph_output(graph, value) && !returned_by_nested_graph(graph, value);
}

Node* producer_of(const Value* value) { return value ? value->producer() : nullptr; }

bool is_float_rank2(const Value* value) {
  return value && value->type.is_tensor() && value->type.dtype == DType::kFloat32 &&
         value->type.rank() == 2;
}

// A constant float32 tensor, or nullptr (also for a graph input with a default: a caller may
// pass another value).
const Tensor* float_constant(const Value* value) {
  if (!value || !value->is_constant() || value->is_graph_input() ||
      value->constant()->dtype() != DType::kFloat32) {
    return nullptr;
  }
  return value->constant().get();
}

// v W^T + b, W read as [rows = 4H, K].
struct Projection {
  Node* node = nullptr;
  Value* input = nullptr;
  const Tensor* weight = nullptr;
  bool rows_first = true;  // weight is [4H, K] (Gemm transB=1); false: [K, 4H]
  const Tensor* bias = nullptr;
  int64_t k = 0;

  float w(int64_t row, int64_t col) const {
    const float* data = weight->data<float>();
    return rows_first ? data[row * k + col] : data[col * (weight->shape()[1]) + row];
  }
};

// A bias of `width` elements: [width] or [1, width].
bool is_bias_of(const Tensor* bias, int64_t width) {
  if (!bias) return false;
  const auto& shape = bias->shape();
  return (shape.size() == 1 && shape[0] == width) ||
         (shape.size() == 2 && shape[0] == 1 && shape[1] == width);
}

std::optional<Projection> projection(const Graph& graph, const Value* value, const Node* reader,
                                     int64_t width) {
  Node* node = producer_of(value);
  if (!read_only_by(graph, value, reader)) return std::nullopt;
  Projection p;
  p.node = node;
  if (is_op(node, "MatMul")) {
    p.weight = float_constant(node->input(1));
    p.rows_first = false;
  } else if (is_op(node, "Gemm")) {
    if (node->attr_float("alpha", 1.0f) != 1.0f || node->attr_int("transA", 0) != 0) {
      return std::nullopt;
    }
    p.weight = float_constant(node->input(1));
    p.rows_first = node->attr_int("transB", 0) == 1;
    if (node->input(2)) {
      p.bias = float_constant(node->input(2));
      if (node->attr_float("beta", 1.0f) != 1.0f || !is_bias_of(p.bias, width)) {
        return std::nullopt;
      }
    }
  } else {
    return std::nullopt;
  }
  p.input = node->input(0);
  if (!p.weight || p.weight->shape().size() != 2 || !is_float_rank2(p.input)) return std::nullopt;
  const auto& shape = p.weight->shape();
  if ((p.rows_first ? shape[0] : shape[1]) != width) return std::nullopt;
  p.k = p.rows_first ? shape[1] : shape[0];
  const Dim& input_k = (*p.input->type.shape)[1];
  if (!input_k.is_known() || input_k.value() != p.k) return std::nullopt;
  return p;
}

// One matched cell: the projections, the extra bias, the Split's chunk index of each ONNX gate
// (i, o, f, c), and the values the rewrite reads and replaces.
struct Cell {
  Projection x, h;
  const Tensor* sum_bias = nullptr;
  std::array<size_t, 4> chunk{};  // gate (i, o, f, c) -> Split output index
  int64_t hidden = 0;
  Value* c_prev = nullptr;
  Value* c_new = nullptr;
  Value* h_new = nullptr;
  std::vector<Node*> nodes;  // the old form, every node before the nodes it reads
};

// The Split output index of `value` when it is `split`'s output read only by `reader`.
std::optional<size_t> chunk_index(const Graph& graph, const Value* value, const Node* split,
                                  const Node* reader) {
  if (!value || value->producer() != split || !read_only_by(graph, value, reader)) {
    return std::nullopt;
  }
  return static_cast<size_t>(value->producer_output());
}

// `value` = op(chunk of some Split), read only by `reader`: the activation node, or nullptr.
Node* activation(const Graph& graph, const Value* value, const char* op, const Node* reader) {
  Node* node = producer_of(value);
  if (!is_op(node, op) || !read_only_by(graph, value, reader)) return nullptr;
  const Node* split = producer_of(node->input(0));
  return is_op(split, "Split") ? node : nullptr;
}

std::optional<Cell> match(const Graph& graph, Node* h_mul) {
  // h_new = Sigmoid(o) * Tanh(c_new), either order.
  Node* o = nullptr;
  Node* t = nullptr;
  for (int order = 0; order < 2 && !o; ++order) {
    o = activation(graph, h_mul->input(order), "Sigmoid", h_mul);
    t = producer_of(h_mul->input(1 - order));
    if (!is_op(t, "Tanh") || !read_only_by(graph, t->output(0), h_mul)) o = nullptr;
  }
  if (!o) return std::nullopt;
  Cell cell;
  cell.h_new = h_mul->output(0);
  Node* split = producer_of(o->input(0));
  Node* c_add = producer_of(t->input(0));
  if (!is_op(c_add, "Add") || c_add->num_inputs() != 2) return std::nullopt;
  cell.c_new = c_add->output(0);
  cell.nodes = {h_mul, t, o, c_add};
  // c_new = Sigmoid(f) * c_prev + Sigmoid(i) * Tanh(g), products and sums in either order.
  std::optional<size_t> i_chunk, f_chunk, g_chunk;
  for (size_t side = 0; side < 2; ++side) {
    Node* mul = producer_of(c_add->input(side));
    if (!is_op(mul, "Mul") || !read_only_by(graph, mul->output(0), c_add)) return std::nullopt;
    cell.nodes.push_back(mul);
    for (int m = 0; m < 2; ++m) {
      Node* sig = activation(graph, mul->input(m), "Sigmoid", mul);
      if (!sig || producer_of(sig->input(0)) != split) continue;
      Node* g = activation(graph, mul->input(1 - m), "Tanh", mul);
      cell.nodes.push_back(sig);
      if (g && producer_of(g->input(0)) == split) {
        cell.nodes.push_back(g);
        i_chunk = chunk_index(graph, sig->input(0), split, sig);
        g_chunk = chunk_index(graph, g->input(0), split, g);
      } else {
        f_chunk = chunk_index(graph, sig->input(0), split, sig);
        cell.c_prev = mul->input(1 - m);
      }
      break;
    }
  }
  std::optional<size_t> o_chunk = chunk_index(graph, o->input(0), split, o);
  if (!i_chunk || !f_chunk || !g_chunk || !o_chunk) return std::nullopt;
  cell.chunk = {*i_chunk, *o_chunk, *f_chunk, *g_chunk};
  bool distinct = true;
  for (size_t a = 0; a < 4; ++a) {
    for (size_t b = a + 1; b < 4; ++b) distinct = distinct && cell.chunk[a] != cell.chunk[b];
  }
  if (!distinct || split->num_outputs() != 4 || !is_float_rank2(cell.c_prev)) {
    return std::nullopt;
  }
  // Four chunks [N, H] of a rank-2 gates tensor split on its last axis; c_prev of that shape.
  const Value* gates = split->input(0);
  if (!is_float_rank2(gates)) return std::nullopt;
  const int64_t axis = split->attr_int("axis", 0);
  if (axis != 1 && axis != -1) return std::nullopt;
  const Shape& chunk_shape = *split->output(0)->type.shape;
  if (!chunk_shape[1].is_known()) return std::nullopt;
  cell.hidden = chunk_shape[1].value();
  for (const Value* out : split->outputs()) {
    if (!out || !out->type.shape || *out->type.shape != chunk_shape) return std::nullopt;
  }
  if (*cell.c_prev->type.shape != chunk_shape) return std::nullopt;
  const int64_t width = 4 * cell.hidden;
  // gates = P1 + P2, or (P1 + P2) + bias.
  Node* sum = producer_of(gates);
  if (!is_op(sum, "Add") || !read_only_by(graph, gates, split)) return std::nullopt;
  cell.nodes.push_back(split);
  cell.nodes.push_back(sum);
  for (int b = 0; b < 2; ++b) {
    const Tensor* bias = float_constant(sum->input(b));
    Node* inner = producer_of(sum->input(1 - b));
    if (is_bias_of(bias, width) && is_op(inner, "Add") &&
        read_only_by(graph, inner->output(0), sum)) {
      cell.sum_bias = bias;
      sum = inner;
      cell.nodes.push_back(sum);
      break;
    }
  }
  std::optional<Projection> p0 = projection(graph, sum->input(0), sum, width);
  std::optional<Projection> p1 = projection(graph, sum->input(1), sum, width);
  if (!p0 || !p1) return std::nullopt;
  cell.nodes.push_back(p0->node);
  cell.nodes.push_back(p1->node);
  const Dim& n = chunk_shape[0];
  if ((*p0->input->type.shape)[0] != n || (*p1->input->type.shape)[0] != n) {
    return std::nullopt;
  }
  if (p1->k == cell.hidden) {
    cell.x = *p0, cell.h = *p1;
  } else if (p0->k == cell.hidden) {
    cell.x = *p1, cell.h = *p0;
  } else {
    return std::nullopt;
  }
  return cell;
}

// [1, 4H, K] with the gate blocks in ONNX order.
Tensor gate_weights(const Projection& p, const std::array<size_t, 4>& chunk, int64_t hidden) {
  Tensor out(DType::kFloat32, {1, 4 * hidden, p.k});
  float* data = out.data<float>();
  for (int64_t gate = 0; gate < 4; ++gate) {
    for (int64_t r = 0; r < hidden; ++r) {
      const int64_t from = static_cast<int64_t>(chunk[static_cast<size_t>(gate)]) * hidden + r;
      for (int64_t c = 0; c < p.k; ++c) data[(gate * hidden + r) * p.k + c] = p.w(from, c);
    }
  }
  return out;
}

// Adds `bias` (4H, in chunk order) to `out` (4H, in ONNX gate order).
void add_gate_bias(float* out, const Tensor* bias, const std::array<size_t, 4>& chunk,
                   int64_t hidden) {
  if (!bias) return;
  const float* data = bias->data<float>();
  for (int64_t gate = 0; gate < 4; ++gate) {
    for (int64_t r = 0; r < hidden; ++r) {
      out[gate * hidden + r] +=
          data[static_cast<int64_t>(chunk[static_cast<size_t>(gate)]) * hidden + r];
    }
  }
}

// Unsqueeze or Squeeze on axis 0: the axes are the input `axes` from opset 13 on, an attribute
// before.
Value* axis0(Graph& graph, const char* op, Value* input, Value* axes, const std::string& name,
             int opset) {
  std::vector<Value*> inputs = {input};
  if (opset >= 13) inputs.push_back(axes);
  Node* node = graph.add_node(op, name, inputs, {graph.unique_name(name)}, opset);
  if (opset < 13) node->set_attr("axes", Attribute::of_ints({0}));
  infer_node(*node);
  return node->output(0);
}

void rewrite(Graph& graph, const Cell& cell, int opset) {
  const int64_t hidden = cell.hidden;
  const std::string base = cell.h_new->name();
  Tensor bias(DType::kFloat32, {1, 8 * hidden});
  float* b = bias.data<float>();
  add_gate_bias(b, cell.x.bias, cell.chunk, hidden);
  add_gate_bias(b, cell.sum_bias, cell.chunk, hidden);
  add_gate_bias(b + 4 * hidden, cell.h.bias, cell.chunk, hidden);
  Value* w = graph.add_initializer(graph.unique_name(base + "_W"),
                                   gate_weights(cell.x, cell.chunk, hidden));
  Value* r = graph.add_initializer(graph.unique_name(base + "_R"),
                                   gate_weights(cell.h, cell.chunk, hidden));
  Value* bias_value = graph.add_initializer(graph.unique_name(base + "_B"), std::move(bias));
  Value* axes = opset >= 13 ? graph.add_initializer(graph.unique_name(base + "_axis0"),
                                                    Tensor::from_vector<int64_t>({1}, {0}))
                            : nullptr;
  Value* x = axis0(graph, "Unsqueeze", cell.x.input, axes, base + "_x", opset);
  Value* h0 = axis0(graph, "Unsqueeze", cell.h.input, axes, base + "_h0", opset);
  Value* c0 = axis0(graph, "Unsqueeze", cell.c_prev, axes, base + "_c0", opset);
  const bool c_read = cell.c_new->uses().size() > 1 || is_graph_output(graph, cell.c_new) ||
                      returned_by_nested_graph(graph, cell.c_new);
  Node* lstm = graph.add_node(
      "LSTM", base + "_lstm", {x, w, r, bias_value, nullptr, h0, c0},
      {"", graph.unique_name(base + "_Y_h"), c_read ? graph.unique_name(base + "_Y_c") : ""},
      opset);
  lstm->set_attr("hidden_size", Attribute::of_int(hidden));
  infer_node(*lstm);
  graph.replace_all_uses(cell.h_new,
                         axis0(graph, "Squeeze", lstm->output(1), axes, base + "_h", opset));
  if (c_read) {
    graph.replace_all_uses(cell.c_new,
                           axis0(graph, "Squeeze", lstm->output(2), axes, base + "_c", opset));
  }
  // Nothing reads the old form now (each node's readers go before it).
  for (Node* node : cell.nodes) graph.remove_node(node);
}

// Fuses one cell at a time and matches again: a cell whose c_prev or h is another cell's result
// (steps written out one after another) then reads that cell's LSTM outputs.
bool fuse_in_graph(Graph& graph, int opset, PassStats& stats) {
  bool changed = false;
  for (bool found = true; found;) {
    found = false;
    for (const auto& node : graph.nodes()) {
      if (!is_op(node.get(), "Mul")) continue;
      if (std::optional<Cell> cell = match(graph, node.get())) {
        rewrite(graph, *cell, opset);
        ++stats["LSTM cells fused"];
        found = changed = true;
        break;
      }
    }
  }
  if (changed) graph.sort_topologically();
  return changed;
}

}  // namespace

bool fuse_lstm_cell(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  const int opset = static_cast<int>(model.default_opset());
  if (opset < 7) return false;  // LSTM's current form (and Split's outputs) from opset 7
  bool changed = false;
  for_each_graph(model,
                 [&](Graph& graph) { changed = fuse_in_graph(graph, opset, stats) || changed; });
  if (changed) infer_graph(*model.graph);
  return changed;
}

}  // namespace rnnc
