// Tests of lowering (codegen/lower.h): the Program's buffers (inputs, outputs, weights,
// intermediates, views), the weights' layout, kernel deduplication, output copies, and the
// refusal of kernels the GPU backend does not generate yet; the parameters each kernel states it
// writes, from which independent steps get no dependency between them.
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "runtime/kernel_header.h"
#include "runtime/step_dependencies.h"

namespace kiln::codegen {
namespace {

using Kind = ProgramBuffer::Kind;

Program lower_text(const std::string& text, const CodegenOptions& options = {},
                   LoweringReport* report = nullptr) {
  return lower_graph(*parse_graph(text), options, report);
}

TEST(CodegenLower, SignatureWeightsAndViews) {
  const Program program = lower_text(R"(
graph @g(%x: f32[2,3]) -> (f32[6]) {
  %w = const f32[3] [1.0, 2.0, 3.0]
  %one = const f32[] 1.0
  %0 = add(%x, %w) : f32[2,3] loc("Add")
  %1 = sub(%0, %one) : f32[2,3] loc("Sub")
  %y = reshape(%1) {shape=[6]} : f32[6] loc("Reshape")
  return %y
})");
  // x; the output, which sub writes directly (viewed as [6]); add's result; w. %one is
  // inlined, and the reshape has neither a buffer nor a step.
  ASSERT_EQ(program.buffers.size(), 4u);
  EXPECT_EQ(program.buffers[0].kind, Kind::kInput);
  EXPECT_EQ(program.buffers[0].offset, 0);
  EXPECT_EQ(program.buffers[1].kind, Kind::kOutput);
  EXPECT_EQ(program.buffers[1].name, "y");
  EXPECT_EQ(program.buffers[1].type, (TensorType{DType::kF32, {6}}));
  EXPECT_EQ(program.buffers[2].kind, Kind::kIntermediate);
  EXPECT_EQ(program.buffers[3].kind, Kind::kWeight);
  EXPECT_EQ(program.buffers[3].name, "w");
  EXPECT_EQ(program.buffers[3].offset, 0);
  EXPECT_EQ(program.inputs, std::vector<int>{0});
  EXPECT_EQ(program.outputs, std::vector<int>{1});
  ASSERT_EQ(program.steps.size(), 2u);
  EXPECT_EQ(program.steps[0].args, (std::vector<int>{0, 3, 2}));  // in0 x, const0 w, out0
  EXPECT_EQ(program.steps[1].args, (std::vector<int>{2, 1}));
}

TEST(CodegenLower, IntermediatesAwaitTheMemoryPlanner) {
  const Program program = lower_text(R"(
graph @g(%x: f32[4,8]) -> (f32[4]) {
  %0 = exp(%x) : f32[4,8]
  %1 = reduce_sum(%0) {axes=[1], keepdims=0} : f32[4]
  return %1
})");
  ASSERT_EQ(program.buffers.size(), 3u);
  EXPECT_EQ(program.buffers[2].kind, Kind::kIntermediate);
  EXPECT_EQ(program.buffers[2].offset, -1);
  ASSERT_EQ(program.steps.size(), 2u);
  EXPECT_EQ(program.steps[0].args, (std::vector<int>{0, 2}));
  EXPECT_EQ(program.steps[1].args, (std::vector<int>{2, 1}));
}

TEST(CodegenLower, WeightsAreAlignedAndHoldTheConstantsBytes) {
  const Program program = lower_text(R"(
graph @g(%x: f32[5], %y: f32[3]) -> (f32[5], f32[3]) {
  %a = const f32[5] [1.0, 2.0, 3.0, 4.0, 5.0]
  %b = const f32[3] [6.0, 7.0, 8.0]
  %0 = mul(%x, %a) : f32[5]
  %1 = mul(%y, %b) : f32[3]
  return %0, %1
})");
  std::vector<const ProgramBuffer*> weights;
  for (const ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind == Kind::kWeight) weights.push_back(&buffer);
  }
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0]->offset, 0);
  EXPECT_EQ(weights[1]->offset, kWeightAlignment);
  ASSERT_EQ(program.weights.size(), static_cast<size_t>(kWeightAlignment + 3 * sizeof(float)));
  float second[3];
  std::memcpy(second, program.weights.data() + kWeightAlignment, sizeof second);
  EXPECT_EQ(second[0], 6.0f);
  EXPECT_EQ(second[2], 8.0f);
}

TEST(CodegenLower, EqualKernelsAreOneKernelLaunchedTwice) {
  const Program program = lower_text(R"(
graph @g(%x: f32[16], %y: f32[16]) -> (f32[16], f32[16]) {
  %0 = tanh(%x) : f32[16] loc("first_tanh")
  %1 = tanh(%y) : f32[16] loc("second_tanh")
  return %0, %1
})");
  ASSERT_EQ(program.kernels.size(), 1u);
  ASSERT_EQ(program.steps.size(), 2u);
  EXPECT_EQ(program.steps[0].kernel, 0);
  EXPECT_EQ(program.steps[1].kernel, 0);
  EXPECT_EQ(program.kernels[0].provenance, (std::vector<std::string>{"first_tanh", "second_tanh"}));
  const std::string& source = program.kernels[0].source;
  EXPECT_NE(source.find("// ONNX nodes: first_tanh\n// ONNX nodes: second_tanh\n"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_NE(source.find(program.kernels[0].name + "("), std::string::npos);
}

// tanh and exp both read x and may run at once; add reads both results.
TEST(CodegenLower, KernelsStateWhatTheyWriteSoBranchesAreIndependent) {
  const Program program = lower_text(R"(
graph @g(%x: f32[16]) -> (f32[16]) {
  %0 = tanh(%x) : f32[16] loc("Tanh")
  %1 = exp(%x) : f32[16] loc("Exp")
  %2 = add(%0, %1) : f32[16] loc("Add")
  return %2
})");
  ASSERT_EQ(program.steps.size(), 3u);
  EXPECT_NE(program.kernels[0].source.find("// parameters: 2\n// written parameters: 1\n"),
            std::string::npos)
      << program.kernels[0].source;
  EXPECT_NE(program.kernels[2].source.find("// parameters: 3\n// written parameters: 2\n"),
            std::string::npos)
      << program.kernels[2].source;
  const StepGraph graph = step_dependencies(program, ArenaSharing::kIgnored);
  EXPECT_EQ(graph.predecessors, (std::vector<std::vector<int>>{{}, {}, {0, 1}}));
  EXPECT_EQ(widest_level(graph), 2);
}

// Every kernel waits for the kernels it depends on before anything else, and says so, so the
// session may launch it early (runtime/session.h, early_launch).
TEST(CodegenLower, KernelsWaitForPriorGridsFirstSoTheyMayLaunchEarly) {
  const Program program = lower_text(R"(
graph @g(%x: f32[16]) -> (f32[16]) {
  %0 = tanh(%x) : f32[16] loc("Tanh")
  return %0
})");
  ASSERT_EQ(program.kernels.size(), 1u);
  const ProgramKernel& kernel = program.kernels[0];
  EXPECT_TRUE(kernel_waits_for_prior_grids(kernel)) << kernel.source;
  EXPECT_NE(kernel.source.find(") {\n  kiln_wait_for_prior_grids();\n"), std::string::npos)
      << kernel.source;
  EXPECT_NE(kernel.source.find("griddepcontrol.wait;"), std::string::npos) << kernel.source;
  ProgramKernel older = kernel;  // a .kiln written before early launch
  older.source = "// kiln kernel k: tanh (tanh)\n// parameters: 2\n\nextern \"C\" ...\n";
  EXPECT_FALSE(kernel_waits_for_prior_grids(older));
}

TEST(CodegenLower, OutputsThatAreNotKernelResultsAreCopied) {
  const Program program = lower_text(R"(
graph @g(%x: f32[4]) -> (f32[4], f32[4], f32[2,2], f32[3]) {
  %c = const f32[3] [1.0, 2.0, 3.0]
  %0 = neg(%x) : f32[4]
  %1 = reshape(%0) {shape=[2, 2]} : f32[2,2]
  return %x, %0, %1, %c
})");
  // Output 1 is neg's result itself; outputs 0 (an input), 2 (neg's result again, viewed) and 3
  // (a constant) are copies.
  ASSERT_EQ(program.outputs.size(), 4u);
  ASSERT_EQ(program.steps.size(), 4u);
  EXPECT_EQ(program.steps[0].args, (std::vector<int>{0, program.outputs[1]}));
  EXPECT_EQ(program.steps[1].args, (std::vector<int>{0, program.outputs[0]}));
  EXPECT_EQ(program.steps[2].args, (std::vector<int>{program.outputs[1], program.outputs[2]}));
  const int weight = program.steps[3].args[0];
  EXPECT_EQ(program.buffers[weight].kind, Kind::kWeight);
  EXPECT_EQ(program.steps[3].args[1], program.outputs[3]);
  EXPECT_EQ(program.buffers[program.outputs[2]].type, (TensorType{DType::kF32, {2, 2}}));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(program.buffers[program.outputs[k]].offset, k);
}

TEST(CodegenLower, FusionParametersAreItsOperandsAndResults) {
  const Program program = lower_text(R"(
graph @g(%x: f32[8], %y: f32[8]) -> (f32[8], f32[8]) {
  %a, %b = fusion.loop(%y, %x) {
    ^(%p: f32[8], %q: f32[8]):
    %s = add(%p, %q) : f32[8]
    %r = relu(%s) : f32[8]
    yield %r, %s
  } : (f32[8], f32[8]) loc("Add", "Relu")
  return %b, %a
})");
  ASSERT_EQ(program.steps.size(), 1u);
  // Inputs in the body's order (y, x), outputs in the fusion's (a = output 1, b = output 0).
  EXPECT_EQ(program.steps[0].args, (std::vector<int>{program.inputs[1], program.inputs[0],
                                                     program.outputs[1], program.outputs[0]}));
  EXPECT_EQ(program.kernels[0].provenance, (std::vector<std::string>{"Add", "Relu"}));
}

// Matmuls of more batches than one launch's grid holds: the GPU backend has no kernel for them.
constexpr const char* kRefusedKernels = R"(
graph @g(%x: f32[65536,1,4], %y: f32[65536,4,4]) -> (f32[65536,1,4], f32[65536,1,4]) {
  %m = matmul(%x, %y) : f32[65536,1,4] loc("MatMul_1")
  %0 = relu(%m) : f32[65536,1,4] loc("Relu_2")
  %1 = matmul(%0, %y) : f32[65536,1,4] loc("MatMul_3")
  return %0, %1
})";

TEST(CodegenLower, RefusesEveryKernelItCannotGenerateAtOnce) {
  try {
    lower_text(kRefusedKernels);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& error) {
    EXPECT_STREQ(
        error.what(),
        "the GPU backend does not generate these kernels yet: matmul (onnx: MatMul_1): too "
        "many rows or batches for one launch; matmul (onnx: MatMul_3): too many rows or "
        "batches for one launch");
  }
}

TEST(CodegenLower, SkipUnsupportedLowersTheRestAndReportsWhatItLeftOut) {
  CodegenOptions options;
  options.skip_unsupported = true;
  LoweringReport report;
  const Program program = lower_text(kRefusedKernels, options, &report);
  EXPECT_EQ(report.skipped,
            (std::vector<std::string>{
                "matmul (onnx: MatMul_1): too many rows or batches for one launch",
                "matmul (onnx: MatMul_3): too many rows or batches for one launch"}));
  ASSERT_EQ(program.steps.size(), 1u);  // relu
  EXPECT_EQ(program.kernels[0].provenance, std::vector<std::string>{"Relu_2"});
}

TEST(CodegenLower, GatherNdInAFusionReadsItsIndicesRow) {
  // batch_dims 1: output (b, c) reads data (b, indices[b, 0], c).
  const Program program = lower_text(R"(
graph @g(%x: f32[2,2,2], %i: i64[2,1]) -> (f32[2,2]) {
  %0 = fusion.loop(%x, %i) {
    ^(%d: f32[2,2,2], %j: i64[2,1]):
    %e = exp(%d) : f32[2,2,2]
    %g = gather_nd(%e, %j) {batch_dims=1} : f32[2,2] loc("GatherND")
    yield %g
  } : f32[2,2] loc("Exp", "GatherND")
  return %0
})");
  ASSERT_EQ(program.kernels.size(), 1u);
  const std::string& source = program.kernels[0].source;
  EXPECT_NE(source.find("kiln_resolve_index(v2, 2)"), std::string::npos) << source;
  EXPECT_NE(source.find("t0 * 4 + t3 * 2 + t1"), std::string::npos) << source;
}

// A fused layer norm over f16 rows of 256 reads them 8 elements (16 bytes) at a time; its f32
// scale, one per column, is read 8 at a time too (32 bytes) when a constant feeds it (the
// weights are 256-byte aligned), but element by element when it is a graph input, whose device
// pointer run_device requires only 16-byte aligned.
std::string layer_norm_graph(bool constant_scale) {
  std::string ones;
  for (int i = 0; i < 256; ++i) ones += std::string(i ? ", " : "") + "1.0";
  return "graph @g(%x: f16[64,256]" + std::string(constant_scale ? "" : ", %g: f32[256]") +
         ") -> (f16[64,256]) {\n" +
         (constant_scale ? "  %g = const f32[256] [" + ones + "]\n" : std::string()) +
         "  %0 = fusion.reduction(%x, %g) {\n"
         "    ^(%a: f16[64,256], %b: f32[256]):\n"
         "    %xf = cast(%a) {to=f32} : f32[64,256]\n"
         "    %n = layer_normalization(%xf, %b) {axis=-1, epsilon=1e-05} : f32[64,256]\n"
         "    %y = cast(%n) {to=f16} : f16[64,256]\n"
         "    yield %y\n"
         "  } : f16[64,256] loc(\"/LN\")\n"
         "  return %0\n}\n";
}

TEST(CodegenLower, PerColumnVectorsOfGraphInputsStayWithin16Bytes) {
  const std::string with_constant = lower_text(layer_norm_graph(true)).kernels[0].source;
  EXPECT_NE(with_constant.find("struct __align__(32) vec_f32x8"), std::string::npos)
      << with_constant;
  const std::string with_input = lower_text(layer_norm_graph(false)).kernels[0].source;
  EXPECT_NE(with_input.find("struct __align__(16) vec_f16x8"), std::string::npos) << with_input;
  EXPECT_EQ(with_input.find("vec_f32x8"), std::string::npos) << with_input;
}

}  // namespace
}  // namespace kiln::codegen
