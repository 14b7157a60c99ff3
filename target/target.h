// kiln::Target: the GPU kernels are generated for. Codegen's emitters and lowering receive it and
// never ask the driver anything; it comes either from the GPU itself (native_target.h, for
// --arch native) or from an architecture name without a GPU (target_for_arch), with the nominal
// figures of that architecture's data-center part.
//
//   arch                 what NVRTC compiles for: "sm_80", "sm_89", "sm_90", "sm_90a", ...
//   tensor cores         mma.sync (as kiln's kernels use it) from sm_80; warpgroup MMA
//                        (wgmma) only on sm_90a, the arch-specific Hopper target
//   TMA                  bulk tensor copies (cp.async.bulk.tensor), sm_90 and newer
//   SMs, shared memory per SM and per block (opt-in maximum), registers, L2, memory bandwidth
//
// A `.kiln` records the archs its kernels were compiled for (Program::archs); loading it on a GPU
// none of them runs on is an InputError naming both (runtime/session.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

enum class TensorCores { kNone, kMmaSync, kWarpgroupMma };
std::string_view tensor_cores_name(TensorCores kind);  // "none", "mma.sync", "wgmma"

struct Target {
  std::string arch;  // "sm_90a"
  int major = 0;     // compute capability
  int minor = 0;
  bool arch_specific = false;  // the "a" suffix: features of exactly this architecture
  std::string device;          // "NVIDIA H100 80GB HBM3", or the nominal part of a named arch
  bool from_device = false;    // read from a GPU (else nominal figures for the name)
  int driver_version = 0;      // of a device's driver, as CUDA writes it (12080: 12.8); else 0

  int sm_count = 0;
  int64_t shared_memory_per_sm = 0;     // bytes
  int64_t shared_memory_per_block = 0;  // bytes, the opt-in maximum of one block
  int registers_per_sm = 0;             // 32-bit registers
  int registers_per_block = 0;
  int max_threads_per_sm = 0;
  int64_t l2_bytes = 0;
  // Peak DRAM bandwidth in GB/s: the part's specification for a named arch, memory clock x bus
  // width for a device.
  double memory_bandwidth_gb_s = 0;

  TensorCores tensor_cores() const;
  bool has_tma() const;
  // One line: "sm_90 (nominal H100 SXM5): 132 SMs, 227 KiB shared memory per block, ...".
  std::string describe() const;
};

// The target of an architecture name, with the nominal figures of the newest known part not newer
// than it: sm_75 a T4, sm_80 an A100 SXM4, sm_86 an A10, sm_89 an L40S, sm_90/sm_90a an H100
// SXM5 (so sm_100 gets a Hopper's figures, with mma.sync tensor cores). Throws InputError on a
// malformed name; whether NVRTC compiles for the arch is checked when compiling.
Target target_for_arch(const std::string& arch);

}  // namespace kiln
