// CUDA devices by index (device_list.h).
#include "runtime/device_list.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "ir/error.h"
#include "runtime/cuda_api.h"

namespace kiln {

std::vector<std::string> cuda_device_names() {
  int count = 0;
  cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  std::vector<std::string> names;
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties{};
    cuda_check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
    names.emplace_back(properties.name);
  }
  return names;
}

std::string no_such_device_message(int device, const std::vector<std::string>& names) {
  std::string listed;
  for (size_t i = 0; i < names.size(); ++i) {
    listed += fmt::format("{}{}: {}", i ? ", " : "", i, names[i]);
  }
  return fmt::format("no CUDA device {}: this machine has {} ({})", device, names.size(), listed);
}

void check_device_index(int device, const std::vector<std::string>& names) {
  if (device < 0 || static_cast<size_t>(device) >= names.size()) {
    throw InputError(no_such_device_message(device, names));
  }
}

std::vector<int> parse_device_indices(const std::string& spec) {
  std::vector<int> devices;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(spec.find(',', start), spec.size());
    const std::string entry = spec.substr(start, end - start);
    int device = -1;
    const auto [rest, error] = std::from_chars(entry.data(), entry.data() + entry.size(), device);
    if (entry.empty() || error != std::errc() || rest != entry.data() + entry.size() ||
        device < 0) {
      throw InputError(fmt::format("device list '{}': '{}' is not a device index (give 'all' or "
                                   "indices such as 0,1)",
                                   spec, entry));
    }
    if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
      throw InputError(fmt::format("device list '{}': device {} is listed twice", spec, device));
    }
    devices.push_back(device);
    if (end == spec.size()) return devices;
    start = end + 1;
  }
}

std::vector<int> parse_device_list(const std::string& spec,
                                   const std::vector<std::string>& names) {
  if (spec == "all") {
    std::vector<int> devices;
    for (size_t i = 0; i < names.size(); ++i) devices.push_back(static_cast<int>(i));
    return devices;
  }
  const std::vector<int> devices = parse_device_indices(spec);
  for (const int device : devices) {
    if (static_cast<size_t>(device) >= names.size()) {
      throw InputError(
          fmt::format("device list '{}': {}", spec, no_such_device_message(device, names)));
    }
  }
  return devices;
}

}  // namespace kiln
