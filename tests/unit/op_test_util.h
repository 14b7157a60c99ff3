// Helpers shared by the unit tests of ops and their converters (tests/unit/*_ops_test.cc,
// layout_converters_test.cc): tensors from literal values, one-op graphs run on the reference
// interpreter, the InputError a bad node raises, and float comparisons with a tolerance. The op
// test files open namespace kiln::op_test so that these names need no qualification.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln::op_test {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// An f32 tensor of `shape` holding `values` in row-major order.
Tensor f32_tensor(Shape shape, const std::vector<float>& values);
// A tensor of the integer (or bool) `dtype` holding `values`.
Tensor int_tensor(DType dtype, Shape shape, const std::vector<int64_t>& values);
// An i64 tensor of `shape` holding `values`.
Tensor i64_tensor(Shape shape, const std::vector<int64_t>& values);
// A tensor of `dtype` whose elements are first, first + 1, ... in row-major order.
Tensor iota_tensor(DType dtype, Shape shape, double first = 0);

// Runs one `op` node on `inputs` (graph inputs x0, x1, ...) and returns all its results.
std::vector<Tensor> run_op_results(const std::string& op, const std::vector<Tensor>& inputs,
                                   AttributeMap attrs = {});
// Runs one `op` node on `inputs` and returns its first result.
Tensor run_op(const std::string& op, const std::vector<Tensor>& inputs, AttributeMap attrs = {});

// The message of the InputError that adding an `op` node on inputs of `types` throws, or
// "no error".
std::string add_node_error(const std::string& op, const std::vector<TensorType>& types,
                           AttributeMap attrs = {});

// The ops of `graph`'s nodes, in order.
std::vector<std::string> node_ops(const Graph& graph);

// Expects `actual`'s elements (as floats) to equal `expected` within `tolerance`; an expected
// NaN wants a NaN and an expected infinity the same infinity.
void expect_floats_near(const Tensor& actual, const std::vector<float>& expected,
                        float tolerance = 1e-6f);

}  // namespace kiln::op_test
