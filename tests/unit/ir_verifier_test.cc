// Tests of the IR verifier on graphs built through the API, where the parser's own checks
// cannot stop the mistakes: foreign values, nodes out of order, wrong result types.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

const TensorType kVector{DType::kF32, {2}};

void expect_verify_error(const Graph& graph, const std::string& message) {
  try {
    verify_graph(graph);
    ADD_FAILURE() << "verified without error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos)
        << "message: " << error.what() << "\nexpected to contain: " << message;
  }
}

TEST(IrVerifier, AcceptsAWellFormedGraph) {
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Value* one = graph.add_constant("one", Tensor::scalar_f32(1.0f));
  Node* sum = graph.add_node("add", {x, one});
  Node* top = graph.add_node("top_k", {sum->result()}, {{"k", 1}});
  graph.set_outputs({top->result(0), top->result(1), x, one});
  EXPECT_NO_THROW(verify_graph(graph));
}

TEST(IrVerifier, RejectsAnOperandFromAnotherGraph) {
  Graph other;
  Value* foreign = other.add_input("foreign", kVector);
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Node* relu = graph.add_node("relu", {x}, {}, {"/Relu"});
  relu->set_operand(0, foreign);
  graph.set_outputs({relu->result()});
  expect_verify_error(graph,
                      "relu (onnx: /Relu): operand 0, %foreign (f32[2]), is not defined before "
                      "the node");
}

TEST(IrVerifier, RejectsAUseBeforeTheDefinition) {
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Node* first = graph.add_node("relu", {x});
  Node* second = graph.add_node("neg", {first->result()});
  second->result()->set_name("later");
  first->set_operand(0, second->result());
  graph.set_outputs({second->result()});
  expect_verify_error(graph, "relu: operand 0, %later (f32[2]), is not defined before the node");
}

TEST(IrVerifier, RejectsAResultTypeTheShapeFunctionDisagreesWith) {
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Node* relu = graph.add_node_with_types("relu", {x}, {}, {{DType::kF32, {3}}});
  relu->result()->set_name("y");
  graph.set_outputs({relu->result()});
  expect_verify_error(graph,
                      "relu producing %y: result 0 declared f32[3] but shape inference gives "
                      "f32[2]");
}

TEST(IrVerifier, RejectsAttributesTheSchemaDoesNotAllow) {
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Node* relu = graph.add_node("relu", {x});
  relu->mutable_attrs()["alpha"] = 0.5;
  graph.set_outputs({relu->result()});
  expect_verify_error(graph, "relu: unknown attribute 'alpha'");
}

TEST(IrVerifier, RejectsAnUndefinedOutput) {
  Graph other;
  Value* foreign = other.add_input("", kVector);
  Graph graph;
  graph.set_outputs({foreign});
  expect_verify_error(graph, "graph output 0, an unnamed input (f32[2]), is not defined");
}

TEST(IrVerifier, RejectsInputsSharingAName) {
  Graph graph;
  graph.add_input("x", kVector);
  graph.add_input("x", kVector);
  expect_verify_error(graph, "two graph inputs are named 'x'");
}

}  // namespace
}  // namespace kiln
