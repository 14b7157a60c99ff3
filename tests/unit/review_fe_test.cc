// Regression tests from the frontend/tools review: malformed nodes and files that used to crash
// (division by zero, reads past an empty tensor, huge allocations) or were silently misread now
// fail with an InputError naming the culprit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontend/op_support.h"
#include "frontend_model_builder.h"
#include "ir/error.h"
#include "test_temp_dir.h"
#include "tools/input_shapes.h"
#include "tools/tensor_files.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_int_attr;
using frontend_test::add_ints_attr;
using frontend_test::add_string_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

// SAME padding divides by the stride: a zero stride must be rejected before that.
TEST(ReviewFeTest, SamePaddingWithAZeroStrideIsAnError) {
  ModelBuilder conv;
  conv.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  conv.float_initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  onnx::NodeProto* node = conv.node("Conv", {"x", "w"}, {"y"}, "conv0");
  add_string_attr(node, "auto_pad", "SAME_UPPER");
  add_ints_attr(node, "strides", {0, 1});
  conv.output("y");
  EXPECT_THAT(import_error(conv),
              AllOf(HasSubstr("'conv0' (Conv)"), HasSubstr("'strides' and 'dilations'")));

  ModelBuilder pool;
  pool.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  node = pool.node("MaxPool", {"x"}, {"y"}, "pool0");
  add_ints_attr(node, "kernel_shape", {2, 2});
  add_string_attr(node, "auto_pad", "SAME_LOWER");
  add_ints_attr(node, "strides", {1, 0});
  pool.output("y");
  EXPECT_THAT(import_error(pool), HasSubstr("'pool0' (MaxPool)"));
}

TEST(ReviewFeTest, SplitWithoutOutputsIsAnError) {
  ModelBuilder builder(18);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  add_int_attr(builder.node("Split", {"x"}, {}, "split0"), "num_outputs", 0);
  EXPECT_THAT(import_error(builder), AllOf(HasSubstr("'split0' (Split)"), HasSubstr("no outputs")));
}

// Scalar configuration inputs given as empty tensors were read past their end.
TEST(ReviewFeTest, EmptyScalarInputsAreErrors) {
  ModelBuilder trilu;
  trilu.input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{3}});
  trilu.int64_initializer("k", {0}, {});
  trilu.node("Trilu", {"x", "k"}, {"y"}, "trilu0");
  trilu.output("y");
  EXPECT_THAT(import_error(trilu), AllOf(HasSubstr("'trilu0' (Trilu)"), HasSubstr("got 0")));

  ModelBuilder dropout;
  dropout.input("x", onnx::TensorProto::FLOAT, {int64_t{3}});
  dropout.initializer("training", onnx::TensorProto::BOOL, {0});
  dropout.node("Dropout", {"x", "", "training"}, {"y"}, "drop0");
  dropout.output("y");
  EXPECT_THAT(import_error(dropout), AllOf(HasSubstr("'drop0' (Dropout)"), HasSubstr("got 0")));
}

// A Constant's value attribute of the wrong type used to read as 0 (value_float) or fail with an
// unrelated data-type message (value).
TEST(ReviewFeTest, ConstantValueAttributesAreTypeChecked) {
  ModelBuilder builder;
  add_int_attr(builder.node("Constant", {}, {"c"}, "c0"), "value_float", 3);
  builder.output("c");
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("'c0' (Constant)"), HasSubstr("'value_float' must be FLOAT")));
}

TEST(ReviewFeTest, ConstantNeedsExactlyOneValue) {
  ModelBuilder builder;
  onnx::NodeProto* node = builder.node("Constant", {}, {"c"}, "c0");
  add_int_attr(node, "value_int", 1);
  add_ints_attr(node, "value_ints", {1, 2});
  builder.output("c");
  EXPECT_THAT(import_error(builder), AllOf(HasSubstr("'c0' (Constant)"), HasSubstr("exactly one")));
}

TEST(ReviewFeTest, NodesOfAModelWithoutTheDefaultOpsetAreUnsupported) {
  onnx::NodeProto relu;
  relu.set_op_type("Relu");
  EXPECT_FALSE(is_supported(relu, {{"com.example", 1}}));
  EXPECT_TRUE(is_supported(relu, {{"", 17}}));
  relu.set_op_type("Constant");
  EXPECT_TRUE(is_supported(relu, {{"", 17}}));
}

}  // namespace
}  // namespace kiln::onnx_import

namespace kiln::tools {
namespace {

// A .npy header promising far more data than the file holds must not be allocated.
TEST(ReviewFeTest, NpyWithAHugeShapeAndLittleDataIsAnError) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  const std::string path =
      testing_support::fresh_temp_path("review_fe_huge.npy").string();
  {
    std::ofstream file(path, std::ios::binary);
    file.write("\x93NUMPY\x01\x00", 8);
    const char length[2] = {static_cast<char>(header.size() & 0xff),
                            static_cast<char>(header.size() >> 8)};
    file.write(length, 2);
    file << header << std::string(16, '\0');
  }
  try {
    read_npy(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("f32[100000000000]"));
  }
}

TEST(ReviewFeTest, InputShapeRejectsATrailingSeparator) {
  EXPECT_THROW(parse_input_shapes({"x=2x"}), InputError);
  EXPECT_THROW(parse_input_shapes({"x=x2"}), InputError);
  EXPECT_EQ(parse_input_shapes({"x="}).at("x"), Shape{});
  EXPECT_EQ(parse_input_shapes({"x=2x3"}).at("x"), (Shape{2, 3}));
}

}  // namespace
}  // namespace kiln::tools
