// Tests of the IR text format: exact round trips (tests/ir/all_ops.kir covers every op of the op
// table), bit-exact constants, names, the printing of API-built graphs, and parse errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "ir/parser.h"
#include "ir/printer.h"

namespace kiln {
namespace {

const char kAllOpsFile[] = KILN_SOURCE_DIR "/tests/ir/all_ops.kir";

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file) << "cannot open " << path;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The cases of a .kir file: the text between "// -----" lines, without comment lines and
// surrounding blank lines.
std::vector<std::string> split_cases(const std::string& text) {
  std::vector<std::string> cases(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line == "// -----") {
      cases.emplace_back();
    } else if (line.rfind("//", 0) != 0 && !(line.empty() && cases.back().empty())) {
      cases.back() += line + "\n";
    }
  }
  for (std::string& text_case : cases) {
    while (text_case.size() >= 2 && text_case.substr(text_case.size() - 2) == "\n\n") {
      text_case.pop_back();
    }
  }
  std::erase_if(cases, [](const std::string& text_case) { return text_case.empty(); });
  return cases;
}

void expect_round_trip(const std::string& text) {
  std::unique_ptr<Graph> graph;
  try {
    graph = parse_graph(text);
  } catch (const InputError& error) {
    FAIL() << error.what() << "\nin:\n" << text;
  }
  EXPECT_EQ(print_graph(*graph), text);
}

TEST(IrTextRoundTrip, EveryCaseOfAllOpsFile) {
  for (const std::string& text : split_cases(read_file(kAllOpsFile))) {
    SCOPED_TRACE(text);
    expect_round_trip(text);
  }
}

TEST(IrTextRoundTrip, EveryRegisteredOpHasACase) {
  std::set<std::string> covered;
  for (const std::string& text : split_cases(read_file(kAllOpsFile))) {
    try {
      std::unique_ptr<Graph> graph = parse_graph(text);
      for (const Node* node : graph->nodes()) covered.insert(node->op());
    } catch (const InputError&) {
      // Reported by EveryCaseOfAllOpsFile.
    }
  }
  std::string missing;
  for (const OpInfo* info : OpRegistry::global().all()) {
    if (!covered.count(info->name)) missing += " " + info->name;
  }
  EXPECT_EQ(missing, "") << "ops without a round-trip case in tests/ir/all_ops.kir";
}

TEST(IrTextRoundTrip, SyntaxCases) {
  const char* const kCases[] = {
      // No inputs, a constant output, every dtype's inline data.
      "graph @constants() -> (f32[3], f64[2], f16[2], bf16[2], i64[0], i32[1], i8[2], u8[1], "
      "bool[2,1]) {\n"
      "  %a = const f32[3] [0.1, -3.4028235e+38, 1e-45]\n"
      "  %b = const f64[2] [0.30000000000000004, 5e-324]\n"
      "  %c = const f16[2] [65504.0, 5.9604645e-08]\n"
      "  %d = const bf16[2] [1.0078125, -3.3895314e+38]\n"
      "  %e = const i64[0] []\n"
      "  %f = const i32[1] [-2147483648]\n"
      "  %g = const i8[2] [-128, 127]\n"
      "  %h = const u8[1] [255]\n"
      "  %i = const bool[2,1] [true, false]\n"
      "  return %a, %b, %c, %d, %e, %f, %g, %h, %i\n"
      "}\n",
      // Scalars, special floats, elided data.
      "graph @specials() -> (f32[4], f64[], i64[], f32[100], bool[]) {\n"
      "  %a = const f32[4] [nan, inf, -inf, -0.0]\n"
      "  %b = const f64[] -1.5e+300\n"
      "  %c = const i64[] -9223372036854775808\n"
      "  %d = const f32[100]\n"
      "  %e = const bool[] true\n"
      "  return %a, %b, %c, %d, %e\n"
      "}\n",
      // Quoted names with escapes, a name of digits, numbered values, provenance escapes.
      "graph @\"torch-jit/export\"(%\"input:0\": f32[2], %\"7\": f32[2]) -> (f32[2], f32[2]) {\n"
      "  %0 = add(%\"input:0\", %\"7\") : f32[2] loc(\"/a/Add\", \"q\\\"uote\\\\back\\nline\")\n"
      "  %\"say \\\"hi\\\"\" = relu(%0) : f32[2]\n"
      "  %1 = neg(%\"say \\\"hi\\\"\") : f32[2]\n"
      "  return %1, %0\n"
      "}\n",
      // A graph input returned directly, and an empty return.
      "graph @passthrough(%x: f32[]) -> (f32[]) {\n"
      "  return %x\n"
      "}\n",
      "graph @nothing() -> () {\n"
      "  return\n"
      "}\n",
      // Float attributes print with a '.' or an exponent.
      "graph @attrs(%x: f32[1,1,4]) -> (f32[1,1,4]) {\n"
      "  %0 = leaky_relu(%x) {alpha=100.0} : f32[1,1,4]\n"
      "  %1 = leaky_relu(%0) {alpha=1e+20} : f32[1,1,4]\n"
      "  %2 = leaky_relu(%1) {alpha=-0.1} : f32[1,1,4]\n"
      "  %3 = resize(%2) {mode=\"linear\", roi=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0], scales=[1.0, 1.0, "
      "1.0], sizes=[1, 1, 4]} : f32[1,1,4]\n"
      "  return %3\n"
      "}\n",
  };
  for (const char* text : kCases) {
    SCOPED_TRACE(text);
    expect_round_trip(text);
  }
}

TEST(IrTextRoundTrip, InputWithoutCanonicalSpellingPrintsCanonically) {
  const std::string text =
      "// comment\n"
      "graph @g ( %x : f32 [ 2 ] ) -> ( f32[2] ) {  // trailing comment\n"
      "  %y = const f32[2] [1, 2e0]\n"
      "  %41 = add(%x, %y) {} : (f32[2])\n"
      "  %\"z\" = relu(%41) : f32[2] loc()\n"
      "  return %z\n"
      "}\n";
  EXPECT_EQ(print_graph(*parse_graph(text)),
            "graph @g(%x: f32[2]) -> (f32[2]) {\n"
            "  %y = const f32[2] [1.0, 2.0]\n"
            "  %0 = add(%x, %y) : f32[2]\n"
            "  %z = relu(%0) : f32[2]\n"
            "  return %z\n"
            "}\n");
}

TEST(IrTextRoundTrip, ConstantsSurviveBitExactly) {
  Graph graph("bits");
  const float f32_values[] = {0.1f,
                              1.0f / 3.0f,
                              std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::max(),
                              -std::numeric_limits<float>::min(),
                              -0.0f,
                              std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::infinity()};
  const double f64_values[] = {0.1, 1.0 / 3.0, std::numeric_limits<double>::denorm_min(),
                               std::numeric_limits<double>::max(), 1e-300};
  std::vector<float> f32(std::begin(f32_values), std::end(f32_values));
  std::vector<double> f64(std::begin(f64_values), std::end(f64_values));
  const int64_t f32_count = static_cast<int64_t>(f32.size());
  std::vector<Value*> outputs = {
      graph.add_constant("a", Tensor::from_vector(DType::kF32, {f32_count}, f32)),
      graph.add_constant("b", Tensor::from_vector(DType::kF16, {f32_count}, f32)),
      graph.add_constant("c", Tensor::from_vector(DType::kBF16, {f32_count}, f32)),
      graph.add_constant("d", Tensor::from_vector(DType::kF64, {5}, f64)),
  };
  graph.set_outputs(outputs);

  const std::string text = print_graph(graph);
  std::unique_ptr<Graph> parsed = parse_graph(text);
  ASSERT_EQ(parsed->constants().size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& original = outputs[i]->data();
    const Tensor& round_tripped = parsed->constants()[i]->data();
    ASSERT_EQ(original.type(), round_tripped.type());
    EXPECT_EQ(std::memcmp(original.bytes(), round_tripped.bytes(), original.num_bytes()), 0)
        << "constant " << i << " in\n"
        << text;
  }
  EXPECT_EQ(print_graph(*parsed), text);
}

TEST(IrTextPrinter, PrintsApiBuiltGraph) {
  Graph graph("net");
  Value* x = graph.add_input("x", {DType::kF32, {1, 4}});
  Value* weight = graph.add_constant("fc.weight", Tensor(DType::kF32, {4, 8}));
  Value* shape = graph.add_constant(
      "shape", Tensor::from_vector(DType::kI64, {2}, std::vector<int64_t>{1, -1}));
  Value* scale = graph.add_constant("scale", Tensor::scalar_f32(0.5f));
  Node* matmul = graph.add_node("matmul", {x, weight}, {}, {"/fc/MatMul"});
  Node* scaled = graph.add_node("mul", {matmul->result(), scale});
  Node* activation = graph.add_node("leaky_relu", {scaled->result()}, {{"alpha", 0.25}},
                                    {"/act/LeakyRelu", "fused"});
  activation->result()->set_name("/act/LeakyRelu_output_0");
  Node* top = graph.add_node("top_k", {activation->result()}, {{"k", 3}});
  top->result(1)->set_name("indices");
  graph.set_outputs({top->result(0), top->result(1), shape});

  EXPECT_EQ(print_graph(graph),
            "graph @net(%x: f32[1,4]) -> (f32[1,3], i64[1,3], i64[2]) {\n"
            "  %fc.weight = const f32[4,8]\n"
            "  %shape = const i64[2] [1, -1]\n"
            "  %scale = const f32[] 0.5\n"
            "  %0 = matmul(%x, %fc.weight) : f32[1,8] loc(\"/fc/MatMul\")\n"
            "  %1 = mul(%0, %scale) : f32[1,8]\n"
            "  %\"/act/LeakyRelu_output_0\" = leaky_relu(%1) {alpha=0.25} : f32[1,8] "
            "loc(\"/act/LeakyRelu\", \"fused\")\n"
            "  %2, %indices = top_k(%\"/act/LeakyRelu_output_0\") {k=3} : (f32[1,3], i64[1,3])\n"
            "  return %2, %indices, %shape\n"
            "}\n");
  PrintOptions everything_inline;
  everything_inline.max_inline_elements = 32;
  EXPECT_NE(print_graph(graph, everything_inline)
                .find("%fc.weight = const f32[4,8] [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "),
            std::string::npos);
}

TEST(IrTextPrinter, SharedNamesGetSuffixesAndStillParse) {
  Graph graph;
  Value* x = graph.add_input("x", {DType::kF32, {2}});
  Value* constant =
      graph.add_constant("x", Tensor::from_vector(DType::kF32, {2}, std::vector<float>{1, 2}));
  Node* sum = graph.add_node("add", {x, constant});
  sum->result()->set_name("x");
  Node* other = graph.add_node("neg", {sum->result()});
  other->result()->set_name("x.1");
  graph.set_outputs({other->result()});

  const std::string text = print_graph(graph);
  EXPECT_EQ(text,
            "graph @main(%x: f32[2]) -> (f32[2]) {\n"
            "  %x.1 = const f32[2] [1.0, 2.0]\n"
            "  %x.2 = add(%x, %x.1) : f32[2]\n"
            "  %x.1.1 = neg(%x.2) : f32[2]\n"
            "  return %x.1.1\n"
            "}\n");
  EXPECT_EQ(print_graph(*parse_graph(text)), text);
}

// Parse errors: each case's text and a substring of the expected message.
struct ErrorCase {
  const char* text;
  const char* message;
};

const ErrorCase kErrorCases[] = {
    {"", "<text>:1:1: expected 'graph' at the start of the text, found end of input"},
    {"hello", "<text>:1:1: expected 'graph' at the start of the text, found 'hello'"},
    {"graph main() -> () {}", "1:7: expected a graph name after 'graph', found 'main'"},
    {"graph @g() -> () {\n  return\n", "3:1: expected a value name as a returned value, found end"},
    {"graph @g() -> () {\n  return\n} }", "3:3: unexpected '}' after the graph"},
    {"graph @g(%x: f32[2]) -> (f32[2]) {\n  %y = relu(%x) : f32[2]\n",
     "3:1: expected a value name to start a statement (or 'return'), found end of input"},
    {"graph @g() -> (f32[2]) {\n  return %y\n}", "2:10: use of undefined value '%y'"},
    {"graph @g(%x: f32[2]) -> () {\n  %x = relu(%x) : f32[2]\n  return\n}",
     "2:3: redefinition of '%x'"},
    {"graph @g(%x: f32[2], %x: f32[2]) -> () {\n  return\n}", "1:22: redefinition of '%x'"},
    {"graph @g(%x: f32[2]) -> () {\n  %0 = relu(%x) : f32[2]\n  %0 = relu(%x) : f32[2]\n"
     "  return\n}",
     "3:3: redefinition of '%0'"},
    {"graph @g(%x: f32[2]) -> () {\n  %a, %a = top_k(%x) {k=1} : (f32[1], i64[1])\n  return\n}",
     "2:7: redefinition of '%a'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = frobnicate(%x) : f32[2]\n  return\n}",
     "2:8: unknown op 'frobnicate'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = relu(%x) {alpha=1.0} : f32[2]\n  return\n}",
     "2:18: unknown attribute 'alpha' for op relu"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = leaky_relu(%x) {alpha=1} : f32[2]\n  return\n}",
     "2:30: expected a float for float attribute 'alpha' (with a '.' or an exponent, as 1.0)"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = concat(%x) {axis=0.0} : f32[2]\n  return\n}",
     "expected an integer for int attribute 'axis', found '0.0'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = cast(%x) {to=\"f16\"} : f16[2]\n  return\n}",
     "expected an identifier for dtype attribute 'to', found string \"f16\""},
    {"graph @g(%x: f32[2]) -> () {\n  %y = cast(%x) {to=f17} : f16[2]\n  return\n}",
     "unknown dtype 'f17' for dtype attribute 'to'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = cast(%x) {to=f16, to=f16} : f16[2]\n  return\n}",
     "2:26: duplicate attribute 'to'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = cast(%x) : f16[2]\n  return\n}",
     "2:8: cast: missing required attribute 'to'"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = add(%x) : f32[2]\n  return\n}",
     "2:8: add: takes 2 operands, got 1"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = relu(%x) : f32[3]\n  return\n}",
     "<text>:2:8: relu producing %y: result 0 declared f32[3] but shape inference gives f32[2]"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = relu(%x) : i64[2]\n  return\n}",
     "declared i64[2] but shape inference gives f32[2]"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = top_k(%x) {k=1} : f32[1]\n  return\n}",
     "2:3: top_k has 2 results, not 1"},
    {"graph @g(%x: f32[2]) -> () {\n  %a, %b = top_k(%x) {k=1} : f32[1]\n  return\n}",
     "2:30: 2 names are defined but 1 result types are given"},
    {"graph @g(%x: f33[2]) -> () {\n  return\n}", "1:14: unknown dtype 'f33'"},
    {"graph @g(%x: f32[-1]) -> () {\n  return\n}", "1:18: dimension -1 is negative"},
    {"graph @g(%x: f32[2.5]) -> () {\n  return\n}", "expected an integer as a dimension"},
    {"graph @g(%x: f32[4294967296,4294967296]) -> () {\n  return\n}",
     "1:29: type has too many elements (overflow at dimension 4294967296)"},
    {"graph @g(%x: f32[99999999999999999999]) -> () {\n  return\n}",
     "integer 99999999999999999999 is out of range"},
    {"graph @g() -> () {\n  %c = const i64[2] [1]\n  return\n}",
     "2:14: data has 1 elements but i64[2] has 2"},
    {"graph @g() -> () {\n  %c = const i64[2] [1, 2, 3]\n  return\n}",
     "2:14: data has more than the 2 elements of i64[2]"},
    {"graph @g() -> () {\n  %c = const i64[1000000000,1000000] [1]\n  return\n}",
     "data has 1 elements but i64[1000000000,1000000] has 1000000000000000"},
    {"graph @g() -> () {\n  %c = const i64[] [1]\n  return\n}",
     "expected an integer in i64 data, found '['"},
    {"graph @g() -> () {\n  %c = const i8[] 128\n  return\n}", "value 128 does not fit in i8"},
    {"graph @g() -> () {\n  %c = const u8[] -1\n  return\n}", "value -1 does not fit in u8"},
    {"graph @g() -> () {\n  %c = const bool[] 1\n  return\n}",
     "expected true or false in bool data, found '1'"},
    {"graph @g() -> () {\n  %c = const f32[] 1e999\n  return\n}", "number 1e999 is out of range"},
    {"graph @g() -> () {\n  %c = const f32[] -nan\n  return\n}", "write nan without a sign"},
    {"graph @g() -> () {\n  %a, %b = const f32[] 1.0\n  return\n}",
     "2:12: a constant defines exactly one value"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = relu(%x) : f32[2] loc(\"a)\n  return\n}",
     "2:30: unterminated string"},
    {"graph @g(%x: f32[2]) -> () {\n  %y = relu(%x) : f32[2] loc(\"a\\q\")\n  return\n}",
     "2:32: unknown escape '\\q' in a string"},
    {"graph @g() -> () {\n  %\"\" = const f32[] 1.0\n  return\n}",
     "2:3: a value name cannot be empty"},
    {"graph @g() -> () {\n  % = const f32[] 1.0\n  return\n}", "2:3: expected a name after '%'"},
    {"graph @g() -> () {\n  %a = const f32[] 1.0 $\n  return\n}", "2:24: unexpected character '$'"},
    {"graph @g() -> () {\n  %a = const f32[] 1.0 \x01\n  return\n}",
     "2:24: unexpected byte 0x01 in the text"},
    {"graph @g(%x: f32[2]) -> (f32[2], f32[2]) {\n  return %x\n}",
     "2:3: returns 1 values but the signature declares 2"},
    {"graph @g(%x: f32[2]) -> (f32[3]) {\n  return %x\n}",
     "2:10: returned '%x' has type f32[2] but the signature declares f32[3]"},
    {"graph @g(%x: f32[2]) -> (f32[2]) {\n  %y = relu(%x) : f32[2]\n  %x.1 = relu(%z) : f32[2]\n"
     "  return %y\n}",
     "3:15: use of undefined value '%z'"},
};

TEST(IrTextParser, ReportsErrorsWithPositions) {
  for (const ErrorCase& error_case : kErrorCases) {
    SCOPED_TRACE(error_case.text);
    try {
      parse_graph(error_case.text);
      ADD_FAILURE() << "parsed without error";
    } catch (const InputError& error) {
      EXPECT_NE(std::string(error.what()).find(error_case.message), std::string::npos)
          << "message: " << error.what() << "\nexpected to contain: " << error_case.message;
    }
  }
}

TEST(IrTextParser, NamesTheFileInErrors) {
  try {
    parse_graph("graph @g() -> () {\n  return %q\n}", "model.kir");
    ADD_FAILURE() << "parsed without error";
  } catch (const InputError& error) {
    EXPECT_STREQ(error.what(), "model.kir:2:10: use of undefined value '%q'");
  }
}

TEST(IrTextParser, ElidedConstantsHaveNoData) {
  std::unique_ptr<Graph> graph =
      parse_graph("graph @g() -> (f32[2,3]) {\n  %w = const f32[2,3]\n  return %w\n}\n");
  const Value* weight = graph->constants().at(0);
  EXPECT_EQ(weight->name(), "w");
  EXPECT_FALSE(weight->has_data());
  EXPECT_THROW(weight->data(), InputError);
}

TEST(IrTextParser, NumberedNamesAreUnnamedAndQuotedDigitsAreNames) {
  std::unique_ptr<Graph> graph = parse_graph(
      "graph @g(%5: f32[2], %\"5\": f32[2]) -> (f32[2]) {\n  %y = add(%5, %\"5\") : f32[2]\n"
      "  return %y\n}\n");
  EXPECT_EQ(graph->inputs().at(0)->name(), "");
  EXPECT_EQ(graph->inputs().at(1)->name(), "5");
  EXPECT_EQ(graph->nodes().at(0)->operand(0), graph->inputs().at(0));
  EXPECT_EQ(graph->nodes().at(0)->operand(1), graph->inputs().at(1));
}

}  // namespace
}  // namespace kiln
