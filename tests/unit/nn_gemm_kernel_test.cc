// Tests of the shared matrix-multiply routine (ir/ops/nn_gemm_kernel.cc) and of conv /
// conv_transpose against direct loops: odd sizes that exercise every edge of the blocking,
// multithreaded products, and results that do not depend on how the work is split.
#include "ir/ops/nn_gemm_kernel.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "ir/error.h"
#include "ir/graph.h"
#include "reference/reference_interpreter.h"

namespace kiln {
namespace {

template <class T>
std::vector<T> random_values(size_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int> digits(-8, 8);
  std::vector<T> values(count);
  for (T& value : values) value = static_cast<T>(digits(generator));
  return values;
}

// C = A·B with the textbook triple loop, in the accumulator type.
template <class T>
std::vector<nn::Accumulator<T>> naive_product(int64_t m, int64_t n, int64_t k,
                                              const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<nn::Accumulator<T>> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) {
        c[i * n + j] += nn::Accumulator<T>{a[i * k + p]} * b[p * n + j];
      }
    }
  }
  return c;
}

template <class T>
void expect_matches_naive(int64_t m, int64_t n, int64_t k) {
  // Small integers keep every partial sum exact, so the comparison can be exact too.
  const std::vector<T> a = random_values<T>(static_cast<size_t>(m * k), 1);
  const std::vector<T> b = random_values<T>(static_cast<size_t>(k * n), 2);
  std::vector<nn::Accumulator<T>> c(static_cast<size_t>(m * n));
  nn::gemm_accumulate(m, n, k, a.data(), k, b.data(), n, c.data(), n);
  EXPECT_EQ(c, naive_product(m, n, k, a, b)) << m << "x" << n << "x" << k;
}

TEST(NnGemmKernelTest, MatchesTheTripleLoopOnEdgeSizes) {
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {3, 5, 7}, {4, 32, 256}, {5, 33, 257}, {37, 70, 300}, {1, 600, 20}}) {
    expect_matches_naive<float>(m, n, k);
    expect_matches_naive<double>(m, n, k);
    expect_matches_naive<int64_t>(m, n, k);
  }
}

TEST(NnGemmKernelTest, LargeProductsMatchTheTripleLoop) {
  expect_matches_naive<float>(130, 257, 300);  // split by rows across threads
  expect_matches_naive<float>(2, 3000, 400);   // split by columns
}

TEST(NnGemmKernelTest, AccumulatesIntoTheOutputAndHonoursLeadingDimensions) {
  // A 2x2 block inside a 3x4 A, B 2x2 inside 2x3, C 2x2 inside 2x5 holding 1s.
  const std::vector<float> a = {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0};
  const std::vector<float> b = {5, 6, 0, 7, 8, 0};
  std::vector<double> c(10, 1.0);
  nn::gemm_accumulate(2, 2, 2, a.data(), 4, b.data(), 3, c.data(), 5);
  EXPECT_EQ(c, (std::vector<double>{20, 23, 1, 1, 1, 44, 51, 1, 1, 1}));
}

TEST(NnGemmKernelTest, ResultsDoNotDependOnTheSplit) {
  // Non-integer floats, so a different summation order would show in the low bits.
  const int64_t m = 96, n = 300, k = 520;
  std::mt19937 generator(7);
  std::normal_distribution<float> normal;
  std::vector<float> a(m * k), b(k * n);
  for (float& value : a) value = normal(generator);
  for (float& value : b) value = normal(generator);
  std::vector<double> whole(m * n, 0.0), by_rows(m * n, 0.0);
  nn::gemm_accumulate(m, n, k, a.data(), k, b.data(), n, whole.data(), n);
  for (int64_t i = 0; i < m; ++i) {
    nn::gemm_accumulate(1, n, k, a.data() + i * k, k, b.data(), n, by_rows.data() + i * n, n);
  }
  EXPECT_EQ(whole, by_rows);
}

// ---- conv and conv_transpose against direct loops ---------------------------------------------

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
};

std::vector<float> random_floats(int64_t count, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = uniform(generator);
  return values;
}

// Unravels a flat index over `shape`.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// 2-D (grouped, strided, dilated, padded, depthwise, pointwise), 1-D and 3-D convolutions.
const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{1, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{2, 4, 10, 7}, {6, 2, 3, 2}, {2, 1}, {1, 0, 2, 1}, {1, 2}, 2},
      {{1, 5, 8, 8}, {5, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 5},                    // depthwise
      {{2, 8, 6, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},                   // pointwise
      {{1, 2, 11}, {3, 2, 4}, {3}, {2, 1}, {2}, 1},                                     // 1-D
      {{1, 2, 5, 4, 6}, {2, 2, 2, 3, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, {2, 1, 1}, 1},  // 3-D
  };
  return cases;
}

// Direct convolution: each output sums over its group's channels and kernel taps.
std::vector<double> direct_conv(const ConvCase& c, const Shape& y_shape,
                                const std::vector<float>& x, const std::vector<float>& w,
                                const std::vector<float>& bias) {
  const size_t spatial = c.x.size() - 2;
  const std::vector<int64_t> x_strides = row_major_strides(c.x);
  const std::vector<int64_t> w_strides = row_major_strides(c.w);
  const Shape kernel(c.w.begin() + 2, c.w.end());
  const int64_t group_in = c.w[1], group_out = c.w[0] / c.group;
  std::vector<double> y(static_cast<size_t>(num_elements(y_shape)));
  for (int64_t flat = 0; flat < num_elements(y_shape); ++flat) {
    const std::vector<int64_t> out = unravel(flat, y_shape);
    const int64_t g = out[1] / group_out;
    double sum = bias[out[1]];
    for (int64_t ci = 0; ci < group_in; ++ci) {
      for (int64_t tap = 0; tap < num_elements(kernel); ++tap) {
        const std::vector<int64_t> k = unravel(tap, kernel);
        int64_t x_offset = out[0] * x_strides[0] + (g * group_in + ci) * x_strides[1];
        int64_t w_offset = out[1] * w_strides[0] + ci * w_strides[1];
        bool inside = true;
        for (size_t d = 0; d < spatial; ++d) {
          const int64_t t = out[d + 2] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
          inside = inside && t >= 0 && t < c.x[d + 2];
          x_offset += t * x_strides[d + 2];
          w_offset += k[d] * w_strides[d + 2];
        }
        if (inside) sum += static_cast<double>(x[x_offset]) * w[w_offset];
      }
    }
    y[flat] = sum;
  }
  return y;
}

TEST(NnConvTest, MatchesDirectLoops) {
  const std::vector<ConvCase>& cases = conv_cases();
  for (const ConvCase& c : cases) {
    Graph graph;
    Value* x = graph.add_input("x", {DType::kF32, c.x});
    Value* w = graph.add_input("w", {DType::kF32, c.w});
    Value* b = graph.add_input("b", {DType::kF32, {c.w[0]}});
    Node* node = graph.add_node(
        "conv", {x, w, b},
        {{"strides", c.strides}, {"pads", c.pads}, {"dilations", c.dilations}, {"group", c.group}});
    graph.set_outputs({node->result()});
    const std::vector<float> xs = random_floats(num_elements(c.x), 3);
    const std::vector<float> ws = random_floats(num_elements(c.w), 4);
    const std::vector<float> bs = random_floats(c.w[0], 5);
    const Tensor y = run_reference(graph, {Tensor::from_vector(DType::kF32, c.x, xs),
                                           Tensor::from_vector(DType::kF32, c.w, ws),
                                           Tensor::from_vector(DType::kF32, {c.w[0]}, bs)})[0];
    const std::vector<double> expected = direct_conv(c, y.shape(), xs, ws, bs);
    ASSERT_EQ(y.num_elements(), static_cast<int64_t>(expected.size()));
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(y.get_double(i), expected[i], 1e-4)
          << "x [" << shape_to_string(c.x) << "] at " << i;
    }
  }
}

// `values` of channels-first `shape` [A, C, D...] in channels-last order [A, D..., C].
std::vector<float> to_channels_last(const std::vector<float>& values, const Shape& shape) {
  const int64_t outer = shape[0], channels = shape[1];
  const int64_t inner = num_elements(shape) / (outer * channels);
  std::vector<float> moved(values.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < inner; ++i) {
        moved[(o * inner + i) * channels + c] = values[(o * channels + c) * inner + i];
      }
    }
  }
  return moved;
}

Shape channels_last_shape(const Shape& shape) {
  Shape moved = {shape[0]};
  moved.insert(moved.end(), shape.begin() + 2, shape.end());
  moved.push_back(shape[1]);
  return moved;
}

// A channels-last conv (X [N,D...,C], W [M,k...,C/group]) computes the channels-first conv's
// result transposed to [N,D'...,M], bit for bit (the same sums in the same order), in f32 and f16.
TEST(NnConvTest, ChannelsLastEqualsChannelsFirstTransposed) {
  const std::vector<ConvCase>& cases = conv_cases();
  for (DType dtype : {DType::kF32, DType::kF16}) {
    for (const ConvCase& c : cases) {
      const AttributeMap attrs = {{"strides", c.strides},
                                  {"pads", c.pads},
                                  {"dilations", c.dilations},
                                  {"group", c.group}};
      AttributeMap last_attrs = attrs;
      last_attrs["channels_last"] = int64_t{1};
      const std::vector<float> xs = random_floats(num_elements(c.x), 13);
      const std::vector<float> ws = random_floats(num_elements(c.w), 14);
      const std::vector<float> bs = random_floats(c.w[0], 15);
      const auto run = [&](const Shape& x_shape, const Shape& w_shape, const AttributeMap& a,
                           const std::vector<float>& x, const std::vector<float>& w) {
        Graph graph;
        Node* node = graph.add_node("conv",
                                    {graph.add_input("x", {dtype, x_shape}),
                                     graph.add_input("w", {dtype, w_shape}),
                                     graph.add_input("b", {dtype, {c.w[0]}})},
                                    a);
        graph.set_outputs({node->result()});
        return run_reference(
            graph, {Tensor::from_vector(dtype, x_shape, x),
                    Tensor::from_vector(dtype, w_shape, w),
                    Tensor::from_vector(dtype, {c.w[0]}, bs)})[0];
      };
      const Tensor first = run(c.x, c.w, attrs, xs, ws);
      const Tensor last = run(channels_last_shape(c.x), channels_last_shape(c.w), last_attrs,
                              to_channels_last(xs, c.x), to_channels_last(ws, c.w));
      ASSERT_EQ(last.shape(), channels_last_shape(first.shape())) << shape_to_string(c.x);
      EXPECT_EQ(last.to_floats(), to_channels_last(first.to_floats(), first.shape()))
          << "x [" << shape_to_string(c.x) << "] " << dtype_name(dtype);
    }
  }
}

TEST(NnConvTest, ChannelsLastErrorsNameTheLayout) {
  Graph graph;
  Value* x = graph.add_input("x", {DType::kF32, {1, 8, 8, 3}});
  Value* w = graph.add_input("w", {DType::kF32, {4, 3, 3, 3}});
  Value* bad_w = graph.add_input("bad_w", {DType::kF32, {4, 3, 3, 2}});  // 2 input channels
  EXPECT_NO_THROW(graph.add_node("conv", {x, w}, {{"channels_last", int64_t{1}}}));
  try {
    graph.add_node("conv", {x, bad_w}, {{"channels_last", int64_t{1}}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("channels_last=1: W is [M,k...,C/group]"),
              std::string::npos)
        << error.what();
  }
  try {
    graph.add_node("conv", {x, w}, {{"channels_last", int64_t{2}}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("'channels_last' must be 0 or 1"), std::string::npos)
        << error.what();
  }
}

// conv_transpose is the adjoint of conv: <conv(x), y> == <x, conv_transpose(y)> for equal
// geometry, with output_padding restoring the input column the strided conv never reads.
TEST(NnConvTest, ConvTransposeIsTheAdjointOfConv) {
  const Shape x_shape{1, 4, 9, 8}, w_shape{6, 2, 3, 2};
  const AttributeMap attrs = {{"strides", std::vector<int64_t>{2, 2}},
                              {"pads", std::vector<int64_t>{1, 0, 1, 0}},
                              {"dilations", std::vector<int64_t>{1, 2}},
                              {"group", int64_t{2}}};
  Graph forward;
  Node* conv = forward.add_node("conv",
                                {forward.add_input("x", {DType::kF64, x_shape}),
                                 forward.add_input("w", {DType::kF64, w_shape})},
                                attrs);
  forward.set_outputs({conv->result()});
  const Shape y_shape = conv->result()->type().shape;
  // conv_transpose's W is [C_in of the transpose = conv's M, M/group of the transpose, k...]:
  // the same tensor, read with the channel roles swapped (group keeps the pairing).
  AttributeMap transpose_attrs = attrs;
  transpose_attrs["output_padding"] = std::vector<int64_t>{0, 1};
  Graph backward;
  Node* transpose = backward.add_node("conv_transpose",
                                      {backward.add_input("y", {DType::kF64, y_shape}),
                                       backward.add_input("w", {DType::kF64, w_shape})},
                                      transpose_attrs);
  backward.set_outputs({transpose->result()});
  ASSERT_EQ(transpose->result()->type().shape, x_shape);
  const Tensor x =
      Tensor::from_vector(DType::kF64, x_shape, random_floats(num_elements(x_shape), 6));
  const Tensor w =
      Tensor::from_vector(DType::kF64, w_shape, random_floats(num_elements(w_shape), 7));
  const Tensor y =
      Tensor::from_vector(DType::kF64, y_shape, random_floats(num_elements(y_shape), 8));
  const Tensor conv_x = run_reference(forward, {x, w})[0];
  const Tensor transpose_y = run_reference(backward, {y, w})[0];
  double left = 0, right = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) left += conv_x.get_double(i) * y.get_double(i);
  for (int64_t i = 0; i < x.num_elements(); ++i)
    right += x.get_double(i) * transpose_y.get_double(i);
  EXPECT_NEAR(left, right, 1e-9);
}

}  // namespace
TEST(NnGemmKernelTest, IntegerProductsWrapAroundOnOverflow) {
  // As NumPy's int64 matmul: two's complement wrap-around, not undefined behaviour (the ONNX
  // loader's fuzzer found this through import-time constant folding).
  const int64_t max = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> a = {max, max};
  const std::vector<int64_t> b = {2, 3};
  std::vector<int64_t> c = {0};
  nn::gemm_accumulate<int64_t>(1, 1, 2, a.data(), 2, b.data(), 1, c.data(), 1);
  EXPECT_EQ(c[0], static_cast<int64_t>(static_cast<uint64_t>(max) * 5u));
}

}  // namespace kiln
