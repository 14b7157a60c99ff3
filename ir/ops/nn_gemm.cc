// The matrix-product ops: gemm (ONNX Gemm: alpha·op(A)·op(B) + beta·C) and matmul (numpy
// matmul: batched, broadcasting, with the 1-D operand rules). Both run on gemm_accumulate.
// Float operands are read in f32 (f64 for f64); the products accumulate in double
// (gemm_accumulate) and the result is rounded once, when stored (write_values). tf32=1 rounds the
// operands (nn_tf32.h).
#include <algorithm>

#include "ir/ops/nn_gemm_kernel.h"
#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/nn_tf32.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

using nn::read_values;
using nn::write_values;

// ---- gemm -------------------------------------------------------------------------------------

struct GemmDims {
  int64_t m, n, k;
};

GemmDims gemm_dims(const Node& node) {
  const Shape& a = operand_type(node, 0).shape;
  const Shape& b = operand_type(node, 1).shape;
  const bool trans_a = node.int_attr("transA") != 0;
  const bool trans_b = node.int_attr("transB") != 0;
  const GemmDims dims{trans_a ? a[1] : a[0], trans_b ? b[0] : b[1], trans_a ? a[0] : a[1]};
  const int64_t k_of_b = trans_b ? b[1] : b[0];
  if (dims.k != k_of_b) {
    throw InputError("inner dimensions differ: A is [" + shape_to_string(a) +
                     "] (transA=" + std::to_string(trans_a) + "), B is [" + shape_to_string(b) +
                     "] (transB=" + std::to_string(trans_b) + ")");
  }
  return dims;
}

std::vector<TensorType> infer_gemm(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_or_wide_int_dtype, "A",
                            "a float, i32 or i64 tensor");
  nn::require_operand_rank(node, 0, 2, "A");
  nn::require_operand_rank(node, 1, 2, "B");
  require_same_dtype(node, 0, 1);
  nn::check_tf32_attr(node);
  const GemmDims dims = gemm_dims(node);
  const Shape out_shape{dims.m, dims.n};
  if (node.operands().size() == 3) {
    require_same_dtype(node, 0, 2);
    const Shape& c = operand_type(node, 2).shape;
    if (!nn::broadcasts_to(c, out_shape)) {
      throw InputError("C [" + shape_to_string(c) + "] does not broadcast to the result [" +
                       shape_to_string(out_shape) + "]");
    }
  }
  return {{operand_type(node, 0).dtype, out_shape}};
}

template <class T>
void run_gemm(const Node& node, std::span<const Tensor* const> inputs, Tensor& output) {
  using Acc = nn::Accumulator<T>;
  const GemmDims dims = gemm_dims(node);
  std::vector<T> a = read_values<T>(*inputs[0]);
  std::vector<T> b = read_values<T>(*inputs[1]);
  nn::round_operand_to_tf32(node, a);
  nn::round_operand_to_tf32(node, b);
  if (node.int_attr("transA")) a = nn::transposed(a.data(), dims.k, dims.m);
  if (node.int_attr("transB")) b = nn::transposed(b.data(), dims.n, dims.k);
  std::vector<Acc> product(static_cast<size_t>(dims.m * dims.n), Acc{});
  nn::gemm_accumulate(dims.m, dims.n, dims.k, a.data(), dims.k, b.data(), dims.n, product.data(),
                      dims.n);
  const Acc alpha = static_cast<Acc>(node.float_attr("alpha"));
  const Acc beta = static_cast<Acc>(node.float_attr("beta"));
  if (alpha != Acc{1}) {
    for (Acc& value : product) value *= alpha;
  }
  if (inputs.size() == 3) {
    const std::vector<Acc> c = read_values<Acc>(*inputs[2]);
    const std::vector<int64_t> index = broadcast_index_map(inputs[2]->shape(), output.shape());
    for (size_t i = 0; i < product.size(); ++i) product[i] += beta * c[index[i]];
  }
  write_values(output, product);
}

void gemm_reference(const Node& node, std::span<const Tensor* const> inputs,
                    std::span<Tensor> outputs) {
  nn::visit_compute_type(outputs[0].dtype(),
                         [&](auto tag) { run_gemm<decltype(tag)>(node, inputs, outputs[0]); });
}

// ---- matmul -----------------------------------------------------------------------------------

// The operands viewed as stacks of matrices: A as batch_a × [m, k], B as batch_b × [k, n].
struct MatMulPlan {
  Shape a_batch, b_batch, batch;  // batch = broadcast of a_batch and b_batch
  int64_t m, n, k;
  Shape result;
};

MatMulPlan plan_matmul(const Shape& a, const Shape& b) {
  if (a.empty() || b.empty()) throw InputError("matmul operands must have rank 1 or more");
  MatMulPlan plan;
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  plan.m = a_vector ? 1 : a[a.size() - 2];
  plan.k = a.back();
  const int64_t k_of_b = b_vector ? b[0] : b[b.size() - 2];
  plan.n = b_vector ? 1 : b.back();
  if (plan.k != k_of_b) {
    throw InputError("inner dimensions differ: A is [" + shape_to_string(a) + "], B is [" +
                     shape_to_string(b) + "]");
  }
  plan.a_batch = a_vector ? Shape{} : Shape(a.begin(), a.end() - 2);
  plan.b_batch = b_vector ? Shape{} : Shape(b.begin(), b.end() - 2);
  plan.batch = broadcast_shapes(plan.a_batch, plan.b_batch);
  plan.result = plan.batch;
  if (!a_vector) plan.result.push_back(plan.m);
  if (!b_vector) plan.result.push_back(plan.n);
  return plan;
}

std::vector<TensorType> infer_matmul(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_float_or_wide_int_dtype, "A",
                            "a float, i32 or i64 tensor");
  require_same_dtype(node, 0, 1);
  nn::check_tf32_attr(node);
  const MatMulPlan plan = plan_matmul(operand_type(node, 0).shape, operand_type(node, 1).shape);
  return {{operand_type(node, 0).dtype, plan.result}};
}

template <class T>
void run_matmul(const Node& node, const Tensor& a_tensor, const Tensor& b_tensor, Tensor& output) {
  MatMulPlan plan = plan_matmul(a_tensor.shape(), b_tensor.shape());
  std::vector<T> a = read_values<T>(a_tensor);
  std::vector<T> b = read_values<T>(b_tensor);
  nn::round_operand_to_tf32(node, a);
  nn::round_operand_to_tf32(node, b);
  std::vector<nn::Accumulator<T>> result(static_cast<size_t>(output.num_elements()));
  // B shared by every batch (a weight): fold A's batch into its rows, one big product.
  if (product(plan.b_batch, 0, plan.b_batch.size()) == 1 && plan.a_batch == plan.batch) {
    const int64_t rows = product(plan.batch, 0, plan.batch.size()) * plan.m;
    nn::gemm_accumulate(rows, plan.n, plan.k, a.data(), plan.k, b.data(), plan.n, result.data(),
                        plan.n);
    write_values(output, result);
    return;
  }
  const std::vector<int64_t> a_index = broadcast_index_map(plan.a_batch, plan.batch);
  const std::vector<int64_t> b_index = broadcast_index_map(plan.b_batch, plan.batch);
  const int64_t a_size = plan.m * plan.k, b_size = plan.k * plan.n, c_size = plan.m * plan.n;
  for (size_t i = 0; i < a_index.size(); ++i) {
    nn::gemm_accumulate(plan.m, plan.n, plan.k, a.data() + a_index[i] * a_size, plan.k,
                        b.data() + b_index[i] * b_size, plan.n, result.data() + i * c_size, plan.n);
  }
  write_values(output, result);
}

void matmul_reference(const Node& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor> outputs) {
  nn::visit_compute_type(outputs[0].dtype(), [&](auto tag) {
    run_matmul<decltype(tag)>(node, *inputs[0], *inputs[1], outputs[0]);
  });
}

}  // namespace

void register_nn_gemm_ops(OpRegistry& registry) {
  registry.add({.name = "gemm",
                .category = OpCategory::kOutElementwiseFusable,
                .attrs = {{"alpha", AttrKind::kFloat, Attribute(1.0)},
                          {"beta", AttrKind::kFloat, Attribute(1.0)},
                          {"transA", AttrKind::kInt, Attribute(0)},
                          {"transB", AttrKind::kInt, Attribute(0)},
                          nn::tf32_attr()},
                .min_operands = 2,
                .max_operands = 3,
                .infer = infer_gemm,
                .reference = gemm_reference,
                .precision = PrecisionClass::kLowPrecision,
                .rounds_to_tf32 = true});
  registry.add({.name = "matmul",
                .category = OpCategory::kOutElementwiseFusable,
                .attrs = {nn::tf32_attr()},
                .min_operands = 2,
                .max_operands = 2,
                .infer = infer_matmul,
                .reference = matmul_reference,
                .precision = PrecisionClass::kLowPrecision,
                .rounds_to_tf32 = true});
}

}  // namespace kiln
