// The IR verifier: checks the invariants every pass must keep, and reports the first broken one
// as an internal error (a pass bug, never the user's). Run after every pass in debug and test
// builds (graph_opt's pass manager) and after import in tests.
//
// Invariants: every node input is defined before use (in this graph, in an enclosing graph, or a
// graph input/initializer); each value has at most one producer and its producer/use records
// agree with the nodes; every node's op is registered and its outputs have a defined dtype;
// graph outputs are defined; nested graphs point at their parent.
#pragma once

#include "ir/graph.h"

namespace rnnc {

void verify_graph(const Graph& graph);
void verify_model(const Model& model);

}  // namespace rnnc
