// GPU tests of the session's application API (ctest label gpu, runs alone: it reads the device's
// free memory): loading onto a chosen device with the thread's current device left as it was,
// run_device ordered on a caller's stream (and refusing one being captured), sessions sharing
// one copy of the weights, sessions on several threads at once (and one session called from
// three threads, which its mutex serializes), and timing sessions concurrently (one per GPU, as
// `kiln bench --devices` does).
// Without a CUDA device the binary prints "no CUDA device: skipped" and exits 77, which ctest
// reports as skipped.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <regex>
#include <thread>

#include "ir/error.h"
#include "runtime/concurrent_timing.h"
#include "runtime/session.h"
#include "tests/runtime/bias_relu_program.h"

namespace kiln::test {
namespace {

Program compiled_program() { return bias_relu_program(nvcc_kernels(KILN_TEST_KERNELS_DIR)); }

int device_count() {
  int count = 0;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  return count;
}

int current_device() {
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  return device;
}

int64_t free_device_bytes(int device) {
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  cudaSetDevice(previous);
  return static_cast<int64_t>(free_bytes);
}

// Whether `output` is the program's output for `input`, to float rounding.
bool matches_cpu(const Tensor& output, const Tensor& input) {
  const Tensor expected = bias_relu_expected(input);
  if (output.type() != expected.type()) return false;
  for (int64_t i = 0; i < output.num_elements(); ++i) {
    if (std::abs(output.get_float(i) - expected.get_float(i)) > 1e-6) return false;
  }
  return true;
}

// Pinned host memory, so that copies on a stream are truly asynchronous.
struct PinnedTensor {
  explicit PinnedTensor(size_t bytes) { EXPECT_EQ(cudaMallocHost(&data, bytes), cudaSuccess); }
  PinnedTensor(const PinnedTensor&) = delete;
  ~PinnedTensor() { cudaFreeHost(data); }
  void* data = nullptr;
};

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { EXPECT_EQ(cudaMalloc(&data, bytes), cudaSuccess); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data); }
  void* data = nullptr;
};

TEST(SessionApiGpuTest, LoadsOnTheDeviceAskedForAndLeavesTheCurrentDevice) {
  const int count = device_count();
  const int current = count - 1;
  ASSERT_EQ(cudaSetDevice(current), cudaSuccess);
  for (int device = 0; device < count; ++device) {
    Session session = Session::load(compiled_program(), {.device = device});
    EXPECT_EQ(current_device(), current);
    EXPECT_EQ(session.device(), device);
    EXPECT_EQ(session.device_description().rfind("device " + std::to_string(device) + ": ", 0),
              0u)
        << session.device_description();
    const Tensor x = bias_relu_input(device + 1);
    EXPECT_TRUE(matches_cpu(session.run({x})[0], x)) << "device " << device;
    EXPECT_EQ(session.time(3, 1).size(), 3u);
    EXPECT_EQ(current_device(), current);
  }
  // The default: the calling thread's current device.
  EXPECT_EQ(Session::load(compiled_program()).device(), current);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(SessionApiGpuTest, ADeviceTheMachineLacksIsAnInputErrorNamingItsDevices) {
  const int count = device_count();
  for (const int device : {count, -2}) {
    try {
      Session::load(compiled_program(), {.device = device});
      FAIL() << "expected an InputError for device " << device;
    } catch (const InputError& error) {
      const std::regex expected("no CUDA device " + std::to_string(device) +
                                ": this machine has " + std::to_string(count) + R"( \(0: .+\))");
      EXPECT_TRUE(std::regex_match(error.what(), expected)) << error.what();
    }
  }
}

// Inputs copied in and outputs copied out asynchronously on the caller's stream around each run,
// with no host synchronization between them: the run must read the copied inputs and finish
// before the copy out. Runs on two streams back to back share the arena, so the session orders
// them.
TEST(SessionApiGpuTest, RunDeviceOnTheCallersStreamIsOrderedOnIt) {
  Session session = Session::load(compiled_program());
  const Tensor shape = bias_relu_input(0);
  const size_t bytes = shape.num_bytes();
  cudaStream_t streams[2] = {};
  for (cudaStream_t& stream : streams) {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  }
  PinnedTensor host_in[2] = {PinnedTensor(bytes), PinnedTensor(bytes)};
  PinnedTensor host_out[2] = {PinnedTensor(bytes), PinnedTensor(bytes)};
  DeviceBuffer in[2] = {DeviceBuffer(bytes), DeviceBuffer(bytes)};
  DeviceBuffer out[2] = {DeviceBuffer(bytes), DeviceBuffer(bytes)};
  for (int round = 0; round < 4; ++round) {
    std::vector<Tensor> inputs;
    // Round 0: the first run (checked step by step), on stream 0 only; then both streams, with
    // the same pointers as before (graph replays) or, in round 3, swapped (capture again, while
    // the other stream's run may still be in flight).
    for (int i = 0; i < (round == 0 ? 1 : 2); ++i) {
      inputs.push_back(bias_relu_input(10 * round + i));
      std::memcpy(host_in[i].data, inputs[i].bytes(), bytes);
      const int buffers = round == 3 ? 1 - i : i;
      ASSERT_EQ(cudaMemcpyAsync(in[buffers].data, host_in[i].data, bytes, cudaMemcpyHostToDevice,
                                streams[i]),
                cudaSuccess);
      session.run_device({in[buffers].data}, {out[buffers].data}, streams[i]);
      ASSERT_EQ(cudaMemcpyAsync(host_out[i].data, out[buffers].data, bytes,
                                cudaMemcpyDeviceToHost, streams[i]),
                cudaSuccess);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      ASSERT_EQ(cudaStreamSynchronize(streams[i]), cudaSuccess);
      Tensor output(shape.type());
      std::memcpy(output.bytes(), host_out[i].data, bytes);
      EXPECT_TRUE(matches_cpu(output, inputs[i])) << "round " << round << ", stream " << i;
    }
  }
  for (cudaStream_t stream : streams) cudaStreamDestroy(stream);
  // The legacy default stream (null) and the session's own runs still work after.
  const Tensor x = bias_relu_input(7);
  ASSERT_EQ(cudaMemcpy(in[0].data, x.bytes(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  session.run_device({in[0].data}, {out[0].data}, nullptr);
  Tensor output(shape.type());
  ASSERT_EQ(cudaMemcpy(output.bytes(), out[0].data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(matches_cpu(output, x));
  EXPECT_TRUE(matches_cpu(session.run({x})[0], x));
}

TEST(SessionApiGpuTest, RunDeviceRefusesAStreamBeingCaptured) {
  Session session = Session::load(compiled_program());
  const size_t bytes = bias_relu_input(0).num_bytes();
  DeviceBuffer in(bytes), out(bytes);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess);
  try {
    session.run_device({in.data}, {out.data}, stream);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("the stream is being captured"), std::string::npos)
        << error.what();
  }
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  const Tensor x = bias_relu_input(4);
  EXPECT_TRUE(matches_cpu(session.run({x})[0], x));
}

// The program with 256 MiB more weights: large enough that cudaMemGetInfo sees a second copy.
Program program_with_large_weights() {
  Program program = compiled_program();
  program.weights.resize(program.weights.size() + (size_t{256} << 20));
  return program;
}

TEST(SessionApiGpuTest, ASharedSessionReadsTheSameWeightsWithoutASecondCopy) {
  constexpr int64_t kWeights = int64_t{256} << 20;
  std::optional<Session> first = Session::load(program_with_large_weights());
  const int device = first->device();
  const Tensor x = bias_relu_input(8);
  ASSERT_TRUE(matches_cpu(first->run({x})[0], x));

  const int64_t before_share = free_device_bytes(device);
  Session shared = first->share();
  const int64_t after_share = free_device_bytes(device);
  EXPECT_LT(before_share - after_share, kWeights / 4)
      << "share() took " << before_share - after_share << " bytes";
  EXPECT_EQ(shared.device(), device);
  EXPECT_TRUE(first->run({x})[0].same_contents(shared.run({x})[0]));

  // The measurement sees a copy: a second load does take the weights again.
  {
    const int64_t before_load = free_device_bytes(device);
    Session loaded = Session::load(program_with_large_weights(), {.device = device});
    EXPECT_GE(before_load - free_device_bytes(device), kWeights);
  }
  // Either may go first: the weights stay while the shared session needs them.
  first.reset();
  const Tensor y = bias_relu_input(9);
  EXPECT_TRUE(matches_cpu(shared.run({y})[0], y));
  Session shared_again = shared.share();
  EXPECT_TRUE(matches_cpu(shared_again.run({y})[0], y));
}

// Each thread runs its session `runs` times on inputs of its own and checks every output.
void run_on_threads(const std::vector<Session*>& sessions, int runs) {
  std::vector<int> wrong(sessions.size(), 0);
  std::vector<std::string> errors(sessions.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < sessions.size(); ++t) {
    threads.emplace_back([&, t] {
      try {
        const Tensor a = bias_relu_input(100 + static_cast<int>(t));
        const Tensor b = bias_relu_input(200 + static_cast<int>(t));
        for (int run = 0; run < runs; ++run) {
          const Tensor& x = run % 2 ? a : b;
          if (!matches_cpu(sessions[t]->run({x})[0], x)) ++wrong[t];
        }
      } catch (const std::exception& error) {
        errors[t] = error.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t t = 0; t < sessions.size(); ++t) {
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
    EXPECT_EQ(errors[t], "") << "thread " << t;
  }
}

TEST(SessionApiGpuTest, SeparateSessionsOnSeparateThreadsRunCorrectly) {
  std::vector<Session> sessions;
  sessions.push_back(Session::load(compiled_program()));
  sessions.push_back(sessions[0].share());
  sessions.push_back(sessions[0].share());
  sessions.push_back(Session::load(compiled_program()));
  for (int device = 1; device < device_count(); ++device) {
    sessions.push_back(Session::load(compiled_program(), {.device = device}));
    sessions.push_back(sessions.back().share());
  }
  std::vector<Session*> pointers;
  for (Session& session : sessions) pointers.push_back(&session);
  run_on_threads(pointers, 300);
}

TEST(SessionApiGpuTest, OneSessionCalledFromSeveralThreadsIsSerialized) {
  Session session = Session::load(compiled_program());
  run_on_threads({&session, &session, &session}, 300);
}

TEST(SessionApiGpuTest, TimesSessionsConcurrently) {
  std::vector<Session> sessions;
  for (int device = 0; device < device_count(); ++device) {
    sessions.push_back(Session::load(compiled_program(), {.device = device}));
  }
  sessions.push_back(sessions[0].share());
  std::vector<Session*> pointers;
  for (Session& session : sessions) pointers.push_back(&session);
  const ConcurrentTiming timing = time_concurrently(pointers, 50, 5);
  ASSERT_EQ(timing.milliseconds.size(), sessions.size());
  for (const std::vector<float>& times : timing.milliseconds) {
    ASSERT_EQ(times.size(), 50u);
    for (const float ms : times) EXPECT_GT(ms, 0.0f);
  }
  EXPECT_GT(timing.wall_seconds, 0.0);
  EXPECT_THROW(time_concurrently(pointers, 0, 0), InputError);
}

}  // namespace
}  // namespace kiln::test
