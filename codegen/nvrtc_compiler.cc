// The NVRTC wrapper: dlopen, the entry points kiln uses, and one compilation.
#include "codegen/nvrtc_compiler.h"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>

#include "ir/error.h"

namespace kiln::codegen {

// NVRTC's C API, declared here so that building kiln needs no CUDA headers. nvrtcResult is an
// int-sized enum: 0 is success, 5 an invalid option, 6 a compilation error.
struct Nvrtc::Api {
  using Program = struct NvrtcProgramOpaque*;
  int (*version)(int* major, int* minor);
  const char* (*error_string)(int result);
  int (*create_program)(Program* program, const char* source, const char* name, int headers,
                        const char* const* header_sources, const char* const* header_names);
  int (*compile_program)(Program program, int count, const char* const* options);
  int (*destroy_program)(Program* program);
  int (*log_size)(Program program, size_t* size);
  int (*log)(Program program, char* log);
  int (*cubin_size)(Program program, size_t* size);
  int (*cubin)(Program program, char* cubin);
  int (*ptx_size)(Program program, size_t* size);
  int (*ptx)(Program program, char* ptx);
  int (*num_supported_archs)(int* count);
  int (*supported_archs)(int* archs);
};

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidOption = 5;

template <class F>
void resolve(void* handle, const char* symbol, F& function, const std::string& path) {
  function = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!function) throw InputError(path + " has no " + symbol + " (not an NVRTC library?)");
}

// Candidate paths in search order; bare names go through the dynamic loader's default path.
// $KILN_NVRTC, when set, is the only one (a particular libnvrtc, or a test of a missing one).
std::vector<std::string> candidate_paths() {
  if (const char* chosen = std::getenv("KILN_NVRTC"); chosen && *chosen) return {chosen};
  std::vector<std::string> directories;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable); root && *root) {
      directories.push_back(std::string(root) + "/lib64/");
    }
  }
  directories.push_back("/usr/local/cuda/lib64/");
  directories.push_back("");
  std::vector<std::string> paths;
  for (const std::string& directory : directories) {
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so"}) paths.push_back(directory + name);
  }
  return paths;
}

// Frees an NVRTC program on every path out of compile().
struct ProgramGuard {
  const Nvrtc::Api* api;
  Nvrtc::Api::Program program = nullptr;
  ~ProgramGuard() {
    if (program) api->destroy_program(&program);
  }
};

}  // namespace

Nvrtc::Nvrtc(void* handle, std::string path) : path_(std::move(path)) {
  auto api = std::make_unique<Api>();
  resolve(handle, "nvrtcVersion", api->version, path_);
  resolve(handle, "nvrtcGetErrorString", api->error_string, path_);
  resolve(handle, "nvrtcCreateProgram", api->create_program, path_);
  resolve(handle, "nvrtcCompileProgram", api->compile_program, path_);
  resolve(handle, "nvrtcDestroyProgram", api->destroy_program, path_);
  resolve(handle, "nvrtcGetProgramLogSize", api->log_size, path_);
  resolve(handle, "nvrtcGetProgramLog", api->log, path_);
  resolve(handle, "nvrtcGetCUBINSize", api->cubin_size, path_);
  resolve(handle, "nvrtcGetCUBIN", api->cubin, path_);
  resolve(handle, "nvrtcGetPTXSize", api->ptx_size, path_);
  resolve(handle, "nvrtcGetPTX", api->ptx, path_);
  resolve(handle, "nvrtcGetNumSupportedArchs", api->num_supported_archs, path_);
  resolve(handle, "nvrtcGetSupportedArchs", api->supported_archs, path_);
  int major = 0, minor = 0;
  api->version(&major, &minor);
  version_ = std::to_string(major) + "." + std::to_string(minor);
  api_ = api.release();  // lives as long as the process, like the library
}

const Nvrtc& Nvrtc::instance() {
  static const Nvrtc nvrtc = [] {
    std::string tried;
    for (const std::string& path : candidate_paths()) {
      if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return Nvrtc(handle, path);
      tried += "\n  " + path + ": " + dlerror();
    }
    throw InputError(
        "NVRTC (libnvrtc.so, CUDA's runtime compiler) was not found; install the CUDA toolkit "
        "or set CUDA_HOME to it (or KILN_NVRTC to the library). Tried:" +
        tried);
  }();
  return nvrtc;
}

std::vector<std::string> Nvrtc::supported_archs() const {
  int count = 0;
  api_->num_supported_archs(&count);
  std::vector<int> numbers(static_cast<size_t>(count));
  api_->supported_archs(numbers.data());
  std::vector<std::string> archs;
  for (int number : numbers) archs.push_back("sm_" + std::to_string(number));
  return archs;
}

std::vector<std::string> Nvrtc::options_for(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17"};
}

NvrtcOutput Nvrtc::compile(const std::string& source, const std::string& kernel_name,
                           const std::string& arch, bool with_ptx) const {
  ProgramGuard guard{api_};
  const std::string file_name = kernel_name + ".cu";
  if (int result = api_->create_program(&guard.program, source.c_str(), file_name.c_str(), 0,
                                        nullptr, nullptr);
      result != kSuccess) {
    throw InternalError("NVRTC cannot create a program for kernel " + kernel_name + ": " +
                        api_->error_string(result));
  }
  const std::vector<std::string> options = options_for(arch);
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  const int result = api_->compile_program(guard.program, static_cast<int>(option_pointers.size()),
                                           option_pointers.data());
  if (result != kSuccess) {
    size_t size = 0;
    api_->log_size(guard.program, &size);
    std::string log(size, '\0');
    if (size > 0) api_->log(guard.program, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    const std::string message = "NVRTC " + version_ + " failed to compile kernel " + kernel_name +
                                " for " + arch + " (" + api_->error_string(result) + "):\n" + log;
    if (result == kInvalidOption) throw InputError(message);
    throw InternalError(message);
  }
  NvrtcOutput output;
  size_t size = 0;
  api_->cubin_size(guard.program, &size);
  output.cubin.resize(size);
  if (size > 0) api_->cubin(guard.program, reinterpret_cast<char*>(output.cubin.data()));
  if (with_ptx) {
    api_->ptx_size(guard.program, &size);
    output.ptx.resize(size);
    if (size > 0) api_->ptx(guard.program, output.ptx.data());
    while (!output.ptx.empty() && output.ptx.back() == '\0') output.ptx.pop_back();
  }
  return output;
}

}  // namespace kiln::codegen
