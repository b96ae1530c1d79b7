#include "aot/export.h"

#include <Halide.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "aot/weight_file.h"
#include "ir/error.h"
#include "ir/op_schema.h"
#include "lowering/aot_writer.h"
#include "lowering/halide_cache.h"

namespace rnnc::aot {

extern const char* const kDriverSupport;  // lowering/core/ and aot/driver_support.c (generated)
extern const char* const kAotCommonHeader;  // aot/aot_common.h (generated)

namespace fs = std::filesystem;

namespace {

// ---- names -------------------------------------------------------------------------------------

const std::set<std::string>& c_reserved() {
  static const std::set<std::string> words = {
      "auto",   "break",    "case",     "char",   "const",    "continue", "default",  "do",
      "double", "else",     "enum",     "extern", "float",    "for",      "goto",     "if",
      "inline", "int",      "long",     "register", "restrict", "return", "short",    "signed",
      "sizeof", "static",   "struct",   "switch", "typedef",  "union",    "unsigned", "void",
      "volatile", "while",  "context",  "dims",   "inputs",   "outputs",  "status",   "bool"};
  return words;
}

// Distinct C identifiers for the run functions' parameters.
class ParameterNames {
 public:
  std::string add(const std::string& wanted) {
    std::string name = c_identifier(wanted);
    while (c_reserved().count(name) || used_.count(name)) name += "_";
    used_.insert(name);
    return name;
  }

 private:
  std::set<std::string> used_;
};

std::string c_type(DType dtype, const std::string& what) {
  switch (dtype) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kInt32:
      return "int32_t";
    case DType::kInt64:
      return "int64_t";
    case DType::kInt8:
      return "int8_t";
    case DType::kUInt8:
    case DType::kBool:
      return "uint8_t";
    default:
      break;
  }
  raise_unsupported(cat("ahead-of-time export: ", what, " has element type ",
                        dtype_onnx_name(dtype), ", which the C API does not offer"));
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// ---- running tools -----------------------------------------------------------------------------

void run_tool(const std::string& command, const std::string& what) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) raise(ErrorKind::kIo, cat("cannot run ", what, ": ", command));
  std::string output;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  if (::pclose(pipe) != 0) raise(ErrorKind::kIo, cat(what, " failed (", command, "):\n", output));
}

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// ---- the driver writer -------------------------------------------------------------------------

class DriverWriter : public AotWriter {
 public:
  // Where a value lives in the generated rn_run.
  struct Slot {
    // kOwned: a graph output of data-dependent shape, in the context's memory.
    enum Kind { kInput, kOutput, kOwned, kState, kIntermediate } kind;
    int index;
  };
  // A dim Slice or Pad computes from run-time operands: ctx->rt_dims[i] once its block ran.
  struct RunTimeDim {
    std::string symbol;
    std::string defined_by;  // "Slice 'x' (opset 14), axis 1"
    bool defined = false;    // while writing the blocks: its block's code is written
  };

  std::map<const Value*, Slot> slots;
  std::vector<std::string> dim_names;  // symbol per dim argument d0, d1, ...
  std::vector<const Tensor*> constants;
  std::vector<std::pair<std::string, std::string>> kernels;  // argv entry, object file
  std::vector<const Value*> intermediates;
  std::vector<RunTimeDim> run_time_dims;
  // While writing rn_shape (which has no context): data-dependent dims read as -1.
  bool run_time_dims_unknown = false;
  int scratch_slots = 0;
  std::string body;
  std::string current_block;

  std::string pipeline(const CompiledPipeline& pipeline) override {
    RNNC_CHECK(!pipeline.object_path.empty(), "pipeline ", pipeline.function_name,
               " has no object file (keep_objects was not set)");
    const std::string entry = pipeline.function_name + "_argv";
    for (const auto& kernel : kernels) {
      if (kernel.first == entry) return entry;
    }
    kernels.emplace_back(entry, pipeline.object_path);
    return entry;
  }

  std::string constant(const Tensor& tensor) override {
    size_t index = 0;
    while (index < constants.size() && constants[index] != &tensor) ++index;
    if (index == constants.size()) constants.push_back(&tensor);
    return cat("((const void*)(ctx->weights + rn_tensor_table[", 2 * index, "]))");
  }

  std::string value(const Value* value) override {
    auto it = slots.find(value);
    if (it == slots.end()) {
      if (value->is_constant() && !value->is_graph_input()) return constant(*value->constant());
      RNNC_CHECK(false, "value '", value->name(), "' has no slot in the driver");
    }
    const Slot& slot = it->second;
    switch (slot.kind) {
      case Slot::kInput:
        return cat("((void*)inputs[", slot.index, "])");
      case Slot::kOutput:
        return cat("(outputs[", slot.index, "])");
      case Slot::kOwned:
        return cat("(ctx->owned[", slot.index, "].data)");
      case Slot::kState:
        return cat("(ctx->states[", slot.index, "].data)");
      case Slot::kIntermediate:
        return cat("(ctx->values[", slot.index, "].data)");
    }
    return "NULL";
  }

  std::string dim(const Dim& dim) override {
    if (dim.is_known()) return cat("((int64_t)", dim.value(), ")");
    if (dim.is_unknown()) {
      raise_unsupported("a dim shape inference could not name ('?'): the library could not size it");
    }
    // Dim::to_string is a sum of terms "c*name*name", joined by " + " / " - ": replace each axis
    // name (longest match first, at a term boundary) by its dim argument.
    const std::string text = dim.to_string();
    std::vector<std::string> symbols = dim.symbols();
    std::sort(symbols.begin(), symbols.end(),
              [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
    std::string expression;
    size_t i = 0;
    while (i < text.size()) {
      const bool boundary = i == 0 || std::string("* -+").find(text[i - 1]) != std::string::npos;
      bool matched = false;
      for (const std::string& symbol : symbols) {
        if (boundary && text.compare(i, symbol.size(), symbol) == 0) {
          expression += dim_argument(symbol);
          i += symbol.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
      const char c = text[i];
      if (!std::isdigit(static_cast<unsigned char>(c)) && std::string("* -+").find(c) == std::string::npos) {
        raise_unsupported(cat("the dim '", text, "' has axis names the C driver cannot spell"));
      }
      expression += c;
      ++i;
    }
    return "((int64_t)(" + expression + "))";
  }

  std::vector<std::string> shape(const Value* value) override {
    if (!value->type.shape) {
      raise_unsupported(cat("'", value->name(), "' has an unknown rank"));
    }
    std::vector<std::string> extents;
    for (const Dim& d : *value->type.shape) {
      try {
        extents.push_back(dim(d));
      } catch (const Error& e) {
        raise_unsupported(cat("'", value->name(), "' ", value->type.to_string(), ": ", e.what()));
      }
    }
    return extents;
  }

  std::string scratch(const std::string& bytes) override {
    return cat("rn_scratch(ctx, ", scratch_slots++, ", ", bytes, ")");
  }

  void define_shape(const Value* value, const std::string& shape_array) override {
    if (!value->type.shape) return;
    for (size_t k = 0; k < value->type.shape->size(); ++k) {
      const Dim& d = (*value->type.shape)[k];
      const std::vector<std::string> symbols = d.symbols();
      if (symbols.size() != 1 || d.to_string() != symbols[0]) continue;
      const int index = run_time_dim_index(symbols[0]);
      if (index < 0 || run_time_dims[index].defined) continue;
      code(cat("  ctx->rt_dims[", index, "] = ", shape_array, "[", k, "];\n"));
      run_time_dims[index].defined = true;
    }
    if (depends_on_run_time_dims(value)) code(grow(value));
  }

  std::string fresh(const std::string& stem) override { return cat(stem, "_", next_id_++); }
  void code(const std::string& text) override { body += text; }
  const std::string& block_name() const override { return current_block; }

  int run_time_dim_index(const std::string& symbol) const {
    for (size_t i = 0; i < run_time_dims.size(); ++i) {
      if (run_time_dims[i].symbol == symbol) return static_cast<int>(i);
    }
    return -1;
  }
  bool depends_on_run_time_dims(const Value* value) const {
    if (!value->type.shape) return false;
    for (const Dim& d : *value->type.shape) {
      for (const std::string& symbol : d.symbols()) {
        if (run_time_dim_index(symbol) >= 0) return true;
      }
    }
    return false;
  }
  // Code that sizes a driver-held value's buffer for this run (intermediates and owned outputs).
  std::string grow(const Value* value) {
    const Slot& slot = slots.at(value);
    RNNC_CHECK(slot.kind == Slot::kIntermediate || slot.kind == Slot::kOwned, "value '",
               value->name(), "' is not held by the driver");
    return cat("  if (!rn_grow(&ctx->", slot.kind == Slot::kOwned ? "owned" : "values", "[",
               slot.index, "], ", bytes(value), ")) return rn_out_of_memory(ctx);  /* ",
               value->name(), ": ", value->type.to_string(), " */\n");
  }

  // The dim argument for an axis name (kUnsupported when no input's shape names it).
  std::string dim_argument(const std::string& symbol) const {
    const int run_time = run_time_dim_index(symbol);
    if (run_time >= 0) {
      return run_time_dims_unknown ? "((int64_t)-1)" : cat("ctx->rt_dims[", run_time, "]");
    }
    auto it = std::find(dim_names.begin(), dim_names.end(), symbol);
    if (it == dim_names.end()) {
      raise_unsupported(cat("dim '", symbol, "' is not a dim of any input, so the library's "
                            "callers cannot give it (fix it with --dim ", symbol, "=N)"));
    }
    return cat("d", it - dim_names.begin());
  }

  std::string numel(const Value* value) {
    std::string product = "((int64_t)1)";
    for (const std::string& extent : shape(value)) product += "*" + extent;
    return "(" + product + ")";
  }
  std::string bytes(const Value* value) {
    return cat("(", numel(value), "*", dtype_size(value->type.dtype), ")");
  }

 private:
  int next_id_ = 0;
};

// A tensor the run functions take or return.
struct ApiTensor {
  const Value* value;
  std::string parameter;  // C parameter name
  std::string c_type;
};

// Slice, Pad and Reshape with run-time operands (starts, ends, pads, shape) give extents shape
// inference cannot know ('?'), or that the model names by a symbol no input has. Each becomes a
// named data-dependent dim (the model's name, or rt0, rt1, ...) that the block's plan sets when it
// runs, and shape inference carries the names to the values computed from it, so the driver can
// size every buffer. The blocks are lowered already and read no types at run time.
std::vector<DriverWriter::RunTimeDim> name_data_dependent_dims(const Program& program,
                                                               Graph& graph) {
  std::set<std::string> taken, given;  // every symbol; the symbols the inputs' shapes name
  for (const auto& value : graph.values()) {
    if (!value->type.shape) continue;
    for (const Dim& d : *value->type.shape) {
      for (const std::string& symbol : d.symbols()) {
        taken.insert(symbol);
        if (value->is_graph_input()) given.insert(symbol);
      }
    }
  }
  std::vector<DriverWriter::RunTimeDim> named;
  for (const auto& block : program.blocks()) {
    const std::string kind = block->kind();
    if (kind != "copy Slice" && kind != "copy Pad" && kind != "view Reshape") continue;
    const Node& node = *block->nodes.at(0);
    Value* output = graph.find_value(node.output(0)->name());
    if (!output || !output->type.shape) continue;
    for (size_t k = 0; k < output->type.shape->size(); ++k) {
      Dim& d = (*output->type.shape)[k];
      const std::vector<std::string> symbols = d.symbols();
      const bool declared = symbols.size() == 1 && d.to_string() == symbols[0] &&
                            !given.count(symbols[0]);  // a model's name for the extent
      if (!d.is_unknown() && !declared) continue;
      std::string symbol = declared ? symbols[0] : cat("rt", named.size());
      while (!declared && taken.count(symbol)) symbol += "_";
      taken.insert(symbol);
      d = Dim::symbol(symbol);
      named.push_back({symbol, cat(node.describe(), ", axis ", k)});
    }
  }
  if (!named.empty()) infer_graph(graph);
  return named;
}

std::string shape_comment(const Value* value) {
  return cat(value->name(), ": ", value->type.to_string());
}

}  // namespace

std::string c_identifier(const std::string& name) {
  std::string id;
  for (char c : name) id += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  // Separators that start a name ("/lstm/Y") are dropped; a name's own leading '_' stays.
  if (!name.empty() && name[0] != '_') {
    const size_t first = id.find_first_not_of('_');
    id.erase(0, first == std::string::npos ? id.size() : first);
  }
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "t" + id;
  return id;
}

ExportResult export_model(ModelSource source, const ExportOptions& options) {
  using Clock = std::chrono::steady_clock;
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  const std::string& name = options.name;
  if (name.empty() || c_identifier(name) != name || c_reserved().count(name)) {
    raise_invalid_input(cat("--name '", name, "' is not a C identifier (letters, digits, '_')"));
  }
  if (options.output_dir.empty()) raise_invalid_input("give an output directory (-o DIR)");
  std::error_code fs_error;
  fs::create_directories(options.output_dir, fs_error);
  if (fs_error) {
    raise(ErrorKind::kIo, cat("cannot create '", options.output_dir, "': ", fs_error.message()));
  }
  const std::string out = fs::absolute(options.output_dir).string();
  const std::string prefix = upper(name);

  // 1. Lower, keeping the kernels' object files.
  auto start = Clock::now();
  progress(cat("[1/5] optimizing and lowering (each distinct layer's kernels take ~1 s to "
               "compile on a cold kernel cache)"));
  CompileOptions compile_options = options.compile;
  compile_options.stop_after = Stage::kLower;  // the library runs its blocks in order
  compile_options.program.keep_objects = true;
  Compiled compiled = compile(std::move(source), compile_options);
  std::unique_ptr<Program> program = std::move(compiled.program);
  // The Program is this function's own: naming data-dependent dims edits its value types.
  Graph& graph = *program->model().graph;
  ExportResult result;
  if (compiled.quantization) result.quantization = compiled.quantization->summary;
  const KernelTarget& kernel_target = program->kernel_cache()->kernel_target();
  result.target = cat(kernel_target.name, " [", kernel_target.features.to_string(), "]");
  result.blocks = static_cast<int>(program->blocks().size());
  int compiled_blocks = 0;
  for (const auto& block : program->blocks()) compiled_blocks += block->from_cache ? 0 : 1;
  progress(cat("      ", program->blocks().size(), " execution blocks, ", compiled_blocks,
               " compiled now, in ",
               std::chrono::duration<double>(Clock::now() - start).count(), " s"));

  // 2. Where every value lives; the dim arguments.
  DriverWriter writer;
  writer.run_time_dims = name_data_dependent_dims(*program, graph);
  std::map<std::string, std::string> state_input_to_output;
  std::set<std::string> state_outputs;
  for (const auto& [output, input] : compiled.state) {
    state_input_to_output[input] = output;
    state_outputs.insert(output);
  }
  std::vector<ApiTensor> api_inputs, api_outputs;
  int owned_outputs = 0;
  std::vector<const Value*> state_inputs;
  std::vector<std::pair<const Value*, const Value*>> state_pairs;  // output -> input buffer
  ParameterNames parameters;
  auto add_symbols = [&](const Value* value) {
    if (!value->type.shape) return;
    for (const Dim& d : *value->type.shape) {
      for (const std::string& symbol : d.symbols()) {
        if (std::find(writer.dim_names.begin(), writer.dim_names.end(), symbol) ==
            writer.dim_names.end()) {
          writer.dim_names.push_back(symbol);
        }
      }
    }
  };
  for (const Value* input : graph.inputs()) {
    if (input->is_constant() && !input->is_graph_input()) continue;
    if (state_input_to_output.count(input->name())) {
      writer.slots[input] = {DriverWriter::Slot::kState, static_cast<int>(state_inputs.size())};
      state_inputs.push_back(input);
      continue;
    }
    writer.slots[input] = {DriverWriter::Slot::kInput, static_cast<int>(api_inputs.size())};
    api_inputs.push_back({input, "", c_type(input->type.dtype, cat("input '", input->name(), "'"))});
    add_symbols(input);
  }
  for (const Value* input : state_inputs) add_symbols(input);
  std::vector<std::string> dim_parameters;
  for (const std::string& symbol : writer.dim_names) dim_parameters.push_back(parameters.add(symbol));
  for (ApiTensor& input : api_inputs) input.parameter = parameters.add(input.value->name());

  std::set<const Value*> written_by_blocks;
  for (const auto& block : program->blocks()) {
    for (const Value* value : block->outputs) written_by_blocks.insert(value);
  }
  for (const Value* output : graph.outputs()) {
    const bool state = state_outputs.count(output->name()) != 0;
    const bool wanted = std::find(compiled.model_outputs.begin(), compiled.model_outputs.end(),
                                  output->name()) != compiled.model_outputs.end();
    if (state && !wanted) continue;
    if (writer.slots.count(output)) {
      raise_unsupported(cat("ahead-of-time export: graph output '", output->name(),
                            "' is also an input or listed twice"));
    }
    writer.slots[output] = {DriverWriter::Slot::kOutput, static_cast<int>(api_outputs.size())};
    if (writer.depends_on_run_time_dims(output)) {
      writer.slots[output] = {DriverWriter::Slot::kOwned, owned_outputs++};
    }
    api_outputs.push_back({output, parameters.add(output->name()),
                           c_type(output->type.dtype, cat("output '", output->name(), "'"))});
  }
  for (const auto& [output_name, input_name] : compiled.state) {
    const Value* output = graph.find_value(output_name);
    const Value* input = graph.find_value(input_name);
    if (!output || !input || !writer.slots.count(input)) continue;  // optimized away
    if (writer.depends_on_run_time_dims(output)) {
      raise_unsupported(cat("ahead-of-time export: state '", output->name(), "' ",
                            output->type.to_string(),
                            " has a data-dependent shape; carried state must be sized by dims"));
    }
    state_pairs.emplace_back(output, input);
  }
  for (const Value* value : written_by_blocks) {
    if (writer.slots.count(value)) continue;
    writer.slots[value] = {DriverWriter::Slot::kIntermediate,
                           static_cast<int>(writer.intermediates.size())};
    writer.intermediates.push_back(value);
  }
  // Deterministic intermediate order (the map above iterates by address).
  std::sort(writer.intermediates.begin(), writer.intermediates.end(),
            [](const Value* a, const Value* b) { return a->name() < b->name(); });
  for (size_t i = 0; i < writer.intermediates.size(); ++i) {
    writer.slots[writer.intermediates[i]].index = static_cast<int>(i);
  }

  // 3. The blocks' code, in order.
  progress("[2/5] writing the driver");
  for (size_t i = 0; i < program->blocks().size(); ++i) {
    const ExecutionBlock& block = *program->blocks()[i];
    std::string nodes;
    for (const Node* node : block.nodes) nodes += cat(nodes.empty() ? "" : ", ", node->describe());
    writer.current_block = cat("block ", i, " (", block.kind(), ": ", nodes, ")");
    writer.code(cat("  /* ", writer.current_block, " */\n"));
    try {
      // Buffers whose data-dependent dims earlier blocks set are sized here; a block that sets
      // its output's own sizes it in define_shape.
      for (const Value* output : block.outputs) {
        if (!output || !writer.depends_on_run_time_dims(output)) continue;
        bool known = true;
        for (const Dim& d : *output->type.shape) {
          for (const std::string& symbol : d.symbols()) {
            const int index = writer.run_time_dim_index(symbol);
            if (index >= 0 && !writer.run_time_dims[index].defined) known = false;
          }
        }
        if (known) writer.code(writer.grow(output));
      }
      AotBlockIO io{block.inputs, block.outputs};
      block.write_aot(writer, io);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kUnsupported) throw;
      const std::string message = e.what();
      if (message.rfind("ahead-of-time export", 0) == 0) throw;
      raise_unsupported(cat("ahead-of-time export: ", writer.current_block, ": ", message));
    }
  }

  for (const DriverWriter::RunTimeDim& d : writer.run_time_dims) {
    if (!d.defined) {
      raise_unsupported(cat("ahead-of-time export: ", d.defined_by,
                            ": an extent shape inference could not name ('?'), and the block does "
                            "not compute it at run time"));
    }
  }

  // Graph outputs that are constants (a Shape or Size of static dims, folded) are copied from the
  // weight file at the end of a run: their tensors go into the table now.
  for (const ApiTensor& output : api_outputs) {
    const Value* value = output.value;
    if (!written_by_blocks.count(value) && value->is_constant() && !value->is_graph_input()) {
      writer.constant(*value->constant());
    }
  }

  // Sizes and the layout id.
  const std::vector<WeightTableEntry> table = weight_table(writer.constants);
  std::string layout_text = cat(name, "\n", result.target, "\n");
  for (const WeightTableEntry& entry : table) layout_text += cat(entry.offset, ":", entry.size, " ");
  for (const auto& kernel : writer.kernels) layout_text += kernel.first + " ";
  const uint64_t layout_id = std::stoull(hash_hex(layout_text), nullptr, 16);
  result.kernels = static_cast<int>(writer.kernels.size());

  // 4. The header.
  const std::string header_path = cat(out, "/", name, ".h");
  std::ostringstream h;
  std::string typed_parameters;
  for (const std::string& d : dim_parameters) typed_parameters += cat(", int64_t ", d);
  for (const ApiTensor& t : api_inputs) typed_parameters += cat(", const ", t.c_type, "* ", t.parameter);
  auto owned = [&](const ApiTensor& t) {
    return writer.slots[t.value].kind == DriverWriter::Slot::kOwned;
  };
  for (const ApiTensor& t : api_outputs) {
    typed_parameters += owned(t) ? cat(", const ", t.c_type, "** ", t.parameter)
                                 : cat(", ", t.c_type, "* ", t.parameter);
  }
  h << "/* " << name << ".h: generated by `rnnc compile` from " << options.source
    << ". Do not edit.\n"
    << " *\n * Link with lib" << name << ".a -lm -lpthread -ldl; the weights are in " << name
    << ".weights (docs/aot.md).\n"
    << " * Halide target: " << result.target << "\n *\n"
    << " * Dynamic dims (the int64_t arguments, in this order):";
  for (size_t d = 0; d < writer.dim_names.size(); ++d) {
    h << (d ? ", " : " ") << dim_parameters[d] << " (" << writer.dim_names[d] << ")";
  }
  if (writer.dim_names.empty()) h << " none";
  h << "\n * Inputs (row-major, read in place):\n";
  for (const ApiTensor& t : api_inputs) h << " *   " << t.parameter << " = " << shape_comment(t.value) << "\n";
  if (owned_outputs < static_cast<int>(api_outputs.size())) {
    h << " * Outputs (row-major, caller-allocated, fully written):\n";
  }
  for (const ApiTensor& t : api_outputs) {
    if (!owned(t)) h << " *   " << t.parameter << " = " << shape_comment(t.value) << "\n";
  }
  if (owned_outputs > 0) {
    h << " * Outputs of data-dependent shape (pass the address of a pointer; it is set to memory\n"
      << " * the context owns, valid until the next call on it; " << name
      << "_output_shape gives the shape):\n";
    for (const ApiTensor& t : api_outputs) {
      if (owned(t)) h << " *   " << t.parameter << " = " << shape_comment(t.value) << "\n";
    }
    h << " * Data-dependent dims, set by the run from its operands' values:\n";
    for (const DriverWriter::RunTimeDim& d : writer.run_time_dims) {
      h << " *   " << d.symbol << ": " << d.defined_by << "\n";
    }
  }
  if (!state_pairs.empty()) {
    h << " * Carried recurrent state (in the context, between " << name << "_step calls):\n";
    for (const auto& [output, input] : state_pairs) {
      h << " *   " << input->name() << " <- " << output->name() << ": " << input->type.to_string()
        << "\n";
    }
  }
  h << " */\n#ifndef " << prefix << "_H_\n#define " << prefix << "_H_\n\n"
    << "#include <stddef.h>\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
    << kAotCommonHeader << "\n";
  h << "#define " << prefix << "_NUM_DIMS " << writer.dim_names.size() << "\n"
    << "#define " << prefix << "_NUM_INPUTS " << api_inputs.size() << "\n"
    << "#define " << prefix << "_NUM_OUTPUTS " << api_outputs.size() << "\n"
    << "#define " << prefix << "_HAS_STATE " << (state_pairs.empty() ? 0 : 1) << "\n\n"
    << "/* One stream's context: the mapped weights, scratch and carried state. Use it from one\n"
    << " * thread at a time; contexts are independent (each maps the weights). */\n"
    << "typedef struct " << name << "_context " << name << "_context;\n\n"
    << "/* Maps the weight file read-only and validates it (size, magic, version, checksum, table);\n"
    << " * on failure *context is NULL and the status says why. */\n"
    << "int " << name << "_create_from_file(const char* weights_path, " << name
    << "_context** context);\n"
    << "/* Creating a context first checks that this CPU has every instruction-set feature the\n"
    << " * kernels were compiled for (RNNC_AOT_ERROR_CPU otherwise); this names the first one it\n"
    << " * lacks, or returns NULL. */\n"
    << "const char* " << name << "_missing_cpu_feature(void);\n"
    << "/* The same over a caller's buffer, which must outlive the context (an unaligned buffer is\n"
    << " * copied to 64-byte aligned memory). */\n"
    << "int " << name << "_create_from_buffer(const void* data, size_t size, " << name
    << "_context** context);\n"
    << "void " << name << "_destroy(" << name << "_context* context);\n"
    << "/* The last failed call's message (valid until the next call on the context). */\n"
    << "const char* " << name << "_last_error(const " << name << "_context* context);\n"
    << "const char* " << name << "_status_text(int status);\n"
    << "/* The shape of output `output` (header order) in the last successful run; returns the\n"
    << " * rank, or -1 for a bad index or before a successful run. */\n"
    << "int " << name << "_output_shape(const " << name
    << "_context* context, int output, int64_t* shape);\n\n"
    << "/* One whole run from the zero state (" << name << "_reset, then " << name
    << "_step). */\n"
    << "int " << name << "_run(" << name << "_context* context" << typed_parameters << ");\n"
    << "/* A streaming step: continues from the state the previous call left (zeros after create\n"
    << " * or reset); the dims the state depends on (batch) must not change between steps. */\n"
    << "int " << name << "_step(" << name << "_context* context" << typed_parameters << ");\n"
    << "void " << name << "_reset(" << name << "_context* context);\n\n"
    << "/* The same with arrays: dims in the order above, inputs and outputs in header order. */\n"
    << "int " << name << "_run_arrays(" << name
    << "_context* context, const int64_t* dims, const void* const* inputs, void* const* outputs);\n"
    << "int " << name << "_step_arrays(" << name
    << "_context* context, const int64_t* dims, const void* const* inputs, void* const* outputs);\n"
    << "const rnnc_aot_model* " << name << "_model(void);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n#endif /* " << prefix << "_H_ */\n";

  // 5. The driver.
  std::ostringstream c;
  c << "/* " << name << "_driver.c: generated by `rnnc compile` from " << options.source
    << "; compiled into lib" << name << ".a. Do not edit. */\n"
    << "#include <HalideRuntime.h>\n#include <stdint.h>\n#include <string.h>\n\n#include \"" << name
    << ".h\"\n\n"
    << "#define rn_ctx " << name << "_context\n"
    << "#define RN_CORE_API static\n"
    << "#define RN_MODEL_NAME " << c_string_literal(name) << "\n"
    << "#define RN_NUM_DIMS " << writer.dim_names.size() << "\n"
    << "#define RN_NUM_VALUES " << writer.intermediates.size() << "\n"
    << "#define RN_NUM_SCRATCH " << writer.scratch_slots << "\n"
    << "#define RN_NUM_STATES " << state_inputs.size() << "\n"
    << "#define RN_NUM_OWNED " << owned_outputs << "\n"
    << "#define RN_NUM_RT_DIMS " << writer.run_time_dims.size() << "\n"
    << "#define RN_NUM_TENSORS " << writer.constants.size() << "u\n"
    << "#define RN_WEIGHTS_VERSION " << kWeightFileVersion << "\n"
    << "#define RN_LAYOUT_ID 0x" << hash_hex(layout_text) << "ull\n"
    << "/* The weight file's table: {offset, bytes} per tensor. */\n"
    << "static const uint64_t rn_tensor_table[] = {";
  for (const WeightTableEntry& entry : table) c << entry.offset << "ull, " << entry.size << "ull, ";
  c << "0};\n"
    << "/* The CPU features the kernels use (target " << kernel_target.name
    << "): {name, CPUID leaf, sub-leaf, register (0 eax .. 3 edx), bit, XCR0 bits}. */\n"
    << "#define RN_CPU_FEATURES";
  for (int i = 0; i < static_cast<int>(CpuFeature::kCount); ++i) {
    const auto feature = static_cast<CpuFeature>(i);
    if (!kernel_target.features.has(feature)) continue;
    const CpuidBit& where = cpuid_bit(feature);
    c << " \\\n  {\"" << cpu_feature_name(feature) << "\", 0x" << std::hex << where.leaf
      << std::dec << "u, " << where.subleaf << "u, " << where.reg << ", " << where.bit << ", 0x"
      << std::hex << where.xcr0 << std::dec << "ull},";
  }
  c << "\n\n" << kDriverSupport << "\n/* ---- the kernels ---- */\n";
  for (const auto& kernel : writer.kernels) c << "extern int " << kernel.first << "(void** args);\n";

  c << "\n/* ---- one run: the blocks in order ---- */\n"
    << "static int rn_run(rn_ctx* ctx, const int64_t* dims, const void* const* inputs,\n"
    << "                  void* const* outputs, int carry) {\n"
    << "  if (!ctx || (RN_NUM_DIMS && !dims) || (" << api_inputs.size() << " && !inputs) || ("
    << api_outputs.size() << " && !outputs)) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, "
    << "\"NULL context, dims, inputs or outputs\");\n";
  for (size_t d = 0; d < writer.dim_names.size(); ++d) {
    c << "  const int64_t d" << d << " = dims[" << d << "];\n"
      << "  if (d" << d << " < 0 || d" << d << " > INT32_MAX) return rn_fail(ctx, "
      << "RNNC_AOT_ERROR_INVALID_ARGUMENT, \"dim '%s' = %lld is out of range\", "
      << c_string_literal(writer.dim_names[d]) << ", (long long)d" << d << ");\n";
  }
  for (size_t i = 0; i < api_inputs.size(); ++i) {
    c << "  if (!inputs[" << i << "] && " << writer.numel(api_inputs[i].value)
      << " > 0) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"input '%s' is NULL\", "
      << c_string_literal(api_inputs[i].value->name()) << ");\n";
  }
  for (size_t i = 0; i < api_outputs.size(); ++i) {
    const bool owned = writer.slots[api_outputs[i].value].kind == DriverWriter::Slot::kOwned;
    c << "  if (!outputs[" << i << "] && " << (owned ? "1" : writer.numel(api_outputs[i].value))
      << " > 0) return rn_fail(ctx, RNNC_AOT_ERROR_INVALID_ARGUMENT, \"output '%s' is NULL\", "
      << c_string_literal(api_outputs[i].value->name()) << ");\n";
  }
  // Carried state: zeros unless a step continues a stream at the same dims.
  if (!state_inputs.empty()) {
    // Only the dims the state's shapes use must stay (batch); the chunk length may change.
    std::set<std::string> state_symbols;
    for (const Value* input : state_inputs) {
      if (!input->type.shape) continue;
      for (const Dim& d : *input->type.shape) {
        for (const std::string& symbol : d.symbols()) state_symbols.insert(symbol);
      }
    }
    c << "  const int fresh = !carry || !ctx->state_valid;\n  if (!fresh) {\n";
    for (size_t d = 0; d < writer.dim_names.size(); ++d) {
      if (!state_symbols.count(writer.dim_names[d])) continue;
      c << "    if (ctx->state_dims[" << d << "] != d" << d << ") return rn_fail(ctx, "
        << "RNNC_AOT_ERROR_INVALID_ARGUMENT, \"dim '%s' changed from %lld to %lld between "
        << "streaming steps; call " << name << "_reset first\", "
        << c_string_literal(writer.dim_names[d]) << ", (long long)ctx->state_dims[" << d
        << "], (long long)d" << d << ");\n";
    }
    c << "  }\n";
    for (size_t s = 0; s < state_inputs.size(); ++s) {
      c << "  if (!rn_grow(&ctx->states[" << s << "], " << writer.bytes(state_inputs[s])
        << ")) return rn_out_of_memory(ctx);\n"
        << "  if (fresh) memset(ctx->states[" << s << "].data, 0, (size_t)"
        << writer.bytes(state_inputs[s]) << ");\n";
    }
  } else {
    c << "  (void)carry;\n";
  }
  for (size_t v = 0; v < writer.intermediates.size(); ++v) {
    if (writer.depends_on_run_time_dims(writer.intermediates[v])) continue;  // sized by its block
    c << "  if (!rn_grow(&ctx->values[" << v << "], " << writer.bytes(writer.intermediates[v])
      << ")) return rn_out_of_memory(ctx);  /* " << shape_comment(writer.intermediates[v])
      << " */\n";
  }
  c << "  ctx->have_run = 0;\n";
  c << writer.body;
  // Graph outputs no block writes: copies of inputs or constants.
  for (size_t i = 0; i < api_outputs.size(); ++i) {
    const Value* value = api_outputs[i].value;
    if (written_by_blocks.count(value)) continue;
    std::string source;
    if (value->is_constant() && !value->is_graph_input()) {
      source = writer.constant(*value->constant());
    } else {
      raise_unsupported(cat("ahead-of-time export: graph output '", value->name(),
                            "' is computed by no block"));
    }
    c << "  memcpy(outputs[" << i << "], " << source << ", (size_t)" << writer.bytes(value) << ");\n";
  }
  if (!state_inputs.empty()) {
    for (const auto& [output, input] : state_pairs) {
      c << "  memcpy(ctx->states[" << writer.slots[input].index << "].data, "
        << writer.value(output) << ", (size_t)" << writer.bytes(input) << ");\n";
    }
    c << "  ctx->state_valid = 1;\n";
    for (size_t d = 0; d < writer.dim_names.size(); ++d) {
      c << "  ctx->state_dims[" << d << "] = d" << d << ";\n";
    }
  }
  for (size_t i = 0; i < api_outputs.size(); ++i) {
    const DriverWriter::Slot& slot = writer.slots[api_outputs[i].value];
    if (slot.kind != DriverWriter::Slot::kOwned) continue;
    c << "  *(const void**)outputs[" << i << "] = ctx->owned[" << slot.index << "].data;\n";
  }
  for (size_t d = 0; d < writer.dim_names.size(); ++d) {
    c << "  ctx->run_dims[" << d << "] = d" << d << ";\n";
  }
  c << "  ctx->have_run = 1;\n  return RNNC_AOT_OK;\n}\n\n";
  RNNC_CHECK(writer.constants.size() == table.size(),
             "a constant was added after the weight table was laid out");

  // The API.
  const std::string ctx_type = name + "_context";
  c << "/* ---- the API (" << name << ".h) ---- */\n"
    << "int " << name << "_create_from_file(const char* path, " << ctx_type << "** context) {\n"
    << "  if (!context || !path) return RNNC_AOT_ERROR_INVALID_ARGUMENT;\n"
    << "  return rn_create_from_file(path, context);\n}\n"
    << "int " << name << "_create_from_buffer(const void* data, size_t size, " << ctx_type
    << "** context) {\n  if (!context) return RNNC_AOT_ERROR_INVALID_ARGUMENT;\n"
    << "  return rn_create_from_buffer(data, size, context);\n}\n"
    << "void " << name << "_destroy(" << ctx_type << "* context) { rn_destroy(context); }\n"
    << "const char* " << name << "_last_error(const " << ctx_type
    << "* context) { return context ? context->error : \"NULL context\"; }\n"
    << "const char* " << name << "_status_text(int status) { return rn_status_text(status); }\n"
    << "const char* " << name << "_missing_cpu_feature(void) { return rn_missing_cpu_feature(); }\n"
    << "void " << name << "_reset(" << ctx_type << "* context) { if (context) context->state_valid = 0; }\n"
    << "int " << name << "_run_arrays(" << ctx_type
    << "* context, const int64_t* dims, const void* const* inputs, void* const* outputs) {\n"
    << "  return rn_run(context, dims, inputs, outputs, 0);\n}\n"
    << "int " << name << "_step_arrays(" << ctx_type
    << "* context, const int64_t* dims, const void* const* inputs, void* const* outputs) {\n"
    << "  return rn_run(context, dims, inputs, outputs, 1);\n}\n";
  for (const char* kind : {"run", "step"}) {
    c << "int " << name << "_" << kind << "(" << ctx_type << "* context" << typed_parameters
      << ") {\n";
    std::string dims, ins, outs;
    for (const std::string& d : dim_parameters) dims += d + ", ";
    for (const ApiTensor& t : api_inputs) ins += t.parameter + ", ";
    for (const ApiTensor& t : api_outputs) outs += t.parameter + ", ";
    c << "  const int64_t dims[] = {" << dims << "0};\n"
      << "  const void* const inputs[] = {" << ins << "NULL};\n"
      << "  void* const outputs[] = {" << outs << "NULL};\n"
      << "  return rn_run(context, dims, inputs, outputs, " << (std::string(kind) == "step")
      << ");\n}\n";
  }
  // The descriptor.
  c << "\nstatic const char* const rn_dim_names[] = {";
  for (const std::string& d : writer.dim_names) c << c_string_literal(d) << ", ";
  c << "NULL};\n";
  for (const char* list : {"inputs", "outputs"}) {
    const std::vector<ApiTensor>& tensors = std::string(list) == "inputs" ? api_inputs : api_outputs;
    c << "static const rnnc_aot_tensor_info rn_" << list << "[] = {";
    for (const ApiTensor& t : tensors) {
      c << "{" << c_string_literal(t.value->name()) << ", " << static_cast<int>(t.value->type.dtype)
        << ", " << t.value->type.rank() << ", " << c_string_literal(t.value->type.to_string())
        << ", " << (writer.slots[t.value].kind == DriverWriter::Slot::kOwned ? 1 : 0) << "}, ";
    }
    c << "{NULL, 0, 0, NULL, 0}};\n";
  }
  writer.run_time_dims_unknown = true;
  c << "static int rn_shape(int tensor, const int64_t* dims, int64_t* shape) {\n";
  for (size_t d = 0; d < writer.dim_names.size(); ++d) {
    c << "  const int64_t d" << d << " = dims[" << d << "];\n";
  }
  c << "  switch (tensor) {\n";
  int tensor_index = 0;
  for (const std::vector<ApiTensor>* tensors : {&api_inputs, &api_outputs}) {
    for (const ApiTensor& t : *tensors) {
      const std::vector<std::string> extents = writer.shape(t.value);
      c << "    case " << tensor_index++ << ":\n";
      for (size_t k = 0; k < extents.size(); ++k) c << "      shape[" << k << "] = " << extents[k] << ";\n";
      c << "      return " << extents.size() << ";\n";
    }
  }
  writer.run_time_dims_unknown = false;
  c << "    default:\n      (void)shape;\n      return -1;\n  }\n}\n";
  // The last run's output shapes, data-dependent dims included.
  c << "int " << name << "_output_shape(const " << ctx_type
    << "* context, int output, int64_t* shape) {\n"
    << "  const rn_ctx* ctx = context;\n  if (!ctx || !shape || !ctx->have_run) return -1;\n";
  for (size_t d = 0; d < writer.dim_names.size(); ++d) {
    c << "  const int64_t d" << d << " = ctx->run_dims[" << d << "];\n  (void)d" << d << ";\n";
  }
  c << "  switch (output) {\n";
  for (size_t i = 0; i < api_outputs.size(); ++i) {
    const std::vector<std::string> extents = writer.shape(api_outputs[i].value);
    c << "    case " << i << ":\n";
    for (size_t k = 0; k < extents.size(); ++k) {
      c << "      shape[" << k << "] = " << extents[k] << ";\n";
    }
    c << "      return " << extents.size() << ";\n";
  }
  c << "    default:\n      return -1;\n  }\n}\n"
    << "static int rn_model_output_shape(const void* context, int output, int64_t* shape) {\n"
    << "  return " << name << "_output_shape((const rn_ctx*)context, output, shape);\n}\n"
    << "static int rn_model_create_from_file(const char* path, void** context) {\n"
    << "  return " << name << "_create_from_file(path, (" << ctx_type << "**)context);\n}\n"
    << "static int rn_model_create_from_buffer(const void* data, size_t size, void** context) {\n"
    << "  return " << name << "_create_from_buffer(data, size, (" << ctx_type << "**)context);\n}\n"
    << "static void rn_model_destroy(void* context) { rn_destroy((rn_ctx*)context); }\n"
    << "static const char* rn_model_last_error(const void* context) { return " << name
    << "_last_error((const rn_ctx*)context); }\n"
    << "static int rn_model_run(void* context, const int64_t* dims, const void* const* inputs, "
       "void* const* outputs) {\n  return rn_run((rn_ctx*)context, dims, inputs, outputs, 0);\n}\n"
    << "static int rn_model_step(void* context, const int64_t* dims, const void* const* inputs, "
       "void* const* outputs) {\n  return rn_run((rn_ctx*)context, dims, inputs, outputs, 1);\n}\n"
    << "static void rn_model_reset(void* context) { " << name << "_reset((rn_ctx*)context); }\n"
    << "static const rnnc_aot_model rn_model = {" << c_string_literal(name) << ", "
    << writer.dim_names.size() << ", rn_dim_names, " << api_inputs.size() << ", rn_inputs, "
    << api_outputs.size() << ", rn_outputs, " << (state_pairs.empty() ? 0 : 1)
    << ", rn_shape, rn_model_create_from_file, rn_model_create_from_buffer, rn_model_destroy, "
       "rn_model_last_error, rn_status_text, rn_model_run, rn_model_step, rn_model_reset, "
       "rn_model_output_shape};\n"
    << "const rnnc_aot_model* " << name << "_model(void) { return &rn_model; }\n";

  {
    std::ofstream(header_path) << h.str();
    std::ofstream(cat(out, "/", name, "_driver.c")) << c.str();
  }
  result.files.push_back(header_path);
  result.files.push_back(cat(out, "/", name, "_driver.c"));

  // 6. Weights.
  const std::string weights_path = cat(out, "/", name, ".weights");
  write_weight_file(weights_path, writer.constants, layout_id);
  result.weight_bytes = fs::file_size(weights_path);
  result.files.push_back(weights_path);
  progress(cat("[3/5] ", writer.constants.size(), " weight tensors, ", result.weight_bytes,
               " bytes -> ", weights_path));

  // 7. The Halide runtime object for the target, cached beside the kernels.
  progress("[4/5] Halide runtime");
  const KernelTarget& target = program->kernel_cache()->kernel_target();
  const std::string runtime_object = cat(program->kernel_cache()->directory(), "/aot_runtime_",
                                         hash_hex(target.key() + "\nrnnc aot runtime 2"), ".o");
  if (!fs::exists(runtime_object)) {
    std::random_device random;
    const std::string temporary = cat(runtime_object, ".tmp-", ::getpid(), "-", random());
    compile_runtime_object(temporary, target);
    fs::rename(temporary, runtime_object);
  }

  // 8. Compile the driver and archive everything.
  progress(cat("[5/5] compiling the driver and archiving lib", name, ".a (", writer.kernels.size(),
               " kernels)"));
  const std::string driver_object = cat(out, "/", name, "_driver.o");
  run_tool(cat(RNNC_AOT_CC, " -std=gnu11 -O2 -fPIC -Wall -Wno-unused-function -I",
               quoted(RNNC_HALIDE_INCLUDE_DIR), " -I", quoted(out), " -c ",
               quoted(cat(out, "/", name, "_driver.c")), " -o ", quoted(driver_object)),
           "the C compiler");
  const std::string archive = cat(out, "/lib", name, ".a");
  const std::string temporary_archive = archive + ".tmp";
  fs::remove(temporary_archive, fs_error);
  std::string members = quoted(driver_object) + " " + quoted(runtime_object);
  for (const auto& kernel : writer.kernels) members += " " + quoted(kernel.second);
  run_tool(cat(RNNC_AOT_AR, " rcs ", quoted(temporary_archive), " ", members), "ar");
  fs::rename(temporary_archive, archive);
  fs::remove(driver_object, fs_error);
  result.files.push_back(archive);

  // 9. The README.
  std::string example_args;
  for (const std::string& d : dim_parameters) example_args += ", " + d;
  for (const ApiTensor& t : api_inputs) example_args += ", " + t.parameter;
  for (const ApiTensor& t : api_outputs) example_args += ", " + t.parameter;
  std::ostringstream readme;
  readme << "# " << name << ": " << options.source << " compiled ahead of time by rnnc\n\n"
         << "- `" << name << ".h`: the C API (shapes of every input and output in its comment)\n"
         << "- `lib" << name << ".a`: the driver, " << writer.kernels.size()
         << " Halide kernels and the Halide runtime (target " << result.target << ")\n"
         << "- `" << name << ".weights`: " << writer.constants.size() << " tensors, "
         << result.weight_bytes << " bytes (mapped at create, checked first)\n"
         << "- `" << name << "_driver.c`: the generated driver source, for reading\n\n"
         << "```c\n#include \"" << name << ".h\"\n\n"
         << name << "_context* ctx;\n"
         << "int status = " << name << "_create_from_file(\"" << name << ".weights\", &ctx);\n"
         << "if (status) { fprintf(stderr, \"%s\\n\", " << name << "_status_text(status)); return 1; }\n"
         << "/* buffers shaped as " << name << ".h says, e.g. dims from your input */\n"
         << "status = " << name << "_run(ctx" << example_args << ");    /* whole sequence */\n"
         << "status = " << name << "_step(ctx" << example_args << ");   /* next chunk of a stream */\n"
         << "if (status) fprintf(stderr, \"%s\\n\", " << name << "_last_error(ctx));\n"
         << name << "_destroy(ctx);\n```\n\n"
         << "```sh\ncc -O2 app.c -I. lib" << name << ".a -lm -lpthread -ldl -o app\n```\n\n"
         << "The library needs only libc, libm, libpthread and libdl. Halide's runtime runs the\n"
         << "recurrent input projection's parallel loop on its own thread pool (HL_NUM_THREADS\n"
         << "sets its size). See docs/aot.md in rnnc for the weight file format.\n";
  std::ofstream(cat(out, "/README.md")) << readme.str();
  result.files.push_back(cat(out, "/README.md"));
  result.blocks_compiled = compiled_blocks;
  return result;
}

}  // namespace rnnc::aot
