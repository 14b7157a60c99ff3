// libFuzzer target for the ONNX importer: any byte string must either import or fail with
// kiln::InputError. Any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontend/onnx_importer.h"
#include "ir/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    // External data paths resolve inside an empty directory, so fuzzed models read no files.
    kiln::onnx_import::import_onnx_bytes(bytes, "/nonexistent-kiln-fuzz-dir");
  } catch (const kiln::InputError&) {
    // Rejecting a malformed model with a message is the expected outcome.
  }
  return 0;
}
