// Tests of the "unfused" tactic (codegen/tactic_site.h, kUnfusedTactic): which fusions offer it,
// and an epilogue fusion lowered op by op — each op a step of its own, the values between them
// in intermediates, the fusion's operands and results in their buffers — with the report's step
// range covering all of them, so that measurement weighs them against the fused kernel.
#include <gtest/gtest.h>

#include "codegen/lower.h"
#include "ir/parser.h"

namespace kiln::codegen {
namespace {

// A conv with bias and a residual add then ReLU fused around it, f32 (the SIMT kernel: one way to
// compute it fused).
constexpr const char* kConvEpilogue = R"(
graph @g(%x: f32[1,4,6,6], %w: f32[8,4,3,3], %b: f32[8], %r: f32[1,8,6,6]) -> (f32[1,8,6,6]) {
  %y = fusion.epilogue(%x, %w, %b, %r) {
    ^(%p: f32[1,4,6,6], %q: f32[8,4,3,3], %c: f32[8], %e: f32[1,8,6,6]):
    %z = conv(%p, %q, %c) {group=1, strides=[1,1], pads=[1,1,1,1], dilations=[1,1]} : f32[1,8,6,6] loc("/Conv")
    %a = add(%z, %e) : f32[1,8,6,6] loc("/Add")
    %k = relu(%a) : f32[1,8,6,6] loc("/Relu")
    yield %k
  } : (f32[1,8,6,6]) loc("/Conv", "/Add", "/Relu")
  return %y
})";

// The program of `text` with the tactic named `name` wherever a site has it (else the
// heuristic's), and every site's tactics.
Program lower_choosing(const std::string& text, const std::string& name,
                       std::vector<std::vector<std::string>>& sites, LoweringReport* report) {
  CodegenOptions options;
  options.target = target_for_arch("sm_90a");
  options.choose_tactic = [&](const TacticSite& site) {
    sites.push_back(site.tactics);
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      if (site.tactics[t] == name) return static_cast<int>(t);
    }
    return 0;
  };
  return lower_graph(*parse_graph(text), options, report);
}

TEST(UnfusedTactic, AnEpilogueFusionOffersItLast) {
  std::vector<std::vector<std::string>> sites;
  const Program fused = lower_choosing(kConvEpilogue, "fused", sites, nullptr);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0], (std::vector<std::string>{"fused", kUnfusedTactic}));
  ASSERT_EQ(fused.steps.size(), 1u);
}

TEST(UnfusedTactic, LowersTheBodyOpByOp) {
  std::vector<std::vector<std::string>> sites;
  LoweringReport report;
  const Program program = lower_choosing(kConvEpilogue, kUnfusedTactic, sites, &report);
  // conv (with its bias), add, relu: three steps; the report's range holds them all.
  ASSERT_EQ(program.steps.size(), 3u);
  ASSERT_EQ(report.tactics.size(), 1u);
  EXPECT_EQ(report.tactics[0].first_step, 0);
  EXPECT_EQ(report.tactics[0].step_count, 3);
  const auto names = [&](const ProgramStep& step) {
    std::vector<std::string> args;
    for (const int arg : step.args) args.push_back(program.buffers[arg].name);
    return args;
  };
  // The conv reads the fusion's operands and writes an intermediate the add reads with the
  // residual; the relu writes the fusion's result.
  const std::vector<std::string> conv = names(program.steps[0]);
  ASSERT_EQ(conv.size(), 4u);
  EXPECT_EQ(conv[0], "x");
  const std::string between = conv[3];
  EXPECT_EQ(program.buffers[program.steps[0].args[3]].kind, ProgramBuffer::Kind::kIntermediate);
  const std::vector<std::string> add = names(program.steps[1]);
  EXPECT_EQ(add[0], between);
  EXPECT_EQ(add[1], "r");
  const std::vector<std::string> relu = names(program.steps[2]);
  EXPECT_EQ(relu[0], add[2]);
  EXPECT_EQ(program.buffers[program.steps[2].args[1]].kind, ProgramBuffer::Kind::kOutput);
  EXPECT_EQ(program.kernels[static_cast<size_t>(program.steps[2].kernel)].provenance,
            std::vector<std::string>{"/Relu"});
}

// Two outputs showing one value (the ReLU's result, and a reshape of it) would need one buffer
// written twice: the fusion is not offered the tactic.
TEST(UnfusedTactic, NotWhereTwoOutputsShowOneValue) {
  std::vector<std::vector<std::string>> sites;
  lower_choosing(R"(
graph @g(%a: f16[64,32], %b: f16[32,16]) -> (f16[64,16], f16[1024]) {
  %y, %z = fusion.epilogue(%a, %b) {
    ^(%p: f16[64,32], %q: f16[32,16]):
    %m = matmul(%p, %q) : f16[64,16]
    %r = relu(%m) : f16[64,16]
    %f = reshape(%r) {shape=[1024]} : f16[1024]
    yield %r, %f
  } : (f16[64,16], f16[1024])
  return %y, %z
})",
                 kUnfusedTactic, sites, nullptr);
  for (const std::vector<std::string>& tactics : sites) {
    EXPECT_EQ(std::find(tactics.begin(), tactics.end(), kUnfusedTactic), tactics.end());
  }
}

TEST(UnfusedTactic, OnlyForContractionsWithOpsAroundThem) {
  std::vector<std::vector<std::string>> sites;
  // A loop fusion (no contraction) and a lone matmul: neither has the tactic.
  lower_choosing(R"(
graph @g(%x: f32[8,8], %w: f32[8,8]) -> (f32[8,8], f32[8,8]) {
  %y = fusion.loop(%x) {
    ^(%p: f32[8,8]):
    %a = relu(%p) : f32[8,8]
    %b = neg(%a) : f32[8,8]
    yield %b
  } : (f32[8,8])
  %m = matmul(%x, %w) : f32[8,8]
  return %y, %m
})",
                 kUnfusedTactic, sites, nullptr);
  for (const std::vector<std::string>& tactics : sites) {
    EXPECT_EQ(std::find(tactics.begin(), tactics.end(), kUnfusedTactic), tactics.end());
  }
}

}  // namespace
}  // namespace kiln::codegen
