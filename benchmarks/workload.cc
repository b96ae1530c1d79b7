#include "benchmarks/workload.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "graph_opt/pipeline.h"
#include "ir/error.h"
#include "ir/onnx_import.h"

namespace rnnc::bench {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value& field(const Struct& object, const std::string& key, const std::string& where) {
  auto found = object.fields().find(key);
  if (found == object.fields().end())
    raise_invalid_input(cat(where, ": missing field '", key, "'"));
  return found->second;
}

std::string string_field(const Struct& object, const std::string& key, const std::string& where,
                         const std::string& fallback = "\x01") {
  if (!object.fields().count(key) && fallback != "\x01") return fallback;
  const Value& value = field(object, key, where);
  if (value.kind_case() != Value::kStringValue)
    raise_invalid_input(cat(where, ": field '", key, "' must be a string"));
  return value.string_value();
}

int64_t int_field(const Struct& object, const std::string& key, const std::string& where,
                  int64_t fallback = INT64_MIN) {
  if (!object.fields().count(key) && fallback != INT64_MIN) return fallback;
  const Value& value = field(object, key, where);
  if (value.kind_case() != Value::kNumberValue)
    raise_invalid_input(cat(where, ": field '", key, "' must be a number"));
  return static_cast<int64_t>(value.number_value());
}

uint64_t name_seed(const std::string& name) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

}  // namespace

std::vector<Workload> read_manifest(const std::string& path) {
  std::ifstream file(path);
  if (!file)
    raise(ErrorKind::kIo,
          cat("cannot open workload manifest '", path, "' (run models/make_workloads.py)"));
  std::stringstream text;
  text << file.rdbuf();
  Struct root;
  auto status = google::protobuf::util::JsonStringToMessage(text.str(), &root);
  if (!status.ok()) raise_invalid_input(cat(path, ": not valid JSON: ", status.ToString()));
  const Value& list = field(root, "workloads", path);
  if (list.kind_case() != Value::kListValue)
    raise_invalid_input(cat(path, ": 'workloads' must be a list"));

  std::vector<Workload> workloads;
  for (const Value& item : list.list_value().values()) {
    const std::string where = cat(path, ": workload #", workloads.size());
    if (item.kind_case() != Value::kStructValue)
      raise_invalid_input(cat(where, " must be an object"));
    const Struct& object = item.struct_value();
    Workload workload;
    workload.name = string_field(object, "name", where);
    const std::string named = cat(path, ": workload '", workload.name, "'");
    workload.model = string_field(object, "model", named);
    workload.family = string_field(object, "family", named);
    workload.stands_for = string_field(object, "stands_for", named, "");
    workload.fetch = string_field(object, "fetch", named, "");
    workload.dqlstm_model = string_field(object, "dqlstm_model", named, "");
    workload.seq = int_field(object, "seq", named);
    workload.batch = int_field(object, "batch", named);
    workload.param_bytes = int_field(object, "param_bytes", named, 0);
    if (object.fields().count("torch")) workload.torch = field(object, "torch", named).bool_value();
    for (const Value& input : field(object, "inputs", named).list_value().values()) {
      const Struct& spec_object = input.struct_value();
      InputSpec spec;
      spec.name = string_field(spec_object, "name", named);
      const std::string dtype = string_field(spec_object, "dtype", named);
      std::optional<DType> parsed = dtype_from_name(dtype);
      if (!parsed)
        raise_invalid_input(
            cat(named, ": input '", spec.name, "' has unknown dtype '", dtype, "'"));
      spec.dtype = *parsed;
      for (const Value& dim : field(spec_object, "shape", named).list_value().values())
        spec.shape.push_back(static_cast<int64_t>(dim.number_value()));
      spec.fill = string_field(spec_object, "fill", named);
      if (spec.fill != "normal" && spec.fill != "zeros" && spec.fill != "const" &&
          spec.fill != "audio")
        raise_invalid_input(cat(named, ": input '", spec.name, "' has unknown fill '", spec.fill,
                                "' (normal, zeros, const, audio)"));
      if (spec_object.fields().count("value"))
        spec.value = field(spec_object, "value", named).number_value();
      workload.inputs.push_back(spec);
    }
    if (object.fields().count("carry")) {
      for (const auto& [output, input] : field(object, "carry", named).struct_value().fields())
        workload.carry[output] = input.string_value();
    }
    workloads.push_back(workload);
  }
  return workloads;
}

InputStream::InputStream(const Workload& workload) : workload_(workload) {
  // A synthetic 16 kHz recording for audio inputs: voiced stretches (a 110-190 Hz glide with
  // harmonics, syllable-rate amplitude) separated by near-silence, plus a little noise, so a VAD
  // sees both speech-like and silent chunks.
  std::mt19937_64 random(name_seed(workload.name));
  std::normal_distribution<float> noise(0.0f, 0.01f);
  const int64_t samples = 64 * 512;
  audio_.resize(samples);
  double phase = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const double t = static_cast<double>(i) / 16000.0;
    const bool voiced = std::fmod(t, 0.8) < 0.5;
    const double f0 = 110.0 + 80.0 * std::fmod(t, 0.5) / 0.5;
    phase += 2.0 * M_PI * f0 / 16000.0;
    double sample = 0;
    if (voiced) {
      const double envelope = 0.5 - 0.5 * std::cos(2.0 * M_PI * std::fmod(t, 0.8) / 0.5);
      for (int harmonic = 1; harmonic <= 8; ++harmonic)
        sample += std::sin(harmonic * phase) / harmonic;
      sample *= 0.25 * envelope;
    }
    audio_[i] = static_cast<float>(sample) + noise(random);
  }
  for (const InputSpec& spec : workload.inputs) first_[spec.name] = make(spec, 0);
  current_ = first_;
}

Tensor InputStream::make(const InputSpec& spec, int64_t chunk) const {
  Tensor tensor(spec.dtype, spec.shape);
  if (spec.fill == "zeros") return tensor;
  if (spec.fill == "const") {
    for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, spec.value);
    return tensor;
  }
  if (spec.dtype != DType::kFloat32)
    raise_invalid_input(cat("workload '", workload_.name, "': input '", spec.name, "' fill '",
                            spec.fill, "' needs dtype f32"));
  float* data = tensor.data<float>();
  if (spec.fill == "audio") {
    const int64_t offset = (chunk * tensor.numel()) % static_cast<int64_t>(audio_.size());
    for (int64_t i = 0; i < tensor.numel(); ++i)
      data[i] = audio_[(offset + i) % static_cast<int64_t>(audio_.size())];
    return tensor;
  }
  std::mt19937_64 random(name_seed(workload_.name + "/" + spec.name));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < tensor.numel(); ++i) data[i] = normal(random);
  return tensor;
}

void InputStream::advance(const TensorMap& outputs) {
  if (!stateful()) return;
  ++chunk_;
  for (const InputSpec& spec : workload_.inputs)
    if (spec.fill == "audio") current_[spec.name] = make(spec, chunk_);
  for (const auto& [output, input] : workload_.carry) {
    auto found = outputs.find(output);
    if (found == outputs.end())
      raise_invalid_input(cat("workload '", workload_.name, "': the model has no output '", output,
                              "' to carry into input '", input, "'"));
    // A copy: an engine may reuse its output buffers on the next run.
    current_[input] = found->second.clone();
  }
}

void InputStream::reset() {
  chunk_ = 0;
  current_ = first_;
}

std::map<std::string, int64_t> bound_dims(
    const Graph& graph, const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::map<std::string, int64_t> dims;
  for (const rnnc::Value* input : graph.inputs()) {
    auto shape = shapes.find(input->name());
    if (shape == shapes.end() || !input->type.shape ||
        input->type.shape->size() != shape->second.size()) {
      continue;
    }
    for (size_t i = 0; i < shape->second.size(); ++i) {
      const Dim& dim = (*input->type.shape)[i];
      std::vector<std::string> names = dim.symbols();
      if (names.size() == 1 && dim == Dim::symbol(names[0])) dims[names[0]] = shape->second[i];
    }
  }
  return dims;
}

std::map<std::string, int64_t> fixed_scalar_inputs(const Workload& workload) {
  std::map<std::string, int64_t> fixed;
  for (const InputSpec& input : workload.inputs) {
    if (input.fill == "const" && input.dtype == DType::kInt64 && input.shape.empty()) {
      fixed[input.name] = static_cast<int64_t>(input.value);
    }
  }
  return fixed;
}

ModelCost workload_cost(const std::string& model_path, const Workload& workload) {
  std::unique_ptr<Model> model = import_onnx_file(model_path);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const InputSpec& input : workload.inputs) shapes[input.name] = input.shape;
  OptimizeOptions options;
  options.steps = default_pipeline();
  options.context.fixed_dims = bound_dims(*model->graph, shapes);
  for (const auto& [name, value] : fixed_scalar_inputs(workload)) {
    options.context.fixed_inputs[name] = Tensor::scalar<int64_t>(value);
  }
  optimize(*model, options);
  return model_cost(*model->graph);
}

}  // namespace rnnc::bench
