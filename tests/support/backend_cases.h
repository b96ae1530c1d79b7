// The ONNX backend test cases of libonnx-testdata, for the tests that run each of them
// (tests/onnx_backend: the reference evaluator; tests/aot: the ahead-of-time libraries).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace rnnc::testing {

constexpr const char* kBackendDataRoot = "/usr/share/libonnx-testdata/data";

struct BackendCase {
  std::string suite;  // "node", "pytorch-converted", ...
  std::string name;   // "test_abs"
  std::string dir;    // the case's folder: model.onnx and test_data_set_N/
};

// How gtest names a case in its messages.
inline void PrintTo(const BackendCase& test_case, std::ostream* out) {
  *out << test_case.suite << "/" << test_case.name;
}

// Every case of the comma-separated `suites` that has a model.onnx, sorted by suite and name.
std::vector<BackendCase> discover_backend_cases(const std::string& suites);

// A case's test_data_set_N folders, in order.
std::vector<std::string> backend_data_sets(const std::string& dir);

// A gtest parameter name for a case: "node_test_abs".
std::string backend_case_name(const BackendCase& test_case);

// The input_N.pb files of a test_data_set folder by graph input name: a file names its input, or
// else is the N-th graph input's. Each is read as its input's declared type (a SequenceProto or
// OptionalProto for a sequence or an optional; bfloat16 data, which ONNX 1.12 stores as uint16,
// as the bfloat16 the input declares). kInvalidInput for more files than graph inputs.
std::map<std::string, Tensor> read_backend_inputs(const std::string& data_set, const Graph& graph);

// output_N.pb of a test_data_set folder as graph output N's declared type; nullopt when absent.
std::optional<Tensor> read_backend_output(const std::string& data_set, size_t index,
                                          const Graph& graph);

}  // namespace rnnc::testing
