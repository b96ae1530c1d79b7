// What a graph_opt pass is: a function that rewrites a Model in place, returns whether it changed
// anything, and counts what it did (so `rnnc optimize --stats` can print it). Passes are listed
// once, by name, in passes.def; the pipeline (pipeline.h) runs them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

// Specialization the user asked for at compile time.
struct PassContext {
  std::map<std::string, Tensor> fixed_inputs;  // --fix NAME=VALUE: input replaced by a constant
  std::map<std::string, int64_t> fixed_dims;   // --dim NAME=N: symbolic dim bound to a size
};

// Counters a pass reports, by name: {"nodes removed": 3, "constants folded": 2}.
using PassStats = std::map<std::string, int64_t>;

using PassFn = bool (*)(Model& model, const PassContext& context, PassStats& stats);

struct PassInfo {
  const char* name;
  const char* summary;
  PassFn run;
};

// Every pass, in passes.def order.
const std::vector<PassInfo>& all_passes();
const PassInfo* find_pass(const std::string& name);

// Declarations of the pass entry points (one file each).
#define RNNC_PASS(name, function, summary) \
  bool function(Model& model, const PassContext& context, PassStats& stats);
#include "graph_opt/passes.def"
#undef RNNC_PASS

// Helpers shared by passes.
// `node` is a default-domain (or "ai.onnx") node of `op_type`; false for null.
bool is_op(const Node* node, const char* op_type);
// `node` is a default-domain Cast to float32.
bool is_float_cast(const Node& node);
// Visits every graph of the model, nested ones first (bodies before the graph that holds them).
void for_each_graph(Model& model, const std::function<void(Graph&)>& visit);
int64_t count_nodes(const Graph& graph);  // including nested graphs

// A peephole rule of a rule-table pass: `apply` may rewrite a default-domain node of `op_type`
// and says whether it changed the graph. It removes or changes only its own node; nodes it adds
// go at the end of the graph.
struct PeepholeRule {
  const char* op_type;
  bool (*apply)(Graph& graph, Node* node, PassStats& stats);
};
// Sweeps `graph`'s nodes, each through the first rule for its op type, until a sweep changes
// nothing (added nodes are visited on the next sweep), sorting topologically after every sweep
// that changed something. Returns whether any did.
bool apply_peephole_rules(Graph& graph, const std::vector<PeepholeRule>& rules, PassStats& stats);

}  // namespace rnnc
