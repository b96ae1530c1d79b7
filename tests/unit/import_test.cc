// ONNX import: every initializer encoding, external data, graph inputs with initializers, nested
// graphs with outer-scope references, symbolic dims, and each bad-input error with its message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "ir/onnx_export.h"
#include "ir/onnx_import.h"
#include "ir/printer.h"
#include "ir/reference/evaluator.h"
#include "ir/text_parser.h"
#include "tests/support/temp_dir.h"

namespace rnnc {
namespace {

using ::testing::HasSubstr;

onnx::ModelProto empty_model(int opset = 14) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("import_test");
  auto* opset_import = model.add_opset_import();
  opset_import->set_domain("");
  opset_import->set_version(opset);
  model.mutable_graph()->set_name("g");
  return model;
}

void add_tensor_value_info(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                           const std::string& name, int elem_type,
                           const std::vector<std::string>& dims) {
  auto* info = list->Add();
  info->set_name(name);
  auto* tensor_type = info->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(elem_type);
  auto* shape = tensor_type->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else if (!d.empty()) dim->set_dim_param(d);
  }
}

std::unique_ptr<Model> import(const onnx::ModelProto& proto, const std::string& base_dir = "") {
  std::string bytes = proto.SerializeAsString();
  return import_onnx_bytes(bytes.data(), bytes.size(), base_dir);
}

// Imports and expects an rnnc::Error of `kind` whose message contains `text`.
void expect_import_error(const onnx::ModelProto& proto, ErrorKind kind, const std::string& text,
                         const std::string& base_dir = "") {
  try {
    import(proto, base_dir);
    ADD_FAILURE() << "import succeeded, expected an error containing: " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_THAT(e.what(), HasSubstr(text));
  }
}

// A model whose only content is one initializer, also the graph output.
onnx::ModelProto initializer_model(const onnx::TensorProto& tensor) {
  onnx::ModelProto model = empty_model();
  *model.mutable_graph()->add_initializer() = tensor;
  model.mutable_graph()->add_output()->set_name(tensor.name());
  return model;
}

const Tensor& initializer_of(const Model& model) {
  return *model.graph->find_value(model.graph->outputs()[0]->name())->constant();
}

TEST(Import, FloatDataEncoding) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.add_float_data(1.5f);
  t.add_float_data(-2.0f);
  auto model = import(initializer_model(t));
  const Tensor& w = initializer_of(*model);
  EXPECT_EQ(w.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(w.data<float>()[0], 1.5f);
  EXPECT_EQ(w.data<float>()[1], -2.0f);
}

TEST(Import, RawDataEncodingIsLittleEndian) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::INT32);
  t.add_dims(2);
  t.set_raw_data(std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8));
  auto model = import(initializer_model(t));
  EXPECT_EQ(initializer_of(*model).data<int32_t>()[0], 1);
  EXPECT_EQ(initializer_of(*model).data<int32_t>()[1], -1);
}

TEST(Import, Int32DataCarriesNarrowTypesAndHalfBits) {
  struct Case {
    int type;
    int32_t stored;
    double expected;
  };
  const Case cases[] = {
      {onnx::TensorProto::INT8, -7, -7},       {onnx::TensorProto::UINT8, 200, 200},
      {onnx::TensorProto::INT16, -300, -300},  {onnx::TensorProto::UINT16, 60000, 60000},
      {onnx::TensorProto::BOOL, 1, 1},         {onnx::TensorProto::FLOAT16, 0x3c00, 1.0},
      {onnx::TensorProto::BFLOAT16, 0xc000, -2.0},
  };
  for (const Case& c : cases) {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(c.type);
    t.add_int32_data(c.stored);
    auto model = import(initializer_model(t));
    EXPECT_EQ(initializer_of(*model).get_double(0), c.expected) << "type " << c.type;
  }
}

TEST(Import, Int64DoubleUint64AndStringEncodings) {
  onnx::TensorProto i64;
  i64.set_name("w");
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_int64_data(int64_t{1} << 40);
  EXPECT_EQ(initializer_of(*import(initializer_model(i64))).data<int64_t>()[0], int64_t{1} << 40);

  onnx::TensorProto f64;
  f64.set_name("w");
  f64.set_data_type(onnx::TensorProto::DOUBLE);
  f64.add_double_data(0.1);
  EXPECT_EQ(initializer_of(*import(initializer_model(f64))).data<double>()[0], 0.1);

  onnx::TensorProto u32;
  u32.set_name("w");
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(initializer_of(*import(initializer_model(u32))).data<uint32_t>()[0], 4000000000u);

  onnx::TensorProto u64;
  u64.set_name("w");
  u64.set_data_type(onnx::TensorProto::UINT64);
  u64.add_uint64_data(~uint64_t{0});
  EXPECT_EQ(initializer_of(*import(initializer_model(u64))).data<uint64_t>()[0], ~uint64_t{0});

  onnx::TensorProto s;
  s.set_name("w");
  s.set_data_type(onnx::TensorProto::STRING);
  s.add_dims(2);
  s.add_string_data("hello");
  s.add_string_data("");
  auto model = import(initializer_model(s));
  const Tensor& strings = initializer_of(*model);
  EXPECT_EQ(strings.strings()[0], "hello");
  EXPECT_EQ(strings.strings()[1], "");
}

onnx::TensorProto external_tensor(const std::string& location, int64_t offset, int64_t length) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& key, const std::string& value) {
    auto* entry = t.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
  return t;
}

TEST(Import, ExternalDataNextToTheModel) {
  testing::TempDir dir("rnnc_import_test");
  float values[3] = {9.0f, 1.25f, -3.5f};
  std::ofstream(dir.path() + "/weights.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof(values));
  onnx::ModelProto model = initializer_model(external_tensor("weights.bin", 4, 8));
  std::ofstream(dir.path() + "/model.onnx", std::ios::binary) << model.SerializeAsString();
  auto imported = import_onnx_file(dir.path() + "/model.onnx");
  const Tensor& w = initializer_of(*imported);
  EXPECT_EQ(w.data<float>()[0], 1.25f);
  EXPECT_EQ(w.data<float>()[1], -3.5f);
}

TEST(Import, ExternalDataErrorsNameTheTensorAndTheProblem) {
  testing::TempDir dir("rnnc_import_test");
  std::ofstream(dir.path() + "/weights.bin", std::ios::binary) << std::string(8, '\0');
  expect_import_error(initializer_model(external_tensor("weights.bin", 4, 8)),
                      ErrorKind::kInvalidModel, "external data range offset=4 length=8 exceeds",
                      dir.path());
  expect_import_error(initializer_model(external_tensor("missing.bin", 0, 8)), ErrorKind::kIo,
                      "cannot open external data file", dir.path());
  expect_import_error(initializer_model(external_tensor("../etc/passwd", 0, 8)),
                      ErrorKind::kInvalidModel, "must be a relative path inside", dir.path());
  expect_import_error(initializer_model(external_tensor("weights.bin", 0, 8)),
                      ErrorKind::kInvalidModel, "without a base directory");
}

TEST(Import, RawDataOfTheWrongSizeIsRejected) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(2);
  t.set_raw_data(std::string(4, '\0'));
  expect_import_error(initializer_model(t), ErrorKind::kInvalidModel,
                      "initializer 'w': raw_data has 4 bytes, expected 2 elements of float (4 bytes each)");
}

TEST(Import, GraphInputWithInitializerIsAnInputWithADefault) {
  onnx::ModelProto model = empty_model();
  onnx::TensorProto t;
  t.set_name("h0");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.add_float_data(0.5f);
  *model.mutable_graph()->add_initializer() = t;
  add_tensor_value_info(model.mutable_graph()->mutable_input(), "h0", onnx::TensorProto::FLOAT, {"1"});
  model.mutable_graph()->add_output()->set_name("h0");
  auto imported = import(model);
  const Value* h0 = imported->graph->inputs().at(0);
  EXPECT_TRUE(h0->is_graph_input());
  ASSERT_TRUE(h0->is_constant());
  // Omitted at run time: the default is used; given: the given value wins.
  EXPECT_EQ(evaluate(*imported->graph, {})[0].data<float>()[0], 0.5f);
  auto given = evaluate(*imported->graph, {{"h0", Tensor::from_vector<float>({1}, {2.0f})}});
  EXPECT_EQ(given[0].data<float>()[0], 2.0f);
}

TEST(Import, SymbolicDimsSurvive) {
  onnx::ModelProto model = empty_model();
  add_tensor_value_info(model.mutable_graph()->mutable_input(), "x", onnx::TensorProto::FLOAT,
                        {"seq", "batch", "40", ""});
  model.mutable_graph()->add_output()->set_name("x");
  auto imported = import(model);
  EXPECT_EQ(imported->graph->inputs()[0]->type.to_string(), "f32[seq, batch, 40, x_dim3]");
}

// Dims of a model input with neither a size nor a name become symbols of their own (so a run can
// bind them and shape specialization fix them), distinct from each other and from every dim_param
// of the model; an output's or an inner value's unknown dim stays unknown.
TEST(Import, UnknownInputDimsBecomeSymbolsOfTheirOwn) {
  onnx::ModelProto model = empty_model();
  auto* graph = model.mutable_graph();
  add_tensor_value_info(graph->mutable_input(), "input", onnx::TensorProto::FLOAT, {"", ""});
  // "input_dim1" is taken by another input's dim_param; ':' cannot appear in a dim symbol.
  add_tensor_value_info(graph->mutable_input(), "state:0", onnx::TensorProto::FLOAT,
                        {"2", "", "input_dim1"});
  auto* node = graph->add_node();
  node->set_op_type("Add");
  node->set_name("add");
  node->add_input("input");
  node->add_input("input");
  node->add_output("sum");
  add_tensor_value_info(graph->mutable_output(), "sum", onnx::TensorProto::FLOAT, {"", ""});
  graph->add_output()->set_name("state:0");
  auto imported = import(model);
  EXPECT_EQ(imported->graph->inputs()[0]->type.to_string(), "f32[input_dim0, input_dim1_2]");
  EXPECT_EQ(imported->graph->inputs()[1]->type.to_string(), "f32[2, state_0_dim1, input_dim1]");
  // The sum's shape follows from the named input; its declared unknown dims do not name it.
  EXPECT_EQ(imported->graph->outputs()[0]->type.to_string(), "f32[input_dim0, input_dim1_2]");
  std::map<std::string, Tensor> inputs{{"input", Tensor(DType::kFloat32, {1, 3})},
                                       {"state:0", Tensor(DType::kFloat32, {2, 5, 4})}};
  EXPECT_EQ(evaluate(*imported->graph, inputs)[0].shape(), (std::vector<int64_t>{1, 3}));
}

// A graph with a sequence input, an optional input and an optional sequence, each passed
// through Identity to an output.
onnx::ModelProto sequence_and_optional_model() {
  onnx::ModelProto model = empty_model(16);
  auto* graph = model.mutable_graph();
  auto* list = graph->add_input();
  list->set_name("list");
  auto* element = list->mutable_type()->mutable_sequence_type()->mutable_elem_type();
  element->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* maybe = graph->add_input();
  maybe->set_name("maybe");
  auto* maybe_tensor = maybe->mutable_type()->mutable_optional_type()->mutable_elem_type();
  maybe_tensor->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  maybe_tensor->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  auto* maybe_list = graph->add_input();
  maybe_list->set_name("maybe_list");
  *maybe_list->mutable_type()->mutable_optional_type()->mutable_elem_type() = list->type();
  for (const char* name : {"list", "maybe", "maybe_list"}) {
    auto* node = graph->add_node();
    node->set_op_type("Identity");
    node->set_name(std::string("pass_") + name);
    node->add_input(name);
    node->add_output(std::string(name) + "_out");
    graph->add_output()->set_name(std::string(name) + "_out");
  }
  return model;
}

TEST(Import, SequenceAndOptionalTypesSurviveImportAndExport) {
  auto imported = import(sequence_and_optional_model());
  const Graph& graph = *imported->graph;
  EXPECT_EQ(graph.inputs()[0]->type.to_string(), "seq<f32[?rank]>");
  EXPECT_EQ(graph.inputs()[1]->type.to_string(), "opt<i64[n]>");
  EXPECT_EQ(graph.inputs()[2]->type.to_string(), "opt<seq<f32[?rank]>>");
  EXPECT_EQ(graph.outputs()[0]->type.kind, ValueKind::kSequence);
  EXPECT_EQ(graph.outputs()[1]->type.to_string(), "opt<i64[n]>");
  EXPECT_EQ(graph.outputs()[2]->type.kind, ValueKind::kOptionalSequence);
  std::string bytes = export_onnx_bytes(*imported);
  onnx::ModelProto exported;
  ASSERT_TRUE(exported.ParseFromString(bytes));
  EXPECT_TRUE(exported.graph().input(0).type().has_sequence_type());
  EXPECT_TRUE(exported.graph().input(2).type().optional_type().elem_type().has_sequence_type());
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*reloaded), to_text(*imported));
}

TEST(ImportErrors, MapsAndSequencesOfNonTensorsAreUnsupported) {
  onnx::ModelProto model = empty_model();
  auto* input = model.mutable_graph()->add_input();
  input->set_name("table");
  input->mutable_type()->mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
  model.mutable_graph()->add_output()->set_name("table");
  expect_import_error(model, ErrorKind::kUnsupported,
                      "graph 'g' input 'table': type map is not supported (only tensors, "
                      "sequences and optionals)");
  input->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_map_type();
  expect_import_error(model, ErrorKind::kUnsupported,
                      "graph 'g' input 'table': a sequence of map (only sequences of tensors are "
                      "supported)");
}

TEST(ImportErrors, AMainGraphInputNeedsAType) {
  onnx::ModelProto model = empty_model();
  model.mutable_graph()->add_input()->set_name("x");
  model.mutable_graph()->add_output()->set_name("x");
  expect_import_error(model, ErrorKind::kInvalidModel, "graph 'g' input 'x' has no type");
}

TEST(ImportErrors, ATensorOpGivenASequenceIsInvalid) {
  onnx::ModelProto model = sequence_and_optional_model();
  model.mutable_graph()->mutable_node(0)->set_op_type("Relu");
  expect_import_error(model, ErrorKind::kInvalidModel,
                      "Relu 'pass_list' (opset 16): input 0 'list' is seq<f32[?rank]>, but Relu "
                      "takes tensors only");
}

// The evaluator takes and returns sequences and optionals: Identity passes each kind through,
// and a value of the wrong kind for an input is an input error naming it.
TEST(Evaluator, SequenceAndOptionalGraphInputsPassThrough) {
  auto imported = import(sequence_and_optional_model());
  Tensor a = Tensor::from_vector<float>({2}, {1, 2});
  Tensor b = Tensor::from_vector<float>({}, {3});
  std::map<std::string, Tensor> inputs = {
      {"list", Tensor::sequence(DType::kFloat32, {a, b})},
      {"maybe", Tensor::none(DType::kInt64)},
      {"maybe_list", Tensor::sequence(DType::kFloat32, {})}};
  std::vector<Tensor> outputs = evaluate(*imported->graph, inputs);
  ASSERT_EQ(outputs.size(), 3u);
  ASSERT_TRUE(outputs[0].is_sequence());
  ASSERT_EQ(outputs[0].elements().size(), 2u);
  EXPECT_TRUE(outputs[0].elements()[1].bitwise_equal(b));
  EXPECT_TRUE(outputs[1].is_none());
  EXPECT_TRUE(outputs[2].is_sequence());
  EXPECT_TRUE(outputs[2].elements().empty());

  inputs["list"] = a;
  try {
    evaluate(*imported->graph, inputs);
    ADD_FAILURE() << "a tensor was taken for a sequence input";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "input 'list': expected seq<f32[?rank]>, got a tensor");
  }
  inputs["list"] = Tensor::sequence(DType::kInt64, {});
  try {
    evaluate(*imported->graph, inputs);
    ADD_FAILURE() << "a sequence of int64 was taken for a sequence of float";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_STREQ(e.what(), "input 'list': expected element type float, got int64");
  }
}

// A TYPE_PROTO attribute (Optional's 'type', as in ONNX's test_if_opt) keeps its type through
// the IR text and ONNX export, and the model computes the same after both.
TEST(Import, TypeAttributesRoundTripThroughTextAndOnnx) {
  const std::string text = R"(model ir_version=8 opset=16
graph if_opt(%cond: bool[]) {
  %sequence: opt<seq<f32[2]>> = If 'if' (%cond)
    else_branch = graph else_body() {
      %x: f32[2] = Constant 'x' () {value=f32[2] = {1, 2}}
      %else_seq: seq<f32[2]> = SequenceConstruct 'construct' (%x)
      %else_opt: opt<seq<f32[2]>> = Optional 'wrap' (%else_seq)
      return %else_opt: opt<seq<f32[2]>>
    }
    then_branch = graph then_body() {
      %optional_empty: opt<seq<f32[2]>> = Optional 'empty' () {type=type<seq<f32[2]>>}
      return %optional_empty: opt<seq<f32[2]>>
    }
  return %sequence: opt<seq<f32[2]>>
}
)";
  auto parsed = parse_model_text(text, "if_opt.ir");
  const Attribute* type = nullptr;
  for (const auto& node : parsed->graph->nodes().front()->attr_graph("then_branch")->nodes()) {
    type = node->find_attr("type");
  }
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(type->kind, Attribute::Kind::kType);
  EXPECT_EQ(type->tp.to_string(), "seq<f32[2]>");
  std::string printed = to_text(*parsed);
  std::string bytes = export_onnx_bytes(*parsed);
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*reloaded), printed);
  for (bool cond : {false, true}) {
    std::vector<Tensor> a = evaluate(*parsed->graph, {{"cond", Tensor::scalar<bool>(cond)}});
    std::vector<Tensor> b = evaluate(*reloaded->graph, {{"cond", Tensor::scalar<bool>(cond)}});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].is_none(), cond);
    EXPECT_TRUE(a[0].bitwise_equal(b[0]));
  }
}

// A quantized model as ONNX Runtime's quantizer writes one: a uint8 activation input, an int8
// per-axis weight in raw_data, int8 zero points and an int32 bias in int32_data (negative values
// included), through QuantizeLinear, MatMulInteger, Add and DequantizeLinear.
onnx::ModelProto quantized_model() {
  onnx::ModelProto model = empty_model(13);
  auto* graph = model.mutable_graph();
  add_tensor_value_info(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {"batch", "3"});
  add_tensor_value_info(graph->mutable_input(), "a", onnx::TensorProto::UINT8, {"batch", "3"});
  auto initializer = [&](const std::string& name, int type, std::vector<int64_t> dims) {
    onnx::TensorProto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    return t;
  };
  initializer("w_q", onnx::TensorProto::INT8, {3, 2})
      ->set_raw_data(std::string("\x01\xfe\x03\xfc\x05\xfa", 6));  // 1 -2 3 -4 5 -6
  onnx::TensorProto* w_scale = initializer("w_scale", onnx::TensorProto::FLOAT, {2});
  w_scale->add_float_data(0.5f);
  w_scale->add_float_data(0.25f);
  onnx::TensorProto* w_zero = initializer("w_zero", onnx::TensorProto::INT8, {2});
  w_zero->add_int32_data(0);
  w_zero->add_int32_data(-1);
  initializer("x_scale", onnx::TensorProto::FLOAT, {})->add_float_data(0.5f);
  initializer("x_zero", onnx::TensorProto::UINT8, {})->add_int32_data(128);
  onnx::TensorProto* bias = initializer("bias", onnx::TensorProto::INT32, {2});
  bias->add_int32_data(-1000);
  bias->add_int32_data(7);
  auto node = [&](const std::string& op, std::vector<std::string> inputs, const std::string& out) {
    onnx::NodeProto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& input : inputs) n->add_input(input);
    n->add_output(out);
    return n;
  };
  node("QuantizeLinear", {"x", "x_scale", "x_zero"}, "x_q");
  node("MatMulInteger", {"x_q", "w_q", "x_zero", "w_zero"}, "acc");
  node("Add", {"acc", "bias"}, "acc_bias");
  node("MatMulInteger", {"a", "w_q"}, "acc_a");
  onnx::NodeProto* dq = node("DequantizeLinear", {"w_q", "w_scale", "w_zero"}, "w");
  onnx::AttributeProto* axis = dq->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  for (const char* out : {"acc_bias", "acc_a", "w"}) graph->add_output()->set_name(out);
  return model;
}

TEST(Import, QuantizedModelWithInt8Uint8AndInt32Data) {
  auto model = import(quantized_model());
  const Graph& graph = *model->graph;
  EXPECT_EQ(graph.find_value("w_q")->type.to_string(), "i8[3, 2]");
  EXPECT_EQ(graph.find_value("x_q")->type.to_string(), "u8[batch, 3]");
  EXPECT_EQ(graph.outputs()[0]->type.to_string(), "i32[batch, 2]");
  EXPECT_EQ(graph.outputs()[2]->type.to_string(), "f32[3, 2]");
  std::vector<Tensor> out = evaluate(
      graph, {{"x", Tensor::from_vector<float>({1, 3}, {1, -0.5f, 2})},
              {"a", Tensor::from_vector<uint8_t>({1, 3}, {255, 0, 1})}});
  // x / 0.5 + 128 - 128 = [2, -1, 4]; w - [0, -1] = [[1, -1], [3, -3], [5, -5]]:
  // [2 - 3 + 20, -2 + 3 - 20] + bias [-1000, 7].
  EXPECT_EQ(out[0].data<int32_t>()[0], 19 - 1000);
  EXPECT_EQ(out[0].data<int32_t>()[1], -19 + 7);
  // a . w_q columns, no zero points: [255 + 5, -510 - 6].
  EXPECT_EQ(out[1].data<int32_t>()[0], 260);
  EXPECT_EQ(out[1].data<int32_t>()[1], -516);
  // (w_q - w_zero) * scale per column.
  const float* w = out[2].data<float>();
  EXPECT_EQ(std::vector<float>(w, w + 6), (std::vector<float>{0.5f, -0.25f, 1.5f, -0.75f, 2.5f,
                                                               -1.25f}));
  // Export writes the integer initializers back with their types.
  std::string bytes = export_onnx_bytes(*model);
  auto again = import_onnx_bytes(bytes.data(), bytes.size(), "");
  EXPECT_TRUE(again->graph->find_value("w_q")->constant()->bitwise_equal(
      *graph.find_value("w_q")->constant()));
  EXPECT_TRUE(again->graph->find_value("bias")->constant()->bitwise_equal(
      *graph.find_value("bias")->constant()));
}

// If(cond) whose branches return values of the enclosing graph (outer-scope references).
onnx::ModelProto if_model() {
  onnx::ModelProto model = empty_model();
  auto* graph = model.mutable_graph();
  add_tensor_value_info(graph->mutable_input(), "cond", onnx::TensorProto::BOOL, {});
  for (const auto& [name, value] : {std::pair<std::string, float>{"a", 1.0f}, {"b", 2.0f}}) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(1);
    t.add_float_data(value);
    *graph->add_initializer() = t;
  }
  auto* node = graph->add_node();
  node->set_op_type("If");
  node->set_name("choose");
  node->add_input("cond");
  node->add_output("y");
  for (const auto& [attr, source] : {std::pair<std::string, std::string>{"then_branch", "a"},
                                     {"else_branch", "b"}}) {
    auto* attribute = node->add_attribute();
    attribute->set_name(attr);
    attribute->set_type(onnx::AttributeProto::GRAPH);
    attribute->mutable_g()->set_name(attr);
    attribute->mutable_g()->add_output()->set_name(source);
  }
  add_tensor_value_info(graph->mutable_output(), "y", onnx::TensorProto::FLOAT, {"1"});
  return model;
}

TEST(Import, NestedGraphsResolveOuterScopeReferences) {
  auto model = import(if_model());
  const Node& node = *model->graph->nodes().front();
  Graph* then_branch = node.attr_graph("then_branch");
  ASSERT_NE(then_branch, nullptr);
  EXPECT_EQ(then_branch->parent(), model->graph.get());
  EXPECT_EQ(then_branch->outputs()[0], model->graph->find_value("a"));
  EXPECT_EQ(captured_values(*then_branch).size(), 1u);
  auto yes = evaluate(*model->graph, {{"cond", Tensor::scalar<bool>(true)}});
  auto no = evaluate(*model->graph, {{"cond", Tensor::scalar<bool>(false)}});
  EXPECT_EQ(yes[0].data<float>()[0], 1.0f);
  EXPECT_EQ(no[0].data<float>()[0], 2.0f);
}

TEST(Import, TextFormIsStableAndShowsStructure) {
  auto first = to_text(*import(if_model()));
  auto second = to_text(*import(if_model()));
  EXPECT_EQ(first, second);
  EXPECT_THAT(first, HasSubstr("%y: f32[1] = If 'choose' (%cond)"));
  EXPECT_THAT(first, HasSubstr("const %a: f32[1] = {1} #"));
  EXPECT_THAT(first, HasSubstr("then_branch = graph then_branch() {"));
}

TEST(ImportErrors, TruncatedBytes) {
  std::string bytes = if_model().SerializeAsString();
  try {
    import_onnx_bytes(bytes.data(), bytes.size() / 2);
    ADD_FAILURE() << "truncated model imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidModel);
    EXPECT_THAT(e.what(), HasSubstr("model is not a valid ONNX protobuf (truncated or corrupt"));
  }
}

TEST(ImportErrors, MissingFile) {
  try {
    import_onnx_file("/nonexistent/model.onnx");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_THAT(e.what(), HasSubstr("cannot open model file '/nonexistent/model.onnx'"));
  }
}

TEST(ImportErrors, UnknownOperatorNamesTheNode) {
  onnx::ModelProto model = if_model();
  model.mutable_graph()->mutable_node(0)->set_op_type("FancyOp");
  expect_import_error(model, ErrorKind::kUnsupported,
                      "FancyOp 'choose' (opset 14): operator 'FancyOp' is not supported");
}

TEST(ImportErrors, UnsupportedOpset) {
  expect_import_error(if_model().opset_import_size() ? [] {
    onnx::ModelProto model = if_model();
    model.mutable_opset_import(0)->set_version(22);
    return model;
  }() : if_model(), ErrorKind::kUnsupported,
     "default-domain opset 22 is not supported (rnnc supports opsets 1 to 21)");
}

TEST(ImportErrors, UndefinedInputName) {
  onnx::ModelProto model = if_model();
  model.mutable_graph()->mutable_node(0)->set_input(0, "nope");
  expect_import_error(model, ErrorKind::kInvalidModel,
                      "If 'choose' (opset 14): input 0 'nope' is not a graph input, initializer or "
                      "output of any node");
}

TEST(ImportErrors, WrongAttributeType) {
  onnx::ModelProto model = if_model();
  auto* attribute = model.mutable_graph()->mutable_node(0)->mutable_attribute(0);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(3);
  expect_import_error(model, ErrorKind::kInvalidModel,
                      "If 'choose' (opset 14): attribute 'then_branch' has type INT, expected GRAPH");
}

TEST(ImportErrors, InconsistentDeclaredShape) {
  onnx::ModelProto model = if_model();
  auto* dim = model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()
                  ->mutable_shape()->mutable_dim(0);
  dim->set_dim_value(3);
  expect_import_error(model, ErrorKind::kInvalidModel,
                      "If 'choose' (opset 14): output 'y' is declared with dim 3 at axis 0 but the "
                      "op produces 1");
}

TEST(ImportErrors, CycleIsNamed) {
  onnx::ModelProto model = empty_model();
  auto* graph = model.mutable_graph();
  for (const auto& [name, in, out] : {std::tuple<std::string, std::string, std::string>{
                                          "first", "y", "x"},
                                      {"second", "x", "y"}}) {
    auto* node = graph->add_node();
    node->set_op_type("If");
    node->set_name(name);
    node->add_input(in);
    node->add_output(out);
  }
  graph->add_output()->set_name("y");
  expect_import_error(model, ErrorKind::kInvalidModel, "'first' (opset 14): is part of a cycle");
}

TEST(ImportErrors, DuplicateValueName) {
  onnx::ModelProto model = if_model();
  model.mutable_graph()->mutable_node(0)->set_output(0, "a");
  expect_import_error(model, ErrorKind::kInvalidModel, "value name 'a' is defined twice");
}

TEST(ImportErrors, Float8AndFourBitTypesAreUnsupported) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(17);
  expect_import_error(initializer_model(t), ErrorKind::kUnsupported,
                      "initializer 'w': element type float8e4m3fn (data_type 17)");
  onnx::ModelProto model = empty_model();
  add_tensor_value_info(model.mutable_graph()->mutable_input(), "x", 22, {"2"});
  model.mutable_graph()->add_output()->set_name("x");
  expect_import_error(model, ErrorKind::kUnsupported,
                      "graph 'g' input 'x': element type int4 (elem_type 22)");
}

TEST(ImportErrors, BadElementType) {
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(99);
  expect_import_error(initializer_model(t), ErrorKind::kInvalidModel,
                      "initializer 'w': data_type 99 is not a valid ONNX type");
}

TEST(InputErrors, EvaluatorNamesTheInputAndWhatWasExpected) {
  auto model = import(if_model());
  auto expect_input_error = [&](const std::map<std::string, Tensor>& inputs,
                                const std::string& text) {
    try {
      evaluate(*model->graph, inputs);
      ADD_FAILURE() << "expected: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
      EXPECT_THAT(e.what(), HasSubstr(text));
    }
  };
  expect_input_error({}, "input 'cond' (bool[]) is missing");
  expect_input_error({{"cond", Tensor::scalar<float>(1)}},
                     "input 'cond': expected element type bool, got float");
  expect_input_error({{"cond", Tensor::from_vector<bool>({1}, {true})}},
                     "input 'cond': expected rank 0 [], got rank 1");
  expect_input_error({{"cond", Tensor::scalar<bool>(true)}, {"extra", Tensor::scalar<bool>(true)}},
                     "'extra' is not an input of the model (inputs: 'cond')");
}

}  // namespace
}  // namespace rnnc

namespace rnnc {
namespace {

TEST(Export, RoundTripPrintsTheSameIr) {
  auto original = import(if_model());
  std::string bytes = export_onnx_bytes(*original);
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*reloaded), to_text(*original));
}

}  // namespace
}  // namespace rnnc

namespace rnnc {
namespace {

TEST(Export, DemoModelRoundTripsThroughOnnx) {
  auto original = import_onnx_file(RNNC_SOURCE_DIR "/models/demo/lstm_demo.onnx");
  std::string bytes = export_onnx_bytes(*original);
  auto reloaded = import_onnx_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(to_text(*reloaded), to_text(*original));
}

}  // namespace
}  // namespace rnnc
