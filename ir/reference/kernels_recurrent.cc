// Reference kernels for the recurrent ops LSTM, GRU and RNN, written so a reader can check them
// line by line against the ONNX spec's equations. docs/ops/recurrent.md states every reading of
// the spec they implement (activation_alpha/beta, sequence_lens, clip, zero-length sequences).
//
// Each op walks, for every direction and every batch entry on its own, that entry's valid time
// steps (forward: 0 .. len-1; reverse: len-1 .. 0) and applies the spec's step equations to that
// entry's hidden (and cell) state. Steps past a sequence's length are never computed, so Y stays
// zero there and Y_h / Y_c hold the state after the last valid step (the initial state when the
// length is 0).
//
// Arithmetic: float32 models compute in float32, float64 models in float64, except that each
// gate's pre-activation - the dot products with W and R plus biases and peephole terms - is
// summed in double and rounded to the element type once, before clip and the activation.
// float16 models are widened to float32 and their outputs rounded back.
//
// A node annotated with an activation quantization (ir/quantization.h, float32 only) reads every
// product's activation operand fake-quantized: each row of X, and the state h (GRU: also
// rt (.) h) at every step, is replaced by scale * (q - zero_point) before the dot products, which
// is exactly what the integer kernels compute with the dequantized weights (docs/quant.md).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <type_traits>

#include "ir/quantization.h"
#include "ir/reference/kernel.h"

namespace rnnc {

namespace {

// ---- activation functions ----------------------------------------------------------------------

enum class ActivationKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

// The spec's list, with which of activation_alpha / activation_beta each function consumes and
// the defaults of the ONNX operator of the same name.
struct ActivationInfo {
  const char* name;
  ActivationKind kind;
  bool takes_alpha;
  bool takes_beta;
  float default_alpha;
  float default_beta;
};

constexpr ActivationInfo kActivationTable[] = {
    {"Relu", ActivationKind::kRelu, false, false, 0.0f, 0.0f},
    {"Tanh", ActivationKind::kTanh, false, false, 0.0f, 0.0f},
    {"Sigmoid", ActivationKind::kSigmoid, false, false, 0.0f, 0.0f},
    {"Affine", ActivationKind::kAffine, true, true, 1.0f, 0.0f},
    {"LeakyRelu", ActivationKind::kLeakyRelu, true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", ActivationKind::kThresholdedRelu, true, false, 1.0f, 0.0f},
    {"ScaledTanh", ActivationKind::kScaledTanh, true, true, 1.0f, 1.0f},
    {"HardSigmoid", ActivationKind::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"Elu", ActivationKind::kElu, true, false, 1.0f, 0.0f},
    {"Softsign", ActivationKind::kSoftsign, false, false, 0.0f, 0.0f},
    {"Softplus", ActivationKind::kSoftplus, false, false, 0.0f, 0.0f},
};

struct Activation {
  ActivationKind kind;
  float alpha;
  float beta;

  // The formulas as the spec lists them (a = alpha, b = beta).
  template <typename T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta), zero = 0, one = 1;
    // clang-format off
    switch (kind) {
      case ActivationKind::kRelu:            return std::max(x, zero);              // max(0, x)
      case ActivationKind::kTanh:            return std::tanh(x);
      case ActivationKind::kSigmoid:         return one / (one + std::exp(-x));     // 1/(1 + e^-x)
      case ActivationKind::kAffine:          return a * x + b;
      case ActivationKind::kLeakyRelu:       return x >= zero ? x : a * x;
      case ActivationKind::kThresholdedRelu: return x >= a ? x : zero;
      case ActivationKind::kScaledTanh:      return a * std::tanh(b * x);
      case ActivationKind::kHardSigmoid:     return std::min(std::max(a * x + b, zero), one);
      case ActivationKind::kElu:             return x >= zero ? x : a * std::expm1(x);  // e^x - 1
      case ActivationKind::kSoftsign:        return x / (one + std::abs(x));
      // log(1 + e^x), written so that it does not overflow to inf for large x.
      case ActivationKind::kSoftplus:
        return x > zero ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
    }
    // clang-format on
    return x;
  }
};

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// Reads 'activations' (names matched case-insensitively) with their 'activation_alpha' and
// 'activation_beta': each list is consumed in activation order, one value per activation that
// takes that parameter; activations left without a value keep their default. Returns
// per_direction * num_directions activations, forward direction first.
std::vector<Activation> read_activations(const KernelContext& context,
                                         const std::vector<std::string>& defaults,
                                         int64_t num_directions) {
  const Node& node = context.node;
  std::vector<std::string> names;
  for (int64_t d = 0; d < num_directions; ++d) {
    names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (node.has_attr("activations")) {
    std::vector<std::string> given = node.attr_strings("activations");
    // RNN's schema default ["Tanh", "Tanh"] is accepted for one direction (exporters write it).
    bool rnn_default = node.op_type() == "RNN" && num_directions == 1 && given.size() == 2 &&
                       lowercase(given[0]) == "tanh" && lowercase(given[1]) == "tanh";
    if (rnn_default) given.resize(1);
    if (given.size() != names.size()) {
      context.fail(
          cat("attribute 'activations' has ", given.size(), " entries, expected ", names.size()));
    }
    names = given;
  }
  std::vector<float> alphas = node.attr_floats("activation_alpha");
  std::vector<float> betas = node.attr_floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> activations;
  for (const std::string& name : names) {
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& entry : kActivationTable) {
      if (lowercase(entry.name) == lowercase(name)) info = &entry;
    }
    if (!info) context.fail(cat("attribute 'activations': unknown activation '", name, "'"));
    Activation activation{info->kind, info->default_alpha, info->default_beta};
    if (info->takes_alpha && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (info->takes_beta && next_beta < betas.size()) activation.beta = betas[next_beta++];
    activations.push_back(activation);
  }
  if (next_alpha < alphas.size() || next_beta < betas.size()) {
    context.fail(cat("attribute 'activation_alpha' / 'activation_beta' have ", alphas.size(), " / ",
                     betas.size(), " values, but the activations consume only ", next_alpha, " / ",
                     next_beta));
  }
  return activations;
}

// ---- inputs, attributes and layouts shared by the three ops ------------------------------------

// Input positions, common to the three ops.
constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6,
                 kP = 7;


// Everything one op run needs, with omitted optional inputs materialized as the spec's defaults
// (zeros; full sequence lengths) and 16-bit float inputs widened to float32.
struct RecurrentRun {
  DType dtype;  // the model's element type (outputs are narrowed back to it)
  int64_t layout, seq_length, batch_size, input_size, hidden_size, num_directions;
  std::vector<bool> reverse;  // per direction
  std::vector<Activation> activations;
  std::optional<float> clip;
  std::vector<int64_t> sequence_lens;  // per batch entry
  Tensor x, w, r, b, initial_h, initial_c, p;
  std::optional<ActivationQuant> quant;  // the node's activation quantization, if any

  // A row's coefficients: its own (dynamic) or the static ones for X or the state.
  RowQuant row_quant(const float* row, int64_t n, bool state) const {
    if (quant->dynamic) return dynamic_row_quant(row, n, *quant);
    return state ? static_row_quant(quant->state_scale, quant->state_zero_point)
                 : static_row_quant(quant->input_scale, quant->input_zero_point);
  }
  // The state row a product reads: h itself, or h fake-quantized when the node quantizes its
  // activations.
  template <typename T>
  std::vector<T> product_operand(const std::vector<T>& h) const {
    if (!quant) return h;
    if constexpr (std::is_same_v<T, float>) {
      std::vector<float> out(h.size());
      const int64_t n = static_cast<int64_t>(h.size());
      fake_quantize_row(h.data(), n, row_quant(h.data(), n, /*state=*/true), *quant, out.data());
      return out;
    }
    return h;  // read_recurrent admits quantization for float32 only
  }

  // Element offsets of X[t, b, :], Y[t, d, b, :] and state[d, b, :] in the chosen layout:
  // layout 0: X [seq, batch, input], Y [seq, dirs, batch, hidden], states [dirs, batch, hidden];
  // layout 1: X [batch, seq, input], Y [batch, seq, dirs, hidden], states [batch, dirs, hidden].
  int64_t x_offset(int64_t t, int64_t batch) const {
    return (layout == 0 ? t * batch_size + batch : batch * seq_length + t) * input_size;
  }
  int64_t y_offset(int64_t t, int64_t d, int64_t batch) const {
    return (layout == 0 ? (t * num_directions + d) * batch_size + batch
                        : (batch * seq_length + t) * num_directions + d) *
           hidden_size;
  }
  int64_t state_offset(int64_t d, int64_t batch) const {
    return (layout == 0 ? d * batch_size + batch : batch * num_directions + d) * hidden_size;
  }
  std::vector<int64_t> y_shape() const {
    return layout == 0 ? std::vector<int64_t>{seq_length, num_directions, batch_size, hidden_size}
                       : std::vector<int64_t>{batch_size, seq_length, num_directions, hidden_size};
  }
  std::vector<int64_t> state_shape() const {
    return layout == 0 ? std::vector<int64_t>{num_directions, batch_size, hidden_size}
                       : std::vector<int64_t>{batch_size, num_directions, hidden_size};
  }
  // Clip, when the attribute is set, bounds each pre-activation to [-clip, clip].
  template <typename T>
  T clipped(T x) const {
    if (!clip) return x;
    const T bound = static_cast<T>(*clip);
    return std::min(std::max(x, -bound), bound);
  }
};

// gates: gate blocks stacked in W and R (LSTM 4, GRU 3, RNN 1); default_activations: one
// direction's activations when the attribute is omitted.
RecurrentRun read_recurrent(const KernelContext& context, int64_t gates,
                            const std::vector<std::string>& default_activations, bool has_cell) {
  const Node& node = context.node;
  RecurrentRun run;
  run.dtype = context.input(kX).dtype();
  if (run.dtype != DType::kFloat16 && run.dtype != DType::kFloat32 &&
      run.dtype != DType::kFloat64) {
    context.fail(cat("input 'X' has element type ", dtype_onnx_name(run.dtype),
                     ", expected float16, float or double"));
  }
  std::string direction = node.attr_string("direction", "forward");
  if (direction == "forward" || direction == "reverse") {
    run.reverse = {direction == "reverse"};
  } else if (direction == "bidirectional") {
    run.reverse = {false, true};
  } else {
    context.fail(cat("attribute 'direction' = '", direction,
                     "', must be one of forward, reverse, bidirectional"));
  }
  run.num_directions = static_cast<int64_t>(run.reverse.size());
  run.layout = node.attr_int("layout", 0);
  if (run.layout != 0 && run.layout != 1) {
    context.fail(cat("attribute 'layout' = ", run.layout, ", must be 0 or 1"));
  }
  if (node.has_attr("clip")) run.clip = node.attr_float("clip", 0);
  if (run.clip && !(*run.clip > 0)) {
    context.fail(cat("attribute 'clip' = ", *run.clip, ", must be > 0"));
  }
  run.activations = read_activations(context, default_activations, run.num_directions);

  // Shapes at run time: X gives seq_length, batch_size, input_size; hidden_size is the attribute
  // or R's last dim. A disagreement between inputs here is a data error (symbolic dims that the
  // model left open).
  const Tensor& x = context.input(kX);
  if (x.rank() != 3) {
    context.fail_input(cat("input 'X' has shape ", shape_text(x.shape()), ", expected rank 3"));
  }
  run.seq_length = x.dim(run.layout == 0 ? 0 : 1);
  run.batch_size = x.dim(run.layout == 0 ? 1 : 0);
  run.input_size = x.dim(2);
  const Tensor& r = context.input(kR);
  if (node.has_attr("hidden_size")) {
    run.hidden_size = node.attr_int("hidden_size", 0);
    if (run.hidden_size <= 0) {
      context.fail(cat("attribute 'hidden_size' = ", run.hidden_size, ", must be > 0"));
    }
  } else {
    if (r.rank() != 3) {
      context.fail_input(cat("input 'R' has shape ", shape_text(r.shape()), ", expected rank 3"));
    }
    run.hidden_size = r.dim(2);
  }
  const int64_t dirs = run.num_directions, hidden = run.hidden_size;

  // Checks one input's dtype and shape, or materializes its default (zeros) when omitted.
  run.x = widen_half(x);
  auto read = [&](size_t index, const char* name, std::vector<int64_t> shape) -> Tensor {
    if (!context.has_input(index)) return Tensor(run.x.dtype(), shape);
    const Tensor& tensor = context.input(index);
    if (tensor.dtype() != run.dtype) {
      context.fail(cat("input '", name, "' has element type ", dtype_onnx_name(tensor.dtype()),
                       ", expected ", dtype_onnx_name(run.dtype), " (the element type of X)"));
    }
    if (tensor.shape() != shape) {
      context.fail_input(cat("input '", name, "' has shape ", shape_text(tensor.shape()),
                             ", expected ", shape_text(shape)));
    }
    return widen_half(tensor);
  };
  run.w = read(kW, "W", {dirs, gates * hidden, run.input_size});
  run.r = read(kR, "R", {dirs, gates * hidden, hidden});
  run.b = read(kB, "B", {dirs, 2 * gates * hidden});
  run.initial_h = read(kInitialH, "initial_h", run.state_shape());
  if (has_cell) {
    run.initial_c = read(kInitialC, "initial_c", run.state_shape());
    run.p = read(kP, "P", {dirs, 3 * hidden});
  }

  if (has_activation_quant(node)) {
    run.quant = activation_quant(node);
    if (run.dtype != DType::kFloat32) {
      context.fail(cat("activation quantization needs float32 X, not ",
                       dtype_onnx_name(run.dtype)));
    }
    // Each row of X, fake-quantized with its own (dynamic) or the static coefficients.
    Tensor quantized(DType::kFloat32, run.x.shape());
    const float* in = run.x.data<float>();
    float* out = quantized.data<float>();
    for (int64_t row = 0; row < run.seq_length * run.batch_size; ++row) {
      const float* x_row = in + row * run.input_size;
      fake_quantize_row(x_row, run.input_size, run.row_quant(x_row, run.input_size, false),
                        *run.quant, out + row * run.input_size);
    }
    run.x = std::move(quantized);
  }

  run.sequence_lens.assign(static_cast<size_t>(run.batch_size), run.seq_length);
  if (context.has_input(kSequenceLens)) {
    const Tensor& lens = context.input(kSequenceLens);
    if (!is_integer(lens.dtype())) {
      context.fail(cat("input 'sequence_lens' has element type ", dtype_onnx_name(lens.dtype()),
                       ", expected int32"));
    }
    if (lens.shape() != std::vector<int64_t>{run.batch_size}) {
      context.fail_input(cat("input 'sequence_lens' has shape ", shape_text(lens.shape()),
                             ", expected [", run.batch_size, "] (batch_size)"));
    }
    for (int64_t batch = 0; batch < run.batch_size; ++batch) {
      int64_t length = lens.get_int64(batch);
      if (length < 0 || length > run.seq_length) {
        context.fail_input(cat("input 'sequence_lens'[", batch, "] = ", length,
                               ", must be in [0, seq_length = ", run.seq_length, "]"));
      }
      run.sequence_lens[static_cast<size_t>(batch)] = length;
    }
  }
  return run;
}

// One direction's slice of W, R and B, viewed gate by gate: W[gate] is the gate's
// [hidden_size, input_size] block, and B is [Wb[gates], Rb[gates]].
template <typename T>
struct DirectionWeights {
  const T* w;  // [gates * hidden_size, input_size]
  const T* r;  // [gates * hidden_size, hidden_size]
  const T* b;  // [2 * gates * hidden_size]
  int64_t gates, input_size, hidden_size;

  DirectionWeights(const RecurrentRun& run, int64_t d, int64_t num_gates)
      : w(run.w.data<T>() + d * num_gates * run.hidden_size * run.input_size),
        r(run.r.data<T>() + d * num_gates * run.hidden_size * run.hidden_size),
        b(run.b.data<T>() + d * 2 * num_gates * run.hidden_size),
        gates(num_gates),
        input_size(run.input_size),
        hidden_size(run.hidden_size) {}

  // Xt*(W_gate^T) + Wb_gate, unit j, in double.
  double input_term(int64_t gate, int64_t j, const T* x) const {
    const T* row = w + (gate * hidden_size + j) * input_size;
    double sum = b[gate * hidden_size + j];
    for (int64_t k = 0; k < input_size; ++k) sum += static_cast<double>(x[k]) * row[k];
    return sum;
  }
  // h*(R_gate^T) + Rb_gate, unit j, in double.
  double recurrent_term(int64_t gate, int64_t j, const T* h) const {
    const T* row = r + (gate * hidden_size + j) * hidden_size;
    double sum = b[(gates + gate) * hidden_size + j];
    for (int64_t k = 0; k < hidden_size; ++k) sum += static_cast<double>(h[k]) * row[k];
    return sum;
  }
};

// Runs `step(d, Xt, state)` over each batch entry's valid steps of each direction, writing the
// hidden state (state[0]) to Y after each step and the final states to the state outputs.
// `state` holds one vector per carried state (H, or H and C), starting from the initial ones.
template <typename T, typename Step>
void run_directions(const RecurrentRun& run, const std::vector<const Tensor*>& initial_states,
                    Tensor& y, std::vector<Tensor*> final_states, Step&& step) {
  const T* x = run.x.data<T>();
  const int64_t hidden = run.hidden_size;
  for (int64_t d = 0; d < run.num_directions; ++d) {
    for (int64_t batch = 0; batch < run.batch_size; ++batch) {
      std::vector<std::vector<T>> state;
      for (const Tensor* initial : initial_states) {
        const T* start = initial->data<T>() + run.state_offset(d, batch);
        state.emplace_back(start, start + hidden);
      }
      const int64_t length = run.sequence_lens[static_cast<size_t>(batch)];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = run.reverse[static_cast<size_t>(d)] ? length - 1 - s : s;
        step(d, x + run.x_offset(t, batch), state);
        std::copy(state[0].begin(), state[0].end(), y.data<T>() + run.y_offset(t, d, batch));
      }
      for (size_t k = 0; k < state.size(); ++k) {
        std::copy(state[k].begin(), state[k].end(),
                  final_states[k]->data<T>() + run.state_offset(d, batch));
      }
    }
  }
}

// Assigns the outputs the node has, narrowed back to the model's element type.
void set_outputs(KernelContext& context, const RecurrentRun& run, const std::vector<Tensor>& outs) {
  for (size_t i = 0; i < outs.size() && i < context.outputs.size(); ++i) {
    context.outputs[i] = narrow_to(outs[i], run.dtype);
  }
}

// ---- LSTM --------------------------------------------------------------------------------------

// Gate blocks in W, R and B: i, o, f, c; in P: i, o, f.
constexpr int64_t kLstmI = 0, kLstmO = 1, kLstmF = 2, kLstmC = 3;

void lstm(KernelContext& context) {
  RecurrentRun run = read_recurrent(context, 4, {"Sigmoid", "Tanh", "Tanh"}, /*has_cell=*/true);
  const bool input_forget = context.node.attr_int("input_forget", 0) != 0;
  const int64_t hidden = run.hidden_size;
  const DType compute = run.x.dtype();
  Tensor y(compute, run.y_shape()), y_h(compute, run.state_shape()),
      y_c(compute, run.state_shape());

  dispatch_float(compute, context, [&](auto type_tag) {
    using T = decltype(type_tag);
    // One time step of direction d; the variables are named as in the spec's equations.
    auto lstm_step = [&](int64_t d, const T* Xt, std::vector<std::vector<T>>& state) {
      const DirectionWeights<T> weights(run, d, 4);
      const T* Pi = run.p.data<T>() + (d * 3 + kLstmI) * hidden;
      const T* Po = run.p.data<T>() + (d * 3 + kLstmO) * hidden;
      const T* Pf = run.p.data<T>() + (d * 3 + kLstmF) * hidden;
      const Activation& f = run.activations[static_cast<size_t>(3 * d)];
      const Activation& g = run.activations[static_cast<size_t>(3 * d + 1)];
      const Activation& h = run.activations[static_cast<size_t>(3 * d + 2)];
      const std::vector<T>& H = state[0];  // Ht-1
      const std::vector<T>& C = state[1];  // Ct-1
      const std::vector<T> H_operand = run.product_operand(H);
      // activation(clip(Xt*(W^T) + Ht-1*(R^T) + Wb + Rb + peephole)) for unit j of `gate`.
      auto gate_unit = [&](const Activation& activation, int64_t gate, int64_t j, double peephole) {
        double pre =
            weights.input_term(gate, j, Xt) + weights.recurrent_term(gate, j, H_operand.data());
        return activation(run.clipped(static_cast<T>(pre + peephole)));
      };
      std::vector<T> it(hidden), ft(hidden), ct(hidden), Ct(hidden), ot(hidden), Ht(hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        // it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)
        it[j] = gate_unit(f, kLstmI, j, double{Pi[j]} * C[j]);
        // ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf); input_forget: ft = 1 - it
        ft[j] = input_forget ? T(1) - it[j] : gate_unit(f, kLstmF, j, double{Pf[j]} * C[j]);
        // ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)
        ct[j] = gate_unit(g, kLstmC, j, 0.0);
        // Ct = ft (.) Ct-1 + it (.) ct
        Ct[j] = ft[j] * C[j] + it[j] * ct[j];
        // ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)
        ot[j] = gate_unit(f, kLstmO, j, double{Po[j]} * Ct[j]);
        // Ht = ot (.) h(Ct)
        Ht[j] = ot[j] * h(Ct[j]);
      }
      state = {Ht, Ct};
    };
    run_directions<T>(run, {&run.initial_h, &run.initial_c}, y, {&y_h, &y_c}, lstm_step);
  });
  set_outputs(context, run, {y, y_h, y_c});
}

// ---- GRU ---------------------------------------------------------------------------------------

// Gate blocks in W, R and B: z, r, h.
constexpr int64_t kGruZ = 0, kGruR = 1, kGruH = 2;

void gru(KernelContext& context) {
  RecurrentRun run = read_recurrent(context, 3, {"Sigmoid", "Tanh"}, /*has_cell=*/false);
  const bool linear_before_reset = context.node.attr_int("linear_before_reset", 0) != 0;
  const int64_t hidden = run.hidden_size;
  const DType compute = run.x.dtype();
  Tensor y(compute, run.y_shape()), y_h(compute, run.state_shape());

  dispatch_float(compute, context, [&](auto type_tag) {
    using T = decltype(type_tag);
    // One time step of direction d; the variables are named as in the spec's equations.
    auto gru_step = [&](int64_t d, const T* Xt, std::vector<std::vector<T>>& state) {
      const DirectionWeights<T> weights(run, d, 3);
      const Activation& f = run.activations[static_cast<size_t>(2 * d)];
      const Activation& g = run.activations[static_cast<size_t>(2 * d + 1)];
      const std::vector<T>& H = state[0];  // Ht-1
      const std::vector<T> H_operand = run.product_operand(H);
      auto activate = [&](const Activation& activation, double pre) {
        return activation(run.clipped(static_cast<T>(pre)));
      };
      std::vector<T> zt(hidden), rt(hidden), ht(hidden), Ht(hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        // zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)
        zt[j] = activate(
            f, weights.input_term(kGruZ, j, Xt) + weights.recurrent_term(kGruZ, j, H_operand.data()));
        // rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)
        rt[j] = activate(
            f, weights.input_term(kGruR, j, Xt) + weights.recurrent_term(kGruR, j, H_operand.data()));
      }
      std::vector<T> reset_H(hidden);  // rt (.) Ht-1
      for (int64_t j = 0; j < hidden; ++j) reset_H[j] = rt[j] * H[j];
      const std::vector<T> reset_H_operand = run.product_operand(reset_H);
      for (int64_t j = 0; j < hidden; ++j) {
        if (linear_before_reset) {
          // ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)
          ht[j] = activate(g, weights.input_term(kGruH, j, Xt) +
                                  double{rt[j]} * weights.recurrent_term(kGruH, j, H_operand.data()));
        } else {
          // ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)
          ht[j] = activate(g, weights.input_term(kGruH, j, Xt) +
                                  weights.recurrent_term(kGruH, j, reset_H_operand.data()));
        }
        // Ht = (1 - zt) (.) ht + zt (.) Ht-1
        Ht[j] = (T(1) - zt[j]) * ht[j] + zt[j] * H[j];
      }
      state = {Ht};
    };
    run_directions<T>(run, {&run.initial_h}, y, {&y_h}, gru_step);
  });
  set_outputs(context, run, {y, y_h});
}

// ---- RNN ---------------------------------------------------------------------------------------

void rnn(KernelContext& context) {
  RecurrentRun run = read_recurrent(context, 1, {"Tanh"}, /*has_cell=*/false);
  const int64_t hidden = run.hidden_size;
  const DType compute = run.x.dtype();
  Tensor y(compute, run.y_shape()), y_h(compute, run.state_shape());

  dispatch_float(compute, context, [&](auto type_tag) {
    using T = decltype(type_tag);
    // One time step of direction d; the variables are named as in the spec's equations.
    auto rnn_step = [&](int64_t d, const T* Xt, std::vector<std::vector<T>>& state) {
      const DirectionWeights<T> weights(run, d, 1);
      const Activation& f = run.activations[static_cast<size_t>(d)];
      const std::vector<T>& H = state[0];  // Ht-1
      const std::vector<T> H_operand = run.product_operand(H);
      std::vector<T> Ht(hidden);
      for (int64_t j = 0; j < hidden; ++j) {
        // Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
        double pre = weights.input_term(0, j, Xt) + weights.recurrent_term(0, j, H_operand.data());
        Ht[j] = f(run.clipped(static_cast<T>(pre)));
      }
      state = {Ht};
    };
    run_directions<T>(run, {&run.initial_h}, y, {&y_h}, rnn_step);
  });
  set_outputs(context, run, {y, y_h});
}

}  // namespace

void register_recurrent_kernels(std::map<std::string, Kernel>& registry) {
  registry["LSTM"] = lstm;
  registry["GRU"] = gru;
  registry["RNN"] = rnn;
}

}  // namespace rnnc
