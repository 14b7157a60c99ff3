// The hand-written test programs of bias_relu_program.h: their buffers, steps and weights, their
// code (placeholder or built by nvcc), their inputs and the outputs they must give.
#include "tests/runtime/bias_relu_program.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>

#include "ir/error.h"
#include "runtime/memory_plan.h"

namespace kiln::test {
namespace {

constexpr int64_t kRows = 64;
constexpr int64_t kColumns = 256;

float bias_value(int64_t column) { return 0.01f * static_cast<float>(column - kColumns / 2); }

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputError(path + ": cannot open (build the test kernels first)");
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> read_binary(const std::string& path) {
  const std::string bytes = read_file(path);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace

CompiledKernels placeholder_kernels() {
  return {"// placeholder source\n",
          {{"sm_80", {0x7f, 'E', 'L', 'F', 1}}, {"sm_90", {0x7f, 'E', 'L', 'F', 2}}},
          "// placeholder PTX\n"};
}

CompiledKernels nvcc_kernels(const std::string& dir) {
  const std::string stem = dir + "/bias_relu_kernels";
  return {read_file(stem + ".cu"),
          {{"sm_80", read_binary(stem + ".sm_80.cubin")},
           {"sm_90", read_binary(stem + ".sm_90.cubin")}},
          read_file(stem + ".ptx")};
}

Program bias_relu_program(const CompiledKernels& code) {
  using Kind = ProgramBuffer::Kind;
  const TensorType matrix{DType::kF32, {kRows, kColumns}};
  Program program;
  program.name = "bias_relu";
  program.archs = {"sm_80", "sm_90"};
  program.buffers = {
      {Kind::kInput, "x", matrix, 0},
      {Kind::kWeight, "bias", {DType::kF32, {kColumns}}, 0},
      {Kind::kIntermediate, "sum", matrix, -1},
      {Kind::kIntermediate, "rectified", matrix, -1},
      {Kind::kIntermediate, "doubled", matrix, -1},
      {Kind::kOutput, "y", matrix, 0},
  };
  program.inputs = {0};
  program.outputs = {5};
  const std::vector<std::pair<std::string, std::string>> kernels = {{"add_bias", "/onnx/Add"},
                                                                    {"relu", "/onnx/Relu"},
                                                                    {"twice", "/onnx/Mul"},
                                                                    {"add", "/onnx/Add_1"}};
  for (const auto& [name, node] : kernels) {
    program.kernels.push_back({name, code.source, {node}, code.binaries, code.ptx});
  }
  const std::array<uint32_t, 3> grid{kRows * kColumns / 256, 1, 1};
  const std::array<uint32_t, 3> block{256, 1, 1};
  program.steps = {{0, grid, block, 0, {0, 1, 2}},
                   {1, grid, block, 0, {2, 3}},
                   {2, grid, block, 0, {3, 4}},
                   {3, grid, block, 0, {4, 0, 5}}};
  Tensor bias(DType::kF32, {kColumns});
  for (int64_t column = 0; column < kColumns; ++column) bias.set_float(column, bias_value(column));
  const auto* bias_bytes = reinterpret_cast<const uint8_t*>(bias.bytes());
  program.weights.assign(bias_bytes, bias_bytes + bias.num_bytes());
  plan_memory(program);
  return program;
}

Program branches_program(const CompiledKernels& code) {
  Program program = bias_relu_program(code);
  program.name = "branches";
  program.buffers.push_back(
      {ProgramBuffer::Kind::kIntermediate, "doubled_sum", {DType::kF32, {kRows, kColumns}}, -1});
  const std::array<uint32_t, 3> grid{kRows * kColumns / 256, 1, 1};
  const std::array<uint32_t, 3> block{256, 1, 1};
  // Buffers: 0 x, 1 bias, 2 sum, 3 rectified, 4 doubled, 5 y, 6 doubled_sum; kernels: 0 add_bias,
  // 1 relu, 2 twice, 3 add.
  program.steps = {{0, grid, block, 0, {0, 1, 2}},
                   {1, grid, block, 0, {0, 3}},
                   {2, grid, block, 0, {3, 4}},
                   {2, grid, block, 0, {2, 6}},
                   {3, grid, block, 0, {6, 4, 5}}};
  plan_memory(program);
  return program;
}

Program too_large_program(const CompiledKernels& code) {
  Program program = bias_relu_program(code);
  program.arena_bytes = int64_t{1} << 40;
  return program;
}

Tensor bias_relu_input(int seed) {
  Tensor x(DType::kF32, {kRows, kColumns});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.set_float(i, static_cast<float>((i * 7919 + seed * 104729) % 2000) / 1000.0f - 1.0f);
  }
  return x;
}

Tensor bias_relu_expected(const Tensor& x) {
  Tensor y(DType::kF32, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float sum = x.get_float(i) + bias_value(i % kColumns);
    y.set_float(i, 2.0f * std::max(sum, 0.0f) + x.get_float(i));
  }
  return y;
}

Tensor branches_expected(const Tensor& x) {
  Tensor y(DType::kF32, x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float value = x.get_float(i);
    y.set_float(i, 2.0f * (value + bias_value(i % kColumns)) + 2.0f * std::max(value, 0.0f));
  }
  return y;
}

}  // namespace kiln::test
