// Special cases "if" and "loop": the nested graphs, built from a small menu over the captured
// outer-scope value `x` once the node exists (Draft::finish_node).
#include <memory>

#include "ir/error.h"
#include "tests/conformance/draft.h"

namespace rnnc::conformance {

namespace {

Attribute graph_attribute(std::shared_ptr<Graph> graph) {
  Attribute attribute;
  attribute.kind = Attribute::Kind::kGraph;
  attribute.g = std::move(graph);
  return attribute;
}

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
      node.set_attr(branch, graph_attribute(body));
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
    node.set_attr("body", graph_attribute(body));
  };
}

}  // namespace

void add_control_flow_special_cases(std::map<std::string, SpecialCase>& table) {
  table["if"] = if_op;
  table["loop"] = loop;
}

}  // namespace rnnc::conformance
