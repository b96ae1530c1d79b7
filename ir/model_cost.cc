#include "ir/model_cost.h"

#include <optional>

namespace rnnc {

namespace {

std::optional<std::vector<int64_t>> static_shape(const Value* value) {
  if (!value || !value->type.shape || !shape_is_known(*value->type.shape)) return std::nullopt;
  return shape_values(*value->type.shape);
}

int64_t product(const std::vector<int64_t>& shape, size_t first, size_t last) {
  int64_t result = 1;
  for (size_t i = first; i < last && i < shape.size(); ++i) result *= shape[i];
  return result;
}

int64_t constant_bytes(const Node& node) {
  int64_t bytes = 0;
  for (const Value* input : node.inputs()) {
    if (input && input->is_constant() && !input->is_graph_input()) {
      bytes +=
          input->constant()->numel() * static_cast<int64_t>(dtype_size(input->constant()->dtype()));
    }
  }
  return bytes;
}

// The node's multiply-adds; nullopt when a shape it needs is not static, 0 for uncounted ops.
std::optional<int64_t> node_macs(const Node& node) {
  const std::string& op = node.op_type();
  if (!node.domain().empty()) return 0;
  if (op == "Conv" || op == "ConvTranspose") {
    const auto x = static_shape(node.input(0)), w = static_shape(node.input(1));
    const auto y = static_shape(node.output(0));
    if (!x || !w || !y || w->size() < 2) return std::nullopt;
    const int64_t taps = product(*w, 2, w->size());
    // Conv: W [M, C / group, taps...]; ConvTranspose: W [C, M / group, taps...].
    if (op == "Conv") return product(*y, 0, y->size()) * (*w)[1] * taps;
    return product(*x, 0, x->size()) * (*w)[1] * taps;
  }
  if (op == "MatMul" || op == "Gemm") {
    const auto a = static_shape(node.input(0)), y = static_shape(node.output(0));
    if (!a || !y || a->empty()) return std::nullopt;
    // K: A's last dim (Gemm with transA: its first).
    const bool trans_a = op == "Gemm" && node.attr_int("transA", 0) != 0;
    const int64_t k = trans_a ? a->front() : a->back();
    return product(*y, 0, y->size()) * k;
  }
  if (op == "LSTM" || op == "GRU" || op == "RNN") {
    const auto x = static_shape(node.input(0)), w = static_shape(node.input(1));
    const auto r = static_shape(node.input(2));
    if (!x || !w || !r || x->size() != 3 || w->size() != 3 || r->size() != 3) return std::nullopt;
    const bool batch_first = node.attr_int("layout", 0) != 0;
    const int64_t seq = batch_first ? (*x)[1] : (*x)[0], batch = batch_first ? (*x)[0] : (*x)[1];
    // W [directions, gates x hidden, input], R [directions, gates x hidden, hidden].
    return seq * batch * (*w)[0] * (*w)[1] * ((*w)[2] + (*r)[2]);
  }
  return 0;
}

}  // namespace

ModelCost model_cost(const Graph& graph) {
  ModelCost cost;
  for (const auto& owned : graph.nodes()) {
    const Node& node = *owned;
    const std::optional<int64_t> macs = node_macs(node);
    if (!macs) {
      cost.unknown.push_back(node.name());
      continue;
    }
    if (*macs == 0) continue;
    NodeCost item{node.name(), node.op_type(), *macs, constant_bytes(node)};
    cost.macs += item.macs;
    cost.weight_bytes += item.weight_bytes;
    cost.nodes.push_back(item);
  }
  return cost;
}

}  // namespace rnnc
