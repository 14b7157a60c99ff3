// Builds CUDA source text line by line with two-space indentation: line() writes a statement,
// open() a line ending in "{" that indents what follows, close() the matching "}", and
// reopen() the "} else {" between two blocks.
#pragma once

#include <string>
#include <string_view>

namespace kiln::codegen {

class CodeWriter {
 public:
  explicit CodeWriter(int indent = 0) : indent_(indent) {}

  void line(std::string_view text);
  void blank_line() { text_ += "\n"; }
  // Writes `head {` and indents; "for (...)" gives "for (...) {", "" gives a bare "{".
  void open(std::string_view head);
  // Dedents and writes "}" followed by `tail` (";", ...).
  void close(std::string_view tail = "");
  // Closes a block and opens the next on one line: "} else {" for reopen("else").
  void reopen(std::string_view head);
  // Inserts text written by another writer (already indented).
  void append(std::string_view text) { text_ += text; }

  int indent() const { return indent_; }
  const std::string& text() const { return text_; }

 private:
  int indent_;
  std::string text_;
};

}  // namespace kiln::codegen
