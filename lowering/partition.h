// The partitioner: splits an optimized graph into execution blocks and decides every block's
// execution plan per dynamic axis, all together so the plans never contradict.
//
// Rules (after the design this engine follows):
//   - a recurrent node (LSTM/GRU/RNN) is one block, never split: its recurrence is the expensive
//     part and its weights stay resident; a bidirectional node's directions are independent work
//     inside it; the layout ops graph_opt marked as views of it (rnnc.layout_of) join its block,
//     which reads and writes their layouts directly;
//   - an elementwise fusion group (graph_opt's rnnc.fusion_group, rooted at its MatMul/Gemm/Conv
//     producer when it has one) is one block;
//   - every other node is its own block (after graph_opt few shape-only nodes remain);
//   - blocks are ordered so each runs after the blocks producing what it reads;
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
