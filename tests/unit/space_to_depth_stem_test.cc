// The space-to-depth-stem pass (passes/space_to_depth_stem.h) on 16-bit stems with random
// weights, a bias and a ReLU: the reference interpreter's outputs of the rewritten graph (a pad, a
// space_to_depth and a stride-1 conv) equal the original's, of the same shape, for odd and even
// input sizes, odd and even kernels, and asymmetric pads (one that crops a row no output reads).
#include "passes/space_to_depth_stem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ir/verifier.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::passes {
namespace {

struct StemCase {
  const char* name;
  Shape input;  // [N, C, H, W]
  int64_t outputs, kernel_h, kernel_w;
  std::vector<int64_t> pads;  // [top, left, bottom, right]
  DType dtype = DType::kF16;
};

void PrintTo(const StemCase& test_case, std::ostream* out) { *out << test_case.name; }

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& random) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Tensor tensor(dtype, std::move(shape));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_double(i, uniform(random));
  return tensor;
}

// relu(conv(x, w, b)) with stride 2, weights and bias drawn from a generator seeded alike on
// every call.
std::unique_ptr<Graph> stem_graph(const StemCase& test_case) {
  std::mt19937 random(7);
  auto graph = std::make_unique<Graph>("stem");
  Value* x = graph->add_input("x", {test_case.dtype, test_case.input});
  const Shape weights = {test_case.outputs, test_case.input[1], test_case.kernel_h,
                         test_case.kernel_w};
  Value* w = graph->add_constant("w", random_tensor(test_case.dtype, weights, random));
  Value* b = graph->add_constant("b", random_tensor(test_case.dtype, {test_case.outputs}, random));
  Node* conv = graph->add_node("conv", {x, w, b},
                               {{"strides", std::vector<int64_t>{2, 2}}, {"pads", test_case.pads}});
  graph->set_outputs({graph->add_node("relu", {conv->result()})->result()});
  return graph;
}

class SpaceToDepthStemTest : public testing::TestWithParam<StemCase> {};

TEST_P(SpaceToDepthStemTest, ComputesWhatTheStrideTwoConvDoes) {
  const StemCase& test_case = GetParam();
  std::mt19937 random(11);
  const std::vector<Tensor> inputs = {random_tensor(test_case.dtype, test_case.input, random)};
  const Tensor before = run_reference(*stem_graph(test_case), inputs)[0];

  std::unique_ptr<Graph> rewritten = stem_graph(test_case);
  PassContext context;
  context.precision = test_case.dtype == DType::kBF16 ? Precision::kBF16 : Precision::kFP16;
  ASSERT_TRUE(SpaceToDepthStem().run(*rewritten, context));
  verify_graph(*rewritten);
  EXPECT_TRUE(context.refusals.empty());
  EXPECT_EQ(op_test::node_ops(*rewritten),
            (std::vector<std::string>{"pad", "space_to_depth", "conv", "relu"}));
  const Tensor after = run_reference(*rewritten, inputs)[0];

  ASSERT_EQ(after.shape(), before.shape());
  for (int64_t i = 0; i < before.num_elements(); ++i) {
    const double want = before.get_double(i), got = after.get_double(i);
    EXPECT_LE(std::abs(got - want), 1e-5 * std::max(std::abs(want), std::abs(got)))
        << "element " << i << ": " << got << ", want " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Stems, SpaceToDepthStemTest,
    testing::Values(
        // ResNet's 7x7 pads 3 on an odd and an even size: the end pad grows by 1 or 2.
        StemCase{"resnet_odd", {2, 3, 17, 17}, 8, 7, 7, {3, 3, 3, 3}},
        StemCase{"resnet_even", {2, 3, 16, 16}, 8, 7, 7, {3, 3, 3, 3}},
        StemCase{"mobilenet_odd", {2, 3, 17, 17}, 8, 3, 3, {1, 1, 1, 1}},
        StemCase{"mobilenet_even", {2, 3, 16, 16}, 8, 3, 3, {1, 1, 1, 1}},
        StemCase{"asymmetric", {2, 3, 15, 18}, 4, 7, 5, {2, 0, 3, 1}},
        // (9 - 4) is odd: the last row and column are read by no output and cropped.
        StemCase{"even_kernel_crop", {2, 3, 9, 9}, 4, 4, 4, {0, 0, 0, 0}},
        StemCase{"two_by_two", {1, 1, 8, 7}, 4, 2, 2, {1, 0, 0, 1}},
        StemCase{"four_channels_bf16", {2, 4, 11, 12}, 4, 5, 5, {2, 2, 2, 2}, DType::kBF16}),
    [](const testing::TestParamInfo<StemCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln::passes
