// The GPU session (session.h): loading a program onto the device, launching its steps, capturing
// and replaying the CUDA graph, timing.
#include "runtime/session.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "ir/error.h"
#include "runtime/cuda_api.h"
#include "runtime/device_memory_fit.h"
#include "runtime/kernel_header.h"
#include "runtime/kernel_image.h"
#include "runtime/program_io.h"
#include "runtime/program_validation.h"

namespace kiln {
namespace {

// Shared memory a block gets without opting in to more.
constexpr uint32_t kDefaultSharedBytes = 48 * 1024;

// The device pointers of the program's inputs and outputs, in signature order, for one run.
struct Bindings {
  std::vector<void*> inputs;
  std::vector<void*> outputs;
  bool operator==(const Bindings&) const = default;
};

const ProgramBuffer& signature_buffer(const Program& program, const std::vector<int>& signature,
                                      size_t position) {
  return program.buffers[signature[position]];
}

void check_host_inputs(const Program& program, const std::vector<Tensor>& inputs) {
  if (inputs.size() != program.inputs.size()) {
    std::string names;
    for (size_t i = 0; i < program.inputs.size(); ++i) {
      names += (i ? ", " : "") + signature_buffer(program, program.inputs, i).name;
    }
    throw InputError(fmt::format("the program takes {} inputs ({}), got {}", program.inputs.size(),
                                 names, inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramBuffer& input = signature_buffer(program, program.inputs, i);
    if (inputs[i].type() != input.type) {
      throw InputError(fmt::format("input '{}': the program takes {}, got {}", input.name,
                                   type_to_string(input.type), type_to_string(inputs[i].type())));
    }
  }
}

void check_device_pointers(const Program& program, const std::vector<int>& signature,
                           const std::vector<void*>& pointers, const char* what) {
  if (pointers.size() != signature.size()) {
    throw InputError(fmt::format("run_device: {} {} pointers for the program's {} {}s",
                                 pointers.size(), what, signature.size(), what));
  }
  for (size_t i = 0; i < pointers.size(); ++i) {
    const ProgramBuffer& buffer = signature_buffer(program, signature, i);
    if (pointers[i] == nullptr && buffer.type.num_bytes() != 0) {
      throw InputError(fmt::format("{} '{}': the device pointer is null", what, buffer.name));
    }
    // Kernels read inputs 16 bytes at a time (vectorized loop kernels, cp.async in contraction
    // kernels) and may write outputs so.
    if (reinterpret_cast<uintptr_t>(pointers[i]) % kDevicePointerAlignment != 0) {
      throw InputError(fmt::format("{} '{}': the device pointer is not {}-byte aligned", what,
                                   buffer.name, kDevicePointerAlignment));
    }
  }
}

}  // namespace

struct Session::State {
  Program program;
  int device = 0;
  std::string device_description;
  std::vector<CudaLibrary> libraries;
  std::vector<cudaKernel_t> kernels;  // per program kernel
  DeviceMemory weights;
  DeviceMemory arena;
  CudaStream stream;
  // The session's own input and output buffers, for runs on host tensors.
  std::vector<DeviceMemory> own_memory;
  std::optional<Bindings> own_bindings;
  // The captured steps, and the pointers they were captured with.
  CudaGraphExec graph;
  Bindings graph_bindings;

  void load_kernels();
  void check_kernel_parameters();
  void allow_shared_memory();
  void upload_weights();
  const Bindings& session_buffers();
  void* buffer_pointer(int index, const Bindings& bindings) const;
  void launch_steps(const Bindings& bindings, bool check_each_step,
                    const std::function<void(size_t)>& after_step = {});
  CudaGraph capture_steps(const Bindings& bindings,
                          const std::function<void(size_t)>& at_boundary = {});
  void capture_graph(const Bindings& bindings);
  void execute(const Bindings& bindings);
  void synchronize(const std::string& what);
};

void Session::State::load_kernels() {
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
    libraries.emplace_back(library);
    cudaKernel_t handle = nullptr;
    status = cudaLibraryGetKernel(&handle, library, kernel.name.c_str());
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw InputError(fmt::format("kernel '{}': its {} has no kernel of that name ({})",
                                   kernel.name, image.description, cudaGetErrorString(status)));
    }
    kernels.push_back(handle);
  }
}

// Each kernel takes only pointers, as many as each step that launches it passes (cudaLaunchKernel
// reads one argument per parameter: a short list would be read past its end). A kernel whose
// source states its parameter count (runtime/kernel_header.h; every kernel codegen writes, and
// validate_program has checked the steps against it) has exactly those parameters asked for, so
// no query fails and compute-sanitizer sees no API error (compiled code with more parameters
// than its source states would pass unseen; the source hash and the file's checksum stand
// between them). Other kernels (sources written by
// hand) are counted by asking for one past the last, which fails once per kernel by design.
void Session::State::check_kernel_parameters() {
  std::vector<size_t> parameter_counts;
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const ProgramKernel& kernel = program.kernels[i];
    const int recorded = kernel_parameter_count(kernel);
    const void* function = reinterpret_cast<const void*>(kernels[i]);
    size_t count = 0;
    for (;; ++count) {
      if (recorded >= 0 && count == static_cast<size_t>(recorded)) break;
      size_t offset = 0;
      size_t size = 0;
      if (cudaFuncGetParamInfo(function, count, &offset, &size) != cudaSuccess) {
        cudaGetLastError();
        if (recorded < 0) break;  // one past the last: counted
        throw InputError(fmt::format("kernel '{}': its compiled code has {} parameters, its "
                                     "source says {}",
                                     kernel.name, count, recorded));
      }
      if (size != sizeof(void*)) {
        throw InputError(
            fmt::format("kernel '{}': parameter {} takes {} bytes; kiln kernels take "
                        "only pointers",
                        kernel.name, count, size));
      }
    }
    parameter_counts.push_back(count);
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
void Session::State::allow_shared_memory() {
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
    cuda_check(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernels[i]),
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(most_shared[i])),
               "cudaFuncSetAttribute for kernel '" + program.kernels[i].name + "'");
  }
}

// The session's own transfers and memsets go on its stream, in order with its kernels (a
// cudaMemcpy from pageable memory may return before its DMA lands; cudaMemset is asynchronous).
void Session::State::upload_weights() {
  weights = allocate_device_memory(program.weights.size(), "the weights");
  if (!program.weights.empty()) {
    cuda_check(cudaMemcpyAsync(weights.get(), program.weights.data(), program.weights.size(),
                               cudaMemcpyHostToDevice, stream.get()),
               "uploading the weights");
    synchronize("uploading the weights");
  }
}

const Bindings& Session::State::session_buffers() {
  if (own_bindings) return *own_bindings;
  Bindings bindings;
  for (const int input : program.inputs) {
    const ProgramBuffer& buffer = program.buffers[input];
    own_memory.push_back(allocate_device_memory(buffer.type.num_bytes(), "input " + buffer.name));
    if (own_memory.back()) {
      cuda_check(cudaMemsetAsync(own_memory.back().get(), 0, buffer.type.num_bytes(), stream.get()),
                 "cudaMemsetAsync");
    }
    bindings.inputs.push_back(own_memory.back().get());
  }
  for (const int output : program.outputs) {
    const ProgramBuffer& buffer = program.buffers[output];
    own_memory.push_back(allocate_device_memory(buffer.type.num_bytes(), "output " + buffer.name));
    bindings.outputs.push_back(own_memory.back().get());
  }
  own_bindings = std::move(bindings);
  return *own_bindings;
}

void* Session::State::buffer_pointer(int index, const Bindings& bindings) const {
  const ProgramBuffer& buffer = program.buffers[index];
  switch (buffer.kind) {
    case ProgramBuffer::Kind::kInput:
      return bindings.inputs[buffer.offset];
    case ProgramBuffer::Kind::kOutput:
      return bindings.outputs[buffer.offset];
    case ProgramBuffer::Kind::kWeight:
      return static_cast<std::byte*>(weights.get()) + buffer.offset;
    case ProgramBuffer::Kind::kIntermediate:
      return static_cast<std::byte*>(arena.get()) + buffer.offset;
  }
  throw InternalError("buffer of an unknown kind");
}

// Launches every step on the stream; with `check_each_step`, waits for each and names the step
// that failed. `after_step`, when given, is called with each step's index after its launch.
void Session::State::launch_steps(const Bindings& bindings, bool check_each_step,
                                  const std::function<void(size_t)>& after_step) {
  std::vector<void*> pointers;
  std::vector<void*> arguments;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    pointers.clear();
    for (const int arg : step.args) pointers.push_back(buffer_pointer(arg, bindings));
    arguments.clear();
    for (void*& pointer : pointers) arguments.push_back(&pointer);
    const auto& [grid_x, grid_y, grid_z] = step.grid;
    const auto& [block_x, block_y, block_z] = step.block;
    cudaError_t status = cudaLaunchKernel(
        reinterpret_cast<const void*>(kernels[step.kernel]), dim3(grid_x, grid_y, grid_z),
        dim3(block_x, block_y, block_z), arguments.data(), step.shared_bytes, stream.get());
    if (status == cudaSuccess && check_each_step) status = cudaStreamSynchronize(stream.get());
    if (status != cudaSuccess) {
      throw InternalError(fmt::format("step {} (kernel '{}') failed: {}", i,
                                      program.kernels[step.kernel].name,
                                      cudaGetErrorString(status)));
    }
    if (after_step) after_step(i);
  }
}

// The steps launched on the stream under capture, as a graph. `at_boundary`, when given, is
// called under capture with 0 before the first step and with i + 1 after step i.
CudaGraph Session::State::capture_steps(const Bindings& bindings,
                                        const std::function<void(size_t)>& at_boundary) {
  cuda_check(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture");
  cudaGraph_t captured = nullptr;
  try {
    if (at_boundary) {
      at_boundary(0);
      launch_steps(bindings, /*check_each_step=*/false, [&](size_t i) { at_boundary(i + 1); });
    } else {
      launch_steps(bindings, /*check_each_step=*/false);
    }
  } catch (...) {
    cudaStreamEndCapture(stream.get(), &captured);
    CudaGraph discarded(captured);
    throw;
  }
  cuda_check(cudaStreamEndCapture(stream.get(), &captured), "cudaStreamEndCapture");
  return CudaGraph(captured);
}

void Session::State::capture_graph(const Bindings& bindings) {
  const CudaGraph captured = capture_steps(bindings);
  cudaGraphExecUpdateResultInfo update_info;
  if (graph && cudaGraphExecUpdate(graph.get(), captured.get(), &update_info) == cudaSuccess) {
    graph_bindings = bindings;
    return;
  }
  cudaGetLastError();  // a refused update only means instantiating anew
  cudaGraphExec_t instantiated = nullptr;
  cuda_check(cudaGraphInstantiate(&instantiated, captured.get(), 0), "cudaGraphInstantiate");
  graph.reset(instantiated);
  graph_bindings = bindings;
}

// Runs the steps once with `bindings`; the caller synchronizes.
void Session::State::execute(const Bindings& bindings) {
  if (program.steps.empty()) return;
  if (!graph) {
    launch_steps(bindings, /*check_each_step=*/true);
    capture_graph(bindings);
    return;
  }
  if (!(bindings == graph_bindings)) capture_graph(bindings);
  cuda_check(cudaGraphLaunch(graph.get(), stream.get()), "cudaGraphLaunch");
}

void Session::State::synchronize(const std::string& what) {
  cuda_check(cudaStreamSynchronize(stream.get()), what);
}

void require_cuda_device() {
  // The static runtime loads the driver itself; asking for it first tells a missing driver from
  // an old one (which the runtime reports alike, as "driver version is insufficient").
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) throw UnsupportedError("no CUDA device: no CUDA driver (libcuda.so.1 not found)");
  dlclose(driver);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    int driver_version = 0, runtime_version = 0;
    cudaDriverGetVersion(&driver_version);
    cudaRuntimeGetVersion(&runtime_version);
    throw UnsupportedError(fmt::format(
        "no CUDA device: the CUDA driver supports CUDA {}.{}, older than kiln's runtime {}.{}",
        driver_version / 1000, driver_version % 1000 / 10, runtime_version / 1000,
        runtime_version % 1000 / 10));
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw UnsupportedError(std::string("no CUDA device (") + cudaGetErrorString(status) + ")");
  }
  if (count == 0) throw UnsupportedError("no CUDA device (the driver reports none)");
}

Session Session::load(const std::string& path) { return load(read_program(path)); }

Session Session::load(Program program) {
  validate_program(program);
  require_cuda_device();
  auto state = std::make_unique<State>();
  state->program = std::move(program);
  cuda_check(cudaGetDevice(&state->device), "cudaGetDevice");
  cudaDeviceProp properties{};
  cuda_check(cudaGetDeviceProperties(&properties, state->device), "cudaGetDeviceProperties");
  state->device_description =
      fmt::format("{} ({})", properties.name, gpu_arch_name(properties.major, properties.minor));
  size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (const std::string shortfall = device_memory_shortfall(state->program, free_bytes);
      !shortfall.empty()) {
    throw InputError(shortfall + " (" + state->device_description + ")");
  }
  state->load_kernels();
  state->check_kernel_parameters();
  state->allow_shared_memory();
  state->stream = create_stream();
  state->upload_weights();
  state->arena =
      allocate_device_memory(static_cast<size_t>(state->program.arena_bytes), "the arena");
  return Session(std::move(state));
}

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Program& Session::program() const { return state_->program; }

std::string Session::device_description() const { return state_->device_description; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  State& state = *state_;
  const Program& program = state.program;
  check_host_inputs(program, inputs);
  cuda_check(cudaSetDevice(state.device), "cudaSetDevice");
  const Bindings& bindings = state.session_buffers();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].num_bytes() == 0) continue;
    cuda_check(cudaMemcpyAsync(bindings.inputs[i], inputs[i].bytes(), inputs[i].num_bytes(),
                               cudaMemcpyHostToDevice, state.stream.get()),
               "copying input '" + signature_buffer(program, program.inputs, i).name + "'");
  }
  state.execute(bindings);
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    outputs.emplace_back(signature_buffer(program, program.outputs, i).type);
    if (outputs.back().num_bytes() == 0) continue;
    cuda_check(
        cudaMemcpyAsync(outputs.back().bytes(), bindings.outputs[i], outputs.back().num_bytes(),
                        cudaMemcpyDeviceToHost, state.stream.get()),
        "copying output '" + signature_buffer(program, program.outputs, i).name + "'");
  }
  state.synchronize("running the program");
  return outputs;
}

void Session::run_device(const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs) {
  State& state = *state_;
  Bindings bindings;
  for (const void* input : inputs) bindings.inputs.push_back(const_cast<void*>(input));
  bindings.outputs = outputs;
  check_device_pointers(state.program, state.program.inputs, bindings.inputs, "input");
  check_device_pointers(state.program, state.program.outputs, bindings.outputs, "output");
  cuda_check(cudaSetDevice(state.device), "cudaSetDevice");
  state.execute(bindings);
  state.synchronize("running the program");
}

namespace {

void check_timing_counts(int iterations, int warmup) {
  if (iterations < 1 || warmup < 0) {
    throw InputError(
        fmt::format("timing needs at least 1 iteration and no negative warmup "
                    "(got {} iterations, {} warmup)",
                    iterations, warmup));
  }
}

float median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

std::vector<float> Session::time(int iterations, int warmup) {
  check_timing_counts(iterations, warmup);
  State& state = *state_;
  cuda_check(cudaSetDevice(state.device), "cudaSetDevice");
  if (state.program.steps.empty()) return std::vector<float>(iterations, 0.0f);
  if (!state.graph) state.execute(state.session_buffers());
  for (int i = 0; i < warmup; ++i) {
    cuda_check(cudaGraphLaunch(state.graph.get(), state.stream.get()), "cudaGraphLaunch");
  }
  std::vector<CudaEvent> events;
  for (int i = 0; i <= iterations; ++i) events.push_back(create_event());
  cuda_check(cudaEventRecord(events[0].get(), state.stream.get()), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) {
    cuda_check(cudaGraphLaunch(state.graph.get(), state.stream.get()), "cudaGraphLaunch");
    cuda_check(cudaEventRecord(events[i + 1].get(), state.stream.get()), "cudaEventRecord");
  }
  state.synchronize("timing the program");
  std::vector<float> milliseconds(iterations);
  for (int i = 0; i < iterations; ++i) {
    cuda_check(cudaEventElapsedTime(&milliseconds[i], events[i].get(), events[i + 1].get()),
               "cudaEventElapsedTime");
  }
  return milliseconds;
}

std::vector<float> Session::profile_steps(int iterations, int warmup) {
  check_timing_counts(iterations, warmup);
  State& state = *state_;
  const size_t steps = state.program.steps.size();
  cuda_check(cudaSetDevice(state.device), "cudaSetDevice");
  if (steps == 0) return {};
  const Bindings bindings = state.graph ? state.graph_bindings : state.session_buffers();
  if (!state.graph) state.execute(bindings);  // checks each step once, outside any capture
  // Events recorded with cudaEventRecordExternal during capture become event-record nodes of
  // the graph, so each replay stamps them between the kernels.
  std::vector<CudaEvent> events;
  for (size_t i = 0; i <= steps; ++i) events.push_back(create_event());
  cudaStream_t stream = state.stream.get();
  const CudaGraph captured = state.capture_steps(bindings, [&](size_t boundary) {
    cuda_check(cudaEventRecordWithFlags(events[boundary].get(), stream, cudaEventRecordExternal),
               "cudaEventRecordWithFlags");
  });
  cudaGraphExec_t instantiated = nullptr;
  cuda_check(cudaGraphInstantiate(&instantiated, captured.get(), 0), "cudaGraphInstantiate");
  const CudaGraphExec profiled(instantiated);
  std::vector<std::vector<float>> per_step(steps, std::vector<float>(iterations));
  for (int replay = -warmup; replay < iterations; ++replay) {
    cuda_check(cudaGraphLaunch(profiled.get(), stream), "cudaGraphLaunch");
    state.synchronize("profiling the program");
    if (replay < 0) continue;
    for (size_t i = 0; i < steps; ++i) {
      cuda_check(cudaEventElapsedTime(&per_step[i][replay], events[i].get(), events[i + 1].get()),
                 "cudaEventElapsedTime");
    }
  }
  std::vector<float> medians;
  for (std::vector<float>& times : per_step) medians.push_back(median(std::move(times)));
  return medians;
}

}  // namespace kiln
