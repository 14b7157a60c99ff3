// kiln bench --devices: the compiled program on several GPUs at once, one Session and one host
// thread per device (runtime/concurrent_timing.h). Each device's outputs are checked, then one
// device is timed alone and all of them together; the figures are each device's median and p90
// latency and the throughput (inferences/s = batch × replays / wall time) alone and together.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/program.h"

namespace kiln::tools {

// Given a device's outputs, what does not match the CPU reference ("" when all match).
using OutputMismatch = std::function<std::string(const std::vector<Tensor>&)>;

// The devices of `spec` (runtime/device_list.h), with "--devices: " before any error.
std::vector<int> bench_device_list(const std::string& spec);

// Loads `program` on each of `devices`, runs it on `inputs` (in the program's dtypes) and checks
// the outputs with `mismatch_of`, then times `iterations` CUDA-graph replays after `warmup` on
// the first device alone and on all together. Returns {"batch", "iterations", "per_device":
// [{"device", "description", "median_ms", "p90_ms", "mismatch"?}], "one_device_inferences_per_s",
// "inferences_per_s", "scaling"}. The batch is the leading dim of the first input (1 without).
nlohmann::json bench_devices(const Program& program, const std::vector<int>& devices,
                             const std::vector<Tensor>& inputs, const OutputMismatch& mismatch_of,
                             int iterations, int warmup);

// The figures of bench_devices as a table, a line each.
std::string devices_table(const std::string& variant, const nlohmann::json& figures);

}  // namespace kiln::tools
