// mixed-precision. In fp16/bf16 mode (T the 16-bit type) it walks the nodes in order and gives
// each node with float operands a compute dtype by the policy (passes/precision_policy.h): T for
// the low-precision ops, f32 for the f32 ops, and for every other op T when any of its float
// operands that is not a constant is 16-bit, else f32 (a node whose float operands are all
// constants is left alone). An operand of another dtype is replaced by
//   - a converted copy when it is a constant (rounded once, at compile time, named NAME.f16);
//   - the operand of the cast producing it when that cast widened exactly from the wanted dtype:
//     cast(cast(x: T -> f32) -> T) is x, while x: f32 -> T -> f32 rounds and is kept;
//   - else a new cast node, shared by every consumer that wants the same dtype.
// The node's result types are then inferred again from its operands, and its consumers decide
// what they need in turn, so casts appear only where a consumer needs another type. A cast of
// the model whose operand now has the cast's dtype is dropped, and so is a widening cast of the
// model left unused by consumers that now take its operand.
//
// Graph inputs and outputs keep their declared dtypes unless PassContext::io_dtype is set, which
// retypes the f32 ones. An output whose value changed dtype gets a cast that takes the output's
// name (the value itself is renamed NAME.f16).
//
// In tf32 mode nothing is cast: the ops that round to TF32 (OpInfo::rounds_to_tf32) with f32
// operands get tf32=1, so their kernels round the operands to TF32.
//
// Refusals: ops kept in f32 by --keep-fp32, and model casts kept because they name an output.
#include "passes/mixed_precision.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::passes {
namespace {

// The float dtypes the pass retypes (f64 stays as it is).
bool is_retyped(DType dtype) { return dtype == DType::kF32 || is_16_bit_float(dtype); }

std::string refusal(const Node& node, const std::string& reason) {
  return std::string(MixedPrecision::kName) + ": " + node.describe() + ": " + reason;
}

bool mark_tf32_ops(Graph& graph, PassContext& context) {
  bool changed = false;
  for (Node* node : graph.nodes()) {
    if (!node->info().rounds_to_tf32 || node->operand(0)->type().dtype != DType::kF32) {
      continue;
    }
    if (context.keep_fp32.count(node->op())) {
      context.refusals.push_back(refusal(*node, "not rounded to tf32, kept in f32 by --keep-fp32"));
      continue;
    }
    if (node->int_attr("tf32") == 1) continue;
    node->mutable_attrs()["tf32"] = Attribute(1);
    changed = true;
  }
  return changed;
}

class HalfPrecisionRewrite {
 public:
  HalfPrecisionRewrite(Graph& graph, PassContext& context, DType half)
      : graph_(graph), context_(context), half_(half) {}

  bool run() {
    std::vector<DType> declared_outputs;
    for (const Value* output : graph_.outputs()) declared_outputs.push_back(output->type().dtype);
    for (Value* input : graph_.inputs()) {
      if (io_dtype(input->type().dtype) != input->type().dtype) {
        input->set_type({io_dtype(input->type().dtype), input->type().shape});
        changed_ = true;
      }
    }
    for (Node* node : graph_.nodes()) {
      if (node->op() == "cast") {
        drop_if_cast_to_own_type(node);
      } else {
        visit(node);
      }
    }
    restore_output_dtypes(declared_outputs);
    erase_unused_bypassed_casts();
    if (changed_) {
      graph_.sort_topologically();
      graph_.erase_unused_constants();
    }
    return changed_;
  }

 private:
  // The dtype a graph input or output declared `declared` has after the pass.
  DType io_dtype(DType declared) const {
    return context_.io_dtype && declared == DType::kF32 ? *context_.io_dtype : declared;
  }

  // The dtype `node` computes in, or nullopt when the pass leaves its operands alone.
  std::optional<DType> compute_dtype(const Node& node, const std::vector<size_t>& float_operands) {
    switch (precision_class(node.info(), context_.keep_fp32)) {
      case PrecisionClass::kLowPrecision:
        return half_;
      case PrecisionClass::kF32:
        if (node.info().precision != PrecisionClass::kF32) {
          context_.refusals.push_back(refusal(node, "kept in f32 by --keep-fp32"));
        }
        return DType::kF32;
      case PrecisionClass::kFollowOperands:
        break;
    }
    bool any_variable = false, any_half = false;
    for (size_t i : float_operands) {
      const Value* operand = node.operand(i);
      if (operand->is_constant()) continue;
      any_variable = true;
      any_half = any_half || is_16_bit_float(operand->type().dtype);
    }
    if (!any_variable) return std::nullopt;
    return any_half ? half_ : DType::kF32;
  }

  void visit(Node* node) {
    std::vector<size_t> float_operands;
    for (size_t i = 0; i < node->operands().size(); ++i) {
      if (is_retyped(node->operand(i)->type().dtype)) float_operands.push_back(i);
    }
    if (float_operands.empty()) return;
    const std::optional<DType> dtype = compute_dtype(*node, float_operands);
    if (!dtype) return;
    for (size_t i : float_operands) node->set_operand(i, as_dtype(node->operand(i), *dtype));
    // The operands may have changed here or upstream: infer the results again.
    std::vector<TensorType> result_types;
    try {
      result_types = infer_result_types(*node);
    } catch (const InputError& error) {
      error.rethrow_prefixed(std::string(MixedPrecision::kName) + ": " + node->describe() + " in " +
                             std::string(dtype_name(*dtype)) + ": ");
    }
    for (size_t r = 0; r < result_types.size(); ++r) {
      if (node->result(r)->type() == result_types[r]) continue;
      node->result(r)->set_type(result_types[r]);
      changed_ = true;
    }
  }

  // `value` as `dtype`: itself, a converted constant, the operand of an exactly widening cast,
  // or a new cast (one per value and dtype).
  Value* as_dtype(Value* value, DType dtype) {
    if (value->type().dtype == dtype) return value;
    Value*& converted = converted_[{value, dtype}];
    if (converted) return converted;
    const Node* producer = value->producer();
    if (value->is_constant()) {
      converted = converted_constant(*value, dtype);
    } else if (producer && producer->op() == "cast" &&
               producer->operand(0)->type().dtype == dtype && is_16_bit_float(dtype) &&
               value->type().dtype == DType::kF32) {
      converted = producer->operand(0);
      bypassed_casts_.insert(value->producer());
    } else {
      converted = new_cast(value, dtype);
    }
    changed_ = true;
    return converted;
  }

  Value* new_cast(Value* value, DType dtype) {
    return graph_.add_node("cast", {value}, {{"to", Attribute(dtype)}})->result();
  }

  Value* converted_constant(const Value& constant, DType dtype) {
    const std::string name =
        constant.name().empty() ? "" : constant.name() + "." + std::string(dtype_name(dtype));
    const TensorType type{dtype, constant.type().shape};
    if (!constant.has_data()) return graph_.add_elided_constant(name, type);
    return graph_.add_constant(name, constant.data().converted(dtype));
  }

  // A cast of the model whose operand now has the cast's dtype does nothing: its users take the
  // operand instead, unless it names a graph output.
  void drop_if_cast_to_own_type(Node* cast) {
    Value* operand = cast->operand(0);
    Value* result = cast->result();
    if (operand->type().dtype != result->type().dtype) return;
    if (graph_.is_output(result)) {
      context_.refusals.push_back(
          refusal(*cast, "kept though its operand is already " +
                             std::string(dtype_name(operand->type().dtype)) +
                             ": it names graph output %" + result->name()));
      return;
    }
    graph_.replace_all_uses(result, operand);
    graph_.erase_node(cast);
    changed_ = true;
  }

  // Widening casts whose consumers now take the cast's operand instead: gone when unused.
  void erase_unused_bypassed_casts() {
    for (Node* cast : bypassed_casts_) {
      if (graph_.users(cast->result()).empty() && !graph_.is_output(cast->result())) {
        graph_.erase_node(cast);
      }
    }
  }

  void restore_output_dtypes(const std::vector<DType>& declared) {
    std::vector<Value*> outputs = graph_.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      Value* value = outputs[i];
      const DType wanted = io_dtype(declared[i]);
      if (value->type().dtype == wanted) continue;
      Value* converted = as_dtype(value, wanted);
      // The converted value takes the output's name, so it must not have a name of its own that
      // callers know (an input's or another output's, as a widening cast's operand may have).
      if (converted->kind() == Value::Kind::kInput || graph_.is_output(converted)) {
        converted = new_cast(value, wanted);
      }
      if (!named_outputs_.count(converted) && !value->name().empty()) {
        converted->set_name(value->name());
        value->set_name(value->name() + "." + std::string(dtype_name(value->type().dtype)));
        named_outputs_.insert(converted);
      }
      outputs[i] = converted;
    }
    graph_.set_outputs(outputs);
  }

  Graph& graph_;
  PassContext& context_;
  const DType half_;
  bool changed_ = false;
  std::map<std::pair<Value*, DType>, Value*> converted_;
  std::set<const Value*> named_outputs_;
  std::set<Node*> bypassed_casts_;
};

}  // namespace

bool MixedPrecision::run(Graph& graph, PassContext& context) {
  check_io_precision(context.precision, context.io_dtype);
  const std::optional<DType> half = half_dtype(context.precision);
  if (context.precision == Precision::kTF32) return mark_tf32_ops(graph, context);
  if (!half) return false;
  return HalfPrecisionRewrite(graph, context, *half).run();
}

}  // namespace kiln::passes
