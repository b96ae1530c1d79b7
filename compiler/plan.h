// The plan stage: how the executor runs a Program's blocks.
//
//   sequential  blocks in order on the calling thread;
//   parallel    independent blocks at once (a oneTBB flow graph over the blocks' dependencies);
//   pipeline    blocks in order, except that each chain of recurrent layers (pipeline_chains)
//               runs as a wavefront over (layer, time chunk).
//
// plan_execution picks the plans the runtime builds executors for: the one asked for, or with
// "auto" and more than one thread, sequential and the plan that overlaps work (pipeline when the
// program has a chain of recurrent layers, else parallel), between which runtime/plan_chooser.h
// picks per input shape. The runtime (runtime/executor.h) runs them; an ahead-of-time library
// runs its blocks sequentially.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lowering/program.h"

namespace rnnc {

enum class RunPlan { kSequential, kParallel, kPipeline };
const char* run_plan_name(RunPlan plan);

struct PlanOptions {
  std::optional<RunPlan> plan;  // nullopt: auto (the environment's RNNC_PLAN may force one)
  int threads = 1;
};

struct RunPlanChoice {
  // One plan, or [kSequential, the overlapping plan] for the runtime to choose between per shape.
  std::vector<RunPlan> candidates;
  std::string note;  // how the plan was chosen ("" when it was asked for)
};

RunPlanChoice plan_execution(const Program& program, const PlanOptions& options);

// The chains of blocks the pipeline plan overlaps: consecutive chunkable blocks planned as a
// sequence pipeline, each reading its predecessor's sequence output (and nothing else of it).
// Chains of one block are not listed.
std::vector<std::vector<size_t>> pipeline_chains(const Program& program);

}  // namespace rnnc
