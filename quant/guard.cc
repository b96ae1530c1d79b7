#include "quant/guard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ir/error.h"
#include "ir/clone.h"
#include "ir/reference/evaluator.h"

namespace rnnc::quant {

namespace {

// The width a recurrent node is widened to: 12-bit weights and activations run on the s16 x s16
// kernels, whose sums fit one int32 accumulation for K up to 128 (docs/quant.md) and, for
// Silero's LSTM, meet its 0.02 speech tolerance where 8 bits do not.
constexpr int kWideBits = 12;
// The search meets this fraction of the budget on the inputs it measures: the decision then has
// a 2x margin for inputs it did not see (generated signals stand in for real data; calibration
// samples are a few of the inputs a model will meet).
constexpr double kTargetShare = 0.5;

using Clock = std::chrono::steady_clock;

bool is_recurrent(const Node& node) {
  const std::string& op = node.op_type();
  return node.domain().empty() && (op == "LSTM" || op == "GRU" || op == "RNN");
}

bool is_product(const Node& node) {
  return node.domain().empty() && (node.op_type() == "MatMul" || node.op_type() == "Gemm");
}

std::string percent(double fraction) {
  char text[32];
  if (std::isinf(fraction)) return "inf%";
  std::snprintf(text, sizeof(text), "%.3g%%", 100 * fraction);
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

// The node's scheme at `precision`, from the configuration without any decisions.
NodeScheme scheme_at(const Node& node, Config config, Precision precision) {
  config.decided.clear();
  NodeScheme scheme = config.scheme_for(node);
  if (precision == Precision::kFloat) {
    scheme.keep_float = true;
  } else if (precision == Precision::kWide) {
    scheme.weights.bits = std::max(scheme.weights.bits, kWideBits);
    scheme.weights.symmetric = true;  // wider than 8 bits: int32 storage, zero point 0
    scheme.activations.bits = std::max(scheme.activations.bits, kWideBits);
    scheme.activations.symmetric = true;  // int16 storage
  }
  return scheme;
}

// The next step down from `precision` (kFloat stays).
Precision step_down(const Node& node, const Config& config, Precision precision) {
  if (precision == Precision::kConfigured && is_recurrent(node)) {
    const NodeScheme configured = scheme_at(node, config, Precision::kConfigured);
    const NodeScheme wide = scheme_at(node, config, Precision::kWide);
    if (configured.weights.bits != wide.weights.bits ||
        configured.activations.bits != wide.activations.bits) {
      return Precision::kWide;
    }
  }
  return Precision::kFloat;
}

Precision step_up(const Node& node, const Config& config, Precision precision) {
  if (precision == Precision::kFloat &&
      step_down(node, config, Precision::kConfigured) == Precision::kWide) {
    return Precision::kWide;
  }
  return Precision::kConfigured;
}

// Runs quantized variants of one float model on fixed samples against its float outputs.
class ErrorMeter {
 public:
  ErrorMeter(const Model& float_model, const Config& config, const std::vector<Sample>& samples,
             const std::vector<Sample>& calibration, const std::string& inputs_text)
      : float_model_(float_model),
        config_(config),
        samples_(samples),
        calibration_(calibration) {
    const Graph& graph = *float_model.graph;
    for (const Sample& sample : samples_) {
      try {
        reference_.push_back(evaluate(graph, sample));
      } catch (const Error& e) {
        raise_invalid_input(cat("quantization guard: the float model does not run on ", inputs_text,
                                ": ", e.what(), " (bind the dims: --dim NAME=N, "
                                "ModelOptions::quantization_dims; or give calibration inputs)"));
      }
    }
    for (size_t k = 0; k < graph.outputs().size(); ++k) {
      const Value* output = graph.outputs()[k];
      if (!is_floating(output->type.dtype)) continue;
      double lo = INFINITY, hi = -INFINITY, largest = 0;
      for (const std::vector<Tensor>& outputs : reference_) {
        const Tensor& t = outputs[k];
        for (int64_t i = 0; i < t.numel(); ++i) {
          const double v = t.get_double(i);
          if (!std::isfinite(v)) continue;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
          largest = std::max(largest, std::abs(v));
        }
      }
      const double range = hi > lo ? hi - lo : largest > 0 ? largest : 1.0;
      measured_.push_back({k, output->name(), range});
    }
  }

  // The error of the model with each candidate at its precision (absent: configured).
  ErrorMeasurement measure(const std::map<const Node*, Precision>& precisions) {
    ++evaluations_;
    std::unique_ptr<Model> model = clone_model(float_model_);
    Config config = config_;
    config.decided.clear();
    for (const auto& [node, precision] : precisions) {
      config.decided[node->name()] = scheme_at(*node, config_, precision);
    }
    quantize_model(*model, config, calibration_);
    ErrorMeasurement result;
    for (const Measured& m : measured_) result.outputs.push_back({m.name, 0, m.range});
    for (size_t s = 0; s < samples_.size(); ++s) {
      const std::vector<Tensor> outputs = evaluate(*model->graph, samples_[s]);
      for (size_t o = 0; o < measured_.size(); ++o) {
        const Tensor& q = outputs[measured_[o].index];
        const Tensor& f = reference_[s][measured_[o].index];
        double& worst = result.outputs[o].max_abs_error;
        RNNC_CHECK(q.numel() == f.numel(), "output '", measured_[o].name, "' changed size");
        for (int64_t i = 0; i < q.numel(); ++i) {
          const double a = q.get_double(i), b = f.get_double(i);
          if (std::isnan(b)) continue;
          const double d = std::abs(a - b);
          worst = std::max(worst, std::isnan(d) ? INFINITY : d);
        }
      }
    }
    return result;
  }

  int evaluations() const { return evaluations_; }

 private:
  struct Measured {
    size_t index;
    std::string name;
    double range;
  };
  const Model& float_model_;  // each trial quantizes a clone (sharing the float weights)
  const Config& config_;
  const std::vector<Sample>& samples_;
  const std::vector<Sample>& calibration_;
  std::vector<std::vector<Tensor>> reference_;  // per sample, the float model's outputs
  std::vector<Measured> measured_;
  int evaluations_ = 0;
};

// The main-graph nodes quantize_model would quantize under `config`.
std::vector<Node*> candidates(Model& model, const Config& config,
                              const std::vector<Sample>& calibration) {
  Graph& graph = *model.graph;
  name_quantizable_nodes(model);
  std::unique_ptr<Model> copy = clone_model(model);
  Config plain = config;
  plain.decided.clear();
  const Report report = quantize_model(*copy, plain, calibration);
  std::vector<Node*> nodes;
  for (const auto& node : graph.nodes()) {
    for (const NodeReport& entry : report.nodes) {
      if (entry.quantized && entry.node == node->name()) nodes.push_back(node.get());
    }
  }
  return nodes;
}

}  // namespace

void name_quantizable_nodes(Model& model) {
  Graph& graph = *model.graph;
  for (const auto& node : graph.nodes()) {
    if ((is_recurrent(*node) || is_product(*node)) && node->name().empty()) {
      node->set_name(graph.unique_name(node->op_type()));
    }
  }
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kConfigured: return "configured";
    case Precision::kWide: return "wide";
    case Precision::kFloat: return "float";
  }
  return "?";
}

double ErrorMeasurement::worst_fraction() const {
  double worst = 0;
  for (const OutputError& output : outputs) worst = std::max(worst, output.fraction());
  return worst;
}

std::string ErrorMeasurement::to_string() const {
  const OutputError* worst = nullptr;
  for (const OutputError& output : outputs) {
    if (!worst || output.fraction() > worst->fraction()) worst = &output;
  }
  if (!worst) return "no float outputs";
  return cat(percent(worst->fraction()), " of range (max |q - float| ",
             number(worst->max_abs_error), " on '", worst->output, "', range ",
             number(worst->range), ")");
}

std::map<std::string, Precision> GuardResult::precisions() const {
  std::map<std::string, Precision> result;
  for (const NodeDecision& node : nodes) result[node.node] = node.precision;
  return result;
}

GuardResult guard_search(Model& model, const Config& config,
                         const std::vector<Sample>& calibration, const InputRecipe& recipe) {
  const auto start = Clock::now();
  GuardResult result;
  result.enabled = config.guard.enabled;
  result.max_error = config.guard.max_error;
  const std::vector<Node*> nodes = candidates(model, config, calibration);
  for (const Node* node : nodes) {
    NodeDecision decision;
    decision.node = node->name();
    decision.op_type = node->op_type();
    decision.scheme = scheme_at(*node, config, Precision::kConfigured).to_string();
    decision.reason = "guard off";
    result.nodes.push_back(decision);
  }
  if (!result.enabled || nodes.empty()) {
    if (result.enabled) result.inputs = "nothing to measure: no node is quantized";
    return result;
  }

  std::vector<Sample> generated;
  if (calibration.empty()) {
    generated = generate_inputs(*model.graph, recipe);
    result.inputs = recipe.describe(*model.graph);
    result.generated = true;
  } else {
    result.inputs = cat(calibration.size(), " calibration sample(s)");
  }
  const std::vector<Sample>& samples = calibration.empty() ? generated : calibration;
  ErrorMeter meter(model, config, samples, calibration, result.inputs);
  const double target = config.guard.max_error * kTargetShare;
  auto meets = [&](const ErrorMeasurement& m) { return m.worst_fraction() <= target; };
  auto out_of_time = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count() >
           config.guard.time_limit_seconds;
  };

  std::map<const Node*, Precision> precisions;
  for (const Node* node : nodes) precisions[node] = Precision::kConfigured;
  result.before = meter.measure(precisions);
  result.after = result.before;
  std::map<const Node*, std::string> reasons;
  std::map<const Node*, double> sensitivity;
  if (meets(result.before)) {
    for (const Node* node : nodes) {
      reasons[node] = cat("the model with every node at its configured scheme meets the target (",
                          percent(result.before.worst_fraction()), " <= ", percent(target), ")");
    }
  } else {
    // Sensitivity: each node quantized alone.
    std::map<const Node*, Precision> alone;
    for (const Node* node : nodes) alone[node] = Precision::kFloat;
    for (const Node* node : nodes) {
      if (out_of_time()) break;
      alone[node] = Precision::kConfigured;
      sensitivity[node] = meter.measure(alone).worst_fraction();
      alone[node] = Precision::kFloat;
    }
    std::vector<const Node*> order(nodes.begin(), nodes.end());
    std::stable_sort(order.begin(), order.end(), [&](const Node* a, const Node* b) {
      return sensitivity[a] > sensitivity[b];
    });
    auto rank = [&](const Node* node) {
      return cat("rank ", std::find(order.begin(), order.end(), node) - order.begin() + 1, " of ",
                 order.size());
    };
    // Demote, most sensitive first, one step per node per round.
    bool met = false;
    while (!met && !out_of_time()) {
      bool demoted = false;
      for (const Node* node : order) {
        const Precision next = step_down(*node, config, precisions[node]);
        if (next == precisions[node]) continue;
        const std::string missed = percent(result.after.worst_fraction());
        precisions[node] = next;
        demoted = true;
        reasons[node] = cat(next == Precision::kWide ? "widened to 12 bits" : "float",
                            ": sensitivity ", percent(sensitivity[node]), " (", rank(node),
                            "), the model missed the target (", missed, " > ", percent(target), ")",
                            next == Precision::kFloat && is_product(*node)
                                ? "; MatMul/Gemm have no integer kernel wider than 8 bits"
                                : "");
        result.after = meter.measure(precisions);
        if ((met = meets(result.after)) || out_of_time()) break;
      }
      if (!demoted) break;  // every node float
    }
    // Promote back what the target allows, least sensitive first.
    for (auto it = order.rbegin(); met && it != order.rend() && !out_of_time(); ++it) {
      const Node* node = *it;
      // Quantized alone it already misses the target: not worth a measurement.
      if (precisions[node] == Precision::kConfigured || sensitivity[node] > target) continue;
      const Precision was = precisions[node];
      precisions[node] = step_up(*node, config, was);
      const ErrorMeasurement trial = meter.measure(precisions);
      if (meets(trial)) {
        result.after = trial;
        reasons[node] = cat(precisions[node] == Precision::kWide ? "widened to 12 bits"
                                                                 : "configured scheme",
                            ": sensitivity ", percent(sensitivity[node]), " (", rank(node),
                            "), promoted back: the model still meets the target (",
                            percent(trial.worst_fraction()), ")");
      } else {
        precisions[node] = was;
      }
    }
    result.met = met;
    for (const Node* node : nodes) {
      if (!reasons.count(node)) {
        reasons[node] = cat("configured scheme: sensitivity ",
                            sensitivity.count(node) ? percent(sensitivity[node]) : "not measured",
                            sensitivity.count(node) ? cat(" (", rank(node), ")") : "",
                            ", the mixed model meets the target");
      }
    }
    if (!met) {
      result.timed_out = out_of_time();
      for (const Node* node : nodes) {
        precisions[node] = Precision::kFloat;
        reasons[node] = result.timed_out
                            ? cat("float: the search's time limit (", config.guard.time_limit_seconds,
                                  " s) ran out before the target was met")
                            : "float: the target was not met with any node quantized";
      }
      result.after = ErrorMeasurement{};
      for (const OutputError& output : result.before.outputs) {
        result.after.outputs.push_back({output.output, 0, output.range});
      }
      result.met = true;  // every candidate float: the float model itself
    }
  }
  for (NodeDecision& decision : result.nodes) {
    const Node* node = *std::find_if(nodes.begin(), nodes.end(),
                                     [&](const Node* n) { return n->name() == decision.node; });
    decision.precision = precisions[node];
    decision.scheme = scheme_at(*node, config, decision.precision).to_string();
    decision.sensitivity = sensitivity.count(node) ? sensitivity[node] : -1;
    decision.reason = reasons[node];
  }
  result.evaluations = meter.evaluations();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

Config apply_decisions(const Model& model, const Config& config,
                       const std::map<std::string, Precision>& precisions) {
  Config decided = config;
  decided.decided.clear();
  for (const auto& node : model.graph->nodes()) {
    auto it = precisions.find(node->name());
    if (it != precisions.end() && !node->name().empty()) {
      decided.decided[node->name()] = scheme_at(*node, config, it->second);
    }
  }
  return decided;
}

// ---- reports ----------------------------------------------------------------------------------

namespace {

// "int8", "12-bit", "float": what a scheme computes its products in, for the summary.
std::string width_label(const NodeDecision& node) {
  if (node.precision == Precision::kFloat) return "float";
  return node.precision == Precision::kWide ? "12-bit" : "quantized as configured";
}

}  // namespace

std::string GuardResult::summary() const {
  if (!enabled) {
    return cat(nodes.size(), " node(s) quantized as configured; quantization guard off: error not "
               "measured");
  }
  std::map<std::string, std::vector<const NodeDecision*>> by_label;
  for (const NodeDecision& node : nodes) by_label[width_label(node)].push_back(&node);
  std::string text;
  for (const char* label : {"quantized as configured", "12-bit", "float"}) {
    auto it = by_label.find(label);
    if (it == by_label.end()) continue;
    text += cat(text.empty() ? "" : ", ", it->second.size(), " ", label);
    if (std::string(label) != "quantized as configured") {
      std::string names;
      for (const NodeDecision* node : it->second) {
        names += cat(names.empty() ? "" : ", ", node->op_type, " '", node->node, "'");
      }
      text += " (" + names + ")";
    }
  }
  if (nodes.empty()) return "no node quantized";
  text += cat("; max error ", percent(after.worst_fraction()), " of output range (target ",
              percent(max_error * kTargetShare), ", half the ", percent(max_error), " budget)");
  if (before.worst_fraction() != after.worst_fraction()) {
    text += cat(" (every node as configured: ", percent(before.worst_fraction()), ")");
  }
  if (timed_out) text += "; the search ran out of time";
  text += cat("; measured on ", inputs);
  if (generated) text += ": real data is better (rnnc quantize --calibrate)";
  return text;
}

std::string GuardResult::to_markdown() const {
  std::ostringstream out;
  out << "## Error budget\n\n";
  if (!enabled) {
    out << "Quantization guard off (--no-guard / guard.enabled = false): the end-to-end error was "
           "not measured.\n\n";
    return out.str();
  }
  out << "Budget: each float output's max |quantized - float| <= " << percent(max_error)
      << " of its range (max - min of the float output). The search meets half of it, "
      << percent(max_error * kTargetShare)
      << ", on the measured inputs: a margin for inputs it did not see.\n\n";
  out << "Measured on " << inputs << " with the reference evaluator"
      << (generated ? ". Generated inputs only approximate real data: give --calibrate samples "
                      "for a decision on what the model will see"
                    : "")
      << ".\n\n";
  out << "Result: " << (met ? "meets" : "misses") << " the target after " << evaluations
      << " measured model(s)" << (timed_out ? "; the search's time limit ran out" : "") << ". "
      << summary() << "\n\n";
  out << "| output | range | max error, every node as configured | max error, as decided |\n";
  out << "|---|---|---|---|\n";
  for (size_t o = 0; o < before.outputs.size(); ++o) {
    const OutputError& b = before.outputs[o];
    out << "| " << b.output << " | " << number(b.range) << " | " << number(b.max_abs_error) << " ("
        << percent(b.fraction()) << ") | ";
    if (o < after.outputs.size()) {
      out << number(after.outputs[o].max_abs_error) << " (" << percent(after.outputs[o].fraction())
          << ")";
    }
    out << " |\n";
  }
  out << "\n| node | op | precision | scheme | sensitivity (alone, of range) | why |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const NodeDecision& node : nodes) {
    out << "| " << node.node << " | " << node.op_type << " | " << precision_name(node.precision)
        << " | " << node.scheme << " | "
        << (node.sensitivity >= 0 ? percent(node.sensitivity) : "-") << " | " << node.reason
        << " |\n";
  }
  return out.str();
}

// ---- the decision cache's text form -----------------------------------------------------------

namespace {

constexpr const char* kMagic = "rnnc quantization guard v1";

std::string exact(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t begin = 0;
  for (size_t tab; (tab = line.find('\t', begin)) != std::string::npos; begin = tab + 1) {
    fields.push_back(line.substr(begin, tab - begin));
  }
  fields.push_back(line.substr(begin));
  return fields;
}

}  // namespace

std::string GuardResult::serialize() const {
  std::ostringstream out;
  out << kMagic << "\n";
  out << "enabled\t" << enabled << "\nmax_error\t" << exact(max_error) << "\ninputs\t" << inputs
      << "\ngenerated\t" << generated << "\nmet\t" << met << "\ntimed_out\t" << timed_out
      << "\nevaluations\t" << evaluations << "\nseconds\t" << exact(seconds) << "\n";
  for (const auto& [tag, measurement] : {std::pair{"before", &before}, {"after", &after}}) {
    for (const OutputError& output : measurement->outputs) {
      out << tag << "\t" << output.output << "\t" << exact(output.max_abs_error) << "\t"
          << exact(output.range) << "\n";
    }
  }
  for (const NodeDecision& node : nodes) {
    out << "node\t" << node.node << "\t" << node.op_type << "\t" << precision_name(node.precision)
        << "\t" << node.scheme << "\t" << exact(node.sensitivity) << "\t" << node.reason << "\n";
  }
  out << "end\n";
  return out.str();
}

GuardResult GuardResult::parse(const std::string& text, const std::string& source) {
  auto fail = [&](const std::string& why) -> GuardResult {
    raise(ErrorKind::kIo, cat("quantization decision '", source, "': ", why));
  };
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return fail("not a decision rnnc wrote");
  GuardResult result;
  bool ended = false;
  auto to_double = [&](const std::string& field) {
    char* end = nullptr;
    const double value = std::strtod(field.c_str(), &end);
    if (field.empty() || *end) fail(cat("'", field, "' is not a number"));
    return value;
  };
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split_tabs(line);
    const std::string& tag = f[0];
    if (tag == "end" && f.size() == 1) {
      ended = true;
    } else if (f.size() == 2 && (tag == "enabled" || tag == "generated" || tag == "met" ||
                                 tag == "timed_out")) {
      const bool value = f[1] == "1";
      (tag == "enabled" ? result.enabled
       : tag == "generated" ? result.generated
       : tag == "met" ? result.met
                      : result.timed_out) = value;
    } else if (f.size() == 2 && tag == "max_error") {
      result.max_error = to_double(f[1]);
    } else if (f.size() == 2 && tag == "inputs") {
      result.inputs = f[1];
    } else if (f.size() == 2 && tag == "evaluations") {
      result.evaluations = static_cast<int>(to_double(f[1]));
    } else if (f.size() == 2 && tag == "seconds") {
      result.seconds = to_double(f[1]);
    } else if (f.size() == 4 && (tag == "before" || tag == "after")) {
      (tag == "before" ? result.before : result.after)
          .outputs.push_back({f[1], to_double(f[2]), to_double(f[3])});
    } else if (f.size() == 7 && tag == "node") {
      NodeDecision node;
      node.node = f[1];
      node.op_type = f[2];
      bool known = false;
      for (Precision p : {Precision::kConfigured, Precision::kWide, Precision::kFloat}) {
        if (f[3] == precision_name(p)) node.precision = p, known = true;
      }
      if (!known) fail(cat("unknown precision '", f[3], "'"));
      node.scheme = f[4];
      node.sensitivity = to_double(f[5]);
      node.reason = f[6];
      result.nodes.push_back(node);
    } else {
      fail(cat("unexpected line '", line, "'"));
    }
  }
  if (!ended) fail("truncated");
  return result;
}

}  // namespace rnnc::quant
