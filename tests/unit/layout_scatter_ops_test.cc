// Tests of gather_nd, scatter_nd and scatter_elements (ir/ops/layout_scatter_ops.cc) on the
// reference interpreter, with hand-computed results and error cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/graph.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

using ::testing::HasSubstr;

TEST(LayoutScatterOpsTest, GatherNdPicksRowsAndElements) {
  const Tensor data = f32_tensor({2, 2}, {0, 1, 2, 3});
  const Tensor rows = run_op("gather_nd", {data, i64_tensor({2, 1}, {1, 0})});
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.to_floats(), (std::vector<float>{2, 3, 0, 1}));
  const Tensor elements = run_op("gather_nd", {data, i64_tensor({2, 2}, {0, 0, -1, 1})});
  EXPECT_EQ(elements.to_floats(), (std::vector<float>{0, 3}));
}

TEST(LayoutScatterOpsTest, GatherNdWithBatchDims) {
  const Tensor data = f32_tensor({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor out = run_op("gather_nd", {data, i64_tensor({2, 1}, {1, 0})}, {{"batch_dims", 1}});
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{2, 3, 4, 5}));
}

TEST(LayoutScatterOpsTest, ScatterNdReplacesAndAdds) {
  const Tensor data = f32_tensor({4}, {1, 2, 3, 4});
  const Tensor indices = i64_tensor({3, 1}, {3, 1, 3});
  const Tensor updates = f32_tensor({3}, {10, 20, 30});
  EXPECT_EQ(run_op("scatter_nd", {data, indices, updates}).to_floats(),
            (std::vector<float>{1, 20, 3, 30}));
  EXPECT_EQ(run_op("scatter_nd", {data, indices, updates}, {{"reduction", "add"}}).to_floats(),
            (std::vector<float>{1, 22, 3, 44}));
}

TEST(LayoutScatterOpsTest, ScatterElementsWithMaxReduction) {
  const Tensor data = i64_tensor({2, 2}, {5, 5, 5, 5});
  const Tensor indices = i64_tensor({2, 1}, {1, 0});
  const Tensor updates = i64_tensor({2, 1}, {9, 1});
  const Tensor out =
      run_op("scatter_elements", {data, indices, updates}, {{"axis", 1}, {"reduction", "max"}});
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{5, 9, 5, 5}));
}

TEST(LayoutScatterOpsTest, ScatterRejectsBadUpdatesAndReduction) {
  Graph graph;
  Value* data = graph.add_input("data", {DType::kF32, {4}});
  Value* indices = graph.add_input("indices", {DType::kI64, {2, 1}});
  Value* updates = graph.add_input("updates", {DType::kF32, {3}});
  try {
    graph.add_node("scatter_nd", {data, indices, updates});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("updates f32[3] must have shape [2]"));
  }
  Value* good_updates = graph.add_input("good", {DType::kF32, {2}});
  EXPECT_THROW(graph.add_node("scatter_nd", {data, indices, good_updates}, {{"reduction", "sub"}}),
               InputError);
}

TEST(LayoutScatterOpsTest, ScatterNdRejectsOutOfRangeIndex) {
  EXPECT_THROW(run_op("scatter_nd",
                      {f32_tensor({2}, {0, 0}), i64_tensor({1, 1}, {2}), f32_tensor({1}, {1})}),
               InputError);
}

}  // namespace
}  // namespace kiln::op_test
