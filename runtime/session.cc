// The GPU session (session.h): one run's state on top of a program loaded onto a device
// (loaded_program.h): the arena, the streams, the session's own input and output buffers, the
// CUDA graph; launching the steps, building the graph from the steps' dependencies (independent
// steps run at once) and replaying it, timing.
#include "runtime/session.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <set>

#include "ir/error.h"
#include "runtime/cuda_api.h"
#include "runtime/device_list.h"
#include "runtime/device_memory_fit.h"
#include "runtime/library_gemm_plan.h"
#include "runtime/loaded_program.h"
#include "runtime/program_io.h"
#include "runtime/program_validation.h"
#include "runtime/timing_stats.h"

namespace kiln {
namespace {

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

void check_timing_counts(int iterations, int warmup) {
  if (iterations < 1 || warmup < 0) {
    throw InputError(
        fmt::format("timing needs at least 1 iteration and no negative warmup "
                    "(got {} iterations, {} warmup)",
                    iterations, warmup));
  }
}

dim3 grid_of(const ProgramStep& step) { return dim3(step.grid[0], step.grid[1], step.grid[2]); }
dim3 block_of(const ProgramStep& step) { return dim3(step.block[0], step.block[1], step.block[2]); }

// A step's kernel parameters (Session::State::step_arguments).
struct StepArguments {
  std::vector<void*> pointers;
  std::vector<TensorMapBytes> maps;  // encoded for `pointers` (kernel_header.h, KernelTensorMap)
  std::vector<void*> addresses;
};

}  // namespace

// What one session owns; `loaded` may be shared with other sessions (Session::share). `mutex`
// serializes the public calls (session.h, "Threads").
struct Session::State {
  std::shared_ptr<const LoadedProgram> loaded;
  std::mutex mutex;
  std::shared_ptr<void> arena;  // its own, or a dynamic program's variants' (load_variant)
  // The session's runs; a blocking stream (cuda_api.h, create_stream).
  CudaStream stream;
  // Capture only (the per-step profile): it never runs work, and as a non-blocking stream its
  // capture is not broken by another thread's use of the legacy default stream.
  CudaStream capture_stream;
  // Recorded after each run on the stream that ran it; the next run waits for it.
  CudaEvent run_done;
  // Recorded on a caller's stream before a first run, which the session's stream waits for.
  CudaEvent caller_ready;
  // The session's own input and output buffers, for runs on host tensors.
  std::vector<DeviceMemory> own_memory;
  std::optional<Bindings> own_bindings;
  // SessionOptions::steps_in_order and early_launch (shared sessions keep them).
  bool steps_in_order = false;
  bool early_launch = true;
  // The steps as a graph of their dependencies, and the pointers it was built with.
  CudaGraphExec graph;
  Bindings graph_bindings;

  State(std::shared_ptr<const LoadedProgram> program, std::shared_ptr<void> shared_arena);
  // Waits for the session's last run, then frees what it owns, with its device current.
  ~State();

  const Program& program() const { return loaded->program; }
  const Bindings& session_buffers();
  void* buffer_pointer(int index, const Bindings& bindings) const;
  void** step_arguments(const ProgramStep& step, const Bindings& bindings,
                        StepArguments& arguments) const;
  void enqueue_library_call(size_t step, const Bindings& bindings, cudaStream_t on) const;
  CudaGraph captured_library_call(size_t step, const Bindings& bindings);
  void launch_steps(const Bindings& bindings, cudaStream_t on, bool check_each_step,
                    const std::function<void(size_t)>& after_step = {});
  CudaGraph capture_steps_in_order(const Bindings& bindings,
                                   const std::function<void(size_t)>& at_boundary);
  CudaGraph dependency_graph(const Bindings& bindings, int copies = 1);
  void prepare_graph(const Bindings& bindings);
  void execute(const Bindings& bindings, cudaStream_t on);
  void synchronize(const std::string& what);
  void check_indices();
};

// Expects the program's device to be current. Without `shared_arena`, allocates its own.
Session::State::State(std::shared_ptr<const LoadedProgram> program,
                      std::shared_ptr<void> shared_arena)
    : loaded(std::move(program)),
      arena(shared_arena ? std::move(shared_arena)
                         : std::shared_ptr<void>(allocate_device_memory(
                               static_cast<size_t>(loaded->program.arena_bytes), "the arena"))),
      stream(create_stream()),
      capture_stream(create_non_blocking_stream()),
      run_done(create_ordering_event()),
      caller_ready(create_ordering_event()) {}

// A run on a caller's stream may still be in flight: its arena must outlive it. Not checked (a
// destructor does not throw); the handles are released in the order they depend on each other.
Session::State::~State() {
  const CurrentDevice current(loaded->device, std::nothrow);
  cudaEventSynchronize(run_done.get());
  graph.reset();
  own_memory.clear();
  arena.reset();
  caller_ready.reset();
  run_done.reset();
  capture_stream.reset();
  stream.reset();
}

const Bindings& Session::State::session_buffers() {
  if (own_bindings) return *own_bindings;
  Bindings bindings;
  for (const int input : program().inputs) {
    const ProgramBuffer& buffer = program().buffers[input];
    own_memory.push_back(allocate_device_memory(buffer.type.num_bytes(), "input " + buffer.name));
    if (own_memory.back()) {
      cuda_check(cudaMemsetAsync(own_memory.back().get(), 0, buffer.type.num_bytes(), stream.get()),
                 "cudaMemsetAsync");
    }
    bindings.inputs.push_back(own_memory.back().get());
  }
  for (const int output : program().outputs) {
    const ProgramBuffer& buffer = program().buffers[output];
    own_memory.push_back(allocate_device_memory(buffer.type.num_bytes(), "output " + buffer.name));
    bindings.outputs.push_back(own_memory.back().get());
  }
  own_bindings = std::move(bindings);
  return *own_bindings;
}

void* Session::State::buffer_pointer(int index, const Bindings& bindings) const {
  const ProgramBuffer& buffer = program().buffers[index];
  switch (buffer.kind) {
    case ProgramBuffer::Kind::kInput:
      return bindings.inputs[buffer.offset];
    case ProgramBuffer::Kind::kOutput:
      return bindings.outputs[buffer.offset];
    case ProgramBuffer::Kind::kWeight:
      return static_cast<std::byte*>(loaded->weights.get()) + buffer.offset;
    case ProgramBuffer::Kind::kIntermediate:
      return static_cast<std::byte*>(arena.get()) + buffer.offset;
  }
  throw InternalError("buffer of an unknown kind");
}

// The kernel parameters of `step` in `arguments` (reused from step to step): each argument's
// device pointer, then the kernel's tensor maps encoded for those pointers (so a graph built for
// new bindings gets maps of the new pointers), and the array of their addresses that a launch
// takes, which it returns.
void** Session::State::step_arguments(const ProgramStep& step, const Bindings& bindings,
                                      StepArguments& arguments) const {
  arguments.pointers.clear();
  for (const int arg : step.args) arguments.pointers.push_back(buffer_pointer(arg, bindings));
  arguments.maps.clear();
  for (const KernelTensorMap& map : loaded->tensor_maps[step.kernel]) {
    arguments.maps.push_back(
        encode_tensor_map(map, arguments.pointers[map.parameter],
                          fmt::format("kernel '{}', tensor map of parameter {}",
                                      program().kernels[step.kernel].name, map.parameter)));
  }
  arguments.addresses.clear();
  for (void*& pointer : arguments.pointers) arguments.addresses.push_back(&pointer);
  for (TensorMapBytes& map : arguments.maps) arguments.addresses.push_back(&map);
  return arguments.addresses.data();
}

// Enqueues step `step`'s library call (it has a plan) on `on`.
void Session::State::enqueue_library_call(size_t step, const Bindings& bindings,
                                          cudaStream_t on) const {
  const ProgramStep& program_step = program().steps[step];
  const ProgramLibraryGemm& call = *program_step.library;
  const auto pointer = [&](int position) -> void* {
    if (position < 0) return nullptr;
    return buffer_pointer(program_step.args[static_cast<size_t>(position)], bindings);
  };
  LibraryGemmPointers pointers{.a = pointer(call.a),
                               .b = pointer(call.b),
                               .c = pointer(call.c),
                               .bias = pointer(call.bias),
                               .d = pointer(call.d),
                               .workspace = nullptr};
  if (call.workspace_bytes > 0) {
    pointers.workspace = static_cast<std::byte*>(arena.get()) + call.workspace_offset;
  }
  loaded->library_plans[step]->enqueue(pointers, on);
}

// Step `step`'s library call captured alone, for a child-graph node of the session's graph.
CudaGraph Session::State::captured_library_call(size_t step, const Bindings& bindings) {
  cudaStream_t capturing = capture_stream.get();
  cuda_check(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture");
  cudaGraph_t captured = nullptr;
  try {
    enqueue_library_call(step, bindings, capturing);
  } catch (...) {
    cudaStreamEndCapture(capturing, &captured);
    CudaGraph discarded(captured);
    throw;
  }
  cuda_check(cudaStreamEndCapture(capturing, &captured),
             fmt::format("capturing step {}'s cuBLASLt call", step));
  return CudaGraph(captured);
}

// Launches every step on `on`, in program order; with `check_each_step`, waits for each and
// names the step that failed. `after_step`, when given, is called with each step's index after
// its launch.
void Session::State::launch_steps(const Bindings& bindings, cudaStream_t on, bool check_each_step,
                                  const std::function<void(size_t)>& after_step) {
  const Program& program = loaded->program;
  StepArguments arguments;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const ProgramStep& step = program.steps[i];
    cudaError_t status = cudaSuccess;
    if (loaded->library_plans[i]) {
      enqueue_library_call(i, bindings, on);
      status = cudaGetLastError();
    } else {
      status = cudaLaunchKernel(reinterpret_cast<const void*>(loaded->kernels[step.kernel]),
                                grid_of(step), block_of(step),
                                step_arguments(step, bindings, arguments), step.shared_bytes, on);
    }
    if (status == cudaSuccess && check_each_step) status = cudaStreamSynchronize(on);
    if (status != cudaSuccess) {
      throw InternalError(fmt::format("step {} ({}) failed: {}", i,
                                      loaded->library_plans[i]
                                          ? "cuBLASLt"
                                          : "kernel '" + program.kernels[step.kernel].name + "'",
                                      cudaGetErrorString(status)));
    }
    if (after_step) after_step(i);
  }
}

// The steps launched one after another on the capture stream under capture, as a chain: the
// per-step profile times each step alone. `at_boundary` is called under capture with 0 before the
// first step and with i + 1 after step i.
CudaGraph Session::State::capture_steps_in_order(const Bindings& bindings,
                                                 const std::function<void(size_t)>& at_boundary) {
  cudaStream_t capturing = capture_stream.get();
  cuda_check(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeThreadLocal),
             "cudaStreamBeginCapture");
  cudaGraph_t captured = nullptr;
  try {
    at_boundary(0);
    launch_steps(bindings, capturing, /*check_each_step=*/false,
                 [&](size_t i) { at_boundary(i + 1); });
  } catch (...) {
    cudaStreamEndCapture(capturing, &captured);
    CudaGraph discarded(captured);
    throw;
  }
  cuda_check(cudaStreamEndCapture(capturing, &captured), "cudaStreamEndCapture");
  return CudaGraph(captured);
}

// One kernel node per step, depending on the nodes of the steps it must follow
// (LoadedProgram::dependencies): steps with no path between them run at once. With
// steps_in_order, each on the one before. With early_launch, the edges into a kernel that waits
// for its dependencies itself (LoadedProgram::launches_early) are programmatic: it is launched
// once every block of theirs has finished, before their completion is flushed, and waits for
// that inside. (From their launch completion instead, so that it would start once every block
// of theirs had started, made every dev model slower: docs/PERF.md, session 13.)
// With `copies` above 1 (Session::time's), the graph holds the steps that many times over, each
// copy's first steps after every last step of the copy before.
CudaGraph Session::State::dependency_graph(const Bindings& bindings, int copies) {
  const Program& program = loaded->program;
  const size_t steps = program.steps.size();
  cudaGraph_t created = nullptr;
  cuda_check(cudaGraphCreate(&created, 0), "cudaGraphCreate");
  CudaGraph built(created);
  std::vector<cudaGraphNode_t> nodes(steps * static_cast<size_t>(copies));
  // The steps no other step waits for: the ones the next copy's first steps follow.
  std::vector<bool> last(steps, true);
  for (size_t i = 0; i < steps; ++i) {
    if (steps_in_order) {
      if (i > 0) last[i - 1] = false;
    } else {
      for (const int before : loaded->dependencies.predecessors[i]) last[before] = false;
    }
  }
  std::vector<cudaGraphNode_t> predecessors;
  std::vector<cudaGraphEdgeData> edges;
  std::set<cudaGraphNode_t> library_nodes;
  const auto library_node = [&](cudaGraphNode_t node) { return library_nodes.count(node) != 0; };
  StepArguments arguments;
  for (size_t at = 0; at < nodes.size(); ++at) {
    const size_t i = at % steps, copy_start = at - i;
    const ProgramStep& step = program.steps[i];
    const bool library = loaded->library_plans[i] != nullptr;
    cudaGraphNodeParams node{};
    CudaGraph child;  // a library call's, which the node copies
    if (library) {
      child = captured_library_call(i, bindings);
      node.type = cudaGraphNodeTypeGraph;
      node.graph.graph = child.get();
    } else {
      node.type = cudaGraphNodeTypeKernel;
      cudaKernelNodeParamsV2& kernel = node.kernel;
      kernel.func = reinterpret_cast<void*>(loaded->kernels[step.kernel]);
      kernel.gridDim = grid_of(step);
      kernel.blockDim = block_of(step);
      kernel.sharedMemBytes = step.shared_bytes;
      kernel.kernelParams = step_arguments(step, bindings, arguments);  // copied by the call
    }
    predecessors.clear();
    if (steps_in_order) {
      if (i > 0) predecessors.push_back(nodes[at - 1]);
    } else {
      for (const int before : loaded->dependencies.predecessors[i]) {
        predecessors.push_back(nodes[copy_start + static_cast<size_t>(before)]);
      }
    }
    if (predecessors.empty() && copy_start > 0) {
      for (size_t j = 0; j < steps; ++j) {
        if (last[j]) predecessors.push_back(nodes[copy_start - steps + j]);
      }
    }
    // Programmatic edges run from kernel nodes only: from a library call's child graph, and
    // into one, the edge waits for the predecessor to finish.
    edges.assign(predecessors.size(), cudaGraphEdgeData{});  // zero: after it finishes
    if (early_launch && !library && loaded->launches_early[static_cast<size_t>(step.kernel)]) {
      for (size_t p = 0; p < predecessors.size(); ++p) {
        if (library_node(predecessors[p])) continue;
        edges[p].from_port = cudaGraphKernelNodePortProgrammatic;
        edges[p].type = cudaGraphDependencyTypeProgrammatic;
      }
    }
    cuda_check(cudaGraphAddNode(&nodes[at], built.get(), predecessors.data(), edges.data(),
                                predecessors.size(), &node),
               fmt::format("adding step {} (kernel '{}') to the graph", i,
                           program.kernels[step.kernel].name));
    if (library) library_nodes.insert(nodes[at]);
  }
  return built;
}

// An update or a new instantiation takes effect from the next launch; a launch still in flight
// runs the graph it was launched with.
void Session::State::prepare_graph(const Bindings& bindings) {
  const CudaGraph built = dependency_graph(bindings);
  cudaGraphExecUpdateResultInfo update_info;
  if (graph && cudaGraphExecUpdate(graph.get(), built.get(), &update_info) == cudaSuccess) {
    graph_bindings = bindings;
    return;
  }
  cudaGetLastError();  // a refused update only means instantiating anew
  cudaGraphExec_t instantiated = nullptr;
  cuda_check(cudaGraphInstantiate(&instantiated, built.get(), 0), "cudaGraphInstantiate");
  graph.reset(instantiated);
  graph_bindings = bindings;
}

// Runs the steps once with `bindings` on `on` (the session's stream or a caller's), after the
// work enqueued on `on` and after the session's previous run; the caller synchronizes. The first
// run launches and checks each step in order on the session's stream, made to wait for `on` and
// waited for by it, then builds the graph.
void Session::State::execute(const Bindings& bindings, cudaStream_t on) {
  if (program().steps.empty()) return;
  cudaStream_t own = stream.get();
  if (!graph) {
    if (on != own) {
      cuda_check(cudaEventRecord(caller_ready.get(), on), "cudaEventRecord");
      cuda_check(cudaStreamWaitEvent(own, caller_ready.get()), "cudaStreamWaitEvent");
    }
    launch_steps(bindings, own, /*check_each_step=*/true);
    prepare_graph(bindings);
    cuda_check(cudaEventRecord(run_done.get(), own), "cudaEventRecord");
    cuda_check(cudaStreamWaitEvent(on, run_done.get()), "cudaStreamWaitEvent");
    return;
  }
  if (!(bindings == graph_bindings)) prepare_graph(bindings);
  cuda_check(cudaStreamWaitEvent(on, run_done.get()), "cudaStreamWaitEvent");
  cuda_check(cudaGraphLaunch(graph.get(), on), "cudaGraphLaunch");
  cuda_check(cudaEventRecord(run_done.get(), on), "cudaEventRecord");
}

void Session::State::synchronize(const std::string& what) {
  cuda_check(cudaStreamSynchronize(stream.get()), what);
}

// After a finished run: whether a kernel met an index out of range (and clamped it), each flag
// cleared for the next run. Sessions sharing the program share the flags.
void Session::State::check_indices() {
  for (const auto& [kernel, flag] : loaded->index_flags) {
    unsigned int bad = 0;
    cuda_check(cudaMemcpy(&bad, flag, sizeof(bad), cudaMemcpyDeviceToHost),
               "reading the index check");
    if (bad == 0) continue;
    cuda_check(cudaMemset(flag, 0, sizeof(bad)), "clearing the index check");
    const ProgramKernel& source = program().kernels[kernel];
    std::string nodes;
    for (const std::string& node : source.provenance) nodes += (nodes.empty() ? "" : ", ") + node;
    throw InputError(fmt::format(
        "kernel '{}' (ONNX nodes {}) read an index out of the range of the axis it indexes (a "
        "gather's or scatter's index input); the outputs of this run are not valid",
        source.name, nodes.empty() ? "unknown" : nodes));
  }
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


Session Session::load(const std::string& path, const SessionOptions& options) {
  return load(read_program(path), options);
}

namespace {

// SessionOptions::device resolved: the current device for -1, else checked.
int session_device(const SessionOptions& options) {
  int device = options.device;
  if (device == -1) {
    cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  } else {
    check_device_index(device, cuda_device_names());
  }
  return device;
}

}  // namespace

Session Session::load(Program program, const SessionOptions& options) {
  validate_program(program);
  require_cuda_device();
  const int device = session_device(options);
  std::shared_ptr<const LoadedProgram> loaded = load_program(std::move(program), device);
  const CurrentDevice current(device);
  auto state = std::make_unique<State>(std::move(loaded), nullptr);
  state->steps_in_order = options.steps_in_order;
  state->early_launch = options.early_launch;
  return Session(std::move(state));
}

Session Session::load_variant(Program program, const SessionOptions& options,
                              const Session* weights_from, std::shared_ptr<void>& arena,
                              int64_t arena_bytes) {
  validate_program(program);
  require_cuda_device();
  const int device = session_device(options);
  if (program.arena_bytes > arena_bytes) {
    throw InternalError("a variant's arena is larger than the one its dynamic program shares");
  }
  std::shared_ptr<const LoadedProgram> loaded = load_program(
      std::move(program), device, weights_from ? weights_from->state_->loaded : nullptr);
  const CurrentDevice current(device);
  if (!arena) arena = allocate_device_memory(static_cast<size_t>(arena_bytes), "the arena");
  auto state = std::make_unique<State>(std::move(loaded), arena);
  state->steps_in_order = options.steps_in_order;
  state->early_launch = options.early_launch;
  return Session(std::move(state));
}

Session Session::share() const {
  const CurrentDevice current(state_->loaded->device);
  size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (const std::string shortfall = shared_session_shortfall(program(), free_bytes);
      !shortfall.empty()) {
    throw InputError(shortfall + " (" + state_->loaded->device_description + ")");
  }
  auto state = std::make_unique<State>(state_->loaded, nullptr);
  state->steps_in_order = state_->steps_in_order;
  state->early_launch = state_->early_launch;
  return Session(std::move(state));
}

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Program& Session::program() const { return state_->program(); }

const std::vector<std::string>& Session::library_notes() const {
  return state_->loaded->library_notes;
}

bool Session::library_call_stands_in(size_t step) const {
  const LoadedProgram& loaded = *state_->loaded;
  return loaded.program.steps.at(step).library && !loaded.library_plans.at(step);
}

int Session::device() const { return state_->loaded->device; }

std::string Session::device_description() const { return state_->loaded->device_description; }

std::vector<Tensor> Session::run(const std::vector<Tensor>& inputs) {
  State& state = *state_;
  const Program& program = state.program();
  check_host_inputs(program, inputs);
  const std::lock_guard lock(state.mutex);
  const CurrentDevice current(state.loaded->device);
  const Bindings& bindings = state.session_buffers();
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].num_bytes() == 0) continue;
    cuda_check(cudaMemcpyAsync(bindings.inputs[i], inputs[i].bytes(), inputs[i].num_bytes(),
                               cudaMemcpyHostToDevice, state.stream.get()),
               "copying input '" + signature_buffer(program, program.inputs, i).name + "'");
  }
  state.execute(bindings, state.stream.get());
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
  state.check_indices();
  return outputs;
}

namespace {

// An output's bytes may not overlap another output's or any input's: steps with no dependency
// between them run at once (step_dependencies.h tells buffers apart, not addresses), so a
// kernel could overwrite an input another is still reading.
void check_output_overlaps(const Program& program, const Bindings& bindings) {
  const auto range = [&](const std::vector<int>& signature, const std::vector<void*>& pointers,
                         size_t i) {
    const auto begin = reinterpret_cast<uintptr_t>(pointers[i]);
    return std::pair{begin, begin + signature_buffer(program, signature, i).type.num_bytes()};
  };
  const auto overlap = [](std::pair<uintptr_t, uintptr_t> a, std::pair<uintptr_t, uintptr_t> b) {
    return a.first < b.second && b.first < a.second;
  };
  for (size_t o = 0; o < bindings.outputs.size(); ++o) {
    const auto output = range(program.outputs, bindings.outputs, o);
    const std::string name = signature_buffer(program, program.outputs, o).name;
    for (size_t other = o + 1; other < bindings.outputs.size(); ++other) {
      if (overlap(output, range(program.outputs, bindings.outputs, other))) {
        throw InputError(fmt::format("run_device: outputs '{}' and '{}' overlap in memory", name,
                                     signature_buffer(program, program.outputs, other).name));
      }
    }
    for (size_t i = 0; i < bindings.inputs.size(); ++i) {
      if (overlap(output, range(program.inputs, bindings.inputs, i))) {
        throw InputError(fmt::format(
            "run_device: output '{}' overlaps input '{}' in memory (kiln does not compute in "
            "place)",
            name, signature_buffer(program, program.inputs, i).name));
      }
    }
  }
}

Bindings checked_bindings(const Program& program, const std::vector<const void*>& inputs,
                          const std::vector<void*>& outputs) {
  Bindings bindings;
  for (const void* input : inputs) bindings.inputs.push_back(const_cast<void*>(input));
  bindings.outputs = outputs;
  check_device_pointers(program, program.inputs, bindings.inputs, "input");
  check_device_pointers(program, program.outputs, bindings.outputs, "output");
  check_output_overlaps(program, bindings);
  return bindings;
}

}  // namespace

void Session::run_device(const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs) {
  State& state = *state_;
  const Bindings bindings = checked_bindings(state.program(), inputs, outputs);
  const std::lock_guard lock(state.mutex);
  const CurrentDevice current(state.loaded->device);
  state.execute(bindings, state.stream.get());
  state.synchronize("running the program");
  state.check_indices();
}

void Session::run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                         CUstream_st* stream) {
  State& state = *state_;
  const Bindings bindings = checked_bindings(state.program(), inputs, outputs);
  const std::lock_guard lock(state.mutex);
  const CurrentDevice current(state.loaded->device);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cuda_check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone) {
    throw InputError(
        "run_device: the stream is being captured into a CUDA graph; the session launches a "
        "graph of its own on it, so call run_device outside the capture");
  }
  state.execute(bindings, stream);
}

std::vector<float> Session::time(int iterations, int warmup, int copies) {
  check_timing_counts(iterations, warmup);
  if (copies < 1) throw InputError(fmt::format("timing {} copies of the program", copies));
  State& state = *state_;
  const std::lock_guard lock(state.mutex);
  const CurrentDevice current(state.loaded->device);
  if (state.program().steps.empty()) return std::vector<float>(iterations, 0.0f);
  cudaStream_t stream = state.stream.get();
  if (!state.graph) state.execute(state.session_buffers(), stream);
  // Several copies: a graph of its own on the last run's buffers.
  CudaGraphExec copied;
  if (copies > 1) {
    const CudaGraph built = state.dependency_graph(state.graph_bindings, copies);
    cudaGraphExec_t instantiated = nullptr;
    cuda_check(cudaGraphInstantiate(&instantiated, built.get(), 0), "cudaGraphInstantiate");
    copied.reset(instantiated);
  }
  cudaGraphExec_t replayed = copies > 1 ? copied.get() : state.graph.get();
  // The replays follow the session's last run, on whichever stream that was.
  cuda_check(cudaStreamWaitEvent(stream, state.run_done.get()), "cudaStreamWaitEvent");
  for (int i = 0; i < warmup; ++i) {
    cuda_check(cudaGraphLaunch(replayed, stream), "cudaGraphLaunch");
  }
  std::vector<CudaEvent> events;
  for (int i = 0; i <= iterations; ++i) events.push_back(create_event());
  cuda_check(cudaEventRecord(events[0].get(), stream), "cudaEventRecord");
  for (int i = 0; i < iterations; ++i) {
    cuda_check(cudaGraphLaunch(replayed, stream), "cudaGraphLaunch");
    cuda_check(cudaEventRecord(events[i + 1].get(), stream), "cudaEventRecord");
  }
  cuda_check(cudaEventRecord(state.run_done.get(), stream), "cudaEventRecord");
  state.synchronize("timing the program");
  std::vector<float> milliseconds(iterations);
  for (int i = 0; i < iterations; ++i) {
    cuda_check(cudaEventElapsedTime(&milliseconds[i], events[i].get(), events[i + 1].get()),
               "cudaEventElapsedTime");
    milliseconds[i] /= static_cast<float>(copies);
  }
  return milliseconds;
}

std::vector<float> Session::profile_steps(int iterations, int warmup) {
  check_timing_counts(iterations, warmup);
  State& state = *state_;
  const size_t steps = state.program().steps.size();
  const std::lock_guard lock(state.mutex);
  const CurrentDevice current(state.loaded->device);
  if (steps == 0) return {};
  cudaStream_t stream = state.stream.get();
  const Bindings bindings = state.graph ? state.graph_bindings : state.session_buffers();
  if (!state.graph) state.execute(bindings, stream);  // checks each step once, outside any capture
  // Events recorded with cudaEventRecordExternal during capture become event-record nodes of
  // the graph, so each replay stamps them between the kernels.
  std::vector<CudaEvent> events;
  for (size_t i = 0; i <= steps; ++i) events.push_back(create_event());
  cudaStream_t capturing = state.capture_stream.get();
  const CudaGraph captured = state.capture_steps_in_order(bindings, [&](size_t boundary) {
    cuda_check(cudaEventRecordWithFlags(events[boundary].get(), capturing, cudaEventRecordExternal),
               "cudaEventRecordWithFlags");
  });
  cudaGraphExec_t instantiated = nullptr;
  cuda_check(cudaGraphInstantiate(&instantiated, captured.get(), 0), "cudaGraphInstantiate");
  const CudaGraphExec profiled(instantiated);
  // The replays follow the session's last run, on whichever stream that was.
  cuda_check(cudaStreamWaitEvent(stream, state.run_done.get()), "cudaStreamWaitEvent");
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
