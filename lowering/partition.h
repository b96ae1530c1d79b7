// The partitioner: splits an optimized graph into execution blocks and decides every block's
// execution plan per dynamic axis, all together so the plans never contradict.
//
// Rules (after the design this engine follows):
//   - a recurrent node (LSTM/GRU/RNN) is one block, never split: its recurrence is the expensive
//     part and its weights stay resident; a bidirectional node's directions are independent work
//     inside it;
//   - an elementwise fusion group (graph_opt's rnnc.fusion_group, rooted at its MatMul/Gemm/Conv
//     producer when it has one) is one block;
//   - every other compute node is its own block; shape-only nodes left after graph_opt (rare) join
//     the block of their consumer when they are cheap, so no block is all call overhead;
//   - cost: weight bytes + op-type work estimate, with dynamic dims at nominal sizes
//     (seq 16, batch 1); a block over the threshold is reported, not split (recurrent nodes are
//     only split by direction);
//   - plans: recurrent blocks are sequential along the sequence axis, and a chain of recurrent
//     blocks with the same direction, each feeding the next, is a pipeline; everything else is
//     parallel along both axes; every block is parallel along batch.
#pragma once

#include <string>
#include <vector>

#include "lowering/block.h"

namespace rnnc {

struct BlockSpec {
  std::vector<const Node*> nodes;
  ExecutionPlan plan;
  double cost = 0;
  bool recurrent = false;
};

std::vector<BlockSpec> partition_graph(const Graph& graph);

// Estimated cost of one node (weight bytes + work), the unit the partitioner balances.
double estimate_node_cost(const Node& node);

}  // namespace rnnc
