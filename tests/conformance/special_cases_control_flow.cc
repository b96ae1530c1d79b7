// Special cases "if", "loop" and "scan": the nested graphs, built from a small menu over the captured
// outer-scope value `x` once the node exists (Draft::finish_node).
#include <memory>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

// If: each branch computes its first output with one op of the menu on x; a second output, when
// asked for, is x itself.
void if_op(Draft& draft) {
  const std::vector<std::string> menu = {"Identity", "Add", "Mul", "Max"};
  std::string then_op = draft.attr_rng.pick(menu);
  std::string else_op = draft.attr_rng.pick(menu);
  for (auto& output : draft.outputs) output.present = true;
  size_t outputs = draft.outputs.size();
  draft.tags.insert("then=" + then_op);
  draft.tags.insert("else=" + else_op);
  int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* x = graph.find_value("x");
    for (const auto& [branch, op] : {std::pair<std::string, std::string>{"then_branch", then_op},
                                     std::pair<std::string, std::string>{"else_branch", else_op}}) {
      auto body = std::make_shared<Graph>(branch, &graph);
      std::vector<Value*> operands =
          op == "Identity" ? std::vector<Value*>{x} : std::vector<Value*>{x, x};
      Node* first = body->add_node(op, branch + "_op", operands, {branch + "_y0"}, opset);
      body->add_output(first->output(0));
      if (outputs == 2) {
        Node* second = body->add_node("Identity", branch + "_id", {x}, {branch + "_y1"}, opset);
        body->add_output(second->output(0));
      }
      node.set_attr(branch, Attribute::of_graph(body));
    }
  };
}

// Loop(M, cond, v...): body (iteration, cond_in, v...) -> (iteration < k, v + x..., v...).
// M in [0, 5] when given; without M the condition (k) ends the loop.
void loop(Draft& draft) {
  OperandDraft& x = *draft.input("x");
  OperandDraft& trips = *draft.input("M");
  OperandDraft& cond = *draft.input("cond");
  if (!trips.present && !cond.present) trips.present = true;
  if (trips.present) {
    draft.set_data(trips, Tensor::scalar<int64_t>(draft.rng.uniform_int(0, 5)));
  }
  size_t carried = 0;
  for (auto& operand : draft.inputs) {
    if (operand.spec->name == "v_initial") {
      operand.shape = x.shape;
      ++carried;
    }
  }
  int64_t stop = draft.attr_rng.uniform_int(0, 6);
  size_t scans = static_cast<size_t>(draft.attr_rng.uniform_int(0, static_cast<int64_t>(carried)));
  draft.outputs.resize(carried + scans, draft.outputs[0]);
  for (size_t k = 0; k < draft.outputs.size(); ++k) {
    draft.outputs[k].present = true;
    draft.outputs[k].name = cat(k < carried ? "v_final_" : "scan_", k < carried ? k : k - carried);
  }
  draft.tags.insert(cat("carried=", carried));
  draft.tags.insert(cat("scans=", scans));
  DType type = x.dtype;
  std::vector<int64_t> shape = x.shape;
  int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    Value* outer_x = graph.find_value("x");
    auto body = std::make_shared<Graph>("body", &graph);
    Value* iteration =
        body->add_input("body_iteration", TensorType{DType::kInt64, Shape{}, {}});
    body->add_input("body_cond_in", TensorType{DType::kBool, Shape{}, {}});
    Shape dims;
    for (int64_t d : shape) dims.push_back(Dim(d));
    std::vector<Value*> carried_in;
    for (size_t k = 0; k < carried; ++k) {
      carried_in.push_back(body->add_input(cat("body_v", k), TensorType{type, dims, {}}));
    }
    Node* limit = body->add_node("Constant", "body_limit", {}, {"body_k"}, opset);
    Attribute value;
    value.kind = Attribute::Kind::kInt;
    value.i = stop;
    limit->set_attr("value_int", value);
    Node* less = body->add_node("Less", "body_less", {iteration, limit->output(0)},
                                {"body_cond_out"}, opset);
    body->add_output(less->output(0));
    for (size_t k = 0; k < carried; ++k) {
      Node* add = body->add_node("Add", cat("body_add", k), {carried_in[k], outer_x},
                                 {cat("body_v_out", k)}, opset);
      body->add_output(add->output(0));
    }
    for (size_t k = 0; k < scans; ++k) {
      Node* scan = body->add_node("Identity", cat("body_scan", k), {carried_in[k]},
                                  {cat("body_scan_out", k)}, opset);
      body->add_output(scan->output(0));
    }
    node.set_attr("body", Attribute::of_graph(body));
  };
}

// Scan(state, xs): xs is the state's shape with L steps inserted at a random axis (negative half
// the time), read forwards or backwards; body (s, x_t) -> (s + x_t or max(s, x_t), s_out * x_t),
// whose scan output is stacked at a random axis, in either direction.
void scan(Draft& draft) {
  OperandDraft& state = *draft.input("state");
  OperandDraft& xs = *draft.input("xs");
  const int64_t rank = static_cast<int64_t>(state.shape.size());
  const int64_t steps = draft.rng.uniform_int(1, 4);
  int64_t input_axis = draft.attr_rng.uniform_int(0, rank);
  xs.shape = state.shape;
  xs.shape.insert(xs.shape.begin() + input_axis, steps);
  if (draft.attr_rng.uniform_int(0, 1)) input_axis -= rank + 1;
  int64_t output_axis = draft.attr_rng.uniform_int(0, rank);
  if (draft.attr_rng.uniform_int(0, 1)) output_axis -= rank + 1;
  const int64_t input_direction = draft.attr_rng.uniform_int(0, 1);
  const int64_t output_direction = draft.attr_rng.uniform_int(0, 1);
  const std::string op = draft.attr_rng.pick(std::vector<std::string>{"Add", "Max"});
  draft.outputs.resize(2, draft.outputs[0]);
  for (size_t k = 0; k < 2; ++k) {
    draft.outputs[k].present = true;
    draft.outputs[k].name = k == 0 ? "final_state" : "scan_output";
  }
  draft.tags.insert("body=" + op);
  draft.tags.insert(cat("input_axis=", input_axis, input_direction ? " reverse" : ""));
  draft.tags.insert(cat("output_axis=", output_axis, output_direction ? " reverse" : ""));
  const DType type = state.dtype;
  const std::vector<int64_t> shape = state.shape;
  const int opset = draft.opset;
  draft.finish_node = [=](Graph& graph, Node& node) {
    auto body = std::make_shared<Graph>("body", &graph);
    Shape dims;
    for (int64_t d : shape) dims.push_back(Dim(d));
    Value* s = body->add_input("body_s", TensorType{type, dims, {}});
    Value* x = body->add_input("body_x", TensorType{type, dims, {}});
    Node* next = body->add_node(op, "body_next", {s, x}, {"body_s_out"}, opset);
    Node* product =
        body->add_node("Mul", "body_product", {next->output(0), x}, {"body_y"}, opset);
    body->add_output(next->output(0));
    body->add_output(product->output(0));
    node.set_attr("body", Attribute::of_graph(body));
    node.set_attr("num_scan_inputs", Attribute::of_int(1));
    node.set_attr("scan_input_axes", Attribute::of_ints({input_axis}));
    node.set_attr("scan_input_directions", Attribute::of_ints({input_direction}));
    node.set_attr("scan_output_axes", Attribute::of_ints({output_axis}));
    node.set_attr("scan_output_directions", Attribute::of_ints({output_direction}));
  };
}

}  // namespace

void add_control_flow_special_cases(std::map<std::string, SpecialCase>& table) {
  table["if"] = if_op;
  table["loop"] = loop;
  table["scan"] = scan;
}

}  // namespace rnnc::conformance
