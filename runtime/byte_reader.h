// Bounds-checked little-endian reading of a byte string (the .kiln decoder's cursor). Every read
// names what it reads, so running past the end throws an InputError such as
// "truncated: expected 4096 bytes of weights at offset 123, file has 80 more".
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln {

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  uint8_t u8(const std::string& what);
  uint32_t u32(const std::string& what);
  uint64_t u64(const std::string& what);
  int64_t i64(const std::string& what);
  // A u32 length, then that many bytes.
  std::string string(const std::string& what);
  // A u64 length, then that many bytes.
  std::vector<uint8_t> blob(const std::string& what);
  // A u32 count of items that take at least `min_item_bytes` each; throws if the rest of the
  // input cannot hold that many (so a corrupt count never allocates).
  uint32_t count(const std::string& what, size_t min_item_bytes);
  // `size` bytes, returned as a view into the input.
  std::span<const uint8_t> bytes(uint64_t size, const std::string& what);

 private:
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
};

}  // namespace kiln
