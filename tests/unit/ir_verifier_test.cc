// Tests of the IR verifier on graphs built through the API, where the parser's own checks
// cannot stop the mistakes: foreign values, nodes out of order, wrong result types.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

const TensorType kVector{DType::kF32, {2}};

// Each test starts from a graph with one input, %x of type kVector.
class IrVerifier : public ::testing::Test {
 protected:
  // Expects verifying graph_ to throw an InputError whose message contains `message`.
  void expect_verify_error(const std::string& message) {
    try {
      verify_graph(graph_);
      ADD_FAILURE() << "verified without error";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(message), std::string::npos)
          << "message: " << error.what() << "\nexpected to contain: " << message;
    }
  }

  Graph graph_;
  Value* x_ = graph_.add_input("x", kVector);
};

TEST_F(IrVerifier, AcceptsAWellFormedGraph) {
  Value* one = graph_.add_constant("one", Tensor::scalar_f32(1.0f));
  Node* sum = graph_.add_node("add", {x_, one});
  Node* top = graph_.add_node("top_k", {sum->result()}, {{"k", 1}});
  graph_.set_outputs({top->result(0), top->result(1), x_, one});
  EXPECT_NO_THROW(verify_graph(graph_));
}

TEST_F(IrVerifier, RejectsAnOperandFromAnotherGraph) {
  Graph other;
  Value* foreign = other.add_input("foreign", kVector);
  Node* relu = graph_.add_node("relu", {x_}, {}, {"/Relu"});
  relu->set_operand(0, foreign);
  graph_.set_outputs({relu->result()});
  expect_verify_error(
      "relu (onnx: /Relu): operand 0, %foreign (f32[2]), is not defined before "
      "the node");
}

TEST_F(IrVerifier, RejectsAUseBeforeTheDefinition) {
  Node* first = graph_.add_node("relu", {x_});
  Node* second = graph_.add_node("neg", {first->result()});
  second->result()->set_name("later");
  first->set_operand(0, second->result());
  graph_.set_outputs({second->result()});
  expect_verify_error("relu: operand 0, %later (f32[2]), is not defined before the node");
}

TEST_F(IrVerifier, RejectsAResultTypeTheShapeFunctionDisagreesWith) {
  Node* relu = graph_.add_node_with_types("relu", {x_}, {}, {{DType::kF32, {3}}});
  relu->result()->set_name("y");
  graph_.set_outputs({relu->result()});
  expect_verify_error(
      "relu producing %y: result 0 declared f32[3] but shape inference gives "
      "f32[2]");
}

TEST_F(IrVerifier, RejectsAttributesTheSchemaDoesNotAllow) {
  Node* relu = graph_.add_node("relu", {x_});
  relu->mutable_attrs()["alpha"] = 0.5;
  graph_.set_outputs({relu->result()});
  expect_verify_error("relu: unknown attribute 'alpha'");
}

TEST_F(IrVerifier, RejectsAnUndefinedOutput) {
  Graph other;
  Value* foreign = other.add_input("", kVector);
  graph_.set_outputs({foreign});
  expect_verify_error("graph output 0, an unnamed input (f32[2]), is not defined");
}

TEST_F(IrVerifier, RejectsInputsSharingAName) {
  graph_.add_input("x", kVector);  // a second input named like x_
  expect_verify_error("two graph inputs are named 'x'");
}

TEST_F(IrVerifier, SortTopologicallyMovesAppendedProducersBeforeTheirUsers) {
  Node* relu = graph_.add_node("relu", {x_});
  Node* late_producer = graph_.add_node("neg", {x_});
  Node* unrelated = graph_.add_node("abs", {x_});
  relu->set_operand(0, late_producer->result());
  graph_.set_outputs({relu->result(), unrelated->result()});
  graph_.sort_topologically();
  const std::vector<Node*> order = graph_.nodes();
  EXPECT_EQ(order, (std::vector<Node*>{late_producer, relu, unrelated}));
  EXPECT_NO_THROW(verify_graph(graph_));
}

TEST_F(IrVerifier, SortTopologicallyReportsACycle) {
  Node* first = graph_.add_node("relu", {x_});
  Node* second = graph_.add_node("neg", {first->result()});
  first->set_operand(0, second->result());
  graph_.set_outputs({second->result()});
  EXPECT_THROW(graph_.sort_topologically(), InternalError);
}

}  // namespace
}  // namespace kiln
