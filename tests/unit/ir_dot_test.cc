// Tests of the Graphviz DOT output: shapes, labels, edges and escaping.
#include <gtest/gtest.h>

#include "ir/dot.h"
#include "ir/parser.h"

namespace kiln {
namespace {

TEST(IrDot, DrawsInputsConstantsNodesAndOutputs) {
  std::unique_ptr<Graph> graph = parse_graph(
      "graph @\"my \\\"net\\\"\"(%x: f32[1,4]) -> (f32[1,2], i64[1,2]) {\n"
      "  %w = const f32[4,4]\n"
      "  %0 = matmul(%x, %w) : f32[1,4] loc(\"/fc/MatMul\")\n"
      "  %v, %i = top_k(%0) {k=2} : (f32[1,2], i64[1,2]) loc(\"TopK\", \"a\\\\b\")\n"
      "  return %v, %i\n"
      "}\n");
  const std::string dot = graph_to_dot(*graph);
  const char* const kExpectedLines[] = {
      "digraph \"my \\\"net\\\"\" {\n",
      "  in0 [shape=ellipse, label=\"%x\\nf32[1,4]\"];\n",
      "  c0 [shape=note, fontsize=10, label=\"%w\\nf32[4,4]\"];\n",
      "  n0 [shape=box, label=\"matmul\\n/fc/MatMul\"];\n",
      "  in0 -> n0 [label=\"f32[1,4]\"];\n",
      "  c0 -> n0 [label=\"f32[4,4]\"];\n",
      "  n1 [shape=box, label=\"top_k\\nTopK\\na\\\\b\"];\n",
      "  n0 -> n1 [label=\"f32[1,4]\"];\n",
      "  out0 [shape=ellipse, label=\"output 0\"];\n",
      "  n1 -> out0 [label=\"#0 f32[1,2]\"];\n",
      "  n1 -> out1 [label=\"#1 i64[1,2]\"];\n",
  };
  for (const char* line : kExpectedLines) {
    EXPECT_NE(dot.find(line), std::string::npos) << "missing " << line << " in\n" << dot;
  }
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

}  // namespace
}  // namespace kiln
