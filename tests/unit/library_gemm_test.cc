// Tests of the "cuBLASLt" tactic's call (codegen/library_gemm.h) as lowering writes it into a
// step (runtime/program.h, ProgramLibraryGemm): cuBLASLt's column-major transposed product of
// each contraction form, its epilogue, its operands as the kernel's parameter positions, and the
// reason for each refusal.
#include "codegen/library_gemm.h"

#include <gtest/gtest.h>

#include <functional>

#include "codegen/contraction_view.h"
#include "codegen/kernel_body.h"
#include "codegen/lower.h"
#include "ir/error.h"
#include "ir/parser.h"
#include "runtime/kernel_header.h"
#include "runtime/library_gemm_validation.h"
#include "runtime/memory_plan.h"
#include "runtime/step_dependencies.h"

namespace kiln::codegen {
namespace {

// The program of `text` for sm_90a with the cuBLASLt tactic wherever it is offered.
Program lower_with_library(const std::string& text) {
  CodegenOptions options;
  options.target = target_for_arch("sm_90a");
  options.choose_tactic = [](const TacticSite& site) {
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      if (site.tactics[t] == "cuBLASLt") return static_cast<int>(t);
    }
    return 0;
  };
  return lower_graph(*parse_graph(text), options);
}

// Why the first node of `text` has no call ("" where it has one).
std::string refusal(const std::string& text) {
  const std::unique_ptr<Graph> graph = parse_graph(text);
  const KernelBody body = kernel_body_of(*graph->nodes().front());
  const Node* anchor = contraction_anchor(body);
  return library_gemm_of(body, *anchor, *contraction_view_of(*anchor)).refusal;
}

// The name of the buffer at argument `position` of `step` ("" for -1).
std::string operand(const Program& program, const ProgramStep& step, int position) {
  return position < 0 ? "" : program.buffers[step.args[position]].name;
}

// ResNet-50's bottleneck end: a channels-last 1×1 conv with bias, a residual and ReLU. The
// weights [512, 1, 1, 2048] lie K-major (cuBLASLt's A transposed), the input pixel-major.
TEST(LibraryGemm, ChannelsLastConvWithBiasResidualAndRelu) {
  Program program = lower_with_library(R"(
graph @g(%x: f16[2,7,7,256], %w: f16[64,1,1,256], %b: f16[64], %r: f16[2,7,7,64]) -> (f16[2,7,7,64]) {
  %y = fusion.epilogue(%x, %w, %b, %r) {
    ^(%p: f16[2,7,7,256], %q: f16[64,1,1,256], %c: f16[64], %e: f16[2,7,7,64]):
    %z = conv(%p, %q, %c) {channels_last=1, group=1, strides=[1,1], pads=[0,0,0,0], dilations=[1,1]} : f16[2,7,7,64] loc("/Conv")
    %a = add(%z, %e) : f16[2,7,7,64] loc("/Add")
    %k = relu(%a) : f16[2,7,7,64] loc("/Relu")
    yield %k
  } : (f16[2,7,7,64]) loc("/Conv", "/Add", "/Relu")
  return %y
})");
  ASSERT_EQ(program.steps.size(), 1u);
  const ProgramStep& step = program.steps[0];
  ASSERT_TRUE(step.library);
  const ProgramLibraryGemm& call = *step.library;
  EXPECT_EQ(operand(program, step, call.a), "w");
  EXPECT_EQ(operand(program, step, call.b), "x");
  EXPECT_EQ(operand(program, step, call.c), "r");
  EXPECT_EQ(operand(program, step, call.bias), "b");
  EXPECT_EQ(program.buffers[step.args[call.d]].kind, ProgramBuffer::Kind::kOutput);
  EXPECT_TRUE(call.transpose_a);
  EXPECT_FALSE(call.transpose_b);
  EXPECT_EQ(call.m, 64);
  EXPECT_EQ(call.n, 2 * 7 * 7);
  EXPECT_EQ(call.k, 256);
  EXPECT_EQ(call.lda, 256);
  EXPECT_EQ(call.ldb, 256);
  EXPECT_EQ(call.ldd, 64);
  EXPECT_EQ(call.batch, 1);
  EXPECT_EQ(call.beta, 1.0f);
  EXPECT_TRUE(call.relu);
  // The planner puts the workspace above the buffers; the call passes validation.
  plan_memory(program);
  EXPECT_EQ(step.library->workspace_offset % kArenaAlignment, 0);
  EXPECT_EQ(program.arena_bytes, step.library->workspace_offset + kLibraryGemmWorkspaceBytes);
  const std::vector<int> written = *kernel_written_parameters(program.kernels[0]);
  EXPECT_NO_THROW(check_library_gemm(program, 0, written));
}

// Two projections of one input (BERT's separate Q and K): their kernels may run at once, their
// cuBLASLt calls share one workspace above the buffers and are ordered by it.
TEST(LibraryGemm, CallsShareOneWorkspaceAndAreOrderedByIt) {
  const char* text = R"(
graph @g(%x: f16[64,32], %q: f16[32,48], %k: f16[32,48]) -> (f16[64,48], f16[64,48]) {
  %0 = matmul(%x, %q) : f16[64,48] loc("/Q")
  %1 = matmul(%x, %k) : f16[64,48] loc("/K")
  return %0, %1
})";
  Program program = lower_with_library(text);
  ASSERT_EQ(program.steps.size(), 2u);
  ASSERT_TRUE(program.steps[0].library && program.steps[1].library);
  EXPECT_EQ(step_dependencies(program, ArenaSharing::kIgnored).predecessors[1],
            std::vector<int>{0});
  plan_memory(program);
  EXPECT_EQ(program.steps[0].library->workspace_offset, 0);  // no intermediates
  EXPECT_EQ(program.steps[1].library->workspace_offset, 0);
  EXPECT_EQ(program.arena_bytes, kLibraryGemmWorkspaceBytes);
  EXPECT_EQ(step_dependencies(program, ArenaSharing::kOrdersSteps).predecessors[1],
            std::vector<int>{0});
  // Kiln's own kernels alone run at once.
  CodegenOptions options;
  options.target = target_for_arch("sm_90a");
  const Program own = lower_graph(*parse_graph(text), options);
  EXPECT_TRUE(step_dependencies(own, ArenaSharing::kIgnored).predecessors[1].empty());
}

// Validation (runtime/library_gemm_validation.h): each element cuBLASLt may touch lies in the
// step's buffers, D is what the kernel writes, the workspace is the call's own.
TEST(LibraryGemm, ValidationNamesWhatIsWrong) {
  Program good = lower_with_library(R"(
graph @g(%a: f16[3,40,24], %b: f16[3,24,16]) -> (f16[3,40,16]) {
  %m = matmul(%a, %b) : f16[3,40,16]
  return %m
})");
  plan_memory(good);
  const std::vector<int> written = *kernel_written_parameters(good.kernels[0]);
  ASSERT_NO_THROW(check_library_gemm(good, 0, written));
  const auto error = [&](const std::function<void(ProgramLibraryGemm&)>& edit) {
    Program bad = good;
    edit(*bad.steps[0].library);
    try {
      check_library_gemm(bad, 0, written);
    } catch (const InputError& e) {
      const std::string message = e.what();
      return message.substr(message.find("library call: ") + 14);
    }
    return std::string("no error");
  };
  EXPECT_EQ(error([](auto& call) { call.a = 7; }), "operand A is argument 7; the step passes 3");
  EXPECT_EQ(error([](auto& call) { call.d = call.a; }),
            "D is argument 1, which the kernel does not write");
  EXPECT_EQ(error([](auto& call) { call.c = call.d; }),
            "operand C is argument 2, which the kernel writes");
  EXPECT_EQ(error([](auto& call) { call.batch_stride_b = 1000; }),
            "B reaches element 2959 of a buffer of 2880");
  EXPECT_EQ(error([](auto& call) { call.ldd = 8; }),
            "D's leading dimension 8 is below its 16 rows");
  EXPECT_EQ(error([](auto& call) { call.k = 0; }), "k is 0");
  EXPECT_EQ(error([](auto& call) { call.batch_stride_d = 16; }),
            "D's matrices overlap (batch stride 16 for 40 columns of leading dimension 16)");
  EXPECT_EQ(error([](auto& call) { call.workspace_offset += 16; }),
            "its workspace of 4194304 bytes at arena offset " +
                std::to_string(good.steps[0].library->workspace_offset + 16) +
                " is not an aligned part of the arena of " + std::to_string(good.arena_bytes) +
                " bytes");
}

// A workspace may share bytes with other steps' intermediates (the step graph orders them), not
// with an intermediate its own step passes.
TEST(LibraryGemm, AWorkspaceAvoidsItsOwnStepsIntermediates) {
  Program program = lower_with_library(R"(
graph @g(%a: f16[3,40,24], %b: f16[3,24,16]) -> (f16[3,40,16]) {
  %r = relu(%a) : f16[3,40,24]
  %m = matmul(%r, %b) : f16[3,40,16]
  return %m
})");
  plan_memory(program);
  ASSERT_EQ(program.steps.size(), 2u);
  const std::vector<int> written = *kernel_written_parameters(program.kernels[1]);
  EXPECT_NO_THROW(check_library_gemm(program, 1, written));
  program.steps[1].library->workspace_offset = 0;  // where relu's result lies
  try {
    check_library_gemm(program, 1, written);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its workspace shares arena bytes with its argument "
                                         "buffer"),
              std::string::npos)
        << e.what();
  }
}

// Both operands batched: strided batches; B row-major (cuBLASLt's A as it lies).
TEST(LibraryGemm, BatchedMatmulTakesStridedBatches) {
  const Program program = lower_with_library(R"(
graph @g(%a: f16[3,40,24], %b: f16[3,24,16]) -> (f16[3,40,16]) {
  %m = matmul(%a, %b) : f16[3,40,16]
  return %m
})");
  ASSERT_TRUE(program.steps[0].library);
  const ProgramLibraryGemm& call = *program.steps[0].library;
  EXPECT_FALSE(call.transpose_a);
  EXPECT_FALSE(call.transpose_b);
  EXPECT_EQ(call.m, 16);
  EXPECT_EQ(call.n, 40);
  EXPECT_EQ(call.k, 24);
  EXPECT_EQ(call.lda, 16);
  EXPECT_EQ(call.ldb, 24);
  EXPECT_EQ(call.batch, 3);
  EXPECT_EQ(call.batch_stride_a, 24 * 16);
  EXPECT_EQ(call.batch_stride_b, 40 * 24);
  EXPECT_EQ(call.batch_stride_d, 40 * 16);
}

// Weights shared by the batch, activations row after row: one taller product, with the bias
// added after the matmul.
TEST(LibraryGemm, SharedWeightsMakeOneTallerProduct) {
  const Program program = lower_with_library(R"(
graph @g(%x: f16[4,10,32], %w: f16[32,48], %b: f16[48]) -> (f16[4,10,48]) {
  %y = fusion.epilogue(%x, %w, %b) {
    ^(%p: f16[4,10,32], %q: f16[32,48], %c: f16[48]):
    %m = matmul(%p, %q) : f16[4,10,48] loc("/MatMul")
    %a = add(%c, %m) : f16[4,10,48] loc("/Add")
    yield %a
  } : (f16[4,10,48]) loc("/MatMul", "/Add")
  return %y
})");
  const ProgramStep& step = program.steps[0];
  ASSERT_TRUE(step.library);
  EXPECT_EQ(step.library->n, 40);
  EXPECT_EQ(step.library->batch, 1);
  EXPECT_EQ(operand(program, step, step.library->bias), "b");
  EXPECT_EQ(step.library->c, -1);
  EXPECT_FALSE(step.library->relu);
}

// gemm: transA (cuBLASLt's B transposed), alpha, and beta · C of the result's shape.
TEST(LibraryGemm, GemmKeepsAlphaAndBetaTimesC) {
  const Program program = lower_with_library(R"(
graph @g(%a: f16[64,32], %b: f16[64,16], %c: f16[32,16]) -> (f16[32,16]) {
  %0 = gemm(%a, %b, %c) {alpha=0.5, beta=2.0, transA=1, transB=0} : f16[32,16]
  return %0
})");
  const ProgramStep& step = program.steps[0];
  ASSERT_TRUE(step.library);
  EXPECT_FALSE(step.library->transpose_a);
  EXPECT_TRUE(step.library->transpose_b);
  EXPECT_EQ(step.library->ldb, 32);
  EXPECT_EQ(step.library->alpha, 0.5f);
  EXPECT_EQ(step.library->beta, 2.0f);
  EXPECT_EQ(operand(program, step, step.library->c), "c");
}

// BERT's out-projection and FFN-down as the exporter gives them: a gemm on [batch · seq, hidden]
// rows whose A is a reshape of the previous kernel's output, reshaped back to [batch, seq,
// hidden] before the residual add; the reshapes keep the elements' order, so the call reads and
// writes the buffers themselves.
TEST(LibraryGemm, ReshapesKeepTheBuffers) {
  const Program program = lower_with_library(R"(
graph @g(%x: f16[2,64,256], %w: f16[256,128], %b: f16[128], %r: f16[2,64,128]) -> (f16[2,64,128]) {
  %y = fusion.epilogue(%x, %w, %b, %r) {
    ^(%p: f16[2,64,256], %q: f16[256,128], %c: f16[128], %e: f16[2,64,128]):
    %s = reshape(%p) {shape=[128,256]} : f16[128,256]
    %m = gemm(%s, %q, %c) {alpha=1.0, beta=1.0, transA=0, transB=0} : f16[128,128] loc("/MatMul")
    %t = reshape(%m) {shape=[2,64,128]} : f16[2,64,128]
    %a = add(%e, %t) : f16[2,64,128] loc("/Add")
    yield %a
  } : (f16[2,64,128]) loc("/MatMul", "/Add")
  return %y
})");
  const ProgramStep& step = program.steps[0];
  ASSERT_TRUE(step.library);
  EXPECT_EQ(operand(program, step, step.library->b), "x");
  EXPECT_EQ(operand(program, step, step.library->a), "w");
  EXPECT_EQ(operand(program, step, step.library->bias), "b");
  EXPECT_EQ(operand(program, step, step.library->c), "r");
  EXPECT_EQ(step.library->n, 128);
  EXPECT_EQ(step.library->m, 128);
}

TEST(LibraryGemm, RefusalsSayWhy) {
  EXPECT_EQ(refusal(R"(
graph @g(%a: f32[8,8], %b: f32[8,8]) -> (f32[8,8]) {
  %m = matmul(%a, %b) : f32[8,8]
  return %m
})"),
            "a f32 result (the call takes f16 or bf16)");
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[8,8], %b: f16[8,8]) -> (f16[8,8]) {
  %y = fusion.epilogue(%a, %b) {
    ^(%p: f16[8,8], %q: f16[8,8]):
    %m = matmul(%p, %q) : f16[8,8]
    %g = gelu(%m) : f16[8,8]
    yield %g
  } : (f16[8,8])
  return %y
})"),
            "gelu in the epilogue (cuBLASLt's takes a bias, an added tensor, a relu)");
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[8,8], %b: f16[8,8], %e: f16[8,8]) -> (f16[8,8]) {
  %y = fusion.epilogue(%a, %b, %e) {
    ^(%p: f16[8,8], %q: f16[8,8], %s: f16[8,8]):
    %m = matmul(%p, %q) : f16[8,8]
    %r = relu(%m) : f16[8,8]
    %t = add(%r, %s) : f16[8,8]
    yield %t
  } : (f16[8,8])
  return %y
})"),
            "add after the relu");
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[8,8], %b: f16[8,8]) -> (f16[8,8]) {
  %y = fusion.epilogue(%a, %b) {
    ^(%p: f16[8,8], %q: f16[8,8]):
    %n = neg(%p) : f16[8,8]
    %m = matmul(%n, %q) : f16[8,8]
    yield %m
  } : (f16[8,8])
  return %y
})"),
            "an operand computed in the kernel (a prologue)");
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[8,8], %b: f16[8,8], %e: f16[8,1]) -> (f16[8,8]) {
  %y = fusion.epilogue(%a, %b, %e) {
    ^(%p: f16[8,8], %q: f16[8,8], %s: f16[8,1]):
    %m = matmul(%p, %q) : f16[8,8]
    %t = add(%m, %s) : f16[8,8]
    yield %t
  } : (f16[8,8])
  return %y
})"),
            "an add of a [8,1] (neither a bias nor the result's shape)");
  // A reshape that moves the columns: the bias would no longer be per column of the product.
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[8,8], %b: f16[8,8], %e: f16[4]) -> (f16[16,4]) {
  %y = fusion.epilogue(%a, %b, %e) {
    ^(%p: f16[8,8], %q: f16[8,8], %s: f16[4]):
    %m = matmul(%p, %q) : f16[8,8]
    %r = reshape(%m) {shape=[16,4]} : f16[16,4]
    %t = add(%r, %s) : f16[16,4]
    yield %t
  } : (f16[16,4])
  return %y
})"),
            "an add of a [4] (neither a bias nor the result's shape)");
  EXPECT_EQ(refusal(R"(
graph @g(%a: f16[2,8,8], %b: f16[8,8]) -> (f16[2,8,8]) {
  %y = fusion.epilogue(%a, %b) {
    ^(%p: f16[2,8,8], %q: f16[8,8]):
    %t = transpose(%p) {perm=[0,2,1]} : f16[2,8,8]
    %m = matmul(%t, %q) : f16[2,8,8]
    yield %m
  } : (f16[2,8,8])
  return %y
})"),
            "an operand computed in the kernel (a prologue)");
}

}  // namespace
}  // namespace kiln::codegen
