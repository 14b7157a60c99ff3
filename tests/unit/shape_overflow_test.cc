// Tests that huge or degenerate attribute and shape values make shape functions throw
// InputError (never overflow int64, divide by zero or infer an absurdly large result), through
// the IR text parser; plus the checked-arithmetic helpers and kernels run on extreme but valid
// attributes. Built with -DKILN_FUZZ=ON, undefined behaviour here fails the test.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/ops/op_helpers.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "reference/reference_interpreter.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

constexpr const char* kMax = "9223372036854775807";  // INT64_MAX
constexpr const char* kMin = "-9223372036854775808";

// A graph with inputs %x f32[4,9], %x4 f32[1,4,3,3], conv weights %w f32[2,4,1,1] and
// %w3 f32[2,4,3,3], conv_transpose weights %wt f32[4,2,3,3], and one statement `node` (declaring
// a placeholder result type; shape inference runs first).
std::string graph_with(const std::string& node) {
  return "graph @g(%x: f32[4,9], %x4: f32[1,4,3,3], %w: f32[2,4,1,1], %w3: f32[2,4,3,3], "
         "%wt: f32[4,2,3,3]) -> () {\n  %0 = " +
         node + " : f32[1]\n  return\n}\n";
}

// The message of the InputError that parsing `text` throws ("" if it parses).
std::string parse_error(const std::string& text) {
  try {
    parse_graph(text);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

// Expects graph_with(node), with `declared` as the result type, to parse: the shape function
// accepts the node and infers `declared`.
void expect_infers(const std::string& node, const std::string& declared) {
  std::string text = graph_with(node);
  text.replace(text.find(": f32[1]"), 8, ": " + declared);
  EXPECT_EQ(parse_error(text), "") << node;
}

struct OverflowCase {
  std::string node;
  std::string message;
};

// How gtest shows a case (in failure messages and ctest's test names): its node.
void PrintTo(const OverflowCase& overflow_case, std::ostream* out) { *out << overflow_case.node; }

// The case's test name: its index and op, e.g. "3_reshape".
std::string case_name(const ::testing::TestParamInfo<OverflowCase>& info) {
  const std::string& node = info.param.node;
  return std::to_string(info.index) + "_" + node.substr(0, node.find('('));
}

class ShapeOverflowTest : public ::testing::TestWithParam<OverflowCase> {};

TEST_P(ShapeOverflowTest, ThrowsInputError) {
  EXPECT_THAT(parse_error(graph_with(GetParam().node)), HasSubstr(GetParam().message));
}

const std::string max(kMax);
const std::string min(kMin);

INSTANTIATE_TEST_SUITE_P(
    HugeAttributes, ShapeOverflowTest,
    ::testing::Values(
        // tile
        OverflowCase{"tile(%x) {repeats=[" + max + ", 3]}",
                     "output dimension 0 (repeats too large) overflows int64"},
        OverflowCase{"tile(%x) {repeats=[4611686018427387904, 4]}", "overflows int64"},
        OverflowCase{"tile(%x) {repeats=[1099511627776, 1]}",
                     "result 0 [4398046511104,9] has more than 1099511627776 elements"},
        // reshape and expand
        OverflowCase{"reshape(%x) {shape=[" + max + ", " + max + "]}",
                     "shape [9223372036854775807,9223372036854775807] has more than"},
        OverflowCase{"reshape(%x) {shape=[0, " + max + "]}", "has more than 1099511627776"},
        OverflowCase{"expand(%x) {shape=[" + max + ", 1, 1]}", "has more than 1099511627776"},
        // depth_to_space / space_to_depth
        OverflowCase{"depth_to_space(%x4) {blocksize=" + max + "}", "blocksize^2 overflows int64"},
        OverflowCase{"depth_to_space(%x4) {blocksize=0}", "blocksize must be positive"},
        OverflowCase{"space_to_depth(%x4) {blocksize=" + max + "}", "not divisible"},
        // pad
        OverflowCase{"pad(%x) {pads=[" + max + ", 0, 0, 0]}", "has a value beyond"},
        OverflowCase{"pad(%x) {pads=[" + min + ", 0, " + max + ", 0]}", "has a value beyond"},
        OverflowCase{"pad(%x) {pads=[1099511627776, 0, 1099511627776, 0]}",
                     "has more than 1099511627776 elements"},
        OverflowCase{"pad(%x) {pads=[-3, 0, -2, 0]}", "crop axis 0 below zero"},
        // conv / conv_transpose
        OverflowCase{"conv(%x4, %w) {pads=[" + max + ", " + max + ", 0, 0]}",
                     "padded input size in spatial dim 0 overflows int64"},
        OverflowCase{"conv(%x4, %w3) {dilations=[" + max + ", 1]}",
                     "kernel extent in spatial dim 0 overflows int64"},
        OverflowCase{"conv(%x4, %w) {group=" + max + "}", "overflows int64"},
        OverflowCase{"conv(%x4, %w) {strides=[0, 1]}", "must be positive"},
        OverflowCase{"conv(%x4, %w) {pads=[1099511627776, 0, 1099511627776, 0]}",
                     "has more than 1099511627776 elements"},
        OverflowCase{"conv_transpose(%x4, %wt) {strides=[" + max + ", 1]}",
                     "output size in spatial dim 0 overflows int64"},
        OverflowCase{"conv_transpose(%x4, %wt) {output_padding=[" + max + ", 0]}",
                     "overflows int64"},
        OverflowCase{"conv_transpose(%x4, %wt) {pads=[" + max + ", 0, " + max + ", 0]}",
                     "overflows int64"},
        OverflowCase{"conv_transpose(%x4, %wt) {group=" + max + "}", "do not split"},
        // pooling
        OverflowCase{
            "average_pool(%x4) {kernel_shape=[2, 2], pads=[" + max + ", " + max + ", 0, 0]}",
            "padding in spatial dim 0 overflows int64"},
        OverflowCase{"max_pool(%x4) {dilations=[" + max + ", 1], kernel_shape=[2, 2]}",
                     "kernel extent in spatial dim 0 overflows int64"},
        OverflowCase{"max_pool(%x4) {kernel_shape=[2, 2], strides=[0, 1]}", "must be positive"},
        OverflowCase{"max_pool(%x4) {kernel_shape=[" + max + ", 1]}", "exceeds the padded input"},
        OverflowCase{"max_pool(%x4) {kernel_shape=[4194304, 4194304], pads=[4194304, 4194304, "
                     "0, 0], strides=[4194304, 4194304]}",
                     "attribute 'kernel_shape' [4194304,4194304] has more than"},
        // resize
        OverflowCase{"resize(%x) {scales=[1.0, 1e-300], sizes=[4, 1]}",
                     "scales must lie in [2^-64, 2^64]"},
        OverflowCase{"resize(%x) {scales=[1.0, 1e300], sizes=[4, 1]}", "scales must lie in"},
        OverflowCase{"resize(%x) {antialias=1, mode=\"linear\", scales=[1.0, 1e-12], "
                     "sizes=[4, 1000]}",
                     "needs too many taps"},
        OverflowCase{"resize(%x) {scales=[1.0, 1.0], sizes=[4, " + max + "]}",
                     "has more than 1099511627776 elements"},
        OverflowCase{"resize(%x) {scales=[1.0, 1.0], sizes=[-1, 9]}", "cannot resize axis 0"},
        // slice: a step of 0 would divide by zero
        OverflowCase{"slice(%x) {axes=[1], ends=[9], starts=[0], steps=[0]}", "contain 0"}),
    case_name);

// Extreme values that are valid give the right (small) shapes.
TEST(ShapeOverflowValid, ExtremeButValidAttributesInferSmallShapes) {
  expect_infers("slice(%x) {axes=[1], ends=[" + max + "], starts=[0], steps=[" + max + "]}",
                "f32[4,1]");
  expect_infers(
      "slice(%x) {axes=[1], ends=[" + min + "], starts=[" + max + "], steps=[" + min + "]}",
      "f32[4,1]");
  expect_infers("slice(%x) {axes=[1], ends=[" + min + "], starts=[" + max + "], steps=[-2]}",
                "f32[4,5]");
  expect_infers("max_pool(%x4) {ceil_mode=1, kernel_shape=[2, 2], strides=[" + max + ", 1]}",
                "f32[1,4,1,2]");
  expect_infers(
      "max_pool(%x4) {ceil_mode=1, kernel_shape=[1, 1], pads=[4611686018427387904, 0, "
      "0, 0], strides=[" +
          max + ", 1]}",
      "f32[1,4,1,3]");
  expect_infers("lrn(%x4) {size=" + max + "}", "f32[1,4,3,3]");
}

TEST(ShapeOverflowValid, ManyConcatOperandsOverflow) {
  // 33 operands of 2^58 along the axis: the sum passes int64 at the 32nd.
  std::string operands;
  for (int i = 0; i < 33; ++i) operands += std::string(i ? ", " : "") + "%y";
  const std::string text = "graph @g(%y: f32[0,288230376151711744]) -> () {\n  %0 = concat(" +
                           operands + ") {axis=1} : f32[1]\n  return\n}\n";
  EXPECT_THAT(parse_error(text), HasSubstr("concat axis size overflows int64"));
}

TEST(ShapeOverflowValid, BroadcastsBeyondTheLimitAreRejected) {
  const std::string text =
      "graph @g(%a: f32[1048576,1], %b: f32[1,1048576]) -> () {\n"
      "  %0 = add(%a, %b) : f32[1048576,1048576]\n  %1 = einsum(%0, %a) {equation=\"ij,kl->ijkl\"} "
      ": f32[1]\n  return\n}\n";
  EXPECT_THAT(parse_error(text), HasSubstr("result 0 [1048576,1048576,1048576,1] has more than"));
  const std::string matmul =
      "graph @g(%a: f32[1073741824,1,1,1], %b: f32[1,1073741824,1,1]) -> () {\n"
      "  %0 = matmul(%a, %b) : f32[1]\n  return\n}\n";
  EXPECT_THAT(parse_error(matmul), HasSubstr("has more than 1099511627776 elements"));
}

TEST(CheckedArithmetic, ThrowsOnOverflowOnly) {
  EXPECT_EQ(checked_mul(int64_t{1} << 31, int64_t{1} << 31, "x"), int64_t{1} << 62);
  EXPECT_EQ(checked_add(-5, 3, "x"), -2);
  EXPECT_EQ(checked_sub(INT64_MIN + 1, 1, "x"), INT64_MIN);
  EXPECT_THROW(checked_mul(int64_t{1} << 32, int64_t{1} << 31, "x"), InputError);
  EXPECT_THROW(checked_add(INT64_MAX, 1, "x"), InputError);
  EXPECT_THROW(checked_sub(INT64_MIN, 1, "x"), InputError);
  try {
    checked_mul(INT64_MAX, 2, "tile: output dimension 1");
    ADD_FAILURE() << "no throw";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "tile: output dimension 1 overflows int64");
  }
}

TEST(CheckedArithmetic, NumElementsNeverOverflows) {
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({INT64_MAX, INT64_MAX, 0}), 0);
  EXPECT_THROW(num_elements({int64_t{1} << 32, int64_t{1} << 32}), InputError);
  EXPECT_NO_THROW(check_element_count({0, INT64_MAX / 2}, "s", INT64_MAX));
  EXPECT_THROW(check_element_count({int64_t{1} << 20, int64_t{1} << 21}, "s"), InputError);
  EXPECT_THROW(check_element_count({-1}, "s"), InputError);
}

// Kernels on windows whose taps lie far inside the padding (offsets near int64's limits).
TEST(ShapeOverflowKernels, FarPaddingTapsReadAsPadding) {
  const std::string pool =
      "graph @g(%x: f32[1,1,3,3]) -> (f32[1,1,1,3]) {\n"
      "  %0 = max_pool(%x) {kernel_shape=[1, 1], pads=[2305843009213693952, 0, 0, 0], "
      "strides=[4611686018427387904, 1]} : f32[1,1,1,3]\n  return %0\n}\n";
  Tensor x(DType::kF32, {1, 1, 3, 3});
  for (int64_t i = 0; i < 9; ++i) x.set_float(i, static_cast<float>(i + 1));
  const std::vector<Tensor> pooled = run_reference(*parse_graph(pool), {x});
  EXPECT_EQ(pooled.at(0).to_floats(), std::vector<float>({0, 0, 0}));  // windows all padding

  const std::string conv =
      "graph @g(%x: f32[1,1,3,3], %w: f32[1,1,1,1]) -> (f32[1,1,1,3]) {\n"
      "  %0 = conv(%x, %w) {pads=[2305843009213693952, 0, 0, 0], "
      "strides=[4611686018427387904, 1]} : f32[1,1,1,3]\n  return %0\n}\n";
  Tensor w(DType::kF32, {1, 1, 1, 1});
  w.set_float(0, 2);
  const std::vector<Tensor> convolved = run_reference(*parse_graph(conv), {x, w});
  EXPECT_EQ(convolved.at(0).to_floats(), std::vector<float>({0, 0, 0}));
}

TEST(ShapeOverflowKernels, HugeSliceStepsKeepOneElement) {
  const std::string text =
      "graph @g(%x: f32[2,3]) -> (f32[2,1]) {\n  %0 = slice(%x) {axes=[1], "
      "ends=[" +
      min + "], starts=[" + max + "], steps=[" + min + "]} : f32[2,1]\n  return %0\n}\n";
  Tensor x(DType::kF32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) x.set_float(i, static_cast<float>(i));
  EXPECT_EQ(run_reference(*parse_graph(text), {x}).at(0).to_floats(), std::vector<float>({2, 5}));
}

TEST(ShapeOverflowKernels, ResizeFarSourceCoordinatesClampToTheEdge) {
  const std::string text =
      "graph @g(%x: f32[1,4]) -> (f32[1,3]) {\n  %0 = resize(%x) "
      "{coordinate_transformation_mode=\"asymmetric\", mode=\"linear\", "
      "scales=[1.0, 1e-19], sizes=[1, 3]} : f32[1,3]\n  return %0\n}\n";
  Tensor x(DType::kF32, {1, 4});
  for (int64_t i = 0; i < 4; ++i) x.set_float(i, static_cast<float>(i + 1));
  EXPECT_EQ(run_reference(*parse_graph(text), {x}).at(0).to_floats(),
            std::vector<float>({1, 4, 4}));
}

}  // namespace
}  // namespace kiln
