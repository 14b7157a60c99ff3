// Tests of validate_program (runtime/program_validation.h): the hand-written program passes, and
// each kind of problem, made by one edit of it, is an InputError with its own message. Reading a
// file runs the same checks and puts the file's name first.
#include "runtime/program_validation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "ir/error.h"
#include "runtime/kernel_header.h"
#include "runtime/program_io.h"
#include "test_temp_dir.h"
#include "tests/runtime/bias_relu_program.h"

namespace kiln {
namespace {

Program valid_program() { return test::bias_relu_program(test::placeholder_kernels()); }

// A header of kernel 0 (add_bias: x, bias, sum) up to its tensor maps' values.
const std::string kTensorMapHeader =
    "// kiln kernel add_bias: loop (add)\n// parameters: 3\n// tensor maps: ";
// A header of kernel 0 writing sum (parameter 2), up to its output regions' values.
const std::string kRegionsHeader =
    "// kiln kernel add_bias: loop (add)\n// written parameters: 2\n// output regions: ";

std::string validation_error(const Program& program) {
  try {
    validate_program(program);
  } catch (const InputError& error) {
    return error.what();
  }
  return "no error";
}

TEST(ProgramValidationTest, HandWrittenProgramIsValid) {
  EXPECT_EQ(validation_error(valid_program()), "no error");
}

TEST(ProgramValidationTest, EachProblemHasItsMessage) {
  using Kind = ProgramBuffer::Kind;
  struct Case {
    std::function<void(Program&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](Program& p) { p.archs.clear(); }, "the program names no target arch"},
      {[](Program& p) { p.archs[0] = "sm80"; },
       "target arch 'sm80' is not of the form sm_90 or sm_90a"},
      {[](Program& p) { p.archs[1] = "sm_80"; }, "target arch sm_80 is listed twice"},
      {[](Program& p) { p.kernels[0].name = "add-bias"; },
       "kernel 0 ('add-bias'): the name is not a C identifier"},
      {[](Program& p) {
         p.kernels[1].binaries.clear();
         p.kernels[1].ptx.clear();
       },
       "kernel 1 ('relu'): has neither a CUBIN nor PTX"},
      {[](Program& p) { p.kernels[0].binaries[0].arch = "sm_86"; },
       "kernel 0 ('add_bias'): has a CUBIN for 'sm_86', which is not a target arch of the "
       "program"},
      {[](Program& p) { p.kernels[0].binaries[1].arch = "sm_80"; },
       "kernel 0 ('add_bias'): has two CUBINs for sm_80"},
      {[](Program& p) { p.kernels[0].binaries[0].cubin.clear(); },
       "kernel 0 ('add_bias'): its CUBIN for sm_80 is empty"},
      {[](Program& p) { p.kernels[2].ptx += '\0'; },
       "kernel 2 ('twice'): its PTX contains a NUL byte"},
      {[](Program& p) {
         p.buffers[0].type.shape = {64, -256};
       },
       "buffer 0 ('x'): shape [64,-256] has a negative dim"},
      {[](Program& p) {
         p.buffers[0].type.shape = {int64_t{1} << 40, int64_t{1} << 22};
       },
       "buffer 0 ('x'): shape [1099511627776,4194304] has more bytes than int64 holds"},
      {[](Program& p) { p.buffers[1].offset = 128; },
       "buffer 1 ('bias'): offset 128 in the weights is not a multiple of 256"},
      {[](Program& p) { p.buffers[1].offset = 256; },
       "buffer 1 ('bias'): 1024 bytes at offset 256 overrun the weights (1024 bytes)"},
      {[](Program& p) { p.buffers[4].offset = 100; },
       "buffer 4 ('doubled'): offset 100 in the arena is not a multiple of 256"},
      {[](Program& p) { p.arena_bytes = 65536; },
       "buffer 3 ('rectified'): 65536 bytes at offset 65536 overrun the arena (65536 bytes)"},
      {[](Program& p) { p.arena_bytes = -1; }, "the arena size -1 is negative"},
      {[](Program& p) { p.buffers[4].offset = 65536; },
       "buffer 3 ('rectified') and buffer 4 ('doubled') are live at the same steps but share "
       "arena bytes"},
      {[](Program& p) { p.inputs = {99}; }, "input 0: buffer index 99 is out of range (6 buffers)"},
      {[](Program& p) { p.inputs = {1}; }, "input 0: buffer 1 ('bias') is not an input buffer"},
      {[](Program& p) { p.buffers[0].offset = 3; },
       "input 0: buffer 0 ('x') has offset 3, not its position 0"},
      {[](Program& p) { p.inputs.clear(); },
       "buffer 0 ('x') is an input buffer but is listed 0 times among the inputs"},
      {[](Program& p) { p.buffers[0].name.clear(); }, "input 0: buffer 0 ('') has no name"},
      {[](Program& p) {
         p.buffers.push_back({Kind::kOutput, "y", p.buffers[5].type, 1});
         p.outputs.push_back(6);
       },
       "two outputs are named 'y'"},
      {[](Program& p) { p.steps[2].kernel = 9; },
       "step 2: kernel index 9 is out of range (4 kernels)"},
      {[](Program& p) {
         p.steps[0].grid = {0, 1, 1};
       },
       "step 0 (kernel 'add_bias'): grid 0x1x1 is outside CUDA's limits (1 to "
       "2147483647x65535x65535)"},
      {[](Program& p) {
         p.steps[0].grid = {1, 70000, 1};
       },
       "step 0 (kernel 'add_bias'): grid 1x70000x1 is outside CUDA's limits"},
      {[](Program& p) {
         p.steps[1].block = {2048, 1, 1};
       },
       "step 1 (kernel 'relu'): block 2048x1x1 is outside CUDA's limits (1 to 1024x1024x64, at "
       "most 1024 threads)"},
      {[](Program& p) {
         p.steps[1].block = {32, 32, 2};
       },
       "step 1 (kernel 'relu'): block 32x32x2 is outside CUDA's limits"},
      {[](Program& p) { p.steps[1].shared_bytes = 300000; },
       "step 1 (kernel 'relu'): 300000 bytes of shared memory exceed the 232448 a block can "
       "have"},
      {[](Program& p) { p.steps[3].args[1] = 42; },
       "step 3 (kernel 'add'): argument 1 is buffer index 42, out of range (6 buffers)"},
      {[](Program& p) { p.steps[3].args.pop_back(); },
       "output buffer 5 ('y') is written by no step"},
      // A kernel whose source states its parameter count (runtime/kernel_header.h).
      {[](Program& p) {
         p.kernels[3].source = "// kiln kernel add: loop (add)\n// parameters: 4\n";
       },
       "step 3 (kernel 'add') passes 3 arguments; its kernel takes 4"},
      {[](Program& p) {
         p.kernels[3].source = "// kiln kernel add: loop (add)\n// written parameters: 2, 3\n";
       },
       "step 3 (kernel 'add'): its kernel writes parameter 3; the step passes 3 arguments"},
      {[](Program& p) {
         p.kernels[3].source = "// kiln kernel add: loop (add)\n// written parameters: 1, x\n";
       },
       "step 3 (kernel 'add'): its kernel's header line '// written parameters' is malformed"},
      {[](Program& p) {
         p.kernels[0].source = "// kiln kernel add_bias: loop (add)\n// written parameters: 0\n";
       },
       "step 0 (kernel 'add_bias'): its kernel writes parameter 0, buffer 0 ('x'), which is read "
       "only"},
      // Output regions (a concat's operand written into its slice; runtime/kernel_header.h) of
      // step 0's sum (f32[64,256]).
      {[](Program& p) { p.kernels[0].source = kRegionsHeader + "2 block 64 stride 32 offset 0\n"; },
       "step 0 (kernel 'add_bias'): its kernel's header line '// output regions' is malformed"},
      {[](Program& p) {
         p.kernels[0].source = kRegionsHeader + "1 block 64 stride 128 offset 0\n";
       },
       "step 0 (kernel 'add_bias'): its kernel states an output region of parameter 1, which it "
       "does not write"},
      {[](Program& p) {
         p.kernels[0].source = kRegionsHeader + "2 block 64 stride 96 offset 32\n";
       },
       "step 0 (kernel 'add_bias'): its kernel writes parameter 2 in runs 96 elements apart, which "
       "do not tile buffer 2 ('sum')"},
      // Tensor maps (runtime/kernel_header.h) of step 0's parameters: x (f32[64,256]), bias, sum.
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f32 dims 256x64 strides box 32x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): its kernel's header line '// tensor maps' is malformed"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "3 f32 dims 256x64 strides 1024 box 32x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0 reads parameter 3; the step passes 3 arguments"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f16 dims 256x64 strides 512 box 64x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0 reads f16 elements from parameter 0, buffer 0 "
       "('x') of f32"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f32 dims 256x65 strides 1024 box 32x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0 spans 66560 bytes of parameter 0, buffer 0 ('x') "
       "of 65536 bytes"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f32 dims 250x64 strides 1000 box 32x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0's stride 1000 bytes is not a multiple of 16"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f32 dims 256x64 strides 1024 box 32x300 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0's box of 300 elements exceeds 256"},
      {[](Program& p) {
         p.kernels[0].source =
             kTensorMapHeader + "0 f32 dims 256x64 strides 1024 box 64x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): tensor map 0's box rows of 256 bytes exceed its 128-byte "
       "swizzle"},
      {[](Program& p) {
         p.kernels[0].source =
             "// kiln kernel add_bias: loop (add)\n// tensor maps: 0 f32 dims "
             "256x64 strides 1024 box 32x8 swizzle 128\n";
       },
       "step 0 (kernel 'add_bias'): its kernel states tensor maps but not its parameter count"},
  };
  for (const Case& test_case : cases) {
    Program program = valid_program();
    test_case.edit(program);
    const std::string message = validation_error(program);
    EXPECT_EQ(message.substr(0, test_case.message.size()), test_case.message) << message;
  }
}

TEST(ProgramValidationTest, ReadingAFileValidatesAndNamesTheFile) {
  const std::string path =
      testing_support::fresh_temp_path("program_validation_test.kiln").string();
  Program program = valid_program();
  program.steps[0].block = {0, 1, 1};
  write_program(program, path);
  try {
    read_program(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()),
              path +
                  ": step 0 (kernel 'add_bias'): block 0x1x1 is outside CUDA's limits (1 to "
                  "1024x1024x64, at most 1024 threads)");
  }
}

// The written parameters a header states (runtime/kernel_header.h): increasing positions,
// ", "-separated; any other form reads as nullopt (and validation refuses the program).
TEST(ProgramValidationTest, KernelHeaderStatesTheParametersItWrites) {
  const auto written = [](const std::string& line) {
    ProgramKernel kernel;
    kernel.source = "// kiln kernel k: loop (add)\n// parameters: 4\n" + line + "\n\nextern";
    return kernel_written_parameters(kernel);
  };
  EXPECT_EQ(written("// written parameters: 2, 3"), (std::vector<int>{2, 3}));
  EXPECT_EQ(written("// written parameters: 0"), (std::vector<int>{0}));
  EXPECT_EQ(written(""), std::nullopt);
  for (const std::string bad : {"// written parameters: ", "// written parameters: 3, 2",
                                "// written parameters: 1,2", "// written parameters: 1, x",
                                "// written parameters: -1", "// written parameters: 1, 1"}) {
    EXPECT_EQ(written(bad), std::nullopt) << bad;
  }
}

// A tensor map over x (f32[64,256], 65,536 bytes) that fits it is valid.
TEST(ProgramValidationTest, TensorMapsWithinTheirBuffersAreValid) {
  Program program = valid_program();
  program.kernels[0].source =
      kTensorMapHeader + "0 f32 dims 256x64 strides 1024 box 32x8 swizzle 128\n";
  EXPECT_EQ(validation_error(program), "no error");
}

// The tensor maps a header states (runtime/kernel_header.h): "; "-separated maps of a parameter
// position, a dtype, dims, strides (one fewer), box (as many as dims) and a swizzle of 0, 32, 64
// or 128; no line is no maps, any other form reads as nullopt (and validation refuses it).
TEST(ProgramValidationTest, KernelHeaderStatesItsTensorMaps) {
  const auto maps = [](const std::string& line) {
    ProgramKernel kernel;
    kernel.source = "// kiln kernel k: matmul (matmul)\n// parameters: 3\n" + line + "\n\nextern";
    return kernel_tensor_maps(kernel);
  };
  const KernelTensorMap a{.parameter = 0,
                          .dtype = DType::kF16,
                          .dims = {768, 4096},
                          .strides = {1536},
                          .box = {64, 128},
                          .swizzle = 128};
  const KernelTensorMap b{.parameter = 1,
                          .dtype = DType::kBF16,
                          .dims = {768, 768, 12},
                          .strides = {1536, 1179648},
                          .box = {64, 64, 1},
                          .swizzle = 128};
  EXPECT_EQ(format_tensor_maps({a, b}),
            "0 f16 dims 768x4096 strides 1536 box 64x128 swizzle 128; 1 bf16 dims 768x768x12 "
            "strides 1536x1179648 box 64x64x1 swizzle 128");
  EXPECT_EQ(maps("// tensor maps: " + format_tensor_maps({a, b})),
            (std::vector<KernelTensorMap>{a, b}));
  EXPECT_EQ(maps("// tensor maps: " + format_tensor_maps({a})), (std::vector<KernelTensorMap>{a}));
  EXPECT_EQ(maps(""), (std::vector<KernelTensorMap>{}));
  for (const std::string bad : {
           "// tensor maps: ",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536 box 64x128",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536 box 64x128 swizzle 100",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536x2 box 64x128 swizzle 128",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536 box 64 swizzle 128",
           "// tensor maps: 0 f16 dims 768 strides  box 64 swizzle 128",
           "// tensor maps: 0 f17 dims 768x4096 strides 1536 box 64x128 swizzle 128",
           "// tensor maps: -1 f16 dims 768x4096 strides 1536 box 64x128 swizzle 128",
           "// tensor maps: 0 f16 dims 768x0 strides 1536 box 64x128 swizzle 128",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536 box 64x128 swizzle 128;",
           "// tensor maps: 0 f16 dims 768x4096 strides 1536 box 64x128 swizzle 128 extra",
           "// tensor maps: 0 f16 dims 768,4096 strides 1536 box 64x128 swizzle 128",
           "// tensor maps: 0 f16 strides 1536 dims 768x4096 box 64x128 swizzle 128",
       }) {
    EXPECT_EQ(maps(bad), std::nullopt) << bad;
  }
}

}  // namespace
}  // namespace kiln
