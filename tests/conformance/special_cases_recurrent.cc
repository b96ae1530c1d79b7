// Special case "recurrent" (LSTM, GRU, RNN): every operand's shape follows from seq_length,
// batch_size, input_size, hidden_size, the direction and the layout; the activation lists and
// their alpha/beta values are drawn together; sequence_lens mixes 0, full and partial lengths.
#include <algorithm>
#include <cctype>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

struct Activation {
  const char* name;
  bool takes_alpha;
  bool takes_beta;
  Interval alpha;  // the range a drawn alpha comes from
  Interval beta;
};

// The recurrent ops' activation functions (ONNX LSTM/GRU/RNN docs), with value ranges that keep
// each one meaningful (HardSigmoid's slope small enough to have a linear part, ...).
const Activation kActivations[] = {
    {"Relu", false, false, {}, {}},
    {"Tanh", false, false, {}, {}},
    {"Sigmoid", false, false, {}, {}},
    {"Affine", true, true, {-2, 2}, {-1, 1}},
    {"LeakyRelu", true, false, {0.01, 0.5}, {}},
    {"ThresholdedRelu", true, false, {-1, 1}, {}},
    {"ScaledTanh", true, true, {0.5, 2}, {0.5, 2}},
    {"HardSigmoid", true, true, {0.1, 0.5}, {0.3, 0.7}},
    {"Elu", true, false, {0.5, 2}, {}},
    {"Softsign", false, false, {}, {}},
    {"Softplus", false, false, {}, {}},
};

const Activation& find_activation(const std::string& name) {
  for (const Activation& activation : kActivations) {
    if (activation.name == name) return activation;
  }
  RNNC_CHECK(false, "unknown activation ", name);
  return kActivations[0];
}

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// The spelling exporters might use: as in the spec, lower case, upper case or mixed.
std::string random_case(const std::string& name, Rng& rng) {
  switch (rng.uniform_int(0, 3)) {
    case 0:
      return name;
    case 1:
      return lowercase(name);
    case 2: {
      std::string upper = name;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return upper;
    }
    default: {
      std::string mixed = name;
      for (char& c : mixed) {
        if (rng.chance(0.5))
          c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        else
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      return mixed;
    }
  }
}

struct RecurrentShape {
  int gates;        // W/R blocks: LSTM 4, GRU 3, RNN 1
  int activations;  // per direction: LSTM 3, GRU 2, RNN 1
  const char* const* defaults;
};

const char* const kLstmDefaults[] = {"Sigmoid", "Tanh", "Tanh"};
const char* const kGruDefaults[] = {"Sigmoid", "Tanh"};
const char* const kRnnDefaults[] = {"Tanh"};

void draw_activations(Draft& draft, const RecurrentShape& op, int64_t directions) {
  Rng& rng = draft.attr_rng;
  if (!rng.chance(0.6)) return;  // defaults
  std::vector<std::string> names;
  std::vector<const Activation*> chosen;
  bool defaults_only = rng.chance(0.25);  // the default functions, spelled as exporters do
  for (int64_t d = 0; d < directions; ++d) {
    for (int k = 0; k < op.activations; ++k) {
      const Activation& activation =
          defaults_only ? find_activation(op.defaults[k])
                        : kActivations[rng.uniform_int(0, std::size(kActivations) - 1)];
      chosen.push_back(&activation);
      names.push_back(random_case(activation.name, rng));
      draft.tags.insert("act:" + lowercase(activation.name));
    }
  }
  draft.set_strings("activations", names);
  // alpha/beta: a random prefix of the values the activations consume, in order; the rest keep
  // their defaults.
  for (bool alpha : {true, false}) {
    std::vector<const Activation*> takers;
    for (const Activation* activation : chosen) {
      if (alpha ? activation->takes_alpha : activation->takes_beta) takers.push_back(activation);
    }
    if (takers.empty() || rng.chance(0.25)) {
      for (const Activation* activation : takers) {
        draft.tags.insert(
            cat(alpha ? "default_alpha:" : "default_beta:", lowercase(activation->name)));
      }
      continue;
    }
    size_t given = static_cast<size_t>(rng.uniform_int(1, static_cast<int64_t>(takers.size())));
    std::vector<float> values;
    for (size_t k = 0; k < takers.size(); ++k) {
      if (k < given) {
        const Interval& range = alpha ? takers[k]->alpha : takers[k]->beta;
        values.push_back(static_cast<float>(rng.uniform(range.lo, range.hi)));
      } else {
        draft.tags.insert(
            cat(alpha ? "default_alpha:" : "default_beta:", lowercase(takers[k]->name)));
      }
    }
    draft.set_floats(alpha ? "activation_alpha" : "activation_beta", values);
  }
}

void recurrent(Draft& draft) {
  const std::string& op_type = draft.spec.op_type;
  RecurrentShape op = op_type == "LSTM"  ? RecurrentShape{4, 3, kLstmDefaults}
                      : op_type == "GRU" ? RecurrentShape{3, 2, kGruDefaults}
                                         : RecurrentShape{1, 1, kRnnDefaults};
  std::string direction = draft.attr_string("direction", "forward");
  int64_t directions = direction == "bidirectional" ? 2 : 1;
  int64_t layout = draft.attr_int("layout", 0);
  draw_activations(draft, op, directions);

  Rng& rng = draft.rng;
  int64_t seq = rng.uniform_int(1, 6);
  int64_t batch = rng.uniform_int(1, 4);
  int64_t input_size = rng.uniform_int(1, 5);
  int64_t hidden =
      draft.has_attr("hidden_size") ? draft.attr_int("hidden_size", 1) : rng.uniform_int(1, 6);
  if (!draft.has_attr("hidden_size")) draft.tags.insert("hidden_size_omitted");
  if (draft.forced_is(Boundary::kDim1)) {
    switch (rng.uniform_int(0, 2)) {
      case 0:
        seq = 1;
        break;
      case 1:
        batch = 1;
        break;
      default:
        input_size = 1;
        break;
    }
  } else if (draft.forced_is(Boundary::kDimLarge)) {
    if (rng.chance(0.5)) {
      seq = rng.uniform_int(kLargeDim, kLargeDim + 8);
      draft.tags.insert("long_sequence");
    } else {
      input_size = rng.uniform_int(kLargeDim, kLargeDim + 16);
    }
  }

  auto state_shape = [&] {
    return layout == 0 ? std::vector<int64_t>{directions, batch, hidden}
                       : std::vector<int64_t>{batch, directions, hidden};
  };
  draft.input("X")->shape = layout == 0 ? std::vector<int64_t>{seq, batch, input_size}
                                        : std::vector<int64_t>{batch, seq, input_size};
  draft.input("W")->shape = {directions, op.gates * hidden, input_size};
  draft.input("R")->shape = {directions, op.gates * hidden, hidden};
  draft.input("B")->shape = {directions, 2 * op.gates * hidden};
  draft.input("initial_h")->shape = state_shape();
  if (op_type == "LSTM") {
    draft.input("initial_c")->shape = state_shape();
    draft.input("P")->shape = {directions, 3 * hidden};
    if (draft.input_present("P")) draft.tags.insert("peepholes");
  }

  // sequence_lens: mixed lengths, including 0 and the full length when the batch allows.
  OperandDraft& lens = *draft.input("sequence_lens");
  if (lens.present) {
    std::vector<int64_t> values;
    for (int64_t b = 0; b < batch; ++b) {
      double u = rng.uniform(0, 1);
      values.push_back(u < 0.2 ? 0 : u < 0.55 ? seq : rng.uniform_int(1, seq));
    }
    if (batch >= 2) {
      values[static_cast<size_t>(rng.uniform_int(0, batch - 1))] = seq;
    }
    if (batch >= 3 && rng.chance(0.5)) {
      int64_t b = rng.uniform_int(0, batch - 1);
      if (values[static_cast<size_t>(b)] != seq ||
          std::count(values.begin(), values.end(), seq) > 1) {
        values[static_cast<size_t>(b)] = 0;
      }
    }
    draft.set_data(lens, make_int32s(values));
    bool mixed = std::any_of(values.begin(), values.end(), [&](int64_t v) { return v != seq; });
    if (mixed) draft.tags.insert("seq_lens_mixed");
    if (std::count(values.begin(), values.end(), 0)) draft.tags.insert("seq_lens_zero");
  }

  // At least one output, so the node computes something.
  bool any_output = false;
  for (const auto& output : draft.outputs) any_output = any_output || output.present;
  if (!any_output)
    draft.outputs[static_cast<size_t>(rng.uniform_int(0, draft.outputs.size() - 1))].present = true;
}

}  // namespace

void add_recurrent_special_cases(std::map<std::string, SpecialCase>& table) {
  table["recurrent"] = recurrent;
}

}  // namespace rnnc::conformance
