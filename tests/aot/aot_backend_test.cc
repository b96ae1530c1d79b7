// Every ONNX backend test case (libonnx-testdata: node, pytorch-converted, pytorch-operator,
// simple) whose compiled program runs no reference block is exported ahead of time
// (aot::export_model, what `rnnc compile` runs) and the library, loaded from a shared object
// built from its archive, gives the runtime's outputs (Program::run) bit for bit - the same
// kernels and the same copy code - and the stored outputs within the backend test's tolerance
// (rtol 1e-3, atol 1e-7, as tests/onnx_backend). A case the runtime runs with a reference block
// is skipped: such a model cannot be exported, and `rnnc compile` says so naming the block.
// Quantized: the cases with a recurrent node, MatMul or Gemm, quantized with the default scheme
// (unguarded, so every such node runs int8), the library equal to the runtime bit for bit.
//
//   aot_backend_test --cache-dir=DIR [--suites=node,...] [gtest flags]
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "aot/aot_common.h"
#include "aot/export.h"
#include "compiler/compile.h"
#include "ir/onnx_import.h"
#include "lowering/program.h"
#include "tests/support/backend_cases.h"
#include "tests/support/compare.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;

namespace rnnc {
namespace {

using testing::BackendCase;

constexpr testing::Tolerance kTolerance{1e-3, 1e-7};
std::string g_cache_dir;
std::string g_suites = "node,pytorch-converted,pytorch-operator,simple";

// The inputs of each test_data_set_N, by graph input name (files name them, or go in order).
std::vector<std::map<std::string, Tensor>> read_data_sets(const std::string& dir,
                                                          const Graph& graph) {
  std::vector<std::map<std::string, Tensor>> data;
  for (const std::string& set : testing::backend_data_sets(dir)) {
    std::map<std::string, Tensor> inputs = testing::read_backend_inputs(set, graph);
    data.push_back(std::move(inputs));
  }
  return data;
}

std::string run_command(const std::string& command) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return "cannot run " + command;
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  return ::pclose(pipe) == 0 ? "" : command + ":\n" + output;
}

// A loaded library: the shared object stays mapped (its Halide runtime may keep threads).
struct Library {
  const rnnc_aot_model* model = nullptr;
  void* context = nullptr;
  ~Library() {
    if (context) model->destroy(context);
  }
};

bool has_quantizable_node(const Graph& graph) {
  for (const auto& node : graph.nodes()) {
    const std::string& op = node->op_type();
    if (op == "LSTM" || op == "GRU" || op == "RNN" || op == "MatMul" || op == "Gemm") return true;
  }
  return false;
}

class AotBackend : public ::testing::TestWithParam<BackendCase> {};

void check_case(const BackendCase& test_case, bool quantized) {
  const std::string model_path = test_case.dir + "/model.onnx";
  CompileOptions compile_options;
  compile_options.stop_after = Stage::kLower;
  compile_options.program.cache_dir = g_cache_dir;
  if (quantized) {
    compile_options.quantize.config = "default";
    compile_options.quantize.guard = false;
  }
  std::unique_ptr<Program> program;
  try {
    std::unique_ptr<Model> model = import_onnx_file(model_path);
    if (quantized && !has_quantizable_node(*model->graph)) GTEST_SKIP() << "nothing to quantize";
    program = compile(ModelSource::model(std::move(model)), compile_options).program;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUnsupported) GTEST_SKIP() << e.what();
    FAIL() << "compiling: " << e.what();
  }
  for (const auto& block : program->blocks()) {
    if (block->kind().rfind("reference", 0) == 0) {
      GTEST_SKIP() << "runs a reference block: " << block->kind();
    }
  }
  const Graph& graph = *program->model().graph;
  const std::vector<std::map<std::string, Tensor>> data = read_data_sets(test_case.dir, graph);
  ASSERT_FALSE(data.empty()) << "no test data set";

  testing::TempDir dir("aot_backend");
  aot::ExportOptions options;
  options.name = "m";
  options.output_dir = dir.path();
  options.source = model_path;
  options.compile = compile_options;
  try {
    aot::export_model(ModelSource::file(model_path), options);
  } catch (const Error& e) {
    FAIL() << "the runtime runs it without reference blocks, but the export fails: " << e.what();
  }
  const std::string shared = dir.path() + "/m.so";
  const std::string link = run_command(
      cat("cc -shared -Wl,-Bsymbolic -o '", shared, "' -Wl,--whole-archive '", dir.path(),
          "/libm.a' -Wl,--no-whole-archive -lm -lpthread -ldl"));
  ASSERT_EQ(link, "");
  void* handle = ::dlopen(shared.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto descriptor = reinterpret_cast<const rnnc_aot_model* (*)()>(::dlsym(handle, "m_model"));
  ASSERT_NE(descriptor, nullptr);
  Library library;
  library.model = descriptor();
  const rnnc_aot_model& model = *library.model;
  ASSERT_EQ(model.create_from_file((dir.path() + "/m.weights").c_str(), &library.context), 0);

  for (size_t set = 0; set < data.size(); ++set) {
    SCOPED_TRACE(cat("test_data_set_", set));
    const std::map<std::string, Tensor>& inputs = data[set];
    std::vector<Tensor> expected_outputs;
    try {
      expected_outputs = program->run(inputs);
    } catch (const Error& e) {
      FAIL() << "the runtime fails: " << e.what();
    }
    // The dims: each plain symbol of a graph input's shape, from the tensor given for it.
    std::map<std::string, int64_t> bound;
    for (const Value* input : graph.inputs()) {
      auto it = inputs.find(input->name());
      if (it == inputs.end() || !input->type.shape) continue;
      for (size_t k = 0; k < input->type.shape->size() && k < it->second.shape().size(); ++k) {
        const Dim& d = (*input->type.shape)[k];
        const std::vector<std::string> symbols = d.symbols();
        if (symbols.size() == 1 && d.to_string() == symbols[0]) bound[symbols[0]] = it->second.dim(k);
      }
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < model.num_dims; ++d) {
      auto it = bound.find(model.dim_names[d]);
      ASSERT_NE(it, bound.end()) << "no input gives dim '" << model.dim_names[d] << "'";
      dims.push_back(it->second);
    }
    std::vector<const void*> input_data;
    for (int i = 0; i < model.num_inputs; ++i) {
      auto it = inputs.find(model.inputs[i].name);
      if (it != inputs.end()) {
        input_data.push_back(it->second.raw_data());
        continue;
      }
      // An input with a default (an initializer listed as a graph input, as models of IR
      // version 3 list every weight) that the data set leaves out: the library takes the default.
      const Value* input = graph.find_value(model.inputs[i].name);
      ASSERT_TRUE(input && input->is_constant())
          << "no data for input '" << model.inputs[i].name << "'";
      input_data.push_back(input->constant()->raw_data());
    }
    // Outputs: caller buffers shaped by the descriptor, or pointers the run sets (owned).
    std::vector<Tensor> outputs(static_cast<size_t>(model.num_outputs));
    std::vector<const void*> owned(outputs.size(), nullptr);
    std::vector<void*> output_slots;
    for (int o = 0; o < model.num_outputs; ++o) {
      const Value* value = graph.find_value(model.outputs[o].name);
      ASSERT_NE(value, nullptr);
      if (model.outputs[o].owned) {
        output_slots.push_back(&owned[o]);
        continue;
      }
      int64_t shape[16];
      const int rank = model.shape(model.num_inputs + o, dims.data(), shape);
      ASSERT_GE(rank, 0);
      outputs[o] = Tensor(value->type.dtype, std::vector<int64_t>(shape, shape + rank));
      output_slots.push_back(outputs[o].raw_data());
    }
    const int status = model.run(library.context, dims.data(), input_data.data(),
                                 output_slots.data());
    ASSERT_EQ(status, 0) << model.last_error(library.context);
    for (int o = 0; o < model.num_outputs; ++o) {
      const std::string name = model.outputs[o].name;
      if (model.outputs[o].owned) {
        int64_t shape[16];
        const int rank = model.output_shape(library.context, o, shape);
        ASSERT_GE(rank, 0);
        outputs[o] = Tensor(graph.find_value(name)->type.dtype,
                            std::vector<int64_t>(shape, shape + rank));
        if (outputs[o].nbytes() > 0) {
          std::memcpy(outputs[o].raw_data(), owned[o], outputs[o].nbytes());
        }
      }
      size_t index = 0;
      while (index < graph.outputs().size() && graph.outputs()[index]->name() != name) ++index;
      ASSERT_LT(index, expected_outputs.size());
      const Tensor& jit = expected_outputs[index];
      ASSERT_EQ(outputs[o].dtype(), jit.dtype()) << name;
      ASSERT_EQ(outputs[o].shape(), jit.shape()) << name;
      EXPECT_EQ(std::memcmp(outputs[o].raw_data(), jit.raw_data(), jit.nbytes()), 0)
          << "output '" << name << "': the library's bits differ from the runtime's";
      const std::optional<Tensor> stored = testing::read_backend_output(
          (fs::path(test_case.dir) / cat("test_data_set_", set)).string(), index, graph);
      if (!quantized && stored) {
        const testing::Comparison comparison =
            testing::compare_tensors(outputs[o], *stored, kTolerance);
        EXPECT_TRUE(comparison.ok) << "output '" << name << "': " << comparison.message;
      }
    }
  }
}

TEST_P(AotBackend, LibraryEqualsRuntime) { check_case(GetParam(), false); }

TEST_P(AotBackend, QuantizedLibraryEqualsRuntime) { check_case(GetParam(), true); }

std::string case_name(const ::testing::TestParamInfo<BackendCase>& info) {
  return testing::backend_case_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Cases, AotBackend,
                         ::testing::ValuesIn(testing::discover_backend_cases(g_suites)),
                         case_name);

}  // namespace
}  // namespace rnnc

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--cache-dir=", 0) == 0) rnnc::g_cache_dir = arg.substr(12);
    if (arg.rfind("--suites=", 0) == 0) rnnc::g_suites = arg.substr(9);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
