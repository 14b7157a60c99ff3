// ONNX converters for the elementwise op family. Most ONNX ops map one-to-one onto a kiln op
// with the same attributes (read by the kiln op's attribute schema); Clip, Cast, CastLike and
// Dropout turn inputs or types into attributes.
#include <string_view>

#include "frontend/converters/layout_converters.h"
#include "frontend/node_importer.h"
#include "frontend/tensor_proto.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::onnx_import {
namespace {

struct DirectOp {
  std::string_view onnx_type;
  std::string_view kiln_op;
  int since_opset;
};

// ONNX ops that are one kiln op with the same operands and attributes.
constexpr DirectOp kDirectOps[] = {
    {"Relu", "relu", 13},
    {"LeakyRelu", "leaky_relu", 13},
    {"PRelu", "prelu", 13},
    {"Elu", "elu", 13},
    {"Selu", "selu", 13},
    {"Sigmoid", "sigmoid", 13},
    {"HardSigmoid", "hard_sigmoid", 13},
    {"HardSwish", "hard_swish", 14},
    {"Tanh", "tanh", 13},
    {"Erf", "erf", 13},
    {"Gelu", "gelu", 20},
    {"Softplus", "softplus", 13},
    {"Softsign", "softsign", 13},
    {"Mish", "mish", 18},
    {"Swish", "swish", 24},
    {"Celu", "celu", 13},
    {"ThresholdedRelu", "thresholded_relu", 13},
    {"Shrink", "shrink", 13},
    {"Exp", "exp", 13},
    {"Log", "log", 13},
    {"Sqrt", "sqrt", 13},
    {"Reciprocal", "reciprocal", 13},
    {"Neg", "neg", 13},
    {"Abs", "abs", 13},
    {"Floor", "floor", 13},
    {"Ceil", "ceil", 13},
    {"Round", "round", 13},
    {"Sign", "sign", 13},
    {"Sin", "sin", 13},
    {"Cos", "cos", 13},
    {"Tan", "tan", 13},
    {"Asin", "asin", 13},
    {"Acos", "acos", 13},
    {"Atan", "atan", 13},
    {"Sinh", "sinh", 13},
    {"Cosh", "cosh", 13},
    {"Asinh", "asinh", 13},
    {"Acosh", "acosh", 13},
    {"Atanh", "atanh", 13},
    {"Pow", "pow", 13},
    {"Add", "add", 13},
    {"Sub", "sub", 13},
    {"Mul", "mul", 13},
    {"Div", "div", 13},
    {"Mod", "mod", 13},
    {"Max", "max", 13},
    {"Min", "min", 13},
    {"Sum", "sum", 13},
    {"Mean", "mean", 13},
    {"Equal", "equal", 13},
    {"Less", "less", 13},
    {"LessOrEqual", "less_or_equal", 13},
    {"Greater", "greater", 13},
    {"GreaterOrEqual", "greater_or_equal", 13},
    {"Not", "not", 13},
    {"And", "and", 13},
    {"Or", "or", 13},
    {"Xor", "xor", 13},
    {"Where", "where", 13},
    {"BitwiseNot", "bitwise_not", 18},
    {"BitwiseAnd", "bitwise_and", 18},
    {"BitwiseOr", "bitwise_or", 18},
    {"BitwiseXor", "bitwise_xor", 18},
    {"BitShift", "bit_shift", 13},
    {"IsNaN", "is_nan", 13},
    {"IsInf", "is_inf", 13},
    {"Identity", "identity", 13},
};

std::string_view kiln_op_for(const NodeImporter& node) {
  for (const DirectOp& op : kDirectOps) {
    if (op.onnx_type == node.op_type()) return op.kiln_op;
  }
  throw InternalError("no kiln op registered for ONNX " + node.op_type());
}

// Copies every attribute the kiln op declares from the ONNX node, when the node sets it.
AttributeMap read_schema_attrs(const NodeImporter& node, const OpInfo& info) {
  AttributeMap attrs;
  for (const AttrSpec& spec : info.attrs) {
    if (!node.has_attr(spec.name)) continue;
    switch (spec.kind) {
      case AttrKind::kInt:
        attrs[spec.name] = node.attr_int(spec.name);
        break;
      case AttrKind::kFloat:
        attrs[spec.name] = node.attr_float(spec.name);
        break;
      case AttrKind::kString:
        attrs[spec.name] = node.attr_string(spec.name);
        break;
      default:
        throw InternalError("attribute '" + spec.name + "' of " + info.name +
                            " cannot be copied from ONNX");
    }
  }
  return attrs;
}

std::vector<Value*> convert_direct(NodeImporter& node) {
  const std::string op(kiln_op_for(node));
  const OpInfo* info = OpRegistry::global().find(op);
  if (!info) throw InternalError("kiln op '" + op + "' is not in the op table");
  std::vector<Value*> operands;
  for (size_t i = 0; i < node.num_inputs(); ++i) operands.push_back(node.input(i));
  return node.emit(op, std::move(operands), read_schema_attrs(node, *info));
}

// Clip's optional min and max inputs become float attributes; an absent one is no bound.
std::vector<Value*> convert_clip(NodeImporter& node) {
  AttributeMap attrs;
  const auto read_bound = [&](size_t input, const char* name) {
    const std::optional<Tensor> bound = node.optional_constant_input(input, name);
    if (!bound) return;
    if (bound->num_elements() != 1) {
      node.fail(std::string("input '") + name + "' must be a scalar, got shape [" +
                shape_to_string(bound->shape()) + "]");
    }
    attrs[name] = bound->get_double(0);
  };
  read_bound(1, "min");
  read_bound(2, "max");
  return {node.emit1("clip", {node.input(0)}, std::move(attrs))};
}

Value* emit_cast(NodeImporter& node, DType to) {
  return node.emit1("cast", {node.input(0)}, {{"to", Attribute(to)}});
}

DType cast_target(const NodeImporter& node) {
  try {
    return dtype_from_onnx(static_cast<int>(node.attr_int("to")), "attribute 'to'");
  } catch (const UnsupportedError& error) {
    node.unsupported(std::string("cannot cast: ") + error.what());
  } catch (const InputError& error) {
    node.fail(std::string("cannot cast: ") + error.what());
  }
}

std::vector<Value*> convert_cast(NodeImporter& node) {
  return {emit_cast(node, cast_target(node))};
}

std::vector<Value*> convert_cast_like(NodeImporter& node) {
  return {emit_cast(node, node.input(1)->type().dtype)};
}

// Inference-mode Dropout is the identity, and so is training mode with ratio 0 (torch 1.13 exports
// swin_t's attention dropouts so): nothing is dropped and the scale 1 / (1 - ratio) is 1. The
// optional mask output is all true.
std::vector<Value*> convert_dropout(NodeImporter& node) {
  if (node.has_input(2) && constant_int(node, 2, "training_mode") != 0) {
    // The ratio's default is 0.5.
    const Tensor* ratio = node.has_input(1) ? &node.constant_input(1, "ratio") : nullptr;
    if (!ratio || ratio->num_elements() != 1 || ratio->get_double(0) != 0.0) {
      node.unsupported(
          "training mode with a ratio other than 0 drops elements at random, which kiln does not "
          "compute");
    }
  }
  Value* data = node.input(0);
  std::vector<Value*> results = {node.emit1("identity", {data})};
  if (node.has_output(1)) {
    Tensor mask(DType::kBool, data->type().shape);
    for (int64_t i = 0; i < mask.num_elements(); ++i) mask.set_int(i, 1);
    results.push_back(node.constant(std::move(mask)));
  }
  return results;
}

}  // namespace

void register_elementwise_converters(ConverterTable& table) {
  for (const DirectOp& op : kDirectOps) {
    table.add(std::string(op.onnx_type), op.since_opset, &convert_direct);
  }
  table.add("Clip", 13, &convert_clip);
  // Cast-19 added `saturate` and Cast-24 `round_mode`; both only concern float8 types, which
  // kiln lacks, so one converter serves every version.
  for (int since : {13, 19, 24}) table.add("Cast", since, &convert_cast);
  for (int since : {15, 19, 24}) table.add("CastLike", since, &convert_cast_like);
  table.add("Dropout", 13, &convert_dropout);
}

}  // namespace kiln::onnx_import
