// Reading a kernel's header comment (see the header).
#include "runtime/kernel_header.h"

#include <charconv>

namespace kiln {
namespace {

// The rest of the header line that starts with `prefix`, or "". The header is the comment lines
// before the first line that is not a comment.
std::string_view header_value(const std::string& source, std::string_view prefix) {
  std::string_view rest = source;
  while (rest.starts_with("//")) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    if (line.starts_with(prefix)) return line.substr(prefix.size());
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return {};
}

}  // namespace

std::string kernel_tactic(const ProgramKernel& kernel) {
  return std::string(header_value(kernel.source, kTacticLine));
}

int64_t kernel_flops(const ProgramKernel& kernel) {
  const std::string_view text = header_value(kernel.source, kFlopsLine);
  int64_t flops = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), flops);
  return error == std::errc() && end == text.data() + text.size() && flops > 0 ? flops : 0;
}

}  // namespace kiln
