// Compiling for ranges of input shapes (kiln/dynamic_compile.h) and the dynamic program it makes
// (runtime/dynamic_program.h): padded batch sizes for a row-wise model; every size for a model
// that averages over the batch, or divides by the batch size folded into a constant; the file's
// round trip; choosing a variant; padding and cutting. NVRTC runs here; no GPU is needed.
#include "kiln/dynamic_compile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "dynamic_models.h"
#include "ir/error.h"
#include "runtime/dynamic_program.h"
#include "test_temp_dir.h"

namespace kiln {
namespace {

using dynamic_models::batch_mean_model;
using dynamic_models::divide_by_batch_model;
using dynamic_models::row_wise_model;
using ::testing::HasSubstr;

CompileOptions sm90() {
  CompileOptions options;
  options.cache_dir = testing_support::test_temp_dir() / "dynamic_cache";
  options.archs = {"sm_90"};
  return options;
}

std::vector<int64_t> batch_sizes(const DynamicProgram& program) {
  std::vector<int64_t> sizes;
  for (const ProgramVariant& variant : program.variants) sizes.push_back(variant.sizes.at(0));
  return sizes;
}

TEST(DynamicCompile, PadsARowWiseModelsBatch) {
  const CompiledDynamicModel compiled =
      compile_dynamic(row_wise_model(), sm90(), {{"x", {{1, 5}, {4, 4}}}});
  const DynamicProgram& program = compiled.program;
  ASSERT_EQ(program.classes.size(), 1u);
  EXPECT_TRUE(program.classes[0].padded) << program.classes[0].note;
  EXPECT_EQ(batch_sizes(program), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(program.variants[2].output_rows[0], (std::vector<OutputRows>{{0, 1, 0}}));
  EXPECT_EQ(program.variants[2].program.buffers[program.variants[2].program.inputs[0]].type.shape,
            (Shape{4, 4}));

  // The variants' weights are one copy in memory, compiled or read back (and one in the file).
  ASSERT_FALSE(program.variants[0].program.weights.empty());
  for (const ProgramVariant& variant : program.variants) {
    EXPECT_TRUE(variant.program.weights.shares_bytes_with(program.variants[0].program.weights));
  }
  const std::vector<uint8_t> bytes = dynamic_program_to_bytes(program);
  const DynamicProgram read = dynamic_program_from_bytes(bytes, "test.kiln");
  EXPECT_EQ(batch_sizes(read), batch_sizes(program));
  EXPECT_EQ(read.variants[3].program.weights, program.variants[3].program.weights);
  for (const ProgramVariant& variant : read.variants) {
    EXPECT_TRUE(variant.program.weights.shares_bytes_with(read.variants[0].program.weights));
  }
  EXPECT_TRUE(read.variants[2].padded[0]);   // 4 serves 3 and 4
  EXPECT_FALSE(read.variants[1].padded[0]);  // 2 serves 2 alone (1 has its own)
  EXPECT_FALSE(read.variants[0].padded[0]);  // nothing is smaller than the range's start

  EXPECT_EQ(choose_variant(read, {{3, 4}}), 2u);  // 3 rows run padded to 4
  EXPECT_EQ(choose_variant(read, {{5, 4}}), 3u);
  EXPECT_THAT(
      [&] {
        choose_variant(read, {{6, 4}});
      },
      ::testing::ThrowsMessage<InputError>(HasSubstr("outside the compiled range 1..5")));
  EXPECT_THAT(
      [&] {
        choose_variant(read, {{3, 5}});
      },
      ::testing::ThrowsMessage<InputError>(HasSubstr("the program takes 4 there")));
}

TEST(DynamicCompile, CompilesEverySizeOfABatchTheModelAverages) {
  const CompiledDynamicModel compiled =
      compile_dynamic(batch_mean_model(), sm90(), {{"x", {{1, 3}, {4, 4}}}});
  ASSERT_EQ(compiled.program.classes.size(), 1u);
  EXPECT_FALSE(compiled.program.classes[0].padded);
  EXPECT_THAT(compiled.program.classes[0].note, HasSubstr("combines elements along axis 0"));
  EXPECT_EQ(batch_sizes(compiled.program), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_THAT(
      [&] {
        compile_dynamic(batch_mean_model(), sm90(), {{"x", {{1, 40}, {4, 4}}}});
      },
      ::testing::ThrowsMessage<InputError>(HasSubstr("more than 16")));
}

TEST(DynamicCompile, DoesNotPadABatchSizeFoldedIntoAConstant) {
  const CompiledDynamicModel compiled =
      compile_dynamic(divide_by_batch_model(), sm90(), {{"x", {{1, 4}, {4, 4}}}});
  EXPECT_FALSE(compiled.program.classes.at(0).padded);
  EXPECT_THAT(compiled.program.classes[0].note, HasSubstr("computed from the size"));
  EXPECT_EQ(batch_sizes(compiled.program), (std::vector<int64_t>{1, 2, 3, 4}));
}

// Found by review: size-derived values that one comparison of the largest two sizes missed.
TEST(DynamicCompile, ComparesEachPaddedSizeWithTheSmallestItServes) {
  const CompiledDynamicModel compiled = compile_dynamic(dynamic_models::divide_by_min_batch_model(),
                                                        sm90(), {{"x", {{1, 8}, {4, 4}}}});
  EXPECT_FALSE(compiled.program.classes.at(0).padded);
  EXPECT_THAT(compiled.program.classes[0].note, HasSubstr("computed from the size"));
}

TEST(DynamicCompile, ComparesEachVariantAtTheOtherClassesSizes) {
  const CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::joint_max_model(), sm90(),
                      {{"x", {{1, 4}, {4, 4}}}, {"z", {{1, 4}, {4, 4}}}});
  const DynamicProgram& program = compiled.program;
  ASSERT_EQ(program.classes.size(), 2u);
  EXPECT_FALSE(program.classes[0].padded);
  EXPECT_FALSE(program.classes[1].padded);
  EXPECT_THAT(program.classes[0].note, HasSubstr("computed from the size"));
  EXPECT_EQ(program.variants.size(), 16u);
}

TEST(DynamicCompile, RefusesAttributesThatTheSizeChangesOffTheRows) {
  const CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::column_by_batch_model(), sm90(), {{"x", {{1, 4}, {16, 16}}}});
  EXPECT_FALSE(compiled.program.classes.at(0).padded);
  EXPECT_THAT(compiled.program.classes[0].note, HasSubstr("off the padded rows"));
}

TEST(DynamicCompile, PadsAroundAConstantOfBatchRowsThatIsTheSameAtEverySize) {
  const CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::expanded_constant_model(), sm90(), {{"x", {{1, 4}, {4, 4}}}});
  EXPECT_TRUE(compiled.program.classes.at(0).padded) << compiled.program.classes[0].note;
  EXPECT_EQ(batch_sizes(compiled.program), (std::vector<int64_t>{1, 2, 4}));
}

// The bytes of `program`'s weight buffer of `shape`, as floats (empty if it has none).
std::vector<float> weight_of_shape(const Program& program, const Shape& shape) {
  for (const ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind != ProgramBuffer::Kind::kWeight || buffer.type.shape != shape) continue;
    std::vector<float> values(static_cast<size_t>(buffer.type.num_elements()));
    std::memcpy(values.data(), program.weights.data() + buffer.offset, buffer.type.num_bytes());
    return values;
  }
  return {};
}

std::vector<float> w_values() {  // expanded_constant_matmul_model's w: 0.5·k
  std::vector<float> w(4 * 256);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.5f * static_cast<float>(k);
  return w;
}

// How many times `needle`'s bytes occur in `bytes`.
size_t occurrences(const std::vector<uint8_t>& bytes, const std::vector<float>& needle) {
  const auto* begin = reinterpret_cast<const uint8_t*>(needle.data());
  const auto* end = begin + needle.size() * sizeof(float);
  size_t count = 0;
  for (auto at = bytes.begin(); (at = std::search(at, bytes.end(), begin, end)) != bytes.end();
       ++at) {
    ++count;
  }
  return count;
}

TEST(DynamicCompile, VariantsShareOneBlobHoldingEachDistinctWeightOnce) {
  const CompiledDynamicModel compiled = compile_dynamic(
      dynamic_models::expanded_constant_matmul_model(), sm90(), {{"x", {{1, 4}, {4, 4}}}});
  const DynamicProgram& program = compiled.program;
  ASSERT_EQ(batch_sizes(program), (std::vector<int64_t>{1, 2, 4}));
  // Each batch size folds its own [batch, 4] constant, and every variant holds w: one blob holds
  // w once and the three constants, every variant's buffers pointing at theirs.
  const WeightBytes& blob = program.variants[0].program.weights;
  for (const ProgramVariant& variant : program.variants) {
    EXPECT_TRUE(variant.program.weights.shares_bytes_with(blob));
    EXPECT_EQ(weight_of_shape(variant.program, {4, 256}), w_values());
    const int64_t batch = variant.sizes[0];
    std::vector<float> c;
    for (int64_t r = 0; r < batch; ++r) c.insert(c.end(), {1, -2, 3, -4});
    EXPECT_EQ(weight_of_shape(variant.program, {batch, 4}), c) << "batch " << batch;
  }
  EXPECT_EQ(occurrences(blob.bytes(), w_values()), 1u);
  EXPECT_LT(blob.size(), 2 * w_values().size() * sizeof(float));
}

TEST(DynamicProgram, StoresAWeightSharedBySeveralWeightSetsOnce) {
  // Three variants' weight sets that differ (a tail of their own) but share every weight: the
  // file stores the shared pieces once, and each set reads back byte for byte.
  CompiledDynamicModel compiled = compile_dynamic(dynamic_models::expanded_constant_matmul_model(),
                                                  sm90(), {{"x", {{1, 4}, {4, 4}}}});
  DynamicProgram& program = compiled.program;
  for (size_t v = 0; v < program.variants.size(); ++v) {
    std::vector<uint8_t> own = program.variants[v].program.weights.bytes();
    own.resize(own.size() + kWeightAlignment, static_cast<uint8_t>(v + 1));
    program.variants[v].program.weights = WeightBytes(std::move(own));
  }
  const std::vector<uint8_t> bytes = dynamic_program_to_bytes(program);
  EXPECT_EQ(occurrences(bytes, w_values()), 1u);  // not once per set
  const DynamicProgram read = dynamic_program_from_bytes(bytes, "test.kiln");
  for (size_t v = 0; v < program.variants.size(); ++v) {
    EXPECT_EQ(read.variants[v].program.weights, program.variants[v].program.weights) << v;
  }
}

TEST(DynamicCompile, PadsOneClassAndCompilesEverySizeOfAnother) {
  const CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::row_mean_model(), sm90(), {{"x", {{1, 4}, {2, 3}}}});
  const DynamicProgram& program = compiled.program;
  ASSERT_EQ(program.classes.size(), 2u);
  EXPECT_TRUE(program.classes[0].padded);
  EXPECT_THAT(program.classes[1].note, HasSubstr("combines elements along axis 1"));
  ASSERT_EQ(program.variants.size(), 6u);  // batch 1, 2, 4 × length 2, 3
  for (const ProgramVariant& variant : program.variants) {
    // Only the batch's rows are cut back; the length is the run's own (even at batch 1, where
    // the analysis cannot tell the rows apart).
    for (const OutputRows& rows : variant.output_rows[0]) EXPECT_EQ(rows.dim_class, 0);
  }
  const DynamicProgram read =
      dynamic_program_from_bytes(dynamic_program_to_bytes(program), "test.kiln");
  const size_t chosen = choose_variant(read, {{3, 2}});
  EXPECT_EQ(read.variants[chosen].sizes, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(real_output_shape(read.variants[chosen], 0, {3, 2}), (Shape{3, 2}));
}

TEST(DynamicProgram, CutsRowsMergedWithAnotherAxis) {
  // An output [batch · 3, 2] of a variant for batch 4 (rows of 3 elements along axis 0): a run
  // of batch 2 keeps its first 6 rows.
  ProgramVariant variant;
  variant.program.buffers = {{ProgramBuffer::Kind::kOutput, "y", {DType::kF32, {12, 2}}, 0}};
  variant.program.outputs = {0};
  variant.output_rows = {{{0, 3, 0}}};
  EXPECT_EQ(real_output_shape(variant, 0, {2}), (Shape{6, 2}));
  Tensor padded(DType::kF32, {12, 2});
  for (int i = 0; i < 24; ++i) padded.data<float>()[i] = static_cast<float>(i);
  const Tensor cut = cut_to(padded, real_output_shape(variant, 0, {2}));
  EXPECT_EQ(std::vector<float>(cut.data<float>(), cut.data<float>() + 12),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(DynamicProgram, PadsAndCutsTheLeadingCorner) {
  Tensor small(DType::kF32, {2, 3});
  for (int i = 0; i < 6; ++i) small.data<float>()[i] = static_cast<float>(i + 1);
  const Tensor padded = pad_to(small, {4, 5});
  const std::vector<float> want = {1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(std::vector<float>(padded.data<float>(), padded.data<float>() + 20), want);
  const Tensor cut = cut_to(padded, {2, 3});
  EXPECT_EQ(std::vector<float>(cut.data<float>(), cut.data<float>() + 6),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace kiln
