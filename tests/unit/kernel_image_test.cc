// Tests of arch names and of the choice of a kernel's CUBIN or PTX for a GPU
// (runtime/kernel_image.h); no GPU needed.
#include "runtime/kernel_image.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace kiln {
namespace {

TEST(KernelImageTest, ParsesArchNames) {
  const std::optional<GpuArch> sm_90 = parse_gpu_arch("sm_90");
  ASSERT_TRUE(sm_90);
  EXPECT_EQ(sm_90->major, 9);
  EXPECT_EQ(sm_90->minor, 0);
  EXPECT_EQ(sm_90->suffix, "");
  const std::optional<GpuArch> sm_100a = parse_gpu_arch("sm_100a");
  ASSERT_TRUE(sm_100a);
  EXPECT_EQ(sm_100a->major, 10);
  EXPECT_EQ(sm_100a->minor, 0);
  EXPECT_EQ(sm_100a->suffix, "a");
  EXPECT_EQ(parse_gpu_arch("sm_86")->minor, 6);
  for (const char* bad : {"", "sm_", "sm_9", "sm_0x", "sm_090", "sm_1000", "compute_90", "sm_90b",
                          "SM_90", "sm_9a"}) {
    EXPECT_FALSE(parse_gpu_arch(bad)) << bad;
  }
  EXPECT_EQ(gpu_arch_name(12, 0), "sm_120");
}

ProgramKernel kernel_with(std::vector<std::string> archs, std::string ptx) {
  ProgramKernel kernel;
  kernel.name = "add_bias";
  for (const std::string& arch : archs) kernel.binaries.push_back({arch, {1, 2, 3}});
  kernel.ptx = std::move(ptx);
  return kernel;
}

TEST(KernelImageTest, PrefersTheExactCubin) {
  const ProgramKernel kernel = kernel_with({"sm_80", "sm_86", "sm_90a"}, "ptx");
  EXPECT_EQ(choose_kernel_image(kernel, 8, 6).description, "CUBIN sm_86");
  EXPECT_EQ(choose_kernel_image(kernel, 8, 6).code, kernel.binaries[1].cubin.data());
  EXPECT_EQ(choose_kernel_image(kernel, 9, 0).description, "CUBIN sm_90a");
}

TEST(KernelImageTest, RunsAnOlderMinorOfTheSameMajor) {
  const ProgramKernel kernel = kernel_with({"sm_80", "sm_86"}, "");
  EXPECT_EQ(choose_kernel_image(kernel, 8, 9).description, "CUBIN sm_86");
  const ProgramKernel arch_specific = kernel_with({"sm_90a"}, "ptx");
  EXPECT_EQ(choose_kernel_image(arch_specific, 9, 1).description, "PTX");
}

TEST(KernelImageTest, FallsBackToPtx) {
  const ProgramKernel kernel = kernel_with({"sm_80"}, "// ptx");
  const KernelImage image = choose_kernel_image(kernel, 9, 0);
  EXPECT_EQ(image.description, "PTX");
  EXPECT_EQ(image.code, kernel.ptx.c_str());
  EXPECT_EQ(choose_kernel_image(kernel_with({"sm_86"}, "// ptx"), 8, 0).description, "PTX");
}

TEST(KernelImageTest, NoUsableCodeNamesTheArchs) {
  try {
    choose_kernel_image(kernel_with({"sm_80", "sm_90"}, ""), 7, 5);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              "kernel 'add_bias': compiled for sm_80, sm_90, this GPU is sm_75 (no PTX)");
  }
}

}  // namespace
}  // namespace kiln
