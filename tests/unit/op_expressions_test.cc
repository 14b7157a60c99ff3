// The codegen expression table (codegen/op_expressions.h) against the op table: every op a loop
// kernel computes elementwise (category elementwise or broadcast) has a CUDA expression, and
// every expression belongs to such an op. Adding an elementwise op to ir/ops/ without its
// expression fails here, before any GPU run would.
#include "codegen/op_expressions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "ir/op_registry.h"
#include "ir/parser.h"

namespace kiln::codegen {
namespace {

bool computed_elementwise(const OpInfo& op) {
  return op.category == OpCategory::kElementwise || op.category == OpCategory::kBroadcast;
}

TEST(OpExpressionsTest, EveryElementwiseOpHasAnExpression) {
  std::vector<std::string> missing;
  for (const OpInfo* op : OpRegistry::global().all()) {
    if (computed_elementwise(*op) && !find_op_expression(op->name)) missing.push_back(op->name);
  }
  EXPECT_THAT(missing, ::testing::IsEmpty())
      << "elementwise/broadcast ops without a CUDA expression in codegen/op_expressions.cc";
}

TEST(OpExpressionsTest, EveryExpressionBelongsToAnElementwiseOp) {
  for (const auto& [name, expression] : op_expression_table()) {
    const OpInfo* op = OpRegistry::global().find(name);
    ASSERT_NE(op, nullptr) << "expression for '" << name << "', which the op table lacks";
    EXPECT_TRUE(computed_elementwise(*op)) << name << " is a " << op_category_name(op->category)
                                           << " op: loop kernels never ask for its expression";
  }
}

TEST(OpExpressionsTest, ExpressionsReadOperandsAndAttributes) {
  const std::unique_ptr<Graph> graph = parse_graph(R"(
graph @g(%x: f32[4], %y: i32[4]) -> (f32[4], f16[4], i32[4]) {
  %a = leaky_relu(%x) {alpha=0.5} : f32[4]
  %b = cast(%a) {to=f16} : f16[4]
  %c = max(%y, %y, %y) : i32[4]
  return %a, %b, %c
}
)");
  const auto expand = [&](size_t k, std::vector<std::string> operands) {
    const Node& node = *graph->nodes()[k];
    return find_op_expression(node.op())({node, std::move(operands)});
  };
  EXPECT_EQ(expand(0, {"v0"}), "v0 < 0 ? 0.5f * v0 : v0");
  EXPECT_EQ(expand(1, {"v1"}), "kiln_round_to_f16((float)v1)");
  EXPECT_EQ(expand(2, {"p", "q", "r"}), "kiln_max(kiln_max(p, q), r)");
  EXPECT_EQ(find_op_expression("conv"), nullptr);
}

}  // namespace
}  // namespace kiln::codegen
