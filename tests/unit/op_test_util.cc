// Helpers shared by the op unit tests; see op_test_util.h.
#include "op_test_util.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "reference/reference_interpreter.h"

namespace kiln::op_test {
namespace {

// Adds one input per type to `graph`, named x0, x1, ..., and returns them.
std::vector<Value*> add_inputs(Graph& graph, const std::vector<TensorType>& types) {
  std::vector<Value*> inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    inputs.push_back(graph.add_input("x" + std::to_string(i), types[i]));
  }
  return inputs;
}

}  // namespace

Tensor f32_tensor(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector(DType::kF32, std::move(shape), values);
}

Tensor int_tensor(DType dtype, Shape shape, const std::vector<int64_t>& values) {
  return Tensor::from_vector(dtype, std::move(shape), values);
}

Tensor i64_tensor(Shape shape, const std::vector<int64_t>& values) {
  return Tensor::from_vector(DType::kI64, std::move(shape), values);
}

Tensor iota_tensor(DType dtype, Shape shape, double first) {
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_double(i, first + i);
  return tensor;
}

std::vector<Tensor> run_op_results(const std::string& op, const std::vector<Tensor>& inputs,
                                   AttributeMap attrs) {
  std::vector<TensorType> types;
  for (const Tensor& input : inputs) types.push_back(input.type());
  Graph graph;
  Node* node = graph.add_node(op, add_inputs(graph, types), std::move(attrs));
  graph.set_outputs(node->results());
  return run_reference(graph, inputs);
}

Tensor run_op(const std::string& op, const std::vector<Tensor>& inputs, AttributeMap attrs) {
  return run_op_results(op, inputs, std::move(attrs)).at(0);
}

std::string add_node_error(const std::string& op, const std::vector<TensorType>& types,
                           AttributeMap attrs) {
  Graph graph;
  const std::vector<Value*> operands = add_inputs(graph, types);
  try {
    graph.add_node(op, operands, std::move(attrs));
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

std::vector<std::string> node_ops(const Graph& graph) {
  std::vector<std::string> ops;
  for (const Node* node : graph.nodes()) ops.push_back(node->op());
  return ops;
}

void expect_floats_near(const Tensor& actual, const std::vector<float>& expected, float tolerance) {
  const std::vector<float> values = actual.to_floats();
  ASSERT_EQ(values.size(), expected.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(values[i])) << "element " << i;
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(values[i], expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(values[i], expected[i], tolerance) << "element " << i;
    }
  }
}

}  // namespace kiln::op_test
