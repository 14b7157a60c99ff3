// The checks of a step's library call (library_gemm_validation.h).
#include "runtime/library_gemm_validation.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "ir/error.h"
#include "runtime/memory_plan.h"

namespace kiln {
namespace {

// The checks of one step's call; `what` names the step.
class LibraryGemmCheck {
 public:
  LibraryGemmCheck(const Program& program, size_t index, std::string what)
      : program_(program),
        step_(program.steps[index]),
        gemm_(*step_.library),
        what_(std::move(what)) {}

  void run(const std::vector<int>& written) {
    const bool d_written = std::find(written.begin(), written.end(), gemm_.d) != written.end();
    for (const auto& [name, position, optional] :
         {Operand{"A", gemm_.a, false}, Operand{"B", gemm_.b, false}, Operand{"D", gemm_.d, false},
          Operand{"C", gemm_.c, true}, Operand{"bias", gemm_.bias, true}}) {
      if (optional && position == -1) continue;
      if (position < 0 || position >= std::ssize(step_.args)) {
        fail("operand {} is argument {}; the step passes {}", name, position, step_.args.size());
      }
      const bool is_d = std::string_view(name) == "D";
      const bool in_written = std::find(written.begin(), written.end(), position) != written.end();
      if (!is_d && in_written)
        fail("operand {} is argument {}, which the kernel writes", name, position);
    }
    if (!d_written) fail("D is argument {}, which the kernel does not write", gemm_.d);
    const DType a = dtype(gemm_.a), b = dtype(gemm_.b), d = dtype(gemm_.d);
    if (!is_16_bit_float(a) || b != a || d != a) {
      fail("A, B and D are {}, {} and {}; the call takes f16 or bf16 for all three", dtype_name(a),
           dtype_name(b), dtype_name(d));
    }
    if (gemm_.c != -1 && dtype(gemm_.c) != d) {
      fail("C is {}, D {}", dtype_name(dtype(gemm_.c)), dtype_name(d));
    }
    if (gemm_.bias != -1 && !is_16_bit_float(dtype(gemm_.bias)) &&
        dtype(gemm_.bias) != DType::kF32) {
      fail("the bias is {}; the call takes f16, bf16 or f32", dtype_name(dtype(gemm_.bias)));
    }
    for (const auto& [name, value] :
         {std::pair{"m", gemm_.m}, {"n", gemm_.n}, {"k", gemm_.k}, {"batch", gemm_.batch}}) {
      if (value < 1) fail("{} is {}", name, value);
    }
    for (const auto& [name, value] : {std::pair{"A", gemm_.batch_stride_a},
                                      {"B", gemm_.batch_stride_b},
                                      {"D", gemm_.batch_stride_d}}) {
      if (value < 0) fail("{}'s batch stride is {}", name, value);
    }
    if (gemm_.batch > std::numeric_limits<int32_t>::max()) {
      fail("a batch of {} (cuBLASLt counts it in 32 bits)", gemm_.batch);
    }
    // Each of D's matrices its own elements: batches written over each other would race.
    if (gemm_.batch > 1 && static_cast<__int128>(gemm_.batch_stride_d) <
                               static_cast<__int128>(gemm_.ldd) * (gemm_.n - 1) + gemm_.m) {
      fail("D's matrices overlap (batch stride {} for {} columns of leading dimension {})",
           gemm_.batch_stride_d, gemm_.n, gemm_.ldd);
    }
    // A is stored m × k (k × m transposed), B k × n (n × k transposed), D and C m × n.
    check_extent("A", gemm_.a, gemm_.transpose_a ? gemm_.k : gemm_.m,
                 gemm_.transpose_a ? gemm_.m : gemm_.k, gemm_.lda, gemm_.batch_stride_a);
    check_extent("B", gemm_.b, gemm_.transpose_b ? gemm_.n : gemm_.k,
                 gemm_.transpose_b ? gemm_.k : gemm_.n, gemm_.ldb, gemm_.batch_stride_b);
    check_extent("D", gemm_.d, gemm_.m, gemm_.n, gemm_.ldd, gemm_.batch_stride_d);
    if (gemm_.c != -1)
      check_extent("C", gemm_.c, gemm_.m, gemm_.n, gemm_.ldd, gemm_.batch_stride_d);
    if (gemm_.bias != -1) check_extent("the bias", gemm_.bias, gemm_.m, 1, gemm_.m, 0);
    check_workspace();
  }

 private:
  struct Operand {
    const char* name;
    int position;
    bool optional;
  };

  template <class... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw InputError(fmt::format("{}: its library call: {}", what_,
                                 fmt::format(format, std::forward<Args>(args)...)));
  }

  const ProgramBuffer& buffer(int position) const {
    return program_.buffers[static_cast<size_t>(step_.args[static_cast<size_t>(position)])];
  }
  DType dtype(int position) const { return buffer(position).type.dtype; }

  // A `rows` × `columns` column-major matrix with leading dimension `ld`, `batch` of them
  // `stride` apart, inside the buffer at `position`.
  void check_extent(const char* name, int position, int64_t rows, int64_t columns, int64_t ld,
                    int64_t stride) const {
    if (ld < rows) fail("{}'s leading dimension {} is below its {} rows", name, ld, rows);
    const __int128 last = static_cast<__int128>(gemm_.batch - 1) * stride +
                          static_cast<__int128>(columns - 1) * ld + (rows - 1);
    const int64_t elements = buffer(position).type.num_elements();
    if (last >= elements) {
      fail("{} reaches element {} of a buffer of {}", name, static_cast<long double>(last),
           elements);
    }
  }

  // The workspace lies in the arena, aligned, and shares no byte with the intermediates the
  // step passes (it would write them while reading them). Other steps' intermediates and the
  // other calls' workspaces may share its bytes: the session's step graph orders the steps that
  // touch the same arena bytes (step_dependencies.h, ArenaSharing::kOrdersSteps).
  void check_workspace() const {
    const int64_t bytes = gemm_.workspace_bytes, offset = gemm_.workspace_offset;
    if (bytes < 0 || bytes > kMaxLibraryWorkspaceBytes) {
      fail("a workspace of {} bytes (at most {})", bytes, kMaxLibraryWorkspaceBytes);
    }
    if (bytes == 0) return;
    if (offset < 0 || offset % kArenaAlignment != 0 || offset > program_.arena_bytes - bytes) {
      fail(
          "its workspace of {} bytes at arena offset {} is not an aligned part of the arena "
          "of {} bytes",
          bytes, offset, program_.arena_bytes);
    }
    for (const int arg : step_.args) {
      const ProgramBuffer& buffer = program_.buffers[static_cast<size_t>(arg)];
      if (buffer.kind == ProgramBuffer::Kind::kIntermediate && buffer.offset < offset + bytes &&
          offset < buffer.offset + static_cast<int64_t>(buffer.type.num_bytes())) {
        fail("its workspace shares arena bytes with its argument buffer {} ('{}')", arg,
             buffer.name);
      }
    }
  }

  const Program& program_;
  const ProgramStep& step_;
  const ProgramLibraryGemm& gemm_;
  std::string what_;
};

}  // namespace

void check_library_gemm(const Program& program, size_t step, const std::vector<int>& written) {
  if (!program.steps[step].library) return;
  LibraryGemmCheck(
      program, step,
      fmt::format("step {} (kernel '{}')", step, program.kernels[program.steps[step].kernel].name))
      .run(written);
}

}  // namespace kiln
