// Tests of ONNX initializer reading: typed fields, raw_data, external data files, dtypes, and
// the errors for missing or short files, escaping paths and mismatched sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "frontend/tensor_proto.h"
#include "frontend_model_builder.h"
#include "ir/error.h"

namespace kiln::onnx_import {
namespace {

using frontend_test::fresh_temp_dir;
using frontend_test::ModelBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

onnx::TensorProto make_tensor(const std::string& name, int data_type,
                              const std::vector<int64_t>& dims) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(data_type);
  for (int64_t dim : dims) proto.add_dims(dim);
  return proto;
}

template <class T>
std::string as_bytes(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void set_external(onnx::TensorProto& proto, const std::string& location, int64_t offset,
                  int64_t length) {
  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& key, const std::string& value) {
    onnx::StringStringEntryProto* entry = proto.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add("location", location);
  add("offset", std::to_string(offset));
  add("length", std::to_string(length));
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(FrontendTensorTest, TypedFloatData) {
  onnx::TensorProto proto = make_tensor("w", onnx::TensorProto::FLOAT, {2, 2});
  for (float value : {1.5f, -2.0f, 3.0f, 4.25f}) proto.add_float_data(value);
  const Tensor tensor = tensor_from_proto(proto, ".");
  EXPECT_EQ(tensor.type(), (TensorType{DType::kF32, {2, 2}}));
  EXPECT_EQ(tensor.to_floats(), (std::vector<float>{1.5f, -2.0f, 3.0f, 4.25f}));
}

TEST(FrontendTensorTest, TypedInt64AndDoubleData) {
  onnx::TensorProto ints = make_tensor("i", onnx::TensorProto::INT64, {3});
  for (int64_t value : {int64_t{-1}, int64_t{1} << 40, int64_t{7}}) ints.add_int64_data(value);
  EXPECT_EQ(tensor_from_proto(ints, ".").to_ints(),
            (std::vector<int64_t>{-1, int64_t{1} << 40, 7}));
  onnx::TensorProto doubles = make_tensor("d", onnx::TensorProto::DOUBLE, {});
  doubles.add_double_data(0.125);
  const Tensor scalar = tensor_from_proto(doubles, ".");
  EXPECT_EQ(scalar.type(), (TensorType{DType::kF64, {}}));
  EXPECT_EQ(scalar.get_double(0), 0.125);
}

TEST(FrontendTensorTest, Int32DataHoldsSmallTypes) {
  onnx::TensorProto half = make_tensor("h", onnx::TensorProto::FLOAT16, {2});
  half.add_int32_data(0x3C00);  // 1.0
  half.add_int32_data(0xC000);  // -2.0
  EXPECT_EQ(tensor_from_proto(half, ".").to_floats(), (std::vector<float>{1.0f, -2.0f}));

  onnx::TensorProto bf16 = make_tensor("b", onnx::TensorProto::BFLOAT16, {1});
  bf16.add_int32_data(0x4040);  // 3.0
  EXPECT_EQ(tensor_from_proto(bf16, ".").to_floats(), (std::vector<float>{3.0f}));

  onnx::TensorProto int8 = make_tensor("i8", onnx::TensorProto::INT8, {2});
  int8.add_int32_data(-128);
  int8.add_int32_data(127);
  EXPECT_EQ(tensor_from_proto(int8, ".").to_ints(), (std::vector<int64_t>{-128, 127}));

  onnx::TensorProto uint8 = make_tensor("u8", onnx::TensorProto::UINT8, {1});
  uint8.add_int32_data(255);
  EXPECT_EQ(tensor_from_proto(uint8, ".").to_ints(), (std::vector<int64_t>{255}));

  onnx::TensorProto flags = make_tensor("flags", onnx::TensorProto::BOOL, {3});
  for (int value : {1, 0, 1}) flags.add_int32_data(value);
  EXPECT_EQ(tensor_from_proto(flags, ".").to_ints(), (std::vector<int64_t>{1, 0, 1}));
}

TEST(FrontendTensorTest, RawDataIsLittleEndian) {
  onnx::TensorProto floats = make_tensor("w", onnx::TensorProto::FLOAT, {3});
  floats.set_raw_data(as_bytes(std::vector<float>{0.5f, 1.0f, -8.0f}));
  EXPECT_EQ(tensor_from_proto(floats, ".").to_floats(), (std::vector<float>{0.5f, 1.0f, -8.0f}));

  onnx::TensorProto ints = make_tensor("i", onnx::TensorProto::INT32, {2, 1});
  ints.set_raw_data(as_bytes(std::vector<int32_t>{-5, 9}));
  const Tensor tensor = tensor_from_proto(ints, ".");
  EXPECT_EQ(tensor.type(), (TensorType{DType::kI32, {2, 1}}));
  EXPECT_EQ(tensor.to_ints(), (std::vector<int64_t>{-5, 9}));

  onnx::TensorProto half = make_tensor("h", onnx::TensorProto::FLOAT16, {1});
  half.set_raw_data(as_bytes(std::vector<uint16_t>{0x3800}));  // 0.5
  EXPECT_EQ(tensor_from_proto(half, ".").to_floats(), (std::vector<float>{0.5f}));

  onnx::TensorProto flags = make_tensor("flags", onnx::TensorProto::BOOL, {2});
  flags.set_raw_data(std::string("\x00\x07", 2));
  EXPECT_EQ(tensor_from_proto(flags, ".").to_ints(), (std::vector<int64_t>{0, 1}));
}

TEST(FrontendTensorTest, EmptyTensorNeedsNoData) {
  const Tensor tensor = tensor_from_proto(make_tensor("e", onnx::TensorProto::FLOAT, {0, 3}), ".");
  EXPECT_EQ(tensor.type(), (TensorType{DType::kF32, {0, 3}}));
}

TEST(FrontendTensorTest, SizeMismatchNamesTheTensor) {
  onnx::TensorProto typed = make_tensor("w", onnx::TensorProto::FLOAT, {2, 2});
  for (float value : {1.0f, 2.0f, 3.0f}) typed.add_float_data(value);
  EXPECT_THAT(error_of([&] { tensor_from_proto(typed, "."); }),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("3 values in float_data, expected 4")));

  onnx::TensorProto raw = make_tensor("r", onnx::TensorProto::FLOAT, {2});
  raw.set_raw_data("abc");
  EXPECT_THAT(error_of([&] { tensor_from_proto(raw, "."); }),
              AllOf(HasSubstr("tensor 'r'"), HasSubstr("3 bytes in raw_data, expected 8")));
}

TEST(FrontendTensorTest, HugeShapeWithoutDataFailsWithoutAllocating) {
  onnx::TensorProto huge = make_tensor("huge", onnx::TensorProto::FLOAT, {1 << 30, 1 << 30});
  EXPECT_THAT(error_of([&] { tensor_from_proto(huge, "."); }), HasSubstr("tensor 'huge'"));
  onnx::TensorProto overflow =
      make_tensor("overflow", onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_THAT(error_of([&] { tensor_from_proto(overflow, "."); }),
              AllOf(HasSubstr("tensor 'overflow'"), HasSubstr("too many elements")));
  onnx::TensorProto negative = make_tensor("neg", onnx::TensorProto::FLOAT, {-1});
  EXPECT_THAT(error_of([&] { tensor_from_proto(negative, "."); }),
              AllOf(HasSubstr("tensor 'neg'"), HasSubstr("negative")));
}

TEST(FrontendTensorTest, UnsupportedDtypesNameTensorAndType) {
  const std::vector<std::pair<int, std::string>> cases = {
      {onnx::TensorProto::STRING, "STRING"},
      {onnx::TensorProto::UINT16, "UINT16"},
      {onnx::TensorProto::UINT64, "UINT64"},
      {onnx::TensorProto::INT16, "INT16"},
      {onnx::TensorProto::COMPLEX64, "COMPLEX64"},
      {onnx::TensorProto::FLOAT8E4M3FN, "FLOAT8E4M3FN"},
      {onnx::TensorProto::INT4, "INT4"},
      {onnx::TensorProto::UNDEFINED, "UNDEFINED"},
      {12345, "type code 12345"}};
  for (const auto& [type, name] : cases) {
    onnx::TensorProto proto = make_tensor("odd", type, {1});
    EXPECT_THAT(error_of([&] { tensor_from_proto(proto, "."); }),
                AllOf(HasSubstr("tensor 'odd'"), HasSubstr(name), HasSubstr("not supported")))
        << name;
  }
}

TEST(FrontendTensorTest, DtypeMappingRoundTrips) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI64, DType::kI32,
                      DType::kI8, DType::kU8, DType::kBool}) {
    EXPECT_EQ(dtype_from_onnx(dtype_to_onnx(dtype), "test"), dtype) << dtype_name(dtype);
  }
}

TEST(FrontendTensorTest, ExternalDataWithOffset) {
  const std::filesystem::path dir = fresh_temp_dir("external");
  write_file(dir / "weights.bin", "PAD!" + as_bytes(std::vector<float>{1.0f, 2.0f, 3.0f}));
  onnx::TensorProto proto = make_tensor("w", onnx::TensorProto::FLOAT, {3});
  set_external(proto, "weights.bin", 4, 12);
  EXPECT_EQ(tensor_from_proto(proto, dir.string()).to_floats(),
            (std::vector<float>{1.0f, 2.0f, 3.0f}));
}

TEST(FrontendTensorTest, ExternalDataInAModelFile) {
  const std::filesystem::path dir = fresh_temp_dir("external_model");
  std::filesystem::create_directories(dir / "data");
  write_file(dir / "data" / "w.bin", as_bytes(std::vector<int64_t>{4, 5}));
  ModelBuilder builder;
  onnx::TensorProto* w = builder.initializer("w", onnx::TensorProto::INT64, {2});
  set_external(*w, "data/w.bin", 0, 16);
  builder.output("w");
  write_file(dir / "model.onnx", builder.bytes());

  const std::unique_ptr<Graph> graph = import_onnx_file((dir / "model.onnx").string());
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->outputs()[0]->name(), "w");
  EXPECT_EQ(graph->outputs()[0]->data().to_ints(), (std::vector<int64_t>{4, 5}));
}

TEST(FrontendTensorTest, MissingExternalFileNamesTensorAndFile) {
  const std::filesystem::path dir = fresh_temp_dir("external_missing");
  onnx::TensorProto proto = make_tensor("conv.weight", onnx::TensorProto::FLOAT, {3});
  set_external(proto, "missing.bin", 0, 12);
  EXPECT_THAT(
      error_of([&] { tensor_from_proto(proto, dir.string()); }),
      AllOf(HasSubstr("tensor 'conv.weight'"), HasSubstr("missing.bin"), HasSubstr("not found")));
}

TEST(FrontendTensorTest, ShortExternalFileNamesTensorAndFile) {
  const std::filesystem::path dir = fresh_temp_dir("external_short");
  write_file(dir / "short.bin", as_bytes(std::vector<float>{1.0f, 2.0f}));
  onnx::TensorProto proto = make_tensor("w", onnx::TensorProto::FLOAT, {3});
  set_external(proto, "short.bin", 0, 12);
  EXPECT_THAT(error_of([&] { tensor_from_proto(proto, dir.string()); }),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("short.bin"), HasSubstr("too short")));
}

TEST(FrontendTensorTest, ExternalLengthMustMatchTheType) {
  const std::filesystem::path dir = fresh_temp_dir("external_length");
  write_file(dir / "w.bin", as_bytes(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}));
  onnx::TensorProto proto = make_tensor("w", onnx::TensorProto::FLOAT, {3});
  set_external(proto, "w.bin", 0, 16);
  EXPECT_THAT(error_of([&] { tensor_from_proto(proto, dir.string()); }),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("length 16")));
}

TEST(FrontendTensorTest, ExternalPathsMayNotLeaveTheModelDirectory) {
  const std::filesystem::path dir = fresh_temp_dir("external_escape");
  for (const std::string location : {"../secret.bin", "/etc/passwd", "a/../../b.bin"}) {
    onnx::TensorProto proto = make_tensor("w", onnx::TensorProto::FLOAT, {1});
    set_external(proto, location, 0, 4);
    EXPECT_THAT(error_of([&] { tensor_from_proto(proto, dir.string()); }),
                AllOf(HasSubstr("tensor 'w'"), HasSubstr(location)))
        << location;
  }
}

TEST(FrontendTensorTest, ReadsBackendTestPbFiles) {
  const std::filesystem::path dir = fresh_temp_dir("pb");
  onnx::TensorProto proto = make_tensor("input_x", onnx::TensorProto::FLOAT, {2});
  proto.set_raw_data(as_bytes(std::vector<float>{6.0f, 7.0f}));
  write_file(dir / "input_0.pb", proto.SerializeAsString());
  EXPECT_EQ(read_tensor_pb_name((dir / "input_0.pb").string()), "input_x");
  EXPECT_EQ(read_tensor_pb_file((dir / "input_0.pb").string()).to_floats(),
            (std::vector<float>{6.0f, 7.0f}));

  write_file(dir / "bad.pb", "\x0a\xff\xff\xff\xff\x0f");
  EXPECT_THAT(error_of([&] { read_tensor_pb_file((dir / "bad.pb").string()); }),
              AllOf(HasSubstr("bad.pb"), HasSubstr("not a valid ONNX TensorProto")));
}

}  // namespace
}  // namespace kiln::onnx_import
