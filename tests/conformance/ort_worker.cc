// rnnc_conform_ort: runs conformance tests in ONNX Runtime for `rnnc_conform run --ort`, one per
// line of stdin (protocol in ort_engine.cc). A separate process because ONNX Runtime 1.30 aborts
// the whole process on some valid models (LSTM/GRU/RNN with layout = 1); the runner restarts it.
//
// ORT is set up as a user would run it: default graph optimizations (all), one intra-op thread,
// sequential execution. ORT_NOT_IMPLEMENTED (no kernel for this op/type) is reported as
// "unsupported", every other failure as "error" with ORT's error code name.
#include <onnxruntime_cxx_api.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/onnx_import.h"

namespace fs = std::filesystem;

namespace {

using rnnc::DType;
using rnnc::Tensor;

const char* error_code_name(OrtErrorCode code) {
  switch (code) {
    case ORT_FAIL:
      return "ORT_FAIL";
    case ORT_INVALID_ARGUMENT:
      return "ORT_INVALID_ARGUMENT";
    case ORT_NO_SUCHFILE:
      return "ORT_NO_SUCHFILE";
    case ORT_ENGINE_ERROR:
      return "ORT_ENGINE_ERROR";
    case ORT_RUNTIME_EXCEPTION:
      return "ORT_RUNTIME_EXCEPTION";
    case ORT_INVALID_PROTOBUF:
      return "ORT_INVALID_PROTOBUF";
    case ORT_NOT_IMPLEMENTED:
      return "ORT_NOT_IMPLEMENTED";
    case ORT_INVALID_GRAPH:
      return "ORT_INVALID_GRAPH";
    case ORT_EP_FAIL:
      return "ORT_EP_FAIL";
    default:
      return "ORT_ERROR";
  }
}

std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

Ort::Value to_ort(const Tensor& tensor, Ort::AllocatorWithDefaultOptions& allocator) {
  const std::vector<int64_t>& shape = tensor.shape();
  if (tensor.dtype() == DType::kString) {
    Ort::Value value = Ort::Value::CreateTensor(allocator, shape.data(), shape.size(),
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
    std::vector<const char*> strings;
    for (const auto& s : tensor.strings()) strings.push_back(s.c_str());
    if (!strings.empty()) value.FillStringTensor(strings.data(), strings.size());
    return value;
  }
  auto type = static_cast<ONNXTensorElementDataType>(static_cast<int32_t>(tensor.dtype()));
  Ort::Value value = Ort::Value::CreateTensor(allocator, shape.data(), shape.size(), type);
  if (tensor.nbytes() > 0) {
    std::memcpy(value.GetTensorMutableRawData(), tensor.raw_data(), tensor.nbytes());
  }
  return value;
}

Tensor from_ort(const Ort::Value& value) {
  Ort::TensorTypeAndShapeInfo info = value.GetTensorTypeAndShapeInfo();
  Tensor tensor(static_cast<DType>(info.GetElementType()), info.GetShape());
  if (tensor.dtype() == DType::kString) {
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      tensor.strings()[static_cast<size_t>(i)] =
          value.GetStringTensorElement(static_cast<size_t>(i));
    }
  } else if (tensor.nbytes() > 0) {
    std::memcpy(tensor.raw_data(), value.GetTensorRawData(), tensor.nbytes());
  }
  return tensor;
}

size_t run_test(Ort::Env& env, const std::string& dir, const std::string& out_dir) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  options.SetIntraOpNumThreads(1);
  options.SetInterOpNumThreads(1);
  options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  std::string model = (fs::path(dir) / "model.onnx").string();
  Ort::Session session(env, model.c_str(), options);

  Ort::AllocatorWithDefaultOptions allocator;
  std::vector<std::string> input_names;
  std::vector<Ort::Value> inputs;
  for (size_t i = 0;; ++i) {
    fs::path file = fs::path(dir) / "test_data_set_0" / rnnc::cat("input_", i, ".pb");
    if (!fs::exists(file)) break;
    std::string name;
    Tensor tensor = rnnc::read_tensor_pb(file.string(), &name);
    input_names.push_back(name);
    inputs.push_back(to_ort(tensor, allocator));
  }
  std::vector<std::string> output_names;
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    output_names.push_back(session.GetOutputNameAllocated(i, allocator).get());
  }
  std::vector<const char*> in_ptrs, out_ptrs;
  for (const auto& name : input_names) in_ptrs.push_back(name.c_str());
  for (const auto& name : output_names) out_ptrs.push_back(name.c_str());
  std::vector<Ort::Value> outputs =
      session.Run(Ort::RunOptions{nullptr}, in_ptrs.data(), inputs.data(), inputs.size(),
                  out_ptrs.data(), out_ptrs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    rnnc::write_tensor_pb((fs::path(out_dir) / rnnc::cat("output_", i, ".pb")).string(),
                          from_ort(outputs[i]), output_names[i]);
  }
  return outputs.size();
}

}  // namespace

int main() {
  Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "rnnc_conform_ort");
  std::string line;
  while (std::getline(std::cin, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      std::cout << "error malformed request" << std::endl;
      continue;
    }
    std::string reply;
    try {
      size_t n = run_test(env, line.substr(0, tab), line.substr(tab + 1));
      reply = rnnc::cat("ok ", n);
    } catch (const Ort::Exception& e) {
      std::string text = std::string(error_code_name(e.GetOrtErrorCode())) + ": " + e.what();
      reply = (e.GetOrtErrorCode() == ORT_NOT_IMPLEMENTED ? "unsupported " : "error ") + text;
    } catch (const std::exception& e) {
      reply = std::string("error ") + e.what();
    }
    std::cout << one_line(reply) << std::endl;
  }
  return 0;
}
