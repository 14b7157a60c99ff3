// Tests of the layout ONNX converters (frontend/converters/layout_*.cc): Squeeze, Unsqueeze and
// Flatten become kiln reshape, Split becomes slices, Shape/Size/ConstantOfShape/Range become
// constants, and Reshape, Pad and Resize resolve their configuration inputs at import; Resize 10
// and Upsample become the resize op with asymmetric coordinates; OneHot, EyeLike,
// LpNormalization, AffineGrid and GridSample refusals (their results: the ONNX node tests);
// ReverseSequence clamps an invalid length; GridSample's reflection along a one-pixel axis.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_floats_attr;
using frontend_test::add_int_attr;
using frontend_test::add_ints_attr;
using frontend_test::add_string_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using op_test::iota_tensor;
using op_test::node_ops;
using ::testing::HasSubstr;

TEST(LayoutConvertersTest, SqueezeUnsqueezeFlattenBecomeReshapes) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{1}, int64_t{3}});
  builder.int64_initializer("squeeze_axes", {1}, {-2});
  builder.int64_initializer("unsqueeze_axes", {2}, {0, -1});
  builder.node("Squeeze", {"x", "squeeze_axes"}, {"squeezed"});
  builder.node("Unsqueeze", {"squeezed", "unsqueeze_axes"}, {"unsqueezed"});
  add_int_attr(builder.node("Flatten", {"unsqueezed"}, {"y"}), "axis", -2);
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(node_ops(*graph), (std::vector<std::string>{"reshape", "reshape", "reshape"}));
  EXPECT_EQ(graph->nodes()[0]->result()->type().shape, (Shape{2, 3}));
  EXPECT_EQ(graph->nodes()[1]->result()->type().shape, (Shape{1, 2, 3, 1}));
  EXPECT_EQ(graph->outputs()[0]->type().shape, (Shape{2, 3}));
}

TEST(LayoutConvertersTest, SqueezeOfANonUnitAxisFails) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  builder.int64_initializer("axes", {1}, {0});
  builder.node("Squeeze", {"x", "axes"}, {"y"}, "sq");
  builder.output("y");
  EXPECT_THAT(import_error(builder), HasSubstr("ONNX node 'sq' (Squeeze): cannot squeeze axis 0"));
}

TEST(LayoutConvertersTest, ReshapeResolvesZeroAndMinusOne) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  builder.int64_initializer("shape", {3}, {0, -1, 2});
  builder.node("Reshape", {"x", "shape"}, {"y"});
  builder.output("y");
  EXPECT_EQ(builder.import()->outputs()[0]->type().shape, (Shape{2, 6, 2}));
}

TEST(LayoutConvertersTest, ReshapeWithAllowZeroKeepsZeroDims) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{0}, int64_t{3}});
  builder.int64_initializer("shape", {2}, {3, 0});
  add_int_attr(builder.node("Reshape", {"x", "shape"}, {"y"}), "allowzero", 1);
  builder.output("y");
  EXPECT_EQ(builder.import()->outputs()[0]->type().shape, (Shape{3, 0}));
}

TEST(LayoutConvertersTest, ReshapeWithTwoMinusOnesFails) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  builder.int64_initializer("shape", {2}, {-1, -1});
  builder.node("Reshape", {"x", "shape"}, {"y"}, "r");
  builder.output("y");
  EXPECT_THAT(import_error(builder), HasSubstr("has more than one -1"));
}

TEST(LayoutConvertersTest, SplitBecomesOneSlicePerOutput) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{5}});
  onnx::NodeProto* split = builder.node("Split", {"x"}, {"a", "b", "c"});
  add_int_attr(split, "axis", 1);
  add_int_attr(split, "num_outputs", 3);
  for (const char* name : {"a", "b", "c"}) builder.output(name);
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(node_ops(*graph), (std::vector<std::string>{"slice", "slice", "slice"}));
  const std::vector<Tensor> results = run_reference(*graph, {iota_tensor(DType::kF32, {2, 5})});
  EXPECT_EQ(results[0].to_floats(), (std::vector<float>{0, 1, 5, 6}));
  EXPECT_EQ(results[1].to_floats(), (std::vector<float>{2, 3, 7, 8}));
  EXPECT_EQ(results[2].to_floats(), (std::vector<float>{4, 9}));
}

TEST(LayoutConvertersTest, ShapeAndSizeAreConstants) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  onnx::NodeProto* shape = builder.node("Shape", {"x"}, {"tail"});
  add_int_attr(shape, "start", -2);
  builder.node("Size", {"x"}, {"count"});
  builder.output("tail");
  builder.output("count");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(graph->num_nodes(), 0u);
  EXPECT_EQ(graph->outputs()[0]->data().to_ints(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(graph->outputs()[1]->data().to_ints(), (std::vector<int64_t>{24}));
}

TEST(LayoutConvertersTest, ConstantOfShapeAndRangeFoldToConstants) {
  ModelBuilder builder(18);
  builder.int64_initializer("shape", {2}, {2, 2});
  builder.int64_initializer("start", {}, {10});
  builder.int64_initializer("limit", {}, {4});
  builder.int64_initializer("delta", {}, {-3});
  builder.node("ConstantOfShape", {"shape"}, {"zeros"});
  builder.node("Range", {"start", "limit", "delta"}, {"range"});
  builder.output("zeros");
  builder.output("range");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kF32, {2, 2}}));
  EXPECT_EQ(graph->outputs()[0]->data().to_floats(), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(graph->outputs()[1]->data().to_ints(), (std::vector<int64_t>{10, 7}));
}

TEST(LayoutConvertersTest, RangeOfRunTimeValuesExplainsWhy) {
  ModelBuilder builder(18);
  builder.input("n", onnx::TensorProto::INT64, {});
  builder.int64_initializer("zero", {}, {0});
  builder.int64_initializer("one", {}, {1});
  builder.node("Range", {"zero", "n", "one"}, {"y"}, "range");
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("Range's output shape would depend on run-time values"));
}

TEST(LayoutConvertersTest, PadWithAxesInputPadsOnlyThoseAxes) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  builder.int64_initializer("pads", {2}, {1, 2});
  builder.float_initializer("value", {}, {7.0f});
  builder.int64_initializer("axes", {1}, {-1});
  builder.node("Pad", {"x", "pads", "value", "axes"}, {"y"});
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  const std::vector<Tensor> results = run_reference(*graph, {iota_tensor(DType::kF32, {1, 2})});
  EXPECT_EQ(results[0].shape(), (Shape{1, 5}));
  EXPECT_EQ(results[0].to_floats(), (std::vector<float>{7, 0, 1, 7, 7}));
}

TEST(LayoutConvertersTest, ResizeSizesWithAxesAndAspectPolicy) {
  ModelBuilder builder(19);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{4}});
  builder.int64_initializer("sizes", {2}, {3, 3});
  onnx::NodeProto* resize = builder.node("Resize", {"x", "", "", "sizes"}, {"y"});
  add_ints_attr(resize, "axes", {2, 3});
  add_string_attr(resize, "keep_aspect_ratio_policy", "not_larger");
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(node_ops(*graph), (std::vector<std::string>{"resize"}));
  // scale = min(3/2, 3/4) = 0.75 on both axes: 2 -> round(1.5) = 2, 4 -> 3.
  EXPECT_EQ(graph->outputs()[0]->type().shape, (Shape{1, 1, 2, 3}));
  EXPECT_EQ(graph->nodes()[0]->floats_attr("scales"), (std::vector<double>{1, 1, 0.75, 0.75}));
}

TEST(LayoutConvertersTest, ResizeNeedsExactlyOneOfScalesAndSizes) {
  ModelBuilder builder(19);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}});
  builder.node("Resize", {"x"}, {"y"}, "rs");
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("ONNX node 'rs' (Resize): exactly one of scales and sizes must be given"));
}

// Resize 10 and Upsample 7/9 take scales only: floor(in · scale) outputs, an output pixel y
// reading input y / scale, nearest rounding down (ONNX's Resize 10 -> 11 adapter). Nearest at 1.5
// on a row of 4: y = 0..5 read 0, 0, 1, 2, 2, 3.
TEST(LayoutConvertersTest, Resize10AndUpsampleAreAsymmetricAndRoundDown) {
  const auto nearest_row = [](int opset, const std::string& op, bool scales_attr) {
    ModelBuilder builder(opset);
    builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{4}});
    onnx::NodeProto* node = nullptr;
    if (scales_attr) {
      node = builder.node(op, {"x"}, {"y"});
      add_floats_attr(node, "scales", {1.0f, 1.5f});
    } else {
      builder.float_initializer("scales", {2}, {1.0f, 1.5f});
      node = builder.node(op, {"x", "scales"}, {"y"});
    }
    add_string_attr(node, "mode", "nearest");
    builder.output("y");
    const std::unique_ptr<Graph> graph = builder.import();
    EXPECT_EQ(node_ops(*graph), (std::vector<std::string>{"resize"}));
    EXPECT_EQ(graph->nodes()[0]->string_attr("coordinate_transformation_mode"), "asymmetric");
    return run_reference(*graph, {iota_tensor(DType::kF32, {1, 4})})[0];
  };
  for (const auto& [opset, op, scales_attr] :
       {std::tuple{10, "Resize", false}, std::tuple{9, "Upsample", false},
        std::tuple{7, "Upsample", true}}) {
    const Tensor y = nearest_row(opset, op, scales_attr);
    EXPECT_EQ(y.shape(), (Shape{1, 6})) << op << " " << opset;
    EXPECT_EQ(y.to_floats(), (std::vector<float>{0, 0, 1, 2, 2, 3})) << op << " " << opset;
  }
}

TEST(LayoutConvertersTest, Resize10LinearAndItsErrors) {
  ModelBuilder builder(10);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  builder.float_initializer("scales", {2}, {1.0f, 2.0f});
  add_string_attr(builder.node("Resize", {"x", "scales"}, {"y"}), "mode", "linear");
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  // x = [0, 1]; asymmetric: y reads input y / 2, the last clamped: 0, 0.5, 1, 1.
  EXPECT_EQ(run_reference(*graph, {iota_tensor(DType::kF32, {1, 2})})[0].to_floats(),
            (std::vector<float>{0, 0.5f, 1, 1}));

  ModelBuilder cubic(10);
  cubic.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  cubic.float_initializer("scales", {2}, {1.0f, 2.0f});
  add_string_attr(cubic.node("Resize", {"x", "scales"}, {"y"}, "r10"), "mode", "cubic");
  cubic.output("y");
  EXPECT_THAT(import_error(cubic),
              HasSubstr("ONNX node 'r10' (Resize): mode 'cubic' is not nearest or linear"));

  ModelBuilder short_scales(9);
  short_scales.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{2}});
  short_scales.float_initializer("scales", {1}, {2.0f});
  short_scales.node("Upsample", {"x", "scales"}, {"y"}, "up");
  short_scales.output("y");
  EXPECT_THAT(import_error(short_scales),
              HasSubstr("ONNX node 'up' (Upsample): scales has 1 entries for an input of rank 2"));
}

// Resize 11 reads roi, scales and sizes where 13 does (an empty roi and a scales input here).
TEST(LayoutConvertersTest, Resize11TakesScalesAfterAnEmptyRoi) {
  ModelBuilder builder(11);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  builder.float_initializer("roi", {0}, {});
  builder.float_initializer("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  onnx::NodeProto* resize = builder.node("Resize", {"x", "roi", "scales"}, {"y"});
  add_string_attr(resize, "mode", "nearest");
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(graph->outputs()[0]->type().shape, (Shape{1, 1, 4, 4}));
  EXPECT_EQ(graph->nodes()[0]->string_attr("coordinate_transformation_mode"), "half_pixel");
}

TEST(LayoutConvertersTest, OneHotNeedsAConstantDepthAndTwoValues) {
  ModelBuilder depth_input(11);
  depth_input.input("i", onnx::TensorProto::INT64, {int64_t{3}});
  depth_input.input("depth", onnx::TensorProto::INT64, {});
  depth_input.float_initializer("values", {2}, {0.0f, 1.0f});
  depth_input.node("OneHot", {"i", "depth", "values"}, {"y"}, "oh");
  depth_input.output("y");
  EXPECT_THAT(import_error(depth_input),
              HasSubstr("input 1 ('depth') must be a compile-time constant (OneHot's depth sizes "
                        "its output)"));

  ModelBuilder three_values(11);
  three_values.input("i", onnx::TensorProto::INT64, {int64_t{3}});
  three_values.int64_initializer("depth", {}, {4});
  three_values.float_initializer("values", {3}, {0.0f, 1.0f, 2.0f});
  three_values.node("OneHot", {"i", "depth", "values"}, {"y"}, "oh");
  three_values.output("y");
  EXPECT_THAT(import_error(three_values),
              HasSubstr("ONNX node 'oh' (OneHot): values must hold two elements"));
}

TEST(LayoutConvertersTest, EyeLikeIsAConstantOfA2DInput) {
  ModelBuilder builder(9);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  add_int_attr(builder.node("EyeLike", {"x"}, {"y"}), "k", -1);
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(run_reference(*graph, {iota_tensor(DType::kF32, {2, 3})})[0].to_floats(),
            (std::vector<float>{0, 0, 0, 1, 0, 0}));

  ModelBuilder three_d(9);
  three_d.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  three_d.node("EyeLike", {"x"}, {"y"}, "eye");
  three_d.output("y");
  EXPECT_THAT(import_error(three_d),
              HasSubstr("ONNX node 'eye' (EyeLike): the input must be 2-D, not [2,3,4]"));
}

TEST(LayoutConvertersTest, LpNormalizationTakesP1Or2) {
  ModelBuilder builder(11);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{2}});
  add_int_attr(builder.node("LpNormalization", {"x"}, {"y"}, "lp"), "p", 3);
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("ONNX node 'lp' (LpNormalization): p must be 1 or 2, not 3"));
}

TEST(LayoutConvertersTest, ReverseSequenceClampsInvalidLengths) {
  ModelBuilder builder(10);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{2}});
  builder.input("lens", onnx::TensorProto::INT64, {int64_t{2}});
  builder.node("ReverseSequence", {"x", "lens"}, {"y"});
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  // x [time 3, batch 2] = 0..5; entry 0 of length 7 (clamped to 3) reverses all three steps,
  // entry 1 of length -2 (clamped to 0) none.
  const Tensor lens = Tensor::from_vector(DType::kI64, {2}, std::vector<int64_t>{7, -2});
  EXPECT_EQ(run_reference(*graph, {iota_tensor(DType::kF32, {3, 2}), lens})[0].to_floats(),
            (std::vector<float>{4, 1, 2, 3, 0, 5}));
}

TEST(LayoutConvertersTest, AffineGridNeedsThetaOfItsSize) {
  ModelBuilder builder(20);
  builder.input("theta", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{2}, int64_t{3}});
  builder.int64_initializer("size", {4}, {3, 1, 4, 5});
  builder.node("AffineGrid", {"theta", "size"}, {"grid"}, "ag");
  builder.output("grid");
  EXPECT_THAT(import_error(builder),
              HasSubstr("ONNX node 'ag' (AffineGrid): theta must be [3,2,3], not [2,2,3]"));
}

TEST(LayoutConvertersTest, GridSampleChecksItsGridAndModes) {
  const auto builder_of = [](const std::vector<int64_t>& grid, const std::string& mode) {
    ModelBuilder builder(22);
    builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{3}});
    builder.input("grid", onnx::TensorProto::FLOAT, {grid.begin(), grid.end()});
    onnx::NodeProto* node = builder.node("GridSample", {"x", "grid"}, {"y"}, "gs");
    add_string_attr(node, "mode", mode);
    add_string_attr(node, "padding_mode", "reflection");
    add_int_attr(node, "align_corners", 1);
    builder.output("y");
    return builder;
  };
  EXPECT_THAT(import_error(builder_of({1, 2, 2, 3}, "linear")),
              HasSubstr("ONNX node 'gs' (GridSample): grid must be [N, out..., 2] for X "
                        "[1,1,1,3], not [1,2,2,3]"));
  EXPECT_THAT(import_error(builder_of({1, 2, 2, 2}, "area")),
              HasSubstr("mode 'area' is not linear, nearest or cubic"));
  // Reflection along the one-pixel height with align_corners reflects every y to row 0 (ONNX's
  // reference divides by zero there); x = ±1 reaches the row's ends.
  const std::unique_ptr<Graph> graph = builder_of({1, 1, 2, 2}, "linear").import();
  const Tensor grid =
      Tensor::from_vector(DType::kF32, {1, 1, 2, 2}, std::vector<float>{-1, 5, 1, -3});
  EXPECT_EQ(run_reference(*graph, {iota_tensor(DType::kF32, {1, 1, 1, 3}), grid})[0].to_floats(),
            (std::vector<float>{0, 2}));
}

}  // namespace
}  // namespace kiln::onnx_import
