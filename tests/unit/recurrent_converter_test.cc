// Tests of the ONNX RNN, GRU and LSTM converter (frontend/converters/nn_recurrent.cc) beyond the
// ONNX node tests: a runtime sequence_lens masks the forward direction (an entry of length 0
// keeps its initial state, its outputs zero), and what it refuses names the node and why.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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

// An RNN (Tanh) of hidden size 1 over X [T=2, B=2, I=1] with W = R = 1 and B = 0, named 'rnn':
// H' = tanh(x + H).
ModelBuilder rnn(const std::string& direction, bool lengths, int64_t w_rows = 1) {
  ModelBuilder builder(14);
  builder.input("X", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{2}, int64_t{1}});
  if (lengths) builder.input("lens", onnx::TensorProto::INT32, {int64_t{2}});
  builder.float_initializer("W", {1, w_rows, 1}, std::vector<float>(w_rows, 1.0f));
  builder.float_initializer("R", {1, 1, 1}, {1.0f});
  onnx::NodeProto* node =
      builder.node("RNN", {"X", "W", "R", "", lengths ? "lens" : ""}, {"Y", "Y_h"}, "rnn");
  add_int_attr(node, "hidden_size", 1);
  add_string_attr(node, "direction", direction);
  builder.output("Y");
  builder.output("Y_h");
  return builder;
}

TEST(RecurrentConverterTest, RuntimeSequenceLengthsMaskTheForwardSteps) {
  const std::unique_ptr<Graph> graph = rnn("forward", true).import();
  Tensor x = Tensor::from_vector(DType::kF32, {2, 2, 1}, std::vector<float>{0.5f, 1, 0.25f, 2});
  Tensor lens = Tensor::from_vector(DType::kI32, {2}, std::vector<int32_t>{2, 0});
  const std::vector<Tensor> out = run_reference(*graph, {x, lens});
  const float h0 = std::tanh(0.5f), h1 = std::tanh(0.25f + h0);
  // Entry 0 runs both steps; entry 1 (length 0) none: zeros out, its state the initial zero.
  EXPECT_THAT(out[0].to_floats(),
              ::testing::Pointwise(::testing::FloatNear(1e-6f), std::vector<float>{h0, 0, h1, 0}));
  EXPECT_THAT(out[1].to_floats(),
              ::testing::Pointwise(::testing::FloatNear(1e-6f), std::vector<float>{h1, 0}));
}

TEST(RecurrentConverterTest, ReverseTakesSequenceLengthsOnlyAsTheWholeSequence) {
  EXPECT_THAT(import_error(rnn("reverse", true)),
              HasSubstr("ONNX node 'rnn' (RNN): sequence_lens with a reverse direction is "
                        "supported only as a constant equal to the sequence length"));
}

TEST(RecurrentConverterTest, RefusalsNameTheNode) {
  ModelBuilder shapes = rnn("forward", false, 2);
  EXPECT_THAT(import_error(shapes), HasSubstr("ONNX node 'rnn' (RNN): W must be [1,1,1]"));

  ModelBuilder direction = rnn("sideways", false);
  EXPECT_THAT(import_error(direction),
              HasSubstr("direction 'sideways' is not forward, reverse or bidirectional"));

  ModelBuilder activation = rnn("forward", false);
  activation.model().mutable_graph()->mutable_node(0)->add_attribute()->CopyFrom([] {
    onnx::AttributeProto attr;
    attr.set_name("activations");
    attr.set_type(onnx::AttributeProto::STRINGS);
    attr.add_strings("Gelu");
    return attr;
  }());
  EXPECT_THAT(import_error(activation), HasSubstr("activation 'Gelu' is not supported"));
}

}  // namespace
}  // namespace kiln::onnx_import
