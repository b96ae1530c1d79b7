// Shape specialization (runtime/shape_specializer.h) through the public API: a model whose If and
// shape computations depend on a symbolic dim runs a specialized program from the first run of
// each shape, with results bit for bit those of the generic program (the kernels left after
// folding - Relu or Neg, ReduceMax, Add - are exact in any order), each shape its own program, and
// a stream's state carried across the switches.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ir/onnx_export.h"
#include "ir/text_parser.h"
#include "rnnc/rnnc.h"
#include "tests/runtime/test_models.h"

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

}  // namespace
}  // namespace rnnc
