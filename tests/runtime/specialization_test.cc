// Shape specialization (runtime/shape_specializer.h) through the public API: a model whose If and
// shape computations depend on a symbolic dim runs a specialized program from the first run of
// each shape, with results bit for bit those of the generic program (the kernels left after
// folding - Relu or Neg, ReduceMax, Add - are exact in any order), each shape its own program, and
// a stream's state carried across the switches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ir/onnx_export.h"
#include "ir/text_parser.h"
#include "rnnc/rnnc.h"
#include "tests/runtime/test_models.h"
#include "tests/support/error_message.h"

namespace rnnc {
namespace {

// y = (n > 8 ? Relu(x) : Neg(x)); next = state + max over n of y. Dims batch and n symbolic, or
// with `unnamed` left without a name in the ONNX bytes, as some exporters write dynamic axes.
std::string shape_dependent_model(bool unnamed = false) {
  std::string text = R"(model opset=13
graph main(%x: f32[batch, n], %state: f32[batch, 4]) {
  const %one: i64[] = {1}
  const %eight: i64[] = {8}
  const %axes: i64[1] = {1}
  %shape = Shape 'shape' (%x)
  %n = Gather 'n' (%shape, %one)
  %wide = Greater 'wide' (%n, %eight)
  %y: f32[batch, n] = If 'choose' (%wide)
    else_branch = graph narrow() {
      %a: f32[batch, n] = Neg 'narrow_neg' (%x)
      return %a
    }
    then_branch = graph wide() {
      %b: f32[batch, n] = Relu 'wide_relu' (%x)
      return %b
    }
  %m = ReduceMax 'max' (%y) {axes=[1], keepdims=1}
  %next = Add 'carry' (%state, %m)
  return %y, %next
})";
  if (unnamed) {
    for (const std::string from : {"[batch, n]", "[batch, 4]"}) {
      const std::string to = from == "[batch, n]" ? "[?, ?]" : "[?, 4]";
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from))
        text.replace(at, from.size(), to);
    }
  }
  return export_onnx_bytes(*parse_model_text(text, "shape dependent"));
}

std::shared_ptr<const CompiledModel> load(const std::string& bytes, bool specialize) {
  ModelOptions options;
  options.specialize_shapes = specialize;
  return CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
}

// One chunk through both sessions; their outputs and carried states must be bitwise equal.
void expect_same_chunk(Session& specialized, Session& generic, int64_t batch, int64_t n,
                       unsigned seed) {
  std::vector<float> x = testing::random_vector(batch * n, seed);
  const std::vector<NamedTensor> inputs = {{"x", {ElementType::kFloat32, {batch, n}, x.data()}}};
  const std::vector<NamedTensor>& a = specialized.run(inputs);
  const std::vector<NamedTensor>& b = generic.run(inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].tensor.shape, b[i].tensor.shape) << a[i].name;
    EXPECT_EQ(std::memcmp(a[i].tensor.data, b[i].tensor.data, a[i].tensor.byte_size()), 0)
        << a[i].name << " differs at batch " << batch << ", n " << n;
  }
  const std::vector<NamedTensor> state_a = specialized.state(), state_b = generic.state();
  ASSERT_EQ(state_a.size(), 1u);
  ASSERT_EQ(state_b.size(), 1u);
  EXPECT_EQ(std::memcmp(state_a[0].tensor.data, state_b[0].tensor.data,
                        state_a[0].tensor.byte_size()),
            0);
}

TEST(ShapeSpecialization, EachShapeGetsItsProgramAndStreamsKeepTheirState) {
  const std::string bytes = shape_dependent_model();
  auto model = load(bytes, true);
  auto generic_model = load(bytes, false);
  EXPECT_NE(model->describe().find("reference If"), std::string::npos) << model->describe();
  Session specialized = model->new_session({{"next", "state"}});
  Session generic = generic_model->new_session({{"next", "state"}});
  specialized.set_profiling(true);

  // The first run of a shape compiles its program and runs it.
  expect_same_chunk(specialized, generic, 2, 16, 1);
  EXPECT_NE(model->describe().find("specialized for batch=2, n=16: "), std::string::npos)
      << model->describe();
  EXPECT_EQ(model->describe().find("specialized for batch=2, n=16: generic"), std::string::npos)
      << model->describe();
  EXPECT_NE(specialized.profile_report().find("shape specialization:"), std::string::npos);
  for (unsigned chunk = 2; chunk < 5; ++chunk) expect_same_chunk(specialized, generic, 2, 16, chunk);
  const std::string profile = specialized.profile_report();
  EXPECT_NE(profile.find("shape specialization:"), std::string::npos) << profile;
  // Folded: no If and no Shape block runs in the specialized program.
  const std::string special_part = profile.substr(profile.find("shape specialization:"));
  EXPECT_EQ(special_part.find("If"), std::string::npos) << special_part;
  EXPECT_EQ(special_part.find("Shape"), std::string::npos) << special_part;

  // A second shape (the other branch) gets its own program; the state goes on from the first.
  expect_same_chunk(specialized, generic, 2, 4, 5);
  model->wait_for_specializations();
  for (unsigned chunk = 6; chunk < 9; ++chunk) expect_same_chunk(specialized, generic, 2, 4, chunk);
  EXPECT_NE(model->describe().find("specialized for batch=2, n=4: "), std::string::npos)
      << model->describe();
  // And back to the first shape, its program still there.
  expect_same_chunk(specialized, generic, 2, 16, 9);
}

// Dims without a name in the model are symbols of their own once imported ("x_dim1"), bound by
// runs and specialized like named ones.
TEST(ShapeSpecialization, UnnamedDimsAreSpecializedToo) {
  const std::string bytes = shape_dependent_model(true);
  auto model = load(bytes, true);
  auto generic_model = load(bytes, false);
  const std::string generic_text = generic_model->describe();
  EXPECT_NE(generic_text.find("reducemax [x_dim0, x_dim1]"), std::string::npos) << generic_text;
  Session specialized = model->new_session({{"next", "state"}});
  Session generic = generic_model->new_session({{"next", "state"}});
  specialized.set_profiling(true);
  // Nothing in the model ties the state's first dim to x's, so the first run passes the state.
  std::vector<float> x = testing::random_vector(2 * 16, 1), state(2 * 4, 0.5f);
  const std::vector<NamedTensor> first = {{"x", {ElementType::kFloat32, {2, 16}, x.data()}},
                                          {"state", {ElementType::kFloat32, {2, 4}, state.data()}}};
  const std::vector<NamedTensor>& a = specialized.run(first);
  const std::vector<NamedTensor>& b = generic.run(first);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(std::memcmp(a[0].tensor.data, b[0].tensor.data, a[0].tensor.byte_size()), 0);
  for (unsigned chunk = 2; chunk < 5; ++chunk)
    expect_same_chunk(specialized, generic, 2, 16, chunk);
  const std::string text = model->describe();
  EXPECT_NE(text.find("specialized for x_dim0=2, x_dim1=16, state_dim0=2: "), std::string::npos)
      << text;
  const std::string profile = specialized.profile_report();
  ASSERT_NE(profile.find("shape specialization:"), std::string::npos) << profile;
  const std::string special_part = profile.substr(profile.find("shape specialization:"));
  EXPECT_EQ(special_part.find("If"), std::string::npos) << special_part;
  expect_same_chunk(specialized, generic, 2, 4, 5);
}

// Under kAuto with 2 threads (plans chosen per shape between sequential and the overlapping plan)
// a shape still gets its program: it runs sequentially, outside kAuto's duels, and equals the
// generic program bit for bit.
TEST(ShapeSpecialization, TwoThreadsUnderAutoPlanRunSpecialized) {
  const std::string bytes = shape_dependent_model();
  ModelOptions options;
  options.threads = 2;
  options.plan = Plan::kAuto;
  auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  ASSERT_EQ(model->plan(), Plan::kAuto) << "two candidate plans, chosen per shape";
  auto generic_model = load(bytes, false);
  Session specialized = model->new_session({{"next", "state"}});
  Session generic = generic_model->new_session({{"next", "state"}});
  specialized.set_profiling(true);
  for (unsigned chunk = 1; chunk < 6; ++chunk) expect_same_chunk(specialized, generic, 3, 16, chunk);
  EXPECT_NE(model->describe().find("specialized for batch=3, n=16: "), std::string::npos)
      << model->describe();
  const std::string profile = specialized.profile_report();
  ASSERT_NE(profile.find("shape specialization:"), std::string::npos) << profile;
  EXPECT_EQ(profile.substr(profile.find("shape specialization:")).find("If"), std::string::npos)
      << profile;
  EXPECT_EQ(specialized.last_plan(), Plan::kSequential);
}

TEST(ShapeSpecialization, BeyondTheBoundNewShapesRunGeneric) {
  const std::string bytes = shape_dependent_model();
  ModelOptions options;
  options.max_specialized_shapes = 1;
  auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  auto generic_model = load(bytes, false);
  Session specialized = model->new_session({{"next", "state"}});
  Session generic = generic_model->new_session({{"next", "state"}});
  for (int64_t n : {16, 4}) {
    expect_same_chunk(specialized, generic, 1, n, static_cast<unsigned>(n));
    model->wait_for_specializations();
    expect_same_chunk(specialized, generic, 1, n, static_cast<unsigned>(n + 1));
  }
  const std::string text = model->describe();
  EXPECT_NE(text.find("specialized for batch=1, n=16"), std::string::npos) << text;
  EXPECT_EQ(text.find("n=4"), std::string::npos) << text;
}

// y = (rate == 16000 ? Relu(x) : Neg(x)): the If on a scalar input left in (Silero's sample rate
// when the caller fixes nothing).
std::string rate_model() {
  auto model = parse_model_text(R"(model opset=13
graph main(%x: f32[batch, n], %rate: i64[]) {
  const %wide_rate: i64[] = {16000}
  %is_wide = Equal 'is_wide' (%rate, %wide_rate)
  %y: f32[batch, n] = If 'choose' (%is_wide)
    else_branch = graph narrow() {
      %a: f32[batch, n] = Neg 'narrow_neg' (%x)
      return %a
    }
    then_branch = graph wide() {
      %b: f32[batch, n] = Relu 'wide_relu' (%x)
      return %b
    }
  return %y
})",
                                "rate");
  return export_onnx_bytes(*model);
}

TEST(ShapeSpecialization, ScalarIntegerInputsAreCompiledIntoTheirOwnPrograms) {
  const std::string bytes = rate_model();
  auto model = load(bytes, true);
  auto generic_model = load(bytes, false);
  Session specialized = model->new_session();
  Session generic = generic_model->new_session();
  for (int64_t rate : {16000, 8000}) {
    for (int chunk = 0; chunk < 3; ++chunk) {
      std::vector<float> x = testing::random_vector(2 * 6, static_cast<unsigned>(rate + chunk));
      const std::vector<NamedTensor> inputs = {
          {"x", {ElementType::kFloat32, {2, 6}, x.data()}},
          {"rate", {ElementType::kInt64, {}, &rate}}};
      const std::vector<NamedTensor>& a = specialized.run(inputs);
      const std::vector<NamedTensor>& b = generic.run(inputs);
      EXPECT_EQ(std::memcmp(a[0].tensor.data, b[0].tensor.data, a[0].tensor.byte_size()), 0)
          << "rate " << rate << ", chunk " << chunk;
      model->wait_for_specializations();
    }
  }
  const std::string text = model->describe();
  EXPECT_NE(text.find("specialized for batch=2, n=6, rate=16000: "), std::string::npos) << text;
  EXPECT_NE(text.find("specialized for batch=2, n=6, rate=8000: "), std::string::npos) << text;
  EXPECT_EQ(text.find(": generic"), std::string::npos) << text;
}

TEST(ShapeSpecialization, ModelsWithoutShapeComputationsKeepOneProgram) {
  // A stacked LSTM computes nothing on shapes: no specializer, nothing compiled per shape.
  auto model = testing::load_stack("LSTM", 2, 16, 8);
  Session session = model->new_session();
  std::vector<float> x = testing::random_vector(5 * 8, 1);
  session.run({{"x", {ElementType::kFloat32, {5, 1, 8}, x.data()}}});
  model->wait_for_specializations();
  EXPECT_EQ(model->describe().find("specialized for"), std::string::npos) << model->describe();
}

// next = fold(max over n of x) + sum(state): the [rows, 1] maximum expanded to [rows, 4] and
// reshaped to [2 rows, 2], by an If on rows == 1 (Silero VAD v5 squeezes its batch the same way)
// and a target shape computed from x's shape. The state's rows have a name of their own ('sb'),
// and the generic program cannot type `next`: only once x's dims are fixed do the If and the
// shape arithmetic fold and `next` get its shape.
std::string own_state_dim_model() {
  return export_onnx_bytes(*parse_model_text(R"(model opset=13
graph main(%x: f32[xb, n], %state: f32[sb, 2]) {
  const %zero: i64[] = {0}
  const %one: i64[] = {1}
  const %two: i64[1] = {2}
  const %four: i64[1] = {4}
  const %one_row: i64[2] = {1, 4}
  const %front: i64[1] = {0}
  %shape = Shape 'shape' (%x)
  %rows = Gather 'rows' (%shape, %zero)
  %single = Equal 'single' (%rows, %one)
  %m = ReduceMax 'max' (%x) {axes=[1], keepdims=1}
  %s = ReduceSum 'total' (%state) {keepdims=0}
  %r = Unsqueeze 'rows_1d' (%rows, %front)
  %grown = If 'grow' (%single)
    else_branch = graph many_rows() {
      %target = Concat 'target' (%r, %four) {axis=0}
      %b = Expand 'expand_many' (%m, %target)
      return %b
    }
    then_branch = graph single_row() {
      %a = Expand 'expand_one' (%m, %one_row)
      return %a
    }
  %doubled = Mul 'doubled' (%r, %two)
  %folded_shape = Concat 'folded_shape' (%doubled, %two) {axis=0}
  %folded = Reshape 'fold' (%grown, %folded_shape)
  %next = Add 'carry' (%folded, %s)
  return %next
})",
                                             "own state dim"));
}

// A state input whose dims no other input binds starts from zeros shaped as the state output the
// model gives for the run's other inputs: decided here only by graph_opt once x's dims are fixed.
TEST(ShapeSpecialization, StateOfItsOwnDimStartsShapedLikeItsOutput) {
  const std::string bytes = own_state_dim_model();
  auto model = load(bytes, true);
  for (int64_t rows : {3, 1}) {
    Session session = model->new_session({{"next", "state"}});
    float sum = 0;  // of the carried state
    for (unsigned chunk = 0; chunk < 3; ++chunk) {
      const int64_t n = 5;
      std::vector<float> x = testing::random_vector(rows * n, 10 * chunk + 1);
      const std::vector<NamedTensor>& out =
          session.run({{"x", {ElementType::kFloat32, {rows, n}, x.data()}}});
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].tensor.shape, (std::vector<int64_t>{2 * rows, 2})) << "chunk " << chunk;
      const float* next = static_cast<const float*>(out[0].tensor.data);
      for (int64_t r = 0; r < rows; ++r) {
        float max = x[static_cast<size_t>(r * n)];
        for (int64_t k = 1; k < n; ++k) max = std::max(max, x[static_cast<size_t>(r * n + k)]);
        for (int64_t c = 0; c < 4; ++c) {
          EXPECT_FLOAT_EQ(next[r * 4 + c], max + sum) << "row " << r << ", chunk " << chunk;
        }
      }
      sum = 0;
      for (int64_t i = 0; i < rows * 4; ++i) sum += next[i];
    }
    ASSERT_EQ(session.state().size(), 1u);
    EXPECT_EQ(session.state()[0].tensor.shape, (std::vector<int64_t>{2 * rows, 2}));
  }
  // Without the specializer nothing infers `next`'s shape: the first run must pass the state.
  auto generic_model = load(bytes, false);
  Session generic = generic_model->new_session({{"next", "state"}});
  std::vector<float> x = testing::random_vector(2 * 5, 1);
  EXPECT_EQ(testing::error_message(
                [&] {
                  generic.run({{"x", {ElementType::kFloat32, {2, 5}, x.data()}}});
                },
                ErrorKind::kInvalidInput),
            "state input 'state' (f32[sb, 2]): dim 0 is decided neither by the other inputs nor "
            "by the shape of state output 'next' for them; pass 'state' explicitly on the first "
            "run");
}

// An LSTM's Y_h takes its batch from X: a model that names initial_h's batch apart from X's
// ('hb', not 'xb') streams from zeros shaped by the program's own type of Y_h, with no
// specializer, bit for bit as a run given those zeros.
TEST(ShapeSpecialization, StateShapedByItsOutputsTypeWithoutASpecializer) {
  auto compiled = load(testing::own_state_dim_lstm_onnx(8, 4, 3), true);
  EXPECT_EQ(compiled->describe().find("specialized for"), std::string::npos);
  // The model's own h and the c it starts from zeros: both carried, both shaped by X's batch.
  const auto& pairs = compiled->recurrent_state();
  EXPECT_NE(
      std::find(pairs.begin(), pairs.end(), std::make_pair(std::string("y_h"), std::string("h"))),
      pairs.end());
  Session streamed = compiled->new_session();
  Session given = compiled->new_session();
  std::vector<float> state(2 * 8, 0.0f);
  for (unsigned chunk = 0; chunk < 3; ++chunk) {
    std::vector<float> xs = testing::random_vector(3 * 2 * 4, chunk + 1);
    const NamedTensor x_in{"x", {ElementType::kFloat32, {3, 2, 4}, xs.data()}};
    const std::vector<NamedTensor>& a = streamed.run({x_in});
    const std::vector<NamedTensor>& b =
        given.run({x_in, {"h", {ElementType::kFloat32, {1, 2, 8}, state.data()}}});
    ASSERT_EQ(a[1].name, "y_h");
    ASSERT_EQ(a[1].tensor.shape, (std::vector<int64_t>{1, 2, 8}));
    ASSERT_EQ(b[1].tensor.shape, a[1].tensor.shape);
    for (size_t o = 0; o < 2; ++o) {
      EXPECT_EQ(std::memcmp(a[o].tensor.data, b[o].tensor.data, a[o].tensor.byte_size()), 0)
          << a[o].name << ", chunk " << chunk;
    }
    const float* next = static_cast<const float*>(b[1].tensor.data);
    state.assign(next, next + 2 * 8);
  }
}

}  // namespace
}  // namespace rnnc
