// libFuzzer target for the .kiln reader: any byte string must either read into a program that
// writes back to the same bytes (and that `kiln inspect` can describe), or be rejected with an
// InputError (a version-1 file: into one whose current-version bytes read back the same). A
// dynamic program ("KILR", runtime/dynamic_program.h) must read into one that
// `kiln inspect` describes and that writes bytes reading back to the same variants (weight sets
// stored once may make them shorter than the input). Crashes, hangs, sanitizer reports and other
// exceptions are bugs. The last 8 bytes are first rewritten as the checksum of the rest, so that
// mutations get past the checksum to the checks behind it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/error.h"
#include "runtime/dynamic_program.h"
#include "runtime/fnv1a.h"
#include "runtime/program_io.h"
#include "tools/inspect_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (bytes.size() >= 8) {
    const size_t body = bytes.size() - 8;
    const uint64_t checksum = kiln::fnv1a_64(std::span(bytes).first(body));
    for (int i = 0; i < 8; ++i) bytes[body + i] = static_cast<uint8_t>(checksum >> (8 * i));
  }
  if (bytes.size() >= 4 && bytes[0] == 'K' && bytes[1] == 'I' && bytes[2] == 'L' &&
      bytes[3] == 'R') {
    kiln::DynamicProgram program;
    try {
      program = kiln::dynamic_program_from_bytes(bytes, "fuzz");
    } catch (const kiln::InputError&) {
      return 0;
    }
    const kiln::DynamicProgram again =
        kiln::dynamic_program_from_bytes(kiln::dynamic_program_to_bytes(program), "again");
    if (again.variants.size() != program.variants.size()) __builtin_trap();
    if (kiln::tools::dynamic_inspect_report(program).empty()) __builtin_trap();
    return 0;
  }
  kiln::Program program;
  try {
    program = kiln::program_from_bytes(bytes, "fuzz");
  } catch (const kiln::InputError&) {
    return 0;
  }
  // A file of the current version writes back to its bytes; an older one (version 1, before
  // library calls) as the current version, which reads back to the same program.
  const std::vector<uint8_t> written = kiln::program_to_bytes(program);
  if (bytes[4] == kiln::kKilnFormatVersion && written != bytes) __builtin_trap();
  if (kiln::program_to_bytes(kiln::program_from_bytes(written, "again")) != written) {
    __builtin_trap();
  }
  if (kiln::tools::inspect_report(program).empty()) __builtin_trap();
  return 0;
}
