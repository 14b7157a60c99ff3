// Tests of the elementwise op family (ir/ops/elementwise*.cc) and its ONNX converters
// (frontend/converters/elementwise.cc): small graphs run on the reference interpreter against
// hand-computed values, dtype and shape errors, and the converters that turn inputs into
// attributes (Clip, Cast, CastLike, Dropout).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend_model_builder.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::op_test {
namespace {

using ::testing::HasSubstr;

// ---- Unary
// ---------------------------------------------------------------------------------------

TEST(ElementwiseOpsTest, ReluOnFloatsKeepsNaNAndOnIntegers) {
  expect_floats_near(run_op("relu", {f32_tensor({4}, {-1, 0, 2.5f, kNaN})}), {0, 0, 2.5f, kNaN});
  const Tensor out = run_op("relu", {int_tensor(DType::kI32, {3}, {-7, 0, 7})});
  EXPECT_EQ(out.dtype(), DType::kI32);
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{0, 0, 7}));
}

TEST(ElementwiseOpsTest, ActivationsUseTheirAttributesAndDefaults) {
  const Tensor x = f32_tensor({3}, {-2, 0, 3});
  expect_floats_near(run_op("leaky_relu", {x}), {-0.02f, 0, 3});
  expect_floats_near(run_op("leaky_relu", {x}, {{"alpha", 0.5}}), {-1, 0, 3});
  expect_floats_near(run_op("elu", {x}), {std::expm1(-2.0f), 0, 3});
  expect_floats_near(run_op("hard_sigmoid", {x}), {0.1f, 0.5f, 1});
  expect_floats_near(run_op("hard_swish", {x}), {-2 * (-2.0f / 6 + 0.5f), 0, 3});
  const float alpha = 1.67326319217681884765625f;
  const float gamma = 1.05070102214813232421875f;
  expect_floats_near(run_op("selu", {x}), {gamma * alpha * std::expm1(-2.0f), 0, gamma * 3}, 1e-5f);
}

TEST(ElementwiseOpsTest, SigmoidAndSoftplusStayFiniteForLargeInputs) {
  const Tensor x = f32_tensor({4}, {-200, 0, 200, 1});
  expect_floats_near(run_op("sigmoid", {x}), {0, 0.5f, 1, 1 / (1 + std::exp(-1.0f))});
  expect_floats_near(run_op("softplus", {x}), {0, std::log(2.0f), 200, std::log1p(std::exp(1.0f))});
}

TEST(ElementwiseOpsTest, SwishScalesTheSigmoidInputByAlpha) {
  // alpha defaults to 1 (silu); x * sigmoid(x) stays finite at +-200 and keeps NaN.
  const Tensor x = f32_tensor({6}, {-200, -1, 0, 2, 200, kNaN});
  expect_floats_near(run_op("swish", {x}), {0, -0.26894142f, 0, 1.76159416f, 200, kNaN});
  expect_floats_near(run_op("swish", {f32_tensor({2}, {-1, 0.5f})}, {{"alpha", 2.0}}),
                     {-0.11920292f, 0.36552929f});
}

TEST(ElementwiseOpsTest, GeluExactAndTanhApproximation) {
  const Tensor x = f32_tensor({2}, {-1, 1.5f});
  expect_floats_near(run_op("gelu", {x}), {-0.15865525f, 1.39978920f});
  expect_floats_near(run_op("gelu", {x}, {{"approximate", "tanh"}}), {-0.15880801f, 1.39957158f});
  EXPECT_THAT(add_node_error("gelu", {x.type()}, {{"approximate", "fast"}}),
              HasSubstr("'approximate' must be \"none\" or \"tanh\""));
}

TEST(ElementwiseOpsTest, RoundTakesHalvesToEven) {
  expect_floats_near(run_op("round", {f32_tensor({6}, {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.6f})}),
                     {0, 2, 2, 0, -2, 3});
}

TEST(ElementwiseOpsTest, F16ResultsAreRoundedToNearestEven) {
  Tensor x(DType::kF16, {1});
  x.set_float(0, 1);
  const Tensor out = run_op("exp", {x});
  EXPECT_EQ(out.dtype(), DType::kF16);
  EXPECT_EQ(out.get_float(0), 2.71875f);  // e in f16
}

TEST(ElementwiseOpsTest, NegAbsSignOnIntegersWrap) {
  const Tensor x = int_tensor(DType::kI8, {4}, {-128, -3, 0, 5});
  EXPECT_EQ(run_op("neg", {x}).to_ints(), (std::vector<int64_t>{-128, 3, 0, -5}));
  EXPECT_EQ(run_op("abs", {x}).to_ints(), (std::vector<int64_t>{-128, 3, 0, 5}));
  EXPECT_EQ(run_op("sign", {x}).to_ints(), (std::vector<int64_t>{-1, -1, 0, 1}));
}

TEST(ElementwiseOpsTest, ClipBoundsAreOptionalAndWorkOnIntegers) {
  const Tensor x = f32_tensor({4}, {-5, 0.5f, 5, kNaN});
  expect_floats_near(run_op("clip", {x}, {{"min", -1.0}, {"max", 1.0}}), {-1, 0.5f, 1, kNaN});
  expect_floats_near(run_op("clip", {x}, {{"max", 1.0}}), {-5, 0.5f, 1, kNaN});
  expect_floats_near(run_op("clip", {x}), {-5, 0.5f, 5, kNaN});
  const Tensor out = run_op("clip", {int_tensor(DType::kU8, {3}, {0, 100, 255})}, {{"min", 10.0}});
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{10, 100, 255}));
}

TEST(ElementwiseOpsTest, PredicatesReturnBool) {
  const Tensor x = f32_tensor({4}, {kNaN, -kInf, kInf, 1});
  const Tensor nan = run_op("is_nan", {x});
  EXPECT_EQ(nan.dtype(), DType::kBool);
  EXPECT_EQ(nan.to_ints(), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(run_op("is_inf", {x}).to_ints(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(run_op("is_inf", {x}, {{"detect_negative", 0}}).to_ints(),
            (std::vector<int64_t>{0, 0, 1, 0}));
  EXPECT_EQ(run_op("not", {int_tensor(DType::kBool, {2}, {0, 1})}).to_ints(),
            (std::vector<int64_t>{1, 0}));
}

TEST(ElementwiseOpsTest, UnaryOpsRejectDtypesTheyDoNotAccept) {
  EXPECT_THAT(add_node_error("exp", {{DType::kI32, {2}}}),
              HasSubstr("operand 0 (%x0) is i32, expected f32, f16, bf16 or f64"));
  EXPECT_THAT(add_node_error("neg", {{DType::kU8, {2}}}), HasSubstr("is u8"));
  EXPECT_THAT(add_node_error("not", {{DType::kF32, {2}}}), HasSubstr("expected bool"));
}

// ---- Binary and variadic
// -------------------------------------------------------------------------

TEST(ElementwiseOpsTest, AddBroadcastsNumpyStyle) {
  const Tensor out =
      run_op("add", {f32_tensor({2, 3}, {0, 1, 2, 3, 4, 5}), f32_tensor({3}, {10, 20, 30})});
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{10, 21, 32, 13, 24, 35}));
  const Tensor outer =
      run_op("mul", {f32_tensor({2, 1}, {1, 2}), f32_tensor({1, 3}, {1, 10, 100})});
  EXPECT_EQ(outer.shape(), (Shape{2, 3}));
  EXPECT_EQ(outer.to_floats(), (std::vector<float>{1, 10, 100, 2, 20, 200}));
}

TEST(ElementwiseOpsTest, IntegerArithmeticWraps) {
  EXPECT_EQ(run_op("add", {int_tensor(DType::kI8, {1}, {127}), int_tensor(DType::kI8, {1}, {1})})
                .to_ints(),
            (std::vector<int64_t>{-128}));
  EXPECT_EQ(
      run_op("sub", {int_tensor(DType::kU8, {1}, {0}), int_tensor(DType::kU8, {1}, {1})}).to_ints(),
      (std::vector<int64_t>{255}));
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(run_op("mul", {int_tensor(DType::kI64, {1}, {big}), int_tensor(DType::kI64, {1}, {2})})
                .to_ints(),
            (std::vector<int64_t>{-2}));
}

TEST(ElementwiseOpsTest, IntegerDivisionTruncatesTowardZero) {
  const Tensor a = int_tensor(DType::kI32, {4}, {7, -7, 7, -7});
  const Tensor b = int_tensor(DType::kI32, {4}, {2, 2, -2, 0});
  EXPECT_EQ(run_op("div", {a, b}).to_ints(), (std::vector<int64_t>{3, -3, -3, 0}));
  expect_floats_near(run_op("div", {f32_tensor({2}, {1, -1}), f32_tensor({2}, {0, 4})}),
                     {kInf, -0.25f});
}

TEST(ElementwiseOpsTest, ModFollowsTheDivisorOrTheDividendSign) {
  const Tensor a = int_tensor(DType::kI64, {4}, {7, -7, 7, -7});
  const Tensor b = int_tensor(DType::kI64, {4}, {3, 3, -3, -3});
  EXPECT_EQ(run_op("mod", {a, b}).to_ints(), (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(run_op("mod", {a, b}, {{"fmod", 1}}).to_ints(), (std::vector<int64_t>{1, -1, 1, -1}));
  const Tensor x = f32_tensor({3}, {-4.5f, 4.5f, 3});
  const Tensor y = f32_tensor({3}, {2, -2, 0});
  expect_floats_near(run_op("mod", {x, y}), {1.5f, -1.5f, kNaN});
  expect_floats_near(run_op("mod", {x, y}, {{"fmod", 1}}), {-0.5f, 0.5f, kNaN});
  EXPECT_THAT(add_node_error("mod", {a.type(), b.type()}, {{"fmod", 2}}),
              HasSubstr("'fmod' must be 0 or 1"));
}

TEST(ElementwiseOpsTest, PowMixesBaseAndExponentTypes) {
  const Tensor ibase = int_tensor(DType::kI32, {3}, {2, 3, -2});
  EXPECT_EQ(run_op("pow", {ibase, int_tensor(DType::kI64, {3}, {10, 0, 3})}).to_ints(),
            (std::vector<int64_t>{1024, 1, -8}));
  const Tensor out = run_op("pow", {ibase, f32_tensor({3}, {0.5f, 2, 2})});
  EXPECT_EQ(out.dtype(), DType::kI32);
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{1, 9, 4}));  // sqrt(2) truncates to 1
  expect_floats_near(run_op("pow", {f32_tensor({2}, {2, 9}), int_tensor(DType::kI64, {1}, {2})}),
                     {4, 81});
  EXPECT_THAT(add_node_error("pow", {{DType::kI8, {1}}, {DType::kF32, {1}}}), HasSubstr("is i8"));
}

TEST(ElementwiseOpsTest, PReluSlopeBroadcastsToTheInput) {
  const Tensor x = f32_tensor({2, 3}, {-1, -1, -1, 1, 1, 1});
  const Tensor out = run_op("prelu", {x, f32_tensor({3}, {0.1f, 0.2f, 0.3f})});
  expect_floats_near(out, {-0.1f, -0.2f, -0.3f, 1, 1, 1});
  EXPECT_THAT(add_node_error("prelu", {{DType::kF32, {3}}, {DType::kF32, {2, 3}}}),
              HasSubstr("does not broadcast to the input shape [3]"));
}

TEST(ElementwiseOpsTest, VariadicOpsFoldEveryOperand) {
  const Tensor a = f32_tensor({2, 2}, {1, 5, kNaN, 0});
  const Tensor b = f32_tensor({2}, {3, 2});
  const Tensor c = f32_tensor({}, {4});
  expect_floats_near(run_op("max", {a, b, c}), {4, 5, kNaN, 4});
  expect_floats_near(run_op("min", {a, b, c}), {1, 2, kNaN, 0});
  expect_floats_near(run_op("sum", {a, b, c}), {8, 11, kNaN, 6});
  expect_floats_near(run_op("mean", {a, b, c}), {8.0f / 3, 11.0f / 3, kNaN, 2});
  expect_floats_near(run_op("sum", {b}), {3, 2});
  EXPECT_EQ(
      run_op("max", {int_tensor(DType::kU8, {2}, {1, 200}), int_tensor(DType::kU8, {2}, {100, 2})})
          .to_ints(),
      (std::vector<int64_t>{100, 200}));
  EXPECT_THAT(add_node_error("sum", {{DType::kI32, {2}}}), HasSubstr("is i32"));
}

TEST(ElementwiseOpsTest, ComparisonsReturnBool) {
  const Tensor a = int_tensor(DType::kI32, {3}, {1, 2, 3});
  const Tensor b = int_tensor(DType::kI32, {1}, {2});
  const Tensor less = run_op("less", {a, b});
  EXPECT_EQ(less.dtype(), DType::kBool);
  EXPECT_EQ(less.to_ints(), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(run_op("less_or_equal", {a, b}).to_ints(), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(run_op("greater", {a, b}).to_ints(), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(run_op("greater_or_equal", {a, b}).to_ints(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(run_op("equal", {a, b}).to_ints(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(run_op("equal", {f32_tensor({2}, {kNaN, 1}), f32_tensor({2}, {kNaN, 1})}).to_ints(),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(
      run_op("equal", {int_tensor(DType::kBool, {2}, {0, 1}), int_tensor(DType::kBool, {1}, {1})})
          .to_ints(),
      (std::vector<int64_t>{0, 1}));
}

TEST(ElementwiseOpsTest, LogicOpsOnBool) {
  const Tensor a = int_tensor(DType::kBool, {4}, {0, 0, 1, 1});
  const Tensor b = int_tensor(DType::kBool, {4}, {0, 1, 0, 1});
  EXPECT_EQ(run_op("and", {a, b}).to_ints(), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(run_op("or", {a, b}).to_ints(), (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(run_op("xor", {a, b}).to_ints(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_THAT(add_node_error("and", {{DType::kI32, {4}}, {DType::kI32, {4}}}),
              HasSubstr("expected bool"));
}

TEST(ElementwiseOpsTest, WhereBroadcastsAllThreeOperands) {
  const Tensor condition = int_tensor(DType::kBool, {2, 1}, {1, 0});
  const Tensor x = int_tensor(DType::kI64, {2}, {1, 2});
  const Tensor y = int_tensor(DType::kI64, {}, {-1});
  const Tensor out = run_op("where", {condition, x, y});
  EXPECT_EQ(out.type(), (TensorType{DType::kI64, {2, 2}}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{1, 2, -1, -1}));
  EXPECT_THAT(add_node_error("where", {{DType::kF32, {2}}, x.type(), y.type()}),
              HasSubstr("operand 0 (%x0) is f32, expected bool"));
}

TEST(ElementwiseOpsTest, BinaryOpsRejectMismatchedOperands) {
  EXPECT_THAT(add_node_error("add", {{DType::kF32, {2}}, {DType::kF16, {2}}}),
              HasSubstr("operand 0 is f32 but operand 1 is f16"));
  EXPECT_THAT(add_node_error("add", {{DType::kF32, {2, 3}}, {DType::kF32, {4}}}),
              HasSubstr("do not broadcast"));
  EXPECT_THAT(add_node_error("add", {{DType::kF32, {2}}}), HasSubstr("takes 2 operands"));
}

// ---- Cast and identity
// ---------------------------------------------------------------------------

TEST(ElementwiseOpsTest, CastFloatToIntegerTruncatesAndSaturates) {
  const Tensor x = f32_tensor({5}, {2.7f, -2.7f, 300, -1e30f, kNaN});
  EXPECT_EQ(run_op("cast", {x}, {{"to", DType::kI32}}).to_ints(),
            (std::vector<int64_t>{2, -2, 300, std::numeric_limits<int32_t>::min(), 0}));
  EXPECT_EQ(run_op("cast", {x}, {{"to", DType::kU8}}).to_ints(),
            (std::vector<int64_t>{2, 0, 255, 0, 0}));
  EXPECT_EQ(run_op("cast", {x}, {{"to", DType::kBool}}).to_ints(),
            (std::vector<int64_t>{1, 1, 1, 1, 1}));
}

TEST(ElementwiseOpsTest, CastBetweenFloatAndIntegerTypes) {
  const Tensor half =
      run_op("cast", {int_tensor(DType::kI64, {2}, {2049, -3})}, {{"to", DType::kF16}});
  EXPECT_EQ(half.dtype(), DType::kF16);
  EXPECT_EQ(half.to_floats(), (std::vector<float>{2048, -3}));  // 2049 rounds to even in f16
  EXPECT_EQ(
      run_op("cast", {int_tensor(DType::kBool, {2}, {1, 0})}, {{"to", DType::kF64}}).to_doubles(),
      (std::vector<double>{1, 0}));
  EXPECT_EQ(run_op("cast", {int_tensor(DType::kI32, {1}, {-1})}, {{"to", DType::kU8}}).to_ints(),
            (std::vector<int64_t>{255}));
}

TEST(ElementwiseOpsTest, IdentityCopiesAnyDtype) {
  const Tensor x = int_tensor(DType::kI8, {2, 2}, {1, -2, 3, -4});
  const Tensor out = run_op("identity", {x});
  EXPECT_EQ(out.type(), x.type());
  EXPECT_EQ(out.to_ints(), x.to_ints());
}

TEST(ElementwiseOpsTest, EveryOpIsInTheTableWithItsCategory) {
  const OpRegistry& registry = OpRegistry::global();
  for (const char* op : {"relu", "gelu", "clip", "is_inf", "not", "cast", "identity"}) {
    ASSERT_NE(registry.find(op), nullptr) << op;
    EXPECT_EQ(registry.find(op)->category, OpCategory::kElementwise) << op;
  }
  for (const char* op : {"add", "pow", "prelu", "mean", "equal", "xor", "where"}) {
    ASSERT_NE(registry.find(op), nullptr) << op;
    EXPECT_EQ(registry.find(op)->category, OpCategory::kBroadcast) << op;
  }
}

}  // namespace
}  // namespace kiln::op_test

// ---- ONNX converters ----------------------------------------------------------------------------
namespace kiln::onnx_import {
namespace {

using frontend_test::add_int_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using op_test::expect_floats_near;
using op_test::f32_tensor;
using op_test::node_ops;
using ::testing::HasSubstr;

TEST(ElementwiseConvertersTest, ClipBoundsBecomeAttributes) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{3}});
  builder.float_initializer("lo", {}, {-1});
  builder.node("Clip", {"x", "lo"}, {"y"}, "/Clip");
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(node_ops(*graph), (std::vector<std::string>{"clip"}));
  const Node& clip = *graph->nodes()[0];
  EXPECT_EQ(clip.operands().size(), 1u);
  EXPECT_EQ(clip.float_attr("min"), -1.0);
  EXPECT_FALSE(clip.has_attr("max"));
  const std::vector<Tensor> out = run_reference(*graph, {f32_tensor({3}, {-5, 0, 5})});
  EXPECT_EQ(out[0].to_floats(), (std::vector<float>{-1, 0, 5}));
}

TEST(ElementwiseConvertersTest, AttributesAreCopiedByTheKilnSchema) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  frontend_test::add_float_attr(builder.node("LeakyRelu", {"x"}, {"y"}), "alpha", 0.25f);
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(node_ops(*graph), (std::vector<std::string>{"leaky_relu"}));
  EXPECT_EQ(graph->nodes()[0]->float_attr("alpha"), 0.25);
}

TEST(ElementwiseConvertersTest, SwishFromOpset24KeepsAlpha) {
  ModelBuilder builder(/*opset=*/24);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  frontend_test::add_float_attr(builder.node("Swish", {"x"}, {"y"}), "alpha", 2.0f);
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(node_ops(*graph), (std::vector<std::string>{"swish"}));
  const std::vector<Tensor> out = run_reference(*graph, {f32_tensor({2}, {-1, 0.5f})});
  expect_floats_near(out[0], {-0.11920292f, 0.36552929f});
}

TEST(ElementwiseConvertersTest, CastAndCastLikeSetTheTargetDtype) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.input("like", onnx::TensorProto::INT64, {int64_t{1}});
  add_int_attr(builder.node("Cast", {"x"}, {"h"}), "to", onnx::TensorProto::FLOAT16);
  builder.node("CastLike", {"h", "like"}, {"y"});
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(node_ops(*graph), (std::vector<std::string>{"cast", "cast"}));
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kI64, {2}}));
}

TEST(ElementwiseConvertersTest, CastToStringIsRejected) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  add_int_attr(builder.node("Cast", {"x"}, {"y"}, "/Cast"), "to", onnx::TensorProto::STRING);
  builder.output("y");
  const std::string message = import_error(builder);
  EXPECT_THAT(message, HasSubstr("/Cast"));
  EXPECT_THAT(message, HasSubstr("STRING"));
}

TEST(ElementwiseConvertersTest, DropoutIsIdentityWithAnAllTrueMask) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.node("Dropout", {"x"}, {"y", "mask"});
  builder.output("y");
  builder.output("mask");
  const std::unique_ptr<Graph> graph = builder.import();
  const std::vector<Tensor> out = run_reference(*graph, {f32_tensor({2}, {1, 2})});
  EXPECT_EQ(out[0].to_floats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[1].type(), (TensorType{DType::kBool, {2}}));
  EXPECT_EQ(out[1].to_ints(), (std::vector<int64_t>{1, 1}));
}

TEST(ElementwiseConvertersTest, DropoutInTrainingModeIsRejected) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.float_initializer("ratio", {}, {0.5f});
  builder.initializer("training", onnx::TensorProto::BOOL, {})->add_int32_data(1);
  builder.node("Dropout", {"x", "ratio", "training"}, {"y"}, "/Dropout");
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("training mode with a ratio other than 0 drops elements at random"));
}

// Training mode with ratio 0 drops nothing and scales by 1: the identity (torch 1.13 exports
// swin_t's attention dropouts so). Without a ratio (default 0.5) it is refused.
TEST(ElementwiseConvertersTest, DropoutInTrainingModeWithRatioZeroIsIdentity) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.float_initializer("ratio", {}, {0.0f});
  builder.initializer("training", onnx::TensorProto::BOOL, {})->add_int32_data(1);
  builder.node("Dropout", {"x", "ratio", "training"}, {"y"}, "/Dropout");
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(run_reference(*graph, {f32_tensor({2}, {1, 2})})[0].to_floats(),
            (std::vector<float>{1, 2}));

  ModelBuilder no_ratio;
  no_ratio.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  no_ratio.initializer("training", onnx::TensorProto::BOOL, {})->add_int32_data(1);
  no_ratio.node("Dropout", {"x", "", "training"}, {"y"}, "/Dropout");
  no_ratio.output("y");
  EXPECT_THAT(import_error(no_ratio), HasSubstr("ratio other than 0"));
}

}  // namespace
}  // namespace kiln::onnx_import
