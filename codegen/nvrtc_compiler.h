// NVRTC, loaded at run time with dlopen so that kiln starts on machines without CUDA: the
// library comes from $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64, then the
// default search path (libnvrtc.so.13 before libnvrtc.so in each).
//
// Generated kernels need no headers (codegen/device_functions.h), so no include path is passed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

struct NvrtcOutput {
  std::vector<uint8_t> cubin;
  std::string ptx;  // only when asked for
};

class Nvrtc {
 public:
  // The loaded library; throws InputError, saying where it looked, when there is none.
  static const Nvrtc& instance();

  // "13.0": part of the kernel cache's key.
  const std::string& version() const { return version_; }
  const std::string& library_path() const { return path_; }
  // The real architectures this NVRTC compiles for ("sm_75", "sm_80", ...).
  std::vector<std::string> supported_archs() const;

  // The options a kernel is compiled with for `arch` ("sm_90").
  static std::vector<std::string> options_for(const std::string& arch);

  // Compiles `source`, which defines kernel `kernel_name`, to a CUBIN for `arch` (and PTX with
  // `with_ptx`). A compile error throws InternalError carrying the kernel's name and NVRTC's
  // log (generated code that does not compile is kiln's bug); an arch NVRTC does not know
  // throws InputError.
  NvrtcOutput compile(const std::string& source, const std::string& kernel_name,
                      const std::string& arch, bool with_ptx) const;

  struct Api;  // NVRTC's entry points (nvrtc_compiler.cc)

 private:
  Nvrtc(void* handle, std::string path);

  const Api* api_ = nullptr;
  std::string path_;
  std::string version_;
};

}  // namespace kiln::codegen
