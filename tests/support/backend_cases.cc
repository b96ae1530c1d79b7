#include "tests/support/backend_cases.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "ir/onnx_import.h"

namespace fs = std::filesystem;

namespace rnnc::testing {

std::vector<BackendCase> discover_backend_cases(const std::string& suites) {
  std::vector<BackendCase> cases;
  std::stringstream list(suites);
  std::string suite;
  while (std::getline(list, suite, ',')) {
    const fs::path dir = fs::path(kBackendDataRoot) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        cases.push_back({suite, entry.path().filename().string(), entry.path().string()});
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.suite + a.name < b.suite + b.name; });
  return cases;
}

std::vector<std::string> backend_data_sets(const std::string& dir) {
  std::vector<std::string> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path().string());
    }
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::string backend_case_name(const BackendCase& test_case) {
  std::string name = test_case.suite + "_" + test_case.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

namespace {

// ONNX 1.12's test data stores bfloat16 tensors with data_type UINT16 (the same bits).
Tensor as_declared_bfloat16(Tensor tensor, DType declared) {
  if (declared != DType::kBFloat16 || !tensor.is_tensor() || tensor.dtype() != DType::kUInt16) {
    return tensor;
  }
  Tensor bf16(DType::kBFloat16, tensor.shape());
  std::memcpy(bf16.raw_data(), tensor.raw_data(), tensor.nbytes());
  return bf16;
}

}  // namespace

std::map<std::string, Tensor> read_backend_inputs(const std::string& data_set, const Graph& graph) {
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0;; ++i) {
    const fs::path file = fs::path(data_set) / cat("input_", i, ".pb");
    if (!fs::exists(file)) break;
    const Value* input = i < graph.inputs().size() ? graph.inputs()[i] : nullptr;
    std::string name;
    Tensor value = read_value_pb(file.string(), input ? input->type : TensorType{}, &name);
    const Value* named = graph.find_local_value(name);
    if (named && named->is_graph_input() && named != input) {
      input = named;
      value = read_value_pb(file.string(), input->type);
    }
    if (!input) raise_invalid_input(cat(file.string(), ": more input files than graph inputs"));
    inputs[input->name()] = as_declared_bfloat16(std::move(value), input->type.dtype);
  }
  return inputs;
}

std::optional<Tensor> read_backend_output(const std::string& data_set, size_t index,
                                          const Graph& graph) {
  const fs::path file = fs::path(data_set) / cat("output_", index, ".pb");
  if (!fs::exists(file)) return std::nullopt;
  const TensorType& type = graph.outputs().at(index)->type;
  return as_declared_bfloat16(read_value_pb(file.string(), type), type.dtype);
}

}  // namespace rnnc::testing
