// FNV-1a, 64 bits: the .kiln file's checksum and its kernels' source hashes. Not cryptographic:
// it catches truncation and corruption, not tampering.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace kiln {

inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;

// `hash`, the hash of the bytes before these (kFnv1a64Basis for none), continued over `bytes`.
inline uint64_t fnv1a_64(std::span<const uint8_t> bytes, uint64_t hash = kFnv1a64Basis) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  for (const uint8_t byte : bytes) hash = (hash ^ byte) * kPrime;
  return hash;
}

inline uint64_t fnv1a_64(std::string_view text) {
  return fnv1a_64({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace kiln
