// Loading a program onto a device (loaded_program.h): its kernels, their parameters and shared
// memory, its weights, its step graph.
#include "runtime/loaded_program.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/error.h"
#include "runtime/device_memory_fit.h"
#include "runtime/kernel_header.h"
#include "runtime/kernel_image.h"

namespace kiln {
namespace {

// The flag a kernel sets when an index read from data is out of range (codegen's
// kiln_resolve_index).
constexpr const char* kIndexFlagName = "kiln_bad_index";

// Shared memory a block gets without opting in to more.
constexpr uint32_t kDefaultSharedBytes = 48 * 1024;

void load_kernels(LoadedProgram& loaded) {
  const Program& program = loaded.program;
  const ComputeCapability capability = current_compute_capability();
  const std::string arch = gpu_arch_name(capability.major, capability.minor);
  for (const ProgramKernel& kernel : program.kernels) {
    const KernelImage image = choose_kernel_image(kernel, capability.major, capability.minor);
    cudaLibrary_t library = nullptr;
    cudaError_t status =
        cudaLibraryLoadData(&library, image.code, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw InputError(fmt::format("kernel '{}': cannot load its {} on this {} GPU: {}",
                                   kernel.name, image.description, arch,
                                   cudaGetErrorString(status)));
    }
    loaded.libraries.emplace_back(library);
    cudaKernel_t handle = nullptr;
    status = cudaLibraryGetKernel(&handle, library, kernel.name.c_str());
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw InputError(fmt::format("kernel '{}': its {} has no kernel of that name ({})",
                                   kernel.name, image.description, cudaGetErrorString(status)));
    }
    loaded.kernels.push_back(handle);
    loaded.launches_early.push_back(kernel_waits_for_prior_grids(kernel) && image.arch_major >= 9);
    if (kernel.source.find(kIndexFlagName) != std::string::npos) {
      void* flag = nullptr;
      size_t bytes = 0;
      status = cudaLibraryGetGlobal(&flag, &bytes, library, kIndexFlagName);
      if (status != cudaSuccess || bytes != sizeof(unsigned int)) {
        cudaGetLastError();
        throw InputError(fmt::format("kernel '{}': its {} has no {} of {} bytes ({})", kernel.name,
                                     image.description, kIndexFlagName, sizeof(unsigned int),
                                     cudaGetErrorString(status)));
      }
      loaded.index_flags.emplace_back(static_cast<int>(loaded.kernels.size() - 1),
                                      static_cast<unsigned int*>(flag));
    }
  }
}

// Each kernel takes pointers, as many as each step that launches it passes (cudaLaunchKernel
// reads one argument per parameter: a short list would be read past its end), then the 128-byte
// tensor maps its header states (the session appends them). A kernel whose
// source states its parameter count (runtime/kernel_header.h; every kernel codegen writes, and
// validate_program has checked the steps against it) has exactly those parameters asked for, so
// no query fails and compute-sanitizer sees no API error (compiled code with more parameters
// than its source states would pass unseen; the source hash and the file's checksum stand
// between them). Other kernels (sources written by
// hand, stating no tensor maps) are counted by asking for one past the last, which fails once
// per kernel by design.
void check_kernel_parameters(const LoadedProgram& loaded) {
  const Program& program = loaded.program;
  std::vector<size_t> parameter_counts;
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const ProgramKernel& kernel = program.kernels[i];
    const int recorded = kernel_parameter_count(kernel);
    const size_t maps = loaded.tensor_maps[i].size();
    const void* function = reinterpret_cast<const void*>(loaded.kernels[i]);
    size_t count = 0;
    for (;; ++count) {
      if (recorded >= 0 && count == static_cast<size_t>(recorded) + maps) break;
      size_t offset = 0;
      size_t size = 0;
      if (cudaFuncGetParamInfo(function, count, &offset, &size) != cudaSuccess) {
        cudaGetLastError();
        if (recorded < 0) break;  // one past the last: counted
        throw InputError(
            fmt::format("kernel '{}': its compiled code has {} parameters, its "
                        "source says {}",
                        kernel.name, count, static_cast<size_t>(recorded) + maps));
      }
      const bool map = recorded >= 0 && count >= static_cast<size_t>(recorded);
      if (map && size != sizeof(TensorMapBytes)) {
        throw InputError(
            fmt::format("kernel '{}': parameter {} takes {} bytes; a tensor map "
                        "takes {}",
                        kernel.name, count, size, sizeof(TensorMapBytes)));
      }
      if (!map && size != sizeof(void*)) {
        throw InputError(
            fmt::format("kernel '{}': parameter {} takes {} bytes; kiln kernels take "
                        "only pointers",
                        kernel.name, count, size));
      }
    }
    parameter_counts.push_back(count - (recorded >= 0 ? maps : 0));
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    if (step.args.size() != parameter_counts[step.kernel]) {
      throw InputError(fmt::format("step {} (kernel '{}') passes {} arguments; the kernel takes {}",
                                   i, program.kernels[step.kernel].name, step.args.size(),
                                   parameter_counts[step.kernel]));
    }
  }
}

// Lets each kernel that some step launches with more than 48 KiB of shared memory have it.
void allow_shared_memory(const LoadedProgram& loaded) {
  const Program& program = loaded.program;
  std::vector<uint32_t> most_shared(program.kernels.size(), 0);
  for (const ProgramStep& step : program.steps) {
    most_shared[step.kernel] = std::max(most_shared[step.kernel], step.shared_bytes);
  }
  const int limit = current_device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    if (most_shared[i] <= kDefaultSharedBytes) continue;
    if (most_shared[i] > static_cast<uint32_t>(limit)) {
      throw InputError(
          fmt::format("kernel '{}' is launched with {} bytes of shared memory; this "
                      "GPU allows {}",
                      program.kernels[i].name, most_shared[i], limit));
    }
    cuda_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(loaded.kernels[i]),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(most_shared[i])),
               "cudaFuncSetAttribute for kernel '" + program.kernels[i].name + "'");
  }
}

// On a stream of its own, then synchronized: a cudaMemcpy from pageable memory may return before
// its DMA lands, and a session's first run may be on a caller's stream that does not wait for
// the legacy default stream.
void upload_weights(LoadedProgram& loaded) {
  const std::vector<uint8_t>& bytes = loaded.program.weights.bytes();
  loaded.weights = allocate_device_memory(bytes.size(), "the weights");
  if (bytes.empty()) return;
  const CudaStream stream = create_stream();
  cuda_check(cudaMemcpyAsync(loaded.weights.get(), bytes.data(), bytes.size(),
                             cudaMemcpyHostToDevice, stream.get()),
             "uploading the weights");
  cuda_check(cudaStreamSynchronize(stream.get()), "uploading the weights");
}

// Plans each library call on the current device; a step whose call cannot run keeps its kernel,
// and its note says why.
void plan_library_calls(LoadedProgram& loaded) {
  const Program& program = loaded.program;
  loaded.library_plans.resize(program.steps.size());
  loaded.library_notes.resize(program.steps.size());
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    if (!step.library) continue;
    const auto type_at = [&](int position) {
      return program.buffers[static_cast<size_t>(step.args[static_cast<size_t>(position)])]
          .type.dtype;
    };
    const ProgramLibraryGemm& call = *step.library;
    std::string why;
    loaded.library_plans[i] = LibraryGemmPlan::create(
        call, type_at(call.a), call.bias >= 0 ? type_at(call.bias) : type_at(call.a), why);
    loaded.library_notes[i] =
        loaded.library_plans[i] ? loaded.library_plans[i]->description() : why;
  }
}

}  // namespace

LoadedProgram::~LoadedProgram() {
  const CurrentDevice current(device, std::nothrow);
  library_plans.clear();
  libraries.clear();
  weights.reset();
}

std::shared_ptr<const LoadedProgram> load_program(
    Program program, int device, const std::shared_ptr<const LoadedProgram>& weights_of) {
  if (weights_of &&
      (weights_of->device != device || weights_of->program.weights != program.weights)) {
    throw InternalError("load_program: weights shared between programs that differ in them");
  }
  const CurrentDevice current(device);
  auto loaded = std::make_shared<LoadedProgram>();
  loaded->program = std::move(program);
  loaded->device = device;
  cudaDeviceProp properties{};
  cuda_check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  loaded->device_description = fmt::format("device {}: {} ({})", device, properties.name,
                                           gpu_arch_name(properties.major, properties.minor));
  size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // Reading another program's weights, it needs its arena and buffers only.
  if (const std::string shortfall = weights_of
                                        ? shared_session_shortfall(loaded->program, free_bytes)
                                        : device_memory_shortfall(loaded->program, free_bytes);
      !shortfall.empty()) {
    throw InputError(shortfall + " (" + loaded->device_description + ")");
  }
  load_kernels(*loaded);
  for (const ProgramKernel& kernel : loaded->program.kernels) {
    loaded->tensor_maps.push_back(
        kernel_tensor_maps(kernel).value_or(std::vector<KernelTensorMap>()));
  }
  check_kernel_parameters(*loaded);
  allow_shared_memory(*loaded);
  if (weights_of) {
    loaded->weights = weights_of->weights;
  } else {
    upload_weights(*loaded);
  }
  plan_library_calls(*loaded);
  loaded->dependencies = step_dependencies(loaded->program, ArenaSharing::kOrdersSteps);
  return loaded;
}

}  // namespace kiln
