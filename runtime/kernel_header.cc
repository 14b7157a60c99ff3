// Reading a kernel's header comment (see the header).
#include "runtime/kernel_header.h"

#include <algorithm>
#include <charconv>

namespace kiln {
namespace {

// The rest of the header line that starts with `prefix`, or nullopt where there is none. The
// header is the comment lines before the first line that is not a comment.
std::optional<std::string_view> header_line(const std::string& source, std::string_view prefix) {
  std::string_view rest = source;
  while (rest.starts_with("//")) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    if (line.starts_with(prefix)) return line.substr(prefix.size());
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return std::nullopt;
}

std::string_view header_value(const std::string& source, std::string_view prefix) {
  return header_line(source, prefix).value_or(std::string_view());
}

}  // namespace

std::string kernel_tactic(const ProgramKernel& kernel) {
  return std::string(header_value(kernel.source, kTacticLine));
}

// The header line's value as a whole non-negative number, or -1.
int64_t header_number(const ProgramKernel& kernel, std::string_view prefix) {
  const std::string_view text = header_value(kernel.source, prefix);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size() && value >= 0
             ? value
             : -1;
}

int64_t kernel_flops(const ProgramKernel& kernel) {
  return std::max<int64_t>(header_number(kernel, kFlopsLine), 0);
}

int kernel_parameter_count(const ProgramKernel& kernel) {
  const int64_t count = header_number(kernel, kParametersLine);
  return count > 4096 ? -1 : static_cast<int>(count);
}

bool kernel_states_written_parameters(const ProgramKernel& kernel) {
  return header_line(kernel.source, kWrittenParametersLine).has_value();
}

std::optional<std::vector<int>> kernel_written_parameters(const ProgramKernel& kernel) {
  std::string_view rest = header_value(kernel.source, kWrittenParametersLine);
  if (rest.empty()) return std::nullopt;
  std::vector<int> positions;
  while (true) {
    int position = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), position);
    if (error != std::errc() || position < 0 ||
        (!positions.empty() && position <= positions.back())) {
      return std::nullopt;
    }
    positions.push_back(position);
    rest.remove_prefix(static_cast<size_t>(end - rest.data()));
    if (rest.empty()) return positions;
    if (!rest.starts_with(", ")) return std::nullopt;
    rest.remove_prefix(2);
  }
}

}  // namespace kiln
