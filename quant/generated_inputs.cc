#include "quant/generated_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "ir/error.h"

namespace rnnc::quant {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kAmplitudes[] = {1.0, 0.25, 0.05, 0.5};

// Uniform in [0, 1) from the top 53 bits (the standard fixes mt19937_64's output, not the
// distributions'), so the values do not depend on the C++ library.
double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1p-53; }

double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform(rng);  // (0, 1]: log stays finite
  const double u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}

// A seed per (sample, input name), so adding an input does not change the others' values.
uint64_t seed_for(size_t sample, const std::string& name) {
  uint64_t hash = 1469598103934665603ull ^ (InputRecipe::kSeed + sample);
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// The size of the axis `input` indexes when it is a Gather's indices over data of known shape.
int64_t index_bound(const Value& input) {
  for (const Use& use : input.uses()) {
    const Node& node = *use.node;
    if (node.op_type() != "Gather" || use.input_index != 1) continue;
    const Value* data = node.input(0);
    if (!data || !data->type.shape) continue;
    int64_t axis = node.attr_int("axis", 0);
    const int64_t rank = data->type.rank();
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    const Dim& dim = (*data->type.shape)[static_cast<size_t>(axis)];
    if (dim.is_known() && dim.value() > 0) return dim.value();
  }
  return 2;
}

// Whether `input` is a stream's recurrent state: it reaches a recurrent node's initial_h or
// initial_c (ONNX inputs 5 and 6) through ops that only move data, across If branches (Silero
// slices its state through an If into its LSTM's initial state).
bool is_recurrent_state(const Value& input) {
  static const std::set<std::string> kMovesData = {
      "Identity", "Gather", "Slice", "Squeeze", "Unsqueeze", "Reshape", "Split",
      "Transpose", "Cast", "Concat", "Expand", "Flatten"};
  std::set<const Value*> seen;
  std::vector<const Value*> pending = {&input};
  while (!pending.empty()) {
    const Value* value = pending.back();
    pending.pop_back();
    if (!value || !seen.insert(value).second) continue;
    for (const Use& use : value->uses()) {
      const Node& node = *use.node;
      const std::string& op = node.op_type();
      if ((op == "LSTM" || op == "GRU" || op == "RNN") && (use.input_index == 5 || use.input_index == 6)) {
        return true;
      }
      if (kMovesData.count(op)) pending.insert(pending.end(), node.outputs().begin(), node.outputs().end());
    }
    // A branch returning the value: the If's output in that position carries it on.
    const Graph* owner = value->owner();
    if (!owner || !owner->parent()) continue;
    const auto& outputs = owner->outputs();
    const auto at = std::find(outputs.begin(), outputs.end(), value);
    if (at == outputs.end()) continue;
    for (const auto& node : owner->parent()->nodes()) {
      for (const auto& [name, attribute] : node->attributes()) {
        if (attribute.kind == Attribute::Kind::kGraph && attribute.g.get() == owner) {
          pending.push_back(node->output(static_cast<size_t>(at - outputs.begin())));
        }
      }
    }
  }
  return false;
}

std::vector<int64_t> shape_for(const Value& input, const std::map<std::string, int64_t>& dims) {
  if (!input.type.shape) {
    raise_invalid_input(cat("input '", input.name(), "' has unknown rank: the quantization guard "
                            "cannot generate it (give calibration inputs)"));
  }
  std::vector<int64_t> shape;
  for (size_t k = 0; k < input.type.shape->size(); ++k) {
    const Dim& dim = (*input.type.shape)[k];
    const std::optional<int64_t> value = dim.evaluate(dims);
    if (!value || *value < 0) {
      raise_invalid_input(cat("input '", input.name(), "' dim ", k, " is '", dim.to_string(),
                              "': the quantization guard cannot generate it (give calibration "
                              "inputs)"));
    }
    shape.push_back(*value);
  }
  return shape;
}

// Every symbol of the graph's inputs bound: the recipe's size, else the default.
std::map<std::string, int64_t> bound_dims(const Graph& graph, const InputRecipe& recipe,
                                          std::set<std::string>* defaulted = nullptr) {
  std::map<std::string, int64_t> dims = recipe.dims;
  for (const Value* input : graph.inputs()) {
    if (input->is_constant() || !input->type.shape) continue;
    for (const Dim& dim : *input->type.shape) {
      for (const std::string& symbol : dim.symbols()) {
        if (dims.emplace(symbol, InputRecipe::kDefaultDim).second && defaulted) {
          defaulted->insert(symbol);
        }
      }
    }
  }
  return dims;
}

}  // namespace

std::string InputRecipe::describe(const Graph& graph) const {
  std::set<std::string> defaulted;
  const std::map<std::string, int64_t> bound = bound_dims(graph, *this, &defaulted);
  char seed[32];
  std::snprintf(seed, sizeof(seed), "0x%llx", static_cast<unsigned long long>(kSeed));
  std::string text = cat(samples, " generated inputs (seed ", seed);
  std::string dim_text;
  for (const auto& [name, size] : bound) {
    dim_text += cat(dim_text.empty() ? "" : ", ", name, "=", size,
                    defaulted.count(name) ? " (default)" : "");
  }
  return text + (dim_text.empty() ? ")" : "; dims " + dim_text + ")");
}

std::vector<Sample> generate_inputs(const Graph& graph, const InputRecipe& recipe) {
  const std::map<std::string, int64_t> dims = bound_dims(graph, recipe);
  std::vector<Sample> samples;
  for (int s = 0; s < recipe.samples; ++s) {
    Sample sample;
    for (const Value* input : graph.inputs()) {
      if (input->is_constant()) continue;  // an initializer default: the model's own value
      std::mt19937_64 rng(seed_for(static_cast<size_t>(s), input->name()));
      Tensor tensor(input->type.dtype, shape_for(*input, dims));
      const DType dtype = tensor.dtype();
      if (is_floating(dtype) && is_recurrent_state(*input)) {
        // Zeros (a fresh tensor is zero-filled): a stream's first run.
      } else if (is_floating(dtype)) {
        const double amplitude = kAmplitudes[static_cast<size_t>(s) % std::size(kAmplitudes)];
        // Frequencies in cycles per element: one slow, one fast component.
        const double f1 = 0.002 + 0.05 * uniform(rng), f2 = 0.05 + 0.2 * uniform(rng);
        const double p1 = 2 * kPi * uniform(rng), p2 = 2 * kPi * uniform(rng);
        for (int64_t i = 0; i < tensor.numel(); ++i) {
          const double t = static_cast<double>(i);
          tensor.set_double(i, amplitude * (0.5 * std::sin(2 * kPi * f1 * t + p1) +
                                            0.3 * std::sin(2 * kPi * f2 * t + p2) +
                                            0.2 * standard_normal(rng)));
        }
      } else if (is_integer(dtype)) {
        const int64_t bound = index_bound(*input);
        for (int64_t i = 0; i < tensor.numel(); ++i) {
          tensor.set_double(i, static_cast<double>(rng() % static_cast<uint64_t>(bound)));
        }
      } else if (dtype == DType::kBool) {
        for (int64_t i = 0; i < tensor.numel(); ++i) tensor.set_double(i, i % 2);
      } else {
        raise_unsupported(cat("input '", input->name(), "' has element type ",
                              dtype_onnx_name(dtype), ": the quantization guard cannot generate "
                              "it (give calibration inputs)"));
      }
      sample[input->name()] = std::move(tensor);
    }
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace rnnc::quant
