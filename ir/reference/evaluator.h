// The reference evaluator: a deliberately plain interpreter over the IR, one function per op
// (ir/reference/kernels_*.cc), written to mirror the ONNX spec's math so a reader can check it
// line by line. It is the correctness oracle for graph_opt, lowering, quantization and the
// conformance suite: clarity beats speed. Float ops compute in the input type (float32 models in
// float32), with accumulations in double where the spec leaves the order open.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

// Called after each node with its computed outputs (used by --dump-dir and numerical debugging).
using NodeObserver = std::function<void(const Node& node, const std::vector<Tensor>& outputs)>;

// Runs `graph` on named inputs and returns its outputs in graph output order.
// Inputs are checked against the graph's declared types first: a missing input, an unknown name,
// a wrong dtype or rank, a dim that differs from a known one or from another use of the same
// symbolic axis are kInvalidInput errors naming the input and what was expected. Graph inputs
// with an initializer default may be omitted.
std::vector<Tensor> evaluate(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                             const NodeObserver& observer = nullptr);

// Runs one node with its reference kernel (the fallback for nodes lowering does not handle).
// `outer` resolves the values its nested graphs capture from enclosing graphs.
using ValueLookup = std::function<const Tensor*(const Value* value)>;
std::vector<Tensor> evaluate_node(const Node& node, const std::vector<const Tensor*>& inputs,
                                  const ValueLookup& outer);

// kUnsupported naming the first graph input or output that is a sequence or an optional: values
// cross the compiled runtime's API as tensors only. The evaluator itself takes and returns
// sequences (Tensor::sequence) and optionals (the value, or Tensor::none).
void check_tensor_interface(const Graph& graph);

// Binds the graph's symbolic dims to the given inputs' sizes (the checks above), returning the
// binding, e.g. {seq: 17, batch: 1}.
std::map<std::string, int64_t> bind_inputs(const Graph& graph,
                                           const std::map<std::string, Tensor>& inputs);

}  // namespace rnnc
