// Storing doubles as the reference does (see the header).
#include "codegen/double_store.h"

#include <fmt/format.h>

#include <cmath>

#include "codegen/cuda_expr.h"

namespace kiln::codegen {
namespace {

// The double `sum` rounded to float to odd (an inexact result takes the neighbour whose last
// mantissa bit is 1): storing that to bf16 (round to nearest even, 16 fewer bits) rounds as
// rounding the double straight to bf16 does, which the reference does.
std::string rounded_to_odd_float(ElementEmitter& e, const std::string& sum) {
  const std::string nearest = e.temp("float", "(float)" + sum);
  const std::string bits = e.temp("unsigned", "__float_as_uint(" + nearest + ")");
  const std::string keep =
      fmt::format("(double){0} == {1} || ({2} & 1u) != 0 || ({2} & 0x7f800000u) == 0x7f800000u",
                  nearest, sum, bits);
  return e.temp("float",
                fmt::format("{} ? {} : __uint_as_float(fabs({}) > fabs((double){}) ? {} + 1u : "
                            "{} - 1u)",
                            keep, nearest, sum, nearest, bits, bits));
}

}  // namespace

std::string stored_from_double(ElementEmitter& e, DType dtype, const std::string& sum) {
  const std::string type(cuda_compute_type(dtype));
  if (dtype == DType::kF64) return sum;
  if (dtype == DType::kF16) return e.temp(type, "kiln_round_to_f16(" + sum + ")");
  if (dtype == DType::kBF16) return rounded_to_odd_float(e, sum);
  if (dtype == DType::kF32) return e.temp(type, "(float)" + sum);
  const auto [low, high] = integer_range(dtype);
  // i64's largest value is no double: the reference clamps to the largest double below 2^63.
  const double top = dtype == DType::kI64 ? std::nextafter(0x1p63, 0.0) : static_cast<double>(high);
  return e.temp(type, fmt::format("({})fmin(fmax(rint({}), {}), {})", type, sum,
                                  cuda_literal(static_cast<double>(low), DType::kF64),
                                  cuda_literal(top, DType::kF64)));
}

}  // namespace kiln::codegen
