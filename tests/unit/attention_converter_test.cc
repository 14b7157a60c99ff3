// Tests of the ONNX Attention converter (frontend/converters/nn_attention.cc) beyond the ONNX node
// tests: rows that a window leaves without keys are zero (decided at import), qk_matmul_output
// mode 0 is the scores before the softcap, and the errors name the node and what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "frontend/onnx_importer.h"
#include "frontend_model_builder.h"
#include "op_test_util.h"
#include "reference/reference_interpreter.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::add_float_attr;
using frontend_test::add_int_attr;
using frontend_test::DimSpec;
using frontend_test::import_error;
using frontend_test::ModelBuilder;
using op_test::node_ops;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr int kFloat = onnx::TensorProto::FLOAT;

// Y = Attention(Q, K, V) named 'attn', 4-D inputs of the given shapes; returns the node for
// attributes.
onnx::NodeProto* attention(ModelBuilder& builder, const std::vector<DimSpec>& q,
                           const std::vector<DimSpec>& kv,
                           const std::vector<std::string>& outputs = {"Y"}) {
  builder.input("Q", kFloat, q);
  builder.input("K", kFloat, kv);
  builder.input("V", kFloat, kv);
  for (const std::string& output : outputs) {
    if (!output.empty()) builder.output(output);
  }
  return builder.node("Attention", {"Q", "K", "V"}, outputs, "attn");
}

Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector(DType::kF32, std::move(shape), values);
}

TEST(AttentionConverterTest, RowsThatALeftWindowLeavesWithoutKeysAreZero) {
  // Four queries over two keys, each query seeing keys j >= i only: queries 2 and 3 see none.
  ModelBuilder builder(25);
  add_int_attr(attention(builder, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{2}},
                         {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}}),
               "left_window_size", 0);
  const std::unique_ptr<Graph> graph = builder.import();
  const std::vector<Tensor> outputs = run_reference(
      *graph, {floats({1, 1, 4, 2}, {0, 0, 1, 1, 2, 2, 3, 3}), floats({1, 1, 2, 2}, {1, 0, 0, 1}),
               floats({1, 1, 2, 2}, {1, 2, 3, 4})});
  // Query 0 sees both keys with equal scores, query 1 key 1 alone.
  EXPECT_THAT(outputs[0].to_floats(), ElementsAre(FloatEq(2), FloatEq(3), FloatEq(3), FloatEq(4),
                                                  FloatEq(0), FloatEq(0), FloatEq(0), FloatEq(0)));
}

TEST(AttentionConverterTest, ACausalBiasLeftAsOpsGivesTheFoldedResult) {
  // Without import-time folding the causal bias stays ops (as it does past the folding limit);
  // the rows it leaves keys are still known at import, so no row guard is needed either way.
  ModelBuilder builder(23);
  add_int_attr(attention(builder, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{2}},
                         {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{2}}),
               "is_causal", 1);
  ImportOptions no_folding;
  no_folding.fold_constants = false;
  const std::unique_ptr<Graph> folded = builder.import();
  const std::unique_ptr<Graph> unfolded = builder.import(no_folding);
  const std::vector<Tensor> inputs = {
      floats({1, 2, 3, 2},
             {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f}),
      floats({1, 2, 3, 2}, {1, 0, 0, 1, 1, 1, -1, 0, 0, -1, 1, 1}),
      floats({1, 2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})};
  EXPECT_THAT(node_ops(*unfolded), Contains("greater_or_equal"));
  EXPECT_THAT(node_ops(*unfolded), Not(Contains("reduce_max")));
  const std::vector<Tensor> want = run_reference(*folded, inputs);
  const std::vector<Tensor> got = run_reference(*unfolded, inputs);
  const std::vector<float> y = want[0].to_floats();
  EXPECT_EQ(got[0].to_floats(), y);
  // The first query of each head sees its first key alone.
  EXPECT_THAT(std::vector<float>(y.begin(), y.begin() + 2), ElementsAre(FloatEq(1), FloatEq(2)));
  EXPECT_THAT(std::vector<float>(y.begin() + 6, y.begin() + 8),
              ElementsAre(FloatEq(7), FloatEq(8)));
}

TEST(AttentionConverterTest, QkMatmulOutputModeZeroIsTheScoresBeforeTheSoftcap) {
  ModelBuilder builder(23);
  onnx::NodeProto* node =
      attention(builder, {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}},
                {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{1}}, {"Y", "", "", "scores"});
  add_float_attr(node, "softcap", 1.0f);
  add_float_attr(node, "scale", 0.5f);
  const std::unique_ptr<Graph> graph = builder.import();
  const std::vector<Tensor> outputs = run_reference(
      *graph, {floats({1, 1, 1, 1}, {4}), floats({1, 1, 1, 1}, {3}), floats({1, 1, 1, 1}, {7})});
  EXPECT_THAT(outputs[0].to_floats(), ElementsAre(FloatEq(7)));
  EXPECT_THAT(outputs[1].to_floats(), ElementsAre(FloatEq(6)));  // 4 · 3 · 0.5, not tanh'd
}

TEST(AttentionConverterTest, ThreeDInputsNeedTheHeadCounts) {
  ModelBuilder builder(23);
  builder.input("Q", kFloat, {int64_t{1}, int64_t{2}, int64_t{8}});
  builder.input("K", kFloat, {int64_t{1}, int64_t{2}, int64_t{8}});
  builder.input("V", kFloat, {int64_t{1}, int64_t{2}, int64_t{8}});
  add_int_attr(builder.node("Attention", {"Q", "K", "V"}, {"Y"}, "attn"), "kv_num_heads", 2);
  builder.output("Y");
  EXPECT_THAT(import_error(builder),
              HasSubstr("ONNX node 'attn' (Attention): 3-D Q f32[1,2,8] needs attribute "
                        "'q_num_heads' dividing its hidden size 8"));
}

TEST(AttentionConverterTest, FourDInputsWithHeadCountsThatDisagreeFail) {
  ModelBuilder opset23(23);
  add_int_attr(attention(opset23, {int64_t{1}, int64_t{4}, int64_t{2}, int64_t{8}},
                         {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{8}}),
               "q_num_heads", 2);
  EXPECT_THAT(import_error(opset23), HasSubstr("attribute 'q_num_heads' is 2 but Q"));
  // Attention-25 refuses them on 4-D inputs altogether.
  ModelBuilder opset25(25);
  add_int_attr(attention(opset25, {int64_t{1}, int64_t{4}, int64_t{2}, int64_t{8}},
                         {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{8}}),
               "kv_num_heads", 2);
  EXPECT_THAT(import_error(opset25),
              HasSubstr("attribute 'kv_num_heads' is for 3-D inputs, and K is 4-D"));
}

TEST(AttentionConverterTest, HeadsThatDoNotGroupFail) {
  ModelBuilder builder(23);
  attention(builder, {int64_t{1}, int64_t{3}, int64_t{2}, int64_t{8}},
            {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{8}});
  EXPECT_THAT(import_error(builder), HasSubstr("the key/value heads must divide the query heads"));
}

TEST(AttentionConverterTest, PastKeyNeedsPastValue) {
  ModelBuilder builder(23);
  attention(builder, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{8}},
            {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{8}});
  builder.input("past", kFloat, {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{8}});
  builder.graph().mutable_node(0)->add_input("");      // attn_mask
  builder.graph().mutable_node(0)->add_input("past");  // past_key
  EXPECT_THAT(import_error(builder),
              HasSubstr("(Attention): past_key and past_value must be given together"));
}

TEST(AttentionConverterTest, AMaskThatDoesNotBroadcastFails) {
  ModelBuilder builder(23);
  attention(builder, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{8}},
            {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{8}});
  builder.input("mask", kFloat, {int64_t{4}, int64_t{3}});
  builder.graph().mutable_node(0)->add_input("mask");
  EXPECT_THAT(import_error(builder),
              HasSubstr("attn_mask f32[4,3] does not broadcast to the scores [1,1,2,3]"));
}

TEST(AttentionConverterTest, BadAttributeValuesAreNamed) {
  const auto error_with = [](const std::string& name, int64_t value) {
    ModelBuilder builder(25);
    add_int_attr(
        attention(builder, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{8}},
                  {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{8}}, {"Y", "", "", "scores"}),
        name, value);
    return import_error(builder);
  };
  EXPECT_THAT(error_with("qk_matmul_output_mode", 4),
              HasSubstr("attribute 'qk_matmul_output_mode' is 4, must be 0, 1, 2 or 3"));
  EXPECT_THAT(error_with("softmax_precision", onnx::TensorProto::INT32),
              HasSubstr("attribute 'softmax_precision' 6 is not a float type"));
  EXPECT_THAT(
      error_with("left_window_size", -2),
      HasSubstr("attribute 'left_window_size' is -2, must be -1 (unbounded) or at least 0"));
}

}  // namespace
}  // namespace kiln::onnx_import
