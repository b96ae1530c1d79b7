// Execution blocks: the unit lowering produces and the executor runs.
//
// A block covers one or more nodes of the optimized graph, reads some values and writes others.
// It runs with the same calling convention as a reference kernel (inputs as tensors, outputs
// assigned), so every lowered block can be checked against the reference evaluator on the very
// same inputs. A block is immutable after lowering and run() may be called from several threads at
// once (scratch memory is per call).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc {

// How a block's work along one dynamic axis may be scheduled.
enum class AxisPlan {
  kSequential,  // in order: a dependence runs along the axis (a recurrence over time)
  kParallel,    // no dependence along the axis (the input projection over all steps; batch)
  kPipeline,    // a chain of recurrent layers: block k+1 can run step t while block k runs t+1
};
const char* axis_plan_name(AxisPlan plan);

struct ExecutionPlan {
  AxisPlan sequence = AxisPlan::kParallel;
  AxisPlan batch = AxisPlan::kParallel;
};

struct BlockIO {
  std::vector<const Tensor*> inputs;  // nullptr for an omitted optional input
  std::vector<Tensor> outputs;        // the block assigns one per output value
};

class ExecutionBlock {
 public:
  virtual ~ExecutionBlock() = default;
  // "halide lstm (forward, hidden 128)", "reference Shape": what runs, for `rnnc plan`.
  virtual std::string kind() const = 0;
  virtual void run(BlockIO& io) const = 0;

  std::vector<const Node*> nodes;     // the graph nodes this block computes, in order
  std::vector<const Value*> inputs;   // values read from outside the block
  std::vector<const Value*> outputs;  // values other blocks or the graph outputs read
  ExecutionPlan plan;
  double cost = 0;  // estimated cost in weight-byte-equivalents (partition.h)
  double compile_ms = 0;     // time spent compiling its Halide pipelines (0 when all were cached)
  bool from_cache = false;   // every pipeline it uses came from the kernel cache (or an earlier
                             // block of the same program: equal layers share pipelines)
};

}  // namespace rnnc
