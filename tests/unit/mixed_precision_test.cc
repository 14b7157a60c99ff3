// Tests of mixed precision below the pass: TF32 rounding and the tf32 attribute of the
// matrix-product kernels, Tensor::converted, the op table's precision classes and TF32 flags,
// and the pass's results on the reference interpreter. The pass's rewrites themselves are
// checked by tests/ir/mixed_precision.kir.
#include "passes/mixed_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/ops/nn_tf32.h"
#include "op_test_util.h"
#include "passes/precision_policy.h"
#include "reference/reference_interpreter.h"

namespace kiln::op_test {
namespace {

TEST(Tf32Test, RoundsToNearestWithTiesAwayFromZero) {
  const float ulp = std::ldexp(1.0f, -10);  // TF32's spacing in [1, 2)
  EXPECT_EQ(nn::round_to_tf32(1.0f + ulp / 4), 1.0f);
  EXPECT_EQ(nn::round_to_tf32(1.0f + 3 * ulp / 4), 1.0f + ulp);
  EXPECT_EQ(nn::round_to_tf32(1.0f + ulp / 2), 1.0f + ulp);  // a tie: away from zero
  EXPECT_EQ(nn::round_to_tf32(-(1.0f + ulp / 2)), -(1.0f + ulp));
  EXPECT_EQ(nn::round_to_tf32(1.0f + ulp), 1.0f + ulp);  // already TF32
  EXPECT_EQ(nn::round_to_tf32(std::numeric_limits<float>::max()), kInf);
  EXPECT_EQ(nn::round_to_tf32(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(nn::round_to_tf32(kNaN)));
  // Subnormals keep the top 10 bits of f32's mantissa field: TF32's smallest is 2^-136.
  EXPECT_EQ(nn::round_to_tf32(std::ldexp(1.0f, -136)), std::ldexp(1.0f, -136));
  EXPECT_EQ(nn::round_to_tf32(std::ldexp(1.0f, -140)), 0.0f);
}

TEST(Tf32Test, MatrixProductsRoundTheirOperandsButNotTheBias) {
  const float small = std::ldexp(1.0f, -12);  // below half of TF32's spacing at 1
  const Tensor a = f32_tensor({1, 2}, {1.0f + small, 2.0f});
  const Tensor b = f32_tensor({2, 1}, {1.0f, 1.0f});
  const Tensor c = f32_tensor({1}, {small});
  expect_floats_near(run_op("matmul", {a, b}), {3.0f + small}, 0.0f);
  expect_floats_near(run_op("matmul", {a, b}, {{"tf32", 1}}), {3.0f}, 0.0f);
  expect_floats_near(run_op("gemm", {a, b, c}, {{"tf32", 1}}), {3.0f + small}, 0.0f);

  const Tensor x = f32_tensor({1, 1, 1, 2}, {1.0f + small, 2.0f});
  const Tensor w = f32_tensor({1, 1, 1, 1}, {1.0f + small});
  expect_floats_near(run_op("conv", {x, w}, {{"tf32", 1}}), {1.0f, 2.0f}, 0.0f);
  expect_floats_near(run_op("conv_transpose", {x, w}, {{"tf32", 1}}), {1.0f, 2.0f}, 0.0f);
}

TEST(Tf32Test, AttributeNeedsF32OperandsAndZeroOrOne) {
  const TensorType f16{DType::kF16, {2, 2}};
  const TensorType f32{DType::kF32, {2, 2}};
  EXPECT_EQ(add_node_error("matmul", {f16, f16}, {{"tf32", 1}}),
            "matmul: tf32=1 needs f32 operands, got f16");
  EXPECT_EQ(add_node_error("gemm", {f32, f32}, {{"tf32", 2}}), "gemm: tf32 must be 0 or 1, got 2");
  EXPECT_EQ(add_node_error("matmul", {f16, f16}), "no error");
}

TEST(TensorConvertedTest, RoundsOnceToTheTargetFloatType) {
  const Tensor values = f32_tensor({3}, {0.1f, 65520.0f, -2.5f});
  const Tensor half = values.converted(DType::kF16);
  EXPECT_EQ(half.dtype(), DType::kF16);
  expect_floats_near(half, {0.099975586f, kInf, -2.5f}, 0.0f);
  expect_floats_near(half.converted(DType::kF32), {0.099975586f, kInf, -2.5f}, 0.0f);
  EXPECT_THROW(i64_tensor({1}, {1}).converted(DType::kF32), InternalError);
}

// The names of the ops of the op table for which `has` holds, sorted.
template <class Predicate>
std::vector<std::string> ops_where(Predicate has) {
  std::vector<std::string> names;
  for (const OpInfo* op : OpRegistry::global().all()) {
    if (has(*op)) names.push_back(op->name);
  }
  return names;
}

// The classes as the op table sets them where each op is registered (ir/op_registry.h says why).
TEST(PrecisionPolicyTest, OpTableClassesEachOp) {
  const auto in_class = [](PrecisionClass precision) {
    return ops_where([precision](const OpInfo& op) { return op.precision == precision; });
  };
  const std::vector<std::string> low_precision = {"conv", "conv_transpose", "einsum", "gemm",
                                                  "matmul"};
  const std::vector<std::string> f32 = {"batch_normalization",
                                        "cum_prod",
                                        "cum_sum",
                                        "erf",
                                        "exp",
                                        "group_normalization",
                                        "instance_normalization",
                                        "layer_normalization",
                                        "layer_normalization_with_stats",
                                        "log",
                                        "log_softmax",
                                        "lrn",
                                        "mean_variance_normalization",
                                        "pow",
                                        "reciprocal",
                                        "reduce_l1",
                                        "reduce_l2",
                                        "reduce_log_sum",
                                        "reduce_log_sum_exp",
                                        "reduce_max",
                                        "reduce_mean",
                                        "reduce_min",
                                        "reduce_prod",
                                        "reduce_sum",
                                        "reduce_sum_square",
                                        "rms_normalization",
                                        "softmax",
                                        "sqrt"};
  const std::vector<std::string> tf32 = {"conv", "conv_transpose", "gemm", "matmul"};
  EXPECT_EQ(in_class(PrecisionClass::kLowPrecision), low_precision);
  EXPECT_EQ(in_class(PrecisionClass::kF32), f32);
  EXPECT_EQ(ops_where([](const OpInfo& op) { return op.rounds_to_tf32; }), tf32);
}

// Only contractions run in 16 bits: the out-elementwise-fusable ops (conv, conv_transpose, gemm,
// matmul), which also round to TF32, and einsum, which has no TF32 form. An op rounds to TF32
// exactly when it has the tf32 attribute the mixed-precision pass sets.
TEST(PrecisionPolicyTest, LowPrecisionAndTf32OpsAreContractions) {
  for (const OpInfo* op : OpRegistry::global().all()) {
    const bool contraction = op->category == OpCategory::kOutElementwiseFusable;
    EXPECT_EQ(op->rounds_to_tf32, op->find_attr("tf32") != nullptr) << op->name;
    EXPECT_EQ(op->rounds_to_tf32, contraction) << op->name;
    if (contraction) {
      EXPECT_EQ(op->precision, PrecisionClass::kLowPrecision) << op->name;
    }
    if (op->precision == PrecisionClass::kLowPrecision && !contraction) {
      EXPECT_EQ(op->name, "einsum");
    }
  }
}

TEST(PrecisionPolicyTest, KeepFp32OverridesTheClass) {
  const OpRegistry& registry = OpRegistry::global();
  const OpInfo& matmul = *registry.find("matmul");
  const OpInfo& relu = *registry.find("relu");
  EXPECT_EQ(passes::precision_class(matmul, {}), PrecisionClass::kLowPrecision);
  EXPECT_EQ(passes::precision_class(*registry.find("softmax"), {}), PrecisionClass::kF32);
  EXPECT_EQ(passes::precision_class(relu, {}), PrecisionClass::kFollowOperands);
  EXPECT_EQ(passes::precision_class(matmul, {"matmul"}), PrecisionClass::kF32);
  EXPECT_EQ(passes::precision_class(relu, {"relu"}), PrecisionClass::kF32);
  EXPECT_EQ(passes::precision_class(relu, {"matmul"}), PrecisionClass::kFollowOperands);
}

TEST(PrecisionPolicyTest, ParsesPrecisionNames) {
  EXPECT_EQ(passes::parse_precision("bf16"), passes::Precision::kBF16);
  EXPECT_EQ(passes::precision_name(passes::Precision::kTF32), "tf32");
  EXPECT_EQ(passes::half_dtype(passes::Precision::kFP16), DType::kF16);
  EXPECT_FALSE(passes::half_dtype(passes::Precision::kTF32).has_value());
  EXPECT_FALSE(passes::parse_io_precision("declared").has_value());
  EXPECT_THROW(passes::parse_precision("fp8"), InputError);
  EXPECT_THROW(passes::parse_io_precision("fp32"), InputError);
}

// matmul -> softmax with x = [[1 + 2^-12, 3]]: in fp16 the matmul's input rounds to 1 (f16 keeps
// 10 mantissa bits) and its f16 result feeds an f32 softmax; the graph's output stays f32.
TEST(MixedPrecisionPassTest, Fp16GraphRunsWithF16RoundingAndDeclaredOutputs) {
  Graph graph;
  Value* x = graph.add_input("x", {DType::kF32, {1, 2}});
  Value* identity = graph.add_constant("m", f32_tensor({2, 2}, {1, 0, 0, 1}));
  Node* product = graph.add_node("matmul", {x, identity});
  Node* softmax = graph.add_node("softmax", {product->result()}, {{"axis", -1}});
  graph.set_outputs({product->result(), softmax->result()});

  passes::PassContext context;
  context.precision = passes::Precision::kFP16;
  EXPECT_TRUE(passes::MixedPrecision().run(graph, context));
  EXPECT_EQ(graph.outputs()[0]->type().dtype, DType::kF32);
  EXPECT_EQ(graph.outputs()[1]->type().dtype, DType::kF32);
  EXPECT_EQ(product->result()->type().dtype, DType::kF16);

  const float small = std::ldexp(1.0f, -12);
  const std::vector<Tensor> outputs = run_reference(graph, {f32_tensor({1, 2}, {1 + small, 3})});
  expect_floats_near(outputs[0], {1.0f, 3.0f}, 0.0f);
  const float e = std::exp(-2.0f);
  expect_floats_near(outputs[1], {e / (1 + e), 1 / (1 + e)});
}

TEST(MixedPrecisionPassTest, Fp32LeavesTheGraphAlone) {
  Graph graph;
  Value* x = graph.add_input("x", {DType::kF32, {2, 2}});
  Node* product = graph.add_node("matmul", {x, x});
  graph.set_outputs({product->result()});
  passes::PassContext context;
  EXPECT_FALSE(passes::MixedPrecision().run(graph, context));
  EXPECT_EQ(node_ops(graph), std::vector<std::string>{"matmul"});
}

}  // namespace
}  // namespace kiln::op_test
