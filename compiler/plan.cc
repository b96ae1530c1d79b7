#include "compiler/plan.h"

#include <algorithm>
#include <cstdlib>

#include "ir/error.h"

namespace rnnc {

const char* run_plan_name(RunPlan plan) {
  switch (plan) {
    case RunPlan::kSequential:
      return "sequential";
    case RunPlan::kParallel:
      return "parallel";
    case RunPlan::kPipeline:
      return "pipeline";
  }
  return "?";
}

namespace {

// RNNC_PLAN: "auto" (or unset) leaves the choice to plan_execution.
std::optional<RunPlan> forced_plan() {
  const char* forced = std::getenv("RNNC_PLAN");
  if (!forced || !*forced || std::string(forced) == "auto") return std::nullopt;
  for (RunPlan plan : {RunPlan::kSequential, RunPlan::kParallel, RunPlan::kPipeline}) {
    if (forced == std::string(run_plan_name(plan))) return plan;
  }
  raise_invalid_input(cat("RNNC_PLAN='", forced,
                          "' is not an execution plan (expected auto, sequential, parallel or "
                          "pipeline)"));
}

}  // namespace

RunPlanChoice plan_execution(const Program& program, const PlanOptions& options) {
  RunPlanChoice choice;
  if (options.plan) {
    choice.candidates = {*options.plan};
    return choice;
  }
  if (std::optional<RunPlan> forced = forced_plan()) {
    // Experiments: force the plan of every auto model in a process.
    choice.candidates = {*forced};
    choice.note = "forced by RNNC_PLAN";
    return choice;
  }
  if (options.threads <= 1) {
    choice.candidates = {RunPlan::kSequential};
    return choice;
  }
  const RunPlan overlapping =
      pipeline_chains(program).empty() ? RunPlan::kParallel : RunPlan::kPipeline;
  choice.candidates = {RunPlan::kSequential, overlapping};
  choice.note = cat("per input shape: sequential or ", run_plan_name(overlapping),
                    ", whichever its timed runs found faster");
  return choice;
}

std::vector<std::vector<size_t>> pipeline_chains(const Program& program) {
  const auto& blocks = program.blocks();
  std::vector<std::vector<size_t>> chains;
  std::vector<size_t> chain;
  auto close = [&] {
    if (chain.size() >= 2) chains.push_back(chain);
    chain.clear();
  };
  for (size_t b = 0; b < blocks.size(); ++b) {
    const ExecutionBlock& block = *blocks[b];
    if (!block.chunkable() || block.plan.sequence != AxisPlan::kPipeline) {
      close();
      continue;
    }
    bool continues = false;
    if (!chain.empty()) {
      const ExecutionBlock& previous = *blocks[chain.back()];
      continues = block.sequence_input() && block.sequence_input() == previous.sequence_output();
      for (const Value* value : block.inputs) {
        const bool from_previous = std::find(previous.outputs.begin(), previous.outputs.end(),
                                             value) != previous.outputs.end();
        if (from_previous && value != previous.sequence_output()) continues = false;
      }
    }
    if (!continues) close();
    chain.push_back(b);
  }
  close();
  return chains;
}

}  // namespace rnnc
