// einsum-to-matmul on the reference interpreter: each einsum, rewritten into reshapes,
// transposes, reduce_sum, matmul and mul, gives the einsum's outputs on random data: f32 within
// a few roundings (the einsum and matmul both sum in double and round once, in their own order;
// a label summed in one operand rounds once more), i32 exactly, products and sums wrapping
// around; i32 einsums that would be matmuls stay einsums. The rewrites themselves are checked by
// tests/ir/einsum_to_matmul.kir.
#include "passes/einsum_to_matmul.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "ir/verifier.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::op_test {
namespace {

struct EinsumCase {
  std::string equation;
  std::vector<Shape> shapes;
  bool matmul;  // whether a label is summed in both operands: a matmul
};

const std::vector<EinsumCase> kCases = {
    {"bhqd,bhkd->bhqk", {{2, 3, 4, 5}, {2, 3, 6, 5}}, true},  // attention scores
    {"bhqk,bhkd->bhqd", {{2, 3, 4, 6}, {2, 3, 6, 5}}, true},  // attention context
    {"ij,jk->ik", {{3, 5}, {5, 4}}, true},                    // matrix product
    {"ij,kj->ik", {{3, 5}, {4, 5}}, true},                    // B transposed
    {"bij,bjk->bik", {{2, 3, 5}, {2, 5, 4}}, true},           // batched
    {"bij,bjk->ibk", {{2, 3, 5}, {2, 5, 4}}, true},           // output transposed
    {"bkd,bqd->bqk", {{2, 6, 5}, {2, 4, 5}}, true},           // operands swapped
    {"bhkd,bhqd->bqk", {{2, 3, 6, 5}, {2, 3, 4, 5}}, true},   // two labels summed
    {"abc,cd->da", {{2, 3, 4}, {4, 5}}, true},                // summed in A, swapped
    {"bij,bjkl->bi", {{2, 3, 5}, {2, 5, 4, 3}}, true},        // summed in B only
    {"i,i", {{7}, {7}}, true},                                // implicit inner product
    {"ij,jk", {{3, 5}, {5, 4}}, true},                        // implicit output
    {"bij,bjk->bik", {{1, 3, 5}, {2, 5, 4}}, true},           // a batch label broadcast
    {"...ij,jk->...ik", {{2, 3, 4, 5}, {5, 6}}, true},        // "..." rows
    {"...ij,...jk->...ik", {{2, 1, 3, 5}, {4, 5, 6}}, true},  // "..." broadcast
    {"i,j->ij", {{3}, {4}}, false},                           // outer product
    {"bi,bi->bi", {{2, 3}, {2, 3}}, false},                   // elementwise product
    {",ij->ij", {{}, {3, 4}}, false},                         // a scalar operand
    {"ij,jk->ik", {{3, 1}, {5, 4}}, false},                   // a summed label broadcast
    {"ij->ji", {{3, 5}}, false},                              // transpose
    {"bij->jb", {{2, 3, 5}}, false},                          // sum and transpose
    {"ij->", {{3, 5}}, false},                                // sum of all
    {"ij->ij", {{3, 5}}, false},                              // copy
    {"->", {{}}, false},                                      // scalar copy
};

Tensor random_tensor(DType dtype, const Shape& shape, std::mt19937& random) {
  Tensor tensor(dtype, shape);
  if (dtype == DType::kF32) {
    std::normal_distribution<float> normal;
    for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] = normal(random);
  } else {  // i32 spanning its range, so products and sums wrap around
    std::uniform_int_distribution<int32_t> uniform(-(1 << 30), 1 << 30);
    for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<int32_t>()[i] = uniform(random);
  }
  return tensor;
}

std::unique_ptr<Graph> einsum_graph(const EinsumCase& test_case, DType dtype) {
  auto graph = std::make_unique<Graph>();
  std::vector<Value*> operands;
  for (size_t k = 0; k < test_case.shapes.size(); ++k) {
    operands.push_back(graph->add_input("x" + std::to_string(k), {dtype, test_case.shapes[k]}));
  }
  Node* einsum = graph->add_node("einsum", operands, {{"equation", test_case.equation}});
  einsum->result()->set_name("y");
  graph->set_outputs({einsum->result()});
  return graph;
}

void expect_same_outputs_after_rewrite(const EinsumCase& test_case, DType dtype) {
  SCOPED_TRACE(test_case.equation + " in " + std::string(dtype_name(dtype)));
  std::mt19937 random(5);
  std::vector<Tensor> inputs;
  for (const Shape& shape : test_case.shapes) inputs.push_back(random_tensor(dtype, shape, random));
  const Tensor before = run_reference(*einsum_graph(test_case, dtype), inputs)[0];

  std::unique_ptr<Graph> rewritten = einsum_graph(test_case, dtype);
  passes::PassContext context;
  ASSERT_TRUE(passes::EinsumToMatmul().run(*rewritten, context));
  verify_graph(*rewritten);
  EXPECT_TRUE(context.refusals.empty());
  const std::vector<std::string> ops = node_ops(*rewritten);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "einsum"), 0);
  EXPECT_EQ(rewritten->outputs()[0]->name(), "y");
  const Tensor after = run_reference(*rewritten, inputs)[0];

  ASSERT_EQ(after.shape(), before.shape());
  if (dtype != DType::kF32) {
    EXPECT_TRUE(after.same_contents(before));
    return;
  }
  for (int64_t i = 0; i < before.num_elements(); ++i) {
    const float want = before.data<float>()[i];
    EXPECT_NEAR(after.data<float>()[i], want, 1e-5f * (1.0f + std::abs(want))) << "element " << i;
  }
}

TEST(EinsumToMatmulTest, F32RewritesGiveTheEinsumsOutputs) {
  for (const EinsumCase& test_case : kCases) {
    expect_same_outputs_after_rewrite(test_case, DType::kF32);
  }
}

TEST(EinsumToMatmulTest, I32RewritesGiveTheEinsumsOutputsExactly) {
  for (const EinsumCase& test_case : kCases) {
    if (!test_case.matmul) expect_same_outputs_after_rewrite(test_case, DType::kI32);
  }
}

TEST(EinsumToMatmulTest, I32ProductsSummedInBothOperandsStayEinsums) {
  for (const EinsumCase& test_case : kCases) {
    if (!test_case.matmul) continue;
    SCOPED_TRACE(test_case.equation);
    std::unique_ptr<Graph> graph = einsum_graph(test_case, DType::kI32);
    passes::PassContext context;
    EXPECT_FALSE(passes::EinsumToMatmul().run(*graph, context));
    EXPECT_EQ(context.refusals,
              (std::vector<std::string>{"einsum-to-matmul: einsum producing %y: the contraction "
                                        "kernels would sum its i32 products in f32"}));
  }
}

}  // namespace
}  // namespace kiln::op_test
