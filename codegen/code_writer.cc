// CodeWriter: indented source text.
#include "codegen/code_writer.h"

#include "ir/error.h"

namespace kiln::codegen {

void CodeWriter::line(std::string_view text) {
  text_.append(static_cast<size_t>(2 * indent_), ' ');
  text_ += text;
  text_ += "\n";
}

void CodeWriter::open(std::string_view head) {
  line(head.empty() ? "{" : std::string(head) + " {");
  ++indent_;
}

void CodeWriter::close(std::string_view tail) {
  if (indent_ == 0) throw InternalError("CodeWriter: close() without open()");
  --indent_;
  line("}" + std::string(tail));
}

void CodeWriter::reopen(std::string_view head) {
  close(" " + std::string(head) + " {");
  ++indent_;
}

}  // namespace kiln::codegen
