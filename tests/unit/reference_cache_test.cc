// kiln bench's cache of CPU reference outputs: the entry's encoding, what the key covers, and a
// second run reading what the first stored.
#include "kiln/reference_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/parser.h"

namespace kiln {
namespace {

constexpr const char* kGraph = R"(
graph @g(%x: f32[2,3]) -> (f32[2,3]) {
  %0 = relu(%x) : f32[2,3]
  return %0
})";

Tensor input(float first) {
  return Tensor::from_vector(DType::kF32, {2, 3}, std::vector<float>{first, -1, 2, -3, 4, -5});
}

TEST(ReferenceCache, TensorsRoundTripAndGarbageDecodesToNothing) {
  const std::vector<Tensor> tensors = {
      input(1), Tensor::from_vector(DType::kI64, {2}, std::vector<int64_t>{7, -8})};
  const std::vector<uint8_t> bytes = encode_tensors(tensors);
  const std::optional<std::vector<Tensor>> back = decode_tensors(bytes);
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].type(), tensors[0].type());
  EXPECT_EQ((*back)[1].type(), tensors[1].type());
  EXPECT_EQ(std::memcmp((*back)[0].bytes(), tensors[0].bytes(), tensors[0].num_bytes()), 0);
  EXPECT_EQ(std::memcmp((*back)[1].bytes(), tensors[1].bytes(), tensors[1].num_bytes()), 0);
  std::vector<uint8_t> truncated(bytes.begin(), bytes.end() - 1);
  EXPECT_FALSE(decode_tensors(truncated).has_value());
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_tensors(longer).has_value());
  EXPECT_FALSE(decode_tensors(std::vector<uint8_t>{1, 2, 3}).has_value());
}

TEST(ReferenceCache, TheKeyCoversTheBinaryTheModelTheConstantsAndTheInputs) {
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  const std::string key = reference_key("kiln 1 2", "model", *graph, {input(1)});
  EXPECT_EQ(key, reference_key("kiln 1 2", "model", *graph, {input(1)}));
  EXPECT_NE(key, reference_key("kiln 1 3", "model", *graph, {input(1)}));
  EXPECT_NE(key, reference_key("kiln 1 2", "model2", *graph, {input(1)}));
  EXPECT_NE(key, reference_key("kiln 1 2", "model", *graph, {input(1.5f)}));
  EXPECT_NE(key, reference_key("kiln 1 2", "model", *graph,
                               {Tensor::from_vector(DType::kF32, {3, 2},
                                                    std::vector<float>{1, -1, 2, -3, 4, -5})}));
}

// The same model file whose weights differ (an ONNX model's external data file rewritten: the
// model file only names it) keys differently: the weights are in the loaded graph's constants.
TEST(ReferenceCache, TheKeyCoversWeightsTheModelFileDoesNotHold) {
  constexpr const char* kWeighted = R"(
graph @g(%x: f32[2,3]) -> (f32[2,3]) {
  %w = const f32[2,3] [1, 2, 3, 4, 5, 6]
  %0 = add(%x, %w) : f32[2,3]
  return %0
})";
  const std::unique_ptr<Graph> graph = parse_graph(kWeighted);
  const std::unique_ptr<Graph> same = parse_graph(kWeighted);
  std::string text = kWeighted;
  text.replace(text.find("[1, 2, 3"), 8, "[1, 2, 7");
  const std::unique_ptr<Graph> other = parse_graph(text);
  const std::string key = reference_key("kiln 1 2", "model", *graph, {input(1)});
  EXPECT_EQ(key, reference_key("kiln 1 2", "model", *same, {input(1)}));
  EXPECT_NE(key, reference_key("kiln 1 2", "model", *other, {input(1)}));
}

TEST(ReferenceCache, ASecondRunReadsTheFirstRunsOutputs) {
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("kiln_reference_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  const std::string model = (directory / "relu.kir").string();
  std::ofstream(model) << kGraph;
  const std::unique_ptr<Graph> graph = parse_graph(kGraph);
  const std::string cache = (directory / "cache").string();
  bool from_cache = true;
  const std::vector<Tensor> first =
      cached_reference_outputs(model, *graph, {input(1)}, cache, &from_cache);
  EXPECT_FALSE(from_cache);
  const std::vector<Tensor> second =
      cached_reference_outputs(model, *graph, {input(1)}, cache, &from_cache);
  EXPECT_TRUE(from_cache);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].data<float>()[0], 1.0f);
  EXPECT_EQ(second[0].data<float>()[1], 0.0f);
  EXPECT_EQ(std::memcmp(first[0].bytes(), second[0].bytes(), first[0].num_bytes()), 0);
  // Other inputs: computed, not read.
  const std::vector<Tensor> other =
      cached_reference_outputs(model, *graph, {input(3)}, cache, &from_cache);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(other[0].data<float>()[0], 3.0f);
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace kiln
