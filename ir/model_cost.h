// model_cost: the multiply-adds and weight bytes one run of a graph needs in its compute nodes,
// counted on a graph whose shapes are static (after specialization): what a floor divides by the
// machine's rates (the benchmark report's model floors, benchmarks/report.py).
//
//   Conv           output elements x (input channels per group x kernel taps)
//   ConvTranspose  input elements x (output channels per group x kernel taps)
//   MatMul, Gemm   M x N x K per matrix product (batch dims multiplied in)
//   LSTM/GRU/RNN   directions x sequence x batch x gates x hidden x (input + hidden)
// Weight bytes are the bytes of these nodes' constant operands (weights and biases); every other
// node counts neither (elementwise and data movement ops are small next to them in the recurrent
// models here, and a floor that leaves them out is a lower bound still).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

struct NodeCost {
  std::string node;  // the node's name
  std::string op;
  int64_t macs = 0;
  int64_t weight_bytes = 0;
};

struct ModelCost {
  int64_t macs = 0;
  int64_t weight_bytes = 0;
  std::vector<NodeCost> nodes;  // the counted nodes, in graph order
  // Nodes whose cost depends on a shape the graph does not fix (their names): not counted.
  std::vector<std::string> unknown;
};

// Counts the top-level graph's nodes (a node inside an If or Loop body is not counted: after
// specialization the Ifs the counted models have are gone).
ModelCost model_cost(const Graph& graph);

}  // namespace rnnc
