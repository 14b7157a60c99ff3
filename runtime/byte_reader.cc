// ByteReader: every read checks the bytes left first (byte_reader.h).
#include "runtime/byte_reader.h"

#include <fmt/format.h>

#include "ir/error.h"

namespace kiln {
namespace {

// The little-endian unsigned integer in `bytes`.
uint64_t little_endian(std::span<const uint8_t> bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

std::span<const uint8_t> ByteReader::bytes(uint64_t size, const std::string& what) {
  if (size > remaining()) {
    throw InputError(
        fmt::format("truncated: expected {} bytes of {} at offset {}, file has {} more", size, what,
                    offset_, remaining()));
  }
  const std::span<const uint8_t> view = bytes_.subspan(offset_, static_cast<size_t>(size));
  offset_ += static_cast<size_t>(size);
  return view;
}

uint8_t ByteReader::u8(const std::string& what) { return bytes(1, what)[0]; }

uint32_t ByteReader::u32(const std::string& what) {
  return static_cast<uint32_t>(little_endian(bytes(4, what)));
}

uint64_t ByteReader::u64(const std::string& what) { return little_endian(bytes(8, what)); }

int64_t ByteReader::i64(const std::string& what) { return static_cast<int64_t>(u64(what)); }

std::string ByteReader::string(const std::string& what) {
  const uint32_t length = u32("the length of " + what);
  const std::span<const uint8_t> text = bytes(length, what);
  return std::string(text.begin(), text.end());
}

std::vector<uint8_t> ByteReader::blob(const std::string& what) {
  const uint64_t size = u64("the size of " + what);
  const std::span<const uint8_t> content = bytes(size, what);
  return std::vector<uint8_t>(content.begin(), content.end());
}

uint32_t ByteReader::count(const std::string& what, size_t min_item_bytes) {
  const size_t count_offset = offset_;
  const uint32_t count = u32("the number of " + what);
  if (static_cast<uint64_t>(count) * min_item_bytes > remaining()) {
    throw InputError(fmt::format(
        "truncated: {} {} at offset {} need at least {} bytes, file has {} more", count, what,
        count_offset, static_cast<uint64_t>(count) * min_item_bytes, remaining()));
  }
  return count;
}

}  // namespace kiln
