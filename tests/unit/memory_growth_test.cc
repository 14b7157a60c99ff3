// Tests of the soak's memory measurement (tests/runtime/memory_growth.h): the resident set it
// reads sees memory the process touches, and the verdict fails a phase that grew past its
// allowance, naming what grew, by how much and over what.
#include "tests/runtime/memory_growth.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace kiln::test {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr MemoryBytes kAllowed{2 * kMiB, 2 * kMiB};

TEST(MemoryGrowthTest, ResidentSetSeesTouchedMemory) {
  const int64_t before = resident_host_bytes();
  EXPECT_GT(before, 0);
  constexpr size_t kBytes = 64 * kMiB;
  const std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);
  // The block escapes: clang may otherwise drop an allocation that nothing reads.
  asm volatile("" : : "r"(block.get()) : "memory");
  EXPECT_GE(resident_host_bytes() - before, 60 * kMiB);
}

TEST(MemoryGrowthTest, GrowthWithinTheAllowancePasses) {
  const MemoryBytes start{100 * kMiB, 1000 * kMiB};
  EXPECT_EQ(growth_failure("100000 runs", start, start, kAllowed), "");
  EXPECT_EQ(
      growth_failure("100000 runs", start, {start.host + 2 * kMiB, start.gpu + 2 * kMiB}, kAllowed),
      "");
  EXPECT_EQ(
      growth_failure("100000 runs", start, {start.host - 5 * kMiB, start.gpu - 4 * kMiB}, kAllowed),
      "");
}

// One leaked 32-byte allocation a run over 100000 runs, and one leaked 128 KiB arena a cycle
// over 1000 cycles, each fail.
TEST(MemoryGrowthTest, ALeakPastTheAllowanceFailsNamingIt) {
  const MemoryBytes start{100 * kMiB, 1000 * kMiB};
  EXPECT_EQ(growth_failure("100000 runs", start, {start.host + 3200000, start.gpu}, kAllowed),
            "host memory grew by +3.1 MiB (3200000 B) over 100000 runs; 2.0 MiB allowed\n");
  EXPECT_EQ(growth_failure("1000 load/unload cycles", start,
                           {start.host + 2 * kMiB + 1, start.gpu + 1000 * 128 * 1024}, kAllowed),
            "host memory grew by +2.0 MiB (2097153 B) over 1000 load/unload cycles; 2.0 MiB "
            "allowed\nGPU memory grew by +125.0 MiB (131072000 B) over 1000 load/unload cycles; "
            "2.0 MiB allowed\n");
}

TEST(MemoryGrowthTest, FormatsGrowthWithItsSign) {
  EXPECT_EQ(format_growth(0), "+0 B (0 B)");
  EXPECT_EQ(format_growth(3 * kMiB), "+3.0 MiB (3145728 B)");
  EXPECT_EQ(format_growth(-4096), "-4.0 KiB (-4096 B)");
}

}  // namespace
}  // namespace kiln::test
