// Little-endian writing into a growing byte string: the .kiln encoder's counterpart of
// ByteReader (byte_reader.h), with the same string (u32 length) and blob (u64 length) layouts.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

class ByteWriter {
 public:
  size_t size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  std::vector<uint8_t> release() { return std::move(bytes_); }

  void u8(uint8_t value) { bytes_.push_back(value); }
  void u32(uint32_t value) { little_endian(value, 4); }
  void u64(uint64_t value) { little_endian(value, 8); }
  void i64(int64_t value) { little_endian(static_cast<uint64_t>(value), 8); }
  void string(std::string_view text) {
    u32(static_cast<uint32_t>(text.size()));
    bytes_.insert(bytes_.end(), text.begin(), text.end());
  }
  void blob(std::span<const uint8_t> content) {
    u64(content.size());
    raw(content);
  }
  void raw(std::span<const uint8_t> content) {
    bytes_.insert(bytes_.end(), content.begin(), content.end());
  }
  // Zeros until the size is a multiple of `alignment`.
  void pad_to(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  }

 private:
  void little_endian(uint64_t value, int size) {
    for (int i = 0; i < size; ++i) bytes_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }

  std::vector<uint8_t> bytes_;
};

}  // namespace kiln
