// Tests of ONNX model import: parsing, IR and opset checks, the unsupported-op report, graph
// inputs (symbolic dimensions, bound shapes and values), Constant nodes, outputs, and the errors
// for values used before they are defined.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "frontend/node_importer.h"
#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_float_attr;
using frontend_test::add_ints_attr;
using frontend_test::fresh_temp_dir;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string bytes_error(const std::string& bytes) {
  try {
    import_onnx_bytes(bytes, ".");
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

// A model whose only output is the float initializer 'w'.
ModelBuilder initializer_model(int64_t opset = 17) {
  ModelBuilder builder(opset);
  builder.float_initializer("w", {2}, {1.0f, 2.0f});
  builder.output("w");
  return builder;
}

TEST(FrontendTest, ImportsAnInitializerAsAConstantOutput) {
  const std::unique_ptr<Graph> graph = initializer_model().import();
  EXPECT_EQ(graph->num_nodes(), 0u);
  ASSERT_EQ(graph->constants().size(), 1u);
  EXPECT_EQ(graph->constants()[0]->name(), "w");
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0]->data().to_floats(), (std::vector<float>{1.0f, 2.0f}));
}

TEST(FrontendTest, GarbageBytesAreRejected) {
  EXPECT_THAT(bytes_error("\x0a\xff\xff\xff\xff\x0f"),
              HasSubstr("<memory>: not a valid ONNX model (protobuf parse failed)"));
  EXPECT_THAT(bytes_error(std::string("\xff\xff\xff\xff", 4)),
              HasSubstr("not a valid ONNX model (protobuf parse failed)"));
}

TEST(FrontendTest, TruncatedModelIsRejected) {
  ModelBuilder builder = initializer_model();
  const std::string bytes = builder.bytes();
  // Cutting inside the graph field leaves a length prefix that runs past the end.
  EXPECT_THAT(bytes_error(bytes.substr(0, bytes.size() - 5)),
              HasSubstr("not a valid ONNX model (protobuf parse failed)"));
}

TEST(FrontendTest, FileErrorsNameTheFile) {
  const std::filesystem::path dir = fresh_temp_dir("files");
  const std::string missing = (dir / "missing.onnx").string();
  EXPECT_THROW(
      {
        try {
          import_onnx_file(missing);
        } catch (const InputError& error) {
          EXPECT_THAT(error.what(), AllOf(HasSubstr(missing), HasSubstr("cannot open")));
          throw;
        }
      },
      InputError);

  const std::string garbage = (dir / "garbage.onnx").string();
  std::ofstream(garbage) << "\x0a\xff\xff\xff\xff\x0f";
  EXPECT_THROW(
      {
        try {
          import_onnx_file(garbage);
        } catch (const InputError& error) {
          EXPECT_THAT(error.what(),
                      HasSubstr(garbage + ": not a valid ONNX model (protobuf parse failed)"));
          throw;
        }
      },
      InputError);
}

TEST(FrontendTest, ModelWithoutGraphOrIrVersionIsRejected) {
  onnx::ModelProto empty;
  empty.set_ir_version(8);
  EXPECT_THAT(bytes_error(empty.SerializeAsString()), HasSubstr("no graph"));

  ModelBuilder builder = initializer_model();
  builder.model().clear_ir_version();
  EXPECT_THAT(import_error(builder), HasSubstr("IR version 0 is not supported"));
  builder.model().set_ir_version(1000);
  EXPECT_THAT(import_error(builder), HasSubstr("IR version 1000 is not supported"));
}

ModelBuilder one_op_model(const std::string& op_type, int64_t opset) {
  ModelBuilder builder(opset);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{3}});
  builder.node(op_type, {"x"}, {"y"}, "the_node");
  builder.output("y");
  return builder;
}

TEST(FrontendTest, OpsAreSupportedPerOpVersionNotPerOpset) {
  // Relu's signature is unchanged since Relu-6, so a model declaring opset 11 imports, as does
  // one declaring an opset newer than 21.
  EXPECT_NO_THROW(one_op_model("Relu", 11).import());
  EXPECT_NO_THROW(one_op_model("Relu", 25).import());
  // Softmax-11 has another default axis and meaning: it is an unsupported op there.
  EXPECT_THAT(import_error(one_op_model("Softmax", 11)),
              HasSubstr("Softmax (opset 11) at node 'the_node'"));
  EXPECT_NO_THROW(one_op_model("Softmax", 13).import());
}

TEST(FrontendTest, OpsetNewerThanKilnKnows) {
  EXPECT_THAT(import_error(initializer_model(ConverterTable::newest_known_opset() + 1)),
              HasSubstr("is newer than kiln knows"));
}

TEST(FrontendTest, OpsetFromTheAiOnnxDomainName) {
  ModelBuilder builder = one_op_model("Relu", 17);
  builder.model().mutable_opset_import(0)->set_domain("ai.onnx");
  EXPECT_NO_THROW(builder.import());
  builder.model().mutable_opset_import(0)->set_domain("com.microsoft");
  EXPECT_THAT(import_error(builder), HasSubstr("does not import the default ONNX opset"));
}

TEST(FrontendTest, AllUnsupportedOpsAreListedAtOnce) {
  ModelBuilder builder;
  onnx::OperatorSetIdProto* ms = builder.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  builder.node("NoSuchOp", {"x"}, {"a"}, "first");
  builder.node("NoSuchOp", {"a"}, {"b"}, "second");
  builder.node("FusedGelu", {"b"}, {"c"}, "ms_gelu")->set_domain("com.microsoft");
  builder.node("AnotherMissingOp", {"c"}, {"d"});
  builder.output("d");
  const std::string message = import_error(builder);
  EXPECT_THAT(message, HasSubstr("4 nodes use ONNX ops kiln does not support"));
  EXPECT_THAT(message, HasSubstr("NoSuchOp (opset 17) at nodes 'first', 'second'"));
  EXPECT_THAT(message, HasSubstr("com.microsoft.FusedGelu (opset 1) at node 'ms_gelu'"));
  EXPECT_THAT(message, HasSubstr("AnotherMissingOp (opset 17) at node 'AnotherMissingOp #3'"));
}

TEST(FrontendTest, SymbolicDimensionsMustBeBound) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT,
                {std::string("batch"), int64_t{3}, int64_t{224}, int64_t{224}});
  builder.output("x");
  EXPECT_THAT(import_error(builder),
              HasSubstr("input 'x' has symbolic dimensions [batch,3,224,224]; bind them with "
                        "--input-shape x=1x3x224x224"));

  ImportOptions options;
  options.input_shapes["x"] = {8, 3, 224, 224};
  const std::unique_ptr<Graph> graph = builder.import(options);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->type(), (TensorType{DType::kF32, {8, 3, 224, 224}}));
  EXPECT_EQ(graph->outputs()[0], graph->inputs()[0]);
}

TEST(FrontendTest, UnboundSymbolicDimensionsDefaultToOneWithANote) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT,
                {std::string("batch"), int64_t{3}, std::string("size"), int64_t{5}});
  builder.output("x");
  std::vector<std::string> notes;
  ImportOptions options;
  options.on_defaulted_dims = [&](const std::string& note) { notes.push_back(note); };
  const std::unique_ptr<Graph> graph = builder.import(options);
  EXPECT_EQ(graph->inputs()[0]->type(), (TensorType{DType::kF32, {1, 3, 1, 5}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0],
            "input 'x' has symbolic dimensions [batch,3,size,5]: bound to 1x3x1x5 (choose with "
            "--input-shape x=DIMS)");
  // A bound shape wins, with no note.
  notes.clear();
  options.input_shapes["x"] = {4, 3, 2, 5};
  EXPECT_EQ(builder.import(options)->inputs()[0]->type(), (TensorType{DType::kF32, {4, 3, 2, 5}}));
  EXPECT_TRUE(notes.empty());
}

TEST(FrontendTest, BoundShapesMustAgreeWithTheModel) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{3}});
  builder.output("x");
  ImportOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {1, 3, 5};
  EXPECT_THAT(import_error(builder, wrong_rank),
              AllOf(HasSubstr("input 'x'"), HasSubstr("[batch,3]"), HasSubstr("rank 2")));
  ImportOptions wrong_dim;
  wrong_dim.input_shapes["x"] = {1, 4};
  EXPECT_THAT(import_error(builder, wrong_dim),
              AllOf(HasSubstr("input 'x'"), HasSubstr("[1,4]"), HasSubstr("dimension 1")));
  ImportOptions unknown_name;
  unknown_name.input_shapes["y"] = {1, 3};
  EXPECT_THAT(
      import_error(builder, unknown_name),
      AllOf(HasSubstr("the model has no input 'y'"), HasSubstr("its inputs: 'x'")));
}

TEST(FrontendTest, InputWithoutShapeNeedsABinding) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::INT64, {})
      ->mutable_type()
      ->mutable_tensor_type()
      ->clear_shape();
  builder.output("x");
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("input 'x' has no shape"), HasSubstr("--input-shape x=")));
  ImportOptions options;
  options.input_shapes["x"] = {2, 2};
  EXPECT_EQ(builder.import(options)->inputs()[0]->type(), (TensorType{DType::kI64, {2, 2}}));
}

TEST(FrontendTest, UnsupportedInputTypesNameTheInput) {
  ModelBuilder strings;
  strings.input("text", onnx::TensorProto::STRING, {int64_t{1}});
  strings.output("text");
  EXPECT_THAT(import_error(strings), AllOf(HasSubstr("input 'text'"), HasSubstr("STRING")));

  ModelBuilder sequence;
  onnx::ValueInfoProto* input = sequence.graph().add_input();
  input->set_name("seq");
  input->mutable_type()->mutable_sequence_type();
  sequence.output("seq");
  EXPECT_THAT(import_error(sequence), AllOf(HasSubstr("input 'seq'"), HasSubstr("sequence")));
}

TEST(FrontendTest, InputWithAnInitializerIsAConstant) {
  ModelBuilder builder = initializer_model();
  builder.input("w", onnx::TensorProto::FLOAT, {int64_t{2}});
  const std::unique_ptr<Graph> graph = builder.import();
  EXPECT_TRUE(graph->inputs().empty());
  EXPECT_TRUE(graph->outputs()[0]->is_constant());

  ImportOptions options;
  options.input_shapes["w"] = {2};
  EXPECT_THAT(import_error(builder, options),
              HasSubstr("a shape is bound to 'w', which the model defines with an initializer"));
}

TEST(FrontendTest, BoundInputsBecomeConstants) {
  ModelBuilder builder;
  builder.input("shape", onnx::TensorProto::INT64, {int64_t{2}});
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.output("shape");
  builder.output("x");
  ImportOptions options;
  options.bound_inputs["shape"] = Tensor::from_vector(DType::kI64, {2}, std::vector<int>{3, 4});
  const std::unique_ptr<Graph> graph = builder.import(options);
  ASSERT_EQ(graph->inputs().size(), 1u);
  EXPECT_EQ(graph->inputs()[0]->name(), "x");
  EXPECT_EQ(graph->outputs()[0]->name(), "shape");
  EXPECT_EQ(graph->outputs()[0]->data().to_ints(), (std::vector<int64_t>{3, 4}));

  ImportOptions wrong_type;
  wrong_type.bound_inputs["shape"] = Tensor::from_vector(DType::kF32, {2}, std::vector<int>{3, 4});
  EXPECT_THAT(import_error(builder, wrong_type),
              AllOf(HasSubstr("input 'shape'"), HasSubstr("f32[2]")));
}

TEST(FrontendTest, ConstantNodesBecomeNamedConstants) {
  ModelBuilder builder;
  add_float_attr(builder.node("Constant", {}, {"pi"}), "value_float", 3.5f);
  add_ints_attr(builder.node("Constant", {}, {"dims"}), "value_ints", {2, -1});
  onnx::AttributeProto* value = builder.node("Constant", {}, {"table"})->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::INT32);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_int32_data(7);
  value->mutable_t()->add_int32_data(-7);
  builder.output("pi");
  builder.output("dims");
  builder.output("table");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(graph->outputs().size(), 3u);
  EXPECT_EQ(graph->outputs()[0]->name(), "pi");
  EXPECT_EQ(graph->outputs()[0]->type(), (TensorType{DType::kF32, {}}));
  EXPECT_EQ(graph->outputs()[0]->data().to_floats(), (std::vector<float>{3.5f}));
  EXPECT_EQ(graph->outputs()[1]->data().to_ints(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(graph->outputs()[2]->type(), (TensorType{DType::kI32, {2}}));
  EXPECT_EQ(graph->outputs()[2]->data().to_ints(), (std::vector<int64_t>{7, -7}));
}

TEST(FrontendTest, UnsupportedConstantValuesNameTheNode) {
  ModelBuilder builder;
  onnx::AttributeProto* value = builder.node("Constant", {}, {"s"}, "words")->add_attribute();
  value->set_name("value_strings");
  value->set_type(onnx::AttributeProto::STRINGS);
  value->add_strings("hello");
  builder.output("s");
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("ONNX node 'words' (Constant)"), HasSubstr("value_strings")));
}

TEST(FrontendTest, SparseInitializersAreRejected) {
  ModelBuilder builder = initializer_model();
  onnx::SparseTensorProto* sparse = builder.graph().add_sparse_initializer();
  sparse->mutable_values()->set_name("sparse_w");
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("sparse initializer 'sparse_w'"), HasSubstr("not supported")));
}

TEST(FrontendTest, OutputsThatNothingProducesAreErrors) {
  ModelBuilder builder = initializer_model();
  builder.output("nowhere");
  EXPECT_THAT(
      import_error(builder),
      HasSubstr("graph output 'nowhere' is not produced by any node, initializer or input"));
}

TEST(FrontendTest, OneValueMayBeSeveralOutputs) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.output("x");
  builder.output("x");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(graph->outputs().size(), 2u);
  EXPECT_EQ(graph->outputs()[0], graph->outputs()[1]);
  EXPECT_EQ(graph->outputs()[0]->name(), "x");
}

TEST(FrontendTest, UnusedInitializersAreDropped) {
  ModelBuilder builder = initializer_model();
  builder.float_initializer("unused", {1}, {0.0f});
  EXPECT_EQ(builder.import()->constants().size(), 1u);
}

TEST(FrontendTest, ValuesMustBeDefinedBeforeUse) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.node("Relu", {"later"}, {"y"}, "early_relu");
  builder.node("Relu", {"x"}, {"later"}, "late_relu");
  builder.output("y");
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("ONNX node 'early_relu' (Relu): input 0 ('later')"),
                    HasSubstr("used before node 'late_relu' produces it")));
}

TEST(FrontendTest, MissingInitializerIsAnUndefinedValue) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.node("Add", {"x", "bias"}, {"y"}, "add_bias");
  builder.output("y");
  EXPECT_THAT(
      import_error(builder),
      AllOf(HasSubstr("ONNX node 'add_bias' (Add): input 1 ('bias')"), HasSubstr("not defined")));
}

TEST(FrontendTest, ValuesMayNotBeDefinedTwice) {
  ModelBuilder builder = initializer_model();
  add_float_attr(builder.node("Constant", {}, {"w"}, "shadow"), "value_float", 1.0f);
  EXPECT_THAT(import_error(builder),
              AllOf(HasSubstr("value 'w' is defined twice"), HasSubstr("'shadow'")));
}

TEST(FrontendTest, IntermediateResultsAreUnnamedOutputsKeepTheirNames) {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {int64_t{2}});
  builder.node("Relu", {"x"}, {"hidden"});
  builder.node("Relu", {"hidden"}, {"y"});
  builder.output("y");
  const std::unique_ptr<Graph> graph = builder.import();
  ASSERT_EQ(graph->num_nodes(), 2u);
  const std::vector<Node*> nodes = graph->nodes();
  EXPECT_EQ(nodes[0]->result()->name(), "");
  EXPECT_EQ(nodes[1]->result()->name(), "y");
  EXPECT_EQ(nodes[0]->provenance(), (std::vector<std::string>{"Relu #0"}));
  EXPECT_THAT(nodes[1]->provenance()[0], Not(HasSubstr("#0")));
}

}  // namespace
}  // namespace kiln::onnx_import
