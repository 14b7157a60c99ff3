// Tests of fusion nodes in the IR: building one through the API, the text round trip with a
// body, the verifier's checks of bodies, the reference interpreter running a body, DOT clusters
// and kernel counting.
#include <gtest/gtest.h>

#include "ir/dot.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "reference/reference_interpreter.h"

namespace kiln {
namespace {

const TensorType kVector{DType::kF32, {4}};

// relu(x + y) * 0.5 as a loop fusion, built through the API.
std::unique_ptr<Graph> loop_fusion_graph() {
  auto graph = std::make_unique<Graph>("fused");
  Value* x = graph->add_input("x", kVector);
  Value* y = graph->add_input("y", kVector);
  auto body = std::make_unique<Graph>("body");
  Value* a = body->add_input("a", kVector);
  Value* b = body->add_input("b", kVector);
  Value* half = body->add_constant("half", Tensor::scalar_f32(0.5f));
  Node* sum = body->add_node("add", {a, b});
  Node* relu = body->add_node("relu", {sum->result()});
  Node* scaled = body->add_node("mul", {relu->result(), half});
  body->set_outputs({scaled->result(), sum->result()});
  Node* fusion = graph->add_fusion("fusion.loop", {x, y}, std::move(body), {"/Add", "/Relu"});
  graph->set_outputs({fusion->result(0), fusion->result(1)});
  return graph;
}

Tensor vector_of(std::vector<float> values) {
  Tensor tensor(kVector);
  for (size_t i = 0; i < values.size(); ++i) tensor.set_float(static_cast<int64_t>(i), values[i]);
  return tensor;
}

TEST(IrFusion, ResultsTakeTheBodysOutputTypesAndTheInterpreterRunsTheBody) {
  std::unique_ptr<Graph> graph = loop_fusion_graph();
  ASSERT_NO_THROW(verify_graph(*graph));
  const Node& fusion = *graph->nodes()[0];
  EXPECT_EQ(fusion_kind(fusion), FusionKind::kLoop);
  EXPECT_EQ(fusion.results().size(), 2u);
  const std::vector<Tensor> out =
      run_reference(*graph, {vector_of({1, -2, 3, -4}), vector_of({1, 1, 1, 1})});
  EXPECT_EQ(out[0].get_float(0), 1.0f);
  EXPECT_EQ(out[0].get_float(1), 0.0f);
  EXPECT_EQ(out[0].get_float(2), 2.0f);
  EXPECT_EQ(out[1].get_float(3), -3.0f);
}

TEST(IrFusion, TextRoundTripsWithTheBody) {
  const std::string text = print_graph(*loop_fusion_graph());
  EXPECT_NE(text.find("  %0, %1 = fusion.loop(%x, %y) {\n    ^(%a: f32[4], %b: f32[4]):\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    yield %2, %0\n  } : (f32[4], f32[4]) loc(\"/Add\", \"/Relu\")"),
            std::string::npos)
      << text;
  EXPECT_EQ(print_graph(*parse_graph(text)), text);
}

// Expects parsing `text` to fail with a message containing `message`.
void expect_parse_error(const std::string& text, const std::string& message) {
  try {
    parse_graph(text, "t.kir");
    ADD_FAILURE() << "parsed without error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
}

TEST(IrFusion, ParserReportsBadBodies) {
  expect_parse_error(R"(graph @g(%x: f32[4]) -> (f32[4]) {
  %0 = fusion.loop(%x) {
    ^(%a: f32[2]):
    %1 = relu(%a) : f32[2]
    yield %1
  } : f32[2]
  return %0
})",
                     "operand 0 is f32[4] but the body takes f32[2]");
  expect_parse_error(R"(graph @g(%x: f32[4]) -> (f32[4]) {
  %0 = fusion.loop(%x) {
    ^(%a: f32[4]):
    %1 = relu(%x) : f32[4]
    yield %1
  } : f32[4]
  return %0
})",
                     "use of undefined value '%x'");
  expect_parse_error(R"(graph @g(%x: f32[4]) -> (f32[4]) {
  %0 = fusion.loop(%x) {
    ^(%a: f32[4]):
    %1 = relu(%a) : f32[4]
  } : f32[4]
  return %0
})",
                     "expected 'yield' to end the body of fusion.loop");
  expect_parse_error(R"(graph @g(%x: f32[4]) -> (f32[4]) {
  %0 = fusion.loop(%x) {
    ^(%a: f32[4]):
    %1 = relu(%a) : f32[4]
    yield %1
  } : f16[4]
  return %0
})",
                     "result 0 declared f16[4] but the body yields f32[4]");
  expect_parse_error(R"(graph @g(%x: f32[4]) -> (f32[4]) {
  %0 = fusion.loop(%x) {relu} : f32[4]
  return %0
})",
                     "expected '^' to start the parameters of the body of fusion.loop");
}

TEST(IrFusion, VerifierRejectsAFusionInsideABody) {
  auto inner_body = std::make_unique<Graph>("inner");
  Value* a = inner_body->add_input("a", kVector);
  inner_body->set_outputs({inner_body->add_node("relu", {a})->result()});
  auto body = std::make_unique<Graph>("outer");
  Value* b = body->add_input("b", kVector);
  Node* nested = body->add_fusion("fusion.loop", {b}, std::move(inner_body));
  body->set_outputs({nested->result()});
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  Node* fusion = graph.add_fusion("fusion.loop", {x}, std::move(body));
  graph.set_outputs({fusion->result()});
  EXPECT_THROW(
      {
        try {
          verify_graph(graph);
        } catch (const InputError& error) {
          EXPECT_NE(std::string(error.what()).find("its body holds another fusion"),
                    std::string::npos)
              << error.what();
          throw;
        }
      },
      InputError);
}

TEST(IrFusion, AddNodeRefusesFusionOpsAndAddFusionRefusesOtherOps) {
  Graph graph;
  Value* x = graph.add_input("x", kVector);
  EXPECT_THROW(graph.add_node("fusion.loop", {x}), InputError);
  EXPECT_THROW(graph.add_fusion("relu", {x}, std::make_unique<Graph>()), InputError);
}

TEST(IrFusion, DotDrawsTheBodyAsACluster) {
  const std::string dot = graph_to_dot(*loop_fusion_graph());
  EXPECT_NE(dot.find("subgraph cluster_n0 {"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"fusion.loop\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("in0 -> n0_0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("n0_2 -> out0"), std::string::npos) << dot;
}

TEST(IrFusion, KernelCountsCountFusionsByKindAndSkipViews) {
  std::unique_ptr<Graph> graph = loop_fusion_graph();
  Node* reshape =
      graph->add_node("reshape", {graph->outputs()[0]}, {{"shape", std::vector<int64_t>{2, 2}}});
  Node* neg = graph->add_node("neg", {reshape->result()});
  graph->set_outputs({neg->result()});
  const KernelCounts counts = count_kernels(*graph);
  EXPECT_EQ(counts.kernels, 2);
  EXPECT_EQ(counts.fusions, 1);
  EXPECT_EQ(counts.views, 1);
  EXPECT_EQ(counts.fusions_by_kind.at("loop"), 1);
  EXPECT_EQ(counts.unfused_by_op.at("neg"), 1);
}

}  // namespace
}  // namespace kiln
