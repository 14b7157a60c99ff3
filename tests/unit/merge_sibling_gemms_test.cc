// merge-sibling-gemms on the reference interpreter: three sibling products on random data give
// bit-identical outputs before and after the pass, since every output element sums the same
// products in the same order (the kernel's order over K does not depend on N). The sizes cross
// the kernel's blocking: K = 300 spans two 256-deep blocks, and the merged N = 664 spans two
// 512-column blocks with siblings starting inside 32-column panels. The rewrites themselves are
// checked by tests/ir/merge_sibling_gemms.kir.
#include "passes/merge_sibling_gemms.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "ir/verifier.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::op_test {
namespace {

constexpr int64_t kDepth = 300;
const std::vector<int64_t> kColumns = {40, 600, 24};

struct SiblingCase {
  std::string op;      // gemm or matmul
  Shape a_shape;       // [..., kDepth]
  bool transposed_b;   // gemm's transB
  AttributeMap attrs;  // shared by the three siblings
};

Tensor random_tensor(Shape shape, std::mt19937& random) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Tensor tensor(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] = uniform(random);
  return tensor;
}

// Three siblings of the case's op on input %a, with weights (and, for gemm, biases) drawn from a
// generator seeded the same for every call; their results are the outputs %y0, %y1, %y2.
std::unique_ptr<Graph> sibling_graph(const SiblingCase& test_case) {
  std::mt19937 random(7);
  auto graph = std::make_unique<Graph>();
  Value* a = graph->add_input("a", {DType::kF32, test_case.a_shape});
  std::vector<Value*> outputs;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    const int64_t n = kColumns[i];
    const Shape b_shape = test_case.transposed_b ? Shape{n, kDepth} : Shape{kDepth, n};
    std::vector<Value*> operands{
        a, graph->add_constant("w" + std::to_string(i), random_tensor(b_shape, random))};
    if (test_case.op == "gemm") {
      operands.push_back(graph->add_constant("b" + std::to_string(i), random_tensor({n}, random)));
    }
    Node* sibling = graph->add_node(test_case.op, operands, test_case.attrs);
    sibling->result()->set_name("y" + std::to_string(i));
    outputs.push_back(sibling->result());
  }
  graph->set_outputs(outputs);
  return graph;
}

void expect_same_outputs_after_merging(const SiblingCase& test_case) {
  std::mt19937 random(11);
  const Tensor a = random_tensor(test_case.a_shape, random);
  const std::vector<Tensor> before = run_reference(*sibling_graph(test_case), {a});

  std::unique_ptr<Graph> merged = sibling_graph(test_case);
  passes::PassContext context;
  ASSERT_TRUE(passes::MergeSiblingGemms().run(*merged, context));
  verify_graph(*merged);
  EXPECT_EQ(node_ops(*merged), (std::vector<std::string>{test_case.op, "slice", "slice", "slice"}));
  EXPECT_TRUE(context.refusals.empty());
  const std::vector<Tensor> after = run_reference(*merged, {a});

  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(merged->outputs()[i]->name(), "y" + std::to_string(i));
    EXPECT_TRUE(after[i].same_contents(before[i])) << "output y" << i;
  }
}

TEST(MergeSiblingGemmsTest, GemmsWithBiasAlphaAndBetaGiveBitIdenticalOutputs) {
  expect_same_outputs_after_merging({.op = "gemm",
                                     .a_shape = {64, kDepth},
                                     .transposed_b = false,
                                     .attrs = {{"alpha", 0.5}, {"beta", 2.0}}});
}

TEST(MergeSiblingGemmsTest, GemmsWithTransposedWeightsGiveBitIdenticalOutputs) {
  expect_same_outputs_after_merging(
      {.op = "gemm", .a_shape = {64, kDepth}, .transposed_b = true, .attrs = {{"transB", 1}}});
}

TEST(MergeSiblingGemmsTest, MatmulsWithBatchedAGiveBitIdenticalOutputs) {
  expect_same_outputs_after_merging(
      {.op = "matmul", .a_shape = {2, 32, kDepth}, .transposed_b = false, .attrs = {}});
}

}  // namespace
}  // namespace kiln::op_test
