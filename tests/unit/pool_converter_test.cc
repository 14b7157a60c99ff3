// Tests of ONNX LpPool's import (frontend/converters/nn_pool.cc) beyond the ONNX node tests:
// ceil_mode's last window, partly past the padding, is the Lp norm of the values it covers, and
// a non-positive p is refused naming the node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_int_attr;
using frontend_test::add_ints_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using ::testing::HasSubstr;

TEST(PoolConverterTest, LpPoolCeilModeLastWindowIsTheNormOfItsValues) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{5}});
  onnx::NodeProto* pool = builder.node("LpPool", {"x"}, {"y"});
  add_ints_attr(pool, "kernel_shape", {2});
  add_ints_attr(pool, "strides", {2});
  add_int_attr(pool, "p", 1);
  add_int_attr(pool, "ceil_mode", 1);
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  // x = 0..4: windows [0, 1], [2, 3] and, from ceil_mode, [4] alone (not 4 · 2 as an average
  // pool scaled by the kernel size would give).
  const Tensor y = run_reference(*graph, {op_test::iota_tensor(DType::kF32, {1, 1, 5})})[0];
  EXPECT_EQ(y.to_floats(), (std::vector<float>{1, 5, 4}));
}

TEST(PoolConverterTest, LpPoolRefusesANonPositiveP) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{5}});
  onnx::NodeProto* pool = builder.node("LpPool", {"x"}, {"y"}, "lp");
  add_ints_attr(pool, "kernel_shape", {2});
  add_int_attr(pool, "p", 0);
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("ONNX node 'lp' (LpPool): p must be positive, not 0"));
}

}  // namespace
}  // namespace kiln::onnx_import
