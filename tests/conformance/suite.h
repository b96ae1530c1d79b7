// The on-disk form of a generated test, which is the ONNX backend test layout plus one file:
//
//   <dir>/<name>/model.onnx
//   <dir>/<name>/test_data_set_0/input_<k>.pb    one per graph input, in graph input order
//   <dir>/<name>/test_data_set_0/output_<k>.pb   one per graph output: the expected values
//   <dir>/<name>/conform.txt                     what the generator chose (TestMeta below)
//
// Any backend-test runner consumes the first three; conform.txt lets `rnnc_conform run` report
// per-op coverage and match engine disagreements against a list of known ones by their features.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace rnnc::conformance {

struct TestMeta {
  std::string name;  // <op>_<profile>_<index>, also the folder name
  std::string op;
  int opset = 0;
  std::string profile;
  int index = 0;
  uint64_t seed = 0;
  std::map<std::string, std::string> types;  // type variable -> ONNX type name ("float")
  int rank = -1;                             // rank of the primary operand (input 0)
  std::set<std::string> boundaries;          // boundary classes the test's data hits
  std::set<std::string> tags;                // features: "direction=reverse", "T=float16", ...

  // "T=float,T1=int32": the key of the test's type combination.
  std::string type_key() const;
  // Every feature the findings list can match on: tags, "T=<type>", "rank=<r>", "opset=<n>",
  // and the boundary class names.
  std::set<std::string> features() const;
};

void write_meta(const std::string& path, const TestMeta& meta);
TestMeta read_meta(const std::string& path);

struct TestFiles {
  std::string dir;
  std::string model_path;
  std::vector<std::pair<std::string, Tensor>> inputs;  // name, tensor
  std::vector<Tensor> expected;                        // in graph output order
};

// Writes inputs and expected outputs (model.onnx is written by the generator).
void write_test_data(const std::string& dir,
                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                     const std::vector<std::pair<std::string, Tensor>>& outputs);
TestFiles read_test(const std::string& dir);

// The test folders under `root` (those holding model.onnx), sorted by name.
std::vector<std::string> find_tests(const std::string& root);

}  // namespace rnnc::conformance
