// Tests of converter dispatch by ONNX op version (frontend/converter_table.cc) and of error types
// surviving the context the importer adds.
#include <gtest/gtest.h>

#include "frontend/node_importer.h"
#include "frontend/onnx_importer.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

TEST(ConverterTableTest, ServesTheOpVersionInForceAtTheModelsOpset) {
  const ConverterTable& table = ConverterTable::global();
  EXPECT_NE(table.find("Relu", 13), nullptr);
  EXPECT_NE(table.find("Conv", 21), nullptr);
  EXPECT_EQ(table.find("NoSuchOp", 17), nullptr);
}

TEST(ConverterTableTest, ServesOlderAndNewerVersionsThatOnlyChangedTypes) {
  const ConverterTable& table = ConverterTable::global();
  EXPECT_NE(table.find("Xor", 7), nullptr);    // Xor-7 is the version in force at opset 13
  EXPECT_NE(table.find("Relu", 25), nullptr);  // Relu-14 added bf16 only
  EXPECT_NE(table.find("Conv", 22), nullptr);  // Conv-22 added bf16 only
}

TEST(ConverterTableTest, RefusesVersionsWhoseSignatureChanged) {
  const ConverterTable& table = ConverterTable::global();
  EXPECT_EQ(table.find("Softmax", 11), nullptr);  // axis default and meaning changed at 13
  EXPECT_EQ(table.find("Reshape", 4), nullptr);   // Reshape-1 took the shape as an attribute
  EXPECT_EQ(table.find("Gelu", 19), nullptr);     // Gelu starts at opset 20
}

TEST(ErrorContextTest, PrefixingKeepsTheErrorType) {
  try {
    try {
      throw UnsupportedError("data type UINT64");
    } catch (const InputError& error) {
      error.rethrow_prefixed("model.onnx: ");
    }
  } catch (const UnsupportedError& error) {
    EXPECT_STREQ(error.what(), "model.onnx: data type UINT64");
    return;
  }
  FAIL() << "the prefixed error lost its type";
}

TEST(ErrorContextTest, PrefixingKeepsTheInputNameOfConstantInputRequired) {
  try {
    try {
      throw ConstantInputRequired("needs a constant", "shape");
    } catch (const InputError& error) {
      error.rethrow_prefixed("model.onnx: ");
    }
  } catch (const ConstantInputRequired& error) {
    EXPECT_EQ(error.input_name(), "shape");
    return;
  }
  FAIL() << "the prefixed error lost its type";
}

}  // namespace
}  // namespace kiln::onnx_import
