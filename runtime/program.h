// A compiled program: what `kiln compile` produces from a fused graph and what a `.kiln` file
// stores. The contract between codegen/ (which fills kernels, buffers and steps) and runtime/
// (which plans memory, serializes, loads, validates and executes).
//
//   buffers  one per tensor the program touches: graph inputs and outputs, weights (constants,
//            their bytes in `weights`), and intermediates. A view (a reshape) is not a buffer:
//            its users get the buffer of the value it views.
//   kernels  one per distinct kernel: its name, CUDA source, and the compiled CUBIN per target
//            arch plus PTX.
//   steps    the launch schedule in order: which kernel, the launch geometry, and the
//            arguments as buffer indices (each kernel's parameters are `T*` pointers in the same
//            order; kernels take no other parameters: shapes are compiled in); a step may
//            instead be computed by a library call (cuBLASLt) on the same arguments.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

struct ProgramBuffer {
  enum class Kind { kInput, kOutput, kWeight, kIntermediate };
  Kind kind = Kind::kIntermediate;
  std::string name;  // the IR value's name (inputs and outputs: the graph's names)
  TensorType type;
  // Inputs and outputs: position in the graph's signature. Weights: byte offset in
  // Program::weights (aligned to kWeightAlignment). Intermediates: byte offset in the arena,
  // assigned by the memory planner (runtime/memory_plan.h). -1 until assigned.
  int64_t offset = -1;
};
// A graph output that is also a graph input, a weight, or another output gets its own output
// buffer, filled by a copy kernel that codegen adds, so every output buffer is written by
// exactly one step.

inline constexpr int64_t kWeightAlignment = 256;

// A program's weight bytes, shared by the programs that hold the same ones (a dynamic program's
// variants, autotuning's rounds): copying a Program copies a reference to them, and writing
// through mutable_bytes (or assign, resize, clear) first gives this program bytes of its own when
// another holds them too (copy on write). Not for writing from several threads at once.
class WeightBytes {
 public:
  WeightBytes() = default;
  explicit WeightBytes(std::vector<uint8_t> bytes)
      : bytes_(std::make_shared<std::vector<uint8_t>>(std::move(bytes))) {}

  size_t size() const { return bytes_ ? bytes_->size() : 0; }
  bool empty() const { return size() == 0; }
  const uint8_t* data() const { return bytes().data(); }
  const std::vector<uint8_t>& bytes() const {
    static const std::vector<uint8_t> kNone;
    return bytes_ ? *bytes_ : kNone;
  }
  std::vector<uint8_t>::const_iterator begin() const { return bytes().begin(); }
  std::vector<uint8_t>::const_iterator end() const { return bytes().end(); }

  std::vector<uint8_t>& mutable_bytes() {
    if (!bytes_) {
      bytes_ = std::make_shared<std::vector<uint8_t>>();
    } else if (bytes_.use_count() > 1) {
      bytes_ = std::make_shared<std::vector<uint8_t>>(*bytes_);
    }
    return *bytes_;
  }
  template <class... Args>
  void assign(Args&&... args) {
    mutable_bytes().assign(std::forward<Args>(args)...);
  }
  void resize(size_t size, uint8_t value = 0) { mutable_bytes().resize(size, value); }
  void clear() { bytes_.reset(); }

  // Whether both hold the very same bytes (not merely equal ones).
  bool shares_bytes_with(const WeightBytes& other) const {
    return bytes_ != nullptr && bytes_ == other.bytes_;
  }
  friend bool operator==(const WeightBytes& a, const WeightBytes& b) {
    return a.bytes_ == b.bytes_ || a.bytes() == b.bytes();
  }

 private:
  std::shared_ptr<std::vector<uint8_t>> bytes_;
};

struct KernelBinary {
  std::string arch;            // "sm_80", "sm_90", ...
  std::vector<uint8_t> cubin;  // NVRTC's CUBIN for that arch
};

struct ProgramKernel {
  std::string name;                     // the extern "C" __global__ function
  std::string source;                   // what NVRTC compiled (comment names the ONNX nodes)
  std::vector<std::string> provenance = {};  // the ONNX nodes the kernel covers
  std::vector<KernelBinary> binaries = {};   // one per target arch
  std::string ptx = "";                      // for GPUs newer than every target arch
};

// A step computed by cuBLASLt's matmul rather than by its kernel, as measurement chose
// (codegen/library_gemm.h), in cuBLASLt's column-major terms:
//   D = act(alpha · op(A) · op(B) + beta · C + bias),  D m × n (leading dimension ldd), op(A)
//   m × k, op(B) k × n, C laid out as D, bias one value per row of D, act ReLU or none,
//   `batch` such products at the batch strides (elements). Sums in f32.
// Its operands are positions in the step's args, whose buffers give their dtypes: the step's
// kernel computes the same with the same arguments, and runs where cuBLASLt cannot (not
// installed, no algorithm for this GPU: runtime/library_gemm_plan.h).
struct ProgramLibraryGemm {
  int a = -1, b = -1, d = -1;
  int c = -1, bias = -1;  // -1: none
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1, batch_stride_a = 0, batch_stride_b = 0, batch_stride_d = 0;
  float alpha = 1, beta = 0;
  bool relu = false;
  // Scratch memory cuBLASLt may use, at this arena offset (the memory planner's, after the
  // buffers; -1 until planned).
  int64_t workspace_bytes = 0;
  int64_t workspace_offset = -1;
  bool operator==(const ProgramLibraryGemm&) const = default;
};

struct ProgramStep {
  int kernel = 0;  // index into Program::kernels
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;
  std::vector<int> args;  // indices into Program::buffers, in the kernel's parameter order
  std::optional<ProgramLibraryGemm> library = std::nullopt;  // cuBLASLt's, where it can run
};

struct Program {
  std::string name;  // the graph's name
  std::vector<std::string> archs;
  std::vector<ProgramBuffer> buffers;
  std::vector<int> inputs;   // buffer indices, in the graph's input order
  std::vector<int> outputs;  // buffer indices, in the graph's output order
  std::vector<ProgramKernel> kernels;
  std::vector<ProgramStep> steps;
  WeightBytes weights;           // every weight buffer's bytes, at its offset
  int64_t arena_bytes = 0;       // intermediates' arena size, from the memory planner
};

}  // namespace kiln
