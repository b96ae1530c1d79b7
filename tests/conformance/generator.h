// Coverage-driven random test generation from the op specs.
//
// For one op and a requested count N, the generator
// - splits N across every combination of the spec's element types (round robin over shuffled
//   blocks, so each combination gets N / combinations tests, +1 for some);
// - chooses the primary operand's rank so each rank in [min, max] gets its share: a rank is not
//   used again once it reached ceil(N / ranks) while another is below its share;
// - forces one boundary class per test, cycling through those that apply to the op: dims of 1,
//   0 (where legal) and large; values at the range ends, 0, -0, huge, tiny, NaN and Inf (where the
//   op defines them) - and records the classes each test's data actually hits;
// - smoke profile: attributes are one fixed random instance per op, operands are random; full
//   profile: attributes are random per test too;
// - is deterministic: a test depends only on (seed, op, profile, index).
// Each test's model is built as rnnc IR, type-checked by rnnc's shape inference, exported to ONNX,
// and its expected outputs come from rnnc's reference evaluator. A generated model rnnc rejects,
// an evaluator error, or inferred shapes that differ from the evaluator's are generation failures:
// they are bugs in a spec or in rnnc, and are reported.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "tests/conformance/coverage.h"
#include "tests/conformance/draft.h"
#include "tests/conformance/spec.h"
#include "tests/conformance/suite.h"

namespace rnnc::conformance {

struct GenOptions {
  Profile profile = Profile::kSmoke;
  int count = 200;
  uint64_t seed = 1;
  std::string out_dir;  // "" keeps the tests in memory only
  std::function<void(const std::string& op, int done, int total)> progress;
};

struct GeneratedTest {
  TestMeta meta;
  std::unique_ptr<Model> model;
  std::vector<std::pair<std::string, Tensor>> inputs;   // graph inputs, in order
  std::vector<std::pair<std::string, Tensor>> outputs;  // expected, in graph output order
};

struct OpGenReport {
  std::string op;
  int written = 0;
  std::vector<std::string> failures;  // one line per failed attempt: name, attempt, message
  Coverage coverage;
};

// Generates `options.count` tests of one op (writing them under options.out_dir when set).
OpGenReport generate_op(const OpSpec& spec, const GenOptions& options,
                        std::vector<GeneratedTest>* keep = nullptr);

// The operand coverage ranks are counted on: input 0, or output 0 for ops without inputs.
const OperandSpec* primary_operand(const OpSpec& spec);
// The boundary classes that apply to some operand of the op at some of its types.
std::vector<Boundary> applicable_boundaries(const OpSpec& spec);
// The model IR version that goes with a default-domain opset (what exporters write).
int64_t ir_version_for_opset(int opset);
// "<op>_<profile>_<index, 4 digits>"
std::string test_name(const std::string& op, Profile profile, int index);

}  // namespace rnnc::conformance
