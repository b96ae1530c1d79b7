// fold_cache_updates: stream-cache updates become copies of the new frames (and of the part of the
// old cache that is kept) into the updated cache, instead of a read-modify-write of the whole
// cache.
//
// Streaming exports keep a model's past (a convolution's last frames, a GRU's state) in cache
// tensors that are model inputs and outputs, and update them in one of two forms: the in-place
// write `cache[:, :, i:j] = frame` (ScatterND at opset 11, its indices constant once shapes fold),
// or Concat(old cache, new frames) followed by a Slice that drops the oldest frames. The first
// copies the whole cache and then writes the frame over it; the second reads its result out of a
// Concat that may be far larger than the cache. Both are written here as a Concat of the pieces
// the result is made of, so each element is copied once, straight into the new cache:
//
//   %new = ScatterND(%cache [4, 3], indices {{2}}, %frame [1, 3])
//     -> %new = Concat(Slice(%cache, 0:2), Reshape(%frame, [1, 3]), Slice(%cache, 3:4); axis 0)
//   %all = Concat(%cache [2, 16], %frame [1, 16]; axis 0);  %new = Slice(%all, -2:)
//     -> %new = Concat(Slice(%cache, 1:2), %frame; axis 0)
//
// Rules (every shape involved known; constant int64 operands):
//   y = ScatterND(data, indices, updates) {reduction none}, the tuples listing in row-major order
//       a block of data whole in every axis but one, a:
//         -> Concat(data before the block, updates reshaped to the block, data after; axis a)
//            (a block covering all of data: the reshaped updates alone)
//   y = Slice(Concat(p0, p1, ...; axis a), starts, ends, axes = {a}, steps 1):
//         -> the parts the range covers, the first and last sliced to it (one part: that part,
//            or a Slice of it alone)
// The second rule also folds chains of the first (two groups' states written into one cache one
// after the other: the first write's pieces are read back out of its Concat). The Concats it
// leaves unread go with dce.
//
// A nested graph's returned values are left alone (pipeline.cc restores output names and
// distinctness for the main graph only). Run with the folding group, after fold_constants and
// fold_shape_chains have made the indices and ranges constants (PyTorch computes a ScatterND's
// indices from Shape chains).
#include <algorithm>
#include <string>
#include <vector>

#include "graph_opt/pass.h"
#include "graph_opt/value_refs.h"

namespace rnnc {

namespace {

constexpr int kSliceOpset = 10;  // Slice reads starts/ends/axes as inputs from opset 10

// The shape of `value` when fully known.
bool known_shape(const Value* value, std::vector<int64_t>& shape) {
  if (!value || !value->type.shape || !shape_is_known(*value->type.shape)) return false;
  shape = shape_values(*value->type.shape);
  return true;
}

// The int64 (or int32) constant `value` as numbers.
bool constant_ints(const Value* value, std::vector<int64_t>& values) {
  if (!value || !value->is_constant() || value->is_graph_input()) return false;
  const Tensor& tensor = *value->constant();
  if (tensor.dtype() != DType::kInt64 && tensor.dtype() != DType::kInt32) return false;
  values.clear();
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.get_int64(i));
  return true;
}

Value* ints_constant(Graph& graph, const std::string& name, const std::vector<int64_t>& values) {
  return graph.add_initializer(
      graph.find_value(name) ? graph.unique_name(name) : name,
      Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

TensorType typed(const Value* like, std::vector<int64_t> shape) {
  TensorType type;
  type.dtype = like->type.dtype;
  type.shape = shape_from_values(shape);
  return type;
}

// `part` [begin, end) along `axis` (the whole part: `part` itself).
Value* slice_of(Graph& graph, Value* part, int64_t axis, int64_t begin, int64_t end, int opset,
                const std::string& name) {
  std::vector<int64_t> shape;
  known_shape(part, shape);
  if (begin == 0 && end == shape[static_cast<size_t>(axis)]) return part;
  shape[static_cast<size_t>(axis)] = end - begin;
  const std::string id = graph.unique_name(name);
  Node* slice = graph.add_node(
      "Slice", id,
      {part, ints_constant(graph, id + "_start", {begin}), ints_constant(graph, id + "_end", {end}),
       ints_constant(graph, id + "_axis", {axis})},
      {id}, std::max(opset, kSliceOpset));
  slice->output(0)->type = typed(part, shape);
  return slice->output(0);
}

// A nested graph's outputs are positional and must stay distinct values of that graph, which
// pipeline.cc's restore_output_names does not see to: their nodes are left alone.
bool replaceable(const Graph& graph, const Value* value) {
  return !graph.parent() || !is_graph_output(graph, value);
}

// `pieces` joined along `axis` into a value of `shape` that replaces `old` (one piece: itself).
void replace_by_pieces(Graph& graph, Value* old, const std::vector<Value*>& pieces, int64_t axis,
                       int opset, const std::string& name) {
  Value* result = pieces.front();
  if (pieces.size() > 1) {
    const std::string id = graph.unique_name(name);
    Node* concat = graph.add_node("Concat", id, pieces, {id}, opset);
    concat->set_attr("axis", Attribute::of_int(axis));
    concat->output(0)->type = old->type;
    result = concat->output(0);
  }
  graph.replace_all_uses(old, result);
}

// ---- rules -------------------------------------------------------------------------------------

// y = ScatterND(data, indices, updates) writing a block whole in every axis but one ->
// Concat(data before, Reshape(updates), data after).
bool scatter_block(Graph& graph, Node* scatter, PassStats& stats) {
  if (scatter->attr_string("reduction", "none") != "none" || scatter->num_inputs() != 3) {
    return false;
  }
  Value* data = scatter->input(0);
  Value* updates = scatter->input(2);
  Value* y = scatter->output(0);
  if (!replaceable(graph, y)) return false;
  std::vector<int64_t> shape, index_shape, update_shape, indices;
  if (!known_shape(data, shape) || !known_shape(scatter->input(1), index_shape) ||
      !known_shape(updates, update_shape) || !constant_ints(scatter->input(1), indices) ||
      index_shape.empty() || data == updates) {
    return false;
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t k = index_shape.back();
  if (k < 1 || k > rank) return false;
  const int64_t tuples = static_cast<int64_t>(indices.size()) / k;
  if (tuples == 0) return false;
  // The block: per axis below k, its first index and extent (tuple 0 and the largest index).
  std::vector<int64_t> start(static_cast<size_t>(k)), extent(static_cast<size_t>(k), 1);
  for (int64_t t = 0; t < tuples; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      int64_t index = indices[static_cast<size_t>(t * k + j)];
      const int64_t d = shape[static_cast<size_t>(j)];
      if (index < -d || index >= d) return false;  // the reference reports it
      if (index < 0) index += d;
      indices[static_cast<size_t>(t * k + j)] = index;
    }
  }
  for (int64_t j = 0; j < k; ++j) start[static_cast<size_t>(j)] = indices[static_cast<size_t>(j)];
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t reach = indices[static_cast<size_t>(t * k + j)] - start[j] + 1;
      extent[static_cast<size_t>(j)] = std::max(extent[static_cast<size_t>(j)], reach);
    }
  }
  // Tuple t must be the block's t-th position in row-major order (so the updates are laid out as
  // the block), and every axis but one whole.
  int64_t count = 1;
  for (int64_t e : extent) count *= e;
  if (count != tuples) return false;
  std::vector<int64_t> at(static_cast<size_t>(k), 0);
  for (int64_t t = 0; t < tuples; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      if (indices[static_cast<size_t>(t * k + j)] != start[static_cast<size_t>(j)] + at[j]) {
        return false;
      }
    }
    for (int64_t j = k - 1; j >= 0; --j) {
      if (++at[static_cast<size_t>(j)] < extent[static_cast<size_t>(j)]) break;
      at[static_cast<size_t>(j)] = 0;
    }
  }
  int64_t axis = 0, partial_axes = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (extent[static_cast<size_t>(j)] != shape[static_cast<size_t>(j)]) {
      axis = j;
      ++partial_axes;
    }
  }
  if (partial_axes > 1) return false;
  std::vector<int64_t> block = shape;
  for (int64_t j = 0; j < k; ++j) block[static_cast<size_t>(j)] = extent[static_cast<size_t>(j)];
  int64_t update_count = 1, block_count = 1;
  for (int64_t e : update_shape) update_count *= e;
  for (int64_t e : block) block_count *= e;
  if (update_count != block_count) return false;  // the reference reports it

  const std::string name = scatter->name();
  Value* written = updates;
  if (update_shape != block) {
    const std::string id = graph.unique_name(name + "_block");
    Node* reshape =
        graph.add_node("Reshape", id, {updates, ints_constant(graph, id + "_shape", block)}, {id},
                       std::max(scatter->opset(), 5));
    reshape->output(0)->type = typed(data, block);
    written = reshape->output(0);
  }
  const int64_t begin = start[static_cast<size_t>(axis)];
  const int64_t end = begin + extent[static_cast<size_t>(axis)];
  std::vector<Value*> pieces;
  if (begin > 0)
    pieces.push_back(slice_of(graph, data, axis, 0, begin, scatter->opset(), name + "_kept"));
  pieces.push_back(written);
  if (end < shape[static_cast<size_t>(axis)]) {
    pieces.push_back(slice_of(graph, data, axis, end, shape[static_cast<size_t>(axis)],
                              scatter->opset(), name + "_kept"));
  }
  replace_by_pieces(graph, y, pieces, axis, scatter->opset(), name);
  graph.remove_node(scatter);
  ++stats[pieces.size() == 1 ? "whole-cache writes folded" : "cache writes folded"];
  return true;
}

// y = Slice(Concat(p0, p1, ...; axis a), start, end, {a}, 1) -> the parts it covers.
bool slice_of_concat(Graph& graph, Node* slice, PassStats& stats) {
  Value* joined = slice->input(0);
  Node* concat = joined ? joined->producer() : nullptr;
  if (slice->opset() < kSliceOpset || !replaceable(graph, slice->output(0)) || !concat ||
      concat->op_type() != "Concat" || !concat->domain().empty() || slice->num_inputs() < 4) {
    return false;
  }
  std::vector<int64_t> shape, starts, ends, axes, steps = {1};
  if (!known_shape(joined, shape) || !constant_ints(slice->input(1), starts) ||
      !constant_ints(slice->input(2), ends) || !constant_ints(slice->input(3), axes) ||
      (slice->input(4) && !constant_ints(slice->input(4), steps)) || starts.size() != 1 ||
      ends.size() != 1 || axes.size() != 1 || steps.size() != 1 || steps[0] != 1) {
    return false;
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = concat->attr_int("axis", 0);
  if (axis < 0) axis += rank;
  int64_t sliced = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (sliced != axis || axis < 0 || axis >= rank) return false;
  // The spec's clamping for step 1.
  const int64_t d = shape[static_cast<size_t>(axis)];
  auto position = [d](int64_t p) {
    if (p < 0) p = p < -d ? 0 : p + d;
    return p > d ? d : p;
  };
  const int64_t begin = position(starts[0]), end = position(ends[0]);
  if (begin >= end) return false;
  // Every part's extent first: nothing is added to the graph unless the rule applies.
  std::vector<int64_t> sizes;
  for (const Value* part : concat->inputs()) {
    std::vector<int64_t> part_shape;
    if (!known_shape(part, part_shape)) return false;
    sizes.push_back(part_shape[static_cast<size_t>(axis)]);
  }
  std::vector<Value*> pieces;
  int64_t offset = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t from = std::max(begin, offset), to = std::min(end, offset + sizes[i]);
    if (from < to) {
      pieces.push_back(slice_of(graph, concat->input(i), axis, from - offset, to - offset,
                                slice->opset(), slice->name() + "_part"));
    }
    offset += sizes[i];
  }
  replace_by_pieces(graph, slice->output(0), pieces, axis, concat->opset(), slice->name());
  graph.remove_node(slice);
  ++stats["slices of a concat folded"];
  return true;
}

// clang-format off
const std::vector<PeepholeRule> kRules = {
    {"ScatterND", scatter_block},    // ScatterND(c, block, u)     -> Concat(c.., u, c..)
    {"Slice",     slice_of_concat},  // Slice(Concat(p..), range)  -> the parts it covers
};
// clang-format on

}  // namespace

bool fold_cache_updates(Model& model, const PassContext& context, PassStats& stats) {
  (void)context;
  bool changed = false;
  for_each_graph(model, [&](Graph& graph) {
    changed = apply_peephole_rules(graph, kRules, stats) || changed;
  });
  return changed;
}

}  // namespace rnnc
