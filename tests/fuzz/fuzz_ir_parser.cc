// libFuzzer target for the IR text parser: any byte string must either parse into a graph that
// prints and parses back to the same text, or be rejected with an InputError. Crashes, hangs,
// sanitizer reports and other exceptions are bugs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ir/error.h"
#include "ir/parser.h"
#include "ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<kiln::Graph> graph;
  try {
    graph = kiln::parse_graph(text, "fuzz");
  } catch (const kiln::InputError&) {
    return 0;
  }
  const std::string printed = kiln::print_graph(*graph);
  if (kiln::print_graph(*kiln::parse_graph(printed, "printed")) != printed) __builtin_trap();
  return 0;
}
