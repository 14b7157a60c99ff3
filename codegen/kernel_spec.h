// An emitted kernel before it has a name: its code, parameters and launch geometry, as the
// emitters of the emitter table (emitter_table.h) produce it. Lowering names it after its code,
// so equal code gets one name and one compiled kernel however many steps launch it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_body.h"
#include "codegen/kernel_params.h"
#include "codegen/library_gemm.h"
#include "runtime/kernel_header.h"

namespace kiln::codegen {

struct KernelSpec {
  std::string kind;              // "loop", "reduction", "copy", or a single node's op
  std::vector<std::string> ops;  // the ops it computes, each once
  std::string definitions;       // types the function uses, written before it
  std::string body;              // the function's statements, indented one level
  KernelParams params;
  uint32_t max_threads = 256;  // __launch_bounds__: the block size it is launched with
  // __launch_bounds__'s blocks an SM must hold (0: none named); 1 caps the registers at a
  // block's share, as setmaxnreg needs.
  uint32_t min_blocks = 0;
  // __cluster_dims__(1, 1, cluster_blocks): consecutive blocks along z form a thread-block
  // cluster (sm_90; 0: none).
  uint32_t cluster_blocks = 0;
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory (static __shared__ is in the code)
  // How it computes, for people ("wgmma 128x192x64 tile, 4 stages"), and the floating-point
  // operations a launch does (0: not counted); both go into the source's header
  // (runtime/kernel_header.h), not into its code, so they do not change its name.
  std::string tactic;
  int64_t flops = 0;
  // TMA tensor maps the kernel takes by value after its pointer parameters, as `const
  // __grid_constant__ kiln_tensor_map g_map0, g_map1, ...`: each of the buffer of the pointer
  // parameter named `parameter` ("in0", "const1"), its position filled in by kernel_source,
  // which states the maps in the header (runtime/kernel_header.h) for the session to encode.
  struct TensorMap {
    std::string parameter;
    KernelTensorMap map;
  };
  std::vector<TensorMap> tensor_maps;
  // The same computed by a library call where one can be made (the "cuBLASLt" tactic); the
  // kernel stands in where it cannot (runtime/program.h, ProgramLibraryGemm).
  std::optional<LibraryGemm> library;
};

// Starts a spec for `body`: its kind and ops, blocks of `threads` (also the launch bound) on
// `grid`, and one parameter for each body input and then each output; returns the outputs'
// parameter names, in order.
std::vector<std::string> begin_spec(KernelSpec& spec, const KernelBody& body, uint32_t threads,
                                    std::array<uint32_t, 3> grid);
// As begin_spec, without the output parameters (a kernel that writes only a workspace).
void begin_spec_reading(KernelSpec& spec, const KernelBody& body, uint32_t threads,
                        std::array<uint32_t, 3> grid);

// The kernel's code under `name`: the device functions it calls, its definitions and the
// extern "C" __global__ function. Two specs with equal code(spec, "") compute the same.
std::string kernel_code(const KernelSpec& spec, const std::string& name);

// "<kind>_<up to three ops>_<hash of the code>", e.g. "loop_add_relu_1f3a9c2e".
std::string kernel_name(const KernelSpec& spec);

// The source NVRTC compiles: a comment naming the kernel, what it computes, its tactic and flops
// per launch where the spec has them, the ONNX nodes of each step that launches it, its
// parameter count and the positions of the parameters it writes (outputs and workspace:
// runtime/kernel_header.h), then kernel_code(spec, name).
std::string kernel_source(const KernelSpec& spec, const std::string& name,
                          const std::vector<std::vector<std::string>>& provenance_of_steps);

}  // namespace kiln::codegen
