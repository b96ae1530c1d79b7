#include "runtime/shape_specializer.h"

#include <algorithm>

#include "ir/error.h"
#include "compiler/compile.h"
#include "ir/onnx_import.h"
#include "lowering/halide_cache.h"
#include "runtime/halide_tbb.h"

namespace rnnc {

namespace {

// An If, Shape or Size node computes on shapes; an output with a dim shape inference could not
// follow (a strided Conv's length over a symbolic input length: not a polynomial) leaves the
// kernels after it generic over that dim. Binding the dims folds the first and fixes the second.
bool is_shape_dependent(const Node& node) {
  const std::string& op = node.op_type();
  if (node.domain().empty() && (op == "If" || op == "Shape" || op == "Size")) return true;
  for (const Value* out : node.outputs()) {
    if (!out || !out->type.is_tensor() || !out->type.shape) continue;
    for (const Dim& dim : *out->type.shape) {
      if (dim.is_unknown()) return true;
    }
  }
  return false;
}

// Nodes at every depth, and whether one of them is shape-dependent.
void scan(const Graph& graph, size_t& nodes, bool& shape_dependent) {
  for (const auto& node : graph.nodes()) {
    ++nodes;
    shape_dependent = shape_dependent || is_shape_dependent(*node);
    for (const Graph* sub : node->subgraphs()) scan(*sub, nodes, shape_dependent);
  }
}

std::vector<std::string> value_names(const std::vector<Value*>& values) {
  std::vector<std::string> names;
  for (const Value* value : values) names.push_back(value->name());
  return names;
}

}  // namespace

bool ShapeSpecializer::worth_keeping(const Model& model) {
  size_t nodes = 0;
  bool shape_dependent = false;
  scan(*model.graph, nodes, shape_dependent);
  size_t weight_bytes = 0;
  for (const Value* value : model.graph->initializers()) weight_bytes += value->constant()->nbytes();
  return shape_dependent && weight_bytes <= kMaxWeightBytes;
}

std::unique_ptr<ShapeSpecializer> ShapeSpecializer::create(std::string model_bytes,
                                                           const Program& generic,
                                                           std::vector<std::string> symbols,
                                                           std::vector<std::string> scalars,
                                                           Settings settings) {
  if ((symbols.empty() && scalars.empty()) || model_bytes.empty()) return nullptr;
  size_t nodes = 0;
  bool shape_dependent = false;
  scan(*generic.model().graph, nodes, shape_dependent);
  if (!shape_dependent) return nullptr;
  return std::unique_ptr<ShapeSpecializer>(new ShapeSpecializer(
      std::move(model_bytes), generic, std::move(symbols), std::move(scalars), std::move(settings)));
}

ShapeSpecializer::ShapeSpecializer(std::string model_bytes, const Program& generic,
                                   std::vector<std::string> symbols,
                                   std::vector<std::string> scalars, Settings settings)
    : model_bytes_(std::move(model_bytes)),
      generic_(generic),
      symbols_(std::move(symbols)),
      scalars_(std::move(scalars)),
      settings_(std::move(settings)) {}

ShapeSpecializer::~ShapeSpecializer() { wait(); }

void ShapeSpecializer::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  compiled_.wait(lock, [this] { return compiling_ == 0; });
}

const ShapeSpecializer::Specialized* ShapeSpecializer::specialized_for(
    const std::vector<int64_t>& key) {
  for (size_t s = 0; s < symbols_.size(); ++s) {
    if (key[s] < 0) return nullptr;  // a dim no input decides: nothing to fix it to
  }
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& known : entries_) {
      if (known->dims != key) continue;
      // Compiling in another session's run: this run takes the generic program.
      if (!known->ready.load(std::memory_order_acquire) || !known->specialized.executor) {
        return nullptr;
      }
      return &known->specialized;
    }
    if (entries_.size() >= settings_.max_shapes) return nullptr;
    entry = std::make_shared<Entry>();
    entry->dims = key;
    entries_.push_back(entry);
    ++compiling_;
  }
  // The first run of a shape compiles it, outside the lock: runs of other shapes go on.
  compile(*entry);
  entry->ready.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    --compiling_;
  }
  compiled_.notify_all();
  return entry->specialized.executor ? &entry->specialized : nullptr;
}

void ShapeSpecializer::compile(Entry& entry) const {
  try {
    // The compiler's pipeline from the model's optimized (and quantized) bytes, with this key's
    // dims and scalar inputs fixed; through lowering: the executor's plan is the generic one's.
    CompileOptions options;
    options.stop_after = Stage::kLower;
    options.program = settings_.program;
    options.specialization = [&](const Graph& graph) { return specialization(graph, entry.dims); };
    std::unique_ptr<Program> program =
        rnnc::compile(ModelSource::bytes(model_bytes_.data(), model_bytes_.size()), options)
            .program;
    size_t generic_nodes = 0, special_nodes = 0;
    bool ignored = false;
    scan(*generic_.model().graph, generic_nodes, ignored);
    scan(*program->model().graph, special_nodes, ignored);
    const Graph& graph = *program->model().graph;
    const Graph& generic = *generic_.model().graph;
    // Every generic input is an input here too, but the scalars compiled in.
    const std::vector<std::string> inputs = value_names(graph.inputs());
    std::vector<int> input_map;
    size_t mapped = 0;
    for (const std::string& name : value_names(generic.inputs())) {
      auto it = std::find(inputs.begin(), inputs.end(), name);
      const bool compiled_in = std::find(scalars_.begin(), scalars_.end(), name) != scalars_.end();
      input_map.push_back(it == inputs.end() ? -1 : static_cast<int>(it - inputs.begin()));
      if (it != inputs.end()) ++mapped;
      if (it == inputs.end() && !compiled_in) {
        entry.outcome = cat("generic: input '", name, "' is gone from the specialized graph");
        return;
      }
    }
    if (mapped != inputs.size() || value_names(graph.outputs()) != value_names(generic.outputs())) {
      entry.outcome = "generic: its graph inputs or outputs differ from the generic program's";
      return;
    }
    if (special_nodes >= generic_nodes && program->blocks().size() >= generic_.blocks().size()) {
      entry.outcome = cat("generic: fixing the dims folds nothing (", special_nodes, " nodes, ",
                          program->blocks().size(), " blocks)");
      return;
    }
    if (HalideCache* cache = program->kernel_cache()) cache->set_do_par_for(tbb_do_par_for());
    entry.specialized.executor = std::make_unique<Executor>(
        *program, settings_.plan, settings_.threads, settings_.flush_denormals);
    entry.specialized.input_map = std::move(input_map);
    entry.outcome = cat(special_nodes, " nodes (generic ", generic_nodes, "), ",
                        program->blocks().size(), " blocks (generic ", generic_.blocks().size(),
                        ")");
    entry.specialized.program = std::move(program);
  } catch (const std::exception& e) {
    // The generic program runs the shape as before; the reason stays visible in describe().
    entry.outcome = cat("generic: specializing failed: ", e.what());
  }
}

PassContext ShapeSpecializer::specialization(const Graph& graph,
                                             const std::vector<int64_t>& key) const {
  PassContext specialization;
  for (size_t s = 0; s < symbols_.size(); ++s) {
    if (key[s] >= 0) specialization.fixed_dims[symbols_[s]] = key[s];
  }
  for (size_t i = 0; i < scalars_.size(); ++i) {
    const Value* input = nullptr;
    for (const Value* candidate : graph.inputs()) {
      if (candidate->name() == scalars_[i]) input = candidate;
    }
    RNNC_CHECK(input, "scalar input '", scalars_[i], "' is not an input of the model");
    Tensor value(input->type.dtype, {});
    value.set_double(0, static_cast<double>(key[symbols_.size() + i]));
    specialization.fixed_inputs[scalars_[i]] = std::move(value);
  }
  return specialization;
}

std::optional<std::vector<int64_t>> ShapeSpecializer::output_shape(const std::vector<int64_t>& key,
                                                                   const std::string& output) {
  std::lock_guard<std::mutex> lock(shapes_mutex_);
  auto lookup = [&](const std::map<std::string, std::vector<int64_t>>& shapes)
      -> std::optional<std::vector<int64_t>> {
    auto it = shapes.find(output);
    if (it == shapes.end()) return std::nullopt;
    return it->second;
  };
  for (const auto& [known, shapes] : output_shapes_) {
    if (known == key) return lookup(shapes);
  }
  std::map<std::string, std::vector<int64_t>> shapes;
  try {
    CompileOptions options;
    options.stop_after = Stage::kOptimize;
    options.specialization = [&](const Graph& graph) { return specialization(graph, key); };
    const std::unique_ptr<Model> model =
        rnnc::compile(ModelSource::bytes(model_bytes_.data(), model_bytes_.size()), options).model;
    for (const Value* value : model->graph->outputs()) {
      if (!value->type.is_tensor() || !value->type.shape) continue;
      std::vector<int64_t> shape;
      for (const Dim& dim : *value->type.shape) {
        if (!dim.is_known()) break;
        shape.push_back(dim.value());
      }
      if (shape.size() == value->type.shape->size()) shapes[value->name()] = std::move(shape);
    }
  } catch (const Error& error) {
    // Fixing this key makes the model invalid (the dims out of what it accepts): nothing is
    // decided, and the caller's error says to pass the state. An rnnc bug stays an error.
    if (error.kind() == ErrorKind::kInternal) throw;
  }
  // One optimization per key a session starts from; keys beyond the bound are not remembered.
  std::optional<std::vector<int64_t>> shape = lookup(shapes);
  if (output_shapes_.size() < 4 * settings_.max_shapes + 4) {
    output_shapes_.emplace_back(key, std::move(shapes));
  }
  return shape;
}

std::string ShapeSpecializer::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const auto& entry : entries_) {
    std::string dims;
    for (size_t s = 0; s < symbols_.size() + scalars_.size(); ++s) {
      const std::string& name = s < symbols_.size() ? symbols_[s] : scalars_[s - symbols_.size()];
      dims += cat(s ? ", " : "", name, "=", entry->dims[s]);
    }
    const bool ready = entry->ready.load(std::memory_order_acquire);
    text += cat("  specialized for ", dims, ": ", ready ? entry->outcome : "compiling", "\n");
  }
  return text;
}

}  // namespace rnnc
