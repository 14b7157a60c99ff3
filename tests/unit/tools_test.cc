// Tests of the kiln command's helpers: .npy round trips, tolerance comparison, --input-shape.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ir/error.h"
#include "ir/parser.h"
#include "test_temp_dir.h"
#include "tools/compare.h"
#include "tools/input_shapes.h"
#include "tools/model_inputs.h"
#include "tools/tensor_files.h"

namespace kiln::tools {
namespace {

std::string temp_path(const std::string& name) {
  return testing_support::fresh_temp_path("tools_" + name).string();
}

TEST(NpyTest, RoundTripsEveryNumpyDType) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kF64, DType::kI64, DType::kI32, DType::kI8,
                      DType::kU8, DType::kBool}) {
    Tensor tensor = Tensor::from_vector(dtype, {2, 3}, std::vector<int>{1, 0, 3, 1, 5, 0});
    const std::string path = temp_path(std::string(dtype_name(dtype)) + ".npy");
    write_npy(path, tensor);
    const Tensor back = read_npy(path);
    EXPECT_EQ(back.type(), tensor.type()) << dtype_name(dtype);
    EXPECT_EQ(back.to_doubles(), tensor.to_doubles()) << dtype_name(dtype);
  }
}

TEST(NpyTest, ScalarAndRankOneShapes) {
  for (const Shape& shape : {Shape{}, Shape{5}}) {
    const std::string path = temp_path("shape.npy");
    write_npy(path, Tensor(DType::kF32, shape));
    EXPECT_EQ(read_npy(path).shape(), shape);
  }
}

TEST(NpyTest, Bfloat16IsWrittenAsFloat32) {
  Tensor tensor = Tensor::from_vector(DType::kBF16, {2}, std::vector<double>{1.5, -2.0});
  const std::string path = temp_path("bf16.npy");
  write_npy(path, tensor);
  const Tensor back = read_npy(path);
  EXPECT_EQ(back.dtype(), DType::kF32);
  EXPECT_EQ(back.to_doubles(), (std::vector<double>{1.5, -2.0}));
}

TEST(NpyTest, TruncatedAndGarbageFilesAreInputErrors) {
  const std::string good = temp_path("good.npy");
  write_npy(good, Tensor(DType::kF32, {4, 4}));
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t cut : {size_t{0}, size_t{5}, size_t{20}, bytes.size() - 1}) {
    const std::string bad = temp_path("bad.npy");
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, cut);
    EXPECT_THROW(read_npy(bad), InputError) << "cut at " << cut;
  }
  EXPECT_THROW(read_npy(temp_path("does_not_exist.npy")), InputError);
}

TEST(CompareTest, AppliesAbsoluteAndRelativeTolerance) {
  const Tensor want = Tensor::from_vector(DType::kF32, {3}, std::vector<double>{0.0, 100.0, -1.0});
  const Tensor close =
      Tensor::from_vector(DType::kF32, {3}, std::vector<double>{5e-5, 100.09, -1.0005});
  EXPECT_TRUE(compare_tensors(close, want, {}).ok);
  const Tensor far = Tensor::from_vector(DType::kF32, {3}, std::vector<double>{2e-4, 100.0, -1.0});
  const Comparison comparison = compare_tensors(far, want, {});
  EXPECT_FALSE(comparison.ok);
  EXPECT_EQ(comparison.mismatches, 1);
  EXPECT_EQ(comparison.first_mismatch, 0);
  EXPECT_NEAR(comparison.max_abs_error, 2e-4, 1e-9);
}

// No precision's judge passes an output scaled by 1.5 or 1.05, though its cosine is 1; each
// passes the expected output rounded to the precision's format.
TEST(CompareTest, EveryPrecisionRejectsAScaledOutput) {
  std::vector<double> values;
  for (int i = 0; i < 256; ++i) values.push_back(std::sin(0.37 * i) * (1 + i % 7));
  const Tensor want = Tensor::from_vector(DType::kF32, {256}, values);
  for (const std::string precision : {"fp32", "tf32", "fp16", "bf16"}) {
    const Tolerance tolerance = tolerance_for_precision(precision, DType::kF32);
    const DType format = precision == "fp16"   ? DType::kF16
                         : precision == "bf16" ? DType::kBF16
                                               : DType::kF32;
    EXPECT_TRUE(compare_tensors(want.converted(format).converted(DType::kF32), want, tolerance).ok)
        << precision;
    for (const double factor : {1.5, 1.05}) {
      std::vector<double> scaled;
      for (const double value : values) scaled.push_back(value * factor);
      const Comparison comparison =
          compare_tensors(Tensor::from_vector(DType::kF32, {256}, scaled), want, tolerance);
      EXPECT_FALSE(comparison.ok) << precision << " passed x" << factor;
      EXPECT_NEAR(comparison.cosine, 1.0, 1e-6);
      EXPECT_NEAR(comparison.norm_ratio, factor, 1e-6);  // f32 tensors
    }
  }
}

TEST(CompareTest, ModelRulesRejectAScaledOutputAndFloorFp32SumsByTheLargestMagnitude) {
  std::vector<double> values;
  for (int i = 0; i < 256; ++i) values.push_back(std::cos(0.41 * i) * (1 + i % 5));
  const Tensor want = Tensor::from_vector(DType::kF32, {256}, values);
  for (const std::string precision : {"fp32", "tf32", "fp16", "bf16"}) {
    std::vector<double> scaled;
    for (const double value : values) scaled.push_back(value * 1.5);
    EXPECT_FALSE(compare_tensors(Tensor::from_vector(DType::kF32, {256}, scaled), want,
                                 tolerance_for_model(precision, DType::kF32))
                     .ok)
        << precision;
  }
  // A deep f32 sum's rounding on a small element (GPU vs CPU reference, a 4608-deep matmul whose
  // largest output is 285): beyond fp32's element-wise rule, within the model rule's floor.
  const Tensor sums = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{285.0, 0.12});
  const Tensor off = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{285.0, 0.1207});
  EXPECT_FALSE(compare_tensors(off, sums, tolerance_for_precision("fp32", DType::kF32)).ok);
  EXPECT_TRUE(compare_tensors(off, sums, tolerance_for_model("fp32", DType::kF32)).ok);
}

TEST(CompareTest, TheFirstMismatchShowsItsValues) {
  // Non-finite mismatches leave the finite figures at 0; the values say what differs.
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor want = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{1.0, -inf});
  const Tensor got = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{1.0, inf});
  const Comparison comparison =
      compare_tensors(got, want, tolerance_for_model("fp32", DType::kF32));
  EXPECT_FALSE(comparison.ok);
  EXPECT_THAT(comparison.summary(),
              testing::HasSubstr("1 elements out of tolerance (first at flat index 1: got inf, "
                                 "want -inf)"));
}

TEST(CompareTest, AModelWithSixteenBitValuesIsJudgedInSixteenBits) {
  const auto judged = [](const std::string& precision, const std::string& text) {
    return judged_precision(precision, *parse_graph(text));
  };
  const std::string f32 = R"(
graph @g(%x: f32[4]) -> (f32[4]) {
  %y = relu(%x) : f32[4]
  return %y
})";
  const std::string f16_inside = R"(
graph @g(%x: f32[4]) -> (f32[4]) {
  %h = cast(%x) {to=f16} : f16[4]
  %r = relu(%h) : f16[4]
  %y = cast(%r) {to=f32} : f32[4]
  return %y
})";
  const std::string bf16_input = R"(
graph @g(%x: bf16[4]) -> (bf16[4]) {
  %y = relu(%x) : bf16[4]
  return %y
})";
  EXPECT_EQ(judged("fp32", f32), "fp32");
  EXPECT_EQ(judged("fp32", f16_inside), "fp16");
  EXPECT_EQ(judged("fp32", bf16_input), "bf16");
  EXPECT_EQ(judged("tf32", f16_inside), "tf32");  // already a 16-bit bar
  EXPECT_EQ(judged("fp16", bf16_input), "bf16");
  EXPECT_EQ(judged("bf16", f16_inside), "bf16");
}

TEST(CompareTest, SixteenBitErrorIsBoundedByTheLargestMagnitude) {
  // fp16: max error <= 1e-3 + 8 * 2^-11 * max |want| (3.9e-3 of 100 here): an error of 0.3 on a
  // small element passes, 0.5 fails, and neither moves the norm of 100 by 1%.
  const Tolerance tolerance = tolerance_for_precision("fp16", DType::kF32);
  const Tensor want = Tensor::from_vector(DType::kF32, {3}, std::vector<double>{100.0, 1.0, -2.0});
  const Tensor close = Tensor::from_vector(DType::kF32, {3}, std::vector<double>{100.0, 1.3, -2.0});
  const Tensor far = Tensor::from_vector(DType::kF32, {3}, std::vector<double>{100.0, 1.5, -2.0});
  EXPECT_TRUE(compare_tensors(close, want, tolerance).ok);
  const Comparison comparison = compare_tensors(far, want, tolerance);
  EXPECT_FALSE(comparison.ok);
  EXPECT_EQ(comparison.failed, "error");
  EXPECT_NEAR(comparison.max_error_of_max(), 0.005, 1e-12);
}

TEST(CompareTest, NanMatchesNanAndInfinitiesMatchExactly) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor want = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{nan, inf});
  EXPECT_TRUE(compare_tensors(want, want, {}).ok);
  const Tensor other = Tensor::from_vector(DType::kF32, {2}, std::vector<double>{nan, -inf});
  EXPECT_FALSE(compare_tensors(other, want, {}).ok);
}

TEST(CompareTest, ShapeAndDTypeMismatchesAreReported) {
  EXPECT_NE(compare_tensors(Tensor(DType::kF32, {2}), Tensor(DType::kF32, {3}), {})
                .problem.find("shape mismatch"),
            std::string::npos);
  EXPECT_NE(compare_tensors(Tensor(DType::kI64, {2}), Tensor(DType::kF32, {2}), {})
                .problem.find("dtype mismatch"),
            std::string::npos);
}

// An input file of another dtype names the conversion that fixes it, and --io-precision only where
// it can help (a 16-bit file for an f32 input): it has no f64 value.
TEST(ModelInputsTest, AWrongDtypeSaysHowToConvert) {
  const std::vector<InputSignature> signature = {{"x", {DType::kF32, {2}}}};
  const auto message = [&](DType file_dtype) {
    try {
      order_inputs(signature, {{"x", Tensor(file_dtype, {2})}});
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(DType::kF64),
            "--input 'x': the model takes f32[2], the file holds f64[2] (convert the file, e.g. "
            "with numpy's .astype(np.float32))");
  EXPECT_THAT(message(DType::kF16),
              ::testing::HasSubstr("or give the model fp16 inputs with --precision fp16 "
                                   "--io-precision fp16"));
}

TEST(InputShapeTest, ParsesAndRejects) {
  const auto shapes = parse_input_shapes({"x=1x3x224x224", "mask=8"});
  EXPECT_EQ(shapes.at("x"), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(shapes.at("mask"), (Shape{8}));
  EXPECT_THROW(parse_input_shapes({"x"}), InputError);
  EXPECT_THROW(parse_input_shapes({"x=1xbx3"}), InputError);
  EXPECT_THROW(parse_input_shapes({"x=1x-3"}), InputError);
  // A later spec for the same input replaces the earlier one.
  EXPECT_EQ(parse_input_shapes({"x=3x4", "x=5x4"}).at("x"), (Shape{5, 4}));
  // Ranges are kiln compile's alone.
  EXPECT_THAT(
      [] { parse_input_shapes({"x=1..4x3"}); },
      ::testing::ThrowsMessage<InputError>(::testing::HasSubstr("ranges are for kiln compile")));
}

TEST(InputShapeTest, ParsesRanges) {
  const InputRanges ranges = parse_input_ranges({"ids=1..32x128", "mask=8x2..4"});
  ASSERT_EQ(ranges.at("ids").size(), 2u);
  EXPECT_EQ(ranges.at("ids")[0].min, 1);
  EXPECT_EQ(ranges.at("ids")[0].max, 32);
  EXPECT_EQ(ranges.at("ids")[1].min, 128);
  EXPECT_EQ(ranges.at("ids")[1].max, 128);
  EXPECT_EQ(ranges.at("mask")[1].min, 2);
  EXPECT_TRUE(has_varying_dims(ranges));
  EXPECT_FALSE(has_varying_dims(parse_input_ranges({"x=2x3"})));
  for (const char* bad : {"x=4..2x3", "x=0..4", "x=1..x3", "x=..4", "x=1...4"}) {
    EXPECT_THROW(parse_input_ranges({bad}), InputError) << bad;
  }
}

}  // namespace
}  // namespace kiln::tools
