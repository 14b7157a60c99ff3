// Padded values through elementwise ops (see the header): exact values computed as the op would
// (rounded to its result dtype), masks kept through additions, casts to floats, scaling up and
// selection.
#include "passes/padding_values.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/tensor.h"

namespace kiln::passes {
namespace {

using Kind = PaddedValue::Kind;

// `v` stored in `dtype` and read back (f16 rounds, ints saturate, bool is v != 0).
double rounded(double v, DType dtype) {
  Tensor one(dtype, Shape{});
  one.set_double(0, v);
  return one.get_double(0);
}

// The op on exact operands, or nothing for an op not evaluated here.
std::optional<double> evaluate(const std::string& op, const std::vector<double>& x) {
  if (op == "cast" || op == "identity" || op == "expand") return x[0];
  if (op == "neg") return -x[0];
  if (op == "not") return x[0] == 0 ? 1.0 : 0.0;
  if (x.size() == 3 && op == "where") return x[0] != 0 ? x[1] : x[2];
  if (x.size() != 2) return std::nullopt;
  if (op == "add") return x[0] + x[1];
  if (op == "sub") return x[0] - x[1];
  if (op == "mul") return x[0] * x[1];
  if (op == "div") return x[0] / x[1];
  if (op == "min") return std::fmin(x[0], x[1]);
  if (op == "max") return std::fmax(x[0], x[1]);
  if (op == "equal") return x[0] == x[1] ? 1.0 : 0.0;
  if (op == "less") return x[0] < x[1] ? 1.0 : 0.0;
  if (op == "greater") return x[0] > x[1] ? 1.0 : 0.0;
  if (op == "less_or_equal") return x[0] <= x[1] ? 1.0 : 0.0;
  if (op == "greater_or_equal") return x[0] >= x[1] ? 1.0 : 0.0;
  if (op == "and") return x[0] != 0 && x[1] != 0 ? 1.0 : 0.0;
  if (op == "or") return x[0] != 0 || x[1] != 0 ? 1.0 : 0.0;
  return std::nullopt;
}

// An upper bound on a sum's padded value relative to its ordinary operands: exact terms count
// their value, masked ones kMaskBound, ordinary ones 0 (they are what the bound is relative to).
double bound_of(const PaddedValue& term) {
  switch (term.kind) {
    case Kind::kExactly:
      return term.value;
    case Kind::kMasked:
      return kMaskBound;
    case Kind::kOrdinary:
      break;
  }
  return 0;
}

PaddedValue masked_if(bool condition) {
  return condition ? PaddedValue::masked() : PaddedValue::ordinary();
}

}  // namespace

PaddedValue elementwise_padded_value(const Node& node, const std::vector<PaddedValue>& operands) {
  const std::string& op = node.op();
  const DType dtype = node.result(0)->type().dtype;
  bool all_exact = true;
  std::vector<double> values;
  for (const PaddedValue& operand : operands) {
    all_exact = all_exact && operand.kind == Kind::kExactly;
    values.push_back(operand.value);
  }
  if (all_exact) {
    if (const std::optional<double> v = evaluate(op, values)) {
      return PaddedValue::exactly(rounded(*v, dtype));
    }
    return PaddedValue::ordinary();
  }
  const bool to_float = is_float(dtype);
  // Absorbing operands: false and anything is false, true or anything true (a causal mask
  // and-ed with a padded attention mask, say), 0 times finite values 0 (not times a masked one,
  // which may be -inf).
  const bool all_finite = std::all_of(operands.begin(), operands.end(), [](const PaddedValue& v) {
    return v.kind == Kind::kOrdinary || (v.kind == Kind::kExactly && std::isfinite(v.value));
  });
  for (const PaddedValue& operand : operands) {
    if (operand.kind != Kind::kExactly) continue;
    if (op == "and" && operand.value == 0) return PaddedValue::exactly(0);
    if (op == "mul" && operand.value == 0 && all_finite) return PaddedValue::exactly(0);
    if (op == "or" && operand.value != 0) return PaddedValue::exactly(1);
  }
  if (op == "cast" || op == "identity" || op == "expand") {
    return masked_if(to_float && operands[0].kind == Kind::kMasked);
  }
  if (op == "add" || op == "sub") {
    // A sum whose bound is at most kMaskBound: masked (a subtracted masked value is not).
    double bound = bound_of(operands[0]);
    bool any_masked = operands[0].masks();
    for (size_t i = 1; i < operands.size(); ++i) {
      if (op == "sub" && operands[i].kind == Kind::kMasked) return PaddedValue::ordinary();
      bound += op == "sub" ? -bound_of(operands[i]) : bound_of(operands[i]);
      any_masked = any_masked || (op == "add" && operands[i].masks());
    }
    return masked_if(to_float && any_masked && bound <= kMaskBound);
  }
  if ((op == "mul" || op == "div") && operands.size() == 2) {
    // Masked scaled up (by a factor of at least 1, or divided by one in (0, 1]) stays masked.
    const auto scales_up = [&](const PaddedValue& s) {
      return s.kind == Kind::kExactly && (op == "mul" ? s.value >= 1 : s.value > 0 && s.value <= 1);
    };
    if (operands[0].kind == Kind::kMasked && scales_up(operands[1])) return PaddedValue::masked();
    if (op == "mul" && operands[1].kind == Kind::kMasked && scales_up(operands[0])) {
      return PaddedValue::masked();
    }
    return PaddedValue::ordinary();
  }
  if (op == "where" && operands.size() == 3) {
    if (operands[0].kind == Kind::kExactly) {
      return operands[0].value != 0 ? operands[1] : operands[2];
    }
    if (operands[1] == operands[2]) return operands[1];  // either way the same
  }
  if (op == "min" && to_float) {
    for (const PaddedValue& operand : operands) {
      if (operand.masks()) return PaddedValue::masked();
    }
  }
  return PaddedValue::ordinary();
}

}  // namespace kiln::passes
