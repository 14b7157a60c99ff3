// Tests of the layout ops' shape functions and reference kernels (ir/ops/layout_*.cc): small
// graphs run on the reference interpreter against hand-computed values, plus error cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "ir/error.h"
#include "ir/tensor.h"
#include "op_test_util.h"

namespace kiln::op_test {
namespace {

using ::testing::HasSubstr;

TEST(LayoutOpsTest, ReshapeKeepsElementOrder) {
  const Tensor out = run_op("reshape", {iota_tensor(DType::kF16, {2, 3})},
                            {{"shape", std::vector<int64_t>{3, 1, 2}}});
  EXPECT_EQ(out.type(), (TensorType{DType::kF16, {3, 1, 2}}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(LayoutOpsTest, ReshapeRejectsAnElementCountChange) {
  EXPECT_THAT(
      add_node_error("reshape", {{DType::kF32, {2, 3}}}, {{"shape", std::vector<int64_t>{4, 2}}}),
      HasSubstr("cannot reshape f32[2,3] (6 elements) to shape [4,2]"));
}

TEST(LayoutOpsTest, TransposeOf3D) {
  const Tensor out = run_op("transpose", {iota_tensor(DType::kI64, {2, 3, 2})},
                            {{"perm", std::vector<int64_t>{2, 0, 1}}});
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11}));
}

TEST(LayoutOpsTest, TransposeRejectsABadPermutation) {
  EXPECT_THAT(
      add_node_error("transpose", {{DType::kF32, {2, 3}}}, {{"perm", std::vector<int64_t>{0, 0}}}),
      HasSubstr("not a permutation"));
}

TEST(LayoutOpsTest, ConcatAlongMiddleAxis) {
  const Tensor out = run_op(
      "concat", {iota_tensor(DType::kF32, {2, 1, 2}), iota_tensor(DType::kF32, {2, 2, 2}, 10)},
      {{"axis", -2}});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
}

TEST(LayoutOpsTest, ConcatRejectsMismatchedShapesAndDtypes) {
  EXPECT_THAT(
      add_node_error("concat", {{DType::kF32, {2, 3}}, {DType::kF32, {3, 3}}}, {{"axis", 1}}),
      HasSubstr("does not match operand 0"));
  EXPECT_THAT(
      add_node_error("concat", {{DType::kF32, {2, 3}}, {DType::kI64, {2, 3}}}, {{"axis", 1}}),
      HasSubstr("operand 0 is f32 but operand 1 is i64"));
}

AttributeMap slice_attrs(std::vector<int64_t> starts, std::vector<int64_t> ends,
                         std::vector<int64_t> axes, std::vector<int64_t> steps) {
  return {{"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}};
}

TEST(LayoutOpsTest, SliceClampsAndSteps) {
  const Tensor out =
      run_op("slice", {iota_tensor(DType::kI32, {3, 5})},
             slice_attrs({1, 1}, {1000, std::numeric_limits<int64_t>::max()}, {0, 1}, {1, 2}));
  EXPECT_EQ(out.shape(), (Shape{2, 2}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{6, 8, 11, 13}));
}

TEST(LayoutOpsTest, SliceWithNegativeStepReverses) {
  const Tensor out = run_op("slice", {iota_tensor(DType::kI64, {5})},
                            slice_attrs({-1}, {std::numeric_limits<int64_t>::min()}, {0}, {-2}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{4, 2, 0}));
}

TEST(LayoutOpsTest, SliceOfEmptyRangeIsEmpty) {
  const Tensor out =
      run_op("slice", {iota_tensor(DType::kF32, {4})}, slice_attrs({3}, {1}, {0}, {1}));
  EXPECT_EQ(out.shape(), (Shape{0}));
}

TEST(LayoutOpsTest, SliceRejectsZeroStep) {
  EXPECT_THAT(add_node_error("slice", {{DType::kF32, {4}}}, slice_attrs({0}, {4}, {0}, {0})),
              HasSubstr("contain 0"));
}

TEST(LayoutOpsTest, GatherWithNegativeIndices) {
  const Tensor out = run_op(
      "gather", {iota_tensor(DType::kF32, {3, 2}), i64_tensor({2, 1}, {-1, 0})}, {{"axis", 0}});
  EXPECT_EQ(out.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{4, 5, 0, 1}));
}

TEST(LayoutOpsTest, GatherScalarIndexOnInnerAxis) {
  const Tensor out =
      run_op("gather", {iota_tensor(DType::kI64, {2, 3}), i64_tensor({}, {2})}, {{"axis", 1}});
  EXPECT_EQ(out.shape(), (Shape{2}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{2, 5}));
}

TEST(LayoutOpsTest, GatherRejectsOutOfRangeIndexAtRunTime) {
  EXPECT_THROW(
      run_op("gather", {iota_tensor(DType::kF32, {3}), i64_tensor({1}, {3})}, {{"axis", 0}}),
      InputError);
}

TEST(LayoutOpsTest, GatherRejectsFloatIndices) {
  EXPECT_THAT(add_node_error("gather", {{DType::kF32, {3}}, {DType::kF32, {1}}}, {{"axis", 0}}),
              HasSubstr("must be i64 or i32"));
}

TEST(LayoutOpsTest, GatherElementsAlongAxis1) {
  const Tensor out = run_op("gather_elements",
                            {iota_tensor(DType::kF32, {2, 2}, 1), i64_tensor({2, 2}, {0, 0, 1, 0})},
                            {{"axis", 1}});
  EXPECT_EQ(out.to_floats(), (std::vector<float>{1, 1, 4, 3}));
}

TEST(LayoutOpsTest, ExpandBroadcastsBothWays) {
  const Tensor out = run_op("expand", {iota_tensor(DType::kF32, {3, 1})},
                            {{"shape", std::vector<int64_t>{2, 1, 2}}});
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2}));
}

TEST(LayoutOpsTest, TileRepeatsEachAxis) {
  const Tensor out = run_op("tile", {iota_tensor(DType::kBool, {1, 2}, 0)},
                            {{"repeats", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(out.shape(), (Shape{2, 4}));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{0, 1, 0, 1, 0, 1, 0, 1}));
}

TEST(LayoutOpsTest, PadConstantWithNegativePadCrops) {
  const Tensor out = run_op("pad", {iota_tensor(DType::kF32, {2, 3})},
                            {{"pads", std::vector<int64_t>{1, -1, 0, 0}}, {"constant_value", 9.0}});
  EXPECT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{9, 9, 1, 2, 4, 5}));
}

TEST(LayoutOpsTest, PadReflectEdgeWrap) {
  const Tensor in = iota_tensor(DType::kI64, {3});
  const AttributeMap pads = {{"pads", std::vector<int64_t>{2, 3}}};
  auto run_mode = [&](const std::string& mode) {
    AttributeMap attrs = pads;
    attrs["mode"] = mode;
    return run_op("pad", {in}, attrs).to_ints();
  };
  EXPECT_EQ(run_mode("reflect"), (std::vector<int64_t>{2, 1, 0, 1, 2, 1, 0, 1}));
  EXPECT_EQ(run_mode("edge"), (std::vector<int64_t>{0, 0, 0, 1, 2, 2, 2, 2}));
  EXPECT_EQ(run_mode("wrap"), (std::vector<int64_t>{1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(LayoutOpsTest, PadRejectsUnknownModeAndWrongPadCount) {
  EXPECT_THAT(add_node_error("pad", {{DType::kF32, {3}}},
                             {{"pads", std::vector<int64_t>{1, 1}}, {"mode", "mirror"}}),
              HasSubstr("mode must be constant, reflect, edge or wrap"));
  EXPECT_THAT(add_node_error("pad", {{DType::kF32, {3}}}, {{"pads", std::vector<int64_t>{1}}}),
              HasSubstr("2 entries per axis"));
}

TEST(LayoutOpsTest, DepthToSpaceModesAndSpaceToDepthRoundTrip) {
  const Tensor in = iota_tensor(DType::kF32, {1, 4, 1, 1});
  const Tensor dcr = run_op("depth_to_space", {in}, {{"blocksize", 2}});
  EXPECT_EQ(dcr.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(dcr.to_floats(), (std::vector<float>{0, 1, 2, 3}));

  const Tensor in8 = iota_tensor(DType::kF32, {1, 8, 1, 1});
  const Tensor crd = run_op("depth_to_space", {in8}, {{"blocksize", 2}, {"mode", "CRD"}});
  EXPECT_EQ(crd.to_floats(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  const Tensor dcr8 = run_op("depth_to_space", {in8}, {{"blocksize", 2}});
  EXPECT_EQ(dcr8.to_floats(), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));

  const Tensor image = iota_tensor(DType::kF32, {1, 2, 4, 6});
  for (const char* mode : {"DCR", "CRD"}) {
    const Tensor packed = run_op("space_to_depth", {image}, {{"blocksize", 2}, {"mode", mode}});
    EXPECT_EQ(packed.shape(), (Shape{1, 8, 2, 3}));
    const Tensor unpacked = run_op("depth_to_space", {packed}, {{"blocksize", 2}, {"mode", mode}});
    EXPECT_EQ(unpacked.to_floats(), image.to_floats()) << mode;
  }
}

TEST(LayoutOpsTest, DepthToSpaceRejectsIndivisibleChannels) {
  EXPECT_THAT(add_node_error("depth_to_space", {{DType::kF32, {1, 3, 2, 2}}}, {{"blocksize", 2}}),
              HasSubstr("not divisible by blocksize^2"));
}

TEST(LayoutOpsTest, TriluUpperAndLowerWithOffset) {
  const Tensor in = iota_tensor(DType::kF32, {3, 3}, 1);
  EXPECT_EQ(run_op("trilu", {in}, {{"k", 1}}).to_floats(),
            (std::vector<float>{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(run_op("trilu", {in}, {{"upper", 0}, {"k", -1}}).to_floats(),
            (std::vector<float>{0, 0, 0, 4, 0, 0, 7, 8, 0}));
}

AttributeMap resize_attrs(std::vector<int64_t> sizes, std::vector<double> scales,
                          const std::string& mode, const std::string& coordinate_mode) {
  return {{"sizes", sizes},
          {"scales", scales},
          {"mode", mode},
          {"coordinate_transformation_mode", coordinate_mode}};
}

TEST(LayoutOpsTest, ResizeNearestUpsample) {
  const Tensor out = run_op("resize", {iota_tensor(DType::kF32, {1, 1, 2, 2}, 1)},
                            resize_attrs({1, 1, 4, 4}, {1, 1, 2, 2}, "nearest", "asymmetric"));
  EXPECT_EQ(out.to_floats(), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(LayoutOpsTest, ResizeLinearHalfPixelAndAlignCorners) {
  const Tensor in = iota_tensor(DType::kF32, {1, 2}, 1);  // [1, 2]
  const Tensor half_pixel =
      run_op("resize", {in}, resize_attrs({1, 4}, {1, 2}, "linear", "half_pixel"));
  EXPECT_EQ(half_pixel.to_floats(), (std::vector<float>{1, 1.25f, 1.75f, 2}));
  const Tensor corners = run_op("resize", {iota_tensor(DType::kF32, {3}, 0)},
                                resize_attrs({5}, {5.0 / 3}, "linear", "align_corners"));
  EXPECT_EQ(corners.to_floats(), (std::vector<float>{0, 0.5f, 1, 1.5f, 2}));
}

TEST(LayoutOpsTest, ResizeTfCropAndResizeExtrapolates) {
  AttributeMap attrs = resize_attrs({3}, {1.0}, "linear", "tf_crop_and_resize");
  attrs["roi"] = std::vector<double>{0.5, 1.5};
  attrs["extrapolation_value"] = -1.0;
  const Tensor out = run_op("resize", {iota_tensor(DType::kF32, {3})}, attrs);
  EXPECT_EQ(out.to_floats(), (std::vector<float>{1, 2, -1}));
}

TEST(LayoutOpsTest, ResizeRoundsIntegerResults) {
  const Tensor out =
      run_op("resize", {Tensor::from_vector(DType::kU8, {2}, std::vector<int>{0, 255})},
             resize_attrs({4}, {2}, "linear", "half_pixel"));
  EXPECT_EQ(out.to_ints(), (std::vector<int64_t>{0, 64, 191, 255}));
}

TEST(LayoutOpsTest, ResizeRejectsUnknownModes) {
  EXPECT_THAT(
      add_node_error("resize", {{DType::kF32, {2}}}, resize_attrs({4}, {2}, "area", "half_pixel")),
      HasSubstr("mode 'area' is not one of: nearest, linear, cubic"));
  EXPECT_THAT(add_node_error("resize", {{DType::kF32, {2}}},
                             resize_attrs({4, 4}, {2}, "linear", "half_pixel")),
              HasSubstr("one entry per axis"));
}

}  // namespace
}  // namespace kiln::op_test
