// Reading a kernel's header comment (see the header).
#include "runtime/kernel_header.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <type_traits>

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

bool kernel_waits_for_prior_grids(const ProgramKernel& kernel) {
  return header_line(kernel.source, kEarlyLaunchLine).has_value();
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

namespace {

std::string joined_numbers(const std::vector<int64_t>& numbers) {
  std::string text;
  for (const int64_t number : numbers) text += (text.empty() ? "" : "x") + std::to_string(number);
  return text;
}

// Consumes `word` and one space after it (none at the end of `rest`).
bool take_word(std::string_view& rest, std::string_view word) {
  if (!rest.starts_with(word)) return false;
  rest.remove_prefix(word.size());
  if (rest.empty()) return true;
  if (rest.front() != ' ') return false;
  rest.remove_prefix(1);
  return true;
}

std::optional<std::string_view> take_token(std::string_view& rest) {
  const size_t end = rest.find(' ');
  const std::string_view token = rest.substr(0, end);
  if (token.empty()) return std::nullopt;
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  return token;
}

std::optional<int64_t> whole_number(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

// "768x4096": positive numbers joined by 'x'.
std::optional<std::vector<int64_t>> number_list(std::string_view text) {
  std::vector<int64_t> numbers;
  while (true) {
    const size_t end = text.find('x');
    const std::optional<int64_t> number = whole_number(text.substr(0, end));
    if (!number || *number == 0) return std::nullopt;
    numbers.push_back(*number);
    if (end == std::string_view::npos) return numbers;
    text.remove_prefix(end + 1);
  }
}

std::optional<KernelTensorMap> parse_tensor_map(std::string_view text) {
  KernelTensorMap map;
  const std::optional<std::string_view> parameter = take_token(text);
  const std::optional<int64_t> position = parameter ? whole_number(*parameter) : std::nullopt;
  if (!position || *position > 4096) return std::nullopt;
  map.parameter = static_cast<int>(*position);
  const std::optional<std::string_view> dtype_text = take_token(text);
  const std::optional<DType> dtype = dtype_text ? parse_dtype(*dtype_text) : std::nullopt;
  if (!dtype) return std::nullopt;
  map.dtype = *dtype;
  std::optional<std::vector<int64_t>> dims, strides, box;
  std::optional<int64_t> swizzle;
  if (!take_word(text, "dims") || !(dims = number_list(take_token(text).value_or(""))) ||
      !take_word(text, "strides") || !(strides = number_list(take_token(text).value_or(""))) ||
      !take_word(text, "box") || !(box = number_list(take_token(text).value_or(""))) ||
      !take_word(text, "swizzle") || !(swizzle = whole_number(take_token(text).value_or(""))) ||
      !text.empty()) {
    return std::nullopt;
  }
  if (dims->size() < 2 || dims->size() > 5 || strides->size() + 1 != dims->size() ||
      box->size() != dims->size() ||
      (*swizzle != 0 && *swizzle != 32 && *swizzle != 64 && *swizzle != 128)) {
    return std::nullopt;
  }
  map.dims = std::move(*dims);
  map.strides = std::move(*strides);
  map.box = std::move(*box);
  map.swizzle = static_cast<int>(*swizzle);
  return map;
}

}  // namespace

std::string format_tensor_maps(const std::vector<KernelTensorMap>& maps) {
  std::string text;
  for (const KernelTensorMap& map : maps) {
    text += fmt::format("{}{} {} dims {} strides {} box {} swizzle {}", text.empty() ? "" : "; ",
                        map.parameter, dtype_name(map.dtype), joined_numbers(map.dims),
                        joined_numbers(map.strides), joined_numbers(map.box), map.swizzle);
  }
  return text;
}

namespace {

// The items of a header line's list ("item; item; ..."), each read by `parse` (an optional);
// none when the line is absent, nullopt when an item does not parse.
template <class Parse,
          class Item = typename std::invoke_result_t<Parse, std::string_view>::value_type>
std::optional<std::vector<Item>> parse_items(const ProgramKernel& kernel, std::string_view label,
                                             Parse parse) {
  std::vector<Item> items;
  const std::optional<std::string_view> line = header_line(kernel.source, label);
  if (!line) return items;
  std::string_view rest = *line;
  while (true) {
    const size_t end = rest.find("; ");
    const auto item = parse(rest.substr(0, end));
    if (!item) return std::nullopt;
    items.push_back(*item);
    if (end == std::string_view::npos) return items;
    rest.remove_prefix(end + 2);
  }
}

}  // namespace

std::optional<std::vector<KernelTensorMap>> kernel_tensor_maps(const ProgramKernel& kernel) {
  return parse_items(kernel, kTensorMapsLine, parse_tensor_map);
}

bool KernelOutputRegion::disjoint_from(const KernelOutputRegion& other) const {
  if (stride != other.stride) return false;
  return offset + block <= other.offset || other.offset + other.block <= offset;
}

std::string format_output_region(const KernelOutputRegion& region) {
  return fmt::format("{} block {} stride {} offset {}", region.parameter, region.block,
                     region.stride, region.offset);
}

namespace {

std::optional<KernelOutputRegion> parse_output_region(std::string_view text) {
  const std::optional<int64_t> parameter = whole_number(take_token(text).value_or(""));
  std::optional<int64_t> block, stride, offset;
  if (!parameter || *parameter > 4096 || !take_word(text, "block") ||
      !(block = whole_number(take_token(text).value_or(""))) || !take_word(text, "stride") ||
      !(stride = whole_number(take_token(text).value_or(""))) || !take_word(text, "offset") ||
      !(offset = whole_number(take_token(text).value_or(""))) || !text.empty()) {
    return std::nullopt;
  }
  if (*block == 0 || *block > *stride || *offset > *stride - *block) return std::nullopt;
  return KernelOutputRegion{static_cast<int>(*parameter), *block, *stride, *offset};
}

}  // namespace

std::optional<std::vector<KernelOutputRegion>> kernel_output_regions(const ProgramKernel& kernel) {
  std::optional<std::vector<KernelOutputRegion>> regions =
      parse_items(kernel, kOutputRegionsLine, parse_output_region);
  if (!regions) return regions;
  for (size_t i = 1; i < regions->size(); ++i) {
    if ((*regions)[i].parameter <= (*regions)[i - 1].parameter) return std::nullopt;
  }
  return regions;
}

}  // namespace kiln
