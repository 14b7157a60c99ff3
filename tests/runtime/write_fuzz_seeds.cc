// Writes the seed corpus of the .kiln reader's fuzzer (tests/fuzz/corpus_kiln): small valid
// programs with placeholder kernel code (one whose two steps write halves of a concat's buffer,
// one computed by a cuBLASLt call),
// and a dynamic one (runtime/dynamic_program.h) of two variants, each under the fuzzers'
// 4096-byte input limit.
//
//   usage: write_fuzz_seeds DIR
#include <cstdio>
#include <filesystem>

#include "runtime/dynamic_program.h"
#include "runtime/memory_plan.h"
#include "runtime/program_io.h"
#include "tests/runtime/bias_relu_program.h"

namespace {

using Kind = kiln::ProgramBuffer::Kind;

// One PTX-only kernel with a 3-D launch and shared memory writing one f16 output.
kiln::Program single_step_program() {
  kiln::Program program;
  program.name = "single";
  program.archs = {"sm_90a"};
  program.kernels = {{"k", "// k\n", {}, {}, "// ptx\n"}};
  program.buffers = {{Kind::kOutput, "out", {kiln::DType::kF16, {3}}, 0}};
  program.outputs = {0};
  program.steps = {{0, {2, 3, 4}, {8, 4, 2}, 1024, {0}}};
  return program;
}

// Buffers of every dtype, a scalar and an empty one, and bf16 weights at an aligned offset.
kiln::Program every_dtype_program() {
  kiln::Program program = single_step_program();
  program.name = "dtypes";
  program.kernels[0].binaries = {{"sm_90a", {1, 2, 3, 4}}};
  const kiln::DType dtypes[] = {kiln::DType::kF32, kiln::DType::kF16, kiln::DType::kBF16,
                                kiln::DType::kF64, kiln::DType::kI64, kiln::DType::kI32,
                                kiln::DType::kI8,  kiln::DType::kU8,  kiln::DType::kBool};
  for (const kiln::DType dtype : dtypes) {
    program.buffers.push_back({Kind::kIntermediate, "t", {dtype, {2, 3}}, -1});
    program.steps[0].args.push_back(static_cast<int>(program.buffers.size()) - 1);
  }
  program.buffers.push_back({Kind::kIntermediate, "scalar", {kiln::DType::kF32, {}}, -1});
  program.buffers.push_back({Kind::kIntermediate, "empty", {kiln::DType::kF32, {0, 5}}, -1});
  program.buffers.push_back({Kind::kWeight, "w", {kiln::DType::kBF16, {4}}, 256});
  program.buffers.push_back({Kind::kInput, "in", {kiln::DType::kI64, {1}}, 0});
  program.inputs = {static_cast<int>(program.buffers.size()) - 1};
  program.steps.push_back({0, {1, 1, 1}, {1, 1, 1}, 0, {10, 11, 12, 13, 0}});
  program.weights.assign(264, 7);
  kiln::plan_memory(program);
  return program;
}

// A concat as a view: two steps write the halves of each row of `cat` (their kernels' headers
// state the output regions), a third reads it whole.
kiln::Program concat_view_program() {
  kiln::Program program;
  program.name = "concat";
  program.archs = {"sm_90a"};
  const auto kernel = [](const char* name, const char* header) {
    return kiln::ProgramKernel{name, std::string("// ") + name + "\n" + header, {}, {}, "// ptx\n"};
  };
  program.kernels = {kernel("a",
                            "// parameters: 1\n// written parameters: 0\n"
                            "// output regions: 0 block 4 stride 8 offset 0\n"),
                     kernel("b",
                            "// parameters: 1\n// written parameters: 0\n"
                            "// output regions: 0 block 4 stride 8 offset 4\n"),
                     kernel("c", "// parameters: 2\n// written parameters: 1\n")};
  program.buffers = {{Kind::kIntermediate, "cat", {kiln::DType::kF16, {2, 8}}, -1},
                     {Kind::kOutput, "y", {kiln::DType::kF16, {2, 8}}, 0}};
  program.outputs = {1};
  program.steps = {{0, {1, 1, 1}, {32, 1, 1}, 0, {0}},
                   {1, {1, 1, 1}, {32, 1, 1}, 0, {0}},
                   {2, {1, 1, 1}, {32, 1, 1}, 0, {0, 1}}};
  kiln::plan_memory(program);
  return program;
}

// d = relu(a · b + bias) as a cuBLASLt call (ProgramLibraryGemm) with its kernel to stand in:
// a [4, 8], b [8, 2] row-major, so cuBLASLt's A is b (2 × 8, leading dimension 2) and its B is
// a (8 × 4, leading dimension 8); a workspace the planner places above the buffers.
kiln::Program library_gemm_program() {
  kiln::Program program;
  program.name = "gemm";
  program.archs = {"sm_90a"};
  program.kernels = {
      {"k", "// k\n// parameters: 4\n// written parameters: 3\n", {}, {}, "// ptx\n"}};
  program.buffers = {{Kind::kInput, "a", {kiln::DType::kF16, {4, 8}}, 0},
                     {Kind::kWeight, "b", {kiln::DType::kF16, {8, 2}}, 0},
                     {Kind::kWeight, "bias", {kiln::DType::kF32, {2}}, 256},
                     {Kind::kOutput, "d", {kiln::DType::kF16, {4, 2}}, 0}};
  program.inputs = {0};
  program.outputs = {3};
  program.steps = {{0, {1, 1, 1}, {128, 1, 1}, 0, {0, 1, 2, 3}}};
  program.steps[0].library = kiln::ProgramLibraryGemm{.a = 1,
                                                      .b = 0,
                                                      .d = 3,
                                                      .c = -1,
                                                      .bias = 2,
                                                      .m = 2,
                                                      .n = 4,
                                                      .k = 8,
                                                      .lda = 2,
                                                      .ldb = 8,
                                                      .ldd = 2,
                                                      .relu = true,
                                                      .workspace_bytes = 512};
  program.weights.assign(264, 0);
  kiln::plan_memory(program);
  return program;
}

// y = k(x) for x, y of [batch, 3]: one variant's program.
kiln::Program batch_program(int64_t batch) {
  kiln::Program program;
  program.name = "rows";
  program.archs = {"sm_90a"};
  program.kernels = {{"k", "// k\n", {}, {}, "// ptx\n"}};
  program.buffers = {{Kind::kInput, "x", {kiln::DType::kF32, {batch, 3}}, 0},
                     {Kind::kOutput, "y", {kiln::DType::kF32, {batch, 3}}, 0}};
  program.inputs = {0};
  program.outputs = {1};
  program.steps = {{0, {1, 1, 1}, {32, 1, 1}, 0, {0, 1}}};
  return program;
}

// x's batch 1..2: variants at 1 and 2, batch 1 running padded in the second.
kiln::DynamicProgram dynamic_program() {
  kiln::DynamicProgram program;
  program.dims = {{0, 0, 1, 2, 0}};
  program.classes = {{true, "", "1 × a softmax over padded elements masked by -1e4 or less"}};
  for (const int64_t batch : {1, 2}) {
    kiln::ProgramVariant variant;
    variant.sizes = {batch};
    variant.padded = {batch > 1};
    variant.input_shapes = {{batch, 3}};
    variant.output_rows = {batch > 1 ? std::vector<kiln::OutputRows>{{0, 1, 0}}
                                     : std::vector<kiln::OutputRows>{}};
    variant.program = batch_program(batch);
    program.variants.push_back(std::move(variant));
  }
  return program;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_fuzz_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  kiln::write_program(kiln::test::bias_relu_program(kiln::test::placeholder_kernels()),
                      (dir / "bias_relu.kiln").string());
  kiln::write_program(single_step_program(), (dir / "single_step.kiln").string());
  kiln::write_program(every_dtype_program(), (dir / "every_dtype.kiln").string());
  kiln::write_program(concat_view_program(), (dir / "concat_view.kiln").string());
  kiln::write_program(library_gemm_program(), (dir / "library_gemm.kiln").string());
  kiln::write_dynamic_program(dynamic_program(), (dir / "dynamic.kiln").string());
  return 0;
}
