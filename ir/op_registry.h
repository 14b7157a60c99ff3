// The one op table. Each kiln op is described once: its name, fusion category, attribute
// schema, operand count, shape function, CPU reference kernel, and backend-free policy facts
// (its precision class in mixed precision, TF32 rounding, the axes a reduction reduces).
// Shape inference, the verifier, the printer and parser, the reference interpreter, the passes
// and codegen all read this table. No backend's code lives here: each backend keeps its own
// table keyed by op name (codegen/op_expressions.h: each elementwise op's device expression).
//
// Op families register themselves from ir/ops/*.cc through explicit functions listed in
// ir/ops/all_ops.cc (no static initializers, so nothing is lost when linking static libraries).
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"

namespace kiln {

// Ordered so fusion rules can compare: elementwise < broadcast < injective < reduction <
// out-elementwise-fusable < opaque (as TVM's OpPatternKind).
enum class OpCategory {
  kElementwise,
  kBroadcast,
  kInjective,
  kReduction,
  kOutElementwiseFusable,
  kOpaque,
};
std::string_view op_category_name(OpCategory category);

// What the mixed-precision pass (passes/precision_policy.h) computes the op in, in fp16/bf16 mode.
// kLowPrecision: convolutions and matrix products, which accumulate in f32 and so stay accurate
// with 16-bit operands.
// kF32: the ops whose results lose range or precision in 16 bits:
//   - normalizations and softmax: means, variances and sums of exponentials over many terms;
//   - reductions and cumulative sums: sums of many terms;
//   - exp, log, pow, erf: transcendental functions whose results overflow or lose digits;
//   - sqrt, reciprocal: 1/x and sqrt(x) of the small variances of hand-written normalizations.
enum class PrecisionClass {
  kFollowOperands,  // the 16-bit type when any non-constant float operand is 16-bit, else f32
  kLowPrecision,    // the 16-bit type
  kF32,
};

// Which axes of its operand 0 a reduction op reduces: each output element (or row statistic)
// combines the elements that differ only in those axes.
enum class ReducedAxes {
  kNone,          // not a reduction over axes (windowed pools, lrn, every non-reduction op)
  kAxesOrAll,     // the `axes` attribute; empty: every axis, or none with noop_with_empty_axes
  kAxes,          // exactly the `axes` attribute
  kAxis,          // the one axis of the `axis` attribute
  kFromAxis,      // from the `axis` attribute to the last axis
  kSpatial,       // axes 2 and on (N and C kept)
  kWithinGroups,  // each group's channels and spatial elements: axis 2 of operand 0 seen as
                  // [N, num_groups, C / num_groups · spatial]
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  // Absent: the attribute is required.
  std::optional<Attribute> default_value;
};

// Result types from the node's operand types and attributes. Throws InputError on invalid
// operands or attributes (the caller adds the node's name).
using ShapeFn = std::vector<TensorType> (*)(const Node& node);

// Computes results into pre-allocated tensors of the inferred result types. Floats of 16 bits
// are computed in f32 and rounded to nearest even on every store (Tensor::set_float does it);
// sums of many float terms (reductions, statistics, dot products) accumulate in double
// (nn::Accumulator in ir/ops/nn_kernel_util.h).
using ReferenceFn = void (*)(const Node& node, std::span<const Tensor* const> inputs,
                             std::span<Tensor> outputs);

struct OpInfo {
  std::string name;  // snake_case, as printed in IR text
  OpCategory category = OpCategory::kOpaque;
  std::vector<AttrSpec> attrs;
  int min_operands = 1;
  int max_operands = 1;  // kVariadic for no limit
  int num_results = 1;   // results every node of this op has (kVariadic: fusion ops)
  ShapeFn infer = nullptr;
  ReferenceFn reference = nullptr;
  // Fusion ops: the node owns a body graph (Node::body()) that defines its results; the
  // reference interpreter runs the body, so `reference` is null.
  bool has_body = false;
  // Policy facts, set where the op is registered.
  PrecisionClass precision = PrecisionClass::kFollowOperands;
  // tf32 mode rounds the op's product operands to TF32: the op has the tf32 attribute
  // (ir/ops/nn_tf32.h), which the mixed-precision pass sets.
  bool rounds_to_tf32 = false;
  // kNone but for the ops that reduce rows of operand 0 along some of its axes.
  ReducedAxes reduced_axes = ReducedAxes::kNone;

  static constexpr int kVariadic = std::numeric_limits<int>::max();
  const AttrSpec* find_attr(const std::string& attr_name) const;
};

class OpRegistry {
 public:
  // The registry with every op of ir/ops/ registered.
  static const OpRegistry& global();

  void add(OpInfo info);  // throws InternalError on a duplicate name
  const OpInfo* find(const std::string& name) const;
  std::vector<const OpInfo*> all() const;  // sorted by name

 private:
  std::map<std::string, OpInfo> ops_;
};

// The node's result types from its op's shape function, each checked against the size limit
// (kMaxResultElements in ir/ops/op_helpers.h); throws InputError. Every caller of a shape
// function goes through here.
std::vector<TensorType> infer_result_types(const Node& node);

// Checks a node's operand count and attributes against the table (unknown attribute, wrong kind,
// missing required one); throws InputError naming the node.
void check_node_against_schema(const Node& node);

}  // namespace kiln
