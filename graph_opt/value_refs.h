// Who reads a value beyond its use records, for the passes that rewire or rename values. A graph
// output, and a nested graph that returns an outer value directly (an If branch `return %x`), hold
// no Use, so `value->uses().empty()` alone does not mean unread. Rewiring every reference, those
// included, is Graph::replace_all_uses.
#pragma once

#include <functional>
#include <set>

#include "ir/graph.h"

namespace rnnc {

// Is `value` one of `graph`'s own outputs?
bool is_graph_output(const Graph& graph, const Value* value);

// Does a graph nested in `graph`, at any depth, return `value` directly (holding no use of it)?
bool returned_by_nested_graph(const Graph& graph, const Value* value);

// Does anything read `value` (a node, an output of `graph`, a nested return)? False for nullptr.
bool is_used(const Graph& graph, const Value* value);

// Is every reader of `value` a node of `graph` that `accept` takes, with no output of `graph` and
// no nested return among them? True for an unread value.
bool read_only_by(const Graph& graph, const Value* value,
                  const std::function<bool(const Node&)>& accept);

// May `value` take over an output name of `graph`: a node output of `graph`, not an output itself?
bool can_take_name(const Graph& graph, const Value* value);

// The values `graph` returns or its nested graphs read from outside: one set for whole-graph scans.
std::set<const Value*> escaping_values(const Graph& graph);

}  // namespace rnnc
