// CUDA devices by index: the names of this machine's devices, the check of a device index
// (Session::load's SessionOptions::device), and lists of devices as a command line gives them
// (`kiln bench --devices all` or `--devices 0,1`).
#pragma once

#include <string>
#include <vector>

namespace kiln {

// The name of each CUDA device, by index ("NVIDIA H200"). Needs a usable device
// (require_cuda_device).
std::vector<std::string> cuda_device_names();

// "no CUDA device 3: this machine has 2 (0: NVIDIA H200, 1: NVIDIA H200)".
std::string no_such_device_message(int device, const std::vector<std::string>& names);

// Throws InputError (no_such_device_message) unless `device` indexes one of `names`.
void check_device_index(int device, const std::vector<std::string>& names);

// The indices of a list such as "0,1" (separated by commas, each once), without asking which
// devices there are. Throws InputError naming the entry at fault: not an index, or listed twice.
std::vector<int> parse_device_indices(const std::string& spec);

// The devices `spec` lists: "all" (every device in index order) or parse_device_indices's list,
// each index one of `names` (else an InputError: no_such_device_message).
std::vector<int> parse_device_list(const std::string& spec, const std::vector<std::string>& names);

}  // namespace kiln
