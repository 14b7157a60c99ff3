// Small ONNX models with a symbolic batch, written to temporary files, for the dynamic-shape
// tests (tests/unit/dynamic_compile_test.cc, tests/runtime/dynamic_session_gpu_test.cc).
#pragma once

#include <fstream>
#include <string>

#include "frontend_model_builder.h"

namespace kiln::dynamic_models {

using onnx_import::frontend_test::ModelBuilder;

inline std::string write_model(const ModelBuilder& builder, const std::string& name) {
  const std::string path =
      (onnx_import::frontend_test::fresh_temp_dir("dynamic") / (name + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << builder.bytes();
  return path;
}

// y = relu(x · W): each row on its own.
inline std::string row_wise_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  builder.float_initializer("w", {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  builder.node("MatMul", {"x", "w"}, {"h"});
  builder.node("Relu", {"h"}, {"y"});
  builder.output("y");
  return write_model(builder, "row_wise");
}

// y = x - mean(x over the batch).
inline std::string batch_mean_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  onnx_import::frontend_test::add_ints_attr(builder.node("ReduceMean", {"x"}, {"m"}), "axes", {0});
  builder.node("Sub", {"x", "m"}, {"y"});
  builder.output("y");
  return write_model(builder, "batch_mean");
}

// y = x / batch, the batch read from Shape(x): folded into a constant at import.
inline std::string divide_by_batch_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  builder.int64_initializer("zero", {}, {0});
  builder.node("Shape", {"x"}, {"s"});
  builder.node("Gather", {"s", "zero"}, {"b"});
  onnx_import::frontend_test::add_int_attr(builder.node("Cast", {"b"}, {"bf"}), "to",
                                           onnx::TensorProto::FLOAT);
  builder.node("Div", {"x", "bf"}, {"y"});
  builder.output("y");
  return write_model(builder, "divide_by_batch");
}

// y = x / min(batch, 4): equal at batch 8 and 7, but not at 3 (which a variant of 4 serves).
inline std::string divide_by_min_batch_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  builder.int64_initializer("zero", {}, {0});
  builder.int64_initializer("four", {}, {4});
  builder.node("Shape", {"x"}, {"s"});
  builder.node("Gather", {"s", "zero"}, {"b"});
  builder.node("Min", {"b", "four"}, {"m"});
  onnx_import::frontend_test::add_int_attr(builder.node("Cast", {"m"}, {"mf"}), "to",
                                           onnx::TensorProto::FLOAT);
  builder.node("Div", {"x", "mf"}, {"y"});
  builder.output("y");
  return write_model(builder, "divide_by_min_batch");
}

// y = x[:, batch - 1 : batch]: a column chosen by the batch size (no shape changes with it).
inline std::string column_by_batch_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{16}});
  builder.int64_initializer("first", {1}, {0});
  builder.int64_initializer("one", {1}, {1});
  builder.node("Shape", {"x"}, {"s"});
  builder.node("Slice", {"s", "first", "one"}, {"b"});
  builder.node("Sub", {"b", "one"}, {"start"});
  builder.node("Slice", {"x", "start", "b", "one"}, {"y"});
  builder.output("y");
  return write_model(builder, "column_by_batch");
}

// y = x / max(batch of x, batch of z), w = z + 1: x's batch may be padded while z's is the
// largest, not at smaller sizes of z (and the other way round).
inline std::string joint_max_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("n"), int64_t{4}});
  builder.input("z", onnx::TensorProto::FLOAT, {std::string("m"), int64_t{4}});
  builder.int64_initializer("zero", {}, {0});
  builder.float_initializer("one", {}, {1});
  builder.node("Shape", {"x"}, {"sx"});
  builder.node("Gather", {"sx", "zero"}, {"nx"});
  builder.node("Shape", {"z"}, {"sz"});
  builder.node("Gather", {"sz", "zero"}, {"nz"});
  builder.node("Max", {"nx", "nz"}, {"most"});
  onnx_import::frontend_test::add_int_attr(builder.node("Cast", {"most"}, {"mostf"}), "to",
                                           onnx::TensorProto::FLOAT);
  builder.node("Div", {"x", "mostf"}, {"y"});
  builder.node("Add", {"z", "one"}, {"w"});
  builder.output("y");
  builder.output("w");
  return write_model(builder, "joint_max");
}

// y = x + expand(c, shape(x)): c's one row repeated to the batch, folded at import into a
// constant of batch rows (as exporters write default token-type ids).
inline std::string expanded_constant_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  builder.float_initializer("c", {1, 4}, {1, -2, 3, -4});
  builder.node("Shape", {"x"}, {"s"});
  builder.node("Expand", {"c", "s"}, {"e"});
  builder.node("Add", {"x", "e"}, {"y"});
  builder.output("y");
  return write_model(builder, "expanded_constant");
}

// y = (x + expand(c, shape(x))) · w: a constant of batch rows (a weight set per batch size) and a
// weight w [4, 256] of values 0.5·k, the same at every size.
inline std::string expanded_constant_matmul_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{4}});
  builder.float_initializer("c", {1, 4}, {1, -2, 3, -4});
  std::vector<float> w(4 * 256);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.5f * static_cast<float>(k);
  builder.float_initializer("w", {4, 256}, w);
  builder.node("Shape", {"x"}, {"s"});
  builder.node("Expand", {"c", "s"}, {"e"});
  builder.node("Add", {"x", "e"}, {"h"});
  builder.node("MatMul", {"h", "w"}, {"y"});
  builder.output("y");
  return write_model(builder, "expanded_constant_matmul");
}

// y = x - mean(x over each row): the rows may be padded, the row length may not.
inline std::string row_mean_model() {
  ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), std::string("length")});
  onnx_import::frontend_test::add_ints_attr(builder.node("ReduceMean", {"x"}, {"m"}), "axes", {1});
  builder.node("Sub", {"x", "m"}, {"y"});
  builder.output("y");
  return write_model(builder, "row_mean");
}

}  // namespace kiln::dynamic_models
