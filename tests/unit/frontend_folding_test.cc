// Tests of import-time constant folding and of inputs that converters need as compile-time
// constants (NodeImporter::constant_input): the exporter's Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape chain becomes one static reshape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "ir/error.h"
#include "ir/op_registry.h"
#include "reference/constant_folding.h"
#include "reference/reference_interpreter.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_int_attr;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

// y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0), [0]), [-1])): x[2,3,4] -> y[2,12].
ModelBuilder flatten_chain_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  builder.int64_initializer("zero", {}, {0});
  builder.int64_initializer("axes", {1}, {0});
  builder.int64_initializer("minus_one", {1}, {-1});
  builder.node("Shape", {"x"}, {"shape"}, "/Shape");
  add_int_attr(builder.node("Gather", {"shape", "zero"}, {"batch"}, "/Gather"), "axis", 0);
  builder.node("Unsqueeze", {"batch", "axes"}, {"batch_1d"}, "/Unsqueeze");
  add_int_attr(builder.node("Concat", {"batch_1d", "minus_one"}, {"target"}, "/Concat"), "axis", 0);
  builder.node("Reshape", {"x", "target"}, {"y"}, "/Reshape");
  builder.output("y");
  return builder;
}

TEST(FrontendFoldingTest, ShapeArithmeticFoldsIntoAStaticReshape) {
  const std::unique_ptr<Graph> graph = flatten_chain_model().import();
  ASSERT_EQ(graph->num_nodes(), 1u);
  const Node* reshape = graph->nodes()[0];
  EXPECT_EQ(reshape->provenance(), (std::vector<std::string>{"/Reshape"}));
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0]->name(), "y");
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kF32, {2, 12}}));

  std::vector<float> values(24);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const std::vector<Tensor> results =
      run_reference(*graph, {Tensor::from_vector(DType::kF32, {2, 3, 4}, values)});
  EXPECT_EQ(results[0].to_floats(), values);
}

TEST(FrontendFoldingTest, WithoutFoldingTheReshapeTargetIsNotConstant) {
  ImportOptions options;
  options.fold_constants = false;
  try {
    flatten_chain_model().import(options);
    FAIL() << "expected an error";
  } catch (const ConstantInputRequired& error) {
    FAIL() << "the target is computed, not a graph input: " << error.what();
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("ONNX node '/Reshape' (Reshape): input 1 ('target')"),
                                    HasSubstr("must be a compile-time constant")));
  }
}

TEST(FrontendFoldingTest, ConstantArithmeticFoldsAndKeepsTheOutputName) {
  ModelBuilder builder;
  builder.float_initializer("a", {2}, {1.0f, 2.0f});
  builder.float_initializer("b", {2}, {10.0f, 20.0f});
  builder.node("Add", {"a", "b"}, {"sum"}, "add");
  builder.output("sum");
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_EQ(graph->num_nodes(), 0u);
  ASSERT_TRUE(graph->outputs()[0]->is_constant());
  EXPECT_EQ(graph->outputs()[0]->name(), "sum");
  EXPECT_EQ(graph->outputs()[0]->data().to_floats(), (std::vector<float>{11.0f, 22.0f}));
  // The operands are no longer used.
  EXPECT_EQ(graph->constants().size(), 1u);

  ImportOptions no_folding;
  no_folding.fold_constants = false;
  EXPECT_EQ(builder.import(no_folding)->num_nodes(), 1u);
}

TEST(FrontendFoldingTest, LargeResultsStayNodes) {
  const int64_t count = kMaxFoldedElements + 1;
  ModelBuilder builder;
  for (const char* name : {"a", "b"}) {
    onnx::TensorProto* tensor = builder.initializer(name, onnx::TensorProto::FLOAT, {count});
    tensor->set_raw_data(std::string(static_cast<size_t>(count) * sizeof(float), '\0'));
  }
  builder.node("Add", {"a", "b"}, {"sum"}, "big_add");
  builder.output("sum");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(graph->num_nodes(), 1u);
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kF32, {count}}));
}

TEST(FrontendFoldingTest, ShapeFedByAGraphInputAsksForABinding) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{6}});
  builder.input("new_shape", onnx::TensorProto::INT64, {int64_t{2}});
  builder.node("Reshape", {"x", "new_shape"}, {"y"}, "reshape");
  builder.output("y");
  try {
    builder.import();
    FAIL() << "expected ConstantInputRequired";
  } catch (const ConstantInputRequired& error) {
    EXPECT_EQ(error.input_name(), "new_shape");
    EXPECT_THAT(error.what(),
                AllOf(HasSubstr("ONNX node 'reshape' (Reshape): input 1 ('new_shape')"),
                      HasSubstr("must be a compile-time constant")));
  }

  ImportOptions options;
  options.bound_inputs["new_shape"] =
      Tensor::from_vector(DType::kI64, {2}, std::vector<int64_t>{3, 4});
  const std::unique_ptr<Graph> graph = builder.import(options);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kF32, {3, 4}}));
}

TEST(FrontendFoldingTest, AttributeOfTheWrongTypeNamesNodeAndAttribute) {
  ModelBuilder builder;
  builder.input("a", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.input("b", onnx::TensorProto::FLOAT, {int64_t{2}});
  onnx::AttributeProto* axis = builder.node("Concat", {"a", "b"}, {"c"}, "cat")->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::FLOAT);
  axis->set_f(0.0f);
  builder.output("c");
  EXPECT_THAT(import_error(builder), AllOf(HasSubstr("ONNX node 'cat' (Concat)"),
                                           HasSubstr("attribute 'axis' must be INT, got FLOAT")));
}

}  // namespace
}  // namespace kiln::onnx_import
