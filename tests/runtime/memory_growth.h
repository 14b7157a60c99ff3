// Memory growth over a soak (session_soak.cc): the process's resident host memory, and the verdict
// on how much host and GPU memory grew over a phase against what the phase may grow. Kept apart
// from the GPU so the verdict is unit-tested anywhere (tests/unit/memory_growth_test.cc).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::test {

// Bytes of host memory (the process's resident set) and of GPU memory (the device's used memory,
// total - free), sampled together; or the growth allowed between two samples.
struct MemoryBytes {
  int64_t host = 0;
  int64_t gpu = 0;
};

// The process's resident set in bytes, from /proc/self/statm.
int64_t resident_host_bytes();

// "+3.1 MiB (3276800 B)", "-4.0 KiB (-4096 B)", "+0 B (0 B)".
std::string format_growth(int64_t bytes);

// "" when neither host nor GPU memory grew from `start` to `end` by more than `allowed`; else one
// line for each that did, e.g. "host memory grew by +3.1 MiB (3276800 B) over 100000 runs; 2.0
// MiB allowed". `span` names what the phase repeated ("100000 runs").
std::string growth_failure(const std::string& span, const MemoryBytes& start,
                           const MemoryBytes& end, const MemoryBytes& allowed);

}  // namespace kiln::test
