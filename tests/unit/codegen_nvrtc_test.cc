// Tests of the NVRTC wrapper (codegen/nvrtc_compiler.h) and of compile_program(s): compiling to
// CUBIN and PTX, the error of a kernel that does not compile (its name and NVRTC's log), and
// the arch checks. NVRTC needs no GPU; these tests need the CUDA toolkit's libnvrtc.
#include <gtest/gtest.h>

#include <mutex>
#include <regex>

#include "codegen/compile_program.h"
#include "codegen/device_functions.h"
#include "codegen/nvrtc_compiler.h"
#include "ir/error.h"
#include "target/native_target.h"
#include "test_temp_dir.h"

namespace kiln::codegen {
namespace {

constexpr const char* kScaleKernel = R"(
extern "C" __global__ void scale(const float* in, float* out) {
  out[threadIdx.x] = 2.0f * in[threadIdx.x];
}
)";

TEST(CodegenNvrtc, CompilesToCubinAndPtx) {
  const NvrtcOutput output = Nvrtc::instance().compile(kScaleKernel, "scale", "sm_90", true);
  ASSERT_GT(output.cubin.size(), 4u);
  EXPECT_EQ(output.cubin[0], 0x7f);  // an ELF file
  EXPECT_EQ(output.cubin[1], 'E');
  EXPECT_NE(output.ptx.find(".entry scale"), std::string::npos) << output.ptx;
  EXPECT_NE(output.ptx.find(".target sm_90"), std::string::npos);
}

TEST(CodegenNvrtc, ACompileErrorCarriesTheKernelNameAndTheLog) {
  const std::string broken = R"(
extern "C" __global__ void broken_kernel(float* out) {
  out[0] = undefined_value;
}
)";
  try {
    Nvrtc::instance().compile(broken, "broken_kernel", "sm_80", false);
    FAIL() << "expected InternalError";
  } catch (const InternalError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("failed to compile kernel broken_kernel for sm_80"), std::string::npos)
        << message;
    EXPECT_NE(message.find("identifier \"undefined_value\" is undefined"), std::string::npos)
        << message;
  }
}

TEST(CodegenNvrtc, ArchsAreCheckedAgainstWhatNvrtcSupports) {
  EXPECT_NO_THROW(check_archs({"sm_80", "sm_90", "sm_90a"}));
  EXPECT_THROW(check_archs({"compute_80"}), InputError);
  EXPECT_THROW(check_archs({"sm_80", "sm_80"}), InputError);
  EXPECT_THROW(check_archs({}), InputError);
  try {
    check_archs({"sm_12"});
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("does not compile for sm_12 (it supports sm_"),
              std::string::npos)
        << error.what();
  }
}

TEST(CodegenNvrtc, CompileProgramFillsEveryKernelForEveryArch) {
  Program program;
  program.kernels.push_back({.name = "scale", .source = kScaleKernel});
  CodegenOptions options;
  options.archs = {"sm_90", "sm_80"};
  options.cache_dir = testing_support::fresh_temp_path("nvrtc_cache").string();
  compile_program(program, options);
  EXPECT_EQ(program.archs, (std::vector<std::string>{"sm_90", "sm_80"}));
  ASSERT_EQ(program.kernels[0].binaries.size(), 2u);
  EXPECT_EQ(program.kernels[0].binaries[0].arch, "sm_90");
  EXPECT_EQ(program.kernels[0].binaries[1].arch, "sm_80");
  // PTX for the newest target, whatever the order they are given in.
  EXPECT_NE(program.kernels[0].ptx.find(".target sm_90"), std::string::npos);
}

// The autotuner's rounds: several programs on one pool, a kernel they share compiled once, each
// program reported once with its own error; a program whose kernel fails does not fail the
// others.
TEST(CodegenNvrtc, CompileProgramsSharesKernelsAndReportsEachProgram) {
  const std::string twice = R"(
extern "C" __global__ void twice(float* out) { out[threadIdx.x] *= 2.0f; }
)";
  const std::string broken = R"(
extern "C" __global__ void broken(float* out) { out[0] = undefined_value; }
)";
  Program first, second, third;
  first.kernels.push_back({.name = "scale", .source = kScaleKernel});
  second.kernels.push_back({.name = "scale", .source = kScaleKernel});
  second.kernels.push_back({.name = "twice", .source = twice});
  third.kernels.push_back({.name = "broken", .source = broken});
  third.kernels.push_back({.name = "twice", .source = twice});
  CodegenOptions options;
  options.archs = {"sm_90"};
  options.cache_dir = testing_support::fresh_temp_path("nvrtc_programs").string();
  CompileStats stats;
  std::vector<int> reports(3, 0);
  std::mutex mutex;
  const std::vector<std::exception_ptr> errors = compile_programs(
      {&first, &second, &third}, options, stats, [&](size_t program, std::exception_ptr) {
        const std::lock_guard lock(mutex);
        ++reports[program];
      });
  EXPECT_EQ(reports, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(stats.compilations, 2);  // scale and twice once each; broken failed
  EXPECT_EQ(stats.cache_hits, 0);
  EXPECT_FALSE(errors[0]);
  EXPECT_FALSE(errors[1]);
  ASSERT_TRUE(errors[2]);
  try {
    std::rethrow_exception(errors[2]);
  } catch (const InternalError& error) {
    EXPECT_NE(std::string(error.what()).find("failed to compile kernel broken"), std::string::npos)
        << error.what();
  }
  ASSERT_EQ(second.kernels[1].binaries.size(), 1u);
  EXPECT_EQ(second.kernels[1].binaries[0].cubin, third.kernels[1].binaries[0].cubin);
  EXPECT_EQ(first.kernels[0].binaries[0].cubin, second.kernels[0].binaries[0].cubin);
  EXPECT_EQ(second.archs, (std::vector<std::string>{"sm_90"}));
}

// On a machine with a GPU: its target; without one: the error kiln compile --arch native shows.
TEST(CodegenNvrtc, NativeTargetIsTheDevicesOrAClearError) {
  try {
    const Target target = native_target();
    EXPECT_TRUE(std::regex_match(target.arch, std::regex("sm_[0-9]+")));
    EXPECT_TRUE(target.from_device);
    EXPECT_GT(target.sm_count, 0);
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("no CUDA device; pass --arch sm_80 or sm_90 (", 0),
              0u)
        << error.what();
  }
}

// The tensor-core and async-copy helpers are inline PTX that only ptxas checks: a kernel that
// calls each of them must compile for sm_80 and sm_90.
TEST(CodegenNvrtc, TensorCoreDeviceFunctionsCompile) {
  const std::string body = R"(
extern "C" __global__ void mma_kernel(const unsigned short* in, float* out) {
  __shared__ __align__(16) unsigned short tile[16 * 16];
  kiln_cp_async_16(tile + threadIdx.x % 32 * 8, in + threadIdx.x % 32 * 8, threadIdx.x < 32);
  kiln_cp_async_8(tile + threadIdx.x % 32 * 4, in + threadIdx.x % 32 * 4, threadIdx.x < 32);
  kiln_cp_async_4(tile + threadIdx.x % 32 * 2, in + threadIdx.x % 32 * 2, threadIdx.x < 32);
  kiln_cp_async_commit();
  kiln_cp_async_wait<0>();
  __syncthreads();
  unsigned a[4], b[4];
  kiln_ldmatrix_x4(a, tile + threadIdx.x % 16 * 16);
  kiln_ldmatrix_x4_trans(b, tile + threadIdx.x % 16 * 16);
  float c[4] = {0, 0, 0, 0};
  kiln_mma_f16_16816(c, a, b);
  kiln_mma_bf16_16816(c, a, b + 2);
  kiln_mma_tf32_1688(c, a, b);
  b[0] = kiln_pack_f16x2(c[0], c[1]) ^ kiln_pack_bf16x2(c[2], c[3]);
  out[threadIdx.x] = c[0] + c[1] + c[2] + c[3] + b[0];
}
)";
  const std::string source = device_functions_for(body) + body;
  for (const char* arch : {"sm_80", "sm_90"}) {
    const NvrtcOutput output = Nvrtc::instance().compile(source, "mma_kernel", arch, false);
    EXPECT_GT(output.cubin.size(), 4u) << arch;
  }
}

}  // namespace
}  // namespace kiln::codegen
