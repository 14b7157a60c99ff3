// Tests of the ONNX loss converters (frontend/converters/nn_loss.cc) beyond the ONNX node tests:
// the weighted mean leaves ignored entries out of both sums, an out-of-range target reads a class
// inside the axis, and the refusals name the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_int_attr;
using frontend_test::add_string_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using ::testing::HasSubstr;

// NLL of input [3, 2] = 0..5 by target [3] named 'nll'.
ModelBuilder nll(const std::string& reduction, const std::vector<int64_t>& target_shape) {
  ModelBuilder builder(13);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{2}});
  builder.input("t", onnx::TensorProto::INT64, {target_shape.begin(), target_shape.end()});
  onnx::NodeProto* node = builder.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"}, "nll");
  add_string_attr(node, "reduction", reduction);
  add_int_attr(node, "ignore_index", 1);
  builder.output("y");
  return builder;
}

TEST(LossConverterTest, MeanLeavesIgnoredEntriesOut) {
  const std::unique_ptr<Graph> graph = nll("mean", {3}).import();
  // Targets 0, 1 (ignored), 0: −(x[0,0] + x[2,0]) / 2 = −(0 + 4) / 2.
  const Tensor t = Tensor::from_vector(DType::kI64, {3}, std::vector<int64_t>{0, 1, 0});
  EXPECT_EQ(run_reference(*graph, {op_test::iota_tensor(DType::kF32, {3, 2}), t})[0].to_floats(),
            (std::vector<float>{-2}));
  // A target past the classes (undefined in ONNX) reads the last class, not memory past it.
  const std::unique_ptr<Graph> none = nll("none", {3}).import();
  const Tensor far = Tensor::from_vector(DType::kI64, {3}, std::vector<int64_t>{7, 1, -5});
  EXPECT_EQ(run_reference(*none, {op_test::iota_tensor(DType::kF32, {3, 2}), far})[0].to_floats(),
            (std::vector<float>{-1, 0, -4}));
}

TEST(LossConverterTest, RefusalsNameTheNode) {
  EXPECT_THAT(import_error(nll("max", {3})),
              HasSubstr("ONNX node 'nll' (NegativeLogLikelihoodLoss): reduction 'max' is not "
                        "none, sum or mean"));
  EXPECT_THAT(import_error(nll("mean", {2})), HasSubstr("the target must be [3], not [2]"));
}

}  // namespace
}  // namespace kiln::onnx_import
