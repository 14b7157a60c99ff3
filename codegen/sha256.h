// SHA-256, for the kernel cache's keys and its entries' checksums.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kiln::codegen {

std::array<uint8_t, 32> sha256(std::span<const uint8_t> bytes);
// The digest of `text` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view text);

}  // namespace kiln::codegen
