// In-place updates (ExecutionBlock::in_place_input, runtime/executor.cc): a ScatterND whose data
// no other block reads takes the data's buffer and writes only its slices, handing its previous
// output back to the data's producer to recycle. The two buffers then alternate between runs, and
// the result is always the buffer the producer wrote in that run: no copy of the data is made.
// When another block also reads the data, the ScatterND copies it into its own buffer, which stays
// the same from run to run. Values are compared with the reference evaluator bit for bit (the
// blocks only move data; the Relu is exact).
#include <gtest/gtest.h>

#include <vector>

#include "ir/onnx_export.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "rnnc/rnnc.h"

namespace rnnc {
namespace {

// Frames of 3 bins written into rows 0 and 2 of a 4-frame cache computed by a Relu (rows apart:
// graph_opt's fold_cache_updates leaves this ScatterND alone); with `shared`, a Sigmoid reads the
// Relu's output too.
std::unique_ptr<Model> cache_model(bool shared) {
  return parse_model_text(shared ? R"(model opset=13
graph main(%x: f32[4, 3], %frame: f32[2, 3]) {
  const %at: i64[2, 1] = {0, 2}
  %r = Relu 'relu' (%x)
  %y = ScatterND 'write' (%r, %at, %frame)
  %s = Sigmoid 'other_reader' (%r)
  return %y, %s
})"
                                 : R"(model opset=13
graph main(%x: f32[4, 3], %frame: f32[2, 3]) {
  const %at: i64[2, 1] = {0, 2}
  %r = Relu 'relu' (%x)
  %y = ScatterND 'write' (%r, %at, %frame)
  return %y
})",
                          "cache");
}

// The output's address at each of `runs` runs, its values checked against the reference.
std::vector<const void*> output_addresses(bool shared, int runs) {
  const std::unique_ptr<Model> reference_model = cache_model(shared);
  const std::string bytes = export_onnx_bytes(*cache_model(shared));
  ModelOptions options;
  options.cache_dir = RNNC_MODELS_DIR "/../kernel_cache";
  const auto model = CompiledModel::load_bytes(bytes.data(), bytes.size(), options);
  EXPECT_NE(model->describe().find("copy ScatterND"), std::string::npos) << model->describe();
  Session session = model->new_session();
  std::vector<const void*> addresses;
  for (int run = 0; run < runs; ++run) {
    std::vector<float> x(12), frame(6);
    for (int i = 0; i < 12; ++i) x[i] = static_cast<float>((i * 7 + run) % 11) - 5.0f;
    for (int i = 0; i < 6; ++i) frame[i] = 100.0f + static_cast<float>(run * 6 + i);
    const auto& outputs = session.run({{"x", {ElementType::kFloat32, {4, 3}, x.data()}},
                                       {"frame", {ElementType::kFloat32, {2, 3}, frame.data()}}});
    const Tensor expected =
        evaluate(*reference_model->graph, {{"x", Tensor::from_vector<float>({4, 3}, x)},
                                           {"frame", Tensor::from_vector<float>({2, 3}, frame)}})
            .at(0);
    const float* y = static_cast<const float*>(outputs.at(0).tensor.data);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(y[i], expected.data<float>()[i]) << "run " << run;
    addresses.push_back(outputs.at(0).tensor.data);
  }
  return addresses;
}

TEST(InPlaceUpdate, ScatterNDWritesIntoTheBufferItsProducerFilled) {
  const std::vector<const void*> at = output_addresses(/*shared=*/false, 5);
  // Run r returns the buffer the Relu filled in run r: the Relu recycles the ScatterND's previous
  // output, so two buffers alternate.
  EXPECT_NE(at[1], at[2]);
  EXPECT_EQ(at[1], at[3]);
  EXPECT_EQ(at[2], at[4]);
}

TEST(InPlaceUpdate, ScatterNDCopiesDataAnotherBlockReads) {
  const std::vector<const void*> at = output_addresses(/*shared=*/true, 4);
  // Its own output buffer, recycled every run.
  EXPECT_EQ(at[1], at[2]);
  EXPECT_EQ(at[2], at[3]);
}

}  // namespace
}  // namespace rnnc
