// ONNX Gemm, MatMul and Einsum -> kiln gemm / matmul / einsum (same attributes and semantics).
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

std::vector<Value*> convert_gemm(NodeImporter& node) {
  std::vector<Value*> operands = {node.input(0), node.input(1)};
  if (node.has_input(2)) operands.push_back(node.input(2));
  return {node.emit1("gemm", operands,
                     {{"alpha", node.attr_float("alpha", 1.0)},
                      {"beta", node.attr_float("beta", 1.0)},
                      {"transA", node.attr_int("transA", 0)},
                      {"transB", node.attr_int("transB", 0)}})};
}

std::vector<Value*> convert_matmul(NodeImporter& node) {
  return {node.emit1("matmul", {node.input(0), node.input(1)})};
}

std::vector<Value*> convert_einsum(NodeImporter& node) {
  std::vector<Value*> operands;
  for (size_t i = 0; i < node.num_inputs(); ++i) operands.push_back(node.input(i));
  return {node.emit1("einsum", operands, {{"equation", node.attr_string("equation")}})};
}

}  // namespace

void register_matmul_converters(ConverterTable& table) {
  table.add("Einsum", 13, convert_einsum);
  table.add("Gemm", 13, convert_gemm);
  table.add("MatMul", 13, convert_matmul);
}

}  // namespace kiln::onnx_import
